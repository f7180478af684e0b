"""Clustered labels: a design effect for the estimators' variances.

Every estimator treats labels as independent (Bin(n_o, A) and Bin(n_c, q)). Labels that share a
rater, an item (``partition --all-complementary`` writes K-1 labels per item) or a topic on which the
system is uniformly strong or weak are positively correlated, and the independent-label intervals are
then too narrow (see docs/estimators.md for measured coverage). :func:`cluster_design_effect` measures
how much wider: the ratio of a cluster-robust (sandwich) variance to the independent-label variance
of the estimator's linearisation; :func:`clustered_accuracy` passes it to an estimator as
``design_effect``, which multiplies every variance (SE, Wald and score intervals alike).

The linearisation of A_mix = w A_ord + (1 - w) A_comp gives each ordinary label the influence
w (Z_i - A_ord) / n_o and each complementary label (1 - w)(K - 1)(W_j - q_hat) / n_c. With t_g the sum
over cluster g and G clusters, the cluster-robust variance is G/(G-1) sum_g t_g^2; the
independent-label one is the sum of squared influences (the plug-in variance). ML is linearised at
its first-order equivalent weight, Eq. 8 at A_ML (Appendix C).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from seerbench.errors import ConfigError, DataError
from seerbench.estimators import _intervals
from seerbench.estimators._core import (
    AccuracyEstimate,
    IntervalKind,
    LabelCounts,
    _ivw_weight_notes,
    _ml_root,
    complementary_accuracy,
    ivw_accuracy,
    mixture_accuracy,
    ml_accuracy,
    ordinary_accuracy,
)
from seerbench.estimators._labels import LabelSet

__all__ = ["cluster_design_effect", "clustered_accuracy", "design_effect_from_cluster_counts"]


def design_effect_from_cluster_counts(
    n_o: Any, s_o: Any, n_c: Any, s_c: Any, weight: Any, k: Any
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Design effect from per-cluster counts (last axis = clusters; leading axes broadcast).

    Returns var_cluster / var_independent, floored at 1 (negative within-cluster correlation is not
    credited), and 1 where the independent-label variance is 0 (every weighted label set all correct
    or all wrong: nothing to measure a correlation from) or there is a single cluster.
    """
    n_o, s_o, n_c, s_c = (np.asarray(x, dtype=float) for x in (n_o, s_o, n_c, s_c))
    w = np.asarray(weight, dtype=float)[..., None]
    k = np.asarray(k, dtype=float)[..., None]
    no_t, so_t = n_o.sum(-1, keepdims=True), s_o.sum(-1, keepdims=True)
    nc_t, sc_t = n_c.sum(-1, keepdims=True), s_c.sum(-1, keepdims=True)
    g = np.asarray((n_o + n_c > 0).sum(-1), dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a_o = np.where(no_t > 0, so_t / no_t, 0.0)
        q = np.where(nc_t > 0, sc_t / nc_t, 0.0)
        co = np.where(no_t > 0, w / no_t, 0.0)
        cc = np.where(nc_t > 0, (1.0 - w) * (k - 1.0) / nc_t, 0.0)
        t = co * (s_o - n_o * a_o) + cc * (s_c - n_c * q)
        v_cl = g / (g - 1.0) * (t * t).sum(-1)
        v_ind = (co * co * no_t * a_o * (1.0 - a_o) + cc * cc * nc_t * q * (1.0 - q))[..., 0]
        deff = np.where((v_ind > 0) & (g > 1), v_cl / v_ind, 1.0)
    return np.asarray(np.maximum(deff, 1.0), dtype=float)


def _cluster_ids(
    labels: LabelSet, clusters: str | Sequence[Any] | np.ndarray[Any, Any]
) -> np.ndarray[Any, Any]:
    if isinstance(clusters, str):
        if clusters not in labels.extra:
            have = sorted(labels.extra) or "none"
            raise DataError(f"{labels.source}: no column {clusters!r} to cluster by (other columns: {have})")
        ids = np.asarray(labels.extra[clusters], dtype=object)
    else:
        ids = np.asarray(clusters, dtype=object)
    if ids.ndim != 1 or ids.shape[0] != len(labels):
        raise DataError(
            f"{labels.source}: clusters has {ids.shape} entries, expected {len(labels)} (one per label)"
        )
    return ids


def _weight_for(method: str, counts: LabelCounts, weight: float | None) -> float:
    if method == "ord":
        return 1.0
    if method == "comp":
        return 0.0
    if method == "mix":
        if weight is None:
            raise ConfigError("method 'mix' needs a weight")
        return float(weight)
    if method == "ivw":
        return _ivw_weight_notes(counts)[0]
    if method == "ml":
        if counts.n_c == 0:
            return 1.0
        if counts.n_o == 0:
            return 0.0
        return float(
            _intervals.eq8_weight(min(1.0, max(0.0, _ml_root(counts))), counts.n_o, counts.n_c, counts.k)
        )
    raise ConfigError(f"unknown estimator {method!r}; choose from ['ord', 'comp', 'ivw', 'mix', 'ml']")


def cluster_design_effect(
    labels: LabelSet,
    clusters: str | Sequence[Any] | np.ndarray[Any, Any],
    method: str = "ivw",
    *,
    weight: float | None = None,
) -> float:
    """The design effect of ``method``'s estimate when labels are clustered by ``clusters`` (a column
    of the labels file, or one id per label). See the module docstring. Needs a single K."""
    ids = _cluster_ids(labels, clusters)
    counts = labels.counts()
    w = _weight_for(method, counts, weight)
    _, inv = np.unique(ids.astype(str), return_inverse=True)
    n_groups = int(inv.max()) + 1 if inv.size else 0
    hit = labels.prediction == labels.label
    comp = labels.is_complementary
    if counts.n_converted:  # K = 2: complementary labels count as ordinary ones, with W = Z
        comp = np.zeros_like(comp)
        hit = np.where(labels.is_complementary, ~hit, hit)
    ok = np.where(comp, ~hit, hit)

    def per_cluster(mask: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        return np.bincount(inv, weights=mask.astype(float), minlength=n_groups)

    deff = design_effect_from_cluster_counts(
        per_cluster(~comp), per_cluster(~comp & ok), per_cluster(comp), per_cluster(comp & ok), w, counts.k
    )
    return float(deff)


_ESTIMATORS = {
    "ord": ordinary_accuracy,
    "comp": complementary_accuracy,
    "ivw": ivw_accuracy,
    "ml": ml_accuracy,
}


def clustered_accuracy(
    labels: LabelSet,
    clusters: str | Sequence[Any] | np.ndarray[Any, Any],
    method: str = "ivw",
    *,
    weight: float | None = None,
    alpha: float = 0.05,
    interval: IntervalKind = "score",
) -> AccuracyEstimate:
    """``method``'s estimate with every variance multiplied by the clusters' design effect.

    The point estimate is unchanged; the SE and both interval kinds widen by the design effect.
    Coverage is nominal once there are a few dozen clusters; with few clusters the cluster-robust
    variance is itself noisy (documented in docs/estimators.md).
    """
    counts = labels.counts()
    deff = cluster_design_effect(labels, clusters, method, weight=weight)
    if method == "mix":
        return mixture_accuracy(
            counts, float(weight or 0.0), alpha=alpha, interval=interval, design_effect=deff
        )
    return _ESTIMATORS[method](counts, alpha=alpha, interval=interval, design_effect=deff)
