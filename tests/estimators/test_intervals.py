"""Confidence intervals near A = 0 and A = 1, and with clustered labels (issue 12, item 7).

House rule: intervals must cover. Each interval is checked by seeded Monte Carlo (counts drawn from
their sampling distributions, S_o ~ Bin(n_o, A), S_c ~ Bin(n_c, q), q = (A + K - 2)/(K - 1)) near the
boundary and with clustered labels, and on small cases by exact enumeration of every outcome. The
Monte Carlo runs the vectorised interval code that the estimators call; a check at the top confirms
that the public estimators return exactly those intervals.

Thresholds: score intervals are approximate. Wilson's own exact coverage dips to 0.910 where the
expected number of errors n (1 - A) is about 0.5 (n = 100, A = 0.995: the known dip of Brown, Cai &
DasGupta 2001), and to 0.925 at n = 20, A = 0.95. So Monte Carlo coverage must be at least 0.89
(nominal 0.95; with R = 4000 draws a true coverage of 0.91 sits 4.4 Monte Carlo standard errors
above it) and exact coverage at least 0.905. The Wald intervals these replace measure 0.15 to 0.86
in the same near-boundary scenarios (asserted below for the two the audit named).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy.stats import binom

from seerbench.errors import ConfigError, DataError
from seerbench.estimators import (
    LabelCounts,
    LabelSet,
    cluster_design_effect,
    clustered_accuracy,
    complementary_accuracy,
    estimate_all,
    ivw_accuracy,
    mixture_accuracy,
    ml_accuracy,
    ordinary_accuracy,
    raw_complementary_accuracy,
)
from seerbench.estimators._clusters import design_effect_from_cluster_counts
from seerbench.estimators._intervals import linear_score_bounds, ml_score_bounds

Z = 1.959963984540054
R = 4000
Arr = np.ndarray

# ---------------------------------------------------------------------------------------------------
# Estimators written out from the paper, vectorised (independent of the library's scalar code).


def _ml(s_o: Arr, n_o: Arr | int, s_c: Arr, n_c: Arr | int, k: int) -> Arr:
    # Eq. 9, clipped to [0, 1]
    t = (n_o - s_o) + (n_c - s_c)
    al = n_o + n_c
    be = (k - 2) * t + (k - 3) * s_o - s_c
    ga = -(k - 2) * s_o
    root = (-be + np.sqrt(be * be - 4.0 * al * ga)) / (2.0 * al)
    return np.clip(root, 0.0, 1.0)


def _ivw(s_o: Arr, n_o: Arr | int, s_c: Arr, n_c: Arr | int, k: int) -> tuple[Arr, Arr]:
    # Eq. 7 with plug-in variances; Eq. 8 at the pilot A_ML where a plug-in variance is 0.
    a_o = s_o / n_o
    q = s_c / n_c
    a_c = (k - 1) * q - (k - 2)
    v_o = a_o * (1 - a_o) / n_o
    v_c = (k - 1) ** 2 * q * (1 - q) / n_c
    a = _ml(s_o, n_o, s_c, n_c, k)
    w8 = (a + k - 2) * n_o / (a * n_c + (a + k - 2) * n_o)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where((v_o > 0) & (v_c > 0), v_c / (v_o + v_c), w8)
    return w * a_o + (1 - w) * a_c, w


def _draw(seed: int, k: int, a: float, n_o: int, n_c: int, r: int = R) -> tuple[Arr, Arr]:
    rng = np.random.default_rng(seed)
    q = (a + k - 2) / (k - 1)
    return rng.binomial(n_o, a, r).astype(float), rng.binomial(n_c, q, r).astype(float)


def _score_bounds(
    name: str, s_o: Arr, n_o: Arr | int, s_c: Arr, n_c: Arr | int, k: int, deff: Arr | float = 1.0
) -> tuple[Arr, Arr]:
    a_o, q = s_o / np.maximum(n_o, 1), s_c / np.maximum(n_c, 1)
    a_c = (k - 1) * q - (k - 2)
    if name == "ord":
        return linear_score_bounds(a_o, 1.0, n_o, n_c, k, Z, deff)
    if name == "comp":
        return linear_score_bounds(a_c, 0.0, n_o, n_c, k, Z, deff)
    if name == "mix":
        return linear_score_bounds(0.5 * a_o + 0.5 * a_c, 0.5, n_o, n_c, k, Z, deff)
    if name == "ivw":
        est, w = _ivw(s_o, n_o, s_c, n_c, k)
        return linear_score_bounds(est, w, n_o, n_c, k, Z, deff)
    if name == "ml":
        return ml_score_bounds(_ml(s_o, n_o, s_c, n_c, k), s_o, n_o, s_c, n_c, k, Z, deff)
    raise AssertionError(name)


def _wald_bounds(name: str, s_o: Arr, n_o: int, s_c: Arr, n_c: int, k: int) -> tuple[Arr, Arr]:
    """The intervals before the fix: Eq. 7 IVW and the paper's ML SE with plug-in q_hat."""
    a_o, q = s_o / n_o, s_c / n_c
    a_c = (k - 1) * q - (k - 2)
    v_o, v_c = a_o * (1 - a_o) / n_o, (k - 1) ** 2 * q * (1 - q) / n_c
    if name == "ivw":
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(v_o + v_c > 0, v_c / (v_o + v_c), 0.5)
        est, se = w * a_o + (1 - w) * a_c, np.sqrt(w * w * v_o + (1 - w) ** 2 * v_c)
    else:  # ml
        est = _ml(s_o, n_o, s_c, n_c, k)
        with np.errstate(divide="ignore"):
            info = n_o / (est * (1 - est)) + n_c / ((k - 1) ** 2 * q * (1 - q))
        se = np.where(np.isfinite(info), 1 / np.sqrt(info), 0.0)
    return est - Z * se, est + Z * se


def _covered(bounds: tuple[Arr, Arr], a: float) -> Arr:
    lo, hi = bounds
    return (lo <= a + 1e-12) & (a <= hi + 1e-12)


# ---------------------------------------------------------------------------------------------------


def test_public_estimators_return_the_vectorised_intervals() -> None:
    k, n_o, n_c = 4, 20, 60
    s_o, s_c = _draw(0, k, 0.95, n_o, n_c, r=60)
    fns: dict[str, Callable[[LabelCounts], object]] = {
        "ord": ordinary_accuracy,
        "comp": complementary_accuracy,
        "mix": lambda c: mixture_accuracy(c, 0.5),
        "ivw": ivw_accuracy,
        "ml": ml_accuracy,
    }
    for name, fn in fns.items():
        lo, hi = _score_bounds(name, s_o, n_o, s_c, n_c, k)
        for i in range(len(s_o)):
            r = fn(LabelCounts(k=k, n_o=n_o, s_o=int(s_o[i]), n_c=n_c, s_c=int(s_c[i])))
            assert (r.ci_low, r.ci_high) == pytest.approx((lo[i], hi[i]), abs=1e-9), (name, i)  # type: ignore[attr-defined]
            assert r.interval == "score"  # type: ignore[attr-defined]


def test_audit_case_all_complementary_labels_avoided() -> None:
    # K = 10, 484/500 ordinary correct, 500/500 complementary avoided (the audit's example).
    c = LabelCounts(k=10, n_o=500, s_o=484, n_c=500, s_c=500)
    # Eq. 9: T = 16, N = 1000, beta = 8*16 + 7*484 - 500 = 3016, gamma = -8*484 = -3872
    a = (-3016 + math.sqrt(3016**2 + 4 * 1000 * 3872)) / 2000  # = 0.9711257
    ml = ml_accuracy(c)
    assert ml.estimate == pytest.approx(a, abs=1e-12)
    # Expected information at the estimate: 500/(A(1-A)) + 500/((A+8)(1-A)); before: q_hat = 1 made it
    # infinite and the SE 0.
    assert ml.se == pytest.approx((500 / (a * (1 - a)) + 500 / ((a + 8) * (1 - a))) ** -0.5, rel=1e-12)
    assert ml.se == pytest.approx(0.0071136, abs=1e-6)
    assert ml.ci_low < a < ml.ci_high
    # The ends solve U(A0)^2 / I(A0) = z^2 (Appendix C's score functions and expected information).
    for end in (ml.ci_low, ml.ci_high):
        u = 500 * (0.968 - end) / (end * (1 - end)) + 500 * (1.0 - end) / ((end + 8) * (1 - end))
        info = 500 / (end * (1 - end)) + 500 / ((end + 8) * (1 - end))
        assert u * u / info == pytest.approx(Z * Z, rel=1e-6)
    # IVW: the complementary plug-in variance is 0, so Eq. 7 gave w = 0 and IVW = A_comp = 1 +/- 0.
    # Eq. 8 at the pilot A_ML: w = (A + 8)*500 / (A*500 + (A + 8)*500) = 8.9711257/9.9422514 = 0.9023234,
    # and w A_ord + (1 - w) A_comp then equals A_ML (Appendix C: the ML is the IVW mean at its own variances).
    ivw = ivw_accuracy(c)
    assert ivw.weight == pytest.approx((a + 8) / (2 * a + 8), rel=1e-12)
    assert ivw.weight == pytest.approx(0.9023234, abs=1e-7)
    assert ivw.estimate == pytest.approx(a, abs=1e-12)
    assert ivw.se > 0 and ivw.ci_low < ivw.estimate < ivw.ci_high
    assert any("Eq. 8" in n for n in ivw.notes)
    # The ordinary-only plug-in variance 0 case (n_o = 20, all correct) is handled the same way.
    c2 = LabelCounts(k=4, n_o=20, s_o=20, n_c=60, s_c=57)
    r2 = ivw_accuracy(c2)
    assert 0 < r2.weight < 1 and r2.ci_low < 1.0  # type: ignore[operator]


def test_wald_stays_available_and_says_when_it_degenerates() -> None:
    c = LabelCounts(k=4, n_o=20, s_o=20, n_c=60, s_c=60)
    r = ml_accuracy(c, interval="wald")
    assert (r.ci_low, r.ci_high) == (1.0, 1.0)
    assert any("degenerate" in n for n in r.notes)
    s = ml_accuracy(c)
    # n_o = 20, n_c = 60, all correct: at A0 < 1, U = 20/A0 + 60/(A0 + 2) (the (1 - A0) factors cancel
    # against I's), so the lower end solves (20/A0 + 60/(A0+2))^2 (1 - A0) = z^2 (20/A0 + 60/(A0+2)).
    lo = s.ci_low
    g = 20 / lo + 60 / (lo + 2)
    assert g * g * (1 - lo) == pytest.approx(Z * Z * g, rel=1e-6)
    assert 0.9 < lo < 1.0 and s.ci_high == 1.0
    with pytest.raises(ConfigError, match="interval"):
        ml_accuracy(c, interval="exact")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="design_effect"):
        ml_accuracy(c, design_effect=0.0)
    rep = estimate_all(c, interval="wald")
    assert all(row.estimate is None or row.estimate.interval == "wald" for row in rep.rows)


SCENARIOS = [
    # (seed, K, A, n_o, n_c): the audit's case, the IVW case at n_o = 20, near 1, near 0, and inside
    (11, 10, 0.97, 500, 500),
    (12, 4, 0.95, 20, 60),
    (13, 4, 0.995, 100, 300),
    (14, 4, 0.02, 100, 300),
    (15, 10, 0.03, 50, 450),
    (16, 4, 0.6, 300, 900),
]


@pytest.mark.parametrize(("seed", "k", "a", "n_o", "n_c"), SCENARIOS)
def test_score_interval_coverage_monte_carlo(seed: int, k: int, a: float, n_o: int, n_c: int) -> None:
    s_o, s_c = _draw(seed, k, a, n_o, n_c)
    for name in ("ord", "comp", "mix", "ivw", "ml"):
        cov = _covered(_score_bounds(name, s_o, n_o, s_c, n_c, k), a).mean()
        assert cov >= 0.89, (name, cov)
    # q_hat's interval (Wilson for a proportion) covers q = (A + K - 2)/(K - 1)
    q = (a + k - 2) / (k - 1)
    lo, hi = linear_score_bounds(s_c / n_c, 1.0, n_c, 0, k, Z)
    assert _covered((lo, hi), q).mean() >= 0.89
    r = raw_complementary_accuracy(LabelCounts(k=k, n_c=n_c, s_c=int(s_c[0])))
    assert (r.ci_low, r.ci_high) == pytest.approx((lo[0], hi[0]), abs=1e-12)


@pytest.mark.parametrize(
    ("seed", "k", "a", "n_o", "n_c", "worst"), [(11, 10, 0.97, 500, 500, 0.85), (12, 4, 0.95, 20, 60, 0.7)]
)
def test_wald_interval_fails_where_the_score_interval_covers(
    seed: int, k: int, a: float, n_o: int, n_c: int, worst: float
) -> None:
    # The regression: the plug-in intervals reported before (exact coverage: audit case ML 0.77 and
    # IVW 0.77; n_o = 20 case ML 0.63 and IVW 0.41).
    s_o, s_c = _draw(seed, k, a, n_o, n_c)
    for name in ("ivw", "ml"):
        assert _covered(_wald_bounds(name, s_o, n_o, s_c, n_c, k), a).mean() < worst, name


def _exact_coverage(name: str, k: int, a: float, n_o: int, n_c: int) -> float:
    so, sc = np.meshgrid(np.arange(n_o + 1.0), np.arange(n_c + 1.0), indexing="ij")
    p = np.outer(
        binom.pmf(np.arange(n_o + 1), n_o, a), binom.pmf(np.arange(n_c + 1), n_c, (a + k - 2) / (k - 1))
    )
    hit = _covered(_score_bounds(name, so.ravel(), n_o, sc.ravel(), n_c, k), a)
    return float((p.ravel() * hit).sum())


@pytest.mark.parametrize(
    ("k", "a", "n_o", "n_c"),
    [(4, 0.95, 20, 60), (10, 0.95, 20, 180), (4, 0.02, 100, 300), (4, 0.995, 100, 300)],
)
def test_score_interval_exact_coverage(k: int, a: float, n_o: int, n_c: int) -> None:
    for name in ("ord", "comp", "mix", "ivw", "ml"):
        assert _exact_coverage(name, k, a, n_o, n_c) >= 0.905, name


# ---------------------------------------------------------------------------------------------------
# Clustered labels: G clusters (raters, topics) with their own accuracy A_g ~ Beta(A phi, (1 - A) phi),
# mean A; m items per cluster, each an ordinary label with probability 1/K (the expert asked about a
# uniformly chosen option says yes), else a complementary label avoided with probability
# 1 if correct and (K - 2)/(K - 1) if not (Eq. 1).


def _clustered_draw(seed: int, k: int, a: float, g: int, m: int, phi: float, r: int) -> tuple[Arr, ...]:
    rng = np.random.default_rng(seed)
    a_g = rng.beta(a * phi, (1 - a) * phi, (r, g, 1))
    correct = rng.random((r, g, m)) < a_g
    ordinary = rng.random((r, g, m)) < 1.0 / k
    avoided = correct | (rng.random((r, g, m)) < (k - 2) / (k - 1))
    n_o = ordinary.sum(-1)
    s_o = (ordinary & correct).sum(-1)
    n_c = (~ordinary).sum(-1)
    s_c = (~ordinary & avoided).sum(-1)
    return n_o, s_o, n_c, s_c


@pytest.mark.parametrize(("seed", "a"), [(21, 0.8), (22, 0.97), (23, 0.05)])
def test_clustered_labels_need_the_design_effect(seed: int, a: float) -> None:
    # 80 clusters of 25 labels, phi = 4 (intra-cluster correlation of correctness 1/(phi + 1) = 0.2)
    k, g, m, phi = 4, 80, 25, 4.0
    n_o_g, s_o_g, n_c_g, s_c_g = _clustered_draw(seed, k, a, g, m, phi, r=3000)
    n_o, s_o, n_c, s_c = (x.sum(-1).astype(float) for x in (n_o_g, s_o_g, n_c_g, s_c_g))
    ml = _ml(s_o, n_o, s_c, n_c, k)
    w_ml = (ml + k - 2) * n_o / (ml * n_c + (ml + k - 2) * n_o)
    _, w_ivw = _ivw(s_o, n_o, s_c, n_c, k)
    for name, w in (("ord", 1.0), ("ivw", w_ivw), ("ml", w_ml)):
        naive = _covered(_score_bounds(name, s_o, n_o, s_c, n_c, k), a).mean()
        deff = design_effect_from_cluster_counts(n_o_g, s_o_g, n_c_g, s_c_g, w, k)
        adjusted = _covered(_score_bounds(name, s_o, n_o, s_c, n_c, k, deff), a).mean()
        # independence assumed: too narrow (measured 0.70 to 0.83); with the design effect 0.92 to 0.95
        assert naive < 0.86, (name, naive)
        assert adjusted >= 0.90, (name, adjusted)


def test_design_effect_by_hand_and_clustered_accuracy() -> None:
    # Two raters (clusters), K = 4, ordinary labels only: rater x gets 4/4 right, rater y 0/4.
    # A_ord = 0.5; influences (Z - 0.5)/8: cluster totals +0.25 and -0.25; v_cluster = 2/1 * 0.125 = 0.25;
    # v_independent = 0.5 * 0.5 / 8 = 0.03125; design effect 8.
    pred = [1] * 8
    label = [1, 1, 1, 1, 2, 2, 2, 2]
    ls = LabelSet.from_arrays(pred, label, [False] * 8, 4, extra={"rater": ["x"] * 4 + ["y"] * 4})
    assert cluster_design_effect(ls, "rater", "ord") == pytest.approx(8.0)
    r = clustered_accuracy(ls, "rater", "ord")
    assert r.design_effect == pytest.approx(8.0)
    assert r.se == pytest.approx(math.sqrt(8 * 0.03125))
    # Wilson with n/deff = 1 effective label at 0.5: centre 0.5, half-width z/(1 + z^2) sqrt(0.25 + z^2/4)
    half = Z / (1 + Z * Z) * math.sqrt(0.25 + Z * Z / 4)
    assert (r.ci_low, r.ci_high) == pytest.approx((max(0.0, 0.5 - half), min(1.0, 0.5 + half)))
    # Independent-looking clusters (each rater half right) give design effect 1 (floored).
    ls2 = LabelSet.from_arrays(
        pred, [1, 2, 1, 2, 1, 2, 1, 2], [False] * 8, 4, extra={"rater": ["x"] * 4 + ["y"] * 4}
    )
    assert cluster_design_effect(ls2, "rater", "ord") == 1.0
    with pytest.raises(DataError, match="rater2"):
        cluster_design_effect(ls, "rater2")
