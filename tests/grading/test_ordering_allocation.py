"""Ordering campaigns: the query whose orderings agree least (by AC) gets one more grader."""

import pytest

from grading.models import Assignment
from grading.models.allocation import NeedReason
from grading.models.choices import AssignmentSource, Policy, Scheme
from grading.services.allocation import NOTHING_NEEDED, assignment_next_explained
from grading.services.campaigns import role_grant
from grading.services.ordering_allocation import kendall_tau, query_agreement
from tests.factories import make_campaign, make_user, record
from tests.grading.api_helpers import fast_passwords, graders_of  # noqa: F401

pytestmark = pytest.mark.django_db


def test_kendall_tau_worked_example():
    assert kendall_tau(list("ABCD"), list("ACDB")) == pytest.approx(1 / 3)
    assert query_agreement([list("ABC"), list("ABC"), list("CBA")]) == pytest.approx((1 - 1 - 1) / 3)


def test_the_least_agreeing_query_gets_an_extra_grader_once():
    campaign = make_campaign(scheme=Scheme.ORDERING, n_queries=2, n_candidates=4, graders=2, overlap=2)
    campaign.policy, campaign.max_overlap = Policy.CONSENSUS, 3
    campaign.save()
    q0, q1 = campaign.queries.order_by("position")
    for i, grader in enumerate(graders_of(campaign)):
        for query in (q0, q1):
            items = list(query.units.order_by("position").values_list("candidate__public_id", flat=True))
            if query == q1 and i == 1:
                items.reverse()
            record(grader, campaign, "ordering_submitted", {"items": items}, query=query)
    newcomer, latecomer = make_user(), make_user()
    for user in (newcomer, latecomer):
        role_grant(campaign=campaign, user=user, role="grader")
    served = assignment_next_explained(grader=newcomer, campaign=campaign).assignment
    assert (served.query, served.source, served.allocation_reason) == (
        q1,
        AssignmentSource.ADAPTIVE,
        NeedReason.ORDERINGS_DISAGREE,
    )
    assert assignment_next_explained(grader=latecomer, campaign=campaign).reason == NOTHING_NEEDED  # q1 is busy
    assert Assignment.objects.filter(query=q1).count() == 3
