"""The instrument card: links set on the report page, reproducibility against a sibling campaign and
resolution from a pairwise campaign, checked against the metrics on frames built by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import metrics as m
from analysis.models import AnalysisRun, RunStatus
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.errors import InvalidValue
from grading.models import Assignment, CampaignRole, Judgment, Unit
from grading.models.choices import Role, Scheme
from grading.services.exclusion import grader_exclude
from grading.services.instrument_links import campaign_set_instrument_links
from tests.analysis.conftest import judge_broad_fine
from tests.factories import make_campaign, record

pytestmark = pytest.mark.django_db


def _fine(campaign) -> pd.DataFrame:
    rows = Judgment.objects.filter(campaign=campaign, fine__isnull=False).values_list(
        "unit__external_id", "grader_id", "fine"
    )
    return pd.DataFrame([(u, g, float(f)) for u, g, f in rows], columns=["unit", "grader", "value"])


def _run(campaign) -> dict:
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean({"n_boot": 20}), seed=3)
    assert run_execute(run_id=run.pk) == RunStatus.SUCCEEDED
    run.refresh_from_db()
    return run.result


@pytest.fixture
def ratings(organizer):
    first = make_campaign(n_queries=0, n_candidates=8, graders=3, organizer=organizer)
    judge_broad_fine(first, seed=4)
    return first


def test_reproducibility_against_a_sibling_matches_the_metric_on_the_same_units(ratings, organizer):
    sibling = make_campaign(n_queries=0, n_candidates=8, graders=3, organizer=organizer)
    judge_broad_fine(sibling, seed=9)
    campaign_set_instrument_links(campaign=ratings, sibling=sibling, pairwise=None, actor=None)
    repro = _run(ratings)["instrument"]["reproducibility"]
    expected = m.reproducibility(_fine(ratings), _fine(sibling))
    assert repro["n_units"] == 8
    assert repro["spearman_means"] == pytest.approx(expected["spearman_means"])
    assert repro["alpha_second"] == pytest.approx(expected["alpha_second"])
    assert [r["unit"] for r in repro["moved_mean"]] == list(expected["moved_mean"].index)


def test_a_grader_excluded_in_the_sibling_is_left_out_of_reproducibility(ratings, organizer):
    sibling = make_campaign(n_queries=0, n_candidates=8, graders=3, organizer=organizer)
    judge_broad_fine(sibling, seed=9)
    campaign_set_instrument_links(campaign=ratings, sibling=sibling, pairwise=None, actor=None)
    role = CampaignRole.objects.filter(campaign=sibling, role=Role.GRADER).first()
    grader_exclude(campaign=sibling, role=role, reason="careless", actor=organizer)
    repro = _run(ratings)["instrument"]["reproducibility"]
    counted = _fine(sibling)
    expected = m.reproducibility(_fine(ratings), counted[counted["grader"] != role.user_id])
    assert repro["alpha_second"] == pytest.approx(expected["alpha_second"])
    assert repro["alpha_second"] != pytest.approx(m.reproducibility(_fine(ratings), counted)["alpha_second"])


def test_resolution_from_a_pairwise_campaign_over_the_same_items(ratings, organizer):
    pairwise = make_campaign(scheme=Scheme.PAIRWISE, n_queries=0, n_candidates=8, graders=2, organizer=organizer)
    units = list(Unit.objects.filter(campaign=pairwise).select_related("candidate").order_by("position"))
    for i, unit in enumerate(units):
        unit.candidate_b = units[(i + 3) % len(units)].candidate
        unit.save(update_fields=["candidate_b"])
    means = _fine(ratings).groupby("unit")["value"].mean()
    rows = []
    for a in Assignment.objects.filter(campaign=pairwise).select_related(
        "grader", "unit__candidate", "unit__candidate_b"
    ):
        left, right = (f"u{c.external_id[1:]}" for c in (a.unit.candidate, a.unit.candidate_b))
        verdict = "A" if means[left] > means[right] else "B"
        if abs(means[left] - means[right]) < 1.5:  # close pairs: the pairwise graders see it the other way
            verdict = "B" if verdict == "A" else "A"
        record(a.grader, pairwise, "pairwise_set", {"value": verdict}, unit=a.unit)
        rows.append((a.unit.candidate.external_id, a.unit.candidate_b.external_id, a.grader_id, verdict))
    campaign_set_instrument_links(campaign=ratings, sibling=None, pairwise=pairwise, actor=None)
    result = _run(ratings)["instrument"]["resolution"]
    by_candidate = _fine(ratings).assign(unit=lambda f: "c" + f["unit"].str[1:])
    expected = m.resolution(by_candidate, pd.DataFrame(rows, columns=["unit_a", "unit_b", "grader", "verdict"]))
    assert result["n_pairs"] == expected["n_pairs"] == 8
    assert result["resolution"] == pytest.approx(expected["resolution"], nan_ok=True)
    curve = [float("nan") if p["agreement"] is None else p["agreement"] for p in result["curve"]]
    assert curve == pytest.approx(list(expected["curve"]["agreement"]), nan_ok=True)
    assert 0 < expected["resolution"] <= 10


def test_links_that_do_not_fit_are_refused(ratings, organizer):
    numeric = make_campaign(scheme=Scheme.NUMERIC, n_queries=0, n_candidates=2, graders=1, assign=False)
    with pytest.raises(InvalidValue, match="own sibling"):
        campaign_set_instrument_links(campaign=ratings, sibling=ratings, pairwise=None, actor=None)
    with pytest.raises(InvalidValue, match="must be a BROAD/FINE campaign too|must be a .* campaign too"):
        campaign_set_instrument_links(campaign=ratings, sibling=numeric, pairwise=None, actor=None)
    with pytest.raises(InvalidValue, match="must be a pairwise campaign"):
        campaign_set_instrument_links(campaign=ratings, sibling=None, pairwise=numeric, actor=None)


def test_the_organizer_links_on_the_report_page_and_errors_appear_next_to_the_form(
    client, ratings, organizer, django_capture_on_commit_callbacks
):
    client.force_login(organizer)
    numeric = make_campaign(
        scheme=Scheme.NUMERIC, n_queries=0, n_candidates=2, graders=1, organizer=organizer, assign=False
    )
    url = f"/reports/campaigns/{ratings.pk}/instrument-links/"
    bad = client.post(url, {"sibling_campaign": numeric.pk, "pairwise_campaign": ""})
    assert bad.status_code == 400
    assert 'id="sibling_campaign-error"' in bad.content.decode()
    ratings.refresh_from_db()
    assert ratings.sibling_campaign_id is None
    pairwise = make_campaign(
        scheme=Scheme.PAIRWISE, n_queries=0, n_candidates=2, graders=1, organizer=organizer, assign=False
    )
    with django_capture_on_commit_callbacks(execute=True):  # embedded: the queued run executes at commit
        ok = client.post(url, {"sibling_campaign": "", "pairwise_campaign": pairwise.pk})
    assert ok.status_code == 302
    ratings.refresh_from_db()
    assert ratings.pairwise_campaign_id == pairwise.pk
    html = client.get(f"/reports/campaigns/{ratings.pk}/").content.decode()
    assert 'id="section-instrument"' in html and "Repeatability: α (FINE)" in html
