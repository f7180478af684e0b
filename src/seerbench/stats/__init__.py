"""The statistics home: one interval type and every interval seerbench prints.

Bottom layer: imports numpy and scipy only. Analyses (``stats``, optimization pressure,
complementarity, critique, study results, the report) and the estimators build their intervals
here; docs/statistics.md has the table of which method each quantity gets.

- :class:`Interval`: estimate, bounds, method, n, n_eff, confidence (and a note when empty);
- :func:`z_value` / :func:`confidence_of_alpha`: the one confidence convention (coverage, not alpha);
- :func:`wilson`, :func:`wilson_interval`: score interval of a proportion; :func:`t_interval`;
- :func:`clustered_summary` (one-way cluster bootstrap of a mean: questions sharing a passage),
  :func:`accuracy_summary` (Wilson, at the effective n when clustered): the main stats table;
- :func:`summarize`, :func:`summarize_many`, :func:`paired_difference`: i.i.d. and paired
  percentile bootstraps of means (:class:`Summary`); :func:`replicate_interval`: the interval of
  any statistic from its cluster-bootstrap replicates (percentile, widened to t);
- :class:`ClusterBootstrap`, :func:`cluster_mean_interval`, :func:`cluster_group_means`: the
  two-way (items x raters) cluster bootstrap, and :func:`proportion_interval` (Wilson at the
  effective n it implies), :func:`difference_interval` (MOVER);
- :func:`cluster_group_modes`, :func:`crossed_variance`, :func:`count_interval`: the same bootstrap
  per mode with small-sample corrections and Satterthwaite's df, and the quasi-Poisson score
  interval of a mean count (critiques per answer);
- :func:`t_ppf`, :func:`norm_ppf`: the quantiles of Student's t and the standard normal, as
  ``scipy.stats`` gives them (from ``scipy.special``, which imports in a fraction of the time);
"""

from seerbench.stats._cluster import (
    DEFAULT_N_BOOT as CLUSTER_N_BOOT,
)
from seerbench.stats._cluster import (
    ClusterBootstrap,
    ItemSums,
    Weights,
    bootstrap_modes,
    cluster_group_means,
    cluster_group_modes,
    cluster_mean_interval,
    codes,
    combine,
    combine_modes,
    correlation,
    count_interval,
    crossed_variance,
    difference_interval,
    group_interval,
    mode_covariances,
    proportion_interval,
    run_bootstrap,
)
from seerbench.stats._clustered import (
    accuracy_summary,
    cluster_codes,
    clustered_summary,
    paired_proportion_difference,
    sandwich_se,
)
from seerbench.stats._interval import (
    Interval,
    check_confidence,
    confidence_of_alpha,
    t_interval,
    t_interval_of,
    wilson,
    wilson_interval,
    z_value,
)
from seerbench.stats._quantile import norm_ppf, t_ppf
from seerbench.stats._summary import (
    DEFAULT_N_BOOT,
    Summary,
    bootstrap_means,
    paired_difference,
    replicate_interval,
    summarize,
    summarize_many,
    widen_to_t,
)

#: The shared type under its other name: a point estimate with its interval.
Estimate = Interval

__all__ = [
    "CLUSTER_N_BOOT",
    "DEFAULT_N_BOOT",
    "ClusterBootstrap",
    "Estimate",
    "Interval",
    "ItemSums",
    "Summary",
    "Weights",
    "accuracy_summary",
    "bootstrap_means",
    "bootstrap_modes",
    "check_confidence",
    "cluster_codes",
    "cluster_group_means",
    "cluster_group_modes",
    "cluster_mean_interval",
    "clustered_summary",
    "codes",
    "combine",
    "combine_modes",
    "confidence_of_alpha",
    "correlation",
    "count_interval",
    "crossed_variance",
    "difference_interval",
    "group_interval",
    "mode_covariances",
    "norm_ppf",
    "paired_difference",
    "paired_proportion_difference",
    "proportion_interval",
    "replicate_interval",
    "run_bootstrap",
    "sandwich_se",
    "summarize",
    "summarize_many",
    "t_interval",
    "t_interval_of",
    "t_ppf",
    "widen_to_t",
    "wilson",
    "wilson_interval",
    "z_value",
]
