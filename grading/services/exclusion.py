"""Keeping the honest ones (docs/design.md §2, "Excluded graders"): an organizer excludes a grader of
the campaign, with a reason, and may include them again.

An exclusion is stored on the grader's CampaignRole (when, why, by whom) and audited
(`grader.excluded`, `grader.included`). An exclusion without an actor is automatic: made by a rule
(a threshold of `analysis.services.auto_exclusion`, or a qualification), and an organizer who
includes such a grader again waives the thresholds for them: they are not excluded by them again.
Nothing is deleted: the grader's events and judgments stay in the log, and the analysis leaves them
out of ground truth, agreement and the model (`analysis.services.report.campaign_data_load`
decides, in one place).
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from grading.errors import InvalidValue, NotFound
from grading.models import Campaign, CampaignRole
from grading.models.choices import Role
from grading.services.audit import audit_record

MAX_REASON = 500


def grader_role_find(*, campaign: Campaign, grader: str) -> CampaignRole:
    """The campaign's grader role named by `grader`: a pseudonym, or a user id (digits). NotFound
    (naming what was asked) when the campaign has no such grader."""
    grader = (grader or "").strip()
    roles = CampaignRole.objects.filter(campaign=campaign, role=Role.GRADER)
    role = roles.filter(pseudonym=grader).first() if grader else None
    if role is None and grader.isdigit():
        role = roles.filter(user_id=int(grader)).first()
    if role is None:
        raise NotFound(
            f"campaign {campaign.pk} has no grader {grader!r} (give a pseudonym or a user id).",
            field="grader",
            value=grader[:40],
        )
    return role


@transaction.atomic
def grader_exclude(
    *, campaign: Campaign, role: CampaignRole, reason: str, actor: AbstractBaseUser | None
) -> CampaignRole:
    """Exclude the grader (their judgments leave the analysis) with `reason` (required, at most 500
    characters). Excluding an excluded grader again changes the reason and keeps the first date.
    `actor` None: an automatic exclusion, made by a rule and recorded as such."""
    reason = (reason or "").strip()
    if not reason:
        raise InvalidValue("reason is required: say why the grader is excluded.", field="reason", value="")
    if len(reason) > MAX_REASON:
        raise InvalidValue(
            f"reason is {len(reason)} characters long; at most {MAX_REASON}.", field="reason", value=reason[:40] + "…"
        )
    role = CampaignRole.objects.select_for_update().get(pk=role.pk, campaign=campaign, role=Role.GRADER)
    before = _state(role)
    if role.excluded_at is None:
        role.excluded_at = timezone.now()
    role.exclusion_reason = reason
    role.excluded_by = actor if actor is not None and actor.is_authenticated else None
    role.exclusion_automatic = actor is None
    role.save(update_fields=["excluded_at", "exclusion_reason", "excluded_by", "exclusion_automatic"])
    audit_record(
        actor=actor,
        campaign=campaign,
        action="grader.excluded",
        target=_target(role),
        before=before,
        after=_state(role),
    )
    return role


@transaction.atomic
def grader_include(*, campaign: Campaign, role: CampaignRole, actor: AbstractBaseUser | None) -> CampaignRole:
    """Include an excluded grader again: their judgments count in the next analysis. Including a
    grader who is not excluded changes nothing and records nothing. A person (`actor`) who includes
    an automatically excluded grader overrides the rule: the automatic thresholds skip this grader
    from then on."""
    role = CampaignRole.objects.select_for_update().get(pk=role.pk, campaign=campaign, role=Role.GRADER)
    if role.excluded_at is None:
        return role
    before = _state(role)
    if role.exclusion_automatic and actor is not None:
        role.auto_exclusion_waived_at = timezone.now()
    role.excluded_at = None
    role.exclusion_reason = ""
    role.excluded_by = None
    role.exclusion_automatic = False
    role.save(
        update_fields=[
            "excluded_at",
            "exclusion_reason",
            "excluded_by",
            "exclusion_automatic",
            "auto_exclusion_waived_at",
        ]
    )
    audit_record(
        actor=actor,
        campaign=campaign,
        action="grader.included",
        target=_target(role),
        before=before,
        after=_state(role),
    )
    return role


def _target(role: CampaignRole) -> str:
    return f"grader {role.pseudonym or role.user_id}"


def _state(role: CampaignRole) -> dict[str, object]:
    return {
        "excluded": role.excluded_at is not None,
        "excluded_at": role.excluded_at,
        "reason": role.exclusion_reason,
        "automatic": role.exclusion_automatic,
        "thresholds_waived": role.auto_exclusion_waived_at is not None,
    }
