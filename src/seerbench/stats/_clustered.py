"""Means of per-question values when questions share a cluster (a passage), and judge accuracy by
Wilson's interval: what the main ``seerbench stats`` table prints.

Questions on one passage are not independent: their values share the passage's difficulty, so an
i.i.d. bootstrap over questions is too narrow. :func:`clustered_summary` resamples whole clusters
(a one-way cluster bootstrap, percentile interval of ``sum of cluster sums / sum of cluster
sizes``, widened where needed to the t interval on g - 1 degrees of freedom with the cluster-robust
SE: with 10 passages the percentile interval alone covered 0.87); with every question its own
cluster it is exactly :func:`summarize` (same draws).

:func:`accuracy_summary` gives a mean of values in [0, 1] (judge accuracy) Wilson's interval at the
effective sample size ``p (1 - p) / V``, ``V`` the cluster-robust (sandwich) variance of the mean,
capped at the number of values; at 0 or 1, where ``V`` is 0 and says nothing, at the number of
clusters. With 0/1 values and no shared cluster it is the plain Wilson interval at n. A percentile
interval would collapse to [1, 1] on 12 of 12 correct; Wilson's gives [0.76, 1].
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from seerbench.stats._cluster import difference_interval, proportion_interval
from seerbench.stats._interval import check_confidence, wilson
from seerbench.stats._summary import (
    DEFAULT_N_BOOT,
    ONE_CLUSTER,
    Summary,
    all_equal,
    bootstrap_means,
    summarize,
    widen_to_t,
)


def cluster_codes(labels: Sequence[object] | np.ndarray | None, n: int) -> tuple[np.ndarray, int]:
    """Integer codes 0..g-1 of ``n`` cluster labels (None, or a label None or < 0 for an integer
    label: the value is its own cluster) and g."""
    if labels is None:
        return np.arange(n, dtype=np.int64), n
    if len(labels) != n:
        raise ValueError(f"{len(labels)} cluster labels for {n} values")
    first: dict[object, int] = {}
    out = np.empty(n, dtype=np.int64)
    for i, c in enumerate(labels):
        own = c is None or (isinstance(c, int | np.integer) and int(c) < 0)
        out[i] = len(first) if own else first.setdefault(c, len(first))
        if own:
            first[("own", i)] = out[i]
    return out, len(first)


def sandwich_se(x: np.ndarray, codes: np.ndarray, g: int) -> float:
    """Cluster-robust standard error of the mean of ``x`` (``std / sqrt(n)`` with one value a
    cluster); NaN with fewer than two clusters."""
    n = x.size
    if g < 2 or n < 2:
        return math.nan if n >= 2 else 0.0
    t = np.bincount(codes, weights=x - x.mean(), minlength=g)
    return math.sqrt(g / (g - 1) * float((t * t).sum())) / n


def clustered_summary(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[object] | np.ndarray | None = None,
    *,
    confidence: float = 0.95,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> Summary:
    """Mean of ``values`` with a one-way cluster-bootstrap percentile CI (see the module
    docstring); :func:`summarize` itself when no two values share a cluster."""
    check_confidence(confidence)
    x = np.asarray(values, dtype=float)
    n = int(x.size)
    codes, g = cluster_codes(clusters, n)
    if g == n or n < 2 or not np.all(np.isfinite(x)) or all_equal(x):
        return summarize(x, confidence=confidence, n_boot=n_boot, seed=seed)  # its own short cuts
    mean = float(x.mean())
    std = float(x.std(ddof=1))
    se = sandwich_se(x, codes, g)
    method = f"cluster bootstrap over {g} clusters (percentile)"
    if g < 2:  # one cluster of several values: nothing measures the spread
        return Summary(
            n, mean, std, se, math.nan, math.nan, confidence, n_boot, seed, method, None, g, ONE_CLUSTER
        )
    sums = np.bincount(codes, weights=x, minlength=g)
    sizes = np.bincount(codes, minlength=g).astype(float)
    s_b, n_b = bootstrap_means([sums, sizes], n_boot, seed)
    alpha = (1 - confidence) / 2
    lo, hi = (float(v) for v in np.quantile(s_b / n_b, [alpha, 1 - alpha]))
    # with few clusters the percentile interval is too narrow (its variance is (g - 1) / g of the
    # sandwich one, with normal tails); the t interval on g - 1 degrees of freedom with the
    # sandwich SE is not, but is symmetric: take the wider of the two on each side
    lo, hi = widen_to_t(mean, se, lo, hi, g - 1, confidence)
    method = f"cluster bootstrap over {g} clusters (percentile, widened to t on {g - 1} df)"
    return Summary(n, mean, std, se, lo, hi, confidence, n_boot, seed, method, None, g)


def accuracy_summary(
    values: Sequence[float] | np.ndarray,
    clusters: Sequence[object] | np.ndarray | None = None,
    *,
    confidence: float = 0.95,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> Summary:
    """Mean of values in [0, 1] with Wilson's interval (at the effective n when clustered or when
    the values are not all 0/1; see the module docstring). NaN values (no verdict) are not
    allowed: the caller leaves them out."""
    check_confidence(confidence)
    x = np.asarray(values, dtype=float)
    n = int(x.size)
    if n == 0:
        return Summary(0, *(math.nan,) * 5, confidence, n_boot, seed, "wilson", None, None)
    codes, g = cluster_codes(clusters, n)
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if n > 1 else 0.0
    se = sandwich_se(x, codes, g)
    binary = bool(np.all((x == 0.0) | (x == 1.0)))
    shared = g < n
    if not shared and binary:
        lo, hi = wilson(mean, n, confidence)
        se = math.sqrt(mean * (1 - mean) / n)
        return Summary(n, mean, std, se, lo, hi, confidence, n_boot, seed, "wilson", float(n), None)
    var = se * se if math.isfinite(se) else 0.0
    iv = proportion_interval(mean, var, n_max=float(n), n_boundary=float(g), confidence=confidence)
    method = f"wilson at n_eff ({g} clusters)" if shared else "wilson at n_eff"
    return Summary(
        n,
        mean,
        std,
        se,
        iv.ci_low,
        iv.ci_high,
        confidence,
        n_boot,
        seed,
        method,
        iv.n_eff,
        g if shared else None,
    )


def paired_proportion_difference(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> Summary:
    """Difference ``mean(a) - mean(b)`` of two means of values in [0, 1] over the same questions
    (element i of each is question i): the wider, on each side, of the percentile bootstrap of the
    per-question differences and the MOVER combination (Newcombe) of the two Wilson intervals
    (:func:`accuracy_summary`) with the values' correlation. The percentile interval alone is
    [0, 0] when both are 12 of 12 correct; MOVER keeps a width there."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size != y.size:
        raise ValueError(f"paired difference needs equal lengths, got {x.size} and {y.size}")
    d = summarize(x - y, confidence=confidence, n_boot=n_boot, seed=seed)
    if x.size < 1 or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        return d
    ia = accuracy_summary(x, confidence=confidence).interval
    ib = accuracy_summary(y, confidence=confidence).interval
    sx, sy = float(x.std()), float(y.std())
    rho = (
        float(np.clip(np.mean((x - x.mean()) * (y - y.mean())) / (sx * sy), -1, 1))
        if sx > 0 and sy > 0
        else 0.0
    )
    mover = difference_interval(ia, ib, rho)
    lo, hi = mover.ci_low, mover.ci_high
    if math.isfinite(d.ci_low) and math.isfinite(d.ci_high):  # else every difference was equal
        lo, hi = min(d.ci_low, lo), max(d.ci_high, hi)
    return Summary(
        d.n,
        d.mean,
        d.std,
        d.se,
        lo,
        hi,
        confidence,
        n_boot,
        seed,
        "paired: percentile bootstrap or MOVER of Wilson, the wider",
    )
