"""The plain-language summary at the top of the report: "Can I trust these judgments?"

Every sentence is generated from one figure of the stored result and shows it (docs/design.md §5.7),
so the words can never drift from the numbers. Each comes with the glossary term that explains it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from analysis.presentation.glossary import TERMS, Term

AGREE_WORDS = {
    "poor": "poorly",
    "slight": "only slightly",
    "fair": "fairly",
    "moderate": "moderately",
    "substantial": "substantially",
    "almost perfect": "almost perfectly",
}
# A grader deviates when their agreement with the majority falls this far below the graders' median.
DEVIATION_SHARE = 0.8


@dataclass(frozen=True)
class Sentence:
    text: str
    term: str = ""  # the glossary key of the statistic the sentence reports
    concern: bool = False  # the figure asks for attention

    @property
    def explained(self) -> Term | None:
        return TERMS.get(self.term)


@dataclass
class Summary:
    findings: list[Sentence] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)


def _num(value: Any, digits: int = 2) -> str:
    return f"{value:.{digits}f}"


def _interval(est: dict[str, Any]) -> str:
    if est.get("ci_low") is None or est.get("ci_high") is None or math.isnan(est["ci_low"]):
        return ""
    return f" (95% interval {_num(est['ci_low'])}–{_num(est['ci_high'])})"


def _defined(est: dict[str, Any] | None) -> bool:
    return bool(est) and isinstance(est.get("value"), int | float) and not math.isnan(est["value"])


def _agreement(agreement: dict[str, Any], out: Summary) -> None:
    levels = agreement.get("levels") or []
    if levels and _defined(levels[0]["kappa"]):
        kappa = levels[0]["kappa"]
        what = "the BROAD category" if levels[0]["categories"] == ["NS", "SS", "VS"] else "the category"
        out.findings.append(
            Sentence(
                f"Graders agree {AGREE_WORDS.get(kappa['label'], kappa['label'])} on {what}: κ = {_num(kappa['value'])}"
                f"{_interval(kappa)}, “{kappa['label']}” on the Landis & Koch scale.",
                "kappa",
                concern=kappa["value"] <= 0.4,
            )
        )
    alpha = agreement.get("alpha")
    if _defined(alpha):
        out.findings.append(
            Sentence(
                f"On the {alpha['scale']} scale they agree {AGREE_WORDS.get(alpha['label'], alpha['label'])}: "
                f"α = {_num(alpha['value'])}{_interval(alpha)}.",
                "alpha",
                concern=alpha["value"] <= 0.4,
            )
        )


def _confusable(result: dict[str, Any], out: Summary) -> None:
    agreement = result.get("agreement") or {}
    levels = agreement.get("levels") or []
    thin = int(
        agreement.get("units_excluded") or (result.get("confusability") or {}).get("summary", {}).get("n_excluded") or 0
    )
    none = levels[0]["kinds"].get("none", {}) if levels and levels[0].get("kinds") else {}
    if none:
        out.findings.append(
            Sentence(
                f"{none['count']} units ({_num(none['percent'], 0)}%) are too confusable to use as they stand: "
                "every grader chose a different category.",
                "confusability",
                concern=none["count"] > 0,
            )
        )
    if thin:
        out.findings.append(
            Sentence(
                f"{thin} units have fewer than 2 judgments, so their agreement is unknown.",
                "confusability",
                concern=True,
            )
        )
    if none.get("count", 0) + thin:
        out.next_steps.append(
            f"{none.get('count', 0) + thin} units need more graders (the confusable ones and "
            "those with fewer than 2 judgments)."
        )
    precision = (result.get("confusability") or {}).get("precision")
    if precision:
        low, high = precision["band_67"]
        out.findings.append(
            Sentence(
                f"A typical unit's judgments spread by std = {_num(precision['mean_std'])}; two thirds of the units "
                "lie "
                f"between {_num(low)} and {_num(high)}.",
                "band67",
            )
        )


def _graders(graders: list[dict[str, Any]], out: Summary) -> None:
    shares = [g["agreement_with_majority"] for g in graders if g.get("agreement_with_majority") is not None]
    if len(shares) < 3:
        return
    middle = median(shares)
    deviating = [g for g in graders if (g.get("agreement_with_majority") or 1) < DEVIATION_SHARE * middle]
    for g in deviating:
        out.findings.append(
            Sentence(
                f"Grader {g['pseudonym']} deviates: agrees with the majority on "
                f"{_num(100 * g['agreement_with_majority'], 0)}% "
                f"of units, against a median of {_num(100 * middle, 0)}% over all graders.",
                "",
                concern=True,
            )
        )
    if deviating:
        names = ", ".join(g["pseudonym"] for g in deviating)
        out.next_steps.append(f"Check the judgments of {names} (read the guidelines with them, or weigh them less).")
    else:
        out.findings.append(
            Sentence(
                f"No grader deviates: each agrees with the majority on at least "
                f"{_num(100 * min(shares), 0)}% of units (median {_num(100 * middle, 0)}%)."
            )
        )


def _systems(section: dict[str, Any], out: Summary) -> None:
    friedman = section.get("friedman") or {}
    if "statistic" not in friedman:
        return
    apart = friedman["p"] < section.get("alpha", 0.05)
    out.findings.append(
        Sentence(
            f"The judgments {'can' if apart else 'cannot'} tell the systems apart: Friedman χ² = "
            f"{_num(friedman['statistic'])}, "
            f"p = {_num(friedman['p'], 3)} over {friedman['n_queries']} queries (Kendall's W = {_num(friedman['w'])}).",
            "friedman",
            concern=not apart,
        )
    )
    for pair in (section.get("posthoc") or {}).get("pairs", []):
        if not pair["distinguishable"]:
            out.next_steps.append(
                f"Systems {pair['system_a']} and {pair['system_b']} cannot be told apart at this "
                f"precision (Nemenyi p = {_num(pair['p'], 3)}): more queries or graders would be needed."
            )
        else:
            out.findings.append(
                Sentence(
                    f"Systems {pair['system_a']} and {pair['system_b']} differ (Nemenyi p = {_num(pair['p'], 3)}).",
                    "nemenyi",
                )
            )


def _uploaded(section: dict[str, Any], out: Summary) -> None:
    """Uploaded per-unit scores: which pairs the graders' correlations cannot separate (paired t-tests)."""
    tests = ((section.get("uploaded") or {}).get("graders") or {}).get("tests") or []
    for test in tests:
        p = test.get("p")
        if p is None or (isinstance(p, float) and math.isnan(p)):
            continue
        verdict = "differ" if test["distinguishable"] else "are not distinguishable at this precision"
        out.findings.append(
            Sentence(
                f"By their uploaded scores, {test['system_a']} and {test['system_b']} {verdict}: paired t-test over "
                f"{test['n_graders']} graders' correlations, t = {_num(test['t'])}, p = {_num(p, 3)}.",
                "t_test",
                concern=not test["distinguishable"],
            )
        )


# Below this median ordering agreement, the orderings are worth a look.
ORDERING_CONCERN = 0.5


def ordering_agreement(orderings: dict[str, Any]) -> dict[str, Any] | None:
    """Kendall's W of the graders' orderings per query (queries with two orderings or more): the
    median, lowest and highest, and the number of queries; None when no query has two orderings."""
    ws = [
        q["kendall_w"]
        for q in orderings.get("queries") or []
        if isinstance(q.get("kendall_w"), int | float) and not math.isnan(q["kendall_w"])
    ]
    if not ws:
        return None
    return {"median": median(ws), "low": min(ws), "high": max(ws), "queries": len(ws)}


def _orderings(orderings: dict[str, Any], out: Summary) -> None:
    w = ordering_agreement(orderings)
    if w is None:
        return
    spread = f", from {_num(w['low'])} to {_num(w['high'])}" if w["queries"] > 1 else ""
    how = "well" if w["median"] >= 0.7 else "moderately" if w["median"] >= ORDERING_CONCERN else "little"
    queries = f"{w['queries']} quer{'ies' if w['queries'] != 1 else 'y'}"
    out.findings.append(
        Sentence(
            f"Graders' orderings agree {how}: Kendall's W is {_num(w['median'])} (median over {queries}"
            f"{spread}; 1 = the same order from every grader).",
            "ordering_w",
            concern=w["median"] < ORDERING_CONCERN,
        )
    )


def report_summary(result: dict[str, Any]) -> Summary:
    """The summary's sentences, each drawn from a figure of the stored result."""
    out = Summary()
    _agreement(result.get("agreement") or {}, out)
    _orderings(result.get("orderings") or {}, out)
    _confusable(result, out)
    _graders(result.get("graders") or [], out)
    _systems(result.get("systems") or {}, out)
    _uploaded(result.get("systems") or {}, out)
    return out
