"""TREC runs scored against a campaign's ground truth with ir-measures (docs/design.md §5.7 for the tests).

The qrels are the campaign's own qrels export (analysis/qrels.py, the same grade mapping), read back
with ``ir_measures.read_trec_qrels``; the runs are read by ``grading.services.trec_runs`` (strict,
line-numbered errors) and handed to ir-measures as (query, document, score), which is all
``ir_measures.read_trec_run`` keeps of a run line. ir-measures computes each measure for every topic
of the qrels (a topic the run does not answer scores the measure's default, 0, as ``trec_eval -c``
counts it); the mean over those topics is what ``ir_measures.calc_aggregate`` gives. Around it:

- a percentile bootstrap interval of the mean over topics (``analysis.metrics.systems.system_scores``:
  one draw of topics shared by every run, seeded, drawn measure after measure in the given order);
- Friedman over the topics of the qrels, with Nemenyi's post hoc pairs and letter groups
  (``analysis.services.sections.systems.ranking_tests``), per measure;
- the judged fraction of each run's first k documents (ir-measures' ``Judged@k``), for every cutoff
  the measures name (10 when none does), measured on the run as given;
- when the units' confusability is given, per run and measure the four confusability-aware summaries
  over topics of docs/design.md §5.8 (``analysis.metrics.topic_confusability``): a topic's
  confusability is the mean confusability of the judged units among the documents the measure read
  (the run's first k for a measure with a cutoff, every document otherwise; after condensing when
  asked), units judged at least twice.

Unjudged documents count as non-relevant (trec_eval's convention); ``unjudged="condense"`` removes
them from the runs first (Sakai's condensed lists). Measures are ir-measures' syntax, e.g.
``nDCG@10 P@5 AP RBP(p=0.8)``; ``RBP`` without ``rel=`` is computed as ``RBP(rel=1)`` (grade ≥ 1
relevant), the form ir-measures' default providers compute, and keeps the name it was given.
"""

from __future__ import annotations

from typing import Any, Literal

import ir_measures
import numpy as np
import pandas as pd
from ir_measures.measures.base import Measure

from analysis import export, qrels
from analysis.metrics.systems import system_scores
from analysis.metrics.topic_confusability import topics_by_confusability
from analysis.models import AnalysisRun
from analysis.reports.serialize import jsonable
from analysis.services.sections.systems import ranking_tests
from grading.services.trec_runs import Run

Unjudged = Literal["nonrelevant", "condense"]
UNJUDGED = ("nonrelevant", "condense")
DEFAULT_MEASURES = "nDCG@10 P@5 AP RBP(p=0.8)"
DEFAULT_JUDGED_K = 10
# The confusability measures of §5.3 by the names the options take ("range" is the §5.3 `dif`).
CONFUSABILITY_MEASURES = {"std": "std", "entropy": "entropy", "range": "dif", "dif": "dif"}
DEFAULT_CONFUSABILITY = "std"
MIN_JUDGMENTS = 2  # a unit judged once has no disagreement to measure


class EvaluationError(ValueError):
    """The measures or the runs cannot be evaluated (says which and why)."""


def measures_split(text: str) -> list[str]:
    """The measure names of a string, split on white space outside parentheses."""
    names, depth, current = [], 0, ""
    for char in text:
        depth += (char == "(") - (char == ")")
        if char.isspace() and depth == 0:
            if current:
                names.append(current)
            current = ""
        else:
            current += char
    if current:
        names.append(current)
    return names


def measures_parse(text: str) -> list[tuple[str, Measure]]:
    """(name as given, the ir-measures measure computed) for each measure of `text`; an unknown
    measure or one no installed provider computes is refused with ir-measures' reason."""
    names = measures_split(text)
    if not names:
        raise EvaluationError(f"--measures names no measure; got {text!r} (e.g. {DEFAULT_MEASURES!r})")
    parsed = []
    for name in names:
        try:
            measure = ir_measures.parse_measure(name)
        except (ValueError, NameError, SyntaxError, TypeError) as exc:
            raise EvaluationError(f"measure {name!r}: {exc}") from None
        if measure.NAME == "RBP" and "rel" not in measure.params:
            measure = measure(rel=1)
        if not ir_measures.DefaultPipeline.supports(measure):
            raise EvaluationError(f"measure {name!r}: no installed ir-measures provider computes {measure}")
        parsed.append((name, measure))
    if len({n for n, _ in parsed}) != len(parsed):
        raise EvaluationError(f"--measures names a measure twice: {text!r}")
    return parsed


def judged_cutoffs(measures: list[tuple[str, Measure]]) -> list[int]:
    cutoffs = {m.params["cutoff"] for _, m in measures if isinstance(m.params.get("cutoff"), int)}
    return sorted(cutoffs) or [DEFAULT_JUDGED_K]


def _scored(run: Run, judged: set[tuple[str, str]] | None) -> list[ir_measures.ScoredDoc]:
    return [
        ir_measures.ScoredDoc(qid, docid, score)
        for qid, docs in run.topics.items()
        for docid, score in docs
        if judged is None or (qid, docid) in judged
    ]


def _per_topic(measures: list[Measure], qrels: list[Any], scored: list[Any]) -> dict[Measure, dict[str, float]]:
    out: dict[Measure, dict[str, float]] = {m: {} for m in measures}
    try:
        for metric in ir_measures.iter_calc(measures, qrels, scored):
            out[metric.measure][metric.query_id] = float(metric.value)
    except Exception as exc:  # a provider's own failure (e.g. an external script), named, never a traceback
        names = " ".join(str(m) for m in measures)
        raise EvaluationError(f"ir-measures could not compute {names}: {type(exc).__name__}: {exc}") from None
    return out


def _ranking(run: Run, judged: set[tuple[str, str]] | None) -> pd.DataFrame:
    """``topic``, ``doc`` and 0-based ``position`` of the run's documents as the measures see them."""
    rows = [
        (qid, docid)
        for qid, docs in run.topics.items()
        for docid, _ in docs
        if judged is None or (qid, docid) in judged
    ]
    frame = pd.DataFrame(rows, columns=["topic", "doc"])
    frame["position"] = frame.groupby("topic").cumcount()
    return frame


def _evaluated_units(ranking: pd.DataFrame, units: pd.DataFrame, measure: Measure) -> pd.DataFrame:
    """``topic`` and ``confusability`` of each judged unit among the documents `measure` reads."""
    cutoff = measure.params.get("cutoff")
    read = ranking[ranking["position"] < cutoff] if isinstance(cutoff, int) else ranking
    return read.merge(units, on=["topic", "doc"], how="inner")[["topic", "confusability"]]


def _confusability_units(confusability: pd.DataFrame, name: str) -> pd.DataFrame:
    """The units judged at least twice with their value of the measure `name` as ``confusability``."""
    if name not in CONFUSABILITY_MEASURES:
        raise EvaluationError(
            f"the confusability measure must be one of {', '.join(CONFUSABILITY_MEASURES)}; got {name!r}"
        )
    column = CONFUSABILITY_MEASURES[name]
    kept = confusability[(confusability["n"] >= MIN_JUDGMENTS) & confusability[column].notna()]
    return pd.DataFrame({"topic": kept["topic"], "doc": kept["doc"], "confusability": kept[column].astype(float)})


def runs_evaluate(
    qrels: list[ir_measures.Qrel],
    runs: list[Run],
    measures: list[tuple[str, Measure]],
    *,
    unjudged: Unjudged = "nonrelevant",
    rng: np.random.Generator,
    n_boot: int = 1000,
    confidence: float = 0.95,
    confusability: pd.DataFrame | None = None,
    confusability_measure: str = DEFAULT_CONFUSABILITY,
    threshold: float | None = None,
) -> dict[str, Any]:
    """``{"runs": [{"run", "measures": {name: {"mean", "ci_low", "ci_high", "per_topic"}}, "judged_at_k"}],
    "friedman": {name: …}, "nemenyi": {name: …}}`` (see the module docstring). With `confusability`
    (the units' ``topic``, ``doc``, ``n``, ``dif``, ``std``, ``entropy``, as
    :func:`analysis.qrels.qrels_confusability` gives them), each measure of each run also has
    ``"confusability"``: the measure used and its threshold option, the cutoff read, and the
    summaries of :func:`analysis.metrics.topic_confusability.topics_by_confusability`."""
    if unjudged not in UNJUDGED:
        raise EvaluationError(f"unjudged must be one of {', '.join(UNJUDGED)}; got {unjudged!r}")
    if threshold is not None and not threshold >= 0:
        raise EvaluationError(f"the low-confusability threshold must be a number ≥ 0; got {threshold!r}")
    units = _confusability_units(confusability, confusability_measure) if confusability is not None else None
    if not qrels:
        raise EvaluationError("the ground truth has no judged unit to evaluate against")
    tags = [run.tag for run in runs]
    if len(set(tags)) != len(tags):
        raise EvaluationError(f"two run files carry the same tag; each run needs its own: {tags}")
    judged = {(q.query_id, q.doc_id) for q in qrels}
    objects = [m for _, m in measures]
    cutoffs = judged_cutoffs(measures)
    judged_measures = [ir_measures.Judged @ k for k in cutoffs]
    per_topic: dict[str, dict[Measure, dict[str, float]]] = {}
    judged_at: dict[str, dict[str, float | None]] = {}
    rankings: dict[str, pd.DataFrame] = {}
    for run in runs:
        seen = judged if unjudged == "condense" else None
        per_topic[run.tag] = _per_topic(objects, qrels, _scored(run, seen))
        rankings[run.tag] = _ranking(run, seen)
        fractions = _per_topic(judged_measures, qrels, _scored(run, None))
        judged_at[run.tag] = {
            str(k): (float(np.mean(list(fractions[m].values()))) if fractions[m] else None)
            for k, m in zip(cutoffs, judged_measures, strict=True)
        }
    entries: dict[str, dict[str, Any]] = {
        tag: {"run": tag, "measures": {}, "judged_at_k": judged_at[tag]} for tag in tags
    }
    friedman: dict[str, Any] = {}
    nemenyi: dict[str, Any] = {}
    for name, measure in measures:
        table = pd.DataFrame({tag: pd.Series(per_topic[tag][measure], dtype=float) for tag in tags})
        table = table.sort_index()
        scored = system_scores(table, rng=rng, n_boot=n_boot, confidence=confidence) if len(table) else None
        for tag in tags:
            values = per_topic[tag][measure]
            row = scored.loc[tag] if scored is not None and values else None
            entries[tag]["measures"][name] = {
                "mean": float(np.mean(list(values.values()))) if values else None,
                "ci_low": float(row["ci_low"]) if row is not None else None,
                "ci_high": float(row["ci_high"]) if row is not None else None,
                "per_topic": {qid: values[qid] for qid in sorted(values)},
            }
            if units is not None:
                entries[tag]["measures"][name]["confusability"] = _run_confusability(
                    values, _evaluated_units(rankings[tag], units, measure), measure, confusability_measure, threshold
                )
        order = [str(s) for s in scored.index] if scored is not None else tags
        result, posthoc = ranking_tests(table, order)
        friedman[name] = result
        nemenyi[name] = posthoc
    return jsonable({"runs": [entries[tag] for tag in tags], "friedman": friedman, "nemenyi": nemenyi})


def _run_confusability(
    values: dict[str, float], evaluated: pd.DataFrame, measure: Measure, name: str, threshold: float | None
) -> dict[str, Any]:
    cutoff = measure.params.get("cutoff")
    summary = topics_by_confusability(pd.Series(values, dtype=float), evaluated, threshold=threshold)
    return {
        "measure": name,
        "cutoff": cutoff if isinstance(cutoff, int) else None,
        "threshold_chosen": threshold is not None,
        **summary,
    }


def evaluation_table(result: dict[str, Any], *, confidence: float, unjudged: Unjudged = "nonrelevant") -> str:
    """The evaluation as text: per measure the runs best first with their intervals and letter groups,
    the Friedman line, then the judged fractions."""
    lines: list[str] = []
    level = f"{confidence:.0%}"
    for name in result["runs"][0]["measures"] if result["runs"] else []:
        groups = result["nemenyi"][name].get("groups", {})
        rows = sorted(result["runs"], key=lambda r: -(r["measures"][name]["mean"] or -np.inf))
        width = max(len(r["run"]) for r in rows)
        lines.append(
            f"{name}  (mean over topics, {level} bootstrap interval; runs sharing a letter cannot be told apart)"
        )
        for r in rows:
            m = r["measures"][name]
            if m["mean"] is None:
                lines.append(f"  {r['run']:<{width}}  no topic of the qrels in this run")
                continue
            lines.append(
                f"  {r['run']:<{width}}  {m['mean']:.4f}  [{m['ci_low']:.4f}, {m['ci_high']:.4f}]  "
                f"{len(m['per_topic'])} topics  {groups.get(r['run'], '')}"
            )
        lines += confusability_lines(rows, name)
        f = result["friedman"][name]
        if "reason" in f:
            lines.append(f"  Friedman: not computed ({f['reason']})")
        elif f["statistic"] is None:
            lines.append("  Friedman: undefined (the runs tie on every topic)")
        else:
            lines.append(
                f"  Friedman χ² = {f['statistic']:.3f}, df = {f['df']}, p = {f['p']:.4g}, Kendall's W = {f['w']:.3f} "
                f"over {f['n_queries']} topics"
            )
        lines.append("")
    rule = "count as non-relevant" if unjudged == "nonrelevant" else "were removed before scoring (condensed)"
    lines.append(f"Judged fraction of each run's first k documents (unjudged documents {rule}):")
    for r in result["runs"]:
        shown = ", ".join(f"@{k} {'—' if v is None else f'{v:.3f}'}" for k, v in r["judged_at_k"].items())
        lines.append(f"  {r['run']}: {shown}")
    return "\n".join(lines) + "\n"


def _figure(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def confusability_read(conf: dict[str, Any]) -> str:
    """Which documents a topic's confusability is read from, in words."""
    where = f"first {conf['cutoff']} documents" if conf["cutoff"] is not None else "documents"
    return f"the mean {conf['measure']} of the judged units (judged twice or more) among the run's {where}"


def confusability_lines(rows: list[dict[str, Any]], name: str) -> list[str]:
    """The confusability-aware summaries of one measure, a line per run (none without them)."""
    confs = [(r["run"], r["measures"][name].get("confusability")) for r in rows]
    confs = [(run, c) for run, c in confs if c is not None]
    if not confs:
        return []
    lines = [
        f"  Confusability-aware (§5.8; a topic's confusability = {confusability_read(confs[0][1])}; "
        "bands = tertiles; weighted = topics weighted 1 − normalised confusability):"
    ]
    for run, c in confs:
        if not c["n_topics"]:
            lines.append(f"    {run}: no topic with a judged unit among the documents read")
            continue
        low = c["low_subset"]
        rule = "" if c["threshold_chosen"] else ", the median"
        bands = "; ".join(f"{b['low']:.3g}–{b['high']:.3g}: {_figure(b['mean'])} ({b['n']})" for b in c["bands"])
        lines.append(
            f"    {run}: mean {_figure(c['mean'])} over {c['n_topics']} topics "
            f"(mean confusability {c['mean_confusability']:.3f} over {c['n_units']} units); "
            f"weighted {_figure(c['weighted_mean'])}; low-confusability topics (≤ {low['threshold']:.3g}{rule}) "
            f"{_figure(low['mean'])} ({low['n']}); bands {bands}"
            + (f"; left out: {', '.join(c['topics_left_out'])}" if c["topics_left_out"] else "")
        )
    return lines


def campaign_runs_evaluate(
    *,
    run: AnalysisRun,
    runs: list[Run],
    measures_text: str,
    confusability_measure: str = DEFAULT_CONFUSABILITY,
    threshold: float | None = None,
) -> dict[str, Any]:
    """The runs scored against the ground truth of `run` (an analysis) with the scheme's default grades,
    seeded and resampled as that analysis was, confusability-aware (the report page's upload)."""
    measures = measures_parse(measures_text)
    mapping = qrels.grade_mapping(run.campaign)
    text, _ = qrels.qrels_text(run, export.Filters(), mapping)
    parameters = run.parameters or {}
    return runs_evaluate(
        list(ir_measures.read_trec_qrels(text)) if text else [],
        runs,
        measures,
        rng=np.random.default_rng(run.seed),
        n_boot=int(parameters.get("n_boot", 1000)),
        confidence=float(parameters.get("confidence", 0.95)),
        confusability=qrels.qrels_confusability(run, export.Filters(), mapping),
        confusability_measure=confusability_measure,
        threshold=threshold,
    )


def evaluation_view(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Per measure, for a page: the runs best first (mean, interval, topics, letter group) and the
    Friedman result in words."""
    out = []
    for name in result["runs"][0]["measures"] if result["runs"] else []:
        groups = result["nemenyi"][name].get("groups", {})
        rows = [
            {
                "run": r["run"],
                **r["measures"][name],
                "topics": len(r["measures"][name]["per_topic"]),
                "group": groups.get(r["run"], ""),
            }
            for r in result["runs"]
        ]
        rows.sort(key=lambda row: -(row["mean"] if row["mean"] is not None else -np.inf))
        f = result["friedman"][name]
        if "reason" in f:
            words = f"Friedman test not computed: {f['reason']}."
        elif f["statistic"] is None:
            words = "Friedman test undefined: the runs tie on every topic."
        else:
            words = (
                f"Friedman χ² = {f['statistic']:.3f}, df = {f['df']}, p = {f['p']:.4g}, Kendall's W = {f['w']:.3f} "
                f"over {f['n_queries']} topics."
            )
        out.append({"name": name, "rows": rows, "friedman": words, "confusability": _confusability_view(rows)})
    return out


def _confusability_view(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The confusability-aware figures of one measure for a page: which documents a topic's
    confusability is read from, and per run (best first) its figures with the bands in words."""
    shown = [(row["run"], row["confusability"]) for row in rows if row.get("confusability") is not None]
    if not shown:
        return None
    first = shown[0][1]
    return {
        "measure": first["measure"],
        "cutoff": first["cutoff"],
        "threshold_chosen": first["threshold_chosen"],
        "rows": [
            {
                "run": run,
                **conf,
                "band_lines": [
                    f"{b['low']:.3g}–{b['high']:.3g}: {_figure(b['mean'])} ({b['n']} topic{'s' * (b['n'] != 1)})"
                    for b in conf["bands"]
                ],
            }
            for run, conf in shown
        ],
    }
