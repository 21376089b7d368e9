"""How an audit entry reads, on the campaign's Activity tab and in its API: who did what, in a
sentence, and each value that changed, before → after, in words (docs/design.md §2)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from grading.models import AuditEntry
from grading.models.choices import CampaignStatus, Policy, Role, Scheme

# The words for the fields an entry's `before` and `after` hold.
LABELS = {
    "name": "name",
    "slug": "short name (slug)",
    "scheme": "rating scheme",
    "description": "description",
    "scheme_params": "scheme parameters",
    "initial_overlap": "graders per unit at first",
    "max_overlap": "most graders per unit",
    "budget": "judgment budget",
    "policy": "allocation policy",
    "policy_params": "policy parameters",
    "status": "status",
    "version": "guidelines version",
    "value": "value",
    "note": "note",
    "sibling_campaign": "sibling campaign",
    "pairwise_campaign": "pairwise campaign",
    "user": "user",
    "role": "role",
    "pseudonym": "pseudonym",
    "open_assignments_returned": "open assignments returned to the pool",
    "created": "assignments made",
    "grader": "grader",
    "account": "account",
    "emailed": "link e-mailed",
    "what": "data",
    "format": "format",
    "analysis": "analysis",
    "systems": "systems",
    "units": "units",
    "scores": "scores",
    "queries": "queries",
    "orderings": "orderings",
    "replaced": "earlier ones replaced",
    "qualification": "qualification rule",
}
CHOICES = {
    "status": dict(CampaignStatus.choices),
    "policy": dict(Policy.choices),
    "scheme": dict(Scheme.choices),
    "role": dict(Role.choices),
}
NOBODY = "someone without an account (a command)"
# Who screened a crowd participant out: the link's qualification rule, applied by the server.
SCREENING = "the join link's qualification (automatically)"


@dataclass(frozen=True)
class Change:
    field: str
    label: str
    before: str
    after: str


@dataclass(frozen=True)
class ActivityLine:
    entry: AuditEntry
    who: str
    what: str
    changes: list[Change]


def words(field: str, value: Any) -> str:
    """A stored value in words: choices by their names, nothing as 'none', objects as compact JSON."""
    if value is None or value == "" or value == {}:
        return "no limit" if field == "budget" else "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if field in CHOICES:
        return str(CHOICES[field].get(value, value))
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def changes_of(entry: AuditEntry) -> list[Change]:
    """Each field of the entry with its value before and after, in words (fields in stored order)."""
    before, after = entry.before or {}, entry.after or {}
    fields = list(dict.fromkeys([*before, *after]))
    return [
        Change(
            field=f,
            label=LABELS.get(f, f.replace("_", " ")),
            before=words(f, before.get(f)) if f in before else "—",
            after=words(f, after.get(f)) if f in after else "—",
        )
        for f in fields
    ]


def sentence(entry: AuditEntry) -> str:
    """What was done, in a sentence whose subject is the entry's actor."""
    before, after, target = entry.before or {}, entry.after or {}, entry.target
    status = CHOICES["status"]
    said = {
        "campaign.created": "created the campaign",
        "campaign.deleted": f"deleted the campaign {entry.campaign_name}",
        "campaign.status": (
            f"changed the status from {status.get(before.get('status'), before.get('status'))} "
            f"to {status.get(after.get('status'), after.get('status'))}"
        ),
        "campaign.settings": "changed the settings",
        "campaign.guidelines": (f"edited the guidelines (version {before.get('version')} → {after.get('version')})"),
        "campaign.instrument_links": "changed the campaigns that measure this one",
        "member.added": f"added {target} as {words('role', after.get('role'))}",
        "member.removed": f"removed {target} as {words('role', before.get('role'))}",
        "invitation.created": f"made a one-time link for {target} to set a password",
        "assignments.created": (
            f"assigned {after.get('created')} unit(s) to {target}"
            if target and target != "initial overlap"
            else f"gave every unit its first graders ({after.get('created')} assignments)"
        ),
        "gold.set": (f"made unit {target} a gold unit" if not before else f"changed the gold answer of unit {target}"),
        "gold.removed": f"made unit {target} an ordinary unit again",
        "unit.adjudicated": f"adjudicated unit {target}",
        "export.downloaded": f"downloaded {target}",
        "systems.scores_uploaded": f"uploaded per-unit scores of {target}",
        "systems.orderings_uploaded": f"uploaded the orderings of {target}",
        "join_link.created": f"made {target} for a crowd study",
        "join_link.paused": f"paused {target}: nobody new joins",
        "join_link.reopened": f"reopened {target}",
        "join_link.qualification": (
            f"removed the qualification of {target}"
            if not after.get("qualification")
            else f"set the qualification of {target}"
        ),
        "grader.excluded": f"excluded {target} from the analysis: {after.get('reason', '')}",
        "grader.included": f"included {target} in the analysis again"
        + (
            " (the automatic thresholds leave them alone from now on)"
            if after.get("thresholds_waived") and not before.get("thresholds_waived")
            else ""
        ),
        "organizer.granted": f"made {target} an organizer (may create campaigns)",
        "organizer.withdrawn": f"made {target} no longer an organizer",
    }
    return said.get(entry.action, f"{entry.action.replace('.', ': ').replace('_', ' ')} {target}".strip())


AUTOMATIC = "Evalutron, automatically"


def activity_line(entry: AuditEntry) -> ActivityLine:
    who = entry.actor_name or NOBODY
    if not entry.actor_name and entry.action == "grader.excluded":
        if _screening(entry):
            who = SCREENING
        elif (entry.after or {}).get("automatic"):
            who = AUTOMATIC
    return ActivityLine(entry=entry, who=who, what=sentence(entry), changes=changes_of(entry))


def _screening(entry: AuditEntry) -> bool:
    return str((entry.after or {}).get("reason", "")).startswith("screened out:")
