"""A run's blocks (``UnitBlock``) are deleted with their run by the database as well as by Django.

Django's cascade deletes the blocks it sees, then waits for the run's row if a store holds it
(``FOR KEY SHARE``); the blocks that store commits meanwhile are deleted by the database's cascade,
where Django's foreign key (checked at COMMIT, no action) would refuse the run's delete. On SQLite
one writer holds the whole database, so Django's cascade is enough. A migration of its own: the
constraint Django made for migration analysis/0017 exists only once that migration has ended.
"""

from django.db import migrations

CASCADE = """
DO $$
DECLARE name text;
BEGIN
    SELECT conname INTO STRICT name FROM pg_constraint
        WHERE conrelid = 'analysis_unitblock'::regclass AND contype = 'f';
    EXECUTE format('ALTER TABLE analysis_unitblock DROP CONSTRAINT %I', name);
    EXECUTE format(
        'ALTER TABLE analysis_unitblock ADD CONSTRAINT %I FOREIGN KEY (run_id) REFERENCES analysis_analysisrun (id) '
        'ON DELETE %s DEFERRABLE INITIALLY DEFERRED', name, '{action}');
END $$;
"""


def cascade_in_database(apps, schema_editor):
    """PostgreSQL: the blocks' foreign key deletes them with their run in the database too. Django's
    cascade deletes the blocks it sees, then waits for the run's row if a store holds it; the blocks
    the store commits meanwhile are deleted by the database's cascade. On SQLite one writer holds
    the whole database, so Django's cascade is enough."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CASCADE.replace("{action}", "CASCADE"), params=None)


def no_cascade_in_database(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CASCADE.replace("{action}", "NO ACTION"), params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("analysis", "0017_unit_blocks"),
    ]

    operations = [
        migrations.RunPython(cascade_in_database, no_cascade_in_database),
    ]
