"""Anytime-valid confidence sequences for the mean of bounded values (issue 26).

A confidence sequence ``(C_t)`` covers the mean at *every* ``t`` at once with probability at least
``1 - alpha``: a run may look after each question and stop whenever it likes, and the interval at
the stopping time still has its coverage. A fixed-n interval (a bootstrap, Wald or t interval)
watched the same way does not: checked after every question it excludes the true mean at some
point far more often than ``alpha`` (tests/estimators/test_sequential.py shows both).

The sequence here is the hedged capital process with the predictable plug-in bet of Waudby-Smith
and Ramdas (2023), "Estimating means of bounded random variables by betting", JRSS-B, Sections
4-5, written from its formulas. For values ``X_i`` in ``[0, 1]`` (other bounds ``[lo, hi]`` are
mapped onto it) and a candidate mean ``m``:

- the running mean and variance estimates, with a prior of one pseudo-observation,
  ``mu_t = (1/2 + sum_{i<=t} X_i) / (t + 1)`` and
  ``s2_t = (1/4 + sum_{i<=t} (X_i - mu_i)^2) / (t + 1)``;
- the predictable bet ``b_t = sqrt(2 log(2/alpha) / (s2_{t-1} t log(1 + t)))`` (``s2_0 = 1/4``),
  truncated per side: ``l+_t(m) = min(b_t, c/m)``, ``l-_t(m) = min(b_t, c/(1 - m))``, ``c = 1/2``;
- the capital of a bettor on "mean > m" and on "mean < m",
  ``K+_t(m) = prod_{i<=t} (1 + l+_i(m)(X_i - m))``, ``K-_t(m) = prod_{i<=t} (1 - l-_i(m)(X_i - m))``,
  hedged: ``K_t(m) = max(theta K+_t(m), (1 - theta) K-_t(m))`` with ``theta = 1/2``;
- ``C_t = {m : K_t(m) < 1/alpha}``, an interval; by Ville's inequality the true mean leaves it at
  some ``t`` with probability at most ``alpha``. The running intersection of ``C_1..C_t`` is as
  valid and never widens.

Covered: any quantity that is the mean of per-question values with known bounds, questions drawn
independently (or in a fixed random order) from the pool: judge accuracy (``[0, 1]``), the binary
Brier score (``[0, 1]``; multi-class ``[0, 2]``), and paired differences of such scores between two
cells on the same questions (``[-1, 1]``, :func:`paired_sequence`). Not covered: the log-score ASD
and anything else unbounded, unless it is clipped to known bounds first (a log score with
probabilities clipped to ``[eps, 1 - eps]`` lies in ``[log eps, log(1 - eps)]``, which is valid but
wide). Questions that share a passage are not independent: the sequence then covers only with
whole passages as the units (their mean values), which this module leaves to the caller.

Pure numpy. The interval is found on a grid of candidate means and rounded outward by one grid
step, so it is conservative by at most ``(hi - lo) / grid``; the search leaves out the candidates
whose capital is provably past the level (:func:`_kept_ends`), with the bounds of the full search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ConfidenceSequence",
    "confidence_sequence",
    "hedged_log_capital",
    "paired_sequence",
    "predictable_bets",
]

#: Truncation of the bets (the ``c`` of Waudby-Smith and Ramdas): a bet never stakes more than
#: this share of the capital, so ``1 +- l (X - m) >= 1 - c > 0``.
TRUNCATION = 0.5
#: Share of the capital on "mean > m" in the hedged process.
THETA = 0.5
#: Candidate means on the grid that finds the interval (so rounding widens it by <= 1/GRID).
GRID = 1000


def _check(alpha: float, lo: float, hi: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds must be finite with lo < hi, got [{lo}, {hi}]")


def _unit(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``x`` mapped from ``[lo, hi]`` onto ``[0, 1]``; a value outside the bounds is a ValueError
    (the guarantee holds only for values that respect them)."""
    if x.size and (not np.all(np.isfinite(x)) or x.min() < lo or x.max() > hi):
        bad = x[~(np.isfinite(x) & (x >= lo) & (x <= hi))][0]
        raise ValueError(
            f"a confidence sequence needs every value in [{lo:g}, {hi:g}]; got {float(bad):g} "
            "(clip an unbounded score to known bounds first)"
        )
    return (x - lo) / (hi - lo)


def predictable_bets(y: np.ndarray, alpha: float) -> np.ndarray:
    """The predictable plug-in bets ``b_t`` for values ``y`` in ``[0, 1]`` along the last axis:
    ``b_t`` uses ``y_1 .. y_{t-1}`` only."""
    t = np.arange(1, y.shape[-1] + 1, dtype=float)
    mu = (0.5 + np.cumsum(y, axis=-1)) / (t + 1)  # mu_t, after t values
    s2 = (0.25 + np.cumsum((y - mu) ** 2, axis=-1)) / (t + 1)  # s2_t
    s2_prev = np.concatenate([np.full((*y.shape[:-1], 1), 0.25), s2[..., :-1]], axis=-1)
    return np.sqrt(2.0 * math.log(2.0 / alpha) / (s2_prev * t * np.log1p(t)))


def hedged_log_capital(
    y: np.ndarray, m: np.ndarray | float, alpha: float, bets: np.ndarray | None = None
) -> np.ndarray:
    """``log K_t(m)`` of the hedged capital process for values ``y`` in ``[0, 1]`` (shape
    ``(..., T)``) and candidate means ``m`` (shape ``(G,)`` or a scalar): shape ``(..., T, G)``.
    The candidate ``m`` is rejected at ``t`` when this reaches ``log(1/alpha)``."""
    y = np.asarray(y, dtype=float)
    mm = np.atleast_1d(np.asarray(m, dtype=float))
    return np.swapaxes(_log_capital(y, mm, predictable_bets(y, alpha) if bets is None else bets), -1, -2)


def _log_capital(y: np.ndarray, mm: np.ndarray, bets: np.ndarray) -> np.ndarray:
    """:func:`hedged_log_capital` with the candidates before time, shape ``(..., G, T)``: each
    candidate's running sums run along contiguous memory. In place, one array a side, the same
    operations in the same order as ``cumsum(log1p(l+ (X - m))) + log(theta)`` and
    ``cumsum(log1p(-l- (X - m))) + log(1 - theta)``."""
    b = bets[..., None, :]
    m = mm[:, None]
    d = y[..., None, :] - m  # X_i - m
    with np.errstate(divide="ignore"):
        up = np.minimum(b, TRUNCATION / m)  # l+
        down = np.minimum(b, TRUNCATION / (1.0 - m))  # l-
    up *= d
    np.log1p(up, out=up)
    np.cumsum(up, axis=-1, out=up)
    up += math.log(THETA)
    np.negative(down, out=down)
    down *= d
    np.log1p(down, out=down)
    np.cumsum(down, axis=-1, out=down)
    down += math.log(1.0 - THETA)
    return np.maximum(up, down, out=up)


@dataclass(frozen=True)
class ConfidenceSequence:
    """A confidence sequence over values in ``[lo, hi]``: after ``t`` values (``t = 1..n``) the
    mean lies in ``[lower[t-1], upper[t-1]]``, for every ``t`` at once with probability
    ``>= 1 - alpha``. ``lower``/``upper`` are running intersections (they never widen)."""

    alpha: float
    lo: float
    hi: float
    means: np.ndarray  # running means of the values
    lower: np.ndarray
    upper: np.ndarray

    @property
    def n(self) -> int:
        return int(self.means.size)

    @property
    def interval(self) -> tuple[float, float]:
        """The interval after the last value (``(lo, hi)`` before any)."""
        if not self.n:
            return (self.lo, self.hi)
        return (float(self.lower[-1]), float(self.upper[-1]))

    @property
    def half_width(self) -> float:
        """The largest distance from the running mean to either end of the interval after the last
        value: the interval lies within ``mean +- half_width``. A sequence is not symmetric about
        its mean, so this is at least ``(upper - lower) / 2`` and is larger on the longer side. With
        no value (no estimate), the width of the bounds ``hi - lo``."""
        a, b = self.interval
        if not self.n:
            return self.hi - self.lo
        mean = float(self.means[-1])
        return max(mean - a, b - mean)

    def excludes(self, value: float) -> bool:
        """Whether the interval after the last value excludes ``value`` (e.g. a paired difference
        whose sign is settled excludes 0)."""
        a, b = self.interval
        return not a <= value <= b

    def summary(self) -> dict[str, Any]:
        a, b = self.interval
        mean = float(self.means[-1]) if self.n else math.nan
        return {
            "n": self.n,
            "mean": mean,
            "ci_low": a,
            "ci_high": b,
            "confidence": 1 - self.alpha,
            "method": "betting confidence sequence (anytime-valid)",
            "bounds": [self.lo, self.hi],
        }


def confidence_sequence(
    values: Any, *, alpha: float = 0.05, lo: float = 0.0, hi: float = 1.0, grid: int = GRID
) -> ConfidenceSequence:
    """The anytime-valid confidence sequence of the mean of ``values`` (in the order given, each
    in ``[lo, hi]``): see the module docstring. The order matters and must not be chosen after
    seeing the values (a run's seed-fixed question order is fine)."""
    _check(alpha, lo, hi)
    x = np.asarray(values, dtype=float).ravel()
    y = _unit(x, lo, hi)
    n = y.size
    cand = np.linspace(0.0, 1.0, grid + 1)
    if n:
        first, last = _kept_ends(y, predictable_bets(y, alpha), cand, math.log(1.0 / alpha))
    else:
        first, last = np.full(0, grid + 1), np.full(0, -1)
    empty = last < 0  # no candidate kept (a set narrower than the grid): claim nothing there
    low_i = np.where(empty, 0, np.maximum(first - 1, 0))
    high_i = np.where(empty, grid, np.minimum(last + 1, grid))
    lower = np.maximum.accumulate(cand[low_i]) if n else np.empty(0)
    upper = np.minimum.accumulate(cand[high_i]) if n else np.empty(0)
    cross = lower > upper  # the running intersection emptied (a miss): keep the last non-empty one
    if cross.any():
        i = int(np.argmax(cross))
        lower[i:], upper[i:] = lower[i - 1] if i else 0.0, upper[i - 1] if i else 1.0
    scale = hi - lo
    means = np.cumsum(x) / np.arange(1, n + 1) if n else np.empty(0)
    return ConfidenceSequence(alpha, lo, hi, means, lo + scale * lower, lo + scale * upper)


# ---- the grid search ------------------------------------------------------------------------------
#
# The interval at ``t`` needs only the first and the last candidate kept at ``t``. Every candidate's
# running sums of log terms must still be added up value by value (a float sum cannot be resumed
# without its terms), but a candidate whose capital is far past the level is rejected without
# being looked at, by monotonicity: in exact arithmetic each log term of the "mean > m" side,
# ``log(1 + min(b, c/m) (y - m))``, is non-increasing in ``m`` (for ``y >= m`` both factors fall; for
# ``y < m`` it is ``b (y - m)`` or ``c y / m - c``, both non-increasing), so ``log K+_t(m)`` is too, and
# ``log K-_t(m)`` (the same with ``y, m -> 1 - y, 1 - m``) is non-decreasing. The computed values are
# within ``E_t`` (:func:`_rounding`) of the exact ones, so a computed ``log(theta K+_t(m_k)) >= level +
# 2 E_t`` proves every computed ``log(theta K+_t(m_j))``, ``j < k``, at least ``level``: rejected, as the
# full search would find. The search therefore keeps a window of candidates ``[a, b)`` and advances
# their sums a slab of time steps at a time, exactly as the full search adds them (the same
# operations on the same values in the same order, a slab's first term added to the sum carried from
# the slab before); at each ``t`` the window's lowest candidate must prove everything below it
# rejected (or be candidate 0) and its highest everything above it (or be the last); where one does
# not, the window grows, the new candidates' sums recomputed from the first value. After each slab,
# candidates more than :data:`_SLACK` past the level are left out of the window.

#: Time steps per slab of the grid search: ``t / _SLAB_SHARE`` within these bounds (short slabs
#: early, while the window narrows fast).
_SLAB, _SLAB_MAX, _SLAB_SHARE = 32, 256, 4
#: Log capital past ``level + 2 E_t`` at which a candidate on the window's edge is left out of it.
_SLACK = 2.0
#: Candidates added at once where the window must grow (doubling while it must).
_GROW = 16


def _rounding(bets: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """``E_t`` (shape ``(n,)``): a bound on how far a computed ``log(theta K+-_t(m))`` of any grid
    candidate lies from its exact value. Per term ``x = log1p(l d)``: the product ``l d`` carries three
    roundings (``y - m``, ``c / m`` and the product), which move ``log1p`` by at most ``3.02 u`` (its
    slope is at most ``1 / (1 - c)`` and ``|l d| <= c`` where ``l d < 0``; ``l d / (1 + l d) < 1``
    where ``l d >= 0``); ``log1p`` itself is taken to be within 8 ulps, ``16 u |x|``. With ``|x| <=
    X`` the running sum of ``t`` terms rounds by at most ``u X t (t + 1) / 2`` in all, and ``+ log(theta)``
    once more by ``u (X t + 1)``: ``E_t <= u (X t (t + 1) / 2 + (17 X + 4) t + X t + 1)``, which
    ``8 u (X + 4) (t + 2)^2`` exceeds."""
    u = 2.0**-53
    reach = float(bets.max())  # l d <= l <= b for m = 0 or 1; else <= c / m or c / (1 - m)
    if cand.size > 1:
        reach = max(reach, TRUNCATION / min(float(cand[1]), 1.0 - float(cand[-2])))
    big = math.log1p(1.01 * reach) + 1.0  # X: log1p of the largest stake, or |log(1 - c)| < 1
    t = np.arange(1, bets.size + 1, dtype=float)
    return 8.0 * u * (big + 4.0) * (t + 2.0) ** 2


def _slab(
    y: np.ndarray,
    bets: np.ndarray,
    m: np.ndarray,
    t0: int,
    t1: int,
    carry: tuple[np.ndarray, np.ndarray] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The running sums ``sum_{i<=t} log1p(l+_i (X_i - m))`` and ``sum_{i<=t} log1p(-l-_i (X_i - m))``
    of candidates ``m`` at ``t = t0..t1-1`` (shape ``(m.size, t1 - t0)``), continuing the sums at
    ``t0 - 1`` in ``carry`` (none at ``t0 = 0``): each value as :func:`_log_capital` adds it."""
    b = bets[t0:t1]
    mc = m[:, None]
    d = y[t0:t1] - mc  # X_i - m
    if float(b.max()) <= TRUNCATION:  # c/m, c/(1-m) >= c for m in [0, 1]: no bet is truncated
        up = d * b
        down = np.negative(up)  # -(l d) is (-l) d exactly
    else:
        with np.errstate(divide="ignore"):
            up = np.minimum(b, TRUNCATION / mc)  # l+
            down = np.minimum(b, TRUNCATION / (1.0 - mc))  # l-
        up *= d
        np.negative(down, out=down)
        down *= d
    np.log1p(up, out=up)
    np.log1p(down, out=down)
    if carry is not None:
        up[:, 0] += carry[0]
        down[:, 0] += carry[1]
    np.cumsum(up, axis=1, out=up)
    np.cumsum(down, axis=1, out=down)
    return up, down


def _history(
    y: np.ndarray, bets: np.ndarray, m: np.ndarray, t0: int, t1: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_slab` at ``t0..t1-1`` for candidates new to the window: their sums from the first value."""
    carry = None
    for s in range(0, t0, _SLAB_MAX):
        up, down = _slab(y, bets, m, s, min(t0, s + _SLAB_MAX), carry)
        carry = (up[:, -1].copy(), down[:, -1].copy())
    return _slab(y, bets, m, t0, t1, carry)


def _kept_ends(
    y: np.ndarray, bets: np.ndarray, cand: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """The first and the last grid candidate kept at each ``t`` (``cand.size`` and ``-1`` where none
    is): those of the full search, candidate by candidate, without the candidates the window's edges
    prove rejected (see above)."""
    n, g = y.size, cand.size
    first, last = np.full(n, g), np.full(n, -1)
    lup, ldown = math.log(THETA), math.log(1.0 - THETA)
    proof = level + 2.0 * _rounding(bets, cand)  # a computed log capital this high proves the rest
    a, b = 0, g  # the window
    carry: tuple[np.ndarray, np.ndarray] | None = None
    t1 = 0
    while t1 < n:
        t0, t1 = t1, min(n, t1 + max(_SLAB, min(_SLAB_MAX, t1 // _SLAB_SHARE)))
        up, down = _slab(y, bets, cand[a:b], t0, t1, carry)
        grow, need = _GROW, proof[t0:t1]
        while True:
            kup, kdown = up + lup, down + ldown  # log(theta K+), log((1 - theta) K-)
            low_ok = a == 0 or bool((kup >= need).any(axis=0).all())
            high_ok = b == g or bool((kdown >= need).any(axis=0).all())
            if low_ok and high_ok:
                break
            if not low_ok:
                a2 = max(0, a - grow)
                nu, nd = _history(y, bets, cand[a2:a], t0, t1)
                up, down, a = np.concatenate([nu, up]), np.concatenate([nd, down]), a2
            if not high_ok:
                b2 = min(g, b + grow)
                nu, nd = _history(y, bets, cand[b:b2], t0, t1)
                up, down, b = np.concatenate([up, nu]), np.concatenate([down, nd]), b2
            grow *= 2
        keep = np.maximum(kup, kdown) < level
        anyk = keep.any(axis=0)
        first[t0:t1] = np.where(anyk, a + keep.argmax(axis=0), g)
        last[t0:t1] = np.where(anyk, b - 1 - keep[::-1].argmax(axis=0), -1)
        # leave out the edge candidates far past the level (a later slab adds any it needs back)
        far = proof[t1 - 1] + _SLACK
        below = np.flatnonzero(kup[:, -1] >= far)
        above = np.flatnonzero(kdown[:, -1] >= far)
        lo_k = int(below[-1]) if below.size else 0
        hi_k = int(above[0]) if above.size else b - a - 1
        lo_k, hi_k = min(lo_k, hi_k), max(lo_k, hi_k)
        up, down = up[lo_k : hi_k + 1], down[lo_k : hi_k + 1]
        a, b = a + lo_k, a + hi_k + 1
        carry = (up[:, -1].copy(), down[:, -1].copy())
    return first, last


def paired_sequence(
    a: Any, b: Any, *, alpha: float = 0.05, lo: float = 0.0, hi: float = 1.0, grid: int = GRID
) -> ConfidenceSequence:
    """The confidence sequence of the mean paired difference ``a_i - b_i`` of two scores each in
    ``[lo, hi]`` on the same questions (element ``i`` of each is question ``i``): differences lie in
    ``[lo - hi, hi - lo]``."""
    xa, xb = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if xa.size != xb.size:
        raise ValueError(f"paired sequence needs equal lengths, got {xa.size} and {xb.size}")
    _check(alpha, lo, hi)
    _unit(xa, lo, hi), _unit(xb, lo, hi)
    return confidence_sequence(xa - xb, alpha=alpha, lo=lo - hi, hi=hi - lo, grid=grid)
