"""The next-unit request's SQL lookups take exactly what the ORM queries they replace would take,
on both backends, in campaigns left in many states by random work."""

import random
from datetime import timedelta

import pytest
from django.db import transaction
from django.db.models import Exists, Max, OuterRef, Q
from django.utils import timezone

from grading.models import Assignment, Judgment, UnitAllocation
from grading.models.choices import AssignmentSource, AssignmentStatus, Policy, Scheme
from grading.services import allocation_queries as queries
from grading.services.allocation import assignment_next
from grading.services.allocation_state import allocation_state_ensure
from grading.services.campaigns import role_grant
from tests.factories import make_campaign, make_user, record
from tests.grading.api_helpers import fast_passwords, graders_of  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.both_backends]


class Rollback(Exception):
    pass


def worked_campaign(seed: int):
    """A campaign after random work: some judged, some extra slots left open, some leases expired."""
    campaign = make_campaign(scheme=Scheme.CATEGORICAL, n_queries=3, n_candidates=6, graders=5, overlap=2)
    campaign.policy, campaign.max_overlap = Policy.CONSENSUS, 4
    campaign.save()
    for _ in range(2):
        role_grant(campaign=campaign, user=make_user(), role="grader")
    allocation_state_ensure(campaign=campaign)
    rng = random.Random(seed)
    labels = ["bad", "ok", "good"]
    for a in Assignment.objects.filter(campaign=campaign).select_related("grader", "unit").order_by("pk"):
        if rng.random() < 0.95:  # most initial work done, with disagreements to resolve
            record(a.grader, campaign, "label_set", {"value": rng.choice(labels)}, unit=a.unit)
    for _ in range(25):
        grader = rng.choice(graders_of(campaign))
        served = assignment_next(grader=grader, campaign=campaign)
        if served is not None and rng.random() < 0.4:
            record(grader, campaign, "label_set", {"value": rng.choice(labels)}, unit=served.unit)
    past = timezone.now() - timedelta(hours=1)
    for a in Assignment.objects.filter(campaign=campaign, source=AssignmentSource.ADAPTIVE, status="open"):
        if rng.random() < 0.6:
            Assignment.objects.filter(pk=a.pk).update(lease_expires_at=past - timedelta(seconds=rng.randrange(600)))
    return campaign


def next_position(grader, campaign) -> int:
    return (Assignment.objects.filter(campaign=campaign, grader=grader).aggregate(m=Max("position"))["m"] or 0) + 1


def orm_own_open(grader, campaign):
    mine = Assignment.objects.filter(campaign=campaign, grader=grader, status=AssignmentStatus.OPEN)
    return mine.order_by("position", "pk").values_list("pk", flat=True).first()


def orm_expired(grader, campaign, now):
    judged = Judgment.objects.filter(grader=OuterRef("grader"), unit=OuterRef("unit"))
    mine = Assignment.objects.filter(grader=grader, unit=OuterRef("unit"))
    slots = Assignment.objects.filter(
        campaign=campaign,
        source=AssignmentSource.ADAPTIVE,
        status=AssignmentStatus.OPEN,
        lease_expires_at__lt=now,
        unit__isnull=False,
        repeat=False,
    )
    slots = slots.exclude(grader=grader).exclude(Exists(mine)).exclude(Exists(judged))
    return slots.order_by("lease_expires_at", "pk").values_list("pk", flat=True).first()


def orm_wanted(grader, campaign, limit, query_ids):
    mine = Assignment.objects.filter(grader=grader, unit=OuterRef("unit"))
    rows = UnitAllocation.objects.filter(campaign=campaign, needs_more=True).exclude(Exists(mine))
    if query_ids is not None:
        found = Q(query_id__in=[q for q in query_ids if q is not None])
        rows = rows.filter(found | Q(query_id__isnull=True) if None in query_ids else found)
    fields = ("unit_id", "query_id", "reason", "n_judgments", "n_assigned", "n_open")
    return [tuple(r) for r in rows.order_by("-priority", "unit_id").values_list(*fields)[:limit]]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_lookup_takes_what_the_orm_query_would(seed):
    campaign = worked_campaign(seed)
    query_ids = list(campaign.queries.order_by("pk").values_list("pk", flat=True))
    now = timezone.now()
    lease = now + timedelta(minutes=30)
    checked = {"own": 0, "expired": 0, "wanted": 0}
    newcomer = make_user()
    role_grant(campaign=campaign, user=newcomer, role="grader")
    for grader in graders_of(campaign):
        ids = {"grader_id": grader.pk, "campaign_id": campaign.pk}
        for take in ["own", "expired", "wanted"]:
            try:
                with transaction.atomic():  # each take is tried on the same state, then undone
                    position = next_position(grader, campaign)
                    if take == "own":
                        expected = orm_own_open(grader, campaign)
                        assert queries.own_open_take(**ids, lease_expires_at=lease) == expected
                        if expected is not None:
                            assert Assignment.objects.get(pk=expected).lease_expires_at == lease
                    elif take == "expired":
                        expected = orm_expired(grader, campaign, now)
                        assert queries.expired_slot_take(**ids, now=now, lease_expires_at=lease) == expected
                        if expected is not None:
                            slot = Assignment.objects.get(pk=expected)
                            assert (slot.grader_id, slot.position, slot.lease_expires_at) == (
                                grader.pk,
                                position,
                                lease,
                            )
                    else:
                        found = []
                        for limit, among in [(1, None), (40, None), (40, query_ids[:1]), (40, [None]), (5, [])]:
                            expected = orm_wanted(grader, campaign, limit, among)
                            taken = queries.wanted_take(**ids, limit=limit, query_ids=among)
                            assert [tuple(vars(w).values())[:6] for w in taken] == expected
                            assert all(w.next_position == position for w in taken)
                            found += taken
                        expected = found
                    checked[take] += expected not in (None, [])
                    raise Rollback
            except Rollback:
                pass
    # The random work left something for each lookup to take.
    assert all(n > 0 for n in checked.values()), checked


def test_a_grader_with_no_assignments_starts_at_position_one():
    campaign = worked_campaign(4)
    newcomer = make_user()
    role_grant(campaign=campaign, user=newcomer, role="grader")
    taken = queries.wanted_take(grader_id=newcomer.pk, campaign_id=campaign.pk, limit=40)
    assert taken and {w.next_position for w in taken} == {1}
