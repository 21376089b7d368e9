"""What recording a batch of events needs from the database, fetched in two statements.

`EventContext` loads, for one grader and a batch of events, the grader's locked assignments with
their campaigns and units and the units' locked allocation-state rows (event_queries.assignments_locked),
then the grader's judgments of those units and what the units' state is counted from
(event_queries.judgments_read). Events about a query, and units without a state row, take the ORM
query this replaced. Lookups that miss (an unknown unit, a campaign the grader is not in) fall back
to single queries that raise the precise error, so the common path is fast and the error path says
exactly what was wrong.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Exists, OuterRef, Q

from grading.errors import CampaignClosed, InvalidValue, NotAssigned, NotFound
from grading.models import Assignment, Campaign, CampaignRole, Judgment, Query, Unit
from grading.models.allocation import UnitAllocation
from grading.models.choices import EventType, Role
from grading.services import event_queries
from grading.services.event_input import EventInput
from grading.services.payloads import VALUE_FIELD

UNIT_EVENTS = {
    EventType.UNIT_VIEWED,
    EventType.BROAD_SET,
    EventType.FINE_SET,
    EventType.SCORE_SET,
    EventType.LABEL_SET,
    EventType.PAIRWISE_SET,
    EventType.SKIP,
    EventType.HINT_SHOWN,
}
QUERY_EVENTS = {EventType.ORDERING_CHANGED, EventType.ORDERING_SUBMITTED}
# Auditions and comments may be about a unit or about a query's own media.
UNIT_OR_QUERY_EVENTS = {EventType.AUDITION, EventType.COMMENT}


class EventContext:
    def __init__(self, grader: AbstractBaseUser, items: Iterable[EventInput]) -> None:
        self.grader = grader
        self.campaigns: dict[int, Campaign | None] = {}
        self.units: dict[int, Unit] = {}
        self.by_unit: dict[int, Assignment] = {}
        self.by_query: dict[int, Assignment] = {}
        self.judgments: dict[int, Judgment] = {}
        self.queries: dict[int, Query | None] = {}
        # The units' allocation-state rows, locked with the assignments (units that have one), and
        # what their state is counted from, read after the locks (docs/design.md §5.6).
        self.states: dict[int, UnitAllocation] = {}
        self.counted = event_queries.UnitsRead()
        self._prefetch(list(items))

    def _prefetch(self, items: list[EventInput]) -> None:
        unit_ids = sorted({i.unit_id for i in items if isinstance(i.unit_id, int)})
        query_ids = {i.query_id for i in items if isinstance(i.query_id, int)}
        campaign_ids = sorted({i.campaign_id for i in items if isinstance(i.campaign_id, int)})
        for found in event_queries.assignments_locked(
            grader_id=self.grader.pk, campaign_ids=campaign_ids, unit_ids=unit_ids
        ):
            self._add(found.assignment, found.campaign if found.graded else None)
            self.states[found.assignment.unit_id] = found.state
        missing = [u for u in unit_ids if u not in self.by_unit]
        if missing or query_ids:
            self._prefetch_slow(campaign_ids, missing, query_ids)
        if unit_ids:
            self.counted = event_queries.judgments_read(
                grader_id=self.grader.pk, unit_ids=unit_ids, counted=sorted(self.states)
            )
            self.judgments = self.counted.own

    def _prefetch_slow(self, campaign_ids: list[int], unit_ids: list[int], query_ids: set[int]) -> None:
        """Assignments of units without a state row, and of queries (ordering campaigns, a query's own
        clip), locked in id order."""
        graded = CampaignRole.objects.filter(campaign=OuterRef("campaign"), user=self.grader, role=Role.GRADER)
        assignments = (
            Assignment.objects.select_for_update(of=("self",))
            .filter(grader=self.grader, campaign_id__in=campaign_ids)
            .filter(Q(unit_id__in=unit_ids) | Q(query_id__in=query_ids))
            .select_related("campaign", "unit")
            .annotate(graded=Exists(graded))
            .order_by("pk")
        )
        for a in assignments:
            if a.unit_id not in self.states:  # not one the fast read has already
                self._add(a, a.campaign if a.graded else None)

    def _add(self, a: Assignment, campaign: Campaign | None) -> None:
        self.campaigns.setdefault(a.campaign_id, campaign)
        if a.unit_id is not None:
            self.by_unit[a.unit_id] = a  # in id order: a hidden repeat overrides the unit's first assignment
            self.units[a.unit_id] = a.unit
            if a.query_id is not None:  # lets query-level events (the query's clip) find it
                self.by_query.setdefault(a.query_id, a)
        else:
            self.by_query[a.query_id] = a

    def tallies(self, unit_ids: Iterable[int]) -> dict[int, tuple[list[tuple[int, Any]], list[str]]]:
        """Per unit (of those with a locked state row): its judgments' values by grader, in grader
        order, and its non-repeat assignments' statuses, with this batch's changes applied (what
        allocation_state counts a unit's state from)."""
        out = {}
        me = self.grader.pk
        for unit_id in unit_ids:
            state = self.states[unit_id]
            name = VALUE_FIELD.get(state.campaign.scheme)
            values = {g: v[name] for g, v in self.counted.others[unit_id].items()} if name else {}
            own = self.judgments.get(unit_id)
            if name and own is not None:
                values[me] = getattr(own, name)
            statuses = dict(self.counted.statuses[unit_id])
            mine = self.by_unit[unit_id]
            if not mine.repeat:  # a hidden repeat is no extra grader of the unit (§5.6)
                statuses[me] = mine.status
            judged = [(g, values[g]) for g in sorted(values) if values[g] is not None]
            out[unit_id] = (judged, list(statuses.values()))
        return out

    def campaign(self, campaign_id: int) -> Campaign:
        if campaign_id not in self.campaigns:
            self.campaigns[campaign_id] = Campaign.objects.filter(
                pk=campaign_id, roles__user=self.grader, roles__role=Role.GRADER
            ).first()
        campaign = self.campaigns[campaign_id]
        if campaign is None:
            raise NotFound(
                f"campaign {campaign_id} does not exist or you do not grade in it.", field="campaign", value=campaign_id
            )
        if not campaign.is_open:
            raise CampaignClosed(
                f"campaign {campaign_id} is {campaign.status}: it takes no judgments.",
                field="campaign",
                value=campaign_id,
            )
        return campaign

    def target(self, campaign: Campaign, data: EventInput) -> tuple[Unit | None, Query | None]:
        """The event's unit, or (events about a query as a whole) its query."""
        unit = query = None
        if data.unit_id is not None:
            unit = self.units.get(data.unit_id)
            if unit is None or unit.campaign_id != campaign.pk:
                unit = Unit.objects.filter(pk=data.unit_id, campaign=campaign).first()
            if unit is None:
                raise NotFound(
                    f"unit {data.unit_id} does not exist in campaign {campaign.pk}.", field="unit", value=data.unit_id
                )
        elif data.query_id is not None:
            query = self.queries.get(data.query_id)
            if query is None or query.campaign_id != campaign.pk:
                query = Query.objects.filter(pk=data.query_id, campaign=campaign).first()
                self.queries[data.query_id] = query
            if query is None:
                raise NotFound(
                    f"query {data.query_id} does not exist in campaign {campaign.pk}.",
                    field="query",
                    value=data.query_id,
                )
        kind = data.type
        if kind in UNIT_EVENTS and unit is None:
            raise InvalidValue(f"a {kind} event needs a unit.", field="unit", value=None)
        if kind in QUERY_EVENTS and query is None:
            raise InvalidValue(f"a {kind} event needs a query.", field="query", value=None)
        if kind in UNIT_OR_QUERY_EVENTS and unit is None and query is None:
            raise InvalidValue(f"a {kind} event needs a unit or a query.", field="unit", value=None)
        return unit, query

    def assignment(self, campaign: Campaign, unit: Unit | None, query: Query | None) -> Assignment | None:
        """The grader's assignment for the target (locked), or NotAssigned."""
        if unit is None and query is None:
            return None  # campaign-wide events (guidelines viewed)
        if unit is not None:
            found = self.by_unit.get(unit.pk)
            if found is None or found.campaign_id != campaign.pk:
                raise NotAssigned(f"unit {unit.pk} is not assigned to you.", field="unit", value=unit.pk)
            return found
        found = self.by_query.get(query.pk)
        if found is None:
            # A query-level event (e.g. an audition of the query's clip) in a unit-based campaign.
            found = (
                Assignment.objects.select_for_update(of=("self",))
                .filter(Q(query=query) | Q(unit__query=query), campaign=campaign, grader=self.grader)
                .order_by("pk")
                .first()
            )
            if found is not None:
                self.by_query[query.pk] = found
        if found is None or found.campaign_id != campaign.pk:
            raise NotAssigned(f"query {query.pk} is not assigned to you.", field="query", value=query.pk)
        return found
