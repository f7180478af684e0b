"""Sample sizes from a pilot (issue 26): how many questions a paired comparison needs to detect an
effect with a given power, or a cell's mean needs for a target interval half-width.

Normal approximations for the mean of ``n`` independent per-question values with standard
deviation ``sd``, widened by a design effect ``deff`` for questions that share a passage (the
variance of a mean over clusters divided by the variance it would have with independent questions,
:func:`design_effect`):

- two-sided test of "mean difference = 0" at level ``alpha``, true difference ``D``:
  ``power(n) = Phi(|D| sqrt(n / deff) / sd - z) + Phi(-|D| sqrt(n / deff) / sd - z)``,
  ``z = z_{1 - alpha/2}``; the smallest ``n`` with power ``>= 1 - beta`` is about
  ``deff ((z + z_{1 - beta}) sd / D)^2`` (:func:`questions_for_power` finds it exactly);
- half-width ``W`` of the ``1 - alpha`` interval: ``n = ceil(deff (z sd / W)^2)``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np

from seerbench.errors import ConfigError
from seerbench.estimators._core import z_value
from seerbench.stats import norm_ppf

__all__ = ["design_effect", "power_at", "questions_for_half_width", "questions_for_power"]


def _positive(name: str, x: float) -> float:
    if not (math.isfinite(x) and x > 0):
        raise ConfigError(f"{name} must be a positive number, got {x}")
    return float(x)


def power_at(n: int, sd: float, effect: float, *, alpha: float = 0.05, deff: float = 1.0) -> float:
    """Power of the two-sided level-``alpha`` test of a zero mean with ``n`` questions when the true
    mean is ``effect`` and the per-question values have standard deviation ``sd``."""
    z = z_value(alpha)
    if sd == 0:
        return 1.0 if effect != 0 else alpha
    from scipy.stats import norm  # here: scipy.stats alone takes 0.7 s to import

    shift = abs(effect) * math.sqrt(n / deff) / sd
    return float(norm.cdf(shift - z) + norm.cdf(-shift - z))


def questions_for_power(
    sd: float, effect: float, *, power: float = 0.8, alpha: float = 0.05, deff: float = 1.0
) -> int:
    """The smallest ``n`` whose :func:`power_at` reaches ``power``."""
    _positive("the effect size", abs(effect))
    if not 0.0 < power < 1.0:
        raise ConfigError(f"power must lie strictly between 0 and 1, got {power}")
    _positive("the design effect", deff)
    if sd == 0:
        return 1
    z = z_value(alpha)
    n = max(1, math.floor(deff * ((z + norm_ppf(power)) * sd / effect) ** 2))
    while power_at(n, sd, effect, alpha=alpha, deff=deff) < power:
        n += 1
    return n


def questions_for_half_width(sd: float, half_width: float, *, alpha: float = 0.05, deff: float = 1.0) -> int:
    """The questions a mean needs for a ``1 - alpha`` normal interval of half-width ``half_width``."""
    _positive("the half-width", half_width)
    return max(1, math.ceil(deff * (z_value(alpha) * sd / half_width) ** 2))


def design_effect(values: Sequence[float] | np.ndarray, clusters: Sequence[Hashable]) -> float:
    """Variance of the mean with ``clusters`` as the independent units (sum over clusters of the
    squared summed deviations) over the variance with independent values (sum of squared
    deviations); 1 when every value is its own cluster, never below 1 (a smaller ratio is noise)."""
    x = np.asarray(values, dtype=float)
    if x.size != len(clusters):
        raise ValueError(f"{x.size} values but {len(clusters)} cluster labels")
    dev = x - x.mean() if x.size else x
    within = float((dev**2).sum())
    if within == 0:
        return 1.0
    sums: dict[Hashable, float] = {}
    for c, d in zip(clusters, dev, strict=True):
        sums[c] = sums.get(c, 0.0) + float(d)
    return max(1.0, sum(s * s for s in sums.values()) / within)
