"""Finite-sample deviation bounds (seed 001, Section 2.3 and Appendices D-E).

Every function returns a :class:`DeviationBound`: a half-width ``eps`` such that |A_hat - A| <= eps
with probability at least 1 - delta under the stated assumptions, and flags that say what those
assumptions are:

* ``holds_for_data_dependent_weight``: the guarantee survives a weight estimated from the same data
  (e.g. the plug-in IVW weight). True for Theorem 2 (no weight) and Proposition 3 (any weight).
* ``assumes_fixed_weight``: the guarantee needs the weight fixed in advance (Theorem 4, Eq. 15-16).
* ``rigorous``: the half-width is a guarantee as computed. False where a true variance has been
  replaced by a plug-in estimate (Eq. 15-16) or a data-dependent weight is fed to a fixed-weight bound.

Taking the minimum of two bounds that each hold with probability 1 - delta gives a bound that holds
with probability 1 - 2 delta only. By default the minima in Theorem 2 and Proposition 3 therefore give
each branch half of its delta (a union bound), so the result holds at the delta asked for. Pass
``paper_constants=True`` to get the constants exactly as printed in the paper instead (``rigorous``
is then False).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from seerbench.errors import ConfigError, DataError
from seerbench.estimators._core import (
    LabelCounts,
    _accuracy_arg,
    _check_counts,
    _ivw_weight_notes,
    _ml_root,
    _need_complementary,
    _need_ordinary,
    _weight_arg,
)

__all__ = [
    "DeviationBound",
    "bernstein_ivw_bound",
    "bernstein_mixture_bound",
    "complementary_bound",
    "union_mixture_bound",
]


@dataclass(frozen=True)
class DeviationBound:
    """A two-sided deviation bound |estimate - A| <= half_width at confidence 1 - delta.

    ``lower``/``upper`` are ``estimate -/+ half_width`` intersected with [0, 1]. ``weight`` is the
    weight on A_ord for mixture bounds (None for Theorem 2).
    """

    method: str
    estimate: float
    half_width: float
    lower: float
    upper: float
    delta: float
    k: int
    n_o: int
    n_c: int
    weight: float | None
    holds_for_data_dependent_weight: bool
    assumes_fixed_weight: bool
    rigorous: bool
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON)."""
        d = asdict(self)
        d["notes"] = list(self.notes)
        return d


def _delta_arg(delta: Any, name: str = "delta") -> float:
    if isinstance(delta, bool) or not isinstance(delta, int | float) or not 0.0 < float(delta) < 1.0:
        raise ConfigError(f"{name} must lie strictly between 0 and 1, got {delta!r}")
    return float(delta)


def _make(
    method: str,
    counts: LabelCounts,
    estimate: float,
    half: float,
    delta: float,
    weight: float | None,
    *,
    data_dependent_ok: bool,
    fixed_weight: bool,
    rigorous: bool,
    notes: list[str],
) -> DeviationBound:
    return DeviationBound(
        method=method,
        estimate=float(estimate),
        half_width=float(half),
        lower=float(min(1.0, max(0.0, estimate - half))),
        upper=float(max(0.0, min(1.0, estimate + half))),
        delta=delta,
        k=counts.k,
        n_o=counts.n_o,
        n_c=counts.n_c,
        weight=weight,
        holds_for_data_dependent_weight=data_dependent_ok,
        assumes_fixed_weight=fixed_weight,
        rigorous=rigorous,
        notes=tuple(notes),
    )


def _hoeffding(n: int, delta: float) -> float:
    """Two-sided Hoeffding half-width for a mean of n variables in [0, 1]: sqrt(log(2/delta) / (2n))."""
    return math.sqrt(math.log(2.0 / delta) / (2.0 * n))


def _empirical_bernstein(p_hat: float, n: int, delta: float) -> float:
    """Two-sided empirical-Bernstein half-width (Maurer & Pontil 2009) for a Bernoulli mean.

    sqrt(2 p(1-p) log(4/delta) / (n-1)) + 7 log(4/delta) / (3 (n-1)); p(1-p) n/(n-1) is the unbiased
    sample variance, hence n - 1 under the root (as in the statement of Theorem 2). Infinite for n < 2.
    """
    if n < 2:
        return math.inf
    log_term = math.log(4.0 / delta)
    return math.sqrt(2.0 * p_hat * (1.0 - p_hat) * log_term / (n - 1)) + 7.0 * log_term / (3.0 * (n - 1))


def complementary_bound(
    counts: LabelCounts, delta: float = 0.05, *, paper_constants: bool = False
) -> DeviationBound:
    """Theorem 2: Hoeffding / empirical-Bernstein bound for A_comp.

    |A_comp - A| <= (K-1) min{ sqrt(log(2/d)/(2 n_c)),
                               sqrt(2 q(1-q) log(4/d)/(n_c-1)) + 7 log(4/d)/(3(n_c-1)) }
    with d = delta / 2 per branch by default (so the minimum holds at 1 - delta), or d = delta with
    ``paper_constants=True``. Holds for any n_c (the Bernstein branch needs n_c >= 2). No weight is
    involved, so data-dependence is not an issue.
    """
    counts = _check_counts(counts)
    delta = _delta_arg(delta)
    _need_complementary(counts, "the Theorem 2 bound")
    d = delta if paper_constants else delta / 2.0
    h = _hoeffding(counts.n_c, d)
    eb = _empirical_bernstein(counts.q_hat, counts.n_c, d)
    half = (counts.k - 1) * min(h, eb)
    notes = ["Hoeffding branch" if h <= eb else "empirical-Bernstein branch"]
    if paper_constants:
        notes.append("paper constants: each branch at delta, so the minimum holds at 1 - 2 delta")
    return _make(
        "thm2_comp",
        counts,
        counts.a_comp,
        half,
        delta,
        None,
        data_dependent_ok=True,
        fixed_weight=False,
        rigorous=not paper_constants,
        notes=notes,
    )


def _resolve_weight(counts: LabelCounts, weight: float | None) -> tuple[float, list[str]]:
    """(weight, notes); None means the plug-in IVW weight."""
    if weight is None:
        w, notes = _ivw_weight_notes(counts)
        return w, ["weight: plug-in IVW (Eq. 7), estimated from the same data", *notes]
    return _weight_arg(weight), []


def union_mixture_bound(
    counts: LabelCounts,
    weight: float | None = None,
    delta: float = 0.05,
    *,
    delta_o: float | None = None,
    paper_constants: bool = False,
) -> DeviationBound:
    """Proposition 3: union-bound deviation bound for w A_ord + (1-w) A_comp, valid for ANY weight.

    With delta = delta_o + delta_c (default delta_o = delta_c = delta/2):
    min{ w H(n_o, delta_o) + (1-w)(K-1) H(n_c, delta_c),
         w EB(A_ord, n_o, delta_o) + (1-w)(K-1) EB(q_hat, n_c, delta_c) }
    with H and EB the Hoeffding and empirical-Bernstein half-widths (see :func:`complementary_bound`).
    Because it bounds each arm separately, it holds simultaneously for every w in [0, 1], including
    the plug-in IVW weight (pass ``weight=None`` to use it). As in Theorem 2, each branch of the
    minimum gets half of delta_o and delta_c unless ``paper_constants=True``. A weight of exactly 1 or
    0 uses one arm only and gives it all of delta.
    """
    counts = _check_counts(counts)
    delta = _delta_arg(delta)
    w, notes = _resolve_weight(counts, weight)
    if w > 0.0:
        _need_ordinary(counts, "the Proposition 3 bound")
    if w < 1.0:
        _need_complementary(counts, "the Proposition 3 bound")
    if w == 1.0:
        d_o, d_c = delta, 0.0
    elif w == 0.0:
        d_o, d_c = 0.0, delta
    else:
        d_o = delta / 2.0 if delta_o is None else _delta_arg(delta_o, "delta_o")
        d_c = delta - d_o
        if d_c <= 0.0:
            raise ConfigError(f"delta_o must be smaller than delta ({delta}), got {delta_o}")
    if not paper_constants:
        d_o, d_c = d_o / 2.0, d_c / 2.0
    hoeff, bern, est = 0.0, 0.0, 0.0
    if w > 0.0:
        hoeff += w * _hoeffding(counts.n_o, d_o)
        bern += w * _empirical_bernstein(counts.a_ord, counts.n_o, d_o)
        est += w * counts.a_ord
    if w < 1.0:
        hoeff += (1.0 - w) * (counts.k - 1) * _hoeffding(counts.n_c, d_c)
        bern += (1.0 - w) * (counts.k - 1) * _empirical_bernstein(counts.q_hat, counts.n_c, d_c)
        est += (1.0 - w) * counts.a_comp
    notes.append("Hoeffding branch" if hoeff <= bern else "empirical-Bernstein branch")
    if paper_constants:
        notes.append("paper constants: each branch at delta, so the minimum holds at 1 - 2 delta")
    return _make(
        "prop3_union",
        counts,
        est,
        min(hoeff, bern),
        delta,
        w,
        data_dependent_ok=True,
        fixed_weight=False,
        rigorous=not paper_constants,
        notes=notes,
    )


def _bernstein_half(v: float, c: float, delta: float) -> float:
    log_term = math.log(2.0 / delta)
    return math.sqrt(2.0 * v * log_term) + c * log_term


def _range_c(counts: LabelCounts, w: float) -> float:
    """c = max{w/n_o, (1-w)(K-1)/n_c} (Eq. 13); an arm with zero weight contributes nothing."""
    c_o = w / counts.n_o if w > 0.0 else 0.0
    c_c = (1.0 - w) * (counts.k - 1) / counts.n_c if w < 1.0 else 0.0
    return max(c_o, c_c)


def bernstein_mixture_bound(
    counts: LabelCounts,
    weight: float,
    delta: float = 0.05,
    *,
    accuracy: float | None = None,
) -> DeviationBound:
    """Theorem 4 (Bernstein bound for the mixture at a FIXED weight) and its plug-in form Eq. 15.

    |A_mix - A| <= sqrt(2 v log(2/delta)) + c log(2/delta), c = max{w/n_o, (1-w)(K-1)/n_c},
    v = w^2 A(1-A)/n_o + (1-w)^2 (K-1)^2 q(1-q)/n_c.

    With ``accuracy`` given (the true A, e.g. in a simulation) this is Theorem 4 itself: a guarantee
    for a weight fixed in advance. Without it, A and q are replaced by A_ord and q_hat (Eq. 15), which
    makes the half-width an approximation (``rigorous=False``). Either way the weight must not be
    chosen from the same data; use :func:`union_mixture_bound` for a data-dependent weight.
    """
    counts = _check_counts(counts)
    delta = _delta_arg(delta)
    w = _weight_arg(weight)
    if w > 0.0:
        _need_ordinary(counts, "the Theorem 4 bound")
    if w < 1.0:
        _need_complementary(counts, "the Theorem 4 bound")
    k = counts.k
    if accuracy is not None:
        a = _accuracy_arg(accuracy)
        q = (a + k - 2) / (k - 1)
        v_o = a * (1.0 - a) / counts.n_o if w > 0.0 else 0.0
        v_c = (k - 1) ** 2 * q * (1.0 - q) / counts.n_c if w < 1.0 else 0.0
        method, rigorous, notes = "thm4_bernstein", True, ["variance at the given true accuracy"]
    else:
        v_o = counts.var_ord if w > 0.0 else 0.0
        v_c = counts.var_comp if w < 1.0 else 0.0
        method, rigorous = "eq15_bernstein_plugin", False
        notes = ["plug-in variance (Eq. 15): approximate, not a finite-sample guarantee"]
    v = w * w * v_o + (1.0 - w) ** 2 * v_c
    est = (w * counts.a_ord if w > 0.0 else 0.0) + ((1.0 - w) * counts.a_comp if w < 1.0 else 0.0)
    half = _bernstein_half(v, _range_c(counts, w), delta)
    return _make(
        method,
        counts,
        est,
        half,
        delta,
        w,
        data_dependent_ok=False,
        fixed_weight=True,
        rigorous=rigorous,
        notes=notes,
    )


def bernstein_ivw_bound(counts: LabelCounts, delta: float = 0.05) -> DeviationBound:
    """Eq. 16: the fully plug-in Bernstein bound at the plug-in IVW weight.

    |A_IVW - A| <~ sqrt(2 log(2/delta) h_min) + log(2/delta) max{w/n_o, (1-w)(K-1)/n_c},
    h_min = v_o v_c / (v_o + v_c), w = w_hat_IVW. The weight is estimated from the same data and the
    variances are plug-ins, so Theorem 4's fixed-weight guarantee does not cover it
    (``rigorous=False``); it is the paper's practical summary. Use :func:`union_mixture_bound` with
    ``weight=None`` for a bound that holds at the data-dependent weight.
    """
    counts = _check_counts(counts)
    delta = _delta_arg(delta)
    if counts.n_o == 0 or counts.n_c == 0:
        raise DataError(
            "the Eq. 16 bound needs both ordinary and complementary labels "
            f"(n_o={counts.n_o}, n_c={counts.n_c})"
        )
    w, notes = _ivw_weight_notes(counts)
    v_o, v_c = counts.var_ord, counts.var_comp
    if not (v_o > 0.0 and v_c > 0.0):
        # a plug-in variance of 0 (an arm all correct / all avoided) would make h_min 0 and the
        # bound hold with less than 1 - delta: take both variances at the pilot A_ML, as Eq. 8 does
        # for the weight (A(1-A)/n_o and Eq. 3's (A+K-2)(1-A)/n_c)
        a = min(1.0, max(0.0, _ml_root(counts)))
        v_o = a * (1.0 - a) / counts.n_o
        v_c = (a + counts.k - 2) * (1.0 - a) / counts.n_c
        notes = [*notes, f"a plug-in variance is 0: variances at the pilot A_ML = {a:.6g} (Eq. 8)"]
    h_min = v_o * v_c / (v_o + v_c) if v_o + v_c > 0.0 else 0.0
    est = w * counts.a_ord + (1.0 - w) * counts.a_comp
    half = _bernstein_half(h_min, _range_c(counts, w), delta)
    notes = [
        "plug-in variance and data-dependent weight: Theorem 4 assumes a fixed weight, not guaranteed",
        *notes,
    ]
    return _make(
        "eq16_bernstein_ivw",
        counts,
        est,
        half,
        delta,
        w,
        data_dependent_ok=False,
        fixed_weight=True,
        rigorous=False,
        notes=notes,
    )
