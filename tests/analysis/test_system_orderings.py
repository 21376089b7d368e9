"""Systems' orderings in the app: upload from the report page and the API, who may, and the scores shown."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from analysis import metrics as m
from analysis.models import AnalysisRun, RunStatus
from analysis.services import runs
from analysis.services.execute import run_execute
from grading.models import CampaignRole, Candidate, Ordering, SystemOutput
from grading.models.choices import Role, Scheme
from tests.factories import make_campaign, make_user

pytestmark = pytest.mark.django_db


def systems_csv(campaign, *, reverse_q0: bool = True) -> str:
    """`good` follows each query's unit order (what the graders mostly chose); `bad` reverses it."""
    lines = ["query,system,rank,item"]
    for query in campaign.queries.order_by("position"):
        items = list(query.units.order_by("position").values_list("candidate__external_id", flat=True))
        lines += [f"{query.external_id},good,{r},{c}" for r, c in enumerate(items, start=1)]
        if reverse_q0 or query.position:
            lines += [f"{query.external_id},bad,{r},{c}" for r, c in enumerate(reversed(items), start=1)]
    return "\n".join(lines) + "\n"


def upload(text: str, name: str = "systems.csv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


def _grader(campaign):
    return CampaignRole.objects.filter(campaign=campaign, role=Role.GRADER).select_related("user").first().user


def test_an_organizer_uploads_on_the_report_page_and_sees_every_method_with_the_favoured_one_marked(
    client, ordering_campaign, organizer, django_capture_on_commit_callbacks
):
    client.force_login(organizer)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = client.post(
            f"/reports/campaigns/{ordering_campaign.pk}/system-orderings/",
            {"file": upload(systems_csv(ordering_campaign))},
        )
    assert response.status_code == 302
    assert SystemOutput.objects.filter(system__campaign=ordering_campaign).count() == 6
    assert AnalysisRun.objects.filter(campaign=ordering_campaign, status=RunStatus.QUEUED).count() == 1
    assert len(queued) == 1
    queued[0]()  # the upload's commit: embedded, the run executes here (with a broker, a worker runs it)
    html = client.get(f"/reports/campaigns/{ordering_campaign.pk}/").content.decode()
    run = AnalysisRun.objects.get(campaign=ordering_campaign)
    assert run.status == RunStatus.SUCCEEDED
    orderings = run.result["orderings"]
    best = orderings["best_method"]
    assert best == max(orderings["ed"], key=lambda k: orderings["ed"][k])
    assert 'id="table-systems"' in html and 'id="table-system_scores"' in html and "Imported 6 orderings" in html
    for method in m.METHODS:
        assert f">{method}<" in html or f">{method} ★<" in html
    # The favoured heading stands out; its text is wrapped in the method's explanation (a tooltip).
    assert re.search(
        rf'class="num favoured" title="the method the ED favours">(<span[^>]*>)*{re.escape(best)} ★<', html
    )
    by_name = {s["system"]: s["scores"] for s in orderings["systems"]}
    assert all(by_name["good"][k] > by_name["bad"][k] for k in m.METHODS)


def test_system_scores_equal_the_metrics_called_directly(client, ordering_campaign, organizer):
    client.force_login(organizer)
    client.post(
        f"/reports/campaigns/{ordering_campaign.pk}/system-orderings/", {"file": upload(systems_csv(ordering_campaign))}
    )
    run_execute(run_id=AnalysisRun.objects.get(campaign=ordering_campaign).pk)
    result = AnalysisRun.objects.get(campaign=ordering_campaign).result["orderings"]
    query = ordering_campaign.queries.order_by("position").first()
    golds = np.array(list(Ordering.objects.filter(query=query).order_by("grader_id").values_list("items", flat=True)))
    outputs = SystemOutput.objects.filter(query=query).order_by("system__name")
    assert outputs.count() == 2  # good and bad
    expected = m.score_orderings(golds, np.array([o.ordering for o in outputs]))
    row = next(q for q in result["queries"] if q["query"] == query.pk)
    for i, output in enumerate(outputs):
        scored = next(s for s in row["systems"] if s["system"] == output.system.name)
        for method in m.METHODS:
            assert scored["scores"][method] == pytest.approx(expected[method].iloc[i], abs=1e-12)


def test_consensus_orderings_show_candidates_by_text_to_organizers(client, ordering_campaign, organizer):
    run = AnalysisRun.objects.create(campaign=ordering_campaign, parameters=runs.parameters_clean({"n_boot": 50}))
    run_execute(run_id=run.pk)
    client.force_login(organizer)
    html = client.get(f"/reports/campaigns/{ordering_campaign.pk}/").content.decode()
    a_candidate = Candidate.objects.filter(campaign=ordering_campaign).first()
    assert a_candidate.text in html and a_candidate.public_id not in html
    csv_text = client.get(f"/reports/campaigns/{ordering_campaign.pk}/tables/ordering_queries.csv").content.decode()
    assert f"{a_candidate.text} > " in csv_text or f" > {a_candidate.text}" in csv_text


def test_a_malformed_upload_shows_the_line_field_and_value_and_stores_nothing(client, ordering_campaign, organizer):
    client.force_login(organizer)
    text = systems_csv(ordering_campaign).replace(",good,2,", ",good,1,", 1)
    response = client.post(f"/reports/campaigns/{ordering_campaign.pk}/system-orderings/", {"file": upload(text)})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="upload-error"' in html and "line 3, field &#x27;rank&#x27;, value 1" in html
    assert "Nothing was imported" in html
    assert not SystemOutput.objects.exists() and not AnalysisRun.objects.exists()


def test_graders_get_403_and_organizers_of_other_campaigns_404(client, ordering_campaign):
    other_organizer = make_user("other-organizer")
    make_campaign(scheme=Scheme.ORDERING, n_queries=1, n_candidates=3, organizer=other_organizer)
    body = systems_csv(ordering_campaign)
    for user, code in ((_grader(ordering_campaign), 403), (other_organizer, 404)):  # 404: may not know it exists
        client.force_login(user)
        page = client.post(f"/reports/campaigns/{ordering_campaign.pk}/system-orderings/", {"file": upload(body)})
        api = client.post(f"/api/campaigns/{ordering_campaign.pk}/system-orderings/", {"file": upload(body)})
        assert (page.status_code, api.status_code) == (code, code), user.username
    assert not SystemOutput.objects.exists()


def test_the_api_takes_a_csv_file_or_json_rows(client, ordering_campaign, organizer):
    client.force_login(organizer)
    url = f"/api/campaigns/{ordering_campaign.pk}/system-orderings/"
    response = client.post(url, {"file": upload(systems_csv(ordering_campaign))})
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["systems"] == ["bad", "good"] and data["orderings"] == 6 and data["analysis"]["id"]
    assert response["Location"] == f"/api/analyses/{data['analysis']['id']}/"
    query = ordering_campaign.queries.order_by("position").first()
    items = list(query.units.order_by("position").values_list("candidate__external_id", flat=True))
    rows = [{"query": query.external_id, "system": "good", "rank": r, "item": c} for r, c in enumerate(items, 1)]
    response = client.post(url, json.dumps({"rows": rows}), content_type="application/json")
    assert response.status_code == 201 and response.json()["replaced"] == 3
    assert SystemOutput.objects.filter(system__name="good").count() == 1


def test_the_api_rejects_a_malformed_upload_with_400_naming_where(client, ordering_campaign, organizer):
    client.force_login(organizer)
    url = f"/api/campaigns/{ordering_campaign.pk}/system-orderings/"
    rows = [{"query": "q0", "system": "s", "rank": 1, "item": "nope"}]
    response = client.post(url, json.dumps({"rows": rows}), content_type="application/json")
    assert response.status_code == 400
    assert response.json() | {"detail": ""} == {
        "code": "invalid",
        "detail": "",
        "field": "item",
        "value": "nope",
        "where": "rows[0]",
    }
    response = client.post(url, {"file": upload("query,system,item\n")})
    assert response.status_code == 400 and response.json()["field"] == "rank"
    assert not SystemOutput.objects.exists()


def test_an_upload_to_a_rating_campaign_is_refused(client, judged_campaign, organizer):
    client.force_login(organizer)
    response = client.post(
        f"/api/campaigns/{judged_campaign.pk}/system-orderings/",
        {"file": upload("query,system,rank,item\nq0,s,1,c0-0\n")},
    )
    assert response.status_code == 400 and response.json()["field"] == "scheme"
