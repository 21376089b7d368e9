"""Adaptive allocation for ordering campaigns (docs/design.md §5.6): the queries whose graders'
orderings agree least (by AC, the mean Kendall τ between pairs of graders' orderings) get one more
grader, least agreeing first, until their AC reaches policy_params.ac_threshold (default 0.6) or
the query has the maximum overlap.

A campaign has far fewer queries than units, and each query a handful of orderings, so the
agreement is computed when asked for.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from itertools import combinations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Q

from grading.models import Assignment, Campaign, Ordering, Query
from grading.models.allocation import NeedReason
from grading.models.choices import AssignmentSource, AssignmentStatus
from grading.services.policy_params import policy_param

AC_THRESHOLD = 0.6


def kendall_tau(a: list, b: list) -> float:
    """Kendall's τ between two orderings of the same items: 1 − 2·discordant / (k(k−1)/2)."""
    position = {item: i for i, item in enumerate(b)}
    ranks = [position[item] for item in a if item in position]
    k = len(ranks)
    if k < 2:
        return 1.0
    discordant = sum(1 for i, j in combinations(range(k), 2) if ranks[i] > ranks[j])
    return 1 - 2 * discordant / (k * (k - 1) / 2)


def query_agreement(orderings: list[list]) -> float:
    """AC of a query: mean τ over pairs of its graders' orderings."""
    pairs = list(combinations(orderings, 2))
    return sum(kendall_tau(a, b) for a, b in pairs) / len(pairs)


def queries_wanting_more(campaign: Campaign, *, exclude_grader: AbstractBaseUser | None = None) -> list[int]:
    """Query ids whose orderings agree least, least first (ties: lower id); only queries with at
    least two orderings, no open assignment and fewer than max_overlap assignments."""
    threshold = float(policy_param(campaign=campaign, name="ac_threshold", default=AC_THRESHOLD))
    load = (
        Assignment.objects.filter(campaign=campaign, unit__isnull=True)
        .values("query_id")
        .annotate(n=Count("pk"), open=Count("pk", filter=Q(status=AssignmentStatus.OPEN)))
    )
    eligible = {row["query_id"] for row in load if row["n"] < campaign.max_overlap and not row["open"]}
    if exclude_grader is not None:
        eligible -= set(
            Assignment.objects.filter(campaign=campaign, grader=exclude_grader, unit__isnull=True).values_list(
                "query_id", flat=True
            )
        )
    orderings: dict[int, list[list]] = defaultdict(list)
    for query_id, items in Ordering.objects.filter(campaign=campaign, query_id__in=eligible).values_list(
        "query_id", "items"
    ):
        orderings[query_id].append(items)
    scored = [(query_agreement(o), q) for q, o in orderings.items() if len(o) >= 2]
    return [q for ac, q in sorted(scored) if ac < threshold]


def ordering_extra(
    grader: AbstractBaseUser, campaign: Campaign, position: int, lease_expires_at: datetime | None = None
) -> Assignment | None:
    """A new assignment to order the least agreeing query the grader has not had, or None."""
    for query_id in queries_wanting_more(campaign, exclude_grader=grader):
        query = Query.objects.select_for_update(skip_locked=True, of=("self",)).filter(pk=query_id).first()
        if query is None:
            continue  # another grader is taking it right now
        taken = Assignment.objects.filter(query=query, unit__isnull=True)
        if taken.count() >= campaign.max_overlap or taken.filter(status=AssignmentStatus.OPEN).exists():
            continue
        return Assignment.objects.create(
            campaign=campaign,
            grader=grader,
            query=query,
            source=AssignmentSource.ADAPTIVE,
            position=position,
            lease_expires_at=lease_expires_at,
            allocation_reason=NeedReason.ORDERINGS_DISAGREE,
        )
    return None
