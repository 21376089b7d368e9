"""The organizer home's agreement line for an ordering campaign speaks of ordering agreement
(Kendall's W over its queries), not of "too few units with two or more judgments"."""

from __future__ import annotations

import pytest
from django.utils import timezone

from analysis.headlines import runs_headline
from analysis.models import AnalysisRun, RunStatus
from grading.models.choices import Scheme
from tests.factories import make_campaign, make_user

pytestmark = pytest.mark.django_db


def test_an_ordering_campaigns_card_gives_the_median_kendalls_w_of_its_queries(client):
    organizer = make_user("olga")
    campaign = make_campaign(scheme=Scheme.ORDERING, graders=2, organizer=organizer)
    queries = [{"query": i, "label": f"q{i}", "kendall_w": w} for i, w in enumerate([0.79, 0.97, 0.9], start=1)]
    AnalysisRun.objects.create(
        campaign=campaign,
        status=RunStatus.SUCCEEDED,
        number=1,
        finished_at=timezone.now(),
        parameters={},
        result={
            "agreement": {"levels": [], "alpha": {"value": None, "reason": "no FINE scores"}},
            "orderings": {"queries": queries},
        },
    )
    headline = runs_headline(campaign_ids=[campaign.pk])[campaign.pk]["agreement"]
    assert headline["ordering"] and headline["median"] == 0.9 and (headline["low"], headline["high"]) == (0.79, 0.97)
    client.force_login(organizer)
    html = " ".join(client.get("/").content.decode().split())
    assert (
        "Graders order the items <strong>very strongly</strong> alike: "
        "Kendall's W has a median of 0.90 over 3 queries (0.79 to 0.97)" in html
    )
    assert "Agreement is not defined" not in html
