"""The `query_deviation` policy's per-query counts (docs/design.md §5.6).

A query deviates when the share of its units (with two judgments or more) whose judgments disagree
differs from the campaign's share, or from policy_params.expected_rate, by more than
policy_params.tolerance (default 0.2). The counts live in one QueryAllocation row per query, kept
current in the transaction that changes a unit's state, so the deviating queries are read from one
row per query, whatever the number of units.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import F

from grading.models import Campaign
from grading.models.allocation import QueryAllocation, UnitAllocation
from grading.models.choices import Policy
from grading.services.policy_params import policy_param

Key = tuple[int, int]  # (campaign id, query key)


def counted(row: UnitAllocation) -> tuple[int, int]:
    """What a unit adds to its query's counts: (rated, disagreeing)."""
    rated = row.n_judgments >= 2
    return int(rated), int(rated and row.disagree)


def query_key(query_id: int | None) -> int:
    return QueryAllocation.NO_QUERY if query_id is None else query_id


def query_of(key: int) -> int | None:
    """The query id a `query_key` stands for (None: the units without a query)."""
    return None if key == QueryAllocation.NO_QUERY else key


def query_counts_rebuild(*, campaign: Campaign, rows: Iterable[UnitAllocation]) -> None:
    """Count every unit of a campaign afresh (under `query_deviation`; other policies keep none)."""
    QueryAllocation.objects.filter(campaign=campaign).delete()
    if campaign.policy != Policy.QUERY_DEVIATION:
        return
    counts: dict[int, QueryAllocation] = {}  # every query gets its row, rated or not
    for row in rows:
        key = query_key(row.query_id)
        total = counts.setdefault(key, QueryAllocation(campaign=campaign, query_key=key))
        rated, disagree = counted(row)
        total.n_rated, total.n_disagree = total.n_rated + rated, total.n_disagree + disagree
    QueryAllocation.objects.bulk_create(counts.values())


def query_counts_apply(*, before: dict[int, tuple[int, int]], rows: Iterable[UnitAllocation]) -> None:
    """Add to the query counts what changed in these units' state; `before` holds `counted` of each
    unit (by unit id) before the change. Only campaigns under `query_deviation` keep counts."""
    change: dict[Key, list[int]] = {}
    for row in rows:
        if row.campaign.policy != Policy.QUERY_DEVIATION:
            continue
        (r0, d0), (r1, d1) = before[row.unit_id], counted(row)
        if (r0, d0) != (r1, d1):
            delta = change.setdefault((row.campaign_id, query_key(row.query_id)), [0, 0])
            delta[0], delta[1] = delta[0] + r1 - r0, delta[1] + d1 - d0
    for (campaign_id, key), (d_rated, d_disagree) in sorted(change.items()):  # a fixed order: no deadlocks
        counts = QueryAllocation.objects.filter(campaign_id=campaign_id, query_key=key)
        if not counts.update(n_rated=F("n_rated") + d_rated, n_disagree=F("n_disagree") + d_disagree):
            # A query the last rebuild did not see (its first units since): count it whole.
            units = UnitAllocation.objects.filter(campaign_id=campaign_id, query_id=query_of(key))
            totals = [counted(u) for u in units]
            QueryAllocation.objects.get_or_create(
                campaign_id=campaign_id,
                query_key=key,
                defaults={"n_rated": sum(r for r, _ in totals), "n_disagree": sum(d for _, d in totals)},
            )


def deviating_queries(campaign: Campaign) -> list[int | None]:
    """The queries (None for units without one) whose disagreement rate deviates from the expected
    rate by more than the tolerance. Reads one row per query."""
    tolerance = float(policy_param(campaign=campaign, name="tolerance", default=0.2))
    counts = [
        (key, n, bad)
        for key, n, bad in QueryAllocation.objects.filter(campaign=campaign).values_list(
            "query_key", "n_rated", "n_disagree"
        )
        if n
    ]
    total = sum(n for _, n, _ in counts)
    if not total:
        return []
    campaign_rate = sum(bad for _, _, bad in counts) / total
    expected = float(policy_param(campaign=campaign, name="expected_rate", default=campaign_rate))
    return [query_of(key) for key, n, bad in counts if abs(bad / n - expected) > tolerance]
