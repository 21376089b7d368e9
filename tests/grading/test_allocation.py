"""The "next" assignment: own work first, leases, adaptive extras, and no slot served twice."""

from datetime import timedelta

import pytest
from django.utils import timezone

from grading.models import Assignment
from grading.models.choices import AssignmentSource, Policy, Scheme
from grading.services.allocation import assignment_next, units_wanting_more
from tests.factories import make_campaign, make_user, record
from tests.grading.api_helpers import fast_passwords, graders_of, my_units  # noqa: F401

pytestmark = pytest.mark.django_db


def consensus_campaign(**extra):
    """One query, two candidates, three graders of whom two have each unit."""
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=3, overlap=2, **extra)
    campaign.policy = Policy.CONSENSUS
    campaign.max_overlap = 3
    campaign.save()
    return campaign


def judge_all(campaign, values):
    """Every assignment gets a BROAD value (values by unit external id) and a FINE."""
    seen: dict[int, int] = {}
    for a in Assignment.objects.filter(campaign=campaign).select_related("unit", "grader").order_by("unit", "pk"):
        nth = seen[a.unit_id] = seen.get(a.unit_id, -1) + 1
        broad = values[a.unit.external_id][nth % len(values[a.unit.external_id])]
        record(a.grader, campaign, "broad_set", {"value": broad}, unit=a.unit)
        record(a.grader, campaign, "fine_set", {"value": 5.0}, unit=a.unit)


def test_it_serves_my_open_assignments_in_my_order_first():
    campaign = make_campaign(n_queries=2, n_candidates=2, graders=1)
    grader = graders_of(campaign)[0]
    units = my_units(grader, campaign)
    assert assignment_next(grader=grader, campaign=campaign).unit == units[0]
    record(grader, campaign, "skip", {}, unit=units[0])
    served = assignment_next(grader=grader, campaign=campaign)
    assert served.unit == units[1] and served.lease_expires_at > timezone.now()


def test_fixed_policy_never_adds_work():
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=3, overlap=2)
    judge_all(campaign, {"u0-0": ["VS", "NS"], "u0-1": ["VS", "NS"]})
    assert len(graders_of(campaign)) == 3
    for grader in graders_of(campaign):
        assert assignment_next(grader=grader, campaign=campaign) is None


def test_consensus_gives_a_disagreeing_unit_to_a_grader_who_has_not_seen_it():
    campaign = consensus_campaign()
    judge_all(campaign, {"u0-0": ["VS", "NS"], "u0-1": ["SS"]})
    disputed = campaign.units.get(external_id="u0-0")
    assert units_wanting_more(campaign) == [disputed.pk]
    outsider = next(g for g in graders_of(campaign) if not Assignment.objects.filter(grader=g, unit=disputed).exists())
    insiders = [g for g in graders_of(campaign) if g != outsider]
    assert len(insiders) >= 1
    assert all(assignment_next(grader=g, campaign=campaign) is None for g in insiders)
    extra = assignment_next(grader=outsider, campaign=campaign)
    assert (extra.unit, extra.source) == (disputed, AssignmentSource.ADAPTIVE)
    assert units_wanting_more(campaign) == []  # busy now: nobody else gets the slot


def test_max_overlap_and_budget_cap_the_extras():
    campaign = consensus_campaign()
    campaign.budget = Assignment.objects.filter(campaign=campaign).count()
    campaign.save()
    judge_all(campaign, {"u0-0": ["VS", "NS"], "u0-1": ["VS", "NS"]})
    assert len(graders_of(campaign)) >= 2
    assert all(assignment_next(grader=g, campaign=campaign) is None for g in graders_of(campaign))


def test_an_expired_adaptive_lease_passes_the_slot_to_another_grader():
    campaign = consensus_campaign()
    judge_all(campaign, {"u0-0": ["VS", "NS"], "u0-1": ["SS"]})
    disputed = campaign.units.get(external_id="u0-0")
    outsider = next(g for g in graders_of(campaign) if not Assignment.objects.filter(grader=g, unit=disputed).exists())
    slot = assignment_next(grader=outsider, campaign=campaign)
    newcomer = make_user()
    from grading.services.campaigns import role_grant

    role_grant(campaign=campaign, user=newcomer, role="grader")
    assert assignment_next(grader=newcomer, campaign=campaign) is None  # lease still running
    Assignment.objects.filter(pk=slot.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    taken = assignment_next(grader=newcomer, campaign=campaign)
    assert taken.pk == slot.pk and taken.grader == newcomer


def test_confusability_serves_the_most_disagreeing_unit_first():
    campaign = make_campaign(scheme=Scheme.NUMERIC, n_queries=0, n_candidates=3, graders=3, overlap=2)
    campaign.policy = Policy.CONFUSABILITY
    campaign.max_overlap = 3
    campaign.save()
    scores = {"u0-0": (1, 9), "u0-1": (4, 6), "u0-2": (5, 5)}
    seen: dict[int, int] = {}
    for a in Assignment.objects.filter(campaign=campaign).select_related("unit", "grader").order_by("unit", "pk"):
        nth = seen[a.unit_id] = seen.get(a.unit_id, -1) + 1
        record(a.grader, campaign, "score_set", {"value": scores[a.unit.external_id][nth]}, unit=a.unit)
    wanted = units_wanting_more(campaign)
    ids = dict(campaign.units.values_list("external_id", "pk"))
    assert wanted[:2] == [ids["u0-0"], ids["u0-1"]] and ids["u0-2"] not in wanted
