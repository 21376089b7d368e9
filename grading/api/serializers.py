"""Input and output shapes of the grading API. Validation of *values* lives in the services; these
only check that a request has the right shape (types, ids, timestamps)."""

from __future__ import annotations

import re
import uuid
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import RegexValidator
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from grading.activity import activity_line
from grading.jsontext import json_problem
from grading.models import Assignment, Campaign, Candidate, Judgment, Query
from grading.models.choices import CampaignStatus, EventType, Policy, Role, Scheme
from grading.services.events import judgment_summary
from grading.services.join_links import CODE
from grading.services.qualification import CODE_CHARS

MAX_ID = 2**63 - 1
MAX_SEQ = 2**31 - 1
MAX_BATCH = 500
# Text the server takes: no NUL character (PostgreSQL refuses it) and, unless blank is allowed,
# something besides white space (DRF trims it first). As validators, drf-spectacular writes them
# into the schema as patterns.
NO_NUL = RegexValidator(r"^[^\x00]*$", message="must not hold a NUL character.")
NOT_BLANK = RegexValidator(r"^[^\x00]*[^\s\x00][^\x00]*$", message="must hold more than white space.")


class WholeTextValidator(RegexValidator):
    """A RegexValidator held to the whole text: in Python `$` also matches before a final newline,
    so that `^code$` would take "code\\n", which the schema's pattern (ECMA's `$`) refuses."""

    def __call__(self, value: Any) -> None:
        if not isinstance(value, str) or self.regex.fullmatch(value) is None:
            raise DjangoValidationError(self.message, code=self.code, params={"value": value})


def text_field(*, blank: bool = False, **kwargs: Any) -> serializers.CharField:
    """A CharField whose schema says what it refuses: NUL characters, and blank text unless allowed."""
    return serializers.CharField(allow_blank=blank, validators=[NO_NUL if blank else NOT_BLANK], **kwargs)


@extend_schema_field(
    {
        "type": "object",
        "propertyNames": {"pattern": "^[^\\x00]*$"},
        "additionalProperties": {"$ref": "#/components/schemas/JSONValue"},
        "description": "A JSON object: finite numbers, no NUL characters in its text or keys.",
    }
)
class JSONObjectField(serializers.JSONField):
    """A JSON object whose numbers are finite and whose strings hold no NUL characters."""

    def to_internal_value(self, data: Any) -> Any:
        data = super().to_internal_value(data)
        if not isinstance(data, dict):
            raise serializers.ValidationError(f"must be a JSON object, got {type(data).__name__}.")
        problem = json_problem(data, self.field_name)
        if problem:
            raise serializers.ValidationError(f"{problem[0]} must be a finite number or clean text, got {problem[1]}.")
        return data


@extend_schema_field(
    {"type": "string", "pattern": f"^({'|'.join(CampaignStatus.values)})$", "description": "draft, open or closed."}
)
class CampaignStatusField(serializers.ChoiceField):
    """A campaign's status. Described by a pattern, not an enum: drf-spectacular names enums after
    their field, and other apps have `status` enums of their own."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=CampaignStatus.choices, **kwargs)


class EventIdField(serializers.UUIDField):
    """A client's UUID, as a string: not an integer (DRF would read 12345 as 00000000-…-000000003039,
    so that two clients counting from 1 collide) and not the all-zero UUID (a placeholder, never random)."""

    def to_internal_value(self, data: Any) -> uuid.UUID:
        if not isinstance(data, str):
            raise serializers.ValidationError(f"must be a UUID string, got {type(data).__name__} {data!r}.")
        value = super().to_internal_value(data)
        if value.int == 0:
            raise serializers.ValidationError("must be a random UUID, not the all-zero one.")
        return value


class AwareDateTimeField(serializers.DateTimeField):
    """An ISO-8601 timestamp that says its time zone (an offset or Z): a bare local time from a
    client's clock cannot be placed on the server's time line."""

    def to_internal_value(self, value: Any) -> Any:
        if isinstance(value, str):
            try:
                parsed = parse_datetime(value.strip())
            except ValueError:
                parsed = None
            if parsed is not None and parsed.tzinfo is None:
                raise serializers.ValidationError(
                    f"must carry a time zone offset or Z (e.g. 2026-11-25T10:00:00Z), got {value!r}."
                )
        return super().to_internal_value(value)


# An amount of money, as the service takes it (0 to join_links.MAX_RATE = 100000, two decimals at
# most). [0-9], not \d: Python's \d takes every Unicode digit, and so does Decimal.
MONEY = r"^(?:[0-9]{1,5}(?:\.[0-9]{1,2})?|100000(?:\.00?)?)$"


@extend_schema_field(
    {
        "type": "string",
        "pattern": MONEY,
        "description": 'An amount from 0 to 100000 with at most two decimals, as a string: "12.50".',
    }
)
class MoneyField(serializers.DecimalField):
    """An amount as a decimal string, or null: the schema's pattern is exactly what it takes.
    (DRF's own DecimalField also takes JSON numbers, white space, a sign and "" for null, and its
    schema pattern lets through strings it refuses, such as "-.".)"""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_digits=8, decimal_places=2, **kwargs)

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        # DecimalField reads "" and white space as null; here they are refused like any other
        # string the pattern refuses (null is null).
        return serializers.Field.validate_empty_values(self, data)

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str) or not re.fullmatch(MONEY, data):
            raise serializers.ValidationError(
                f'must be an amount from 0 to 100000 with at most two decimals, as a string such as "12.50"; '
                f"got {data!r}."
            )
        return super().to_internal_value(data)


def id_field(**kwargs: Any) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=1, max_value=MAX_ID, **kwargs)


# --- auth -------------------------------------------------------------------------------------------
class TokenIn(serializers.Serializer):
    username = text_field(max_length=150)
    password = serializers.CharField(
        min_length=1, max_length=256, trim_whitespace=False, validators=[NO_NUL], style={"input_type": "password"}
    )


class TokenOut(serializers.Serializer):
    token = serializers.CharField()


# --- events -----------------------------------------------------------------------------------------
class EventIn(serializers.Serializer):
    id = EventIdField(help_text="Client-generated UUID string (not all zeros): the idempotency key.")
    campaign = id_field()
    unit = id_field(required=False, allow_null=True, default=None)
    query = id_field(required=False, allow_null=True, default=None)
    type = serializers.ChoiceField(choices=EventType.choices)
    payload = JSONObjectField(required=False, default=dict)
    client_ts = AwareDateTimeField(
        help_text="ISO-8601 timestamp from the client's clock, with an offset or Z; within the server's clock "
        "less one year to plus one day (by default), else the event is refused naming client_ts."
    )
    seq = serializers.IntegerField(min_value=0, max_value=MAX_SEQ, required=False, default=0)
    session_id = text_field(blank=True, max_length=64, required=False, default="")


class EventResult(serializers.Serializer):
    id = serializers.CharField(allow_null=True)
    status = serializers.CharField(help_text="stored, replayed or rejected.")
    http_status = serializers.IntegerField(required=False)
    index = serializers.IntegerField(required=False)
    event = serializers.DictField(required=False)
    judgment = serializers.DictField(required=False)
    ordering = serializers.DictField(required=False)
    hint = serializers.CharField(required=False)
    error = serializers.DictField(required=False)


class BatchResult(serializers.Serializer):
    stored = serializers.IntegerField()
    replayed = serializers.IntegerField()
    rejected = serializers.IntegerField()
    results = EventResult(many=True)


class ErrorOut(serializers.Serializer):
    """Every refusal of the API: what was wrong (`detail`) and, for invalid input, where (`field`)
    and the value found there (`value`, cut to 200 characters)."""

    code = serializers.CharField(help_text="invalid, not_found, forbidden, conflict, too_large, throttled, …")
    detail = serializers.CharField()
    field = serializers.CharField(required=False, help_text="The field, parameter or `body` that was wrong.")
    value = serializers.JSONField(required=False, allow_null=True, help_text="The value found there.")
    retry_after = serializers.IntegerField(required=False, help_text="429: seconds to wait.")


class OrderingIn(serializers.Serializer):
    campaign = id_field()
    query = id_field()
    items = serializers.ListField(child=text_field(max_length=40), max_length=10000)
    id = EventIdField(required=False, help_text="Optional client UUID; replays return the original result.")
    client_ts = AwareDateTimeField(required=False, help_text="With an offset or Z.")
    seq = serializers.IntegerField(min_value=0, max_value=MAX_SEQ, required=False, default=0)
    session_id = text_field(blank=True, max_length=64, required=False, default="")


class NextIn(serializers.Serializer):
    campaign = id_field(help_text="The campaign to take work in.")


# --- what a grader may see -------------------------------------------------------------------------
class CandidateOut(serializers.ModelSerializer):
    """A candidate as a grader sees it: opaque id and content, no provenance, no external id."""

    id = serializers.CharField(source="public_id")
    media_url = serializers.CharField(source="media_src")

    class Meta:
        model = Candidate
        fields = ["id", "kind", "text", "media_url"]


class QueryOut(serializers.ModelSerializer):
    media_url = serializers.CharField(source="media_src")

    class Meta:
        model = Query
        fields = ["id", "public_id", "kind", "title", "text", "media_url"]


class UnitOut(serializers.Serializer):
    id = serializers.IntegerField()
    candidate = CandidateOut()
    candidate_b = CandidateOut(allow_null=True)


class JudgmentOut(serializers.ModelSerializer):
    fine = serializers.FloatField(allow_null=True)

    class Meta:
        model = Judgment
        fields = [
            "unit",
            "broad",
            "fine",
            "score",
            "label",
            "verdict",
            "comment",
            "skipped",
            "guidelines_version",
            "updated_at",
        ]


class AssignmentOut(serializers.ModelSerializer):
    status = serializers.CharField(help_text="open, done or skipped.")
    unit = serializers.SerializerMethodField()
    query = serializers.SerializerMethodField()
    judgment = serializers.SerializerMethodField()

    class Meta:
        model = Assignment
        fields = ["id", "campaign", "status", "position", "lease_expires_at", "unit", "query", "judgment"]

    @extend_schema_field(UnitOut(allow_null=True))
    def get_unit(self, obj: Assignment) -> dict[str, Any] | None:
        return UnitOut(obj.unit).data if obj.unit_id else None

    @extend_schema_field(QueryOut(allow_null=True))
    def get_query(self, obj: Assignment) -> dict[str, Any] | None:
        query = obj.query or (obj.unit.query if obj.unit_id else None)
        return QueryOut(query).data if query else None

    @extend_schema_field(JudgmentOut(allow_null=True))
    def get_judgment(self, obj: Assignment) -> dict[str, Any] | None:
        repeats = self.context.get("repeats", {})  # a hidden repeat shows its own answer, never the first (§5.6)
        judgment = repeats.get(obj.pk) if obj.pk in repeats else self.context.get("judgments", {}).get(obj.unit_id)
        return judgment_summary(judgment) if judgment else None


class CampaignOut(serializers.ModelSerializer):
    status = CampaignStatusField(read_only=True)
    roles = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    guidelines = serializers.SerializerMethodField()

    class Meta:
        model = Campaign
        fields = [
            "id",
            "name",
            "slug",
            "description",
            "scheme",
            "scheme_params",
            "status",
            "guidelines_version",
            "guidelines",
            "initial_overlap",
            "max_overlap",
            "budget",
            "policy",
            "policy_params",
            "roles",
            "progress",
            "created_at",
        ]

    def get_roles(self, obj: Campaign) -> list[str]:
        return sorted(self.context.get("roles", {}).get(obj.pk, []))

    def get_progress(self, obj: Campaign) -> dict[str, int]:
        return {"assigned": getattr(obj, "n_assigned", 0), "done": getattr(obj, "n_done", 0)}

    def get_guidelines(self, obj: Campaign) -> str:
        current = obj.guidelines.order_by("-version").first()
        return current.text if current else ""


class CampaignIn(serializers.Serializer):
    name = text_field(max_length=200)
    slug = serializers.SlugField(max_length=80)
    scheme = serializers.ChoiceField(choices=Scheme.choices)
    scheme_params = JSONObjectField(required=False, default=dict)
    guidelines = text_field(blank=True, required=False, default="", max_length=100_000)
    description = text_field(blank=True, required=False, default="", max_length=10_000)
    status = CampaignStatusField(required=False, default=CampaignStatus.DRAFT)
    initial_overlap = serializers.IntegerField(min_value=1, max_value=100, required=False, default=2)
    max_overlap = serializers.IntegerField(min_value=1, max_value=100, required=False, default=5)
    budget = serializers.IntegerField(min_value=1, max_value=MAX_SEQ, required=False, allow_null=True, default=None)
    policy = serializers.ChoiceField(choices=Policy.choices, required=False, default=Policy.FIXED)
    policy_params = JSONObjectField(required=False, default=dict)


class CampaignPatchIn(serializers.Serializer):
    name = text_field(max_length=200, required=False)
    scheme_params = JSONObjectField(required=False)
    guidelines = text_field(blank=True, required=False, max_length=100_000)
    description = text_field(blank=True, required=False, max_length=10_000)
    status = CampaignStatusField(required=False)
    initial_overlap = serializers.IntegerField(min_value=1, max_value=100, required=False)
    max_overlap = serializers.IntegerField(min_value=1, max_value=100, required=False)
    budget = serializers.IntegerField(min_value=1, max_value=MAX_SEQ, required=False, allow_null=True)
    policy = serializers.ChoiceField(choices=Policy.choices, required=False)
    policy_params = JSONObjectField(required=False)


class MemberIn(serializers.Serializer):
    username = text_field(max_length=150)
    role = serializers.ChoiceField(choices=Role.choices)


class MemberOut(serializers.Serializer):
    role = serializers.CharField()
    pseudonym = serializers.CharField()


class JoinLinkIn(serializers.Serializer):
    # Codes and currencies are taken as written (no white space trimmed), so that the schema's
    # patterns say exactly which ones the service takes.
    completion_code = serializers.CharField(
        max_length=64,
        trim_whitespace=False,
        validators=[WholeTextValidator(CODE.pattern, message=f"must be {CODE_CHARS}.")],
    )
    max_participants = serializers.IntegerField(min_value=1, max_value=100000)
    units_per_participant = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    expires_at = serializers.DateTimeField(required=False, allow_null=True)
    consent_text = serializers.CharField(required=False, allow_blank=True, max_length=20000, trim_whitespace=False)
    qualification = JSONObjectField(
        required=False,
        help_text='A screening rule, or {} for none: {"units": gold units each participant rates first, '
        '"pass_mark": how many of them must be right (numeric scales: the largest mean absolute error that '
        'passes), "screen_out_code": the code shown to those below it (optional)}.',
    )
    label = serializers.CharField(required=False, allow_blank=True, max_length=100)
    return_url = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=500,
        help_text="The platform's return address; {code} becomes the completion code.",
    )
    pay_per_unit = MoneyField(required=False, allow_null=True)
    pay_per_hour = MoneyField(required=False, allow_null=True)
    currency = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=3,
        trim_whitespace=False,
        validators=[WholeTextValidator(r"^([A-Za-z]{3})?$", message="must be a three-letter code such as GBP or USD.")],
    )


class JoinLinkPatch(serializers.Serializer):
    paused = serializers.BooleanField(required=False)
    qualification = JSONObjectField(required=False, help_text="The new screening rule (as in JoinLinkIn); {}: none.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError({"paused": ["give paused, qualification or both."]})
        return attrs


class ExclusionIn(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, trim_whitespace=True)


class ExclusionOut(serializers.Serializer):
    grader = serializers.CharField(help_text="the grader's pseudonym")
    excluded = serializers.BooleanField()
    reason = serializers.CharField(help_text="why (empty when included)")
    excluded_at = serializers.DateTimeField(allow_null=True)
    automatic = serializers.BooleanField(help_text="excluded by a rule (a threshold), not by an organizer")
    thresholds_waived = serializers.BooleanField(
        help_text="an organizer included the grader again after an automatic exclusion: the thresholds leave them alone"
    )


class JoinLinkOut(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField(help_text="The address to give the platform; it appends the participant's id.")
    label = serializers.CharField()
    completion_code = serializers.CharField()
    return_url = serializers.CharField()
    max_participants = serializers.IntegerField()
    participants = serializers.IntegerField()
    units_per_participant = serializers.IntegerField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    consent_text = serializers.CharField()
    qualification = serializers.JSONField()
    qualification_words = serializers.CharField(help_text="The rule in words ('' without one).")
    qualified = serializers.IntegerField(help_text="Participants who passed the qualification.")
    screened_out = serializers.IntegerField(help_text="Participants screened out by it.")
    pay_per_unit = serializers.DecimalField(max_digits=8, decimal_places=2, allow_null=True)
    pay_per_hour = serializers.DecimalField(max_digits=8, decimal_places=2, allow_null=True)
    currency = serializers.CharField()
    paused = serializers.BooleanField()
    taking_participants = serializers.BooleanField()
    closed_reason = serializers.CharField(allow_null=True)


class AssignIn(serializers.Serializer):
    grader = text_field(max_length=20, required=False, help_text="Pseudonym; omit to create the initial overlap.")
    units = serializers.ListField(child=id_field(), required=False, max_length=100_000)
    seed = serializers.IntegerField(min_value=0, max_value=MAX_SEQ, required=False, default=0)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("grader" in attrs) != ("units" in attrs):
            raise serializers.ValidationError(
                {"units": "grader and units go together (omit both for the initial overlap)."}
            )
        return attrs


class AssignOut(serializers.Serializer):
    created = serializers.IntegerField()


class ChangeOut(serializers.Serializer):
    field = serializers.CharField()
    label = serializers.CharField(help_text="The field in words.")
    before = serializers.CharField(help_text="The value before, in words ('—': there was none).")
    after = serializers.CharField(help_text="The value after, in words ('—': there is none).")


class AuditEntryOut(serializers.Serializer):
    """One entry of a campaign's audit trail: who did what when, the values before and after as
    stored, and the same in words."""

    id = serializers.IntegerField()
    at = serializers.DateTimeField()
    actor = serializers.CharField(allow_null=True, help_text="The user name at the time; null: no user (a command).")
    action = serializers.CharField(help_text="What was done, e.g. campaign.status, member.added, export.downloaded.")
    target = serializers.CharField(help_text="What it was done to (a user, a unit, a file), empty for the campaign.")
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    summary = serializers.CharField(help_text="The actor and the action in a sentence.")
    changes = ChangeOut(many=True)

    def to_representation(self, entry: Any) -> dict[str, Any]:
        line = activity_line(entry)
        return {
            "id": entry.pk,
            "at": serializers.DateTimeField().to_representation(entry.at),
            "actor": entry.actor_name or None,
            "action": entry.action,
            "target": entry.target,
            "before": entry.before,
            "after": entry.after,
            "summary": f"{line.who} {line.what}",
            "changes": [vars(change) for change in line.changes],
        }


class ProgressRow(serializers.Serializer):
    unit = serializers.IntegerField(required=False)
    query = serializers.IntegerField(required=False)
    external_id = serializers.CharField()
    assigned = serializers.IntegerField()
    done = serializers.IntegerField()


class GraderProgressRow(serializers.Serializer):
    grader = serializers.CharField(help_text="The grader's pseudonym in this campaign.")
    assigned = serializers.IntegerField()
    done = serializers.IntegerField()


class ProgressOut(serializers.Serializer):
    campaign = serializers.IntegerField()
    n_assigned = serializers.IntegerField()
    n_done = serializers.IntegerField()
    per_unit = ProgressRow(many=True)
    per_grader = GraderProgressRow(many=True)
