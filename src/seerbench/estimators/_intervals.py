"""Confidence intervals that keep their coverage near A = 0 and A = 1 (vectorised, numpy).

The plug-in (Wald) interval ``estimate -/+ z * se`` collapses to a point whenever a plug-in variance
is 0, i.e. whenever a label set is all-correct or all-wrong, which is the usual outcome when the
accuracy is near 1 (or 0) and the label set is small. The intervals here invert a test whose
variance is computed at the *hypothesised* accuracy A0 rather than at the estimate, so they never
collapse:

* **linear score interval** (Wilson-type), for the linear estimators A_ord, A_comp and
  A_mix = w A_ord + (1 - w) A_comp (IVW at its weight): all A0 in [0, 1] with
  (A_hat - A0)^2 <= z^2 V_w(A0), where
  V_w(A0) = w^2 A0 (1 - A0) / n_o + (1 - w)^2 (A0 + K - 2)(1 - A0) / n_c (Eq. 3 for the
  complementary arm). A quadratic inequality in A0, solved in closed form. For A_ord it is the Wilson
  interval; for A_comp it is the Wilson interval for q mapped through Eq. 2.
* **joint score interval** for ML: all A0 with U(A0)^2 / I(A0) <= z^2, U the score of the joint
  log-likelihood of Section 2.2 and I its expected information,
  U = n_o (A_ord - A0) / (A0 (1 - A0)) + n_c (A_comp - A0) / ((A0 + K - 2)(1 - A0)),
  I = n_o / (A0 (1 - A0)) + n_c / ((A0 + K - 2)(1 - A0)) (Appendix C's score functions).
  It reduces to the linear score interval of A_ord when n_c = 0 and of A_comp when n_o = 0. Found by
  bisection on each side of the estimate.

``deff`` (the design effect, >= 1 for positively correlated labels) multiplies every variance: it is
how clustered labels enter (see :func:`seerbench.estimators.cluster_design_effect`).

All functions accept numpy arrays (broadcast together) as well as scalars, so Monte Carlo checks can
compute thousands of intervals at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

_EPS = 1e-12  # distance from 0 and 1 at which the score statistic is evaluated instead of the endpoint
_BISECT_STEPS = 60  # halves [0, 1] down to 1e-18: below double resolution near any root


def linear_score_bounds(
    estimate: Any, weight: Any, n_o: Any, n_c: Any, k: Any, z: float, deff: Any = 1.0
) -> tuple[FloatArray, FloatArray]:
    """(low, high) of the Wilson-type interval of a linear estimator at weight ``weight`` on A_ord.

    An arm with zero weight may have no labels (its n may be 0). See the module docstring.
    """
    est = np.asarray(estimate, dtype=float)
    w = np.asarray(weight, dtype=float)
    n_o = np.asarray(n_o, dtype=float)
    n_c = np.asarray(n_c, dtype=float)
    k = np.asarray(k, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        co = np.where(w > 0.0, w * w / n_o, 0.0)
        cc = np.where(w < 1.0, (1.0 - w) ** 2 / n_c, 0.0)
    z2 = z * z * np.asarray(deff, dtype=float)
    # V(A) = v2 A^2 + v1 A + v0: A(1 - A) = A - A^2; (A + K - 2)(1 - A) = -A^2 + (3 - K) A + (K - 2)
    v2 = -(co + cc)
    v1 = co + cc * (3.0 - k)
    v0 = cc * (k - 2.0)
    # (est - A)^2 - z2 V(A) <= 0  <=>  p A^2 + b A + c <= 0 with p = 1 - z2 v2 >= 1
    p = 1.0 - z2 * v2
    b = -2.0 * est - z2 * v1
    c = est * est - z2 * v0
    # The discriminant is >= 0 in exact arithmetic (A = est satisfies the inequality); guard rounding.
    d = np.sqrt(np.maximum(b * b - 4.0 * p * c, 0.0))
    # the estimate satisfies the inequality exactly: rounding must not push a bound past it (at
    # A_hat = 1 the closed form gives 1 - 2e-15, an interval that excludes its own estimate)
    r_lo = np.minimum((-b - d) / (2.0 * p), est)
    r_hi = np.maximum((-b + d) / (2.0 * p), est)
    # no accuracy in [0, 1] passes the test: the data are impossible under the model (e.g. fewer
    # complementary labels avoided than Eq. 1 allows); an empty set (NaN), not [0, 0]
    empty = (r_hi < 0.0) | (r_lo > 1.0)
    low = np.where(empty, np.nan, np.clip(r_lo, 0.0, 1.0))
    high = np.where(empty, np.nan, np.clip(r_hi, 0.0, 1.0))
    return low, high


def ml_score_statistic(a0: Any, s_o: Any, n_o: Any, s_c: Any, n_c: Any, k: Any) -> FloatArray:
    """U(A0)^2 / I(A0) for the joint likelihood, for A0 strictly inside (0, 1)."""
    a0 = np.asarray(a0, dtype=float)
    s_o, n_o, s_c, n_c, k = (np.asarray(x, dtype=float) for x in (s_o, n_o, s_c, n_c, k))
    # (1 - A0) U = n_o (A_ord - A0)/A0 + n_c (A_comp - A0)/(A0 + K - 2), written with counts so an
    # empty arm contributes 0; (1 - A0) I = n_o / A0 + n_c / (A0 + K - 2).
    km2 = a0 + k - 2.0
    g = (s_o - n_o * a0) / a0 + ((k - 1.0) * s_c - (k - 2.0) * n_c - n_c * a0) / km2
    h = n_o / a0 + n_c / km2
    return np.asarray(g * g / (h * (1.0 - a0)), dtype=float)


def ml_score_bounds(
    estimate: Any, s_o: Any, n_o: Any, s_c: Any, n_c: Any, k: Any, z: float, deff: Any = 1.0
) -> tuple[FloatArray, FloatArray]:
    """(low, high) of the joint score interval around the ML estimate ``estimate`` (in [0, 1]).

    The statistic is 0 at the (unclipped) maximum and grows away from it; each end is the point where
    it reaches z^2 * deff, found by bisection between the estimate and 0 (or 1). An end is 0 (or 1)
    when the statistic stays below the threshold up to the boundary.
    """
    m = np.clip(np.asarray(estimate, dtype=float), _EPS, 1.0 - _EPS)
    thr = z * z * np.asarray(deff, dtype=float)

    def excess(a: FloatArray) -> FloatArray:
        return ml_score_statistic(a, s_o, n_o, s_c, n_c, k) - thr

    lo_out, lo_in = np.full_like(m, _EPS), m.copy()  # excess(lo_out) > 0 >= excess(lo_in) when bracketed
    hi_in, hi_out = m.copy(), np.full_like(m, 1.0 - _EPS)
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (lo_out + lo_in)
        out = excess(mid) > 0.0
        lo_out, lo_in = np.where(out, mid, lo_out), np.where(out, lo_in, mid)
        mid = 0.5 * (hi_in + hi_out)
        out = excess(mid) > 0.0
        hi_in, hi_out = np.where(out, hi_in, mid), np.where(out, mid, hi_out)
    low = np.where(excess(np.full_like(m, _EPS)) <= 0.0, 0.0, lo_in)
    high = np.where(excess(np.full_like(m, 1.0 - _EPS)) <= 0.0, 1.0, hi_in)
    e = np.clip(np.asarray(estimate, dtype=float), 0.0, 1.0)  # the interval holds its estimate
    return np.minimum(low, e), np.maximum(high, e)


def ml_root(s_o: Any, n_o: Any, s_c: Any, n_c: Any, k: Any) -> FloatArray:
    """Eq. 9 before clipping, vectorised (see :func:`seerbench.estimators.ml_accuracy`)."""
    s_o, n_o, s_c, n_c, k = (np.asarray(x, dtype=float) for x in (s_o, n_o, s_c, n_c, k))
    t = (n_o - s_o) + (n_c - s_c)
    alpha = n_o + n_c
    beta = (k - 2.0) * t + (k - 3.0) * s_o - s_c
    gamma = -(k - 2.0) * s_o
    disc = np.sqrt(beta * beta - 4.0 * alpha * gamma)
    with np.errstate(divide="ignore", invalid="ignore"):
        # gamma = 0: the roots are 0 and -beta/alpha, the latter the stationary point.
        pos = np.where(beta <= 0, (-beta + disc) / (2.0 * alpha), (2.0 * gamma) / (-beta - disc))
        return np.asarray(np.where(gamma == 0, -beta / alpha, pos), dtype=float)


def eq8_weight(pilot: Any, n_o: Any, n_c: Any, k: Any) -> FloatArray:
    """Eq. 8: w* = (A + K - 2) n_o / (A n_c + (A + K - 2) n_o) at a pilot accuracy A (needs K >= 3)."""
    a, n_o, n_c, k = (np.asarray(x, dtype=float) for x in (pilot, n_o, n_c, k))
    return np.asarray((a + k - 2.0) * n_o / (a * n_c + (a + k - 2.0) * n_o), dtype=float)
