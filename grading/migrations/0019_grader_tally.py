"""Per (campaign, grader), the judgments and events counted as they are written (``GraderTally``),
kept by triggers on both backends so that every path that writes either table keeps the counts
true; then the counts of what is already there. docs/analysis.md, "Counting where it is written".
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

COLUMNS = "campaign_id, grader_id, judgments, kept, with_broad, with_score, with_label, with_verdict, writes, events"
# The counted columns of a set of judgments (rows grouped by campaign and grader), named.
JUDGMENT_SUMS = (
    "count(*) AS n, count(*) FILTER (WHERE NOT skipped) AS kept, count(broad) AS broad, count(score) AS score,"
    " count(label) AS label, count(verdict) AS verdict"
)
# The upsert's additions; ``t`` names the row already there (SQLite's triggers take no table alias).
ADD_JUDGMENTS = """
    judgments = {t}judgments + excluded.judgments, kept = {t}kept + excluded.kept,
    with_broad = {t}with_broad + excluded.with_broad, with_score = {t}with_score + excluded.with_score,
    with_label = {t}with_label + excluded.with_label, with_verdict = {t}with_verdict + excluded.with_verdict,
    writes = {t}writes + excluded.writes"""
ADD_EVENTS = """
    events = t.events + excluded.events,
    first_event = LEAST(t.first_event, excluded.first_event),
    last_event = GREATEST(t.last_event, excluded.last_event)"""

# PostgreSQL: statement-level triggers over the transition tables, so that a statement of many rows
# (a batch of events, a COPY, a cascade) costs one grouped upsert, not one per row.
POSTGRES = f"""
CREATE FUNCTION grading_tally_judgments() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        UPDATE grading_gradertally AS t SET
            judgments = t.judgments - o.n, kept = t.kept - o.kept,
            with_broad = t.with_broad - o.broad, with_score = t.with_score - o.score,
            with_label = t.with_label - o.label, with_verdict = t.with_verdict - o.verdict,
            writes = t.writes + CASE WHEN TG_OP = 'DELETE' THEN o.n ELSE 0 END
        FROM (
            SELECT campaign_id, grader_id, {JUDGMENT_SUMS} FROM old_judgments GROUP BY campaign_id, grader_id
        ) AS o
        WHERE t.campaign_id = o.campaign_id AND t.grader_id = o.grader_id;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO grading_gradertally AS t ({COLUMNS})
        SELECT campaign_id, grader_id, {JUDGMENT_SUMS}, count(*), 0
        FROM new_judgments GROUP BY campaign_id, grader_id ORDER BY campaign_id, grader_id
        ON CONFLICT (campaign_id, grader_id) DO UPDATE SET {ADD_JUDGMENTS.format(t="t.")};
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER grading_tally_judgment_insert AFTER INSERT ON grading_judgment
    REFERENCING NEW TABLE AS new_judgments FOR EACH STATEMENT EXECUTE FUNCTION grading_tally_judgments();
CREATE TRIGGER grading_tally_judgment_update AFTER UPDATE ON grading_judgment
    REFERENCING OLD TABLE AS old_judgments NEW TABLE AS new_judgments
    FOR EACH STATEMENT EXECUTE FUNCTION grading_tally_judgments();
CREATE TRIGGER grading_tally_judgment_delete AFTER DELETE ON grading_judgment
    REFERENCING OLD TABLE AS old_judgments FOR EACH STATEMENT EXECUTE FUNCTION grading_tally_judgments();

CREATE FUNCTION grading_tally_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO grading_gradertally AS t ({COLUMNS}, first_event, last_event)
    SELECT campaign_id, grader_id, 0, 0, 0, 0, 0, 0, 0, count(*), min(server_ts), max(server_ts)
    FROM new_events GROUP BY campaign_id, grader_id ORDER BY campaign_id, grader_id
    ON CONFLICT (campaign_id, grader_id) DO UPDATE SET {ADD_EVENTS};
    RETURN NULL;
END $$;
CREATE TRIGGER grading_tally_event_insert AFTER INSERT ON grading_gradingevent
    REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION grading_tally_events();

-- TRUNCATE passes row triggers by: what it empties is counted as nothing (and, for judgments, as a write).
CREATE FUNCTION grading_tally_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'grading_judgment' THEN
        UPDATE grading_gradertally SET judgments = 0, kept = 0, with_broad = 0, with_score = 0, with_label = 0,
            with_verdict = 0, writes = writes + judgments + 1;
    ELSE
        UPDATE grading_gradertally SET events = 0, first_event = NULL, last_event = NULL;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER grading_tally_judgment_truncate AFTER TRUNCATE ON grading_judgment
    FOR EACH STATEMENT EXECUTE FUNCTION grading_tally_truncated();
CREATE TRIGGER grading_tally_event_truncate AFTER TRUNCATE ON grading_gradingevent
    FOR EACH STATEMENT EXECUTE FUNCTION grading_tally_truncated();
"""

POSTGRES_DROP = """
DROP TRIGGER IF EXISTS grading_tally_judgment_insert ON grading_judgment;
DROP TRIGGER IF EXISTS grading_tally_judgment_update ON grading_judgment;
DROP TRIGGER IF EXISTS grading_tally_judgment_delete ON grading_judgment;
DROP TRIGGER IF EXISTS grading_tally_judgment_truncate ON grading_judgment;
DROP TRIGGER IF EXISTS grading_tally_event_insert ON grading_gradingevent;
DROP TRIGGER IF EXISTS grading_tally_event_truncate ON grading_gradingevent;
DROP FUNCTION IF EXISTS grading_tally_judgments();
DROP FUNCTION IF EXISTS grading_tally_events();
DROP FUNCTION IF EXISTS grading_tally_truncated();
"""

# SQLite has row triggers only; each row adds or takes away its own contribution.
ROW = "NOT {r}.skipped, {r}.broad IS NOT NULL, {r}.score IS NOT NULL, {r}.label IS NOT NULL, {r}.verdict IS NOT NULL"
SQLITE_UPSERT = f"""
    INSERT INTO grading_gradertally ({COLUMNS})
    VALUES (NEW.campaign_id, NEW.grader_id, 1, {ROW.format(r="NEW")}, 1, 0)
    ON CONFLICT (campaign_id, grader_id) DO UPDATE SET {ADD_JUDGMENTS.format(t="")};"""
SQLITE_TAKE = """
    UPDATE grading_gradertally SET
        judgments = judgments - 1, kept = kept - (NOT OLD.skipped),
        with_broad = with_broad - (OLD.broad IS NOT NULL), with_score = with_score - (OLD.score IS NOT NULL),
        with_label = with_label - (OLD.label IS NOT NULL), with_verdict = with_verdict - (OLD.verdict IS NOT NULL),
        writes = writes + {writes}
    WHERE campaign_id = OLD.campaign_id AND grader_id = OLD.grader_id;"""
SQLITE = [
    f"CREATE TRIGGER grading_tally_judgment_insert AFTER INSERT ON grading_judgment BEGIN {SQLITE_UPSERT} END",
    f"""CREATE TRIGGER grading_tally_judgment_update AFTER UPDATE ON grading_judgment BEGIN
        {SQLITE_TAKE.format(writes=0)} {SQLITE_UPSERT} END""",
    f"CREATE TRIGGER grading_tally_judgment_delete AFTER DELETE ON grading_judgment BEGIN {SQLITE_TAKE.format(writes=1)} END",
    f"""CREATE TRIGGER grading_tally_event_insert AFTER INSERT ON grading_gradingevent BEGIN
        INSERT INTO grading_gradertally ({COLUMNS}, first_event, last_event)
        VALUES (NEW.campaign_id, NEW.grader_id, 0, 0, 0, 0, 0, 0, 0, 1, NEW.server_ts, NEW.server_ts)
        ON CONFLICT (campaign_id, grader_id) DO UPDATE SET events = events + 1,
            first_event = min(coalesce(first_event, excluded.first_event), excluded.first_event),
            last_event = max(coalesce(last_event, excluded.last_event), excluded.last_event);
    END""",
]
SQLITE_DROP = [
    f"DROP TRIGGER IF EXISTS grading_tally_{name}"
    for name in ("judgment_insert", "judgment_update", "judgment_delete", "event_insert")
]

# What is there already. SQLite's count(*) FILTER needs 3.30; both servers here have it.
BACKFILL = [
    f"""INSERT INTO grading_gradertally ({COLUMNS})
        SELECT campaign_id, grader_id, {JUDGMENT_SUMS}, count(*), 0
        FROM grading_judgment GROUP BY campaign_id, grader_id""",
    f"""INSERT INTO grading_gradertally AS t ({COLUMNS}, first_event, last_event)
        SELECT campaign_id, grader_id, 0, 0, 0, 0, 0, 0, 0, count(*), min(server_ts), max(server_ts)
        FROM grading_gradingevent GROUP BY campaign_id, grader_id
        ON CONFLICT (campaign_id, grader_id) DO UPDATE SET
            events = excluded.events, first_event = excluded.first_event, last_event = excluded.last_event""",
]


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES, params=None)
    elif vendor == "sqlite":
        for statement in SQLITE:
            schema_editor.execute(statement, params=None)
    else:
        raise NotImplementedError(f"GraderTally's triggers are written for PostgreSQL and SQLite, not {vendor}")
    for statement in BACKFILL:
        schema_editor.execute(statement, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_DROP, params=None)
    else:
        for statement in SQLITE_DROP:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("grading", "0018_auto_exclusion"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="GraderTally",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("judgments", models.BigIntegerField(default=0)),
                ("kept", models.BigIntegerField(default=0)),
                ("with_broad", models.BigIntegerField(default=0)),
                ("with_score", models.BigIntegerField(default=0)),
                ("with_label", models.BigIntegerField(default=0)),
                ("with_verdict", models.BigIntegerField(default=0)),
                ("writes", models.BigIntegerField(default=0)),
                ("events", models.BigIntegerField(default=0)),
                ("first_event", models.DateTimeField(blank=True, null=True)),
                ("last_event", models.DateTimeField(blank=True, null=True)),
                (
                    "campaign",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="grading.campaign"
                    ),
                ),
                (
                    "grader",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("campaign", "grader"), name="grader_tally_unique")],
            },
        ),
        migrations.RunPython(forwards, backwards),
    ]
