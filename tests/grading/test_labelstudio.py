"""Label Studio in and out: an export (Label Studio's documented task JSON) becomes a campaign whose
annotations are imported events of pseudonymous graders, bad files name the task, annotation and field
and store nothing, and ours → Label Studio → ours keeps every judgment."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from grading.models import Campaign, GradingEvent, Judgment
from grading.models.choices import EventType, Scheme
from grading.services.campaign_file_errors import CampaignFileError
from grading.services.labelstudio import labelstudio_plan, labelstudio_tasks
from tests.factories import make_campaign, record

EXPORT = Path(__file__).resolve().parents[2] / "examples" / "labelstudio" / "export.json"
pytestmark = pytest.mark.django_db


def _import(path: Path, *args: str) -> str:
    out = io.StringIO()
    call_command("import_labelstudio", str(path), *args, stdout=out)
    return out.getvalue()


def _values(campaign: Campaign, field: str) -> dict[tuple[str, str], object]:
    """(grader's pseudonym, unit id) → value, or 'skipped'."""
    pseudonyms = dict(campaign.roles.filter(role="grader").values_list("user_id", "pseudonym"))
    return {
        (pseudonyms[j.grader_id], j.unit.external_id): "skipped" if j.skipped else getattr(j, field)
        for j in Judgment.objects.filter(campaign=campaign).select_related("unit")
    }


def test_a_label_studio_export_becomes_a_campaign_with_imported_judgments_of_pseudonymous_graders():
    said = _import(EXPORT, "--name", "Reviews", "--scheme", "categorical", "--from-name", "sentiment")
    campaign = Campaign.objects.get(slug="reviews")
    assert "3 units, 2 graders, 5 annotations" in said
    assert campaign.scheme == Scheme.CATEGORICAL and campaign.status == "closed"
    assert campaign.scheme_params["labels"] == ["Negative", "Positive", "Neutral"]  # in order of appearance
    assert campaign.queries.count() == 1
    assert _values(campaign, "label") == {
        ("G01", "task-101"): "Negative",
        ("G02", "task-101"): "Negative",
        ("G01", "task-102"): "Positive",
        ("G02", "task-102"): "skipped",
        ("G02", "task-103"): "Neutral",
    }
    # the graders stand for Label Studio's user ids; no e-mail address is kept
    names = set(campaign.roles.values_list("user__username", flat=True))
    assert names == {"ls-reviews-7", "ls-reviews-9"}
    assert not get_user_model().objects.filter(email__icontains="example.org").exists()


def test_imported_judgments_are_events_marked_with_their_label_studio_source():
    _import(EXPORT, "--name", "Reviews", "--scheme", "categorical", "--from-name", "sentiment")
    events = list(GradingEvent.objects.filter(campaign__slug="reviews").order_by("session_id"))
    assert len(events) == 5
    assert [e.session_id for e in events] == [f"labelstudio:{n}" for n in range(1001, 1006)]
    assert all(e.payload["source"] == "labelstudio" for e in events)
    first = events[0]
    assert first.type == EventType.LABEL_SET and first.payload["value"] == "Negative"
    assert first.payload["task"] == "101" and first.payload["annotation"] == "1001"
    assert first.payload["created_at"] == "2021-03-09T22:16:08.728353Z"
    assert events[3].type == EventType.SKIP  # the cancelled annotation
    # a judgment's value comes from its event, as for judgments given here
    assert Judgment.objects.get(last_event=first).label == "Negative"


def test_ratings_become_a_numeric_campaign_on_label_studios_one_to_five_scale():
    _import(EXPORT, "--name", "Quality", "--scheme", "numeric", "--status", "open")
    campaign = Campaign.objects.get(slug="quality")
    assert campaign.status == "open"
    assert (campaign.scheme_params["min"], campaign.scheme_params["max"]) == (1, 5)
    assert _values(campaign, "score")[("G01", "task-102")] == 5.0
    assert sorted(v for v in _values(campaign, "score").values() if v != "skipped") == [1, 2, 3, 5]


def _tasks() -> list:
    return json.loads(EXPORT.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("change", "where", "field"),
    [
        (
            lambda t: t[1]["annotations"][0]["result"][0]["value"].update(choices=["Positive", "Neutral"]),
            "tasks[1].annotations[0].result[0]",
            "value.choices",
        ),
        (lambda t: t[0]["annotations"][1].pop("completed_by"), "tasks[0].annotations[1]", "completed_by"),
        (lambda t: t[2].pop("data"), "tasks[2]", "data"),
        (lambda t: t[2]["data"].update(text="", audio=None), "tasks[2]", "data.text"),
        (lambda t: t[2]["annotations"][0].update(result=[]), "tasks[2].annotations[0]", "result"),
        (lambda t: t[2].update(id=101), "tasks[2]", "id"),
        (lambda t: t[0].update(data={"audio": "/data/upload/3/a.wav"}), "tasks[0]", "data.audio"),
    ],
)
def test_a_bad_export_is_refused_naming_the_task_annotation_and_field(change, where, field):
    tasks = _tasks()
    change(tasks)
    with pytest.raises(CampaignFileError) as caught:
        labelstudio_plan(tasks, name="X", slug="x", scheme="categorical", from_name="sentiment")
    messages = [e.message for e in caught.value.all_errors()]
    assert any(m.startswith(f"{where}, field {field!r}") for m in messages), messages


def test_a_bad_file_through_the_command_lists_every_problem_and_stores_nothing(tmp_path):
    tasks = _tasks()
    tasks[0]["annotations"][0]["result"][1]["value"]["rating"] = "four"
    tasks[2]["annotations"][0]["result"][1]["value"]["rating"] = 11
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    with pytest.raises(CommandError) as caught:
        _import(path, "--name", "Bad", "--scheme", "numeric", "--scheme-params", '{"min": 1, "max": 5}')
    text = str(caught.value)
    assert "tasks[0].annotations[0].result[1], field 'value.rating', value 'four': a rating is a number" in text
    assert "Nothing was imported." in text
    assert not Campaign.objects.exists() and not GradingEvent.objects.exists()
    tasks[0]["annotations"][0]["result"][1]["value"]["rating"] = 4
    path.write_text(json.dumps(tasks), encoding="utf-8")
    with pytest.raises(
        CommandError,
        match=r"tasks\[2\]\.annotations\[0\]\.result\[1\], field 'value.rating', "
        r"value 11: outside the scale 1–5",
    ):
        _import(path, "--name", "Bad", "--scheme", "numeric", "--scheme-params", '{"min": 1, "max": 5}')
    assert not Campaign.objects.exists() and not get_user_model().objects.filter(username__startswith="ls-").exists()


def test_several_controls_of_the_type_need_from_name():
    tasks = _tasks()
    extra = copy.deepcopy(tasks[2]["annotations"][0]["result"][0])
    tasks[2]["annotations"][0]["result"].append({**extra, "from_name": "topic"})
    with pytest.raises(CampaignFileError, match=r"tasks\[2\]\.annotations\[0\], field 'result'.*--from-name"):
        labelstudio_plan(tasks, name="X", slug="x", scheme="categorical")


@pytest.mark.parametrize("scheme", [Scheme.CATEGORICAL, Scheme.NUMERIC])
def test_ours_to_label_studio_and_back_keeps_every_judgment(tmp_path, scheme):
    campaign = make_campaign(scheme=scheme, n_queries=2, n_candidates=2, graders=3, overlap=2)
    field = "label" if scheme == Scheme.CATEGORICAL else "score"
    kind = EventType.LABEL_SET if scheme == Scheme.CATEGORICAL else EventType.SCORE_SET
    values = ["bad", "ok", "good"] if scheme == Scheme.CATEGORICAL else [0, 4, 10]
    n = 0
    for a in campaign.assignments.select_related("grader", "unit").order_by("pk"):
        if n % 5 == 4:
            record(a.grader, campaign, EventType.SKIP, {}, unit=a.unit)
        else:
            record(a.grader, campaign, kind, {"value": values[n % 3]}, unit=a.unit)
        n += 1
    assert n == 8
    ours = _values(campaign, field)
    call_command("export_campaign", campaign.slug, "--format", "labelstudio", "-o", str(tmp_path), stdout=io.StringIO())
    tasks = json.loads((tmp_path / "tasks.json").read_text(encoding="utf-8"))
    assert len(tasks) == 4 and sum(len(t["annotations"]) for t in tasks) == 8
    assert "<Choices" in (tmp_path / "label_config.xml").read_text() or scheme == Scheme.NUMERIC
    params = json.dumps(campaign.scheme_params)
    _import(tmp_path / "tasks.json", "--name", "Back", "--scheme", scheme, "--scheme-params", params)
    back = Campaign.objects.get(slug="back")
    theirs = _values(back, field)
    assert len(theirs) == len(ours) == 8
    # the same judgments: units keep their ids; graders map one to one (completed_by is the pseudonym number)
    ls_names = dict(back.roles.filter(role="grader").values_list("user__username", "pseudonym"))
    mapping = {f"G{int(name.rsplit('-', 1)[1]):02d}": p for name, p in ls_names.items()}
    assert {(mapping[g], u): v for (g, u), v in ours.items()} == theirs
    assert back.queries.count() == 2 and back.units.count() == 4


def test_an_ordering_campaign_is_not_exported_to_label_studio(tmp_path):
    campaign = make_campaign(scheme=Scheme.ORDERING, assign=False)
    with pytest.raises(CampaignFileError, match="categorical, numeric and BROAD/FINE"):
        labelstudio_tasks(campaign)


def _broad_fine(campaign: Campaign) -> dict[tuple[str, str], object]:
    """(grader's pseudonym, unit id) → (BROAD, FINE), or 'skipped'."""
    pseudonyms = dict(campaign.roles.filter(role="grader").values_list("user_id", "pseudonym"))
    return {
        (pseudonyms[j.grader_id], j.unit.external_id): "skipped" if j.skipped else (j.broad, j.fine)
        for j in Judgment.objects.filter(campaign=campaign).select_related("unit")
    }


def test_a_broad_fine_campaign_goes_to_label_studio_and_back_with_every_complete_judgment(tmp_path):
    campaign = make_campaign(scheme=Scheme.BROAD_FINE, n_queries=2, n_candidates=2, graders=3, overlap=3)
    pairs = [("VS", 9.5), ("SS", 5.0), ("NS", 0.0), ("VS", 10.0), ("NS", 2.5)]
    partial = None
    for n, a in enumerate(campaign.assignments.select_related("grader", "unit").order_by("pk")):
        if n % 6 == 5:
            record(a.grader, campaign, EventType.SKIP, {}, unit=a.unit)
        elif n == 7:  # a BROAD whose FINE was never given: not a whole BROAD/FINE judgment
            record(a.grader, campaign, EventType.BROAD_SET, {"value": "SS"}, unit=a.unit)
            partial = (a.grader_id, a.unit_id)
        else:
            broad, fine = pairs[n % len(pairs)]
            record(a.grader, campaign, EventType.BROAD_SET, {"value": broad}, unit=a.unit, seq=1)
            record(a.grader, campaign, EventType.FINE_SET, {"value": fine}, unit=a.unit, seq=2)
    ours = _broad_fine(campaign)
    assert len(ours) == 12 and partial is not None
    err = io.StringIO()
    call_command(
        "export_campaign",
        campaign.slug,
        "--format",
        "labelstudio",
        "-o",
        str(tmp_path),
        stdout=io.StringIO(),
        stderr=err,
    )
    assert "1 BROAD/FINE judgment(s) with only a BROAD or only a FINE were left out" in err.getvalue()
    tasks = json.loads((tmp_path / "tasks.json").read_text(encoding="utf-8"))
    assert len(tasks) == 4 and sum(len(t["annotations"]) for t in tasks) == 11
    complete = next(a for t in tasks for a in t["annotations"] if a["result"])
    assert [(r["from_name"], r["type"], list(r["value"])) for r in complete["result"]] == [
        ("broad", "choices", ["choices"]),
        ("fine", "number", ["number"]),
    ]
    config = (tmp_path / "label_config.xml").read_text()
    assert '<Choice value="Very Similar" alias="VS"/>' in config
    assert '<Number name="fine" toName="item" min="0" max="10" step="0.1" required="true"/>' in config
    _import(tmp_path / "tasks.json", "--name", "Back", "--scheme", "broad_fine")
    back = Campaign.objects.get(slug="back")
    ls_names = dict(back.roles.filter(role="grader").values_list("user__username", "pseudonym"))
    mapping = {f"G{int(name.rsplit('-', 1)[1]):02d}": p for name, p in ls_names.items()}
    pseudonyms = dict(campaign.roles.filter(role="grader").values_list("user_id", "pseudonym"))
    left_out = (pseudonyms[partial[0]], campaign.units.get(pk=partial[1]).external_id)
    expected = {(mapping[g], u): v for (g, u), v in ours.items() if (g, u) != left_out}
    assert _broad_fine(back) == expected and len(expected) == 11
    assert back.scheme == Scheme.BROAD_FINE and back.scheme_params == campaign.scheme_params


BROAD_FINE_TASKS = [
    {
        "id": 7,
        "data": {"text": "a document", "query": "a topic"},
        "annotations": [
            {
                "id": 70,
                "completed_by": 3,
                "result": [
                    {
                        "from_name": "relevance",
                        "to_name": "t",
                        "type": "choices",
                        "value": {"choices": ["Very Similar"]},
                    },
                    {"from_name": "score", "to_name": "t", "type": "rating", "value": {"rating": 8}},
                ],
            },
            {
                "id": 71,
                "completed_by": 4,
                "result": [
                    {"from_name": "score", "to_name": "t", "type": "number", "value": {"number": 4.5}},
                    {"from_name": "relevance", "to_name": "t", "type": "choices", "value": {"choices": ["ss"]}},
                ],
            },
        ],
    }
]


def test_broad_names_and_a_rating_for_fine_are_read_as_imported_broad_and_fine_events(tmp_path):
    path = tmp_path / "bf.json"
    path.write_text(json.dumps(BROAD_FINE_TASKS), encoding="utf-8")
    _import(path, "--name", "BF", "--scheme", "broad_fine")
    campaign = Campaign.objects.get(slug="bf")
    assert set(_broad_fine(campaign).values()) == {("VS", 8), ("SS", 4.5)}
    events = list(GradingEvent.objects.filter(campaign=campaign).order_by("session_id", "seq"))
    assert [(e.session_id, e.type, e.payload["value"]) for e in events] == [
        ("labelstudio:70", EventType.BROAD_SET, "VS"),
        ("labelstudio:70", EventType.FINE_SET, 8.0),
        ("labelstudio:71", EventType.BROAD_SET, "SS"),
        ("labelstudio:71", EventType.FINE_SET, 4.5),
    ]
    assert all(e.payload["source"] == "labelstudio" and e.payload["annotation"] in ("70", "71") for e in events)


def _drop(t: list, j: int, kind: str) -> None:
    results = t[0]["annotations"][j]["result"]
    results[:] = [r for r in results if r["type"] != kind]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda t: _drop(t, 0, "rating"),
            "tasks[0].annotations[0], field 'result', value 'Very Similar': a BROAD without a FINE",
        ),
        (
            lambda t: _drop(t, 1, "choices"),
            "tasks[0].annotations[1], field 'result', value 4.5: a FINE without a BROAD",
        ),
        (
            lambda t: t[0]["annotations"][0]["result"][0]["value"].update(choices=["Maybe"]),
            "tasks[0].annotations[0].result[0], field 'value.choices', value 'Maybe': not a BROAD category",
        ),
        (
            lambda t: t[0]["annotations"][1]["result"][0]["value"].update(number=4.55),
            "tasks[0].annotations[1].result[0], field 'value.number', value 4.55: the FINE is 0–10 on the 0.1 grid",
        ),
        (
            lambda t: t[0]["annotations"][0]["result"][1]["value"].update(rating=11),
            "tasks[0].annotations[0].result[1], field 'value.rating', value 11: the FINE is 0–10 on the 0.1 grid",
        ),
        (
            lambda t: t[0]["annotations"][0]["result"].append(copy.deepcopy(t[0]["annotations"][1]["result"][0])),
            "tasks[0].annotations[0], field 'result', value '[\"score\"]': several 'number' or 'rating' results: "
            "choose one control with --fine-from-name",
        ),
    ],
)
def test_a_bad_broad_fine_annotation_is_refused_naming_task_annotation_result_and_field(tmp_path, change, message):
    tasks = copy.deepcopy(BROAD_FINE_TASKS)
    change(tasks)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    with pytest.raises(CommandError) as caught:
        _import(path, "--name", "Bad", "--scheme", "broad_fine")
    assert f"{path}: {message}" in str(caught.value) and "Nothing was imported." in str(caught.value)
    assert not Campaign.objects.exists() and not GradingEvent.objects.exists()
