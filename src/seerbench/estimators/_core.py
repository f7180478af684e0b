"""Accuracy estimators from ordinary and complementary labels (seed 001, Section 2).

Everything here works on sufficient statistics (:class:`LabelCounts`): the estimators are O(1) once the
labels have been counted, so the cost on large label sets is the counting, not the estimation.

Notation follows the paper: ``n_o`` ordinary labels with ``s_o`` correct predictions (Z = 1), ``n_c``
complementary labels with ``s_c`` predictions that avoid the complementary label (W = 1), ``K`` options,
``q_hat = s_c / n_c``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import seerbench.stats as stats
from seerbench.errors import ConfigError, DataError
from seerbench.estimators import _intervals

__all__ = [
    "INTERVALS",
    "AccuracyEstimate",
    "IntervalKind",
    "LabelCounts",
    "complementary_accuracy",
    "complementary_variance",
    "ivw_accuracy",
    "ivw_weight",
    "log_likelihood",
    "mixture_accuracy",
    "ml_accuracy",
    "ordinary_accuracy",
    "raw_complementary_accuracy",
]


IntervalKind = Literal["score", "wald"]
#: Interval kinds: "score" (the default: Wilson-type, variance at the hypothesised accuracy; never
#: degenerate) and "wald" (the paper's plug-in normal interval, estimate -/+ z * se).
INTERVALS: tuple[str, ...] = ("score", "wald")


def _as_int(name: str, value: Any) -> int:
    # numpy integers are fine; floats, bools and strings are not (a count of 2.5 is a bug upstream).
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    return int(value)


def z_value(alpha: float) -> float:
    """Two-sided standard-normal quantile z_{1 - alpha/2} (1.959964 for alpha = 0.05)."""
    if not (isinstance(alpha, numbers.Real) and 0.0 < float(alpha) < 1.0):
        raise ConfigError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    return stats.z_value(stats.confidence_of_alpha(float(alpha)))


@dataclass(frozen=True)
class LabelCounts:
    """Sufficient statistics of a partitioned-supervision label set with a fixed number of options K.

    ``s_o`` of the ``n_o`` ordinary labels agree with the prediction; ``s_c`` of the ``n_c``
    complementary labels differ from the prediction.

    For ``K = 2`` a complementary label ("not option 1") names the true label ("option 2"), so the
    complementary counts are folded into the ordinary ones on construction: afterwards ``n_c == 0``
    and ``n_converted`` says how many labels were converted. (W = 1{pred != not-label} is then exactly
    Z = 1{pred == label}.)
    """

    k: int
    n_o: int = 0
    s_o: int = 0
    n_c: int = 0
    s_c: int = 0
    n_converted: int = 0

    def __post_init__(self) -> None:
        for name in ("k", "n_o", "s_o", "n_c", "s_c", "n_converted"):
            object.__setattr__(self, name, _as_int(name, getattr(self, name)))
        if self.k < 2:
            raise ConfigError(f"K (the number of options) must be at least 2, got {self.k}")
        for n_name, s_name in (("n_o", "s_o"), ("n_c", "s_c")):
            n, s = getattr(self, n_name), getattr(self, s_name)
            if n < 0 or not 0 <= s <= n:
                raise ConfigError(f"need 0 <= {s_name} <= {n_name}, got {s_name}={s}, {n_name}={n}")
        if self.n_converted < 0:
            raise ConfigError(f"n_converted must be >= 0, got {self.n_converted}")
        if self.k == 2 and self.n_c > 0:
            object.__setattr__(self, "n_o", self.n_o + self.n_c)
            object.__setattr__(self, "s_o", self.s_o + self.s_c)
            object.__setattr__(self, "n_converted", self.n_converted + self.n_c)
            object.__setattr__(self, "n_c", 0)
            object.__setattr__(self, "s_c", 0)

    @property
    def n(self) -> int:
        """Total number of labels N = n_o + n_c."""
        return self.n_o + self.n_c

    @property
    def a_ord(self) -> float:
        """A_ord = S_o / n_o (nan without ordinary labels)."""
        return self.s_o / self.n_o if self.n_o else math.nan

    @property
    def q_hat(self) -> float:
        """q_hat = S_c / n_c, the share of predictions avoiding the complementary label (nan if n_c = 0)."""
        return self.s_c / self.n_c if self.n_c else math.nan

    @property
    def a_comp(self) -> float:
        """A_comp = (K-1) q_hat - (K-2) (Eq. 2; nan if n_c = 0)."""
        return (self.k - 1) * self.q_hat - (self.k - 2) if self.n_c else math.nan

    @property
    def var_ord(self) -> float:
        """Plug-in variance of A_ord: A_ord (1 - A_ord) / n_o."""
        a = self.a_ord
        return a * (1.0 - a) / self.n_o if self.n_o else math.nan

    @property
    def var_comp(self) -> float:
        """Plug-in variance of A_comp: (K-1)^2 q_hat (1 - q_hat) / n_c (Eq. 3 with A replaced by A_comp)."""
        q = self.q_hat
        return (self.k - 1) ** 2 * q * (1.0 - q) / self.n_c if self.n_c else math.nan

    def __add__(self, other: LabelCounts) -> LabelCounts:
        if not isinstance(other, LabelCounts):
            return NotImplemented
        if other.k != self.k:
            raise ConfigError(f"cannot add counts with K={self.k} and K={other.k}")
        return LabelCounts(
            k=self.k,
            n_o=self.n_o + other.n_o,
            s_o=self.s_o + other.s_o,
            n_c=self.n_c + other.n_c,
            s_c=self.s_c + other.s_c,
            n_converted=self.n_converted + other.n_converted,
        )

    def to_dict(self) -> dict[str, int]:
        """Plain dict (for JSON)."""
        return asdict(self)


@dataclass(frozen=True)
class AccuracyEstimate:
    """An accuracy estimate with its standard error and confidence interval.

    ``interval`` says how ``ci_low``/``ci_high`` were computed: ``"score"`` (the default) inverts a
    test whose variance is taken at the hypothesised accuracy (Wilson-type; for ML the score test of
    the joint likelihood), so it stays a proper interval when an estimate or a label set sits at 0 or
    1; ``"wald"`` is the paper's plug-in interval ``estimate -/+ z_{1-alpha/2} * se``, which collapses
    to a point when the plug-in variance is 0. Both are intersected with [0, 1] (the accuracy lies in
    [0, 1], so the intersection keeps the interval's coverage). ``se`` is the plug-in standard error
    (for ML: at the estimate) either way. ``estimate`` itself is *not* clipped except for ML: A_comp and
    the mixtures are unbiased only unclipped and can fall below 0 on small samples. ``raw_estimate`` is
    the value before any clipping; ``clipped`` says whether the two differ. ``weight`` is the weight
    on A_ord for mixtures (None otherwise). ``design_effect`` multiplied every variance (1 for
    independent labels; see :func:`cluster_design_effect`).
    """

    method: str
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    alpha: float
    k: int
    n_o: int
    n_c: int
    weight: float | None = None
    raw_estimate: float | None = None
    clipped: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    interval: str = "score"
    design_effect: float = 1.0

    @property
    def confidence(self) -> float:
        """Nominal coverage of the interval, 1 - alpha."""
        return 1.0 - self.alpha

    @property
    def half_width(self) -> float:
        """Unclipped half-width z * se of the Wald interval (the score interval is not symmetric)."""
        return z_value(self.alpha) * self.se

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON)."""
        d = asdict(self)
        d["notes"] = list(self.notes)
        return d

    def as_interval(self) -> stats.Interval:
        """The estimate (clipped to [0, 1], where its interval lies) and its interval as the shared
        :class:`seerbench.stats.Interval`."""
        return stats.Interval(
            min(1.0, max(0.0, self.estimate)),
            self.ci_low,
            self.ci_high,
            None,
            f"{self.interval} ({self.method})",
            self.n_o + self.n_c,
            self.confidence,
            "; ".join(self.notes) or None,
        )


def _interval_arg(interval: Any) -> IntervalKind:
    if interval == "score" or interval == "wald":
        return "score" if interval == "score" else "wald"
    raise ConfigError(f"interval must be one of {list(INTERVALS)}, got {interval!r}")


def _deff_arg(deff: Any) -> float:
    if isinstance(deff, bool) or not isinstance(deff, numbers.Real) or not (0.0 < float(deff) < math.inf):
        raise ConfigError(f"design_effect must be a positive finite number, got {deff!r}")
    return float(deff)


def _result(
    method: str,
    counts: LabelCounts,
    estimate: float,
    se: float,
    alpha: float,
    score_bounds: tuple[Any, Any],
    *,
    interval: str = "score",
    deff: float = 1.0,
    weight: float | None = None,
    raw: float | None = None,
    clipped: bool = False,
    notes: list[str] | None = None,
) -> AccuracyEstimate:
    """Assemble an estimate; ``se`` excludes the design effect, ``score_bounds`` include it."""
    notes = list(notes or [])
    se = se * math.sqrt(deff)
    if counts.n_converted:
        notes.append(
            f"K=2: {counts.n_converted} complementary labels were converted to ordinary labels "
            "(the other option is the true one)"
        )
    if interval == "wald":
        half = z_value(alpha) * se
        low, high = estimate - half, estimate + half
        if se == 0.0:
            notes.append(
                "plug-in standard error is 0: the Wald interval is degenerate (use the score interval)"
            )
    else:
        low, high = float(score_bounds[0]), float(score_bounds[1])
        if math.isnan(low) or math.isnan(high):
            notes.append(
                "no accuracy in [0, 1] fits these counts (impossible under uniform complementary labels, "
                "Eq. 1): the score interval is empty; check how the complementary labels were drawn"
            )
    if deff != 1.0:
        notes.append(f"variances multiplied by the design effect {deff:.4g} (clustered labels)")
    return AccuracyEstimate(
        method=method,
        estimate=float(estimate),
        se=float(se),
        ci_low=math.nan if math.isnan(low) else float(min(1.0, max(0.0, low))),
        ci_high=math.nan if math.isnan(high) else float(max(0.0, min(1.0, high))),
        alpha=float(alpha),
        k=counts.k,
        n_o=counts.n_o,
        n_c=counts.n_c,
        weight=None if weight is None else float(weight),
        raw_estimate=float(estimate if raw is None else raw),
        clipped=clipped,
        notes=tuple(notes),
        interval=interval,
        design_effect=float(deff),
    )


def _linear(
    method: str,
    counts: LabelCounts,
    estimate: float,
    var: float,
    w: float,
    alpha: float,
    interval: Any,
    deff: Any,
    **kw: Any,
) -> AccuracyEstimate:
    """A linear estimator w A_ord + (1 - w) A_comp with its linear score interval."""
    interval, deff = _interval_arg(interval), _deff_arg(deff)
    bounds = _intervals.linear_score_bounds(
        estimate, w, counts.n_o, counts.n_c, counts.k, z_value(alpha), deff
    )
    return _result(
        method, counts, estimate, math.sqrt(var), alpha, bounds, interval=interval, deff=deff, **kw
    )


def _check_counts(counts: Any) -> LabelCounts:
    if not isinstance(counts, LabelCounts):
        raise ConfigError(f"expected LabelCounts, got {type(counts).__name__}")
    return counts


def _need_ordinary(counts: LabelCounts, what: str) -> None:
    if counts.n_o == 0:
        raise DataError(f"{what} needs ordinary labels; the label set has none")


def _need_complementary(counts: LabelCounts, what: str) -> None:
    if counts.n_c == 0:
        extra = (
            f" (with K=2 its {counts.n_converted} complementary labels were converted to ordinary ones)"
            if counts.n_converted
            else ""
        )
        raise DataError(f"{what} needs complementary labels; the label set has none{extra}")


def ordinary_accuracy(
    counts: LabelCounts, *, alpha: float = 0.05, interval: IntervalKind = "score", design_effect: float = 1.0
) -> AccuracyEstimate:
    """A_ord = S_o / n_o with plug-in SE sqrt(A_ord (1 - A_ord) / n_o); the score interval is Wilson's.

    ``interval``: "score" (default; Wilson-type, never degenerate) or "wald" (the paper's plug-in
    interval); ``design_effect`` multiplies every variance (clustered labels).
    """
    counts = _check_counts(counts)
    _need_ordinary(counts, "A_ord")
    return _linear("ord", counts, counts.a_ord, counts.var_ord, 1.0, alpha, interval, design_effect)


def complementary_accuracy(
    counts: LabelCounts, *, alpha: float = 0.05, interval: IntervalKind = "score", design_effect: float = 1.0
) -> AccuracyEstimate:
    """A_comp = (K-1) q_hat - (K-2) (Eq. 2), unbiased under uniform complementary labels (Eq. 1).

    Plug-in SE: the square root of Eq. 3 with A replaced by A_comp, which equals
    (K-1) sqrt(q_hat (1 - q_hat) / n_c). Needs K >= 3: for K = 2 complementary labels are converted to
    ordinary ones (see :class:`LabelCounts`) and this raises :class:`DataError`. The score interval
    is the Wilson interval for q mapped through Eq. 2 (variance Eq. 3 at the hypothesised A).
    ``interval`` and ``design_effect`` as in :func:`ordinary_accuracy`.
    """
    counts = _check_counts(counts)
    _need_complementary(counts, "A_comp")
    return _linear("comp", counts, counts.a_comp, counts.var_comp, 0.0, alpha, interval, design_effect)


def raw_complementary_accuracy(
    counts: LabelCounts, *, alpha: float = 0.05, interval: IntervalKind = "score", design_effect: float = 1.0
) -> AccuracyEstimate:
    """q_hat = S_c / n_c, the share of predictions avoiding the complementary label.

    A *biased* estimate of accuracy (E q = (A + K - 2)/(K - 1)) but with (K-1)^2 times smaller variance
    than A_comp; the paper (Section 3.4, Appendix H) uses it as a fitness signal. For a fixed K it ranks
    systems exactly as A_comp does, being an increasing linear map of it. The score interval is
    Wilson's for the proportion q.
    """
    counts = _check_counts(counts)
    _need_complementary(counts, "q_hat")
    interval, deff = _interval_arg(interval), _deff_arg(design_effect)
    q = counts.q_hat
    # Wilson for a proportion: the ordinary-arm formula with n_c trials.
    bounds = _intervals.linear_score_bounds(q, 1.0, counts.n_c, 0, counts.k, z_value(alpha), deff)
    return _result(
        "q", counts, q, math.sqrt(q * (1.0 - q) / counts.n_c), alpha, bounds, interval=interval, deff=deff
    )


def complementary_variance(accuracy: float, k: int, n_c: int) -> float:
    """Var(A_comp) = (A + K - 2)(1 - A) / n_c (Eq. 3) at a known accuracy A."""
    a = _accuracy_arg(accuracy)
    k = _as_int("k", k)
    n_c = _as_int("n_c", n_c)
    if k < 2:
        raise ConfigError(f"K must be at least 2, got {k}")
    if n_c < 1:
        raise ConfigError(f"n_c must be at least 1, got {n_c}")
    return (a + k - 2) * (1.0 - a) / n_c


def _accuracy_arg(accuracy: Any, *, open_low: bool = False) -> float:
    if isinstance(accuracy, bool) or not isinstance(accuracy, numbers.Real):
        raise ConfigError(f"accuracy must be a number in [0, 1], got {accuracy!r}")
    a = float(accuracy)
    if not (0.0 <= a <= 1.0) or (open_low and a == 0.0):
        interval = "(0, 1]" if open_low else "[0, 1]"
        raise ConfigError(f"accuracy must lie in {interval}, got {accuracy!r}")
    return a


def _weight_arg(weight: Any) -> float:
    if isinstance(weight, bool) or not isinstance(weight, numbers.Real) or not 0.0 <= float(weight) <= 1.0:
        raise ConfigError(f"weight must be a number in [0, 1], got {weight!r}")
    return float(weight)


def mixture_accuracy(
    counts: LabelCounts,
    weight: float,
    *,
    alpha: float = 0.05,
    interval: IntervalKind = "score",
    design_effect: float = 1.0,
) -> AccuracyEstimate:
    """A_mix = w A_ord + (1 - w) A_comp at a user-fixed weight w on the ordinary estimate.

    Unbiased for any fixed w (the two label sets are disjoint and independent). Plug-in variance
    w^2 Var(A_ord) + (1 - w)^2 Var(A_comp). w = 1 needs only ordinary labels, w = 0 only
    complementary ones; anything in between needs both. The score interval solves
    (A_mix - A)^2 <= z^2 [w^2 A(1-A)/n_o + (1-w)^2 (A+K-2)(1-A)/n_c] for A.
    """
    counts = _check_counts(counts)
    w = _weight_arg(weight)
    what = f"the mixture at fixed w={w:g}"
    if w > 0.0:
        _need_ordinary(counts, what)
    if w < 1.0:
        _need_complementary(counts, what)
    est, var = _combine(counts, w)
    return _linear("mix", counts, est, var, w, alpha, interval, design_effect, weight=w)


def _combine(counts: LabelCounts, w: float) -> tuple[float, float]:
    """w A_ord + (1 - w) A_comp and its variance w^2 Var(A_ord) + (1 - w)^2 Var(A_comp); an arm with
    zero weight is left out entirely (it may have no labels, hence no estimate)."""
    est, var = 0.0, 0.0
    if w > 0.0:
        est += w * counts.a_ord
        var += w * w * counts.var_ord
    if w < 1.0:
        est += (1.0 - w) * counts.a_comp
        var += (1.0 - w) ** 2 * counts.var_comp
    return est, var


def ivw_weight(counts: LabelCounts) -> float:
    """The plug-in inverse-variance weight on A_ord (Eq. 7); see :func:`ivw_accuracy`."""
    return _ivw_weight_notes(counts)[0]


def _ivw_weight_notes(counts: LabelCounts) -> tuple[float, list[str]]:
    """The plug-in inverse-variance weight on A_ord (Eq. 7) and notes on any fallback used.

    w_hat = Var(A_comp) / (Var(A_ord) + Var(A_comp)) with plug-in variances. Edge cases: no ordinary
    labels -> 0; no complementary labels -> 1; a plug-in variance of 0 (a label set that is all
    correct / all avoided, or all wrong) -> Eq. 8 at the pilot A_ML. Eq. 7 would put the whole weight
    on the arm whose plug-in variance is 0 and drop the other label set (K = 10, 484/500 ordinary
    correct, 500/500 complementary avoided: IVW = A_comp = 1 +/- 0 although A_ord = 0.968); Eq. 8 is
    the same optimal weight written with the variances at one accuracy (Eq. 3 and A(1-A)), which
    share the factor (1 - A) and so stay comparable at the boundary. The pilot A_ML uses both label sets.
    """
    counts = _check_counts(counts)
    if counts.n == 0:
        raise DataError("the label set is empty")
    if counts.n_o == 0:
        return 0.0, ["no ordinary labels: IVW is A_comp"]
    if counts.n_c == 0:
        return 1.0, ["no complementary labels: IVW is A_ord"]
    v_o, v_c = counts.var_ord, counts.var_comp
    if v_o > 0.0 and v_c > 0.0:
        return v_c / (v_o + v_c), []
    # Eq. 8 is defined for every pilot in [0, 1]: its denominator is >= (K-2) n_o > 0 for K >= 3.
    pilot = min(1.0, max(0.0, _ml_root(counts)))
    w = float(_intervals.eq8_weight(pilot, counts.n_o, counts.n_c, counts.k))
    which = (
        "both plug-in variances are"
        if v_o + v_c == 0.0
        else ("the ordinary plug-in variance is" if v_o == 0.0 else "the complementary plug-in variance is")
    )
    return w, [f"{which} 0 (Eq. 7 would drop a label set); weight from Eq. 8 at pilot A_ML = {pilot:.6g}"]


def ivw_accuracy(
    counts: LabelCounts, *, alpha: float = 0.05, interval: IntervalKind = "score", design_effect: float = 1.0
) -> AccuracyEstimate:
    """A_IVW = w_hat A_ord + (1 - w_hat) A_comp with the plug-in weight of Eq. 7.

    Plug-in variance: the harmonic combination Var(A_ord) Var(A_comp) / (Var(A_ord) + Var(A_comp)),
    which equals w_hat^2 Var(A_ord) + (1 - w_hat)^2 Var(A_comp). The weight is estimated from the same
    data, so the estimator is consistent rather than exactly unbiased (Section 2.2). Where a plug-in
    variance is 0 the weight comes from Eq. 8 at the pilot A_ML (see :func:`ivw_weight`) and the
    variance is w^2 Var(A_ord) + (1 - w)^2 Var(A_comp) at that weight. The score interval is the one
    of :func:`mixture_accuracy` at the estimated weight.
    """
    counts = _check_counts(counts)
    w, notes = _ivw_weight_notes(counts)
    est, var = _combine(counts, w)
    return _linear("ivw", counts, est, var, w, alpha, interval, design_effect, weight=w, notes=notes)


def _ml_root(counts: LabelCounts) -> float:
    """The stationary point of the joint log-likelihood (Eq. 9), before clipping to [0, 1]."""
    k = counts.k
    t = (counts.n_o - counts.s_o) + (counts.n_c - counts.s_c)
    alpha_ = float(counts.n)
    beta = (k - 2) * t + (k - 3) * counts.s_o - counts.s_c
    gamma = -(k - 2) * counts.s_o
    if gamma == 0:
        # Either K = 2 (the likelihood is Bin(N, A)) or S_o = 0: the quadratic's roots are 0 and
        # -beta/alpha, and -beta/alpha is the stationary point of the likelihood (extended below 0 when
        # it is negative, which is what clipping then reports).
        return -beta / alpha_
    disc = math.sqrt(beta * beta - 4.0 * alpha_ * gamma)
    # The positive root; written without cancellation when beta > 0.
    return (-beta + disc) / (2.0 * alpha_) if beta <= 0 else (2.0 * gamma) / (-beta - disc)


def log_likelihood(accuracy: float, counts: LabelCounts) -> float:
    """The joint log-likelihood l(A) of Section 2.2 (binomial constants dropped); -inf outside support."""
    counts = _check_counts(counts)
    a = float(accuracy)
    k = counts.k
    q = (a + k - 2) / (k - 1)

    def term(count: int, p: float) -> float:
        if count == 0:
            return 0.0
        return count * math.log(p) if p > 0.0 else -math.inf

    return (
        term(counts.s_o, a)
        + term(counts.n_o - counts.s_o, 1.0 - a)
        + term(counts.s_c, q)
        + term(counts.n_c - counts.s_c, 1.0 - q)
    )


def ml_accuracy(
    counts: LabelCounts, *, alpha: float = 0.05, interval: IntervalKind = "score", design_effect: float = 1.0
) -> AccuracyEstimate:
    """Closed-form maximum-likelihood accuracy (Eq. 9) with its large-sample standard error.

    A_ML = (-beta + sqrt(beta^2 - 4 alpha gamma)) / (2 alpha) with alpha = N,
    beta = (K-2)(T_o + T_c) + (K-3) S_o - S_c, gamma = -(K-2) S_o. It equals A_ord when n_c = 0 and
    A_comp when n_o = 0, except that it is clipped to [0, 1]: when the stationary point of the
    likelihood lies below 0 (possible only with S_o = 0, e.g. A_comp < 0) the maximiser over [0, 1] is
    0, and ``clipped`` / ``raw_estimate`` report it.

    se = I(A_ML)^(-1/2) with the expected information at the estimate,
    I(A) = n_o / (A (1 - A)) + n_c / ((A + K - 2)(1 - A)) (= n_c / ((K-1)^2 q (1 - q)) at q = q(A)), one
    of the two choices the paper names ("observed or expected information"). The paper's display
    takes q_hat instead of q(A_ML) in the complementary part, which gives se = 0 at an interior
    estimate whenever every complementary label is avoided (q_hat = 1); at the estimate it is 0 only
    when A_ML itself is 0 or 1. It reduces to the SEs of A_ord and A_comp in the two one-sided cases.
    The default interval is the score interval of the joint likelihood (see ``_intervals``).
    """
    counts = _check_counts(counts)
    if counts.n == 0:
        raise DataError("A_ML needs at least one label; the label set is empty")
    interval, deff = _interval_arg(interval), _deff_arg(design_effect)
    raw = _ml_root(counts)
    est = min(1.0, max(0.0, raw))
    # Rounding can push an exact boundary root a hair outside [0, 1]; only a real excursion is clipping.
    clipped = raw < -1e-12 or raw > 1.0 + 1e-12
    info = 0.0
    if counts.n_o:
        d = est * (1.0 - est)
        info += counts.n_o / d if d > 0 else math.inf
    if counts.n_c:
        d = (est + counts.k - 2) * (1.0 - est)
        info += counts.n_c / d if d > 0 else math.inf
    se = 0.0 if math.isinf(info) else 1.0 / math.sqrt(info)
    notes = [f"clipped to [0, 1] from {raw:.6g}"] if clipped else []
    bounds = _intervals.ml_score_bounds(
        est, counts.s_o, counts.n_o, counts.s_c, counts.n_c, counts.k, z_value(alpha), deff
    )
    return _result(
        "ml",
        counts,
        est,
        se,
        alpha,
        bounds,
        interval=interval,
        deff=deff,
        raw=raw,
        clipped=clipped,
        notes=notes,
    )
