"""Pure numerical metrics: numpy, scipy and pandas only, no Django.

Public functions are re-exported here; see README.md, "Metrics library".
"""

# Agreement, confusability and stability (issue 4; docs/metrics.md).
from ._checks import Undefined, category_positions, factorized_positions, reason_of  # noqa: F401
from .agreement import (  # noqa: F401
    cohen_kappa,
    confusion_matrix,
    fleiss_kappa,
    fleiss_kappa_per_category,
    landis_koch,
)
from .bootstrap import Estimate, KeptSums, cohen_kappa_ci, fleiss_kappa_ci, percentile_interval  # noqa: F401
from .confusability import (  # noqa: F401
    ca_corr,
    confusability_summary,
    ground_truth,
    metric_by_band,
    unit_confusability,
    weighted_pearson,
)
from .krippendorff import interval_alpha_ci, krippendorff_alpha, krippendorff_alpha_ci  # noqa: F401
from .patterns import (  # noqa: F401
    Chi2,
    TenthCounts,
    chi2_graders,
    chi2_independence,
    chi2_queries,
    chi2_queries_coded,
    chi2_queries_counted,
    fine_by_broad,
    fine_distributions,
    fine_within_broad,
    kind_codes,
    kind_summary,
    kinds_per_query,
    pattern_kinds,
    pattern_table,
)
from .shapes import (  # noqa: F401
    collapse_counts,
    collapse_groups,
    count_table,
    distinct_rows,
    long_to_counts,
    long_to_wide,
    wide_to_counts,
)
from .stability import (  # noqa: F401
    engagement,
    engagement_summary,
    event_flags,
    judgment_stability,
    stability_counts,
    stability_counts_add,
    stability_counts_per_grader,
    stability_summary,
)

# isort: split
# Orderings: AC/WCA/RBA, exact FreSPA, ED, noise robustness (issue 5; docs/orderings.md).
from .frespa import FrespaParams, frespa, frespa_scores, frespa_support_counts  # noqa: F401
from .orderings import (  # noqa: F401
    METHODS,
    ac_score,
    correlation_matrix,
    evaluation_discriminativeness,
    frespa_grid_search,
    kendall_tau,
    kendall_w,
    mean_pairwise_tau,
    noise_robustness,
    rba_consensus,
    rba_score,
    score_orderings,
    spearman_rho,
    wca_score,
    wca_weights,
)

# isort: split
# The campaign as a measuring instrument (docs/design.md §5.5).
from .instrument import (  # noqa: F401
    SystemComparison,
    precision,
    repeatability,
    reproducibility,
    resolution,
    system_comparison,
)

# isort: split
# Adaptive allocation policies compared by simulation (docs/design.md §5.6).
from .allocation import compare_policies, run_policy, simulate_judgments  # noqa: F401

# isort: split
# Systems in rating campaigns (docs/design.md §5.7).
from .consensus import consensus_category  # noqa: F401
from .system_scores import correlation_ci, evaluate_scores  # noqa: F401
from .systems import friedman, letter_groups, nemenyi, per_query_scores, system_scores  # noqa: F401

# isort: split
# Model-based truth: Dawid–Skene and bias + noise (docs/design.md §5.6).
from .dawid_skene import BiasNoiseResult, DawidSkeneResult, bias_noise, dawid_skene  # noqa: F401
