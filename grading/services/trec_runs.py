"""TREC run files in, a pooled campaign definition out (no database: the importer writes it).

A run file holds one line per retrieved document, ``qid Q0 docid rank score tag``. Tolerated, as
trec_eval and ir-measures tolerate them: fields separated by any white space (tabs, several
spaces), blank lines, Windows line ends, a byte-order mark, any token in the ``Q0`` column.
Refused, naming the file, the line, the field and the value: a line without exactly six fields, a
rank that is not a whole number ≥ 0, a score that is not a finite number, a second tag in one file
(a file is one run), the same document twice for a topic, an empty file.

Each topic's documents are put in the order trec_eval scores them: by score, highest first, ties by
document id in reverse (as trec_eval and ir-measures do; the file's rank column is checked, not
used). **Depth-K pooling**: the pool of a topic is the union over the runs of their first K
documents; each pooled document becomes a candidate of the topic, with one provenance per run that
returned it within its first K documents: the run's tag as the system, its position as the rank.
Topic texts come from a ``id<TAB>text`` file, document texts from JSON lines ``{"id", "text"}`` or
``{"id", "url"}`` (an optional ``"kind"``: text, audio, image, video); without a file an item's text
is its id. Each run's score of a pooled pair becomes the system's per-unit score (SystemOutput), so
the report evaluates the runs' scores against the graders' ground truth as it does uploaded scores.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grading.models.choices import MediaKind
from grading.services.campaign_file_errors import CampaignFileError, Collector
from grading.services.campaign_files import FORMAT, read_text_file

RUN_FIELDS = ("qid", "Q0", "docid", "rank", "score", "tag")
# The definition's key for the runs' scores of the pooled pairs (imported as per-unit system scores).
SYSTEM_SCORES = "_system_scores"


@dataclass
class Run:
    """One run file: its tag and, per topic, its documents in trec_eval's order with their scores."""

    name: str
    tag: str
    topics: dict[str, list[tuple[str, float]]] = field(default_factory=dict)

    @property
    def n_lines(self) -> int:
        return sum(len(docs) for docs in self.topics.values())


def text_read(path: Path, *, name: str) -> str:
    """A file's text (UTF-8, within the import limit); its problem names it as `name`."""
    try:
        return read_text_file(path)
    except CampaignFileError as exc:
        raise CampaignFileError(f"{name} {exc.where}", exc.field or "(file)", exc.value, exc.problem) from None


def run_parse(text: str, *, name: str) -> Run:
    """Read one run file's text (`name` is how errors name the file). Raises CampaignFileError, or
    CampaignFileErrors listing every bad line."""
    found = Collector()
    tag: list[str] = []
    rows: dict[str, dict[str, float]] = defaultdict(dict)
    for number, line in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        if line.strip():
            found.run(_run_line, line, f"{name} line {number}", tag, rows)
    if not rows and not found.errors:
        found.add(CampaignFileError(f"{name}", "(file)", None, "the run file holds no lines"))
    found.raise_any()
    topics = {qid: sorted(docs.items(), key=lambda d: (-d[1], _reverse(d[0]))) for qid, docs in rows.items()}
    return Run(name=name, tag=tag[0], topics=topics)


def _reverse(docid: str) -> tuple[int, ...]:
    """A sort key putting document ids in descending order (ties of score, as trec_eval breaks them)."""
    return tuple(-ord(c) for c in docid) + (1,)


def _run_line(line: str, where: str, tag: list[str], rows: dict[str, dict[str, float]]) -> None:
    parts = line.split()
    if len(parts) != len(RUN_FIELDS):
        raise CampaignFileError(
            where, "(line)", line.strip(), f"a run line has 6 fields, qid Q0 docid rank score tag; found {len(parts)}"
        )
    qid, _, docid, rank, score, run_tag = parts
    if not rank.isdigit():
        raise CampaignFileError(where, "rank", rank, "the rank must be a whole number ≥ 0")
    try:
        value = float(score)
    except ValueError:
        raise CampaignFileError(where, "score", score, "the score must be a number") from None
    if not math.isfinite(value):
        raise CampaignFileError(where, "score", score, "the score must be a finite number")
    if not tag:
        tag.append(run_tag)
    elif run_tag != tag[0]:
        raise CampaignFileError(where, "tag", run_tag, f"a run file holds one run; the first line's tag is {tag[0]!r}")
    if docid in rows[qid]:
        raise CampaignFileError(where, "docid", docid, f"the document is listed twice for topic {qid!r}")
    rows[qid][docid] = value


def runs_check_tags(runs: list[Run]) -> None:
    """Two files may not carry the same tag: each run becomes one system."""
    seen: dict[str, str] = {}
    found = Collector()
    for run in runs:
        if run.tag in seen:
            found.add(
                CampaignFileError(run.name, "tag", run.tag, f"{seen[run.tag]} has the same tag: each run is one system")
            )
        seen.setdefault(run.tag, run.name)
    found.raise_any()


def pool(runs: list[Run], depth: int) -> dict[str, dict[str, dict[str, int]]]:
    """Depth-K pool: topic -> document -> {run tag: rank within the run (1-based)}, for the documents
    some run ranks within its first `depth`. Topics and documents in order of first appearance
    (runs in the given order, each in trec_eval's order)."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a whole number ≥ 1; got {depth!r}")
    pooled: dict[str, dict[str, dict[str, int]]] = {}
    for run in runs:
        for qid, docs in run.topics.items():
            topic = pooled.setdefault(qid, {})
            for rank, (docid, _) in enumerate(docs[:depth], start=1):
                topic.setdefault(docid, {})[run.tag] = rank
    return pooled


def topics_parse(text: str, *, name: str) -> dict[str, str]:
    """``id<TAB>text`` per line (blank lines skipped) -> {id: text}."""
    found = Collector()
    out: dict[str, str] = {}
    for number, line in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{name} line {number}"
        qid, sep, body = line.partition("\t")
        if not sep or not qid.strip() or not body.strip():
            found.add(CampaignFileError(where, "(line)", line, "a topic line is the id, a tab, then the text"))
        elif qid.strip() in out:
            found.add(CampaignFileError(where, "id", qid.strip(), "the topic is listed twice"))
        else:
            out[qid.strip()] = body.strip()
    found.raise_any()
    return out


def docs_parse(text: str, *, name: str) -> dict[str, dict[str, str]]:
    """JSON lines ``{"id", "text"}`` or ``{"id", "url"}`` (optional ``"kind"``) -> {id: item fields}."""
    found = Collector()
    out: dict[str, dict[str, str]] = {}
    for number, line in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        if line.strip():
            found.run(_doc_line, line, f"{name} line {number}", out)
    found.raise_any()
    return out


def _doc_line(line: str, where: str, out: dict[str, dict[str, str]]) -> None:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CampaignFileError(where, "(json)", line, f"not a JSON object: {exc.msg}") from None
    if not isinstance(obj, dict):
        raise CampaignFileError(where, "(json)", line, 'each line is a JSON object {"id", "text"} or {"id", "url"}')
    docid = obj.get("id")
    if not isinstance(docid, str | int) or isinstance(docid, bool) or not str(docid).strip():
        raise CampaignFileError(where, "id", docid, "each document needs an id (a string)")
    docid = str(docid).strip()
    if docid in out:
        raise CampaignFileError(where, "id", docid, "the document is listed twice")
    text, url, kind = obj.get("text", ""), obj.get("url", ""), obj.get("kind", MediaKind.TEXT)
    for key, value in (("text", text), ("url", url), ("kind", kind)):
        if not isinstance(value, str):
            raise CampaignFileError(where, key, value, "must be a string")
    if not text and not url:
        raise CampaignFileError(where, "text", None, 'a document needs "text" or "url"')
    out[docid] = {"text": text, "media_url": url, "kind": kind}


def pool_definition(
    *,
    campaign: dict[str, Any],
    runs: list[Run],
    depth: int,
    topics: dict[str, str] | None = None,
    docs: dict[str, dict[str, str]] | None = None,
    topics_name: str = "topics file",
    docs_name: str = "docs file",
) -> dict[str, Any]:
    """The campaign definition (the format of campaign files) of the depth-`depth` pool of `runs`:
    queries = topics, candidates = pooled documents with each run's rank as provenance, one unit per
    topic and pooled document, and under SYSTEM_SCORES each run's score of every pooled pair it
    retrieved (at any depth), which the importer stores as per-unit system scores. A topic or pooled
    document missing from a given texts file is an error."""
    runs_check_tags(runs)
    pooled = pool(runs, depth)
    found = Collector()
    queries = []
    for qid in pooled:
        if topics is not None and qid not in topics:
            found.add(CampaignFileError(topics_name, "id", qid, "a topic of the runs has no line in the topics file"))
        queries.append({"id": qid, "text": (topics or {}).get(qid, qid)})
    candidates: dict[str, dict[str, Any]] = {}
    for qid, documents in pooled.items():
        for docid, ranks in documents.items():
            if docid not in candidates:
                if docs is not None and docid not in docs:
                    found.add(
                        CampaignFileError(docs_name, "id", docid, "a pooled document has no line in the docs file")
                    )
                item = (docs or {}).get(docid, {"text": docid, "media_url": "", "kind": MediaKind.TEXT})
                candidates[docid] = {"id": docid, **item, "provenance": []}
            candidates[docid]["provenance"] += [{"system": tag, "query": qid, "rank": r} for tag, r in ranks.items()]
    found.raise_any()
    scores = [
        {"query": qid, "candidate": docid, "system": run.tag, "score": score}
        for run in runs
        for qid, docs in run.topics.items()
        for docid, score in docs
        if docid in pooled.get(qid, {})
    ]
    return {
        "format": FORMAT,
        "campaign": campaign,
        "systems": [{"name": run.tag, "description": f"run file {run.name}"} for run in runs],
        "queries": queries,
        "candidates": list(candidates.values()),
        SYSTEM_SCORES: scores,
    }
