"""Small builders for test data, going through the same services the app uses."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from django.contrib.auth import get_user_model

from grading.models import Campaign, Candidate, CandidateProvenance, Query, System, Unit
from grading.models.choices import CampaignStatus, Role, Scheme
from grading.services.campaigns import assignments_create_initial, campaign_create, role_grant
from grading.services.events import EventInput, EventOutcome, event_record

_counter = itertools.count(1)


def make_user(username: str | None = None, *, password: str = "pw-for-tests-123", **extra: Any):
    username = username or f"user{next(_counter)}"
    return get_user_model().objects.create_user(username=username, password=password, **extra)


def make_campaign(
    *,
    scheme: str = Scheme.BROAD_FINE,
    n_queries: int = 2,
    n_candidates: int = 3,
    graders: int | list = 2,
    overlap: int | None = None,
    status: str = CampaignStatus.OPEN,
    scheme_params: dict[str, Any] | None = None,
    organizer=None,
    assign: bool = True,
) -> Campaign:
    """A campaign with queries × candidates units (no queries when n_queries=0), graders and assignments."""
    n = next(_counter)
    if scheme == Scheme.CATEGORICAL and scheme_params is None:
        scheme_params = {"labels": ["bad", "ok", "good"], "ordered": True}
    grader_users = [make_user() for _ in range(graders)] if isinstance(graders, int) else graders
    campaign = campaign_create(
        name=f"Campaign {n}",
        slug=f"campaign-{n}",
        scheme=scheme,
        scheme_params=scheme_params,
        guidelines="Judge how similar each candidate is to the query.",
        status=status,
        initial_overlap=overlap or len(grader_users),
        max_overlap=max(5, overlap or len(grader_users)),
    )
    system = System.objects.create(campaign=campaign, name="system-a")
    queries = [
        Query.objects.create(campaign=campaign, external_id=f"q{i}", text=f"query {i}", position=i)
        for i in range(n_queries)
    ] or [None]
    for qi, query in enumerate(queries):
        for ci in range(n_candidates):
            cand = Candidate.objects.create(campaign=campaign, external_id=f"c{qi}-{ci}", text=f"candidate {qi}-{ci}")
            CandidateProvenance.objects.create(candidate=cand, system=system, query=query, rank=ci + 1)
            Unit.objects.create(campaign=campaign, external_id=f"u{qi}-{ci}", query=query, candidate=cand, position=ci)
    for user in grader_users:
        role_grant(campaign=campaign, user=user, role=Role.GRADER)
    if organizer is not None:
        role_grant(campaign=campaign, user=organizer, role=Role.ORGANIZER)
    if assign:
        # A fixed seed: the counter's ``n`` depends on the tests that ran before in the process, and
        # with it which graders got which units (a test passed alone and failed after others).
        assignments_create_initial(campaign=campaign, seed=0)
    return campaign


def record(
    grader,
    campaign: Campaign,
    kind: str,
    payload: dict[str, Any] | None = None,
    *,
    unit=None,
    query=None,
    event_id=None,
    seq: int = 0,
    session_id: str = "s1",
    client_ts: datetime | None = None,
) -> EventOutcome:
    return event_record(
        grader=grader,
        data=EventInput(
            id=event_id or uuid4(),
            campaign_id=campaign.pk,
            type=kind,
            payload=payload or {},
            unit_id=getattr(unit, "pk", unit),
            query_id=getattr(query, "pk", query),
            seq=seq,
            session_id=session_id,
            client_ts=client_ts or datetime.now(UTC),
        ),
    )


def settings_form_data(campaign: Campaign, **changes: Any) -> dict[str, Any]:
    """What the campaign's settings form posts when nothing but `changes` is edited."""
    data = {
        "name": campaign.name,
        "description": "",
        "scheme_params": "",
        "guidelines": "Judge how similar each candidate is to the query.",
        "initial_overlap": campaign.initial_overlap,
        "max_overlap": campaign.max_overlap,
        "budget": "",
        "policy": campaign.policy,
    }
    return {**data, **changes}
