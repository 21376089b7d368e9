"""Plain-language explanations of every statistic the report shows: tooltips and the glossary section."""

from __future__ import annotations

from typing import NamedTuple


class Term(NamedTuple):
    key: str
    term: str
    explain: str


_TERMS = [
    Term(
        "kappa",
        "κ (Fleiss' kappa)",
        "How much more the graders agree on a category than they would by chance: "
        "1 = always the same answer, 0 = no better than chance, below 0 = worse than chance.",
    ),
    Term(
        "alpha",
        "α (Krippendorff's alpha)",
        "Agreement on the scores, allowing for chance and for missing "
        "judgments: 1 = perfect, 0 = chance. It also measures how repeatable the campaign is.",
    ),
    Term(
        "landis_koch",
        "Landis & Koch label",
        "A common reading of κ and α: below 0 poor, up to 0.20 slight, "
        "0.21–0.40 fair, 0.41–0.60 moderate, 0.61–0.80 substantial, above 0.80 almost perfect.",
    ),
    Term(
        "interval",
        "95% interval",
        "The range that holds the true value with 95% confidence, found by "
        "recomputing the figure on many resamples of the units or queries (the bootstrap).",
    ),
    Term(
        "std",
        "std (standard deviation)",
        "How far apart the judgments of one unit are, in the scale's own units: 0 = every grader gave the same score.",
    ),
    Term("dif", "dif (range)", "The highest minus the lowest judgment of a unit."),
    Term(
        "entropy",
        "entropy",
        "How spread the answers of a unit are over the possible values, in bits: 0 = all "
        "the same, higher = more different answers.",
    ),
    Term(
        "crescent",
        "crescent plot",
        "Each unit's std against its mean. Units near the ends of the scale can "
        "only vary one way, so the points usually form a crescent; units high in the middle are the confusable ones.",
    ),
    Term(
        "band67",
        "middle 67% band",
        "The std values between which the middle two thirds of the units lie: the campaign's typical precision.",
    ),
    Term(
        "confusability",
        "confusability",
        "How much the graders disagree about a unit (its std, range or "
        "entropy). Very confusable units make poor ground truth.",
    ),
    Term(
        "ed",
        "ED (evaluation discriminativeness)",
        "How much better a scoring method rates a grader's ordering "
        "than the same ordering reversed: the higher, the better the method tells good orderings from bad.",
    ),
    Term(
        "ac",
        "AC (average correlation)",
        "A system's ordering compared with each grader's ordering, and the correlations averaged.",
    ),
    Term(
        "wca",
        "WCA (weighted correlation aggregation)",
        "Like AC, but graders who agree more with the other graders count more.",
    ),
    Term(
        "rba",
        "RBA (rank-based aggregation)",
        "The graders' orderings merged into one consensus by the sum of "
        "ranks; a system's ordering is compared with that consensus.",
    ),
    Term(
        "frespa",
        "FreSPA",
        "Frequent sequential patterns: the share of the item sequences most graders agree "
        "on that the ordering also keeps. A support score from 0 (none) to 1 (all), not a correlation.",
    ),
    Term(
        "degradation",
        "% degradation",
        "How much a method's ED drops when random orderings are mixed into the "
        "graders' ones: smaller means the method copes better with careless graders.",
    ),
    Term("tau", "τ (Kendall's tau)", "Agreement of two orderings: 1 = identical, 0 = unrelated, −1 = reversed."),
    Term(
        "system_score",
        "system score",
        "The mean ground truth of the candidates a system returned for a query, "
        "averaged over queries: how good the graders judged the system's results.",
    ),
    Term(
        "friedman",
        "Friedman test",
        "Do the systems' scores differ more across queries than chance would give? "
        "A small p (below 0.05) says at least two systems differ.",
    ),
    Term(
        "ordering_w",
        "Ordering agreement (Kendall's W)",
        "How alike the graders' orderings of one query's candidates are: 1 = every grader gave the "
        "same order, 0 = no agreement at all.",
    ),
    Term(
        "kendall_w",
        "W (Kendall's W)",
        "How consistently the queries rank the systems the same way: 0 = no "
        "pattern, 1 = every query ranks them identically.",
    ),
    Term(
        "p",
        "p (p-value)",
        "The chance of a difference this large if the systems were really equal. Below 0.05 "
        "the difference is taken as real.",
    ),
    Term(
        "nemenyi",
        "Nemenyi test",
        "Compares every pair of systems by their average rank over queries, allowing for the number of pairs compared.",
    ),
    Term("group", "group letters", "Systems that share a letter cannot be told apart at this precision (p ≥ 0.05)."),
    Term(
        "pearson",
        "Pearson r",
        "How closely the system's scores follow the ground truth on a straight line: 1 = perfectly, 0 = not at all.",
    ),
    Term(
        "spearman",
        "Spearman ρ",
        "How closely the system orders the units like the ground truth does: 1 = the same order, 0 = unrelated.",
    ),
    Term(
        "ca_corr",
        "caCorr",
        "Pearson r in which confusable units count less (weight 1 − their normalised "
        "confusability), so disputed ground truth weighs less on the verdict.",
    ),
    Term(
        "rho_grader",
        "per-grader ρ",
        "The system's correlation with each grader's own scores; its spread "
        "shows how much the verdict depends on who graded.",
    ),
    Term(
        "t_test",
        "paired t-test",
        "Compares two systems' per-grader correlations grader by grader; p ≥ 0.05 means "
        "they are not distinguishable at this precision.",
    ),
    Term(
        "majority_broad",
        "consensus BROAD",
        "The most frequent BROAD answer of a unit; a tie goes to the category "
        "nearest the mean BROAD (NS = 0, SS = 1, VS = 2), then to the lower one.",
    ),
    Term(
        "resolution",
        "resolution",
        "The smallest difference in unit means that a pairwise campaign confirms in 95% of the pairs.",
    ),
    Term(
        "reproducibility",
        "reproducibility",
        "Whether a second campaign over the same units finds the same unit "
        "means (Spearman) and the same spreads (Pearson of stds).",
    ),
]
TERMS: dict[str, Term] = {t.key: t for t in _TERMS}


def glossary() -> list[Term]:
    """Every term, in alphabetical order of its name."""
    return sorted(_TERMS, key=lambda t: t.term.lstrip("κατ% ").lower())
