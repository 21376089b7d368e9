"""A campaign's lifecycle (draft → open → closed, and reopen) and the locks that keep it one
instrument: once grading has started, the scheme and the items cannot change (docs/design.md §2).

The organizer pages, the API and the Django admin all go through these functions.
"""

from __future__ import annotations

import difflib
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from grading.errors import CampaignLocked, InvalidValue, StepNotAllowed
from grading.models import Campaign, GuidelinesVersion, Judgment, Ordering
from grading.models.choices import CampaignStatus
from grading.services.audit import audit_record, campaign_summary
from grading.services.campaigns import campaign_create, campaign_set_status
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
def campaign_transition(*, campaign: Campaign, to: str, actor: AbstractBaseUser | None) -> Campaign:
    """Move a campaign to status `to`, if that step is allowed; opening needs something to grade.
    The step is recorded in the audit trail as done by `actor`."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    allowed = TRANSITIONS.get(campaign.status, ())
    if to not in allowed:
        raise StepNotAllowed(
            f"a {campaign.status} campaign cannot become {to}; it can become {', '.join(allowed) or 'nothing else'}.",
            field="status",
            value=to,
        )
    if to == CampaignStatus.OPEN and not campaign.units.exists():
        raise StepNotAllowed("a campaign without items cannot open: import items first.", field="status", value=to)
    before = campaign.status
    campaign = campaign_set_status(campaign=campaign, status=to)
    audit_record(
        actor=actor, campaign=campaign, action="campaign.status", before={"status": before}, after={"status": to}
    )
    return campaign


@transaction.atomic
def campaign_settings_update(*, campaign: Campaign, actor: AbstractBaseUser | None, **fields: Any) -> Campaign:
    """Change settings; the locked fields only while nobody has graded. Recorded as done by `actor`."""
    for name in LOCKED_FIELDS:
        if name in fields and fields[name] != getattr(campaign, name):
            campaign_lock_check(campaign=campaign, what=name)
    if "scheme" in fields and fields["scheme"] != campaign.scheme:
        raise InvalidValue("the scheme is chosen when a campaign is created.", field="scheme", value=fields["scheme"])
    fields.pop("scheme", None)
    if "status" in fields and fields["status"] != campaign.status:
        campaign = campaign_transition(campaign=campaign, to=fields.pop("status"), actor=actor)
    fields.pop("status", None)
    return campaign_update(campaign=campaign, actor=actor, **fields)


@transaction.atomic
def campaign_admin_update(*, campaign: Campaign, actor: AbstractBaseUser | None, **fields: Any) -> Campaign:
    """The Django admin's change of a campaign: what the organizers may change (as
    `campaign_settings_update`), and besides its slug (unique) and, while nobody has graded, its
    scheme (with `scheme_params` for the new scheme)."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    before = {"slug": campaign.slug, "scheme": campaign.scheme}
    slug = fields.pop("slug", campaign.slug)
    if slug != campaign.slug:
        if Campaign.objects.filter(slug=slug).exclude(pk=campaign.pk).exists():
            raise InvalidValue(f"slug {slug!r} is already taken.", field="slug", value=slug)
        campaign.slug = slug
        campaign.save(update_fields=["slug", "updated_at"])
    scheme = fields.pop("scheme", campaign.scheme)
    if scheme != campaign.scheme:
        campaign_lock_check(campaign=campaign, what="scheme")
        campaign.scheme = scheme
        campaign.save(update_fields=["scheme", "updated_at"])
    after = {"slug": campaign.slug, "scheme": campaign.scheme}
    changed = [name for name in before if before[name] != after[name]]
    if changed:
        audit_record(
            actor=actor,
            campaign=campaign,
            action="campaign.settings",
            before={name: before[name] for name in changed},
            after={name: after[name] for name in changed},
        )
    return campaign_settings_update(campaign=campaign, actor=actor, **fields)


@transaction.atomic
def campaign_admin_create(*, actor: AbstractBaseUser | None, **fields: Any) -> Campaign:
    """The Django admin's new campaign (nobody becomes its organizer), recorded as created by `actor`."""
    campaign = campaign_create(created_by=actor, **fields)
    audit_record(actor=actor, campaign=campaign, action="campaign.created", after=campaign_summary(campaign))
    return campaign


@transaction.atomic
def campaign_admin_delete(*, campaign: Campaign, actor: AbstractBaseUser | None) -> None:
    """The Django admin's deletion of a campaign; its audit trail stays, naming it."""
    audit_record(actor=actor, campaign=campaign, action="campaign.deleted", before=campaign_summary(campaign))
    campaign.delete()


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
