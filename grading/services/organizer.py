"""Organizer-side writes: campaigns, their graders and assignments. Builds on services.campaigns."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from grading import schemes
from grading.errors import EventConflict, InvalidValue, NotAllowed, NotFound
from grading.models import Assignment, Campaign, CampaignRole, GradingEvent, Unit
from grading.models.choices import ORGANIZER_EVENTS, AssignmentSource, CampaignStatus, Policy, Role
from grading.selectors import assignment_next_position
from grading.services import allocation_state
from grading.services.audit import audit_record, campaign_summary
from grading.services.campaigns import (
    assignments_create_initial,
    campaign_create,
    campaign_set_guidelines,
)
from grading.services.members import member_grant
from grading.services.organizers import can_create_campaigns
from grading.services.policy_params import policy_params_clean


@transaction.atomic
def campaign_create_for(*, user: AbstractBaseUser, **fields: Any) -> Campaign:
    """Create a campaign; its creator becomes its organizer (both recorded in the audit trail)."""
    if not can_create_campaigns(user):
        raise NotAllowed("you may not create campaigns: an admin makes you an organizer on the Organizers page.")
    if Campaign.objects.filter(slug=fields.get("slug")).exists():
        raise InvalidValue(f"slug {fields.get('slug')!r} is already taken.", field="slug", value=fields.get("slug"))
    campaign = campaign_create(created_by=user, **fields)
    audit_record(actor=user, campaign=campaign, action="campaign.created", after=campaign_summary(campaign))
    member_grant(campaign=campaign, user=user, role=Role.ORGANIZER, actor=user)
    return campaign


# The settings an organizer changes, as the audit trail records them (before and after).
SETTINGS = (
    "name",
    "description",
    "scheme_params",
    "initial_overlap",
    "max_overlap",
    "budget",
    "policy",
    "policy_params",
)


@transaction.atomic
def campaign_update(*, campaign: Campaign, actor: AbstractBaseUser | None, **fields: Any) -> Campaign:
    """Change a campaign. New guidelines text makes a new guidelines version. What changed is
    recorded in the audit trail as done by `actor` (settings, and guidelines as their versions)."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    before = {name: getattr(campaign, name) for name in SETTINGS}
    version = campaign.guidelines_version
    if "scheme_params" in fields:
        # Only graders' events start grading: an organizer who sets gold units up in a draft may
        # still adjust its scale.
        if GradingEvent.objects.filter(campaign=campaign).exclude(type__in=ORGANIZER_EVENTS).exists():
            raise InvalidValue(
                "scheme_params cannot change once grading has started.", field="scheme_params", value="(changed)"
            )
        campaign.scheme_params = schemes.normalise_params(campaign.scheme, fields["scheme_params"])
    if "policy_params" in fields:
        campaign.policy_params = policy_params_clean(params=fields["policy_params"], scheme=campaign.scheme)
    for name in ("name", "description", "budget"):
        if name in fields:
            setattr(campaign, name, fields[name])
    if "policy" in fields:
        if fields["policy"] not in Policy.values:
            raise InvalidValue(
                f"policy {fields['policy']!r} is not one of {', '.join(Policy.values)}.",
                field="policy",
                value=fields["policy"],
            )
        campaign.policy = fields["policy"]
    lo = fields.get("initial_overlap", campaign.initial_overlap)
    hi = fields.get("max_overlap", campaign.max_overlap)
    if lo < 1 or hi < lo:
        raise InvalidValue(
            f"overlaps must satisfy 1 ≤ initial_overlap ({lo}) ≤ max_overlap ({hi}).", field="max_overlap", value=hi
        )
    campaign.initial_overlap, campaign.max_overlap = lo, hi
    campaign.save()
    changed = [name for name in SETTINGS if getattr(campaign, name) != before[name]]
    if changed:
        audit_record(
            actor=actor,
            campaign=campaign,
            action="campaign.settings",
            before={name: before[name] for name in changed},
            after={name: getattr(campaign, name) for name in changed},
        )
    if "guidelines" in fields:
        campaign_set_guidelines(campaign=campaign, text=fields["guidelines"])
        if campaign.guidelines_version != version:
            audit_record(
                actor=actor,
                campaign=campaign,
                action="campaign.guidelines",
                before={"version": version},
                after={"version": campaign.guidelines_version},
            )
    campaign.refresh_from_db()
    return campaign


@transaction.atomic
def campaign_delete(*, campaign: Campaign, actor: AbstractBaseUser | None) -> None:
    """Delete a campaign nobody has graded yet; a graded one can only be closed (events are kept).
    The audit trail keeps an entry naming the campaign."""
    if GradingEvent.objects.filter(campaign=campaign).exists():
        raise EventConflict(
            f"campaign {campaign.pk} has grading events, which are never deleted: close it instead.",
            field="campaign",
            value=campaign.pk,
        )
    audit_record(actor=actor, campaign=campaign, action="campaign.deleted", before=campaign_summary(campaign))
    campaign.delete()


@transaction.atomic
def member_add(*, campaign: Campaign, username: str, role: str, actor: AbstractBaseUser | None) -> CampaignRole:
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise NotFound(f"user {username!r} does not exist.", field="username", value=username)
    return member_grant(campaign=campaign, user=user, role=role, actor=actor)


def grader_by_pseudonym(*, campaign: Campaign, pseudonym: str) -> AbstractBaseUser:
    role = (
        CampaignRole.objects.filter(campaign=campaign, role=Role.GRADER, pseudonym=pseudonym)
        .select_related("user")
        .first()
    )
    if role is None:
        raise NotFound(f"campaign {campaign.pk} has no grader {pseudonym!r}.", field="grader", value=pseudonym)
    return role.user


@transaction.atomic
def assignments_initial(*, campaign: Campaign, actor: AbstractBaseUser | None, seed: int = 0) -> int:
    """Give every unit the initial overlap (see `assignments_create_initial`); the assignments
    made, if any, are recorded in the audit trail as `actor`'s."""
    made = assignments_create_initial(campaign=campaign, seed=seed)
    if made:
        audit_record(
            actor=actor,
            campaign=campaign,
            action="assignments.created",
            target="initial overlap",
            after={"created": made, "initial_overlap": campaign.initial_overlap},
        )
    return made


@transaction.atomic
def assignments_assign(
    *,
    campaign: Campaign,
    actor: AbstractBaseUser | None,
    grader: str | None = None,
    units: list[int] | None = None,
    seed: int = 0,
) -> int:
    """Assign graders: the initial overlap for the whole campaign (no grader given), or the given
    units to one grader (named by pseudonym). Returns the number of assignments created."""
    if campaign.status == CampaignStatus.CLOSED:
        raise InvalidValue(f"campaign {campaign.pk} is closed.", field="campaign", value=campaign.pk)
    if grader is None:
        return assignments_initial(campaign=campaign, actor=actor, seed=seed)
    user = grader_by_pseudonym(campaign=campaign, pseudonym=grader)
    found = {u.pk: u for u in Unit.objects.filter(campaign=campaign, pk__in=units or [])}
    missing = [u for u in units or [] if u not in found]
    if missing:
        raise NotFound(f"unit {missing[0]} does not exist in campaign {campaign.pk}.", field="units", value=missing[0])
    have = set(Assignment.objects.filter(grader=user, unit_id__in=list(found)).values_list("unit_id", flat=True))
    first = assignment_next_position(grader=user, campaign=campaign)
    new = [
        Assignment(
            campaign=campaign,
            grader=user,
            unit=found[u],
            query_id=found[u].query_id,
            source=AssignmentSource.MANUAL,
            position=first + i,
        )
        for i, u in enumerate(dict.fromkeys(units or []))
        if u not in have
    ]
    try:
        Assignment.objects.bulk_create(new)
    except IntegrityError:
        raise InvalidValue("some units were assigned concurrently; try again.", field="units", value=None) from None
    allocation_state.assignments_added(campaign=campaign)
    if new:
        audit_record(
            actor=actor,
            campaign=campaign,
            action="assignments.created",
            target=grader,
            after={"created": len(new), "grader": grader},
        )
    return len(new)
