"""Automatic exclusion (docs/design.md §5.6, "Excluded graders"): a grader whose gold accuracy or
whose reliability in the grader model is below the organizer's threshold, after enough judgments, is
excluded when an analysis run computes its report, audited as automatic; the run's figures are those
without them, exactly as if an organizer had excluded them by hand; exactly at the threshold, with
too few judgments, or once an organizer included them again, they are kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from analysis.models import AnalysisRun, RunStatus
from analysis.presentation.hidden_units import hidden_units_tables
from analysis.presentation.report_tables import _excluded_table, report_tables
from analysis.services import runs
from analysis.services.auto_exclusion import shown_below
from analysis.services.execute import run_execute
from analysis.services.report import report_compute
from grading.activity import activity_line, sentence
from grading.errors import InvalidValue
from grading.models import Assignment, AuditEntry, Campaign, CampaignRole
from grading.models.choices import Role, Scheme
from grading.services.exclusion import grader_exclude, grader_include
from grading.services.gold import gold_set
from grading.services.organizer import campaign_update
from grading.services.policy_params import policy_params_problems
from tests.factories import make_campaign, make_user, record, settings_form_data

pytestmark = [pytest.mark.django_db, pytest.mark.both_backends]
BROADS = ["NS", "SS", "VS"]
GOLD_UNITS = ["u0-0", "u0-1", "u0-2", "u0-3", "u1-0"]  # gold answer: the unit's true category
BAD_GOLD_RIGHT = 2  # the careless grader gets 2 of the 5 gold units right: accuracy 0.4


def _truth(unit) -> int:
    return (unit.query.position * 4 + unit.position) % 3


def _answer(g: int, unit, gold_seen: int) -> int:
    """Graders 0–2 answer the truth; grader 3 answers one category off, except on their first
    BAD_GOLD_RIGHT gold units."""
    truth = _truth(unit)
    if g < 3 or (unit.external_id in GOLD_UNITS and gold_seen < BAD_GOLD_RIGHT):
        return truth
    return (truth + 1) % 3


def _campaign(**params):
    """Four graders judge all 12 units, five of them gold; the fourth grader is careless."""
    organizer = make_user()
    graders = [make_user() for _ in range(4)]
    campaign = make_campaign(n_queries=3, n_candidates=4, graders=graders, organizer=organizer)
    for unit in campaign.units.select_related("query").filter(external_id__in=GOLD_UNITS):
        gold_set(organizer=organizer, campaign=campaign, unit_external_id=unit.external_id, value=BROADS[_truth(unit)])
    start = datetime.now(UTC) - timedelta(days=1)
    gold_seen = [0] * 4
    for a in Assignment.objects.filter(campaign=campaign).select_related("grader", "unit__query").order_by("pk"):
        g, unit = graders.index(a.grader), a.unit
        level = _answer(g, unit, gold_seen[g])
        gold_seen[g] += unit.external_id in GOLD_UNITS
        t = start + timedelta(minutes=(unit.query.position * 4 + unit.position) * 5 + g)
        record(a.grader, campaign, "unit_viewed", unit=unit, client_ts=t, seq=1)
        record(a.grader, campaign, "broad_set", {"value": BROADS[level]}, unit=unit, client_ts=t, seq=2)
        record(a.grader, campaign, "fine_set", {"value": 1.0 + 3.5 * level + g * 0.5}, unit=unit, client_ts=t, seq=3)
    if params:
        campaign_update(campaign=campaign, actor=organizer, policy_params=params)
    return campaign, organizer, graders


def _result(campaign):
    return report_compute(campaign_id=campaign.pk, parameters=runs.parameters_clean({"n_boot": 50}), seed=7)[0]


def _role(campaign, user) -> CampaignRole:
    return CampaignRole.objects.get(campaign=campaign, user=user, role=Role.GRADER)


def _ds_accuracy(result, role) -> float | None:
    found = [g["accuracy"] for g in result["model"]["dawid_skene"]["graders"] if g["grader"] == role.user_id]
    return found[0] if found else None


def test_a_grader_below_the_gold_threshold_is_excluded_automatically_with_the_figure_and_audited():
    campaign, _, graders = _campaign(exclude_gold_below=0.6, exclude_min_judgments=5)
    result = _result(campaign)
    role = _role(campaign, graders[3])
    assert role.excluded_at is not None and role.exclusion_automatic and role.excluded_by is None
    assert role.exclusion_reason == "automatic: gold accuracy 0.40 below 0.6 after 5 gold units (2 right)"
    assert [e["pseudonym"] for e in result["excluded_graders"]] == [role.pseudonym]
    assert result["excluded_graders"][0]["by"] == "automatic"
    table = _excluded_table(result)["excluded_graders"]
    assert table.rows[0]["by"].startswith("automatically") and "gold accuracy 0.40" in table.rows[0]["reason"]
    assert all(_role(campaign, g).excluded_at is None for g in graders[:3])
    entry = AuditEntry.objects.get(campaign=campaign, action="grader.excluded")
    assert entry.actor is None and entry.after["automatic"] is True and "gold accuracy 0.40" in entry.after["reason"]
    assert activity_line(entry).who == "Evalutron, automatically"
    # A second run finds nobody new: nothing more is recorded.
    _result(campaign)
    assert AuditEntry.objects.filter(campaign=campaign, action="grader.excluded").count() == 1


def test_exactly_at_the_gold_threshold_a_grader_is_kept():
    campaign, _, graders = _campaign(exclude_gold_below=0.4)
    result = _result(campaign)
    assert _role(campaign, graders[3]).excluded_at is None and result["excluded_graders"] == []
    assert not AuditEntry.objects.filter(action="grader.excluded").exists()


def test_too_few_gold_judgments_exclude_nobody():
    campaign, _, graders = _campaign(exclude_gold_below=0.9, exclude_min_judgments=6)
    _result(campaign)
    assert not CampaignRole.objects.filter(campaign=campaign, excluded_at__isnull=False).exists()


def test_the_figures_of_an_automatic_exclusion_are_those_of_the_same_grader_excluded_by_hand():
    campaign, organizer, graders = _campaign(exclude_gold_below=0.6)
    automatic = _result(campaign)
    role = _role(campaign, graders[3])
    grader_include(campaign=campaign, role=role, actor=None)  # a rule lifting a rule: no override
    assert _role(campaign, graders[3]).auto_exclusion_waived_at is None
    campaign_update(campaign=campaign, actor=organizer, policy_params={})
    included = _result(campaign)
    grader_exclude(campaign=campaign, role=role, reason="careless", actor=organizer)
    by_hand = _result(campaign)
    for section in ("agreement", "confusability", "stability", "graders", "model", "queries", "systems"):
        assert automatic[section] == by_hand[section], section
    assert automatic["agreement"] != included["agreement"]
    assert automatic["overview"] == by_hand["overview"] != included["overview"]
    assert by_hand["excluded_graders"][0]["by"] == organizer.username
    # Everything that claims to be without excluded graders is.
    assert automatic["overview"]["graders_excluded"] == 1 and included["overview"]["graders_excluded"] == 0
    assert automatic["overview"]["judgments_of_excluded_graders"] == 12
    assert automatic["overview"]["judgments"] + 12 == included["overview"]["judgments"]
    assert automatic["overview"]["active_graders"] == 3
    assert {g["grader"] for g in automatic["graders"]} == {g.pk for g in graders[:3]}
    gold = {g["grader"]: g for g in automatic["hidden_units"]["gold"]["graders"]}
    assert gold[role.user_id]["excluded"] and not gold[graders[0].pk]["excluded"]
    rows = hidden_units_tables(automatic, {})["gold"].rows
    assert sorted(r["excluded"] for r in rows) == ["", "", "", "excluded"]


def test_a_grader_below_the_model_reliability_threshold_is_excluded_and_the_model_is_fitted_without_them():
    campaign, _, graders = _campaign()
    role = _role(campaign, graders[3])
    accuracy = _ds_accuracy(_result(campaign), role)
    assert accuracy < 0.5
    campaign.policy_params = {"exclude_reliability_below": accuracy}  # exactly at it: kept
    campaign.save(update_fields=["policy_params"])
    assert _result(campaign)["excluded_graders"] == []
    campaign.policy_params = {"exclude_reliability_below": float(np.nextafter(accuracy, 1))}
    campaign.save(update_fields=["policy_params"])
    result = _result(campaign)
    role.refresh_from_db()
    assert role.exclusion_automatic and role.exclusion_reason.startswith("automatic: model reliability ")
    assert role.exclusion_reason.endswith("after 7 judgments")  # 12 units, 5 of them gold: those are no data
    assert _ds_accuracy(result, role) is None and len(result["model"]["dawid_skene"]["graders"]) == 3
    assert result["overview"]["graders_excluded"] == 1


def test_a_reliability_threshold_needs_enough_judgments_in_the_model():
    """Each grader judged 7 ordinary units (the 5 gold units are not the model's data)."""
    campaign, _, graders = _campaign(exclude_reliability_below=0.9, exclude_min_judgments=8)
    assert _result(campaign)["excluded_graders"] == []
    campaign.policy_params = {"exclude_reliability_below": 0.9, "exclude_min_judgments": 7}
    campaign.save(update_fields=["policy_params"])
    assert [e["pseudonym"] for e in _result(campaign)["excluded_graders"]] == [_role(campaign, graders[3]).pseudonym]


def test_an_organizer_who_includes_an_automatically_excluded_grader_keeps_them_included():
    campaign, organizer, graders = _campaign(exclude_gold_below=0.6)
    _result(campaign)
    role = grader_include(campaign=campaign, role=_role(campaign, graders[3]), actor=organizer)
    assert role.auto_exclusion_waived_at is not None
    result = _result(campaign)
    assert _role(campaign, graders[3]).excluded_at is None and result["excluded_graders"] == []
    entry = AuditEntry.objects.get(campaign=campaign, action="grader.included")
    assert entry.actor == organizer and entry.after["thresholds_waived"] is True
    assert "leave them alone" in sentence(entry)
    # The organizer may still exclude them by hand; that is theirs, not automatic.
    grader_exclude(campaign=campaign, role=role, reason="on second thoughts", actor=organizer)
    assert not _role(campaign, graders[3]).exclusion_automatic


def test_an_excluded_grader_is_not_excluded_again_nor_their_reason_replaced():
    campaign, organizer, graders = _campaign(exclude_gold_below=0.6)
    grader_exclude(campaign=campaign, role=_role(campaign, graders[3]), reason="speeder", actor=organizer)
    _result(campaign)
    role = _role(campaign, graders[3])
    assert role.exclusion_reason == "speeder" and not role.exclusion_automatic
    assert AuditEntry.objects.filter(action="grader.excluded").count() == 1


def test_a_run_stores_the_report_without_the_graders_it_excluded():
    campaign, _, graders = _campaign(exclude_gold_below=0.6)
    run = AnalysisRun.objects.create(campaign=campaign, parameters=runs.parameters_clean({"n_boot": 50}), seed=7)
    assert run_execute(run_id=run.pk) == RunStatus.SUCCEEDED
    run.refresh_from_db()
    assert [e["by"] for e in run.result["excluded_graders"]] == ["automatic"]
    tables = report_tables(run, show_names=False)
    assert "Graders excluded" in tables["overview"].note
    assert "gold accuracy 0.40 below 0.6" in tables["excluded_graders"].rows[0]["reason"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"exclude_gold_below": 1.5}, "policy_params.exclude_gold_below"),
        ({"exclude_reliability_below": -0.1}, "policy_params.exclude_reliability_below"),
        ({"exclude_min_judgments": 0}, "policy_params.exclude_min_judgments"),
        ({"exclude_min_judgments": 2.5}, "policy_params.exclude_min_judgments"),
        ({"exclude_gold_below": True}, "policy_params.exclude_gold_below"),
    ],
)
def test_bad_thresholds_are_refused_naming_the_parameter(params, field):
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=1)
    with pytest.raises(InvalidValue) as caught:
        campaign_update(campaign=campaign, actor=None, policy_params=params)
    assert caught.value.field == field
    assert Campaign.objects.get(pk=campaign.pk).policy_params == {}


def test_a_numeric_campaign_refuses_thresholds_it_has_no_figures_for():
    campaign = make_campaign(scheme=Scheme.NUMERIC, n_queries=1, n_candidates=2, graders=1)
    with pytest.raises(InvalidValue, match="applies only to campaigns whose judgments are categories") as caught:
        campaign_update(campaign=campaign, actor=None, policy_params={"exclude_gold_below": 0.5})
    assert caught.value.field == "policy_params.exclude_gold_below"
    campaign_update(campaign=campaign, actor=None, policy_params={"exclude_min_judgments": 3})  # harmless alone


def test_the_figure_in_a_reason_never_reads_as_the_threshold():
    assert shown_below(0.4, 0.6) == "0.40"
    assert shown_below(0.5999, 0.6) == "0.5999"
    assert shown_below(0.59951, 0.6) == "0.5995"


def test_an_organizer_sets_the_thresholds_in_the_settings_and_a_bad_one_is_said_beside_its_field(client):
    organizer = make_user()
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=1, organizer=organizer)
    campaign_update(campaign=campaign, actor=organizer, policy_params={"repeat_share": 0.1})
    client.force_login(organizer)
    url = f"/organize/campaigns/{campaign.pk}/"
    assert 'id="id_exclude_gold_below"' in client.get(url).content.decode()
    response = client.post(url, settings_form_data(campaign, exclude_gold_below="1.5", exclude_min_judgments="0"))
    assert response.status_code == 400
    html = response.content.decode()
    assert html.count('class="field-error"') == 2 and "less than or equal to 1" in html
    assert Campaign.objects.get(pk=campaign.pk).policy_params == {"repeat_share": 0.1}
    response = client.post(url, settings_form_data(campaign, exclude_gold_below="0.6", exclude_reliability_below="0.5"))
    assert response.status_code == 302
    assert Campaign.objects.get(pk=campaign.pk).policy_params == {
        "repeat_share": 0.1,
        "exclude_gold_below": 0.6,
        "exclude_reliability_below": 0.5,
    }
    entry = AuditEntry.objects.filter(campaign=campaign, action="campaign.settings").latest("pk")
    assert entry.after["policy_params"]["exclude_gold_below"] == 0.6
    assert 'value="0.6"' in client.get(url).content.decode()
    client.post(url, settings_form_data(campaign, exclude_reliability_below="0.5"))  # gold emptied: no longer asked
    assert Campaign.objects.get(pk=campaign.pk).policy_params == {"repeat_share": 0.1, "exclude_reliability_below": 0.5}


def test_a_numeric_campaigns_settings_offer_no_thresholds(client):
    organizer = make_user()
    campaign = make_campaign(scheme=Scheme.NUMERIC, n_queries=1, n_candidates=2, graders=1, organizer=organizer)
    client.force_login(organizer)
    url = f"/organize/campaigns/{campaign.pk}/"
    assert "exclude_gold_below" not in client.get(url).content.decode()
    assert client.post(url, settings_form_data(campaign, exclude_gold_below="0.5")).status_code == 302
    assert Campaign.objects.get(pk=campaign.pk).policy_params == {}


def test_the_api_sets_thresholds_in_policy_params_and_answers_400_naming_a_bad_one(client):
    organizer = make_user()
    campaign = make_campaign(n_queries=1, n_candidates=2, graders=1, organizer=organizer)
    client.force_login(organizer)
    url = f"/api/campaigns/{campaign.pk}/"
    bad = client.patch(url, {"policy_params": {"exclude_gold_below": 2}}, content_type="application/json")
    assert bad.status_code == 400 and bad.json()["field"] == "policy_params.exclude_gold_below"
    good = client.patch(url, {"policy_params": {"exclude_gold_below": 0.7}}, content_type="application/json")
    assert good.status_code == 200 and good.json()["policy_params"] == {"exclude_gold_below": 0.7}


def test_the_exclusion_api_says_whether_an_exclusion_was_automatic_and_whether_it_was_overridden(client):
    campaign, organizer, graders = _campaign(exclude_gold_below=0.6)
    _result(campaign)
    client.force_login(organizer)
    url = f"/api/campaigns/{campaign.pk}/participants/{graders[3].pk}/exclusion/"
    body = client.get(url).json()
    assert (body["excluded"], body["automatic"], body["thresholds_waived"]) == (True, True, False)
    assert body["reason"].startswith("automatic: gold accuracy 0.40")
    body = client.delete(url).json()
    assert (body["excluded"], body["automatic"], body["thresholds_waived"]) == (False, False, True)
    page = client.get(f"/organize/campaigns/{campaign.pk}/members/").content.decode()
    assert f'id="waived-{graders[3].pk}"' in page


def test_campaign_files_and_the_admin_check_thresholds_against_the_scheme():
    problems = policy_params_problems(params={"exclude_reliability_below": 0.5}, scheme=Scheme.ORDERING)
    assert [p[0] for p in problems] == ["policy_params.exclude_reliability_below"]
    assert policy_params_problems(params={"exclude_reliability_below": 0.5}, scheme=Scheme.PAIRWISE) == []
