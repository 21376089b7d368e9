"""Reading campaign definition files (JSON, or CSV plus options) into one checked definition.

A definition is a plain dict (the JSON format in README.md, "Campaign files"). `definition_check`
walks it once and raises CampaignFileError naming the row, the field and the bad value, or
CampaignFileErrors listing every such problem when independent entries have several; nothing is
written to the database or to storage before the whole file has passed.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug

from grading import schemes
from grading.errors import InvalidValue
from grading.jsontext import has_surrogate, json_problem
from grading.models.choices import CampaignStatus, MediaKind, Policy, Scheme
from grading.services.campaign_file_errors import CampaignFileError, CampaignFileErrors, Collector
from grading.services.policy_params import policy_params_problems

__all__ = [
    "CampaignFileError",
    "CampaignFileErrors",
    "definition_check",
    "definition_from_csv",
    "definition_from_json",
    "read_text_file",
]

FORMAT = "evalutron.campaign/1"
CSV_COLUMNS = (
    "query",
    "query_title",
    "query_kind",
    "query_text",
    "query_media",
    "query_url",
    "candidate",
    "candidate_kind",
    "candidate_text",
    "candidate_media",
    "candidate_url",
    "system",
    "rank",
)


# Column sizes of the models the definition is written to (checked here, so that PostgreSQL never
# refuses a row halfway through an import; SQLite would silently store the longer text).
MAX_LENGTH = {
    "name": 200,
    "slug": 80,
    "scheme": 20,
    "system": 100,
    "id": 100,
    "unit": 200,
    "title": 200,
    "media_url": 500,
    "media": 200,
    "username": 150,
    "status": 10,
    "policy": 20,
}
MAX_INT = 2**31 - 1
# Where definition_from_csv leaves the problems of single rows for definition_check to report with the rest.
ROW_ERRORS = "_row_errors"
_username = UnicodeUsernameValidator()


def read_text_file(path: Path) -> str:
    """The file's text, refusing what is too large or not UTF-8 (naming the line of the first bad byte)."""
    path = Path(path)
    limit = settings.IMPORT_MAX_BYTES
    try:
        size = path.stat().st_size
        if size > limit:
            raise CampaignFileError(
                "whole file", "(size)", size, f"the file is larger than the limit of {limit} bytes (IMPORT_MAX_BYTES)"
            )
        data = path.read_bytes()
    except OSError as exc:
        raise CampaignFileError("whole file", "(file)", str(path), f"cannot be read: {exc.strerror}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CampaignFileError(
            f"line {line}",
            "(encoding)",
            data[exc.start : exc.start + 4].hex(" "),
            "the file is not UTF-8 text (save it as UTF-8)",
        ) from None


def definition_from_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_text_file(path))
    except json.JSONDecodeError as exc:
        raise CampaignFileError(f"line {exc.lineno}", "(json)", exc.msg, "the file is not valid JSON") from None
    except RecursionError:
        raise CampaignFileError("whole file", "(json)", None, "the JSON is nested too deeply") from None
    if not isinstance(data, dict):
        raise CampaignFileError("top level", "(json)", type(data).__name__, "a campaign file is a JSON object")
    return data


def definition_from_csv(path: Path, campaign: dict[str, Any]) -> dict[str, Any]:
    """Build a definition from a CSV of items (one row per candidate, or per query–candidate–system)."""
    reader = csv.DictReader(io.StringIO(read_text_file(path), newline=""))
    queries: dict[str, dict[str, Any]] = {}
    candidates: dict[str, dict[str, Any]] = {}
    systems: dict[str, dict[str, Any]] = {}
    rows = Collector()  # each row is checked on its own; the header, the size and the CSV syntax stop at once
    try:
        header = reader.fieldnames or []
        unknown = [c for c in header if c not in CSV_COLUMNS]
        if "candidate" not in header or unknown:
            bad = unknown[0] if unknown else "candidate"
            raise CampaignFileError(
                "line 1", "(header)", bad, f"columns must include 'candidate' and be among {', '.join(CSV_COLUMNS)}"
            )
        for row in reader:
            if reader.line_num > settings.IMPORT_MAX_ITEMS + 1:
                raise CampaignFileError(
                    f"line {reader.line_num}",
                    "(rows)",
                    reader.line_num - 1,
                    f"a file holds at most {settings.IMPORT_MAX_ITEMS} rows (IMPORT_MAX_ITEMS)",
                )
            rows.run(_csv_row, reader.line_num, row, queries, candidates, systems)
    except csv.Error as exc:
        rows.add(CampaignFileError(f"line {reader.line_num + 1}", "(csv)", None, f"the CSV cannot be read: {exc}"))
        rows.raise_any()
    except CampaignFileError as exc:
        rows.add(exc)
        rows.raise_any()
    # The rows' own problems wait for definition_check, which reports them with those of the values.
    return {
        "format": FORMAT,
        "campaign": campaign,
        "systems": list(systems.values()),
        "queries": list(queries.values()),
        "candidates": list(candidates.values()),
        **({ROW_ERRORS: rows.errors} if rows.errors else {}),
    }


def _csv_row(line: int, row: dict[str, Any], queries: dict, candidates: dict, systems: dict) -> None:
    where = f"line {line}"
    if None in row:
        raise CampaignFileError(where, "(row)", row[None], "the row has more fields than the header")
    cid = (row.get("candidate") or "").strip()
    if not cid:
        raise CampaignFileError(where, "candidate", row.get("candidate"), "every row needs a candidate id")
    qid = (row.get("query") or "").strip()
    if qid and qid not in queries:
        queries[qid] = {
            "id": qid,
            "title": row.get("query_title") or "",
            "kind": row.get("query_kind") or "text",
            "text": row.get("query_text") or "",
            "media": row.get("query_media") or "",
            "media_url": row.get("query_url") or "",
            "_where": where,
        }
    cand = candidates.setdefault(
        cid,
        {
            "id": cid,
            "kind": row.get("candidate_kind") or "text",
            "text": row.get("candidate_text") or "",
            "media": row.get("candidate_media") or "",
            "media_url": row.get("candidate_url") or "",
            "provenance": [],
            "queries": [],
            "_where": where,
        },
    )
    system = (row.get("system") or "").strip()
    rank_raw = (row.get("rank") or "").strip()
    rank = None
    if rank_raw:
        if not rank_raw.isdigit() or int(rank_raw) < 1:
            raise CampaignFileError(where, "rank", rank_raw, "rank must be a whole number ≥ 1")
        rank = int(rank_raw)
    if system:
        systems.setdefault(system, {"name": system})
        cand["provenance"].append({"system": system, "query": qid or None, "rank": rank})
    elif rank is not None:
        raise CampaignFileError(where, "rank", rank_raw, "a rank needs a system")
    if qid and qid not in cand["queries"]:
        cand["queries"].append(qid)


def _text(value: Any, where: str, key: str, *, max_length: int | None = None) -> None:
    if "\x00" in value or has_surrogate(value):
        raise CampaignFileError(where, key, value, "holds a NUL character or text that is not valid Unicode")
    if max_length is not None and len(value) > max_length:
        raise CampaignFileError(where, key, value, f"is longer than {max_length} characters")


def _str(
    obj: dict, key: str, where: str, *, required: bool = False, default: str = "", max_length: int | None = None
) -> str:
    if required and obj.get(key) is None:
        raise CampaignFileError(where, key, None, "this required field is missing")
    value = obj.get(key, default)
    if value is None:
        value = default
    if not isinstance(value, str) or (required and not value.strip()):
        raise CampaignFileError(where, key, value, "a non-empty string is required" if required else "must be a string")
    if key in ("id", "name", "slug", "system", "query", "candidate"):
        value = value.strip()
    _text(value, where, key, max_length=max_length or MAX_LENGTH.get(key))
    return value


def _ref(obj: dict, key: str, where: str, known: set[str], *, what: str, optional: bool = True) -> str | None:
    """An id naming another item of the file (a query, a candidate, a system), or None."""
    value = obj.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise CampaignFileError(where, key, value, f"must be a {what} (a string)")
    if value not in known:
        raise CampaignFileError(
            where, key, value, "unknown system (list it under 'systems')" if what == "system" else f"unknown {what}"
        )
    return value


def _list(obj: dict, key: str, where: str) -> list:
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise CampaignFileError(where, key, value, "must be a list")
    if len(value) > settings.IMPORT_MAX_ITEMS:
        raise CampaignFileError(
            where, key, len(value), f"holds more than {settings.IMPORT_MAX_ITEMS} entries (IMPORT_MAX_ITEMS)"
        )
    return value


def _int(
    obj: dict, key: str, where: str, default: int | None, *, minimum: int = 0, maximum: int = MAX_INT
) -> int | None:
    value = obj.get(key, default)
    if value is None and default is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise CampaignFileError(where, key, value, f"must be a whole number from {minimum} to {maximum}")
    return value


def _json_object(c: dict, key: str, where: str) -> dict:
    value = _object(c.get(key, {}), where, key)
    problem = json_problem(value, key)
    if problem:
        raise CampaignFileError(where, problem[0], problem[1], "must hold finite numbers and valid text only")
    return value


def _where(obj: Any, default: str) -> str:
    """Where an item came from: its CSV line when the CSV reader recorded one."""
    where = obj.get("_where") if isinstance(obj, dict) else None
    return where if isinstance(where, str) and where.startswith("line ") else default


def _object(value: Any, where: str, field: str) -> dict:
    if not isinstance(value, dict):
        raise CampaignFileError(where, field, value, "must be an object")
    return value


def definition_check(defn: dict[str, Any], media_dir: Path | None) -> dict[str, Any]:
    """Check a definition completely and return it normalised (media resolved to absolute paths).

    Every entry (a system, query, candidate, unit or person) is checked on its own, so one call
    reports all their problems; an entry that failed still counts as known, so that references to
    it do not add a second, misleading problem.
    """
    fmt = defn.get("format", FORMAT)
    if fmt != FORMAT:
        raise CampaignFileError("top level", "format", fmt, f"the only supported format is {FORMAT!r}")
    found = Collector()
    pending = defn.get(ROW_ERRORS)
    found.errors = [e for e in pending if isinstance(e, CampaignFileError)] if isinstance(pending, list) else []
    camp = found.run(lambda: _campaign(_object(defn.get("campaign"), "top level", "campaign")))
    systems = _entries(found, defn, "systems", lambda s, i: _system(s, f"systems[{i}]"))
    queries = _entries(found, defn, "queries", lambda q, i: _item(q, _where(q, f"queries[{i}]"), media_dir, title=True))
    known = {"system": _ids(defn, "systems", "name"), "query id": _ids(defn, "queries", "id")}
    candidates = _entries(found, defn, "candidates", lambda c, i: _candidate(c, i, media_dir, known))
    # With a broken campaign entry, a valid scheme named in it still guides the checks of the units.
    raw = defn.get("campaign")
    scheme = camp["scheme"] if camp else raw.get("scheme") if isinstance(raw, dict) else None
    known["candidate id"] = _ids(defn, "candidates", "id")
    units = found.run(_units, defn, scheme, candidates, known, found) or []
    people = {
        role: [n.strip() for n in _entries(found, defn, role, lambda n, i, r=role: _username_check(n, f"{r}[{i}]"))]
        for role in ("graders", "organizers")
    }
    assign = defn.get("assign", True)
    if not isinstance(assign, bool):
        found.add(CampaignFileError("top level", "assign", assign, "must be true or false"))
    found.in_line_order()  # a CSV's problems in the order of its lines (JSON entries keep their order)
    found.raise_any()
    return {
        "campaign": camp,
        "systems": systems,
        "queries": queries,
        "candidates": candidates,
        "units": units,
        **people,
        "assign": assign,
    }


def _entries(found: Collector, defn: dict[str, Any], key: str, check: Callable[[Any, int], Any]) -> list:
    """The checked entries of the list `defn[key]`; each entry's problem is noted and the entry left out.
    Entries of the object lists must be objects; ids that repeat are reported at each repetition."""
    entries = found.run(_list, defn, key, "top level") or []
    objects = key in ("systems", "queries", "candidates", "units")
    out = [
        found.run(lambda e=e, i=i: check(_object(e, f"{key}[{i}]", key) if objects else e, i))
        for i, e in enumerate(entries)
    ]
    if objects:
        id_key = "name" if key == "systems" else "id"
        _unique(found, [(i, o[id_key]) for i, o in enumerate(out) if o is not None], key, id_key)
    return [o for o in out if o is not None]


def _ids(defn: dict[str, Any], key: str, id_key: str) -> set[str]:
    """The ids an entry list declares, whether or not the entries passed their checks."""
    entries = defn.get(key)
    return (
        {e[id_key].strip() for e in entries if isinstance(e, dict) and isinstance(e.get(id_key), str)}
        if isinstance(entries, list)
        else set()
    )


def _username_check(name: Any, where: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise CampaignFileError(where, "username", name, "must be a non-empty username")
    _text(name, where, "username", max_length=MAX_LENGTH["username"])
    try:
        _username(name.strip())
    except ValidationError:
        raise CampaignFileError(
            where, "username", name, "a username holds letters, digits and @ . + - _ only"
        ) from None
    return name


def _campaign(c: dict[str, Any]) -> dict[str, Any]:
    where = "campaign"
    out = {k: _str(c, k, where, required=True) for k in ("name", "slug", "scheme")}
    try:
        validate_slug(out["slug"])
    except ValidationError:
        raise CampaignFileError(where, "slug", out["slug"], "a slug holds letters, digits, - and _ only") from None
    if out["scheme"] not in Scheme.values:
        raise CampaignFileError(where, "scheme", out["scheme"], f"must be one of {', '.join(Scheme.values)}")
    out["description"] = _str(c, "description", where)
    guidelines = c.get("guidelines", [])
    guidelines = [guidelines] if isinstance(guidelines, str) else guidelines
    if not isinstance(guidelines, list) or not all(isinstance(g, str) for g in guidelines):
        raise CampaignFileError(where, "guidelines", guidelines, "must be a string or a list of versions (strings)")
    for i, text in enumerate(guidelines):
        _text(text, where, f"guidelines[{i}]")
    out["guidelines"] = guidelines
    params = _json_object(c, "scheme_params", where)
    try:
        out["scheme_params"] = schemes.normalise_params(out["scheme"], params)
    except InvalidValue as exc:
        raise CampaignFileError(where, exc.field or "scheme_params", exc.value, exc.message) from None
    for key, choices, default in (("status", CampaignStatus.values, "draft"), ("policy", Policy.values, "fixed")):
        out[key] = c.get(key, default)
        if not isinstance(out[key], str) or out[key] not in choices:
            raise CampaignFileError(where, key, out[key], f"must be one of {', '.join(choices)}")
    out["initial_overlap"] = _int(c, "initial_overlap", where, 2, minimum=1, maximum=100)
    out["max_overlap"] = _int(c, "max_overlap", where, max(5, out["initial_overlap"]), minimum=1, maximum=100)
    if out["max_overlap"] < out["initial_overlap"]:
        raise CampaignFileError(where, "max_overlap", out["max_overlap"], "must be at least initial_overlap")
    out["budget"] = _int(c, "budget", where, None, minimum=1)
    out["policy_params"] = _json_object(c, "policy_params", where)
    for field, value, problem in policy_params_problems(params=out["policy_params"], scheme=out["scheme"]):
        raise CampaignFileError(where, field, value, problem)  # the first, as for the other settings
    return out


def _system(s: dict[str, Any], where: str) -> dict[str, Any]:
    return {
        "name": _str(s, "name", where, required=True, max_length=MAX_LENGTH["system"]),
        "description": _str(s, "description", where),
    }


def _item(obj: dict[str, Any], where: str, media_dir: Path | None, *, title: bool = False) -> dict[str, Any]:
    out = {
        "id": _str(obj, "id", where, required=True),
        "text": _str(obj, "text", where),
        "media_url": _str(obj, "media_url", where),
        "kind": obj.get("kind", "text") or "text",
    }
    if title:
        out["title"] = _str(obj, "title", where)
    if not isinstance(out["kind"], str) or out["kind"] not in MediaKind.values:
        raise CampaignFileError(where, "kind", out["kind"], f"must be one of {', '.join(MediaKind.values)}")
    if out["media_url"] and not out["media_url"].startswith(("http://", "https://")):
        raise CampaignFileError(where, "media_url", out["media_url"], "must be an http(s) URL")
    out["media"] = _media(_str(obj, "media", where), where, media_dir)
    if out["kind"] != MediaKind.TEXT and not (out["media"] or out["media_url"]):
        raise CampaignFileError(where, "media", "", f"a {out['kind']} item needs a media file or a media_url")
    if out["kind"] == MediaKind.TEXT and not (out["text"] or out["media"] or out["media_url"]):
        raise CampaignFileError(where, "text", "", "a text item needs its text")
    return out


def _media(name: str, where: str, media_dir: Path | None) -> Path | None:
    if not name:
        return None
    if media_dir is None:
        raise CampaignFileError(where, "media", name, "a media file was named but no media folder was given")
    root = Path(media_dir).resolve()
    path = (root / name).resolve()
    if root not in path.parents:
        raise CampaignFileError(where, "media", name, "media paths must stay inside the media folder")
    if not path.is_file():
        raise CampaignFileError(where, "media", name, f"no such file in {root}")
    return path


def _candidate(c: dict[str, Any], i: int, media_dir: Path | None, known: dict[str, set[str]]) -> dict[str, Any]:
    where = _where(c, f"candidates[{i}]")
    out = _item(c, where, media_dir)
    system_names, query_ids = known["system"], known["query id"]
    out["provenance"] = []
    for j, p in enumerate(_list(c, "provenance", where)):
        pw = f"{where}.provenance[{j}]" if where.startswith("candidates") else where
        p = _object(p, pw, "provenance")
        system = _ref(p, "system", pw, system_names, what="system", optional=False)
        query = _ref(p, "query", pw, query_ids, what="query id")
        rank = _int(p, "rank", pw, None, minimum=1)
        out["provenance"].append({"system": system, "query": query, "rank": rank})
    listed = [
        _ref({"query": q}, "query", f"{where}.queries[{j}]", query_ids, what="query id")
        for j, q in enumerate(_list(c, "queries", where))
        if q
    ]
    out["queries"] = list(dict.fromkeys(listed + [p["query"] for p in out["provenance"] if p["query"]]))
    return out


def _unique(found: Collector, values: list[tuple[int, str]], where: str, field: str) -> None:
    """Note every entry whose id an earlier entry already has."""
    seen: set[str] = set()
    for i, v in values:
        if v in seen:
            found.add(CampaignFileError(f"{where}[{i}]", field, v, "duplicate id"))
        seen.add(v)


def _units(
    defn: dict[str, Any], scheme: Any, candidates: list, known: dict[str, set[str]], found: Collector
) -> list[dict[str, Any]]:
    """Explicit units, or one per query–candidate pair (one per candidate when there are no queries)."""
    if "units" not in defn:
        if scheme == Scheme.PAIRWISE:
            raise CampaignFileError(
                "top level", "units", None, "a pairwise campaign lists its units (pairs of candidates)"
            )
        units = [
            {"id": f"{q}/{c['id']}", "query": q, "candidate": c["id"], "candidate_b": None}
            for c in candidates
            for q in (c["queries"] or [None])
        ]
        for u in units:
            if u["query"] is None:
                u["id"] = u["candidate"]
            if len(u["id"]) > MAX_LENGTH["unit"]:
                found.add(
                    CampaignFileError(
                        "units",
                        "id",
                        u["id"],
                        f"query id and candidate id together are longer "
                        f"than a unit id may be ({MAX_LENGTH['unit']} characters)",
                    )
                )
        return units
    return _entries(found, defn, "units", lambda u, i: _unit(u, f"units[{i}]", scheme, known))


def _unit(u: dict[str, Any], where: str, scheme: Any, known: dict[str, set[str]]) -> dict[str, Any]:
    unit = {
        "id": _str(u, "id", where, required=True, max_length=MAX_LENGTH["unit"]),
        "query": _ref(u, "query", where, known["query id"], what="query id"),
        "candidate": _ref(u, "candidate", where, known["candidate id"], what="candidate id", optional=False),
        "candidate_b": _ref(u, "candidate_b", where, known["candidate id"], what="candidate id"),
    }
    if unit["candidate_b"] == unit["candidate"]:
        raise CampaignFileError(where, "candidate_b", unit["candidate_b"], "a pair needs two different candidates")
    if scheme == Scheme.PAIRWISE and unit["candidate_b"] is None:
        raise CampaignFileError(where, "candidate_b", None, "a pairwise unit needs candidate_b")
    return unit
