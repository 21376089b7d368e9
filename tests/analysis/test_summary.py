"""The report's plain-language summary: every sentence shows the figure it was drawn from."""

from __future__ import annotations

from analysis.headlines import _headline
from analysis.presentation.glossary import TERMS, glossary
from analysis.presentation.summary import report_summary
from analysis.presentation.table import Table


def _result(*, friedman_p: float = 0.01, pair_p: tuple[float, float] = (0.01, 0.4)) -> dict:
    return {
        "agreement": {
            "units_excluded": 3,
            "levels": [
                {
                    "name": "3 levels",
                    "categories": ["NS", "SS", "VS"],
                    "kappa": {"value": 0.52, "ci_low": 0.44, "ci_high": 0.6, "label": "moderate"},
                    "kinds": {
                        "full": {"count": 10, "percent": 50.0},
                        "partial": {"count": 8, "percent": 40.0},
                        "none": {"count": 2, "percent": 10.0},
                    },
                }
            ],
            "alpha": {"value": 0.71, "ci_low": 0.6, "ci_high": 0.8, "label": "substantial", "scale": "FINE"},
        },
        "confusability": {"precision": {"mean_std": 1.2, "band_67": [0.5, 1.8]}},
        "graders": [
            {"pseudonym": f"G0{i}", "agreement_with_majority": share}
            for i, share in enumerate([0.8, 0.75, 0.78, 0.4], start=1)
        ],
        "systems": {
            "alpha": 0.05,
            "friedman": {"statistic": 9.1, "p": friedman_p, "n_queries": 12, "w": 0.38},
            "posthoc": {
                "pairs": [
                    {"system_a": "A", "system_b": "B", "p": pair_p[0], "distinguishable": pair_p[0] < 0.05},
                    {"system_a": "B", "system_b": "C", "p": pair_p[1], "distinguishable": pair_p[1] < 0.05},
                ]
            },
        },
    }


def test_each_sentence_shows_its_figure() -> None:
    summary = report_summary(_result())
    texts = [s.text for s in summary.findings]
    assert len(texts) == 8
    assert texts[0] == (
        "Graders agree moderately on the BROAD category: κ = 0.52 (95% interval 0.44–0.60), "
        "“moderate” on the Landis & Koch scale."
    )
    assert "α = 0.71 (95% interval 0.60–0.80)" in texts[1]
    assert texts[2].startswith("2 units (10%) are too confusable")
    assert texts[3].startswith("3 units have fewer than 2 judgments")
    assert any(
        "Grader G04 deviates: agrees with the majority on 40% of units, against a median of 76%" in t for t in texts
    )
    assert "Friedman χ² = 9.10, p = 0.010 over 12 queries (Kendall's W = 0.38)" in texts[-2]
    assert texts[-1] == "Systems A and B differ (Nemenyi p = 0.010)."


def test_next_steps_name_what_to_do() -> None:
    steps = report_summary(_result()).next_steps
    assert steps[0].startswith("5 units need more graders")
    assert steps[1].startswith("Check the judgments of G04")
    assert steps[2].startswith("Systems B and C cannot be told apart at this precision (Nemenyi p = 0.400)")


def test_systems_that_cannot_be_told_apart_are_said_so() -> None:
    summary = report_summary(_result(friedman_p=0.3))
    assert any(t.text.startswith("The judgments cannot tell the systems apart") and t.concern for t in summary.findings)


def test_an_empty_result_says_nothing_untrue() -> None:
    summary = report_summary({})
    assert summary.findings == [] and summary.next_steps == []


def test_every_term_a_sentence_or_column_names_is_in_the_glossary() -> None:
    keys = {t.key for t in glossary()}
    assert len(keys) == len(TERMS) >= 25
    findings = report_summary(_result()).findings
    assert len(findings) == 8
    for s in findings:
        assert s.term == "" or s.term in keys
    table = Table("t", [("k", "κ"), ("x", "x")], [{"k": 0.5, "x": 1}], explain={"k": "kappa"})
    cells = table.heading_cells
    assert cells[0][2] is TERMS["kappa"] and cells[1][2] is None


def test_uploaded_scores_give_a_verdict_per_pair_over_graders() -> None:
    result = _result()
    result["systems"]["uploaded"] = {
        "graders": {
            "tests": [
                {"system_a": "A", "system_b": "B", "n_graders": 6, "t": 0.97, "p": 0.37, "distinguishable": False},
                {"system_a": "A", "system_b": "C", "n_graders": 6, "t": 4.35, "p": 0.007, "distinguishable": True},
            ]
        }
    }
    texts = [s.text for s in report_summary(result).findings]
    assert (
        "By their uploaded scores, A and B are not distinguishable at this precision: paired t-test over 6 "
        "graders' correlations, t = 0.97, p = 0.370."
    ) in texts
    assert any(t.startswith("By their uploaded scores, A and C differ") for t in texts)


def test_an_ordering_campaign_summary_speaks_of_ordering_agreement_with_its_figures():
    result = {
        "agreement": {"levels": [], "alpha": {"value": float("nan"), "reason": "too few units"}},
        "orderings": {"queries": [{"kendall_w": 0.79}, {"kendall_w": 0.97}, {"kendall_w": 0.9}, {"orderings": 1}]},
    }
    findings = report_summary(result).findings
    assert len(findings) == 1
    text = findings[0].text
    assert "orderings agree well" in text and "Kendall's W is 0.90" in text and "from 0.79 to 0.97" in text
    assert "median over 3 queries" in text and findings[0].term == "ordering_w" and not findings[0].concern
    assert findings[0].explained is TERMS["ordering_w"]


def test_the_home_card_of_an_ordering_campaign_gives_its_ordering_agreement():
    run = {
        "id": 7,
        "number": 2,
        "result__agreement": {"levels": []},
        "result__orderings": {"queries": [{"kendall_w": 0.79}, {"kendall_w": 0.97}]},
    }
    headline = _headline(run)
    assert headline["ordering"] and headline["statistic"] == "Kendall's W"
    assert (headline["value"], headline["low"], headline["high"], headline["queries"]) == (0.88, 0.79, 0.97, 2)
    none_yet = _headline({**run, "result__orderings": {"queries": [{"orderings": 1}]}})
    assert none_yet["undefined"] and none_yet["reason"] == "no query has two orderings or more yet"
