"""On PostgreSQL, refuse UPDATE and DELETE of grading events in the database itself.

TRUNCATE (used by test teardown) is a statement-level operation and is not affected.
"""
from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION grading_event_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'grading_gradingevent is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER grading_event_append_only
    BEFORE UPDATE OR DELETE ON grading_gradingevent
    FOR EACH ROW EXECUTE FUNCTION grading_event_append_only();
"""

DROP = """
DROP TRIGGER IF EXISTS grading_event_append_only ON grading_gradingevent;
DROP FUNCTION IF EXISTS grading_event_append_only();
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("grading", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
