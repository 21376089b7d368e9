"""The Django admin's page of an analysis run: it shows what the run did and changes none of it."""

from __future__ import annotations

import pytest

from analysis.models import AnalysisRun, RunStatus
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_the_admin_shows_a_runs_shards_and_offers_no_field_to_change_them(client, judged_campaign):
    run = AnalysisRun.objects.create(campaign=judged_campaign, status=RunStatus.RUNNING, shards_total=8, shards_done=3)
    client.force_login(make_user("boss", is_staff=True, is_superuser=True))
    html = client.get(f"/admin/analysis/analysisrun/{run.pk}/change/").content.decode()
    assert "Shards total" in html and "Shards done" in html
    assert 'name="shards_total"' not in html and 'name="shards_done"' not in html
    # what it took from the run before, shown and not to be changed either
    for field in ("shards_reused", "bootstrap_blocks", "bootstrap_blocks_reused", "slices_total", "slices_reused"):
        label = field.replace("_", " ").capitalize()
        assert label in html and f'name="{field}"' not in html, field
