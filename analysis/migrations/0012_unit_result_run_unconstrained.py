"""A run's per-unit rows keep their run without a foreign-key constraint (which took a lock on the
run once for each row stored: 16 s of the 52 s of storing 2,000,000 rows), and on PostgreSQL a
trigger deletes a deleted run's rows in the database (docs/analysis.md, "Storing a run's results").

The rows are written only by the run's store, which holds the run's row locked (FOR UPDATE) until
they are committed. A delete of the run waits for that lock and then, through the trigger, deletes
what the store committed, which a delete of the rows issued before it (Django's cascade) could not
see. On SQLite, where one writer holds the whole database, Django's cascade is enough.
"""

import django.db.models.deletion
from django.db import migrations, models

CREATE = """
CREATE OR REPLACE FUNCTION analysis_run_unit_results_delete() RETURNS trigger AS $$
BEGIN
    DELETE FROM analysis_unitresult u USING gone g WHERE u.run_id = g.id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER analysis_run_unit_results_delete
    AFTER DELETE ON analysis_analysisrun REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION analysis_run_unit_results_delete();
"""

DROP = """
DROP TRIGGER IF EXISTS analysis_run_unit_results_delete ON analysis_analysisrun;
DROP FUNCTION IF EXISTS analysis_run_unit_results_delete();
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("analysis", "0011_unit_result_extremes_in_run"),
    ]

    operations = [
        migrations.AlterField(
            model_name="unitresult",
            name="run",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="unit_results",
                to="analysis.analysisrun",
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
