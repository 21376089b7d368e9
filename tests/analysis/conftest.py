"""Campaigns with judgments for the analysis tests, recorded through the real event service."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from grading.models import Assignment, Campaign, Unit
from grading.models.choices import Scheme
from tests.factories import make_campaign, make_user, record

BROADS = ["NS", "SS", "VS"]


def unit_places(campaign: Campaign) -> dict[int, int]:
    """Per unit id, the unit's place among the campaign's units (0, 1, ...): what test data is made
    from, not the id, which depends on the tests that ran before in the same database (a test passed
    alone and failed after others)."""
    units = Unit.objects.filter(campaign=campaign).order_by("pk").values_list("pk", flat=True)
    return {pk: place for place, pk in enumerate(units)}


def truth_levels(campaign: Campaign) -> dict[int, int]:
    """Per unit id, the BROAD level (0 NS, 1 SS, 2 VS) judge_broad_fine's graders see in the unit,
    from the unit's place (``unit_places``)."""
    return {pk: ((place + 1) * 7) % 3 for pk, place in unit_places(campaign).items()}


def judge_broad_fine(campaign: Campaign, *, seed: int = 1, changes: bool = True) -> None:
    """Every assignment gets a BROAD and a FINE (graders agree with noise), some changes and plays."""
    rng = random.Random(seed)
    start = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(
        days=30
    )  # inside the client_ts window
    levels = truth_levels(campaign)
    # By grader, then unit: the order in which assignments were made (their ids) varies with the
    # ids of the graders, so that the noise fell on other judgments after other tests.
    assignments = Assignment.objects.filter(campaign=campaign).select_related("grader")
    for i, a in enumerate(assignments.order_by("grader_id", "unit_id", "pk")):
        truth = levels[a.unit_id]
        level = min(2, max(0, truth + rng.choice([0, 0, 0, 1, -1])))
        fine = round(min(10.0, max(0.0, 1.5 + 3.5 * level + rng.uniform(-1.5, 1.5))), 1)
        t = start + timedelta(minutes=i)
        record(a.grader, campaign, "unit_viewed", unit=a.unit, client_ts=t, seq=1)
        record(
            a.grader,
            campaign,
            "audition",
            {"action": "play", "position": 0},
            unit=a.unit,
            client_ts=t + timedelta(seconds=2),
            seq=2,
        )
        if changes and i % 4 == 0:
            record(
                a.grader,
                campaign,
                "broad_set",
                {"value": BROADS[(level + 1) % 3]},
                unit=a.unit,
                client_ts=t + timedelta(seconds=5),
                seq=3,
            )
        record(
            a.grader,
            campaign,
            "broad_set",
            {"value": BROADS[level]},
            unit=a.unit,
            client_ts=t + timedelta(seconds=9),
            seq=4,
        )
        record(a.grader, campaign, "fine_set", {"value": fine}, unit=a.unit, client_ts=t + timedelta(seconds=12), seq=5)


def judge_orderings(campaign: Campaign, *, seed: int = 1) -> None:
    rng = random.Random(seed)
    for a in Assignment.objects.filter(campaign=campaign).select_related("grader", "query").order_by("pk"):
        items = list(a.query.units.order_by("position").values_list("candidate__public_id", flat=True))
        for _ in range(rng.randint(0, 2)):
            i = rng.randrange(len(items) - 1)
            items[i], items[i + 1] = items[i + 1], items[i]
        record(a.grader, campaign, "ordering_submitted", {"items": items}, query=a.query)


@pytest.fixture
def organizer():
    return make_user("organizer")


@pytest.fixture
def judged_campaign(db, organizer) -> Campaign:
    campaign = make_campaign(n_queries=3, n_candidates=5, graders=3, organizer=organizer)
    judge_broad_fine(campaign)
    return campaign


@pytest.fixture
def ordering_campaign(db, organizer) -> Campaign:
    campaign = make_campaign(scheme=Scheme.ORDERING, n_queries=3, n_candidates=5, graders=4, organizer=organizer)
    judge_orderings(campaign)
    return campaign
