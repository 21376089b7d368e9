"""A run's per-unit rows are keyed by (run, unit), with no id of their own: storing a row then
updates one index instead of three, the key's, where before it updated the id's, the (run, unit)
constraint's and the unit's (docs/analysis.md, "Storing a run's results").

The unit's index, which deleting a unit reads (Django's cascade, and on PostgreSQL the trigger of
migration 0013), becomes a BRIN index on PostgreSQL: a run writes its rows in the order of their
units, so each run's rows lie in a few block ranges of the unit's values, and a BRIN index costs an
insert almost nothing. On SQLite it stays a B-tree. Neither is in the model's state: a later
migration that rebuilds the table on SQLite would have to make it again.
"""

import django.db.models.deletion
from django.db import migrations, models

UNIT_INDEX = "analysis_unitresult_unit"

POSTGRESQL = f"""
ALTER TABLE analysis_unitresult ADD CONSTRAINT analysis_unitresult_pkey PRIMARY KEY (run_id, unit_id);
CREATE INDEX {UNIT_INDEX} ON analysis_unitresult USING brin (unit_id) WITH (autosummarize = on);
"""
POSTGRESQL_BACK = f"""
DROP INDEX IF EXISTS {UNIT_INDEX};
ALTER TABLE analysis_unitresult DROP CONSTRAINT IF EXISTS analysis_unitresult_pkey;
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL, params=None)
    else:  # SQLite rebuilt the table with its key (run, unit) above
        schema_editor.execute(f'CREATE INDEX "{UNIT_INDEX}" ON "analysis_unitresult" ("unit_id")', params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_BACK, params=None)
    else:
        schema_editor.execute(f'DROP INDEX IF EXISTS "{UNIT_INDEX}"', params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("analysis", "0013_unit_result_unit_unconstrained"),
        ("grading", "0018_auto_exclusion"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="unitresult", name="unit_result_unique"),
        migrations.RemoveField(model_name="unitresult", name="id"),
        # On SQLite this rebuilds the table with the key; on PostgreSQL it changes only the state,
        # and ``forwards`` adds the key.
        migrations.AddField(
            model_name="unitresult",
            name="pk",
            field=models.CompositePrimaryKey(
                "run", "unit", blank=True, editable=False, primary_key=True, serialize=False
            ),
        ),
        migrations.AlterField(
            model_name="unitresult",
            name="unit",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="grading.unit",
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
