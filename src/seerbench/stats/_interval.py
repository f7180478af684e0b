"""The one interval type and the one confidence convention, with the closed-form intervals: Wilson
(score) for a proportion and Student's t for a mean.

Confidence is always given as the coverage (0.95), never as alpha; :func:`z_value` and
:func:`confidence_of_alpha` are the only conversions. An interval always holds its estimate
(``ci_low <= estimate <= ci_high``, made so on construction for finite values): closed-form
bounds that round a hair inside an estimate at 0 or 1 are moved onto it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from seerbench.stats._quantile import norm_ppf, t_ppf


@dataclass(frozen=True)
class Interval:
    """An estimate with its confidence interval.

    ``method`` names how the interval was made (``"wilson"``, ``"wilson at n_eff"``, ``"t"``,
    ``"percentile bootstrap"``, ``"cluster bootstrap (...)"``, ``"score"``, ``"mover"``...), ``n``
    the number of values it summarises, ``n_eff`` the effective sample size it was built with (None
    where that means nothing, e.g. a difference), ``confidence`` its nominal coverage. An empty
    interval (the data are impossible under the model) has NaN bounds and a ``note`` saying why.
    """

    estimate: float
    ci_low: float
    ci_high: float
    n_eff: float | None = None
    method: str = ""
    n: int | None = None
    confidence: float = 0.95
    note: str | None = None

    def __post_init__(self) -> None:
        e, lo, hi = self.estimate, self.ci_low, self.ci_high
        if all(isinstance(v, float | int) and math.isfinite(v) for v in (e, lo, hi)):
            # a bound a hair (or, for a skewed percentile interval, more) past the estimate is
            # moved onto it: an interval always holds its estimate
            object.__setattr__(self, "ci_low", float(min(lo, e)))
            object.__setattr__(self, "ci_high", float(max(hi, e)))

    @property
    def low(self) -> float:
        return self.ci_low

    @property
    def high(self) -> float:
        return self.ci_high

    @property
    def width(self) -> float:
        return self.ci_high - self.ci_low

    @property
    def empty(self) -> bool:
        """True when there is no interval (NaN bounds)."""
        return math.isnan(self.ci_low) or math.isnan(self.ci_high)

    def covers(self, value: float) -> bool:
        return not self.empty and self.ci_low <= value <= self.ci_high

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_confidence(confidence: float) -> float:
    if not (isinstance(confidence, float | int) and 0.0 < float(confidence) < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(confidence)


def z_value(confidence: float = 0.95) -> float:
    """Two-sided standard-normal quantile for ``confidence`` (1.959964 at 0.95)."""
    return norm_ppf(0.5 + check_confidence(confidence) / 2)


def confidence_of_alpha(alpha: float) -> float:
    """The confidence of a two-sided test at level ``alpha`` (0.05 -> 0.95)."""
    return 1.0 - float(alpha)


def wilson(p: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``p`` observed on ``n`` (possibly fractional,
    effective) trials; exactly 0 or 1 at the bounds when ``p`` is 0 or 1."""
    if n <= 0 or math.isnan(p):
        return (math.nan, math.nan)
    z = z_value(confidence)
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(max(p * (1 - p), 0.0) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    lo, hi = max(0.0, centre - half), min(1.0, centre + half)
    # at p = 0 or 1 one bound is the estimate itself, analytically; keep it exact
    return (0.0 if p <= 0.0 else min(lo, p), 1.0 if p >= 1.0 else max(hi, p))


def wilson_interval(successes: float, n: float, confidence: float = 0.95) -> Interval:
    """The Wilson interval of ``successes / n`` as an :class:`Interval`."""
    if n <= 0:
        return Interval(math.nan, math.nan, math.nan, None, "wilson", 0, confidence, "no trials")
    p = successes / n
    lo, hi = wilson(p, n, confidence)
    return Interval(p, lo, hi, float(n), "wilson", round(n), confidence)


def t_interval(values: Sequence[float] | np.ndarray, confidence: float = 0.95) -> Interval:
    """Student's t interval of the mean of ``values`` (i.i.d.); NaN bounds with a note below two
    values or when they are all equal (a zero-width interval would claim certainty)."""
    x = np.asarray(values, dtype=float)
    n = int(x.size)
    mean = float(x.mean()) if n else math.nan
    if n < 2:
        return Interval(mean, math.nan, math.nan, None, "t", n, confidence, "fewer than 2 values")
    sd = float(x.std(ddof=1))
    if not sd > 0:
        return Interval(mean, math.nan, math.nan, float(n), "t", n, confidence, "no spread in the values")
    half = t_ppf(0.5 + check_confidence(confidence) / 2, n - 1) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, float(n), "t", n, confidence)


def t_interval_of(
    estimate: float, variance: float, df: float, confidence: float = 0.95, method: str = "t"
) -> Interval:
    """``estimate`` +- t * sqrt(``variance``) with Student's t at ``df`` degrees of freedom (at least
    1): for a variance from a (cluster) bootstrap, ``df`` the number of clusters behind it less one
    (with few clusters that variance is itself uncertain and the normal quantile undercovers)."""
    if math.isnan(estimate) or math.isnan(variance):
        return Interval(estimate, math.nan, math.nan, None, method, None, confidence)
    q = t_ppf(0.5 + check_confidence(confidence) / 2, max(df, 1.0))
    half = q * math.sqrt(max(variance, 0.0))
    return Interval(estimate, estimate - half, estimate + half, None, method, None, confidence)
