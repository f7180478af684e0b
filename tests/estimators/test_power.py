"""Planning from a pilot (issue 26): the predicted power matches simulated power; sample sizes and
the design effect by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from seerbench.errors import ConfigError
from seerbench.estimators import design_effect, power_at, questions_for_half_width, questions_for_power


def _simulated_power(draw, n: int, reps: int, seed: int, alpha: float = 0.05) -> float:
    """Share of ``reps`` samples of ``n`` paired differences where the two-sided z test (with the
    sample's own sd) rejects a zero mean."""
    d = draw(np.random.default_rng(seed), (reps, n))
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(n))
    return float((np.abs(t) > norm.ppf(1 - alpha / 2)).mean())


def _paired_accuracy(r: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    # a ~ Bernoulli(0.7); b equals a with prob 0.5, else Bernoulli(0.6): E[a - b] = 0.7 - 0.65 = 0.05
    a = (r.random(shape) < 0.7).astype(float)
    b = np.where(r.random(shape) < 0.5, a, (r.random(shape) < 0.6).astype(float))
    return a - b


def test_predicted_power_matches_simulated_power() -> None:
    # E[d] = 0.05; P(a != b) = 0.5 * (0.7 * 0.4 + 0.3 * 0.6) = 0.23, so Var(d) = 0.23 - 0.05^2
    effect, sd = 0.05, math.sqrt(0.23 - 0.05**2)
    n = questions_for_power(sd, effect, power=0.8)
    # (z_0.975 + z_0.8)^2 Var / D^2 = 2.801585^2 * 0.2275 / 0.0025 = 714.25 -> 715
    assert n == 715
    for m in (n // 4, n // 2, n):
        predicted = power_at(m, sd, effect)
        simulated = _simulated_power(_paired_accuracy, m, 4000, seed=m)
        print(f"n={m}: predicted power {predicted:.3f}, simulated {simulated:.3f}")
        assert abs(predicted - simulated) < 0.03
    assert power_at(n, sd, effect) >= 0.8 > power_at(n - 1, sd, effect)


def test_power_with_a_continuous_score() -> None:
    # Brier-like differences: Beta(2,5) - Beta(2,6), mean 2/7 - 1/4
    def draw(r: np.random.Generator, s: tuple[int, int]) -> np.ndarray:
        return r.beta(2, 5, s) - r.beta(2, 6, s)

    effect = 2 / 7 - 1 / 4
    var = (2 * 5) / (7**2 * 8) + (2 * 6) / (8**2 * 9)
    n = questions_for_power(math.sqrt(var), effect, power=0.9)
    simulated = _simulated_power(draw, n, 4000, seed=1)
    print(f"n={n}: predicted power 0.9, simulated {simulated:.3f}")
    assert abs(simulated - power_at(n, math.sqrt(var), effect)) < 0.03


def test_sample_sizes_by_hand() -> None:
    # half-width 0.05 at sd 0.5: (1.96 * 0.5 / 0.05)^2 = 384.1 -> 385; a design effect of 2 doubles it
    assert questions_for_half_width(0.5, 0.05) == 385
    assert questions_for_half_width(0.5, 0.05, deff=2.0) == 769
    # the design effect widens the power plan the same way
    assert questions_for_power(1.0, 0.2, deff=2.0) in (
        2 * questions_for_power(1.0, 0.2) + d for d in (-1, 0, 1)
    )


def test_design_effect_by_hand() -> None:
    # pairs of identical values: every cluster sum is twice its deviation, ratio 4 * 2 / (2 * 2) = 2
    assert design_effect([1, 1, 0, 0], ["a", "a", "b", "b"]) == pytest.approx(2.0)
    assert design_effect([1, 0, 1, 0], ["a", "b", "c", "d"]) == pytest.approx(1.0)
    # opposite values in one cluster cancel: the ratio would be 0; never below 1
    assert design_effect([1, 0, 1, 0], ["a", "a", "b", "b"]) == 1.0
    assert design_effect([0.3, 0.3], ["a", "b"]) == 1.0
    with pytest.raises(ValueError, match="cluster labels"):
        design_effect([1.0], ["a", "b"])


def test_refuses_impossible_plans() -> None:
    with pytest.raises(ConfigError, match="power"):
        questions_for_power(1.0, 0.1, power=1.0)
    with pytest.raises(ConfigError, match="effect"):
        questions_for_power(1.0, 0.0)
    with pytest.raises(ConfigError, match="half-width"):
        questions_for_half_width(1.0, -0.1)
