"""Cluster bootstrap for judgments that share items and raters, and the intervals built from it.

Human judgments are not independent: ratings of one item share its difficulty, ratings by one
rater share their skill. An i.i.d. bootstrap over judgments ignores both and its intervals are too
narrow. Resampling items and raters together (the "pigeonhole" bootstrap, Owen 2007) goes wrong
the other way for binary judgments: the judgment-level noise is counted once by the item draws,
once by the rater draws and once more by their product, and the intervals come out far too wide
(coverage near 1 in our simulations).

So the variance of a statistic is estimated from three seeded bootstraps with paired replicates
(Owen 2007, section 3; the same combination as the "item + rater - residual" moment estimator)::

    V = V_items + V_raters - V_judgments

``V_items`` resamples items with replacement (all their judgments come along), ``V_raters``
resamples raters, ``V_judgments`` resamples single judgments (the i.i.d. bootstrap). With item
variance ``s_a``, rater variance ``s_b`` and judgment noise ``s_e``, the three are about
``s_a/I + (s_b + s_e)/N``, ``s_b/R + (s_a + s_e)/N`` and ``(s_a + s_b + s_e)/N``, so ``V`` is about
``s_a/I + s_b/R + s_e/N``, the variance of a mean over a crossed random-effects design. It is
floored at the larger one-way variance. Covariances of several statistics combine the same way.

Intervals (:func:`proportion_interval`, :func:`difference_interval`) use this variance and the
Wilson score form, so that they stay inside [0, 1] and keep their coverage near accuracy 0 and 1,
where percentile intervals collapse onto the estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from seerbench.stats._interval import Interval, check_confidence, wilson
from seerbench.stats._quantile import t_ppf

DEFAULT_N_BOOT = 1000
MODES = ("items", "raters", "judgments")


@dataclass(frozen=True)
class Weights:
    """One block of bootstrap replicates of one mode: a judgment j of item i by rater r counts
    ``a[:, i] * w[:, r] * e[:, j]`` times. Factors that the mode does not resample are None
    (weight one)."""

    mode: str
    n: int  # replicates in this block
    a: np.ndarray | None  # (n x items)
    w: np.ndarray | None  # (n x raters)
    e: np.ndarray | None  # (n x judgments)


class ClusterBootstrap:
    """Seeded replicate weights for the three bootstraps (``n_boot`` replicates each), in blocks.

    The same seed always gives the same replicates, so statistics computed in separate passes over
    :meth:`blocks` are paired replicate by replicate.
    """

    def __init__(
        self,
        n_items: int,
        n_raters: int,
        n_judgments: int,
        *,
        n_boot: int = DEFAULT_N_BOOT,
        seed: int = 0,
        chunk: int = 200,
    ) -> None:
        if n_boot < 2:
            raise ValueError(f"n_boot must be at least 2, got {n_boot}")
        self.n_items, self.n_raters, self.n_judgments = n_items, n_raters, n_judgments
        self.n_boot, self.seed, self.chunk = n_boot, seed, chunk

    def blocks(self) -> Iterator[Weights]:
        rng = np.random.default_rng(self.seed)
        for mode in MODES:
            done = 0
            size = {"items": self.n_items, "raters": self.n_raters, "judgments": self.n_judgments}[mode]
            while done < self.n_boot:
                b = min(self.chunk, self.n_boot - done)
                c = _counts(rng, size, b)
                done += b
                yield Weights(
                    mode,
                    b,
                    c if mode == "items" else None,
                    c if mode == "raters" else None,
                    c if mode == "judgments" else None,
                )


def _counts(rng: np.random.Generator, n: int, b: int) -> np.ndarray:
    """``b`` draws of how often each of ``n`` units is picked when ``n`` are drawn with replacement."""
    if n == 0:
        return np.zeros((b, 0))
    return rng.multinomial(n, np.full(n, 1.0 / n), size=b).astype(float)


class ItemSums:
    """Per-item sums of judgment values under replicate weights: ``sum_j w[r_j] e[j] v[j]`` over the
    judgments j of each item (the item factor ``a`` is left to the caller)."""

    def __init__(self, items: np.ndarray, raters: np.ndarray, n_items: int, n_raters: int) -> None:
        self.items, self.raters, self.n_items, self.n_raters = items, raters, n_items, n_raters
        n = items.size
        self._incidence = sparse.csr_matrix((np.ones(n), (np.arange(n), items)), shape=(n, n_items))

    def plain(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.items, weights=values, minlength=self.n_items)

    def matrix(self, values: np.ndarray) -> sparse.csr_matrix:
        return sparse.csr_matrix(
            (values.astype(float), (self.raters, self.items)), shape=(self.n_raters, self.n_items)
        )

    def weighted(self, wt: Weights, values: np.ndarray, mat: sparse.csr_matrix | None = None) -> np.ndarray:
        """(replicates x items) weighted sums; ``mat`` is :meth:`matrix` of ``values``, precomputed."""
        if wt.w is not None:
            m = mat if mat is not None else self.matrix(values)
            return np.asarray((m.T @ wt.w.T).T)
        if wt.e is not None:
            return np.asarray((self._incidence.T @ (wt.e * values[None, :]).T).T)
        return np.broadcast_to(self.plain(values), (wt.n, self.n_items))


def mode_covariances(reps: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Covariance matrix of statistics per bootstrap mode from their replicates (each
    (replicates x statistics); NaN replicates dropped pairwise)."""
    covs = {}
    for mode, r in reps.items():
        r = np.atleast_2d(r.T).T if r.ndim == 1 else r
        k = r.shape[1]
        c = np.zeros((k, k))
        for x in range(k):
            for y in range(x, k):
                ok = np.isfinite(r[:, x]) & np.isfinite(r[:, y])
                v = float(np.cov(r[ok, x], r[ok, y])[0, 1]) if ok.sum() > 2 else 0.0
                c[x, y] = c[y, x] = v
        covs[mode] = c
    return covs


def combine_modes(covs: dict[str, np.ndarray]) -> np.ndarray:
    """``C_items + C_raters - C_judgments`` of per-mode covariance matrices, each variance floored
    at the larger one-way variance."""
    zero = np.zeros_like(next(iter(covs.values())))
    c_i, c_r, c_j = (covs.get(m, zero) for m in MODES)
    out = c_i + c_r - c_j
    floor = np.maximum(np.diag(c_i), np.diag(c_r))
    d = np.maximum(np.diag(out), floor)
    np.fill_diagonal(out, d)
    return out


def combine(reps: dict[str, np.ndarray]) -> np.ndarray:
    """Covariance matrix ``C_items + C_raters - C_judgments`` of statistics from their replicates
    per mode (each (replicates x statistics); NaN replicates dropped pairwise), with each variance
    floored at the larger one-way variance."""
    return combine_modes(mode_covariances(reps))


def crossed_variance(
    parts: dict[str, float], n_items: int, n_raters: int, n_judgments: int
) -> tuple[float, float]:
    """Small-sample variance of a statistic over a crossed (items x raters) design and its
    degrees of freedom, from its per-mode bootstrap variances ``parts`` (:func:`mode_covariances`).

    A bootstrap over g clusters gives (g - 1) / g of the between-cluster variance, which matters at
    12 raters; each part is scaled back by g / (g - 1) before ``V = V_items + V_raters -
    V_judgments`` (floored at the larger one-way part). The degrees of freedom are
    Satterthwaite's for that sum, ``V^2 / sum(V_m^2 / (g_m - 1))``, at least 1 and at most the
    fewer of items and raters less one: the variance is itself estimated from few clusters."""

    def scaled(mode: str, g: int) -> float:
        return float(parts.get(mode, 0.0)) * (g / (g - 1) if g > 1 else 1.0)

    vi, vr, vj = scaled("items", n_items), scaled("raters", n_raters), scaled("judgments", n_judgments)
    v = max(vi + vr - vj, vi, vr, 0.0)
    cap = float(max(min(n_items, n_raters) - 1, 1))
    den = sum(x * x / (g - 1) for x, g in ((vi, n_items), (vr, n_raters), (vj, n_judgments)) if g > 1)
    df = v * v / den if den > 0 else cap
    return v, float(min(max(df, 1.0), cap))


def count_interval(
    estimate: float, variance: float, df: float, *, n_max: float, confidence: float = 0.95
) -> Interval:
    """Interval for a mean of counts (critiques per answer) with bootstrap ``variance``: the
    quasi-Poisson score interval, the counts' analogue of Wilson's at the effective n.

    The variance is taken proportional to the mean (over-dispersed Poisson), ``V(mu) = mu / n_eff``
    with ``n_eff = estimate / variance`` capped at ``n_max`` (the number of counts: at least the
    Poisson variance of independent counts, so equal counts keep a width); the interval is every
    ``mu`` with ``(estimate - mu)^2 <= q^2 mu / n_eff``, ``q`` Student's t at ``df``. It is skewed
    to the right like the counts (two thirds of a symmetric t interval's misses lay below the true mean),
    never below 0 and always holds the estimate. At a mean of 0, where the variance says nothing,
    it is the exact Poisson bound for no event in ``n_max`` counts, ``[0, -ln(1 - confidence) /
    n_max]`` (the rule of three: ``3 / n`` at 0.95)."""
    if math.isnan(estimate) or math.isnan(variance) or n_max <= 0:
        return Interval(estimate, math.nan, math.nan, None, "quasi-poisson score", None, confidence)
    if estimate <= 0.0:
        hi = -math.log(1.0 - check_confidence(confidence)) / n_max
        return Interval(estimate, 0.0, hi, n_max, "exact poisson (no event)", round(n_max), confidence)
    n_eff = min(estimate / variance, n_max) if estimate > 0 and variance > 0 else n_max
    n_eff = max(n_eff, 1e-12)
    q = t_ppf(0.5 + check_confidence(confidence) / 2, max(df, 1.0))
    centre = estimate + q * q / (2 * n_eff)
    half = q * math.sqrt(max(estimate, 0.0) / n_eff + q * q / (4 * n_eff * n_eff))
    return Interval(
        estimate,
        max(centre - half, 0.0),
        centre + half,
        n_eff,
        f"quasi-poisson score at n_eff (t, {df:.1f} df)",
        round(n_max),
        confidence,
    )


def bootstrap_modes(boot: ClusterBootstrap, stat: Callable[[Weights], np.ndarray]) -> dict[str, np.ndarray]:
    """Per-mode covariance matrices (:func:`mode_covariances`) of the statistics ``stat`` computes
    for a block of weights (returning (replicates x statistics))."""
    reps: dict[str, list[np.ndarray]] = {m: [] for m in MODES}
    for wt in boot.blocks():
        reps[wt.mode].append(np.asarray(stat(wt)).reshape(wt.n, -1))
    return mode_covariances({m: np.concatenate(v, axis=0) for m, v in reps.items() if v})


def run_bootstrap(boot: ClusterBootstrap, stat: Callable[[Weights], np.ndarray]) -> np.ndarray:
    """Covariance matrix (see :func:`combine`) of the statistics ``stat`` computes for a block of
    weights (returning (replicates x statistics))."""
    return combine_modes(bootstrap_modes(boot, stat))


def proportion_interval(
    estimate: float, variance: float, *, n_max: float, n_boundary: float, confidence: float = 0.95
) -> Interval:
    """Interval for a mean of 0/1 (or [0, 1]) values with bootstrap variance ``variance``.

    The effective sample size is the binomial n with that variance, ``n_eff = p(1 - p) / V``,
    capped at ``n_max`` (the number of values); the interval is Wilson's at ``n_eff``. When the
    estimate is 0 or 1 (or the variance is 0) the variance says nothing, and
    ``n_eff = n_boundary`` (the number of independent clusters: items, or the smaller of items and
    raters) keeps the interval honest.
    """
    if math.isnan(estimate):
        return Interval(math.nan, math.nan, math.nan, None)
    pq = estimate * (1 - estimate)
    n_eff = min(pq / variance, n_max) if pq > 1e-12 and variance > 1e-15 else n_boundary
    n_eff = max(n_eff, 1.0)
    lo, hi = wilson(estimate, n_eff, confidence)
    return Interval(estimate, lo, hi, n_eff, "wilson at n_eff", round(n_max), confidence)


def correlation(cov: np.ndarray, i: int, j: int) -> float:
    d = cov[i, i] * cov[j, j]
    return float(np.clip(cov[i, j] / math.sqrt(d), -1.0, 1.0)) if d > 0 else 0.0


def difference_interval(a: Interval, b: Interval, rho: float) -> Interval:
    """Interval for ``a - b`` by MOVER (Zou & Donner 2008; Newcombe's square-and-add with the
    correlation ``rho`` of the two estimates)."""
    d = a.estimate - b.estimate
    if math.isnan(d) or math.isnan(a.ci_low) or math.isnan(b.ci_low):
        return Interval(d, math.nan, math.nan, None)
    la, ua = a.estimate - a.ci_low, a.ci_high - a.estimate
    lb, ub = b.estimate - b.ci_low, b.ci_high - b.estimate
    lo = d - math.sqrt(max(la * la + ub * ub - 2 * rho * la * ub, 0.0))
    hi = d + math.sqrt(max(ua * ua + lb * lb - 2 * rho * ua * lb, 0.0))
    return Interval(d, max(lo, -1.0), min(hi, 1.0), None, "mover", None, a.confidence)


def cluster_group_modes(
    values: np.ndarray,
    items: np.ndarray,
    raters: np.ndarray,
    groups: np.ndarray,
    n_groups: int,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Means of ``values`` per group and the covariance matrices of those means per bootstrap
    mode (:func:`mode_covariances`; :func:`cluster_group_means` combines them).

    ``items`` and ``raters`` are integer codes (0..n-1) of each value's item and rater. A group
    with no value has mean NaN.
    """
    n_items = int(items.max()) + 1 if items.size else 0
    n_raters = int(raters.max()) + 1 if raters.size else 0
    sums = ItemSums(items, raters, n_items, n_raters)
    means = np.full(n_groups, np.nan)
    ind = [(groups == g).astype(float) for g in range(n_groups)]
    for g in range(n_groups):
        if ind[g].any():
            means[g] = float(values[ind[g] > 0].mean())
    num_m = [sums.matrix(values * ind[g]) for g in range(n_groups)]
    den_m = [sums.matrix(ind[g]) for g in range(n_groups)]

    def stat(wt: Weights) -> np.ndarray:
        block = np.empty((wt.n, n_groups))
        for g in range(n_groups):
            num = sums.weighted(wt, values * ind[g], num_m[g])
            den = sums.weighted(wt, ind[g], den_m[g])
            if wt.a is not None:
                num, den = wt.a * num, wt.a * den
            n_, d_ = num.sum(axis=1), den.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                block[:, g] = np.where(d_ > 0, n_ / np.where(d_ > 0, d_, 1.0), np.nan)
        return block

    boot = ClusterBootstrap(n_items, n_raters, values.size, n_boot=n_boot, seed=seed)
    return means, bootstrap_modes(boot, stat)


def cluster_group_means(
    values: np.ndarray,
    items: np.ndarray,
    raters: np.ndarray,
    groups: np.ndarray,
    n_groups: int,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Means of ``values`` per group and the covariance matrix of those means (:func:`combine`).

    ``items`` and ``raters`` are integer codes (0..n-1) of each value's item and rater. A group
    with no value has mean NaN.
    """
    means, modes = cluster_group_modes(values, items, raters, groups, n_groups, n_boot=n_boot, seed=seed)
    return means, combine_modes(modes)


def codes(labels: list[str] | np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Integer codes 0..k-1 of ``labels`` in order of first appearance, and the distinct labels."""
    ix: dict[str, int] = {}
    out = np.fromiter((ix.setdefault(str(x), len(ix)) for x in labels), dtype=np.int64, count=len(labels))
    return out, list(ix)


def group_interval(
    means: np.ndarray,
    cov: np.ndarray,
    g: int,
    sel: np.ndarray,
    items: np.ndarray,
    raters: np.ndarray,
    confidence: float = 0.95,
) -> Interval:
    """The interval of group ``g``'s mean (``sel``: its values) from :func:`cluster_group_means`."""
    if not sel.any():
        return Interval(math.nan, math.nan, math.nan, None)
    nb = float(min(np.unique(items[sel]).size, np.unique(raters[sel]).size))
    return proportion_interval(
        float(means[g]), float(cov[g, g]), n_max=float(sel.sum()), n_boundary=nb, confidence=confidence
    )


def cluster_mean_interval(
    values: np.ndarray,
    items: np.ndarray,
    raters: np.ndarray,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    confidence: float = 0.95,
) -> Interval:
    """Mean of 0/1 (or [0, 1]) ``values`` with a cluster-bootstrap interval (items and raters;
    Wilson form at the bootstrap's effective sample size, see :func:`proportion_interval`)."""
    if values.size == 0:
        return Interval(math.nan, math.nan, math.nan, None)
    groups = np.zeros(values.size, dtype=np.int64)
    means, cov = cluster_group_means(values, items, raters, groups, 1, n_boot=n_boot, seed=seed)
    return group_interval(means, cov, 0, groups == 0, items, raters, confidence)
