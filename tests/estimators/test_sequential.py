"""Anytime-valid confidence sequences (issue 26): hand-worked capital values, and Monte Carlo
coverage under continuous monitoring, beside fixed-n intervals monitored the same way (which miss)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from seerbench.analysis import summarize
from seerbench.estimators import (
    ConfidenceSequence,
    confidence_sequence,
    hedged_log_capital,
    paired_sequence,
)
from seerbench.estimators._sequential import GRID

ALPHA = 0.05
LEVEL = math.log(1 / ALPHA)


def test_capital_by_hand_truncated_bets() -> None:
    # y = (1, 0), m = 1/2: the plug-in bets (6.5 then 4.6) exceed c/m = c/(1-m) = 1, so both sides
    # stake 1: K+ = 1.5 then 0.75, K- = 0.5 then 0.75; hedged max(K+/2, K-/2) = 0.75, 0.375
    lc = hedged_log_capital(np.array([1.0, 0.0]), 0.5, ALPHA)[:, 0]
    assert lc == pytest.approx([math.log(0.75), math.log(0.375)])


def test_capital_by_hand_plug_in_bet() -> None:
    # y = (1,), m = 0.05: b_1 = sqrt(2 log(2/alpha) / (1/4 * 1 * log 2)); up side stakes b_1 < c/m = 10,
    # the down side min(b_1, c/0.95)
    b1 = math.sqrt(2 * math.log(2 / ALPHA) / (0.25 * math.log(2)))
    assert 6.5 < b1 < 6.6
    up, down = 0.5 * (1 + b1 * 0.95), 0.5 * (1 - 0.5 / 0.95 * 0.95)
    lc = hedged_log_capital(np.array([1.0]), 0.05, ALPHA)
    assert lc[0, 0] == pytest.approx(math.log(max(up, down)))


def _monitored_miss_rate(y: np.ndarray, mean: float) -> float:
    """Share of paths on which the sequence excludes ``mean`` at some t (continuous monitoring)."""
    return float((hedged_log_capital(y, mean, ALPHA)[..., 0].max(axis=1) >= LEVEL).mean())


def _wald_miss_rate(x: np.ndarray, mean: float, first: int = 10) -> float:
    """The fixed-n normal interval mean +- 1.96 SE, checked after every value from ``first`` on."""
    t = np.arange(1, x.shape[1] + 1)
    m = np.cumsum(x, axis=1) / t
    var = (np.cumsum(x * x, axis=1) - t * m * m) / np.maximum(t - 1, 1)
    se = np.sqrt(np.maximum(var, 0) / t)
    return float((np.abs(m - mean) > 1.959964 * se)[:, first - 1 :].any(axis=1).mean())


@pytest.mark.parametrize(
    ("name", "draw", "mean"),
    [
        ("accuracy p=0.3", lambda r, s: (r.random(s) < 0.3).astype(float), 0.3),
        ("accuracy p=0.9", lambda r, s: (r.random(s) < 0.9).astype(float), 0.9),
        ("Brier-like Beta(2,5)", lambda r, s: r.beta(2, 5, s), 2 / 7),
    ],
)
def test_sequence_covers_under_continuous_monitoring(name: str, draw, mean: float) -> None:
    rng = np.random.default_rng(26)
    x = draw(rng, (400, 500))
    cs_miss = _monitored_miss_rate(x, mean)
    wald_miss = _wald_miss_rate(x, mean)
    print(f"{name}: monitored miss rate, sequence {cs_miss:.3f}, fixed-n Wald {wald_miss:.3f}")
    assert cs_miss <= ALPHA
    assert wald_miss > 3 * ALPHA  # the fixed-n interval, watched after every question, misses


def test_paired_difference_covers_and_fixed_n_bootstrap_does_not() -> None:
    # correlated pairs of 0/1 scores: a ~ Bernoulli(0.7); b = a with prob 0.6, else Bernoulli(0.5)
    rng = np.random.default_rng(7)
    reps, n = 300, 400
    a = (rng.random((reps, n)) < 0.7).astype(float)
    same = rng.random((reps, n)) < 0.6
    b = np.where(same, a, (rng.random((reps, n)) < 0.5).astype(float))
    true = 0.7 - (0.6 * 0.7 + 0.4 * 0.5)  # E[a] - E[b] = 0.08
    d = a - b
    cs_miss = _monitored_miss_rate((d + 1) / 2, (true + 1) / 2)
    # the project's fixed-n bootstrap (seerbench.analysis.summarize), checked every 20 questions
    looks = range(20, n + 1, 20)
    boot_miss = 0
    for r in range(100):
        for t in looks:
            s = summarize(d[r, :t], n_boot=400, seed=r)
            if not s.ci_low <= true <= s.ci_high:
                boot_miss += 1
                break
    boot_rate = boot_miss / 100
    print(
        f"paired difference: monitored miss rate, sequence {cs_miss:.3f}, fixed-n bootstrap {boot_rate:.2f}"
    )
    assert cs_miss <= ALPHA
    assert boot_rate > 2 * ALPHA


def test_interval_from_the_grid_covers_and_narrows() -> None:
    rng = np.random.default_rng(3)
    misses = 0
    for _ in range(60):
        x = (rng.random(300) < 0.6).astype(float)
        cs = confidence_sequence(x, alpha=ALPHA)
        assert np.all(np.diff(cs.lower) >= 0) and np.all(np.diff(cs.upper) <= 0)  # running intersection
        misses += bool(np.any((cs.lower > 0.6) | (cs.upper < 0.6)))
    assert misses / 60 <= ALPHA
    x = (rng.random(2000) < 0.5).astype(float)
    cs = confidence_sequence(x)
    w = (cs.upper - cs.lower) / 2
    assert w[1999] < w[499] < w[99]
    se = math.sqrt(0.25 / 2000)
    # wider than the fixed-n interval (the price of looking at every t), but within a small factor
    assert 1.96 * se < w[1999] < 3 * 1.96 * se


def test_half_width_is_the_longer_side_from_the_mean() -> None:
    # the trial's Consultancy cell: mean 0.5125 in [0.382, 0.663] is 0.1305 below and 0.1505 above,
    # so it is not within +-0.15 (the rule's reading), though (0.663 - 0.382) / 2 = 0.1405 is
    cs = ConfidenceSequence(0.05, 0.0, 1.0, np.array([0.5125]), np.array([0.382]), np.array([0.663]))
    assert cs.half_width == pytest.approx(0.1505)
    lo, hi = np.array([0.0, 0.1]), np.array([1.0, 0.6])
    below = ConfidenceSequence(0.05, 0.0, 1.0, np.array([0.3, 0.4]), lo, hi)
    assert below.half_width == pytest.approx(0.3)  # 0.4 - 0.1 = 0.3 below, 0.6 - 0.4 = 0.2 above
    assert confidence_sequence([]).half_width == 1.0  # no estimate: the whole range
    x = np.array([1.0, 0.5, 1.0, 0.5, 0.0, 1.0, 1.0, 0.5])
    cs = confidence_sequence(x)
    a, b = cs.interval
    assert cs.half_width == pytest.approx(max(x.mean() - a, b - x.mean())) and cs.half_width >= (b - a) / 2


def test_bounds_map_back_and_paired_bounds() -> None:
    x = np.array([0.2, 0.4, 0.9, 0.7])
    unit = confidence_sequence(x)
    scaled = confidence_sequence(2 * x - 1, lo=-1.0, hi=1.0)
    assert scaled.interval == pytest.approx((2 * unit.lower[-1] - 1, 2 * unit.upper[-1] - 1))
    p = paired_sequence([1, 1, 0, 1], [0, 1, 0, 0])
    assert (p.lo, p.hi) == (-1.0, 1.0) and p.means[-1] == pytest.approx(0.5)


def test_refuses_values_outside_the_bounds() -> None:
    with pytest.raises(ValueError, match=r"in \[0, 1\]; got 1.5"):
        confidence_sequence([0.2, 1.5])
    with pytest.raises(ValueError, match="alpha"):
        confidence_sequence([0.2], alpha=1.0)
    with pytest.raises(ValueError, match="equal lengths"):
        paired_sequence([1, 0], [1])
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        paired_sequence([2.0], [1.0])
    assert confidence_sequence([]).interval == (0.0, 1.0)


# ---- the grid search against a straightforward reference ----------------------------------------


def _reference(
    values: np.ndarray, alpha: float, lo: float, hi: float, grid: int
) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(lower, upper, missed)`` written from the module docstring's formulas, with nothing
    skipped: every candidate's capital at every ``t`` (64 candidates at a time), the kept set's ends
    rounded outward by a grid step, their running intersection, and the last non-empty intersection
    kept once it empties (``missed``)."""
    y = (values - lo) / (hi - lo)
    n = y.size
    t = np.arange(1, n + 1, dtype=float)
    mu = (0.5 + np.cumsum(y)) / (t + 1)
    s2 = (0.25 + np.cumsum((y - mu) ** 2)) / (t + 1)
    s2_prev = np.concatenate([[0.25], s2[:-1]])
    bet = np.sqrt(2.0 * math.log(2.0 / alpha) / (s2_prev * t * np.log1p(t)))
    cand = np.linspace(0.0, 1.0, grid + 1)
    first, last = np.full(n, grid + 1), np.full(n, -1)
    for j in range(0, grid + 1, 64):
        m = cand[j : j + 64, None]
        with np.errstate(divide="ignore"):
            up = np.minimum(bet, 0.5 / m)  # l+_t(m)
            down = np.minimum(bet, 0.5 / (1.0 - m))  # l-_t(m)
        k_up = np.cumsum(np.log1p(up * (y - m)), axis=1) + math.log(0.5)  # log(theta K+_t(m))
        k_down = np.cumsum(np.log1p(-down * (y - m)), axis=1) + math.log(0.5)  # log((1 - theta) K-_t(m))
        kept = np.maximum(k_up, k_down) < math.log(1.0 / alpha)
        rows = np.arange(j, j + m.size)[:, None]
        first = np.minimum(first, np.where(kept, rows, grid + 1).min(axis=0))
        last = np.maximum(last, np.where(kept, rows, -1).max(axis=0))
    lower, upper = np.empty(n), np.empty(n)
    a, b = 0.0, 1.0
    for i in range(n):
        if last[i] >= 0:  # a step with no candidate kept claims nothing
            na, nb = max(a, cand[max(first[i] - 1, 0)]), min(b, cand[min(last[i] + 1, grid)])
            if na > nb:  # the intersection emptied: the last non-empty one from here on
                lower[i:], upper[i:] = a, b
                return lo + (hi - lo) * lower, lo + (hi - lo) * upper, True
            a, b = na, nb
        lower[i], upper[i] = a, b
    return lo + (hi - lo) * lower, lo + (hi - lo) * upper, False


def _draws(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    if kind == "discrete":  # judge accuracy with ties: 0, 1/2, 1
        return rng.choice([0.0, 0.5, 1.0], size=n, p=rng.dirichlet([1, 1, 1]))
    if kind == "binary":
        return (rng.random(n) < rng.random()).astype(float)
    if kind == "shift":  # the mean moves half-way: the intersection empties (a miss)
        p = rng.random(2)
        return np.where(np.arange(n) < n // 2, rng.random(n) < p[0], rng.random(n) < p[1]).astype(float)
    a, b = rng.uniform(0.3, 5, 2)
    return rng.beta(a, b, size=n)  # continuous


@pytest.mark.parametrize("kind", ["discrete", "binary", "shift", "continuous"])
def test_grid_search_equals_the_reference_bit_for_bit(kind: str) -> None:
    """The interval search skips candidates whose capital is far past the level: its bounds must be
    the reference's exactly, on sequences of 1 to 20,000 values, bounds [0, 1] and [-1, 1]."""
    rng = np.random.default_rng(["discrete", "binary", "shift", "continuous"].index(kind))
    misses = 0
    for k, n in enumerate([1, 2, 3, 7, *np.geomspace(10, 20_000, 12).astype(int).tolist()]):
        x = _draws(rng, n, kind)
        lo, hi = (-1.0, 1.0) if k % 2 else (0.0, 1.0)
        if lo < 0:  # a paired difference of two such values
            x = x - _draws(rng, n, kind)
        alpha = (0.05, 0.01, 0.2)[k % 3]
        cs = confidence_sequence(x, alpha=alpha, lo=lo, hi=hi)
        lower, upper, missed = _reference(x, alpha, lo, hi, GRID)
        assert np.array_equal(cs.lower, lower) and np.array_equal(cs.upper, upper), (kind, n, alpha)
        misses += missed
    assert kind != "shift" or misses >= 3  # the intersection emptied on some of these


def test_a_moving_mean_grows_the_window_and_equals_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the mean moves, candidates left out of the search come back (their sums recomputed
    from the first value), below the window and above it."""
    from seerbench.estimators import _sequential

    grown: list[float] = []
    history = _sequential._history

    def spy(
        y: np.ndarray, bets: np.ndarray, m: np.ndarray, t0: int, t1: int
    ) -> tuple[np.ndarray, np.ndarray]:
        grown.append(float(m[0]))
        return history(y, bets, m, t0, t1)

    monkeypatch.setattr(_sequential, "_history", spy)
    rng = np.random.default_rng(11)
    for p, q in ((0.2, 0.5), (0.8, 0.5)):
        x = np.concatenate([rng.random(400) < p, rng.random(3000) < q]).astype(float)
        grown.clear()
        cs = confidence_sequence(x)
        lower, upper, _ = _reference(x, 0.05, 0.0, 1.0, GRID)
        assert np.array_equal(cs.lower, lower) and np.array_equal(cs.upper, upper), (p, q)
        assert grown and all(m > p if q > p else m < p for m in grown)


@pytest.mark.parametrize("grid", [1, 2, 10, 37, 5000])
def test_other_grids_equal_the_reference(grid: int) -> None:
    rng = np.random.default_rng(grid)
    for n in (1, 5, 300, 1000 if grid > GRID else 3000):
        for kind in ("discrete", "continuous", "shift"):
            x = _draws(rng, n, kind)
            cs = confidence_sequence(x, grid=grid)
            lower, upper, _ = _reference(x, 0.05, 0.0, 1.0, grid)
            assert np.array_equal(cs.lower, lower) and np.array_equal(cs.upper, upper), (grid, n, kind)


def test_constant_sequences_equal_the_reference() -> None:
    for v in (0.0, 0.5, 1.0):
        for n in (1, 50, 4000):
            x = np.full(n, v)
            cs = confidence_sequence(x)
            lower, upper, _ = _reference(x, 0.05, 0.0, 1.0, GRID)
            assert np.array_equal(cs.lower, lower) and np.array_equal(cs.upper, upper), (v, n)
