"""Confidence-based hybridization (seed 000, section 2.3): the AI's rating where its confidence is
above a threshold T, the humans' rating where it is at or below T; swept over a grid of T, with an
in-sample optimum and a cross-validated estimate of the accuracy of choosing T that way.

Per item i with AI correctness ``a_i`` (0/1), AI confidence ``c_i`` and human judgments
``y_i1..y_ik`` (0/1, scored by seed 000's rule):

- individual human accuracy ``h_i = mean_j y_ij`` (the accuracy of one random rater's rating);
- majority-vote correctness ``m_i``: 1 when the modal binarised rating is the true label; a tie
  for the mode is "inaccurate" (seed 000's rule); "can't assess" is a vote for neither label;
- hybrid accuracy ``H(T) = (1/n) sum_i ( [c_i > T] a_i + [c_i <= T] g_i )`` with ``g = h`` or ``m``;
- share routed to humans ``(1/n) sum_i [c_i <= T]``; human ratings per item
  ``(1/n) sum_i [c_i <= T] k_i`` for the majority vote (every rating is needed) and the share
  routed for individual ratings (one rating per item suffices).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel

from seerbench.complementarity._data import (
    ACCURATE,
    VOTE_ACCURATE,
    VOTE_INACCURATE,
    VOTE_NONE,
    AIItems,
    HumanData,
)
from seerbench.errors import ConfigError
from seerbench.stats import (
    ClusterBootstrap,
    Interval,
    ItemSums,
    Weights,
    correlation,
    difference_interval,
    proportion_interval,
    run_bootstrap,
    wilson,
)

Aggregate = Literal["individual", "majority"]

#: Default threshold grid: 0, 0.05, ..., 1 (T = 1 routes every item to the humans).
DEFAULT_THRESHOLDS: tuple[float, ...] = tuple(round(0.05 * k, 2) for k in range(21))


class Estimate(BaseModel):
    """A point estimate with its 95% confidence interval."""

    estimate: float | None
    ci_low: float | None
    ci_high: float | None

    @classmethod
    def of(cls, iv: Interval) -> Estimate:
        f = [None if math.isnan(x) else x for x in (iv.estimate, iv.ci_low, iv.ci_high)]
        return cls(estimate=f[0], ci_low=f[1], ci_high=f[2])

    @classmethod
    def none(cls) -> Estimate:
        return cls(estimate=None, ci_low=None, ci_high=None)


class ThresholdRow(BaseModel):
    """The hybrid at one threshold T (AI where confidence > T, humans where <= T)."""

    threshold: float
    routed_to_humans: float  # share of items
    routed_items: int
    hybrid: Estimate  # None when a routed item has no human judgment
    gain_over_ai: Estimate  # hybrid minus AI alone, paired
    human_ratings_per_item: float | None
    human_cost_per_item: float | None
    missing_human_items: int


class CrossValidated(BaseModel):
    """T chosen on training folds, accuracy measured on the held-out fold (repeated K-fold)."""

    estimate: float | None
    spread: float | None  # standard deviation over repeats
    folds: int
    repeats: int
    chosen_thresholds: dict[str, int]  # threshold -> how often it was chosen
    seed: int


class HybridSweep(BaseModel):
    """Hybridization of the AI rater with one human condition, under one aggregation."""

    condition: str
    aggregate: str  # individual | majority
    tie_rule: str
    items: int
    items_with_humans: int
    ai_alone: Estimate
    humans_alone: Estimate  # on the items with human judgments
    ai_on_human_items: Estimate
    rows: list[ThresholdRow]
    best_threshold: float | None  # in-sample optimum (the smallest T among ties)
    best_accuracy: float | None
    cross_validated: CrossValidated


TIE_RULE = (
    "the modal binarised rating; a tie for the mode is "
    "'inaccurate' (seed 000); can't assess votes for neither label"
)


def check_thresholds(thresholds: list[float] | tuple[float, ...]) -> list[float]:
    ts = sorted({float(t) for t in thresholds})
    if not ts:
        raise ConfigError("give at least one threshold")
    bad = [t for t in ts if math.isnan(t) or not 0.0 <= t <= 1.0]
    if bad:
        raise ConfigError(f"thresholds must lie in [0, 1] (confidence is a share of samples); got {bad[0]}")
    return ts


def item_human_values(
    h: HumanData, truth_accurate: np.ndarray, aggregate: Aggregate
) -> tuple[np.ndarray, np.ndarray]:
    """Per item: the human value (``h_i`` or ``m_i``; NaN without judgments) and the number of judgments."""
    n_items = truth_accurate.size
    k = np.bincount(h.item, minlength=n_items).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        if aggregate == "individual":
            val = np.bincount(h.item, weights=h.correct, minlength=n_items) / k
        else:
            acc = np.bincount(h.item, weights=(h.vote == VOTE_ACCURATE).astype(float), minlength=n_items)
            ina = np.bincount(h.item, weights=(h.vote == VOTE_INACCURATE).astype(float), minlength=n_items)
            non = np.bincount(h.item, weights=(h.vote == VOTE_NONE).astype(float), minlength=n_items)
            val = np.nan * np.ones(n_items)
            val[k > 0] = majority_correct(acc, ina, non, truth_accurate)[k > 0]
    val[k == 0] = np.nan
    return val, k


def majority_correct(
    acc: np.ndarray, ina: np.ndarray, non: np.ndarray, truth_accurate: np.ndarray
) -> np.ndarray:
    """1.0 where the majority vote is the true label: the mode of (accurate, inaccurate, can't
    assess) votes, a tie for the mode counting as "inaccurate" (seed 000)."""
    says_acc = acc > np.maximum(ina, non)
    says_cant = non > np.maximum(acc, ina)
    says_ina = ~says_acc & ~says_cant
    return np.where(truth_accurate, says_acc, says_ina).astype(float)


def hybrid_sweep(
    ai: AIItems,
    humans: HumanData,
    condition: str,
    *,
    aggregate: Aggregate = "majority",
    thresholds: list[float] | tuple[float, ...] = DEFAULT_THRESHOLDS,
    cost_per_rating: float | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    folds: int = 5,
    repeats: int = 20,
    confidence: float = 0.95,
) -> HybridSweep:
    """AI alone, humans alone and the hybrid at every threshold, with cluster-bootstrap CIs
    (items and raters resampled), the in-sample best T and a cross-validated estimate."""
    if aggregate not in ("individual", "majority"):
        raise ConfigError(f"aggregate must be individual or majority, got {aggregate!r}")
    if condition not in humans.conditions:
        raise ConfigError(
            f"condition {condition!r} is not in the study; conditions: {', '.join(humans.conditions)}"
        )
    ts = check_thresholds(thresholds)
    h = humans.subset(humans.condition == humans.conditions.index(condition))
    n = ai.n
    truth_acc = np.array([t == ACCURATE for t in ai.truth])
    g, k = item_human_values(h, truth_acc, aggregate)
    has = k > 0
    a = ai.correct
    c = ai.confidence
    order = np.argsort(c, kind="stable")
    cs = c[order]
    routed_n = np.searchsorted(cs, np.array(ts), side="right")  # items with c <= T
    missing_cum = np.concatenate([[0], np.cumsum(~has[order])])
    k_cum = np.concatenate([[0], np.cumsum(k[order])])

    # --- point estimates
    diff = np.where(has, g, 0.0) - a  # change when an item goes to the humans
    diff_cum = np.concatenate([[0.0], np.cumsum(diff[order])])
    ai_acc = float(a.mean())
    hyb = ai_acc + diff_cum[routed_n] / n

    # --- bootstrap: items, raters and judgments of this condition (seerbench.stats). Only this
    # condition's raters are resampled: drawing from every condition's raters would give each
    # replicate a random number of this condition's raters and inflate the variance.
    cond_raters, rater_codes = np.unique(h.rater, return_inverse=True)
    n_r = int(cond_raters.size)
    sums = ItemSums(h.item, rater_codes.astype(np.int64), n, n_r)
    kk = np.where(has, k, 1.0)
    if aggregate == "individual":
        vals = [h.correct]
    else:
        vals = [(h.vote == v).astype(float) for v in (VOTE_ACCURATE, VOTE_INACCURATE, VOTE_NONE)]
    mats = [sums.matrix(v) for v in vals]
    g0 = np.where(has, g, 0.0)
    n_t = len(ts)

    def stat(wt: Weights) -> np.ndarray:
        ws = [sums.weighted(wt, v, m) for v, m in zip(vals, mats, strict=True)]
        if aggregate == "individual":
            gb = ws[0] / kk  # linearised: E[weight] = 1 keeps it unbiased
        else:
            va, vi, vn = ws
            gb = majority_correct(va, vi, vn, truth_acc[None, :])
            empty = (va + vi + vn) == 0  # all of an item's judgments left out: keep its own vote
            gb = np.where(empty, g0[None, :], gb)
        gb = np.where(has[None, :], gb, 0.0)
        aw = wt.a if wt.a is not None else np.ones((wt.n, n))
        dd = aw * (gb - a[None, :])
        cum = np.concatenate([np.zeros((wt.n, 1)), np.cumsum(dd[:, order], axis=1)], axis=1)
        ai_b = (aw * a[None, :]).sum(axis=1) / n
        wh = aw[:, has]
        den = wh.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            hum_b = (wh * gb[:, has]).sum(axis=1) / den
        return np.column_stack([ai_b, ai_b[:, None] + cum[:, routed_n] / n, hum_b])

    cov = run_bootstrap(ClusterBootstrap(n, n_r, h.n, n_boot=n_boot, seed=seed), stat)

    n_has = int(has.sum())
    n_clusters = float(min(n_has, max(len(set(h.rater.tolist())), 1)))
    lo, hi = wilson(ai_acc, n, confidence)
    ai_iv = Interval(ai_acc, lo, hi, float(n))
    hum_est = float(g[has].mean()) if n_has else math.nan
    hum_iv = proportion_interval(
        hum_est, float(cov[n_t + 1, n_t + 1]), n_max=float(h.n), n_boundary=n_clusters, confidence=confidence
    )
    ai_h = float(a[has].mean()) if n_has else math.nan
    ai_h_iv = (
        Interval(ai_h, *wilson(ai_h, n_has, confidence), float(n_has))
        if n_has
        else Interval(math.nan, math.nan, math.nan)
    )

    rows = []
    for j, t in enumerate(ts):
        m = int(routed_n[j])
        miss = int(missing_cum[m])
        per_item = float(k_cum[m] / n) if aggregate == "majority" else m / n
        if miss:
            hy, gain = Estimate.none(), Estimate.none()
        else:
            nb = float(n) if m < n else n_clusters
            iv = proportion_interval(
                float(hyb[j]),
                float(cov[1 + j, 1 + j]),
                n_max=float(n + k_cum[m]),
                n_boundary=nb,
                confidence=confidence,
            )
            hy = Estimate.of(iv)
            gain = (
                Estimate.of(difference_interval(iv, ai_iv, correlation(cov, 1 + j, 0)))
                if m
                # no item goes to humans: the hybrid is the AI, a gain of exactly 0 by construction,
                # not an estimate with a zero-width interval
                else Estimate(estimate=0.0, ci_low=None, ci_high=None)
            )
        rows.append(
            ThresholdRow(
                threshold=t,
                routed_to_humans=m / n,
                routed_items=m,
                hybrid=hy,
                gain_over_ai=gain,
                human_ratings_per_item=None if miss else per_item,
                human_cost_per_item=None if miss or cost_per_rating is None else per_item * cost_per_rating,
                missing_human_items=miss,
            )
        )
    ok = [j for j in range(len(ts)) if rows[j].hybrid.estimate is not None]
    best = max(ok, key=lambda j: (round(float(hyb[j]), 12), -j)) if ok else None
    cv = cross_validate_threshold(a, c, np.where(has, g, np.nan), ts, folds=folds, repeats=repeats, seed=seed)
    return HybridSweep(
        condition=condition,
        aggregate=aggregate,
        tie_rule=TIE_RULE if aggregate == "majority" else "none needed: mean of the item's judgments",
        items=n,
        items_with_humans=n_has,
        ai_alone=Estimate.of(ai_iv),
        humans_alone=Estimate.of(hum_iv),
        ai_on_human_items=Estimate.of(ai_h_iv),
        rows=rows,
        best_threshold=None if best is None else ts[best],
        best_accuracy=None if best is None else float(hyb[best]),
        cross_validated=cv,
    )


def hybrid_matrix(
    ai_correct: np.ndarray, confidence: np.ndarray, human: np.ndarray, thresholds: list[float]
) -> np.ndarray:
    """(items x thresholds) matrix of each item's hybrid correctness; NaN where an item routed to
    the humans has no human value."""
    t = np.asarray(thresholds)[None, :]
    routed = confidence[:, None] <= t
    return np.where(routed, human[:, None], ai_correct[:, None])


def cross_validate_threshold(
    ai_correct: np.ndarray,
    confidence: np.ndarray,
    human: np.ndarray,
    thresholds: list[float],
    *,
    folds: int = 5,
    repeats: int = 20,
    seed: int = 0,
) -> CrossValidated:
    """Repeated K-fold estimate of the hybrid's accuracy when T is chosen on the data.

    For each repeat the items are split at random into ``folds`` folds; for each fold, T is the
    threshold with the highest hybrid accuracy on the other folds (the smallest on ties; only
    thresholds whose routed items all have human values), and the held-out fold is scored at that
    T. The estimate is the mean over repeats of the held-out accuracy over all items; ``spread``
    is its standard deviation over repeats.
    """
    n = ai_correct.size
    if folds < 2:
        raise ConfigError(f"folds must be at least 2, got {folds}")
    folds = min(folds, n)  # leave-one-out when there are fewer items than folds
    if n < 2:
        return CrossValidated(
            estimate=None, spread=None, folds=folds, repeats=repeats, chosen_thresholds={}, seed=seed
        )
    hm = hybrid_matrix(ai_correct, confidence, human, thresholds)
    usable = ~np.isnan(hm).any(axis=0)
    if not usable.any():
        return CrossValidated(
            estimate=None, spread=None, folds=folds, repeats=repeats, chosen_thresholds={}, seed=seed
        )
    hm0 = np.where(np.isnan(hm), 0.0, hm)
    rng = np.random.default_rng(seed)
    total = hm0.sum(axis=0)
    ests = []
    chosen: dict[str, int] = {}
    for _ in range(repeats):
        fold = rng.permutation(n) % folds
        right = 0.0
        for f in range(folds):
            test = fold == f
            train_acc = (total - hm0[test].sum(axis=0)) / (n - test.sum())
            train_acc = np.where(usable, np.round(train_acc, 12), -np.inf)
            j = int(np.argmax(train_acc))  # first = smallest T among ties
            chosen[str(thresholds[j])] = chosen.get(str(thresholds[j]), 0) + 1
            right += float(hm0[test, j].sum())
        ests.append(right / n)
    return CrossValidated(
        estimate=float(np.mean(ests)),
        spread=float(np.std(ests, ddof=1)) if len(ests) > 1 else 0.0,
        folds=folds,
        repeats=repeats,
        chosen_thresholds=dict(sorted(chosen.items(), key=lambda kv: float(kv[0]))),
        seed=seed,
    )
