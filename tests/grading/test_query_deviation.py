"""The `query_deviation` policy in the app: extra graders go only to deviating queries, and the
per-query counts kept with each judgment equal a recount from scratch."""

import random

import pytest
from django.db.models import Count, Q

from grading.models import Assignment, QueryAllocation, UnitAllocation
from grading.models.choices import Policy, Scheme
from grading.services.allocation import assignment_next
from grading.services.allocation_state import allocation_state_build, allocation_state_ensure
from grading.services.campaigns import role_grant
from grading.services.query_deviation import deviating_queries
from tests.factories import make_campaign, make_user, record
from tests.grading.api_helpers import fast_passwords, graders_of  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.both_backends]


def deviation_campaign(n_queries=3, **params):
    campaign = make_campaign(scheme=Scheme.CATEGORICAL, n_queries=n_queries, n_candidates=4, graders=4, overlap=2)
    campaign.policy, campaign.max_overlap, campaign.policy_params = Policy.QUERY_DEVIATION, 4, params
    campaign.save()
    allocation_state_ensure(campaign=campaign)
    return campaign


def judge_all(campaign, label_of):
    for a in Assignment.objects.filter(campaign=campaign).select_related("grader", "unit__query").order_by("pk"):
        record(a.grader, campaign, "label_set", {"value": label_of(a)}, unit=a.unit)


def counts(campaign):
    return {
        (q.query_key, q.n_rated, q.n_disagree) for q in QueryAllocation.objects.filter(campaign=campaign).order_by("pk")
    }


def recounted_deviating(campaign, tolerance=0.2):
    """What the policy decided before the counts were kept: an aggregate over every unit's state."""
    per_query = list(
        UnitAllocation.objects.filter(campaign=campaign, n_judgments__gte=2)
        .values("query_id")
        .annotate(n=Count("pk"), bad=Count("pk", filter=Q(disagree=True)))
    )
    total = sum(q["n"] for q in per_query)
    expected = sum(q["bad"] for q in per_query) / total if total else 0
    return sorted(
        (q["query_id"] for q in per_query if abs(q["bad"] / q["n"] - expected) > tolerance), key=lambda q: q or 0
    )


def test_only_the_deviating_query_gets_an_extra_grader():
    campaign = deviation_campaign(tolerance=0.5)
    q0 = campaign.queries.order_by("pk").first()
    # Every unit of q0 split, the rest agree: q0 disagrees at 1.0, the others at 0.0, the campaign at
    # 0.33; only q0 is more than 0.5 away.
    judge_all(campaign, lambda a: ["bad", "good"][a.pk % 2] if a.unit.query_id == q0.pk else "ok")
    assert deviating_queries(campaign) == [q0.pk] == recounted_deviating(campaign, tolerance=0.5)
    newcomer = make_user()
    role_grant(campaign=campaign, user=newcomer, role="grader")
    served = []
    while (a := assignment_next(grader=newcomer, campaign=campaign)) is not None and len(served) < 10:
        served.append(a.unit)
        record(newcomer, campaign, "label_set", {"value": "ok"}, unit=a.unit)
    # Every unit of q0 once, and nothing of the queries that do not deviate.
    assert sorted(u.pk for u in served) == sorted(campaign.units.filter(query=q0).values_list("pk", flat=True))


def test_counts_kept_with_each_judgment_equal_a_recount():
    campaign = deviation_campaign(tolerance=0.1)
    for _ in range(3):
        role_grant(campaign=campaign, user=make_user(), role="grader")
    rng = random.Random(5)
    for _ in range(70):
        grader = rng.choice(graders_of(campaign))
        served = assignment_next(grader=grader, campaign=campaign)
        if served is not None and rng.random() < 0.8:
            label = rng.choice(["bad", "ok", "good"])
            record(grader, campaign, "label_set", {"value": label}, unit=served.unit)
        assert deviating_queries(campaign) == recounted_deviating(campaign, tolerance=0.1)
    kept = counts(campaign)
    assert len(kept) == 3 and sum(n for _, n, _ in kept) > 0
    allocation_state_build(campaign=campaign)
    assert counts(campaign) == kept


def test_units_without_a_query_count_as_one_query():
    campaign = deviation_campaign(n_queries=0, expected_rate=0.0)
    judge_all(campaign, lambda a: ["bad", "good"][a.pk % 2] if a.unit.external_id.endswith(("0", "1")) else "ok")
    assert {(k, n) for k, n, _ in counts(campaign)} == {(QueryAllocation.NO_QUERY, 4)}
    assert deviating_queries(campaign) == [None]
    newcomer = make_user()
    role_grant(campaign=campaign, user=newcomer, role="grader")
    assert assignment_next(grader=newcomer, campaign=campaign) is not None


def test_other_policies_keep_no_query_counts():
    campaign = deviation_campaign()
    campaign.policy = Policy.CONSENSUS
    campaign.save()
    allocation_state_ensure(campaign=campaign)  # the policy changed: the state is rebuilt
    judge_all(campaign, lambda a: "ok")
    assert not QueryAllocation.objects.filter(campaign=campaign).exists()
