"""Label Studio files in and out: a JSON export of tasks becomes a campaign with its annotations
recorded as imported grading events; a campaign becomes Label Studio tasks with its judgments as
annotations, so that ours → Label Studio → ours keeps every judgment.

A Label Studio export is a list of tasks; each task's ``data`` holds the item (``text``, or the
URL of an ``audio``, ``image`` or ``video``), and ``annotations[].result[]`` the annotators'
answers: ``{"type": "choices", "value": {"choices": [LABEL]}}`` for a categorical campaign,
``{"type": "rating", "value": {"rating": N}}`` for a numeric one, and for a BROAD/FINE campaign both
in one annotation: a ``choices`` result holding the BROAD category (NS, SS, VS, or the names Not
Similar, Somewhat Similar, Very Similar) and a ``number`` (``{"number": 7.5}``, Label Studio's Number
tag, what the export writes) or ``rating`` result holding the FINE score (0–10 on the 0.1 grid); a
BROAD without its FINE, or the reverse, is refused. An annotation with ``was_cancelled`` (skipped in
Label Studio) is recorded as a skip.

The event log stays the one source: every annotation is recorded through
grading.services.events as its scheme's event (label_set, score_set, broad_set then fine_set, skip) by a pseudonymous
grader standing for its ``completed_by``, with ``session_id`` ``labelstudio:<annotation id>`` and
``payload.source`` ``"labelstudio"`` (with the task, the annotation and Label Studio's own
timestamp), which tell imported judgments apart from those given here (docs/design.md §2).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from grading.errors import GradingError, InvalidValue
from grading.models import Assignment, Campaign
from grading.models.choices import AssignmentSource, Broad, CampaignStatus, EventType, Role, Scheme
from grading.schemes import parse_fine
from grading.services import allocation_state
from grading.services.campaign_file_errors import CampaignFileError, Collector
from grading.services.campaign_files import FORMAT, definition_check, read_text_file
from grading.services.campaign_io import campaign_import
from grading.services.campaigns import campaign_set_status
from grading.services.event_input import EventInput
from grading.services.events import events_record
from grading.services.labelstudio_out import (  # noqa: F401 (the export side, re-exported)
    labelstudio_config,
    labelstudio_export,
    labelstudio_incomplete,
    labelstudio_tasks,
)

SOURCE = "labelstudio"
SESSION_PREFIX = "labelstudio:"
ITEM_FIELDS = ("text", "audio", "image", "video")  # data keys read as the item, in this order
RESULT_TYPE = {Scheme.CATEGORICAL: "choices", Scheme.NUMERIC: "rating", Scheme.BROAD_FINE: "choices"}
EVENT_OF = {Scheme.CATEGORICAL: EventType.LABEL_SET, Scheme.NUMERIC: EventType.SCORE_SET}
FINE_TYPES = ("number", "rating")  # the FINE of a BROAD/FINE annotation: Label Studio's Number or Rating
# A BROAD category by its code or its name, any case ("VS", "Very Similar", "very similar").
BROAD_OF = {**{c.lower(): c for c in Broad.values}, **{n.lower(): c for c, n in Broad.choices}}
SCHEME_WORDS = "categorical (choices), numeric (rating) or broad_fine (choices and number)"
EVENT_NAMESPACE = uuid.UUID("5d3f3a0e-7a52-4c39-9a4e-6c1b0f2d8e11")


def tasks_from_json(path: Path) -> list[Any]:
    """The tasks of a Label Studio JSON export (a list), or CampaignFileError."""
    try:
        data = json.loads(read_text_file(path))
    except json.JSONDecodeError as exc:
        raise CampaignFileError(f"line {exc.lineno}", "(json)", exc.msg, "the file is not valid JSON") from None
    if not isinstance(data, list):
        raise CampaignFileError(
            "top level", "(json)", type(data).__name__, "a Label Studio export is a JSON list of tasks"
        )
    return data


def labelstudio_plan(
    tasks: list[Any],
    *,
    name: str,
    slug: str,
    scheme: str,
    scheme_params: dict[str, Any] | None = None,
    from_name: str | None = None,
    fine_from_name: str | None = None,
    item_field: str | None = None,
    guidelines: str = "",
) -> dict[str, Any]:
    """Check the tasks completely and return the campaign definition and the annotations to record.
    Every task and annotation is checked on its own; the problems are raised together
    (CampaignFileErrors), each naming ``tasks[i]`` / ``tasks[i].annotations[j]`` and the field."""
    if scheme not in RESULT_TYPE:
        raise CampaignFileError("options", "scheme", scheme, f"a Label Studio import is {SCHEME_WORDS}")
    if not tasks:
        raise CampaignFileError("top level", "(json)", "[]", "the export holds no tasks")
    found = Collector()
    controls = (from_name, fine_from_name)
    parsed = [found.run(_task, t, i, scheme, controls, item_field) for i, t in enumerate(tasks)]
    _unique_ids(found, parsed)
    found.raise_any()
    tasks_ok: list[dict[str, Any]] = [p for p in parsed if p is not None]
    queries: dict[str, dict[str, Any]] = {}
    candidates: dict[str, dict[str, Any]] = {}
    by_text: dict[str, str] = {}  # a query without data.query_id is named q1, q2, … by its text
    for t in tasks_ok:
        if t["query"] is not None and not t["query"]["id"]:
            t["query"]["id"] = by_text.setdefault(t["query"]["text"], f"q{len(by_text) + 1}")
        if t["query"] is not None:
            queries.setdefault(t["query"]["id"], t["query"])
        cand = candidates.setdefault(t["candidate"]["id"], {**t["candidate"], "provenance": [], "queries": []})
        if t["query"] is not None and t["query"]["id"] not in cand["queries"]:
            cand["queries"].append(t["query"]["id"])
    annotators = list(dict.fromkeys(a["completed_by"] for t in tasks_ok for a in t["annotations"]))
    usernames = {who: f"ls-{slug}-{who}"[:150] for who in annotators}
    definition = {
        "format": FORMAT,
        "campaign": {
            "name": name,
            "slug": slug,
            "scheme": scheme,
            "scheme_params": scheme_params or _default_params(scheme, tasks_ok),
            "guidelines": guidelines,
            "status": CampaignStatus.OPEN,  # events are taken by open campaigns only
            "initial_overlap": 1,
            "max_overlap": max([1, *(len({a["completed_by"] for a in t["annotations"]}) for t in tasks_ok)]),
        },
        "systems": [],
        "queries": list(queries.values()),
        "candidates": list(candidates.values()),
        "units": [
            {"id": t["unit"], "query": t["query"]["id"] if t["query"] else None, "candidate": t["candidate"]["id"]}
            for t in tasks_ok
        ],
        "graders": [usernames[w] for w in annotators],
        "organizers": [],
        "assign": False,
    }
    definition_check(definition, None)  # the campaign's own rules (slug, labels, lengths), before anything is stored
    annotations = [
        {**a, "unit": t["unit"], "task": t["id"], "username": usernames[a["completed_by"]]}
        for t in tasks_ok
        for a in t["annotations"]
    ]
    _check_values(annotations, definition["campaign"]["scheme_params"], scheme)
    return {"definition": definition, "annotations": annotations}


def labelstudio_import(*, plan: dict[str, Any], status: str = CampaignStatus.CLOSED) -> Campaign:
    """Create the planned campaign and record its annotations as imported events, all or nothing."""
    if status not in CampaignStatus.values:
        raise CampaignFileError("options", "status", status, f"must be one of {', '.join(CampaignStatus.values)}")
    with transaction.atomic():
        campaign = campaign_import(definition=plan["definition"], media_dir=None)
        units = {ext: (pk, q) for ext, pk, q in campaign.units.values_list("external_id", "pk", "query_id")}
        graders = {r.user.username: r.user for r in campaign.roles.filter(role=Role.GRADER).select_related("user")}
        pairs = list(dict.fromkeys((a["username"], a["unit"]) for a in plan["annotations"]))
        Assignment.objects.bulk_create(
            [
                Assignment(
                    campaign=campaign,
                    grader=graders[user],
                    unit_id=units[unit][0],
                    query_id=units[unit][1],
                    source=AssignmentSource.MANUAL,
                    position=pos,
                )
                for pos, (user, unit) in enumerate(pairs)
            ]
        )
        allocation_state.assignments_added(campaign=campaign)
        now = timezone.now()
        by_grader: dict[str, list[tuple[dict[str, Any], EventInput]]] = {}
        for a in plan["annotations"]:
            for event in _events(campaign, units[a["unit"]][0], a, now):
                by_grader.setdefault(a["username"], []).append((a, event))
        for username, items in by_grader.items():
            results = events_record(grader=graders[username], items=[e for _, e in items])
            for (a, _), result in zip(items, results, strict=True):
                if isinstance(result, GradingError):
                    raise CampaignFileError(a["where"], result.field or "value", result.value, result.message)
        if status != CampaignStatus.OPEN:
            campaign_set_status(campaign=campaign, status=status)
    return campaign


def _events(campaign: Campaign, unit_id: int, a: dict[str, Any], now: Any) -> list[EventInput]:
    """The annotation's events: a skip, its scheme's value event, or a BROAD/FINE pair (BROAD first)."""
    if a["cancelled"]:
        values = [(EventType.SKIP, None, "")]
    elif campaign.scheme == Scheme.BROAD_FINE:
        values = [(EventType.BROAD_SET, a["value"]["broad"], ""), (EventType.FINE_SET, a["value"]["fine"], ":fine")]
    else:
        values = [(EVENT_OF[campaign.scheme], a["value"], "")]
    out = []
    for seq, (kind, value, suffix) in enumerate(values, start=1):
        payload: dict[str, Any] = {} if kind == EventType.SKIP else {"value": value}
        payload.update(source=SOURCE, task=a["task"], annotation=a["id"])
        if a["created_at"]:
            payload["created_at"] = a["created_at"]
        out.append(
            EventInput(
                id=uuid.uuid5(EVENT_NAMESPACE, f"{campaign.pk}:{a['where']}{suffix}"),
                campaign_id=campaign.pk,
                type=kind,
                client_ts=now,  # Label Studio's own time is kept in the payload: it may lie outside the clock window
                payload=payload,
                unit_id=unit_id,
                seq=seq,
                session_id=f"{SESSION_PREFIX}{a['id']}"[:64],
            )
        )
    return out


def _task(
    task: Any, i: int, scheme: str, controls: tuple[str | None, str | None], item_field: str | None
) -> dict[str, Any]:
    where = f"tasks[{i}]"
    if not isinstance(task, dict):
        raise CampaignFileError(where, "(task)", type(task).__name__, "a task is a JSON object")
    data = task.get("data")
    if not isinstance(data, dict):
        raise CampaignFileError(where, "data", data, "a task's data is an object holding its item")
    task_id = _id(task.get("id"), where, "id", default=str(i + 1))
    key = item_field or next((k for k in ITEM_FIELDS if k in data), None)
    if key is None or key not in data:
        wanted = repr(item_field) if item_field else " or ".join(repr(k) for k in ITEM_FIELDS)
        raise CampaignFileError(
            where, "data", sorted(data), f"the task's data has no item field {wanted} (--item-field)"
        )
    value = data[key]
    if not isinstance(value, str) or not value.strip():
        raise CampaignFileError(where, f"data.{key}", value, "the item must be a non-empty string")
    kind = key if key in ITEM_FIELDS else "text"
    candidate: dict[str, Any] = {"id": _id(data.get("candidate_id"), where, "data.candidate_id", default=task_id)}
    if kind == "text":
        candidate.update(kind="text", text=value)
    elif value.startswith(("http://", "https://")):
        candidate.update(kind=kind, media_url=value)
    else:
        raise CampaignFileError(
            where,
            f"data.{key}",
            value,
            "the media must be an http(s) URL: files uploaded to Label Studio are not in its export; "
            "serve them and give their URLs",
        )
    query = None
    if "query" in data:
        text = data["query"]
        if not isinstance(text, str) or not text.strip():
            raise CampaignFileError(where, "data.query", text, "the query must be a non-empty string")
        query = {"id": _id(data.get("query_id"), where, "data.query_id", default=""), "text": text}
    annotations = task.get("annotations", [])
    if not isinstance(annotations, list):
        raise CampaignFileError(where, "annotations", annotations, "must be a list")
    return {
        "id": task_id,
        "where": where,
        "unit": _id(data.get("unit_id"), where, "data.unit_id", default=f"task-{task_id}"),
        "candidate": candidate,
        "query": query,
        "annotations": [
            _annotation(a, f"{where}.annotations[{j}]", scheme, controls) for j, a in enumerate(annotations)
        ],
    }


def _annotation(a: Any, where: str, scheme: str, controls: tuple[str | None, str | None]) -> dict[str, Any]:
    if not isinstance(a, dict):
        raise CampaignFileError(where, "(annotation)", type(a).__name__, "an annotation is a JSON object")
    who = a.get("completed_by")
    if isinstance(who, dict):  # older exports give the user as an object; only its id is kept
        who = who.get("id")
    if isinstance(who, bool) or not isinstance(who, int | str) or str(who).strip() == "":
        raise CampaignFileError(where, "completed_by", who, "the annotator's id is missing")
    who = str(who).strip()
    if not who.replace("-", "").replace("_", "").isalnum():
        raise CampaignFileError(where, "completed_by", who, "the annotator's id holds letters, digits, - and _ only")
    out = {
        "where": where,
        "id": _id(a.get("id"), where, "id", default=where),
        "completed_by": who,
        "created_at": a.get("created_at") if isinstance(a.get("created_at"), str) else "",
        "cancelled": bool(a.get("was_cancelled", False)),
        "value": None,
    }
    if out["cancelled"]:
        return out
    results = a.get("result")
    if not isinstance(results, list):
        raise CampaignFileError(where, "result", results, "must be a list of results")
    if scheme == Scheme.BROAD_FINE:
        return _broad_fine(out, results, where, controls)
    wanted = RESULT_TYPE[scheme]
    found = _pick(results, where, (wanted,), controls[0], "--from-name")
    if found is None:
        named = f" from {controls[0]!r}" if controls[0] else ""
        raise CampaignFileError(where, "result", len(results), f"no {wanted!r} result{named}")
    out["rw"], out["value"] = f"{where}.result[{found[0]}]", _value(found, where)
    return out


def _pick(
    results: list[Any], where: str, types: tuple[str, ...], from_name: str | None, option: str
) -> tuple[int, dict[str, Any]] | None:
    """The one result of these types (from the control `from_name` when given), or None."""
    mine = [
        (k, r)
        for k, r in enumerate(results)
        if isinstance(r, dict) and r.get("type") in types and (from_name is None or r.get("from_name") == from_name)
    ]
    if len(mine) > 1:
        names = sorted({str(r.get("from_name")) for _, r in mine})
        kinds = " or ".join(repr(t) for t in types)
        raise CampaignFileError(where, "result", names, f"several {kinds} results: choose one control with {option}")
    return mine[0] if mine else None


def _value(found: tuple[int, dict[str, Any]], where: str) -> Any:
    """The value of a choices (exactly one choice), rating or number result."""
    k, r = found
    rw, kind = f"{where}.result[{k}]", r["type"]
    value = r.get("value")
    if not isinstance(value, dict) or kind not in value:
        raise CampaignFileError(rw, f"value.{kind}", value, f"a {kind} result holds value.{kind}")
    v = value[kind]
    if kind == "choices":
        if not isinstance(v, list) or len(v) != 1 or not isinstance(v[0], str):
            raise CampaignFileError(rw, "value.choices", v, "a categorical judgment is exactly one choice")
        return v[0]
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise CampaignFileError(rw, f"value.{kind}", v, f"a {kind} is a number")
    return v


def _broad_fine(
    out: dict[str, Any], results: list[Any], where: str, controls: tuple[str | None, str | None]
) -> dict[str, Any]:
    """A BROAD/FINE annotation: its choices result is the BROAD, its number or rating result the FINE."""
    broad = _pick(results, where, ("choices",), controls[0], "--from-name")
    fine = _pick(results, where, FINE_TYPES, controls[1], "--fine-from-name")
    if broad is None and fine is None:
        raise CampaignFileError(
            where,
            "result",
            len(results),
            "no 'choices' result (the BROAD) and no 'number' or 'rating' result (the FINE)",
        )
    if fine is None:
        raise CampaignFileError(
            where, "result", _value(broad, where), "a BROAD without a FINE: add a 'number' or 'rating' result"
        )
    if broad is None:
        raise CampaignFileError(where, "result", _value(fine, where), "a FINE without a BROAD: add a 'choices' result")
    label, score = _value(broad, where), _value(fine, where)
    code = BROAD_OF.get(label.strip().lower())
    if code is None:
        names = ", ".join(f"{c} ({n})" for c, n in Broad.choices)
        raise CampaignFileError(f"{where}.result[{broad[0]}]", "value.choices", label, f"not a BROAD category: {names}")
    fine_where = f"{where}.result[{fine[0]}]"
    try:
        number = parse_fine(score, field=f"value.{fine[1]['type']}")
    except InvalidValue as exc:
        raise CampaignFileError(fine_where, exc.field or "value", score, "the FINE is 0–10 on the 0.1 grid") from None
    out["rw"], out["value"] = f"{where}.result[{broad[0]}]", {"broad": code, "fine": float(number)}
    return out


def _id(value: Any, where: str, field: str, *, default: str) -> str:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | str) or str(value).strip() == "":
        raise CampaignFileError(where, field, value, "an id is a number or a non-empty string")
    return str(value).strip()


def _unique_ids(found: Collector, parsed: list[dict[str, Any] | None]) -> None:
    seen: dict[str, str] = {}
    for what in ("id", "unit"):
        seen = {}
        for t in parsed:
            if t is None:
                continue
            if t[what] in seen:
                field = "id" if what == "id" else "data.unit_id"
                found.add(CampaignFileError(t["where"], field, t[what], f"the same as {seen[t[what]]}'s"))
            seen.setdefault(t[what], t["where"])
    seen = {}
    for t in parsed:
        for a in t["annotations"] if t else []:
            if a["id"] in seen:
                found.add(CampaignFileError(a["where"], "id", a["id"], f"the same as {seen[a['id']]}'s"))
            seen.setdefault(a["id"], a["where"])


def _default_params(scheme: str, tasks: list[dict[str, Any]]) -> dict[str, Any]:
    values = [a["value"] for t in tasks for a in t["annotations"] if not a["cancelled"]]
    if scheme == Scheme.CATEGORICAL:  # the labels in the order they first appear
        return {"labels": list(dict.fromkeys(values)) or ["(none)"], "ordered": False}
    if scheme == Scheme.BROAD_FINE:
        return {}  # the default FINE bands
    return {"min": min([1, *values]), "max": max([5, *values]), "step": 1}  # Label Studio's rating is 1–5 by default


def _check_values(annotations: list[dict[str, Any]], params: dict[str, Any], scheme: str) -> None:
    """Each value against the scheme, naming the annotation's result (the events would refuse it later)."""
    found = Collector()
    for a in annotations:
        if a["cancelled"]:
            continue
        if scheme == Scheme.CATEGORICAL and a["value"] not in params["labels"]:
            found.add(
                CampaignFileError(
                    a["rw"], "value.choices", a["value"], f"not one of the labels {', '.join(params['labels'])}"
                )
            )
        if scheme == Scheme.NUMERIC and not params["min"] <= a["value"] <= params["max"]:
            found.add(
                CampaignFileError(
                    a["rw"], "value.rating", a["value"], f"outside the scale {params['min']:g}–{params['max']:g}"
                )
            )
    found.raise_any()
