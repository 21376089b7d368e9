"""A run hands its grader model to allocation after its result is stored, and does no allocation
work itself: allocation state is built where work is taken (docs/design.md §5.6)."""

from __future__ import annotations

import pytest

from analysis.models import AnalysisRun, RunStatus
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models import CampaignAllocation, QueryAllocation, UnitAllocation
from grading.models.choices import Policy
from grading.services.allocation import assignment_next
from grading.services.allocation_state import settings_key
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def _run(campaign) -> AnalysisRun:
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean({"n_boot": 20}), seed=1)
    run_execute(run_id=run.pk)
    run.refresh_from_db()
    return run


def _forget_allocation_state(campaign) -> None:
    """A campaign whose allocation state was never built (made before it existed)."""
    UnitAllocation.objects.filter(campaign=campaign).delete()
    QueryAllocation.objects.filter(campaign=campaign).delete()
    CampaignAllocation.objects.filter(campaign=campaign).delete()


def test_a_run_builds_no_allocation_state_and_hands_over_its_model(judged_campaign):
    _forget_allocation_state(judged_campaign)
    run = _run(judged_campaign)
    assert run.status == RunStatus.SUCCEEDED
    assert UnitAllocation.objects.filter(campaign=judged_campaign).count() == 0
    state = CampaignAllocation.objects.get(campaign=judged_campaign)
    graders = run.result["model"]["dawid_skene"]["graders"]
    assert len(graders) == 3
    assert state.model["theta"] == {str(g["grader"]): g["confusion"] for g in graders}
    assert state.settings_key == ""  # built where work is next taken


def test_under_the_uncertainty_policy_the_next_request_rebuilds_the_state_with_the_new_model(judged_campaign):
    judged_campaign.policy = Policy.UNCERTAINTY
    judged_campaign.max_overlap = 5
    judged_campaign.save()
    before = set(UnitAllocation.objects.filter(campaign=judged_campaign).values_list("unit_id", "priority"))
    assert len(before) == 15
    _run(judged_campaign)
    assert CampaignAllocation.objects.get(campaign=judged_campaign).settings_key == ""
    assert set(UnitAllocation.objects.filter(campaign=judged_campaign).values_list("unit_id", "priority")) == before
    assignment_next(grader=make_user(), campaign=judged_campaign)
    state = CampaignAllocation.objects.get(campaign=judged_campaign)
    assert state.settings_key == settings_key(judged_campaign)
    after = set(UnitAllocation.objects.filter(campaign=judged_campaign).values_list("unit_id", "priority"))
    assert len(after) == 15 and after != before  # the expected entropy drops now come from the fitted model


def test_a_failed_hand_over_leaves_the_run_succeeded(judged_campaign, monkeypatch, caplog):
    def broken(**kwargs):
        raise RuntimeError("allocation is unreachable")

    monkeypatch.setattr("analysis.services.model_handover.allocation_model_set", broken)
    run = _run(judged_campaign)
    assert run.status == RunStatus.SUCCEEDED and run.result["model"]["dawid_skene"]
    assert "could not be handed to allocation" in caplog.text
