"""Creating and configuring campaigns: guidelines versions, roles and the initial assignments."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Count, Max

from grading import schemes
from grading.errors import InvalidValue
from grading.models import Assignment, Campaign, CampaignRole, GuidelinesVersion, Query, Unit
from grading.models.choices import AssignmentSource, CampaignStatus, Policy, Role, Scheme
from grading.services import allocation_state
from grading.services.policy_params import policy_params_clean

PSEUDONYM = re.compile(r"G\d+")
ROLE_GRANT_ATTEMPTS = 20  # a join loses at most once to each rival joining at the same moment


@transaction.atomic
def campaign_create(
    *,
    name: str,
    slug: str,
    scheme: str,
    scheme_params: dict[str, Any] | None = None,
    guidelines: str = "",
    description: str = "",
    status: str = CampaignStatus.DRAFT,
    initial_overlap: int = 2,
    max_overlap: int = 5,
    budget: int | None = None,
    policy: str = Policy.FIXED,
    policy_params: dict[str, Any] | None = None,
    created_by: AbstractBaseUser | None = None,
) -> Campaign:
    params = schemes.normalise_params(scheme, scheme_params)
    if status not in CampaignStatus.values:
        raise InvalidValue(
            f"status {status!r} is not one of {', '.join(CampaignStatus.values)}.", field="status", value=status
        )
    if policy not in Policy.values:
        raise InvalidValue(f"policy {policy!r} is not one of {', '.join(Policy.values)}.", field="policy", value=policy)
    if initial_overlap < 1 or max_overlap < initial_overlap:
        raise InvalidValue(
            f"overlaps must satisfy 1 ≤ initial_overlap ({initial_overlap}) ≤ max_overlap ({max_overlap}).",
            field="max_overlap",
            value=max_overlap,
        )
    policy_params = policy_params_clean(params=policy_params, scheme=scheme)
    campaign = Campaign.objects.create(
        name=name,
        slug=slug,
        scheme=scheme,
        scheme_params=params,
        description=description,
        status=status,
        initial_overlap=initial_overlap,
        max_overlap=max_overlap,
        budget=budget,
        policy=policy,
        policy_params=policy_params,
        created_by=created_by,
    )
    if guidelines:
        campaign_set_guidelines(campaign=campaign, text=guidelines)
    return campaign


@transaction.atomic
def campaign_set_guidelines(*, campaign: Campaign, text: str) -> GuidelinesVersion:
    """Record new guidelines; unchanged text keeps the current version."""
    Campaign.objects.select_for_update().filter(pk=campaign.pk).first()  # serialise concurrent edits
    current = campaign.guidelines.order_by("-version").first()
    if current is not None and current.text == text:
        return current
    version = (current.version if current else 0) + 1
    guidelines = GuidelinesVersion.objects.create(campaign=campaign, version=version, text=text)
    Campaign.objects.filter(pk=campaign.pk).update(guidelines_version=version)
    campaign.guidelines_version = version
    return guidelines


def campaign_set_status(*, campaign: Campaign, status: str) -> Campaign:
    if status not in CampaignStatus.values:
        raise InvalidValue(
            f"status {status!r} is not one of {', '.join(CampaignStatus.values)}.", field="status", value=status
        )
    campaign.status = status
    campaign.save(update_fields=["status", "updated_at"])
    return campaign


def role_grant(*, campaign: Campaign, user: AbstractBaseUser, role: str) -> CampaignRole:
    """Give ``user`` a role in the campaign (granting it again returns the existing role).

    A grader gets the next free pseudonym G01, G02, … . Two joins at the same moment may pick the
    same one: the unique constraint refuses the second insert (in a savepoint, so an enclosing
    transaction survives) and it tries again with the next number.
    """
    if role not in Role.values:
        raise InvalidValue(f"role {role!r} is not one of {', '.join(Role.values)}.", field="role", value=role)
    for _ in range(ROLE_GRANT_ATTEMPTS - 1):
        try:
            return _role_get_or_create(campaign=campaign, user=user, role=role)
        except IntegrityError:
            continue  # a concurrent join took this pseudonym (or granted the same role): look again
    return _role_get_or_create(campaign=campaign, user=user, role=role)


def _role_get_or_create(*, campaign: Campaign, user: AbstractBaseUser, role: str) -> CampaignRole:
    existing = CampaignRole.objects.filter(campaign=campaign, user=user, role=role).first()
    if existing:
        return existing
    pseudonym = _next_pseudonym(campaign) if role == Role.GRADER else ""
    with transaction.atomic():  # a savepoint: a refused insert leaves an enclosing transaction usable
        return CampaignRole.objects.create(campaign=campaign, user=user, role=role, pseudonym=pseudonym)


def _next_pseudonym(campaign: Campaign) -> str:
    """One past the highest G-number in use (not the count: a removed grader leaves a gap)."""
    taken = CampaignRole.objects.filter(campaign=campaign, role=Role.GRADER).values_list("pseudonym", flat=True)
    numbers = [int(p[1:]) for p in taken if PSEUDONYM.fullmatch(p)]
    return f"G{max(numbers, default=0) + 1:02d}"


def graders_of(campaign: Campaign) -> list[AbstractBaseUser]:
    user_ids = CampaignRole.objects.filter(campaign=campaign, role=Role.GRADER).values_list("user_id", flat=True)
    return list(get_user_model().objects.filter(pk__in=user_ids).order_by("pk"))


@transaction.atomic
def assignments_create_initial(*, campaign: Campaign, seed: int = 0) -> int:
    """Give every unit (ordering campaigns: every query) `initial_overlap` graders.

    Graders are chosen least-loaded first, ties broken by a seeded shuffle, so the work is spread
    evenly; each grader sees their assignments in their own shuffled order. Existing assignments
    count towards the overlap, so calling this twice adds nothing.
    """
    graders = graders_of(campaign)
    if len(graders) < campaign.initial_overlap:
        raise InvalidValue(
            f"campaign {campaign.slug} has {len(graders)} graders but an initial overlap of "
            f"{campaign.initial_overlap}.",
            field="initial_overlap",
            value=campaign.initial_overlap,
        )
    rng = random.Random(seed)
    by_ordering = campaign.scheme == Scheme.ORDERING
    targets: Iterable[Unit | Query] = (
        campaign.queries.order_by("position", "pk")
        if by_ordering
        else campaign.units.order_by("query_id", "position", "pk")
    )
    key = "query_id" if by_ordering else "unit_id"
    have: dict[int, set[int]] = {}
    for target_id, grader_id in Assignment.objects.filter(campaign=campaign).values_list(key, "grader_id"):
        have.setdefault(target_id, set()).add(grader_id)
    load = dict(Assignment.objects.filter(campaign=campaign).values_list("grader_id").annotate(n=Count("pk")))
    position = dict(Assignment.objects.filter(campaign=campaign).values_list("grader_id").annotate(m=Max("position")))
    new: list[Assignment] = []
    for target in targets:
        taken = have.get(target.pk, set())
        pool = [g for g in graders if g.pk not in taken]
        rng.shuffle(pool)
        pool.sort(key=lambda g: load.get(g.pk, 0))
        for grader in pool[: max(0, campaign.initial_overlap - len(taken))]:
            load[grader.pk] = load.get(grader.pk, 0) + 1
            new.append(
                Assignment(
                    campaign=campaign,
                    grader=grader,
                    source=AssignmentSource.INITIAL,
                    **({"query": target} if by_ordering else {"unit": target, "query_id": target.query_id}),
                )
            )
    _shuffle_positions(new, rng, position)
    Assignment.objects.bulk_create(new)
    allocation_state.assignments_added(campaign=campaign)
    return len(new)


@transaction.atomic
def assignments_create_for_grader(*, campaign: Campaign, grader: AbstractBaseUser, limit: int | None, seed: int) -> int:
    """Give one grader (a crowd participant joining) up to `limit` units (ordering campaigns:
    queries), all of them when `limit` is None: those with the fewest graders first, below the
    campaign's maximum overlap, never one the grader already has; ties broken by a seeded shuffle.
    The grader sees them in an order shuffled for them. Returns how many were made (0: none left)."""
    by_ordering = campaign.scheme == Scheme.ORDERING
    key = "query_id" if by_ordering else "unit_id"
    targets: list[Unit | Query] = list(
        campaign.queries.order_by("position", "pk")
        if by_ordering
        else campaign.units.order_by("query_id", "position", "pk")
    )
    assigned = Assignment.objects.filter(campaign=campaign, repeat=False)
    load = dict(assigned.order_by().values_list(key).annotate(n=Count("pk")))
    have = set(Assignment.objects.filter(campaign=campaign, grader=grader).values_list(key, flat=True))
    pool = [t for t in targets if t.pk not in have and load.get(t.pk, 0) < campaign.max_overlap]
    rng = random.Random(seed)
    rng.shuffle(pool)
    pool.sort(key=lambda t: load.get(t.pk, 0))
    chosen = pool if limit is None else pool[:limit]
    new = [
        Assignment(
            campaign=campaign,
            grader=grader,
            source=AssignmentSource.INITIAL,
            **({"query": t} if by_ordering else {"unit": t, "query_id": t.query_id}),
        )
        for t in chosen
    ]
    start = Assignment.objects.filter(campaign=campaign, grader=grader).aggregate(m=Max("position"))["m"]
    _shuffle_positions(new, rng, {grader.pk: start})
    Assignment.objects.bulk_create(new)
    if new:
        allocation_state.assignments_added(campaign=campaign)
    return len(new)


def _shuffle_positions(new: list[Assignment], rng: random.Random, start: dict[int, int | None]) -> None:
    """Per grader, a random order of queries (and of candidates within each query)."""
    per_grader: dict[int, list[Assignment]] = {}
    for a in new:
        per_grader.setdefault(a.grader_id, []).append(a)
    for grader_id, items in per_grader.items():
        groups: dict[int | None, list[Assignment]] = {}
        for a in items:
            groups.setdefault(a.query_id, []).append(a)
        order = list(groups)
        rng.shuffle(order)
        pos = (start.get(grader_id) or 0) + 1
        for query_id in order:
            group = groups[query_id]
            rng.shuffle(group)
            for a in group:
                a.position = pos
                pos += 1
