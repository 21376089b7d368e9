"""A campaign's lifecycle (draft → open → closed, and reopen) and the locks that keep it one
instrument: once grading has started, the scheme and the items cannot change (docs/design.md §2).

The organizer pages, the API and the Django admin all go through these functions.
"""

from __future__ import annotations

import difflib
from typing import Any

from django.db import transaction

from grading.errors import CampaignLocked, InvalidValue
from grading.models import Campaign, GuidelinesVersion, Judgment, Ordering
from grading.models.choices import CampaignStatus
from grading.services.campaigns import campaign_set_status
from grading.services.organizer import campaign_update

# Which status may follow which. A campaign never returns to draft: graders may have seen it.
TRANSITIONS: dict[str, tuple[str, ...]] = {
    CampaignStatus.DRAFT: (CampaignStatus.OPEN,),
    CampaignStatus.OPEN: (CampaignStatus.CLOSED,),
    CampaignStatus.CLOSED: (CampaignStatus.OPEN,),
}
LOCKED_FIELDS = ("scheme", "scheme_params")
LOCK_REASON = "grading has started (judgments were made under the current scheme and items)"


def grading_started(campaign: Campaign) -> bool:
    """Someone has given a judgment or an ordering (opening a page or the guidelines does not count)."""
    return (
        Judgment.objects.filter(campaign_id=campaign.pk).exists()
        or Ordering.objects.filter(campaign_id=campaign.pk).exists()
    )


def campaign_lock_check(*, campaign: Campaign, what: str) -> None:
    """Raise CampaignLocked when `what` (a field, or "items") may no longer change."""
    if campaign.pk and grading_started(campaign):
        raise CampaignLocked(
            f"{what} cannot change: {LOCK_REASON}. Create a new campaign instead.", field=what, value=campaign.pk
        )


@transaction.atomic
def campaign_transition(*, campaign: Campaign, to: str) -> Campaign:
    """Move a campaign to status `to`, if that step is allowed; opening needs something to grade."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    allowed = TRANSITIONS.get(campaign.status, ())
    if to not in allowed:
        raise InvalidValue(
            f"a {campaign.status} campaign cannot become {to}; it can become {', '.join(allowed) or 'nothing else'}.",
            field="status",
            value=to,
        )
    if to == CampaignStatus.OPEN and not campaign.units.exists():
        raise InvalidValue("a campaign without items cannot open: import items first.", field="status", value=to)
    return campaign_set_status(campaign=campaign, status=to)


def campaign_settings_update(*, campaign: Campaign, **fields: Any) -> Campaign:
    """Change settings; the locked fields only while nobody has graded."""
    for name in LOCKED_FIELDS:
        if name in fields and fields[name] != getattr(campaign, name):
            campaign_lock_check(campaign=campaign, what=name)
    if "scheme" in fields and fields["scheme"] != campaign.scheme:
        raise InvalidValue("the scheme is chosen when a campaign is created.", field="scheme", value=fields["scheme"])
    fields.pop("scheme", None)
    if "status" in fields and fields["status"] != campaign.status:
        campaign = campaign_transition(campaign=campaign, to=fields.pop("status"))
    fields.pop("status", None)
    return campaign_update(campaign=campaign, **fields)


def guidelines_changes(*, campaign: Campaign, since_version: int) -> dict[str, Any] | None:
    """What changed in the guidelines since `since_version` (the last version a grader opened):
    the lines removed and added, or None when nothing changed."""
    if since_version >= campaign.guidelines_version or since_version < 1:
        return None
    texts = dict(
        GuidelinesVersion.objects.filter(
            campaign=campaign, version__in=[since_version, campaign.guidelines_version]
        ).values_list("version", "text")
    )
    old, new = texts.get(since_version, ""), texts.get(campaign.guidelines_version, "")
    lines = [
        line
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=1)
        if not line.startswith(("---", "+++", "@@"))
    ]
    return {
        "from": since_version,
        "to": campaign.guidelines_version,
        "removed": [line[1:] for line in lines if line.startswith("-")],
        "added": [line[1:] for line in lines if line.startswith("+")],
    }
