"""The report's systems section (rating campaigns): tables and the score plot, from the stored result."""

from __future__ import annotations

from typing import Any

from django.utils.safestring import SafeString

from analysis import plots
from analysis.presentation.table import Table

MEASURE_NAMES = {"std": "std", "dif": "range (dif)", "entropy": "entropy"}


def _interval_columns(key: str, name: str) -> list[tuple[str, str]]:
    return [(f"{key}_value", f"{name} score"), (f"{key}_low", "95% from"), (f"{key}_high", "to")]


def _score_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for s in section.get("per_system", []):
        row = {"system": s["system"], "group": s.get("group", ""), "n_queries": s["n_queries"]}
        for key, est in s["scores"].items():
            row.update({f"{key}_value": est["value"], f"{key}_low": est["ci_low"], f"{key}_high": est["ci_high"]})
        rows.append(row)
    return rows


def _scores_tables(section: dict[str, Any]) -> dict[str, Table]:
    scales = section.get("scales", [])
    columns = [("system", "System"), ("group", "Group"), ("n_queries", "Queries")]
    explain = {"group": "group"}
    for scale in scales:
        columns += _interval_columns(scale["key"], scale["name"])
        explain.update({f"{scale['key']}_value": "system_score", f"{scale['key']}_low": "interval"})
    note = (
        "; ".join(f"{s['name']}: {s['explain']}" for s in scales)
        + ". "
        + ("Systems sharing a group letter cannot be told apart at this precision (Nemenyi, p ≥ 0.05).")
    )
    tables = {
        "systems_scores": Table(
            "System scores from the candidates each system returned",
            columns,
            _score_rows(section),
            note=note,
            explain=explain,
        )
    }
    friedman = section.get("friedman") or {}
    if "statistic" in friedman:
        verdict = (
            "the systems differ"
            if friedman["p"] < section.get("alpha", 0.05)
            else "no difference between the systems is shown"
        )
        tables["systems_friedman"] = Table(
            f"Friedman test over queries ({friedman.get('scale', '')})",
            [
                ("statistic", "χ²"),
                ("df", "df"),
                ("p", "p"),
                ("w", "Kendall's W"),
                ("n_queries", "Queries"),
                ("n_systems", "Systems"),
                ("verdict", "Verdict"),
            ],
            [{**friedman, "verdict": verdict}],
            explain={"statistic": "friedman", "p": "p", "w": "kendall_w"},
            note="Only queries where every system returned a judged candidate count.",
        )
    elif friedman.get("reason"):
        tables["systems_friedman"] = Table(
            "Friedman test over queries", [("reason", "Why there is none")], [{"reason": friedman["reason"]}]
        )
    pairs = (section.get("posthoc") or {}).get("pairs", [])
    if pairs:
        tables["systems_pairs"] = Table(
            "Every pair of systems (Nemenyi post hoc on the Friedman ranks)",
            [("system_a", "System"), ("system_b", "and system"), ("p", "p"), ("verdict", "Verdict")],
            pairs,
            explain={"p": "nemenyi"},
        )
    return tables


def _uploaded_tables(uploaded: dict[str, Any]) -> dict[str, Table]:
    measure = MEASURE_NAMES.get(uploaded["measure"], uploaded["measure"])
    rows, bands = [], []
    for s in uploaded.get("per_system", []):
        low = s.get("low_subset") or {}
        rows.append(
            {
                "system": s["system"],
                "n_units": s["n_units"],
                "pearson": s["pearson"]["value"],
                "pearson_low": s["pearson"]["ci_low"],
                "pearson_high": s["pearson"]["ci_high"],
                "spearman": s["spearman"]["value"],
                "spearman_low": s["spearman"]["ci_low"],
                "spearman_high": s["spearman"]["ci_high"],
                "low_n": low.get("n"),
                "low_pearson": low.get("pearson"),
                "low_spearman": low.get("spearman"),
                "mean_confusability": s.get("mean_confusability"),
                "ca_corr": s.get("ca_corr"),
            }
        )
        bands += [{"system": s["system"], "band": f"{b['low']:.3g}–{b['high']:.3g}", **b} for b in s.get("bands", [])]
    threshold = uploaded.get("threshold")
    shown = f"{threshold:.3g}" if isinstance(threshold, int | float) else "—"
    tables = {
        "systems_uploaded": Table(
            f"Uploaded system scores against the {uploaded['aggregate']} of the judgments",
            [
                ("system", "System"),
                ("n_units", "Units"),
                ("pearson", "Pearson r"),
                ("pearson_low", "95% from"),
                ("pearson_high", "to"),
                ("spearman", "Spearman ρ"),
                ("spearman_low", "95% from"),
                ("spearman_high", "to"),
                ("low_n", "Low-confusability units"),
                ("low_pearson", "r there"),
                ("low_spearman", "ρ there"),
                ("mean_confusability", f"Mean {measure}"),
                ("ca_corr", "caCorr"),
            ],
            rows,
            explain={
                "pearson": "pearson",
                "pearson_low": "interval",
                "spearman": "spearman",
                "low_n": "confusability",
                "mean_confusability": "std",
                "ca_corr": "ca_corr",
            },
            note=f"Low-confusability units: {measure} ≤ {shown}. caCorr weighs each unit by 1 − its normalised "
            f"{measure}.",
        )
    }
    tables["systems_bands"] = Table(
        f"The same per band of {measure} (tertiles)",
        [
            ("system", "System"),
            ("band", f"{measure.capitalize()} from–to"),
            ("n", "Units"),
            ("pearson", "Pearson r"),
            ("spearman", "Spearman ρ"),
            ("mean_confusability", f"Mean {measure}"),
        ],
        bands,
        explain={"pearson": "pearson", "spearman": "spearman"},
    )
    graders = uploaded.get("graders") or {}
    if graders.get("per_system"):
        tables["systems_graders"] = Table(
            "Correlation of each system with each grader's scores",
            [
                ("system", "System"),
                ("n_graders", "Graders"),
                ("rho_min", "ρ min"),
                ("rho_max", "ρ max"),
                ("rho_mean", "ρ mean"),
                ("rho_std", "ρ std"),
                ("rho_unit_means", "ρ with unit means"),
            ],
            graders["per_system"],
            explain={"rho_mean": "rho_grader", "rho_std": "std"},
        )
        tables["systems_ttests"] = Table(
            "Paired t-tests between systems over graders",
            [
                ("system_a", "System"),
                ("system_b", "and system"),
                ("n_graders", "Graders"),
                ("t", "t"),
                ("p", "p"),
                ("verdict", "Verdict"),
            ],
            graders.get("tests", []),
            explain={"t": "t_test", "p": "p"},
        )
    return tables


def system_tables(result: dict[str, Any]) -> dict[str, Table]:
    section = result.get("systems") or {}
    if not section.get("available"):
        return {}
    tables = _scores_tables(section) if section.get("per_system") else {}
    if section.get("uploaded"):
        tables.update(_uploaded_tables(section["uploaded"]))
    return tables


def system_plots(result: dict[str, Any]) -> dict[str, SafeString]:
    section = result.get("systems") or {}
    if not section.get("per_system"):
        return {}
    scale = section["scales"][0]
    rows = [
        (
            f"{s['system']} ({s.get('group', '')})",
            s["scores"][scale["key"]]["value"],
            s["scores"][scale["key"]]["ci_low"],
            s["scores"][scale["key"]]["ci_high"],
        )
        for s in section["per_system"]
        if scale["key"] in s["scores"]
    ]
    values = [v for r in rows for v in r[1:] if v is not None]
    low, high = min(0.0, min(values, default=0.0)), max(values, default=1.0)
    high = 10.0 if scale["key"] == "fine" else high + 0.05 * (high - low or 1.0)
    return {
        "systems": plots.intervals(
            rows,
            title=f"System scores ({scale['name']}) with 95% intervals",
            xlabel=scale["explain"],
            domain=(low, high),
        )
    }
