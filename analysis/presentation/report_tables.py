"""The report's tables and plots, from a stored run: one source for the HTML page and the CSV downloads."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString

from analysis import plots, selectors
from analysis.metrics.consensus import consensus_category
from analysis.models import AnalysisRun
from analysis.presentation.hidden_units import hidden_units_tables  # gold and repeats (§5.6)
from analysis.presentation.instrument import instrument_plots, instrument_tables
from analysis.presentation.model_tables import model_tables  # model-based truth (§5.6)
from analysis.presentation.systems import system_plots, system_tables
from analysis.presentation.table import Table, format_duration, method_groups, method_terms

PAGE_QUERIES = selectors.PAGE_QUERIES  # the page shows the most disagreeing queries


def most_disagreeing(queries: list[dict[str, Any]], limit: int = PAGE_QUERIES) -> list[dict[str, Any]]:
    return selectors.most_disagreeing(queries, limit)


def _ci(est: dict[str, Any] | None) -> dict[str, Any]:
    est = est or {}
    return {
        "value": est.get("value"),
        "ci_low": est.get("ci_low"),
        "ci_high": est.get("ci_high"),
        "label": est.get("label"),
        "reason": est.get("reason"),
    }


def _names(result: dict[str, Any], show_names: bool) -> dict[int, str]:
    """grader id -> what this viewer may see: pseudonym, plus the username for admins."""
    pseudonyms = {int(g["grader"]): g["pseudonym"] for g in result.get("graders", [])}
    if not show_names:
        return pseudonyms
    users = dict(get_user_model().objects.filter(pk__in=pseudonyms).values_list("pk", "username"))
    return {g: f"{p} ({users.get(g, '?')})" for g, p in pseudonyms.items()}


def _agreement_tables(agreement: dict[str, Any]) -> dict[str, Table]:
    tables: dict[str, Table] = {}
    kappa_rows = [
        {"statistic": f"Fleiss' kappa, {lv['name']}", **_ci(lv["kappa"])} for lv in agreement.get("levels", [])
    ]
    if agreement.get("alpha"):
        alpha = agreement["alpha"]
        kappa_rows.append({"statistic": f"Krippendorff's alpha ({alpha['level']}, {alpha['scale']})", **_ci(alpha)})
    tables["agreement"] = Table(
        f"Agreement with {agreement.get('confidence', 0.95):.0%} bootstrap intervals",
        [
            ("statistic", "Statistic"),
            ("value", "Value"),
            ("ci_low", "CI low"),
            ("ci_high", "CI high"),
            ("label", "Landis & Koch"),
            ("reason", "Note"),
        ],
        kappa_rows,
        note=f"Units with fewer than 2 judgments are excluded: {agreement.get('units_excluded', 0)}.",
    )
    per_category = [{"level": lv["name"], **row} for lv in agreement.get("levels", []) for row in lv["per_category"]]
    tables["per_category"] = Table(
        "Per-category kappa",
        [("level", "Levels"), ("category", "Category"), ("kappa", "Kappa"), ("label", "Landis & Koch")],
        per_category,
    )
    for i, lv in enumerate(agreement.get("levels", [])):
        tables[f"patterns_{i}"] = Table(
            f"Agreement patterns, {lv['name']}",
            [("pattern", "Pattern"), ("kind", "Kind"), ("count", "Units"), ("percent", "%")],
            lv["patterns"],
        )
    chi2 = [
        {"test": name, **(agreement.get(key) or {})}
        for key, name in (
            ("chi2_graders", "graders × categories (do graders use the categories differently?)"),
            ("chi2_queries", "queries × {full, partial, none} (does disagreement vary across queries?)"),
        )
        if agreement.get(key)
    ]
    tables["chi2"] = Table(
        "Chi-squared tests", [("test", "Test"), ("chi2", "χ²"), ("df", "df"), ("p", "p"), ("reason", "Note")], chi2
    )
    return tables


def _stability_tables(stability: dict[str, Any], names: dict[int, str]) -> dict[str, Table]:
    columns = [
        ("who", "Grader"),
        ("opportunities", "Opportunities"),
        ("events", "Events"),
        ("mean_events", "Mean events"),
        ("max_events", "Max"),
        ("mode_events", "Mode"),
        ("share_at_mode", "Share at mode"),
        ("pct_changed", "% changed"),
        ("changes", "Changes"),
        ("reverts", "Reverts"),
        ("pct_reverts", "% reverts"),
        ("repeats", "Repeats"),
    ]
    tables = {}
    for scale, data in stability.get("scales", {}).items():
        rows = [{"who": "all graders", **data["overall"]}] + [
            {"who": names.get(int(r["grader"]), r["grader"]), **r} for r in data["per_grader"]
        ]
        tables[f"stability_{scale.lower()}"] = Table(
            f"Judgment stability, {scale}",
            columns,
            rows,
            note=f"Equal within ±{data['tolerance']:g}." if data["tolerance"] else "",
        )
    engagement = stability.get("engagement") or {}
    rows = [{"who": names.get(int(r["grader"]), r["grader"]), **r} for r in engagement.get("per_grader", [])]
    if engagement.get("overall"):
        o = engagement["overall"]
        rows.insert(
            0,
            {
                "who": "all graders",
                "mean_seconds": o["mean_seconds"],
                "median_seconds": o["median_seconds"],
                "mean_auditions": o["mean_auditions"],
            },
        )
    tables["engagement"] = Table(
        "Time on unit and auditions",
        [
            ("who", "Grader"),
            ("units", "Units"),
            ("mean_seconds", "Mean time"),
            ("median_seconds", "Median time"),
            ("mean_auditions", "Auditions per unit"),
        ],
        rows,
        durations=("mean_seconds", "median_seconds"),
        note="Active time only: the unit on screen and the page in focus, between the grader's interactions; "
        "a pause longer than 5 minutes counts as 5 minutes.",
    )
    return tables


def _confusability_tables(result: dict[str, Any], run: AnalysisRun) -> dict[str, Table]:
    conf = result.get("confusability") or {}
    if not conf.get("available"):
        return {}
    summary = {**conf["summary"], **{k: v for k, v in (conf.get("precision") or {}).items() if k != "band_67"}}
    band = (conf.get("precision") or {}).get("band_67") or [None, None]
    summary.update(band_low=band[0], band_high=band[1])
    tables = {
        "confusability": Table(
            "Confusability and precision",
            [
                ("n_units", "Units (≥ 2 judgments)"),
                ("n_excluded", "Excluded"),
                ("mean_dif", "Mean range"),
                ("mean_std", "Mean std"),
                ("std_std", "Std of std"),
                ("band_low", "Middle 67% of std from"),
                ("band_high", "to"),
                ("mean_entropy", "Mean entropy (bits)"),
            ],
            [summary],
        )
    }
    extremes = _extremes(conf)
    columns = [
        ("unit__external_id", "Unit"),  # the key the table's CSV has always had
        ("n", "n"),
        ("mean", "Mean"),
        ("dif", "Range"),
        ("std", "Std"),
        ("entropy", "Entropy"),
    ]
    rows = extremes["most"] + extremes["least"]
    labels = selectors.unit_labels(unit_ids=[row["unit"] for row in rows])
    for row in rows:
        row["unit__external_id"] = labels.get(row["unit"], {}).get("external_id", row["unit"])
        row["url"] = reverse("analysis:unit", args=[run.campaign_id, row["unit"]])
    if rows and rows[0].get("n_ns") is not None:  # BROAD/FINE: the consensus BROAD beside the FINE statistics
        columns += [("majority_broad", "Consensus BROAD"), ("n_ns", "NS"), ("n_ss", "SS"), ("n_vs", "VS")]
        for row, label in zip(
            rows,
            consensus_category([[r[k] or 0 for k in ("n_ns", "n_ss", "n_vs")] for r in rows], ["NS", "SS", "VS"]),
            strict=True,
        ):
            row["majority_broad"] = label
    explain = {"std": "std", "dif": "dif", "entropy": "entropy", "majority_broad": "majority_broad"}
    tables["most_confusable"] = Table(
        "Most confusable units (by std)", columns, extremes["most"], link="unit__external_id", explain=explain
    )
    tables["least_confusable"] = Table(
        "Least confusable units (by std)", columns, extremes["least"], link="unit__external_id", explain=explain
    )
    return tables


def _extremes(confusability: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The most and least confusable units the run chose (``sections.agreement.extremes``), as rows
    of their own for the tables to add to."""
    chosen = confusability.get("extremes") or {}
    return {side: [dict(row) for row in chosen.get(side) or []] for side in ("most", "least")}


def report_tables(run: AnalysisRun, *, show_names: bool, names: dict[int, str] | None = None) -> dict[str, Table]:
    """Every table of the run's report. `names` (grader id -> what the viewer sees) when the caller
    has read them already (`_names`)."""
    result = run.result or {}
    names = _names(result, show_names) if names is None else names
    overview = result.get("overview", {})
    tables = {
        "overview": Table(
            "Overview",
            [("what", "What"), ("value", "Value")],
            [{"what": k.replace("_", " ").capitalize(), "value": v} for k, v in overview.items()],
            page_rows=[
                {
                    "what": k.replace("_", " ").capitalize(),
                    "value": format_duration(v) if k == "span_seconds" and v is not None else v,
                }
                for k, v in overview.items()
            ],
            note=_overview_note(overview),
        )
    }
    tables.update(_agreement_tables(result.get("agreement", {})))
    tables.update(_stability_tables(result.get("stability", {}), names))
    tables.update(_confusability_tables(result, run))
    if result.get("fine_within_broad"):
        tables["fine_within_broad"] = Table(
            "FINE within BROAD",
            [
                ("broad", "BROAD"),
                ("n", "n"),
                ("mean", "Mean"),
                ("std", "Std"),
                ("min", "Min"),
                ("q1", "Q1"),
                ("median", "Median"),
                ("q3", "Q3"),
                ("max", "Max"),
            ],
            result["fine_within_broad"],
        )
    graders = [{**g, "who": names.get(int(g["grader"]), g["pseudonym"])} for g in result.get("graders", [])]
    usage = [k for k in (graders[0] if graders else {}) if k.startswith("usage_")]
    tables["graders"] = Table(
        "Graders",
        [
            ("who", "Grader"),
            ("judgments", "Judgments"),
            *[(k, k.removeprefix("usage_")) for k in usage],
            ("agreement_with_majority", "Agrees with majority"),
            ("score_mean", "Mean score"),
            ("score_std", "Std score"),
            ("mean_abs_deviation", "Mean |dev| from others"),
            ("events", "Events"),
            ("median_seconds", "Median time/unit"),
        ],
        graders,
        durations=("median_seconds",),
    )
    queries = result.get("queries", [])
    tables["queries"] = Table(
        "Per query",
        [
            ("label", "Query"),
            ("units", "Units"),
            ("judgments", "Judgments"),
            ("full", "Full"),
            ("partial", "Partial"),
            ("none", "None"),
            ("disagreement_pct", "% in disagreement"),
            ("mean_std", "Mean std"),
            ("mean_entropy", "Mean entropy"),
        ],
        queries,
    )
    total = result.get("queries_total", len(queries))  # the page's read holds only the shown ones
    if total > PAGE_QUERIES:
        table = tables["queries"]
        table.page_rows = most_disagreeing(queries)
        table.note = f"The {PAGE_QUERIES} of {total} queries with the most disagreement; the CSV download has them all."
    if result.get("orderings"):
        tables.update(_ordering_tables(result["orderings"]))
    tables.update(system_tables(result))
    tables.update(instrument_tables(result))
    tables.update(model_tables(result, names))
    tables.update(hidden_units_tables(result, names))
    tables.update(_excluded_table(result))
    return tables


def _overview_note(overview: dict[str, Any]) -> str:
    """What the overview counts, and whose (excluded graders are counted apart)."""
    n = overview.get("graders_excluded")
    if n is None:  # a run made before exclusions were counted apart
        return ""
    whose = (
        "Graders excluded: left out of the analysis (see Excluded graders below). " if n else "No grader is excluded. "
    )
    return (
        f"{whose}Active graders, judgments, units judged and orderings count only the graders whose judgments count"
        + (", and the row “Judgments of excluded graders” counts theirs apart" if n and "judgments" in overview else "")
        + ". Events and assignments are the event log's: everyone's, excluded graders' too. Graders: everyone "
        "with the grader role."
    )


def _excluded_table(result: dict[str, Any]) -> dict[str, Table]:
    """The graders excluded when this run was made (by an organizer, or automatically by a threshold),
    by whom and why (older runs have none)."""
    excluded = result.get("excluded_graders") or []
    if not excluded:
        return {}
    rows = [
        {
            "pseudonym": e["pseudonym"],
            "by": _excluded_by(e.get("by")),
            "reason": e["reason"],
            "excluded_at": str(e["excluded_at"] or "")[:10],
        }
        for e in excluded
    ]
    return {
        "excluded_graders": Table(
            "Excluded graders",
            [("pseudonym", "Grader"), ("by", "Excluded by"), ("reason", "Reason"), ("excluded_at", "Excluded on")],
            rows,
            note=(
                "These graders were excluded by an organizer, or automatically when their gold accuracy or their "
                "reliability in the grader model fell below the threshold the organizers set (the reason gives the "
                "figure). Their judgments stay in the event log but are left out of agreement, ground truth, the "
                "model and every table of this report, except three that say so: the overview counts their "
                "judgments apart, the gold and repeat tables show their scores marked “excluded”, and the allocation "
                "accounting counts the judgments and assignments they used up."
            ),
        )
    }


def _excluded_by(by: str | None) -> str:
    if by is None:  # a run made before the report said who
        return "—"
    return "automatically (a threshold or qualification)" if by == "automatic" else f"organizer {by}"


def _ordering_tables(orderings: dict[str, Any]) -> dict[str, Table]:
    methods = orderings.get("methods", [])
    names = orderings.get("item_labels") or {}
    queries = [
        {**q, "consensus": [names.get(i, i) for i in q.get("consensus", [])]} for q in orderings.get("queries", [])
    ]
    tables = {
        "ordering_queries": Table(
            "Consensus ordering and agreement per query (RBA)",
            [
                ("label", "Query"),
                ("orderings", "Orderings"),
                ("items", "Items"),
                ("kendall_w", "Kendall's W"),
                ("mean_pairwise_tau", "Mean pairwise τ"),
                ("consensus", "Consensus (first = most)"),
                ("problem", "Note"),
            ],
            queries,
            explain={"kendall_w": "kendall_w", "mean_pairwise_tau": "tau", "consensus": "rba"},
        )
    }
    per_grader: dict[str, list[float]] = {}
    for q in orderings.get("queries", []):
        for g in q.get("graders", []):
            per_grader.setdefault(g["pseudonym"], []).append(g["ac_tau_with_others"])
    tables["ordering_graders"] = Table(
        "Graders: agreement of each grader's orderings with the others'",
        [
            ("who", "Grader"),
            ("queries", "Queries ordered (with ≥ 1 other grader)"),
            ("mean_ac_tau", "Mean AC-τ with the others"),
        ],
        [{"who": who, "queries": len(v), "mean_ac_tau": _mean(v)} for who, v in sorted(per_grader.items())],
        note="AC-τ: the mean Kendall's τ between the grader's ordering of a query and each other grader's.",
    )
    best = orderings.get("best_method") or ""
    heading = {k: f"{k} ★" if k == best else k for k in methods}
    if orderings.get("ed"):
        tables["ed"] = Table(
            "Evaluation discriminativeness (ED) by method, mean over queries",
            [("method", "Method"), ("ed", "ED")],
            [{"method": heading[k], "ed": orderings["ed"][k]} for k in methods],
            note=f"★ {best}: the method the ED favours (highest mean ED)." if best else "",
            explain={"ed": "ed"},
        )
    if orderings.get("systems"):
        tables.update(_system_tables(orderings, methods, heading, best))
    if orderings.get("noise"):
        rows = [
            {
                "ratio": n["ratio"],
                **{f"ed_{k}": n["ed"][k] for k in methods},
                **{f"deg_{k}": n["degradation_pct"][k] for k in methods},
            }
            for n in orderings["noise"]
        ]
        tables["noise"] = Table(
            "Noise robustness: ED with random orderings added",
            [
                ("ratio", "Noise ratio"),
                *[(f"ed_{k}", f"ED {k}") for k in methods],
                *[(f"deg_{k}", f"% degr. {k}") for k in methods],
            ],
            rows,
            groups=[
                ("", 1),
                *method_groups(methods, lead=0, correlations="ED of the correlation methods", frespa="ED of FreSPA"),
                *method_groups(
                    methods, lead=0, correlations="% degradation, correlation methods", frespa="% degradation, FreSPA"
                ),
            ],
            explain={**{f"ed_{k}": "ed" for k in methods}, **{f"deg_{k}": "degradation" for k in methods}},
        )
    return tables


def _system_tables(
    orderings: dict[str, Any], methods: list[str], heading: dict[str, str], best: str
) -> dict[str, Table]:
    note = (
        f"★ marks {best}, the method the ED favours (highest mean ED over queries): trust its column most."
        if best
        else "No query has two graders' orderings yet, so no method is favoured."
    )
    score_columns = [(k, heading[k]) for k in methods]
    summary = [{"system": s["system"], "queries": s["queries"], **s["scores"]} for s in orderings["systems"]]
    per_query = [
        {"label": q["label"], "system": s["system"], **s["scores"]}
        for q in orderings.get("queries", [])
        for s in q.get("systems", [])
    ]
    groups, explain = method_groups(methods, lead=2), method_terms(methods)
    return {
        "systems": Table(
            "Systems' orderings scored by every method, mean over queries",
            [("system", "System"), ("queries", "Queries"), *score_columns],
            summary,
            note=note,
            marked=best,
            groups=groups,
            explain=explain,
        ),
        "system_scores": Table(
            "Systems' orderings scored by every method, per query",
            [("label", "Query"), ("system", "System"), *score_columns],
            per_query,
            note=note,
            marked=best,
            groups=groups,
            explain=explain,
        ),
    }


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None and math.isfinite(v)]
    return sum(kept) / len(kept) if kept else None


# Plots and tables of stored runs, kept per process: a stored run's result never changes, so they are
# made once rather than on every view of the report (the crescent's grid alone is a thousand cells).
PLOTS_KEPT = 16  # runs, for the plots and for the tables alike


class _Kept(OrderedDict):
    """Made things by key, the least recently used dropped beyond PLOTS_KEPT; safe across threads
    (two threads may both make a missing entry: the same thing, kept once)."""

    _lock = threading.Lock()

    def get_or_make(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self:
                self.move_to_end(key)
                return self[key]
        made = make()
        with self._lock:
            self[key] = made
            while len(self) > PLOTS_KEPT:
                self.popitem(last=False)
        return made


_plots_kept = _Kept()


def report_plots_of_run(run: AnalysisRun, *, variant: tuple[Any, ...] = ()) -> dict[str, SafeString]:
    """`report_plots` of a stored run's result, drawn once per process. `variant` names what the
    page laid over the stored result (the systems evaluation it shows), as part of the key."""
    return _plots_kept.get_or_make((run.pk, run.finished_at, variant), lambda: report_plots(run.result))


def report_plots(result: dict[str, Any]) -> dict[str, SafeString]:
    agreement = result.get("agreement", {})
    rows = [
        (f"κ {lv['name']}", lv["kappa"]["value"], lv["kappa"]["ci_low"], lv["kappa"]["ci_high"])
        for lv in agreement.get("levels", [])
    ]
    if agreement.get("alpha"):
        a = agreement["alpha"]
        rows.append((f"α {a['scale']}", a["value"], a["ci_low"], a["ci_high"]))
    level = agreement.get("confidence", 0.95)  # the run's confidence parameter
    out = {
        "agreement": plots.intervals(
            rows, title=f"Agreement with {level:.0%} intervals", xlabel="kappa / alpha", confidence=level
        )
    }
    if agreement.get("levels") and agreement["levels"][0]["kinds"]:  # no kinds: no unit has two judgments
        lv = agreement["levels"][0]
        out["patterns"] = plots.bars(
            ["full", "partial", "none"],
            [lv["kinds"][k]["percent"] for k in ("full", "partial", "none")],
            title=f"Agreement kinds, {lv['name']}",
            ylabel="% of units",
        )
    conf = result.get("confusability") or {}
    if conf.get("available"):
        scale = agreement.get("alpha", {}) or {}
        for measure in ("dif", "std", "entropy"):
            hist = conf["distributions"][measure]
            out[f"hist_{measure}"] = plots.histogram(
                hist["edges"], hist["counts"], title=f"Distribution of {measure}", xlabel=measure
            )
        out["crescent"] = plots.crescent(
            conf["crescent"], title="Std against mean (the crescent)", xlabel=f"mean {scale.get('scale', 'score')}"
        )
    if result.get("fine_within_broad"):
        out["fine_within_broad"] = plots.boxes(
            [{**r, "name": r["broad"]} for r in result["fine_within_broad"]],
            title="FINE within each BROAD category",
            ylabel="FINE",
        )
    graders = result.get("graders", [])
    usage = [k for k in (graders[0] if graders else {}) if k.startswith("usage_")]
    if usage:
        out["usage"] = plots.bars(
            [g["pseudonym"] for g in graders],
            [],
            title="Category usage per grader",
            ylabel="judgments",
            series=[k.removeprefix("usage_") for k in usage],
            groups=[[g[k] for g in graders] for k in usage],
        )
    if result.get("queries") and any("disagreement_pct" in q for q in result["queries"]):
        queries = result["queries"]
        total = result.get("queries_total", len(queries))
        shown = most_disagreeing(queries) if total > PAGE_QUERIES else queries
        title = "Units in disagreement per query" + (
            f" (the {PAGE_QUERIES} of {total} with the most)" if len(shown) < total else ""
        )
        out["queries"] = plots.bars(
            [q["label"] for q in shown], [q.get("disagreement_pct") for q in shown], title=title, ylabel="% of units"
        )
    if (result.get("orderings") or {}).get("ed"):
        ed = result["orderings"]["ed"]
        out["ed"] = plots.bars(list(ed), list(ed.values()), title="ED by method", ylabel="ED")
    out.update(system_plots(result))
    out.update(instrument_plots(result))
    return out


@dataclass(frozen=True)
class RenderedTables:
    """A run's report tables (for the page's conditions) and each one's figure as HTML."""

    tables: dict[str, Table]
    html: dict[str, SafeString]


_tables_kept = _Kept()


def report_tables_rendered(run: AnalysisRun, *, show_names: bool, variant: tuple[Any, ...] = ()) -> RenderedTables:
    """`report_tables` of a stored run, each written through analysis/_table.html, made once per
    process and kept for the next view: a stored run's result does not change. The key holds all
    the tables depend on besides the run: `variant` (what the page laid over the stored result, as
    for the plots) and the grader names this viewer sees (admins see user names, read anew each time,
    so a renamed account shows at once)."""
    names = _names(run.result or {}, show_names)

    def make() -> RenderedTables:
        tables = report_tables(run, show_names=show_names, names=names)
        context = {"campaign": {"pk": run.campaign_id}}
        html = {
            name: render_to_string("analysis/_table.html", {**context, "key": name, "table": table})
            for name, table in tables.items()
        }
        return RenderedTables(tables=tables, html=html)

    return _tables_kept.get_or_make((run.pk, run.finished_at, variant, tuple(sorted(names.items()))), make)
