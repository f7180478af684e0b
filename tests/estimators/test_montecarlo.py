"""Seeded Monte Carlo checks of the paper's claims, and ML against a numerical maximiser.

Counts are drawn directly from their sampling distributions (S_o ~ Bin(n_o, A), S_c ~ Bin(n_c, q),
q = (A + K - 2)/(K - 1)); one test draws them through the simulated protocol instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.stats import binom

from seerbench.estimators import (
    AccuracyEstimate,
    LabelCounts,
    bernstein_mixture_bound,
    complementary_accuracy,
    complementary_bound,
    ivw_accuracy,
    mixture_accuracy,
    ml_accuracy,
    ordinary_accuracy,
    simulate_protocol,
    union_mixture_bound,
)

R = 3000  # replications per check


def _draw(seed: int, k: int, a: float, n_o: int, n_c: int) -> list[LabelCounts]:
    rng = np.random.default_rng(seed)
    q = (a + k - 2) / (k - 1)
    s_o = rng.binomial(n_o, a, R) if n_o else np.zeros(R, dtype=int)
    s_c = rng.binomial(n_c, q, R)
    return [LabelCounts(k=k, n_o=n_o, s_o=int(x), n_c=n_c, s_c=int(y)) for x, y in zip(s_o, s_c, strict=True)]


def _within_3se(values: np.ndarray, truth: float) -> None:
    se = values.std(ddof=1) / math.sqrt(len(values))
    assert abs(values.mean() - truth) <= 3 * se, (values.mean(), truth, se)


@pytest.mark.parametrize(("k", "a", "n_c"), [(4, 0.6, 200), (10, 0.3, 500), (3, 0.9, 100)])
def test_comp_unbiased_and_variance_eq3(k: int, a: float, n_c: int) -> None:
    draws = _draw(1, k, a, 0, n_c)
    est = np.array([complementary_accuracy(c).estimate for c in draws])
    _within_3se(est, a)
    # Eq. 3: Var = (A + K - 2)(1 - A) / n_c. The sample variance of R draws has relative SE about
    # sqrt(2/R) = 0.026, so 4 of those (10%) is a generous band.
    assert est.var(ddof=1) == pytest.approx((a + k - 2) * (1 - a) / n_c, rel=0.10)


def test_fixed_weight_mixture_unbiased() -> None:
    draws = _draw(2, 4, 0.6, 100, 300)
    _within_3se(np.array([mixture_accuracy(c, 0.5).estimate for c in draws]), 0.6)


def test_ivw_unbiased_within_mc_error() -> None:
    # The plug-in weight comes from the same data, so IVW is consistent rather than exactly unbiased;
    # its O(1/n) bias (about 0.0017 at n_o=100, n_c=300 in a 20000-replication run) is below the
    # Monte Carlo resolution at these sizes.
    draws = _draw(3, 4, 0.6, 400, 1200)
    _within_3se(np.array([ivw_accuracy(c).estimate for c in draws]), 0.6)


@pytest.mark.parametrize(
    ("name", "fn"),
    [
        ("ord", ordinary_accuracy),
        ("comp", complementary_accuracy),
        ("ivw", ivw_accuracy),
        ("ml", ml_accuracy),
        ("mix", lambda c: mixture_accuracy(c, 0.5)),
    ],
)
def test_ci_coverage(name: str, fn: Callable[[LabelCounts], AccuracyEstimate]) -> None:
    a = 0.6
    draws = _draw(4, 4, a, 300, 900)
    hits = np.array([(r.ci_low <= a <= r.ci_high) for r in map(fn, draws)])
    nominal = 0.95
    mc = 3 * math.sqrt(nominal * (1 - nominal) / R)  # 3 Monte Carlo standard errors = 0.012
    assert hits.mean() >= nominal - mc, (name, hits.mean())


def test_bounds_violated_at_most_delta() -> None:
    a, delta = 0.5, 0.1
    draws = _draw(5, 4, a, 60, 120)
    slack = 3 * math.sqrt(delta * (1 - delta) / R)
    bounds = {
        "thm2": [complementary_bound(c, delta) for c in draws],
        "prop3_ivw": [union_mixture_bound(c, None, delta) for c in draws],
        "prop3_fixed": [union_mixture_bound(c, 0.5, delta) for c in draws],
        "thm4_fixed": [bernstein_mixture_bound(c, 0.5, delta, accuracy=a) for c in draws],
    }
    for name, bs in bounds.items():
        violated = np.mean([abs(b.estimate - a) > b.half_width for b in bs])
        assert violated <= delta + slack, (name, violated)


def test_protocol_simulation_feeds_unbiased_estimates() -> None:
    # 400 items with accuracy exactly 0.55, routed to experts 300 times with different seeds.
    k, n = 5, 400
    rng = np.random.default_rng(6)
    y = rng.integers(1, k + 1, n)
    pred = y.copy()
    wrong = rng.permutation(n)[: int(n * 0.45)]
    pred[wrong] = (y[wrong] % k) + 1  # a different option
    ests = []
    for seed in range(300):
        ests.append(ivw_accuracy(simulate_protocol(y, pred, k, seed=seed).labels.counts()).estimate)
    # Routing draws only which label each item gets; the items are fixed, so the truth is 0.55 exactly.
    _within_3se(np.array(ests), 0.55)


def _loglik(a: float, c: LabelCounts) -> float:
    # Written from the paper (Section 2.2): S_o ~ Bin(n_o, A), S_c ~ Bin(n_c, (A + K - 2)/(K - 1)).
    q = (a + c.k - 2) / (c.k - 1)
    return float(binom.logpmf(c.s_o, c.n_o, a) + binom.logpmf(c.s_c, c.n_c, q))


def test_ml_is_the_numerical_maximiser() -> None:
    rng = np.random.default_rng(7)
    for _ in range(40):
        k = int(rng.integers(3, 11))
        n_o = int(rng.integers(0, 60))
        n_c = int(rng.integers(1 if n_o == 0 else 0, 200))
        a = float(rng.uniform(0.05, 0.95))
        q = (a + k - 2) / (k - 1)
        c = LabelCounts(k=k, n_o=n_o, s_o=int(rng.binomial(n_o, a)), n_c=n_c, s_c=int(rng.binomial(n_c, q)))
        num = minimize_scalar(
            lambda x, c=c: -_loglik(x, c), bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-10}
        )
        ml = ml_accuracy(c)
        assert ml.estimate == pytest.approx(num.x, abs=1e-5), c
        # and it is at least as likely as the numerical optimum
        assert _loglik(ml.estimate, c) >= _loglik(num.x, c) - 1e-9
