"""The tables of the report's hidden units (docs/design.md §5.6): each grader's accuracy on gold
units and test–retest agreement on repeats, from the `hidden_units` section of a run's result."""

from __future__ import annotations

from typing import Any

from analysis.presentation.table import Table

EXCLUDED_NOTE = (
    "Excluded graders are listed too, marked “excluded”: their scores are often why they were excluded, and "
    "their judgments count nowhere else."
)


def _excluded(grader: dict[str, Any]) -> str:
    """“excluded” for a grader left out of the analysis; empty for the others (and in older runs)."""
    return "excluded" if grader.get("excluded") else ""


def hidden_units_tables(result: dict[str, Any], names: dict[int, str]) -> dict[str, Any]:
    """`gold` and `repeats` tables, each present only when the section has figures."""
    section = result.get("hidden_units") or {}
    tables: dict[str, Table] = {}
    gold = section.get("gold")
    if gold:
        mae = gold["measure"] == "mae"
        rows = [
            {
                "who": names.get(g["grader"], g["pseudonym"]),
                "n": g["n"],
                "score": g["mae" if mae else "accuracy"],
                "excluded": _excluded(g),
            }
            for g in gold["graders"]
        ]
        tables["gold"] = Table(
            "Each grader on gold units",
            [
                ("who", "Grader"),
                ("n", "Gold judgments"),
                ("score", "Mean absolute error" if mae else "Accuracy"),
                ("excluded", "Excluded"),
            ],
            rows,
            note=(
                f"{gold['units']} unit{'s' if gold['units'] != 1 else ''} have an answer set by an organizer (gold). "
                "Graders are served them like any other unit; their judgments of them are left out of agreement and "
                "ground truth. "
                + EXCLUDED_NOTE
                + " "
                + (
                    "Mean absolute error: the average distance between the grader's score and the gold "
                    "score (0 = always exact)."
                    if mae
                    else "Accuracy: the share of the grader's gold judgments equal to the gold answer."
                )
            ),
        )
    repeats = section.get("repeats")
    if repeats:
        rows = [
            {
                "who": names.get(g["grader"], g["pseudonym"]),
                "n": g["n"],
                "identical": g.get("identical"),
                "mean_abs_diff": g.get("mean_abs_diff"),
                "excluded": _excluded(g),
            }
            for g in repeats["graders"]
        ]
        columns = [("who", "Grader"), ("n", "Repeats")]
        if repeats["categorical"]:
            columns.append(("identical", "Same answer again"))
        if repeats["numeric"]:
            columns.append(("mean_abs_diff", "Mean absolute difference"))
        columns.append(("excluded", "Excluded"))
        tables["repeats"] = Table(
            "Each grader judging the same unit twice (test–retest)",
            columns,
            rows,
            note=(
                "Some units are shown again to the grader who judged them, at least 10 units later and without saying "
                "so. The second answer is kept apart: it changes neither the first judgment nor agreement or ground "
                "truth. Same answer again: the share of repeats answered with the same category as the first time. "
                "Mean absolute difference: the average distance between the two scores (0 = always the same). "
                + EXCLUDED_NOTE
            ),
        )
    return tables
