"""Per-unit allocation state: kept current by the judgment's transaction, equal to a rebuild from
scratch, and the reason codes when no unit can be given."""

import random

import pytest

from grading.models import Assignment, UnitAllocation
from grading.models.allocation import CampaignAllocation, NeedReason
from grading.models.choices import Policy, Scheme
from grading.services.allocation import (
    BUDGET_SPENT,
    MAX_OVERLAP_REACHED,
    NOTHING_NEEDED,
    assignment_next,
    assignment_next_explained,
)
from grading.services.allocation_state import STATE_FIELDS, allocation_state_build, allocation_state_ensure
from grading.services.campaigns import role_grant
from tests.factories import make_campaign, make_user, record
from tests.grading.api_helpers import fast_passwords, graders_of  # noqa: F401

pytestmark = pytest.mark.django_db


def categorical(policy=Policy.CONSENSUS, **extra):
    campaign = make_campaign(scheme=Scheme.CATEGORICAL, n_queries=2, n_candidates=3, graders=4, overlap=2, **extra)
    campaign.policy, campaign.max_overlap = policy, 3
    campaign.save()
    return campaign


def judge(assignment, label):
    record(assignment.grader, assignment.campaign, "label_set", {"value": label}, unit=assignment.unit)


def snapshot(campaign):
    return {
        r.unit_id: tuple(getattr(r, f) for f in STATE_FIELDS[1:])
        for r in UnitAllocation.objects.filter(campaign=campaign)
    }


def test_a_judgment_updates_its_units_state_in_the_same_transaction():
    campaign = categorical()
    allocation_state_ensure(campaign=campaign)
    unit = campaign.units.order_by("pk").first()
    first, second = Assignment.objects.filter(unit=unit).order_by("pk")
    judge(first, "bad")
    row = UnitAllocation.objects.get(unit=unit)
    assert (row.n_judgments, row.n_open, row.reason, row.needs_more) == (1, 1, NeedReason.BUSY, False)
    judge(second, "good")
    row.refresh_from_db()
    assert (row.n_judgments, row.n_open, row.disagree, row.needs_more) == (2, 0, True, True)
    assert row.reason == NeedReason.DISAGREEMENT and row.values == {"bad": 1, "good": 1}


def test_incremental_state_equals_a_rebuild_after_random_work():
    campaign = categorical()
    allocation_state_ensure(campaign=campaign)
    rng = random.Random(3)
    for _ in range(40):
        grader = rng.choice(graders_of(campaign))
        served = assignment_next(grader=grader, campaign=campaign)
        if served is not None and rng.random() < 0.8:
            judge(served, rng.choice(["bad", "ok", "good"]))
    before = snapshot(campaign)
    assert len(before) == campaign.units.count() == 6
    allocation_state_build(campaign=campaign)
    assert snapshot(campaign) == before
    assert (
        CampaignAllocation.objects.get(campaign=campaign).n_assignments
        == Assignment.objects.filter(campaign=campaign).count()
    )


def test_each_reason_for_giving_nothing_is_named():
    campaign = categorical()
    for a in Assignment.objects.filter(campaign=campaign).order_by("pk"):
        judge(a, "good" if a.unit.external_id != "u0-0" else ["bad", "good"][a.pk % 2])
    newcomer = make_user()
    role_grant(campaign=campaign, user=newcomer, role="grader")
    campaign.budget = Assignment.objects.filter(campaign=campaign).count()
    campaign.save()
    assert assignment_next_explained(grader=newcomer, campaign=campaign).reason == BUDGET_SPENT
    campaign.budget = None
    campaign.save()
    extra = assignment_next_explained(grader=newcomer, campaign=campaign).assignment
    assert extra.unit.external_id == "u0-0" and extra.allocation_reason == NeedReason.DISAGREEMENT
    judge(extra, "ok")  # three different labels, and the unit is at its maximum overlap
    assert assignment_next_explained(grader=make_user(), campaign=campaign).reason == MAX_OVERLAP_REACHED
    campaign.policy = Policy.FIXED
    campaign.save()
    assert assignment_next_explained(grader=newcomer, campaign=campaign).reason == NOTHING_NEEDED


def test_uncertainty_gives_the_unit_this_grader_can_settle_most():
    campaign = categorical(policy=Policy.UNCERTAINTY)
    by_unit = {}
    for a in Assignment.objects.filter(campaign=campaign).select_related("unit").order_by("pk"):
        by_unit.setdefault(a.unit.external_id, []).append(a)
    # u0-0 split evenly, u0-1 split as well, the rest agree.
    for ext, pair in by_unit.items():
        labels = ["bad", "good"] if ext in ("u0-0", "u0-1") else ["ok", "ok"]
        for a, label in zip(pair, labels, strict=True):
            judge(a, label)
    newcomer = make_user()
    role_grant(campaign=campaign, user=newcomer, role="grader")
    state = allocation_state_ensure(campaign=campaign)
    wanted = UnitAllocation.objects.filter(campaign=campaign, needs_more=True)
    assert {r.unit.external_id for r in wanted} >= {"u0-0", "u0-1"}
    # Equal uncertainty and equal judgments: the lower unit id wins the tie.
    served = assignment_next(grader=newcomer, campaign=campaign)
    assert served.unit.external_id == "u0-0" and served.allocation_reason == NeedReason.UNCERTAIN
    assert state.pk == campaign.pk
