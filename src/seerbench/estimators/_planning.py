"""Sample-size planning for partitioned supervision (seed 001, Eq. 3-5 and Eq. 8)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from seerbench.errors import ConfigError
from seerbench.estimators._core import _accuracy_arg, _as_int, z_value

__all__ = [
    "SamplePlan",
    "complementary_labels_to_match",
    "labels_for_half_width",
    "plan_labels",
    "variance_ratio",
]


def _k_arg(k: Any) -> int:
    k = _as_int("k", k)
    if k < 2:
        raise ConfigError(f"K (the number of options) must be at least 2, got {k}")
    return k


def _n_arg(name: str, n: Any) -> int:
    n = _as_int(name, n)
    if n < 1:
        raise ConfigError(f"{name} must be at least 1, got {n}")
    return n


def variance_ratio(accuracy: float, k: int, n_ordinary: int, n_complementary: int) -> float:
    """Var(A_comp) / Var(A_ord) = (A + K - 2) n_o / (A n_c) (Eq. 4). Needs A > 0."""
    a = _accuracy_arg(accuracy, open_low=True)
    k = _k_arg(k)
    return (a + k - 2) * _n_arg("n_ordinary", n_ordinary) / (a * _n_arg("n_complementary", n_complementary))


def complementary_labels_to_match(accuracy: float, k: int, n_ordinary: int) -> int:
    """Complementary labels whose A_comp variance matches n_o ordinary labels: (1 + (K-2)/A) n_o (Eq. 5),
    rounded up. Needs A > 0 (at A = 0 no finite number suffices)."""
    a = _accuracy_arg(accuracy, open_low=True)
    k = _k_arg(k)
    n_o = _n_arg("n_ordinary", n_ordinary)
    # Round before ceil so that an exact product such as 3.0000000000000004 is not pushed up by one.
    return math.ceil(round((1.0 + (k - 2) / a) * n_o, 9))


def _ceil_n(x: float) -> int:
    return max(1, math.ceil(round(x, 9)))


@dataclass(frozen=True)
class HalfWidthPlan:
    """Labels needed so that a (1 - alpha) normal interval has half-width <= ``half_width``."""

    half_width: float
    n_ordinary_alone: int
    n_complementary_alone: int
    n_complementary_alongside: int | None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON)."""
        return asdict(self)


def labels_for_half_width(
    accuracy: float,
    k: int,
    half_width: float,
    *,
    alpha: float = 0.05,
    n_ordinary: int | None = None,
) -> HalfWidthPlan:
    """Sample sizes for a target CI half-width h at a planning accuracy A.

    * ordinary alone: n_o = z^2 A(1-A) / h^2
    * complementary alone: n_c = z^2 (A+K-2)(1-A) / h^2 (Eq. 3)
    * alongside ``n_ordinary`` ordinary labels, for the IVW estimator whose variance is
      1 / (n_o/(A(1-A)) + n_c/((A+K-2)(1-A))): n_c = ((z/h)^2 - n_o/(A(1-A))) (A+K-2)(1-A), or 0 when
      the ordinary labels already reach h.

    Each is rounded up and at least 1 (or 0 for the alongside case).
    """
    a = _accuracy_arg(accuracy, open_low=True)
    k = _k_arg(k)
    if isinstance(half_width, bool) or not isinstance(half_width, int | float) or not 0 < half_width < 1:
        raise ConfigError(f"half_width must lie strictly between 0 and 1, got {half_width!r}")
    z = z_value(alpha)
    target_info = (z / half_width) ** 2
    var_o1 = a * (1.0 - a)
    var_c1 = (a + k - 2) * (1.0 - a)
    alongside: int | None = None
    if n_ordinary is not None:
        n_o = _as_int("n_ordinary", n_ordinary)
        if n_o < 0:
            raise ConfigError(f"n_ordinary must be >= 0, got {n_o}")
        info_o = math.inf if var_o1 == 0.0 and n_o > 0 else (n_o / var_o1 if n_o else 0.0)
        missing = target_info - info_o
        alongside = 0 if missing <= 0 else math.ceil(round(missing * var_c1, 9))
    return HalfWidthPlan(
        half_width=float(half_width),
        n_ordinary_alone=_ceil_n(target_info * var_o1),
        n_complementary_alone=_ceil_n(target_info * var_c1),
        n_complementary_alongside=alongside,
    )


@dataclass(frozen=True)
class SamplePlan:
    """What ``seerbench plan`` prints: how complementary labels trade against ordinary ones.

    Half-widths are of (1 - alpha) normal intervals at the planning accuracy. ``ivw_*`` fields describe
    the Appendix-B practice of n_c = (K-1) n_o complementary labels combined with the n_o ordinary ones
    by IVW, with the optimal weight from Eq. 8.
    """

    k: int
    accuracy: float
    n_ordinary: int
    alpha: float
    n_complementary_to_match: int
    variance_ratio_equal_n: float
    half_width_ordinary: float
    half_width_complementary_equal_n: float
    half_width_complementary_matched: float
    n_complementary_k_minus_1: int
    ivw_weight_k_minus_1: float
    half_width_ivw_k_minus_1: float
    target: HalfWidthPlan | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON)."""
        return asdict(self)


def plan_labels(
    accuracy: float,
    k: int,
    n_ordinary: int,
    *,
    half_width: float | None = None,
    alpha: float = 0.05,
) -> SamplePlan:
    """Plan a partitioned-supervision study at a planning accuracy (e.g. a pilot A_ord).

    Combines Eq. 5 (complementary labels matching n_o ordinary ones), Eq. 4 (variance ratio at equal
    sizes), the interval half-widths these sizes give, the IVW combination at n_c = (K-1) n_o (weight
    Eq. 8), and, with ``half_width``, the sizes needed to reach it (:func:`labels_for_half_width`).
    """
    a = _accuracy_arg(accuracy, open_low=True)
    k = _k_arg(k)
    n_o = _n_arg("n_ordinary", n_ordinary)
    z = z_value(alpha)
    n_match = complementary_labels_to_match(a, k, n_o)
    var_o = a * (1.0 - a) / n_o
    n_km1 = (k - 1) * n_o
    # Eq. 8: optimal weight on A_ord at the planning accuracy.
    w = (a + k - 2) * n_o / (a * n_km1 + (a + k - 2) * n_o)
    var_c_km1 = (a + k - 2) * (1.0 - a) / n_km1
    var_ivw = w * w * var_o + (1.0 - w) ** 2 * var_c_km1
    target = (
        labels_for_half_width(a, k, half_width, alpha=alpha, n_ordinary=n_o)
        if half_width is not None
        else None
    )
    return SamplePlan(
        k=k,
        accuracy=a,
        n_ordinary=n_o,
        alpha=float(alpha),
        n_complementary_to_match=n_match,
        variance_ratio_equal_n=variance_ratio(a, k, n_o, n_o),
        half_width_ordinary=z * math.sqrt(var_o),
        half_width_complementary_equal_n=z * math.sqrt((a + k - 2) * (1.0 - a) / n_o),
        half_width_complementary_matched=z * math.sqrt((a + k - 2) * (1.0 - a) / n_match),
        n_complementary_k_minus_1=n_km1,
        ivw_weight_k_minus_1=w,
        half_width_ivw_k_minus_1=z * math.sqrt(var_ivw),
        target=target,
    )
