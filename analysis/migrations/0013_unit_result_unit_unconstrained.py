"""A run's per-unit rows keep their unit without a foreign-key constraint (whose check at the
COMMIT locked each unit's row, once per row: 9 of the 22 s of storing 2,000,000 rows), and on
PostgreSQL a trigger deletes a deleted unit's rows in the database (docs/analysis.md, "Storing a
run's results").

The rows are written only by a run's store, which holds a shared advisory lock of the campaign
(namespace 1431917653, the campaign's id modulo 2^31 - 1) until they are committed, and first
deletes the rows of units that no longer exist. The trigger takes that lock exclusively before it
deletes: a unit deleted while a store is under way waits for it, and then deletes what the store
committed, which a delete of the rows issued before it (Django's cascade) could not see. On SQLite,
where one writer holds the whole database, Django's cascade is enough.
"""

import django.db.models.deletion
from django.db import migrations, models

CREATE = """
CREATE OR REPLACE FUNCTION analysis_unit_unit_results_delete() RETURNS trigger AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1431917653, (c.campaign_id % 2147483647)::integer)
        FROM (SELECT DISTINCT campaign_id FROM gone ORDER BY campaign_id) c;
    DELETE FROM analysis_unitresult r USING gone g WHERE r.unit_id = g.id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql VOLATILE;
CREATE TRIGGER analysis_unit_unit_results_delete
    AFTER DELETE ON grading_unit REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION analysis_unit_unit_results_delete();
"""

DROP = """
DROP TRIGGER IF EXISTS analysis_unit_unit_results_delete ON grading_unit;
DROP FUNCTION IF EXISTS analysis_unit_unit_results_delete();
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("analysis", "0012_unit_result_run_unconstrained"),
        ("grading", "0018_auto_exclusion"),
    ]

    operations = [
        migrations.AlterField(
            model_name="unitresult",
            name="unit",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="grading.unit",
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
