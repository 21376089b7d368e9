"""Reading campaign definition files (JSON, or CSV plus options) into one checked definition.

A definition is a plain dict (the JSON format in README.md, "Campaign files"). `definition_check`
walks it once and raises CampaignFileError naming the row, the field and the bad value; nothing
is written to the database or to storage before the whole file has passed.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from grading import schemes
from grading.errors import InvalidValue
from grading.models.choices import CampaignStatus, MediaKind, Policy, Scheme

FORMAT = "evalutron.campaign/1"
CSV_COLUMNS = (
    "query", "query_title", "query_kind", "query_text", "query_media", "query_url",
    "candidate", "candidate_kind", "candidate_text", "candidate_media", "candidate_url", "system", "rank",
)


class CampaignFileError(InvalidValue):
    """A campaign file is malformed. `where` is a row ("line 4") or a path ("candidates[2].media")."""

    def __init__(self, where: str, field: str, value: Any, problem: str) -> None:
        shown = value if isinstance(value, str | int | float | bool | type(None)) else json.dumps(value, default=str)[:80]
        super().__init__(f"{where}, field {field!r}, value {shown!r}: {problem}", field=field, value=shown)
        self.where = where


def definition_from_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CampaignFileError(f"line {exc.lineno}", "(json)", exc.msg, "the file is not valid JSON") from None
    if not isinstance(data, dict):
        raise CampaignFileError("top level", "(json)", type(data).__name__, "a campaign file is a JSON object")
    return data


def definition_from_csv(path: Path, campaign: dict[str, Any]) -> dict[str, Any]:
    """Build a definition from a CSV of items (one row per candidate, or per query–candidate–system)."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        unknown = [c for c in header if c not in CSV_COLUMNS]
        if "candidate" not in header or unknown:
            bad = unknown[0] if unknown else "candidate"
            raise CampaignFileError("line 1", "(header)", bad, f"columns must include 'candidate' and be among {', '.join(CSV_COLUMNS)}")
        queries: dict[str, dict[str, Any]] = {}
        candidates: dict[str, dict[str, Any]] = {}
        systems: dict[str, dict[str, Any]] = {}
        for line, row in enumerate(reader, start=2):
            _csv_row(line, row, queries, candidates, systems)
    return {"format": FORMAT, "campaign": campaign, "systems": list(systems.values()),
            "queries": list(queries.values()), "candidates": list(candidates.values())}


def _csv_row(line: int, row: dict[str, Any], queries: dict, candidates: dict, systems: dict) -> None:
    where = f"line {line}"
    if None in row:
        raise CampaignFileError(where, "(row)", row[None], "the row has more fields than the header")
    cid = (row.get("candidate") or "").strip()
    if not cid:
        raise CampaignFileError(where, "candidate", row.get("candidate"), "every row needs a candidate id")
    qid = (row.get("query") or "").strip()
    if qid and qid not in queries:
        queries[qid] = {"id": qid, "title": row.get("query_title") or "", "kind": row.get("query_kind") or "text",
                        "text": row.get("query_text") or "", "media": row.get("query_media") or "",
                        "media_url": row.get("query_url") or "", "_where": where}
    cand = candidates.setdefault(cid, {
        "id": cid, "kind": row.get("candidate_kind") or "text", "text": row.get("candidate_text") or "",
        "media": row.get("candidate_media") or "", "media_url": row.get("candidate_url") or "",
        "provenance": [], "queries": [], "_where": where,
    })
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


def _str(obj: dict, key: str, where: str, *, required: bool = False, default: str = "") -> str:
    if required and obj.get(key) is None:
        raise CampaignFileError(where, key, None, "this required field is missing")
    value = obj.get(key, default)
    if value is None:
        value = default
    if not isinstance(value, str) or (required and not value.strip()):
        raise CampaignFileError(where, key, value, "a non-empty string is required" if required else "must be a string")
    return value.strip() if key in ("id", "name", "slug", "system", "query", "candidate") else value


def _list(obj: dict, key: str, where: str) -> list:
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise CampaignFileError(where, key, value, "must be a list")
    return value


def _int(obj: dict, key: str, where: str, default: int | None, *, minimum: int = 0) -> int | None:
    value = obj.get(key, default)
    if value is None and default is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise CampaignFileError(where, key, value, f"must be a whole number ≥ {minimum}")
    return value


def _object(value: Any, where: str, field: str) -> dict:
    if not isinstance(value, dict):
        raise CampaignFileError(where, field, value, "must be an object")
    return value


def definition_check(defn: dict[str, Any], media_dir: Path | None) -> dict[str, Any]:
    """Check a definition completely and return it normalised (media resolved to absolute paths)."""
    fmt = defn.get("format", FORMAT)
    if fmt != FORMAT:
        raise CampaignFileError("top level", "format", fmt, f"the only supported format is {FORMAT!r}")
    camp = _campaign(_object(defn.get("campaign"), "top level", "campaign"))
    systems = [_system(_object(s, f"systems[{i}]", "systems"), f"systems[{i}]") for i, s in enumerate(_list(defn, "systems", "top level"))]
    _unique([s["name"] for s in systems], "systems", "name")
    queries = [_item(_object(q, f"queries[{i}]", "queries"), q.get("_where", f"queries[{i}]") if isinstance(q, dict) else "", media_dir, title=True)
               for i, q in enumerate(_list(defn, "queries", "top level"))]
    _unique([q["id"] for q in queries], "queries", "id")
    candidates = [_candidate(_object(c, f"candidates[{i}]", "candidates"), i, media_dir, systems, queries)
                  for i, c in enumerate(_list(defn, "candidates", "top level"))]
    _unique([c["id"] for c in candidates], "candidates", "id")
    units = _units(defn, camp["scheme"], queries, candidates)
    people = {}
    for role in ("graders", "organizers"):
        names = _list(defn, role, "top level")
        for i, name in enumerate(names):
            if not isinstance(name, str) or not name.strip():
                raise CampaignFileError(f"{role}[{i}]", "username", name, "must be a non-empty username")
        people[role] = [n.strip() for n in names]
    assign = defn.get("assign", True)
    if not isinstance(assign, bool):
        raise CampaignFileError("top level", "assign", assign, "must be true or false")
    return {"campaign": camp, "systems": systems, "queries": queries, "candidates": candidates, "units": units,
            **people, "assign": assign}


def _campaign(c: dict[str, Any]) -> dict[str, Any]:
    where = "campaign"
    out = {k: _str(c, k, where, required=True) for k in ("name", "slug", "scheme")}
    out["description"] = _str(c, "description", where)
    guidelines = c.get("guidelines", [])
    guidelines = [guidelines] if isinstance(guidelines, str) else guidelines
    if not isinstance(guidelines, list) or not all(isinstance(g, str) for g in guidelines):
        raise CampaignFileError(where, "guidelines", guidelines, "must be a string or a list of versions (strings)")
    out["guidelines"] = guidelines
    try:
        out["scheme_params"] = schemes.normalise_params(out["scheme"], _object(c.get("scheme_params", {}), where, "scheme_params"))
    except InvalidValue as exc:
        raise CampaignFileError(where, exc.field or "scheme_params", exc.value, exc.message) from None
    for key, choices, default in (("status", CampaignStatus.values, "draft"), ("policy", Policy.values, "fixed")):
        out[key] = c.get(key, default)
        if out[key] not in choices:
            raise CampaignFileError(where, key, out[key], f"must be one of {', '.join(choices)}")
    out["initial_overlap"] = _int(c, "initial_overlap", where, 2, minimum=1)
    out["max_overlap"] = _int(c, "max_overlap", where, max(5, out["initial_overlap"]), minimum=1)
    if out["max_overlap"] < out["initial_overlap"]:
        raise CampaignFileError(where, "max_overlap", out["max_overlap"], "must be at least initial_overlap")
    out["budget"] = _int(c, "budget", where, None)
    out["policy_params"] = _object(c.get("policy_params", {}), where, "policy_params")
    return out


def _system(s: dict[str, Any], where: str) -> dict[str, Any]:
    return {"name": _str(s, "name", where, required=True), "description": _str(s, "description", where)}


def _item(obj: dict[str, Any], where: str, media_dir: Path | None, *, title: bool = False) -> dict[str, Any]:
    out = {"id": _str(obj, "id", where, required=True), "text": _str(obj, "text", where),
           "media_url": _str(obj, "media_url", where), "kind": obj.get("kind", "text") or "text"}
    if title:
        out["title"] = _str(obj, "title", where)
    if out["kind"] not in MediaKind.values:
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


def _candidate(c: dict[str, Any], i: int, media_dir: Path | None, systems: list, queries: list) -> dict[str, Any]:
    where = c.get("_where", f"candidates[{i}]")
    out = _item(c, where, media_dir)
    system_names = {s["name"] for s in systems}
    query_ids = {q["id"] for q in queries}
    out["provenance"] = []
    for j, p in enumerate(_list(c, "provenance", where)):
        pw = f"{where}.provenance[{j}]" if where.startswith("candidates") else where
        p = _object(p, pw, "provenance")
        system, query = p.get("system"), p.get("query")
        if system not in system_names:
            raise CampaignFileError(pw, "system", system, "unknown system (list it under 'systems')")
        if query is not None and query not in query_ids:
            raise CampaignFileError(pw, "query", query, "unknown query id")
        rank = _int(p, "rank", pw, None, minimum=1)
        out["provenance"].append({"system": system, "query": query, "rank": rank})
    out["queries"] = list(dict.fromkeys([q for q in c.get("queries", []) if q] + [p["query"] for p in out["provenance"] if p["query"]]))
    return out


def _unique(values: list[str], where: str, field: str) -> None:
    seen: set[str] = set()
    for i, v in enumerate(values):
        if v in seen:
            raise CampaignFileError(f"{where}[{i}]", field, v, "duplicate id")
        seen.add(v)


def _units(defn: dict[str, Any], scheme: str, queries: list, candidates: list) -> list[dict[str, Any]]:
    """Explicit units, or one per query–candidate pair (one per candidate when there are no queries)."""
    query_ids = {q["id"] for q in queries}
    cand_ids = {c["id"] for c in candidates}
    if "units" not in defn:
        if scheme == Scheme.PAIRWISE:
            raise CampaignFileError("top level", "units", None, "a pairwise campaign lists its units (pairs of candidates)")
        units = [{"id": f"{q}/{c['id']}", "query": q, "candidate": c["id"], "candidate_b": None}
                 for c in candidates for q in (c["queries"] or [None])]
        for u in units:
            if u["query"] is None:
                u["id"] = u["candidate"]
        return units
    units = []
    for i, u in enumerate(_list(defn, "units", "top level")):
        where = f"units[{i}]"
        u = _object(u, where, "units")
        unit = {"id": _str(u, "id", where, required=True), "query": u.get("query"), "candidate": u.get("candidate"),
                "candidate_b": u.get("candidate_b")}
        if unit["query"] is not None and unit["query"] not in query_ids:
            raise CampaignFileError(where, "query", unit["query"], "unknown query id")
        for key in ("candidate", "candidate_b"):
            if (unit[key] is not None or key == "candidate") and unit[key] not in cand_ids:
                raise CampaignFileError(where, key, unit[key], "unknown candidate id")
        if unit["candidate_b"] == unit["candidate"]:
            raise CampaignFileError(where, "candidate_b", unit["candidate_b"], "a pair needs two different candidates")
        if scheme == Scheme.PAIRWISE and unit["candidate_b"] is None:
            raise CampaignFileError(where, "candidate_b", None, "a pairwise unit needs candidate_b")
        units.append(unit)
    _unique([u["id"] for u in units], "units", "id")
    return units
