"""Estimators on small cases worked out by hand from the paper's formulas (seed 001, Section 2)."""

from __future__ import annotations

import math

import pytest

from seerbench.errors import ConfigError, DataError
from seerbench.estimators import (
    LabelCounts,
    complementary_accuracy,
    complementary_variance,
    ivw_accuracy,
    ivw_weight,
    mixture_accuracy,
    ml_accuracy,
    ordinary_accuracy,
    raw_complementary_accuracy,
    z_value,
)

Z95 = 1.959963984540054  # the 0.975 standard-normal quantile

# The running example: K = 4, 10 ordinary labels of which 7 correct, 20 complementary labels of which
# 17 avoided by the prediction.
EX = LabelCounts(k=4, n_o=10, s_o=7, n_c=20, s_c=17)


def test_z_value() -> None:
    assert z_value(0.05) == pytest.approx(Z95, abs=1e-12)
    assert z_value(0.10) == pytest.approx(1.6448536269514722, abs=1e-12)


def test_ordinary() -> None:
    # A_ord = 7/10 = 0.7; Var = 0.7 * 0.3 / 10 = 0.021; SE = sqrt(0.021) = 0.1449138
    r = ordinary_accuracy(EX)
    assert r.estimate == pytest.approx(0.7)
    assert r.se == pytest.approx(0.14491377, abs=1e-8)
    # Wald: 0.7 -/+ 1.959964 * 0.1449138 = 0.7 -/+ 0.2840259 = [0.4159741, 0.9840259]
    w = ordinary_accuracy(EX, interval="wald")
    assert (w.ci_low, w.ci_high) == pytest.approx((0.4159741, 0.9840259), abs=1e-6)
    assert w.interval == "wald"
    # Default, Wilson: centre (7 + z^2/2)/(10 + z^2) = 8.9207294/13.8414588 = 0.6444934;
    # half-width z/(10 + z^2) sqrt(7*3/10 + z^2/4) = 0.1416012 * sqrt(3.0603647) = 0.2477153
    assert r.interval == "score"
    assert (r.ci_low, r.ci_high) == pytest.approx((0.3967781, 0.8922087), abs=1e-6)
    assert (r.n_o, r.n_c, r.k) == (10, 20, 4)


def test_complementary_eq2_eq3() -> None:
    # q = 17/20 = 0.85; A_comp = (4-1) * 0.85 - (4-2) = 2.55 - 2 = 0.55 (Eq. 2)
    # Var (Eq. 3 at A = 0.55) = (0.55 + 2)(1 - 0.55) / 20 = 2.55 * 0.45 / 20 = 0.057375
    # which equals (K-1)^2 q(1-q)/n_c = 9 * 0.85 * 0.15 / 20 = 0.057375; SE = 0.2395308
    r = complementary_accuracy(EX, interval="wald")
    assert r.estimate == pytest.approx(0.55)
    assert r.se**2 == pytest.approx(0.057375)
    # CI = 0.55 -/+ 1.959964 * 0.2395308 = 0.55 -/+ 0.4694717 -> [0.0805283, 1.0194717], upper end cut at 1
    assert r.ci_low == pytest.approx(0.0805283, abs=1e-6)
    assert r.ci_high == 1.0
    # Score (default): Wilson for q = 17/20, centre 18.9207294/23.8414588 = 0.7936062, half-width
    # z/23.8414588 * sqrt(17*3/20 + z^2/4) = 0.0822080 * 1.8735966 = 0.1540251 -> q in
    # [0.6395811, 0.9476313]; A = 3q - 2 -> [-0.0812566, 0.8428938], lower end cut at 0.
    s = complementary_accuracy(EX)
    assert (s.ci_low, s.ci_high) == pytest.approx((0.0, 0.8428938), abs=1e-6)
    assert complementary_variance(0.55, 4, 20) == pytest.approx(0.057375)


def test_complementary_can_be_negative_and_is_not_clipped() -> None:
    # K = 5, q = 6/10: A_comp = 4 * 0.6 - 3 = -0.6; unbiasedness needs the unclipped value.
    r = complementary_accuracy(LabelCounts(k=5, n_c=10, s_c=6))
    assert r.estimate == pytest.approx(-0.6)
    assert not r.clipped
    assert r.ci_low == 0.0  # the interval is intersected with [0, 1]
    assert complementary_accuracy(LabelCounts(k=5, n_c=10, s_c=6), interval="wald").ci_low == 0.0


def test_raw_q() -> None:
    # q = 0.85; SE = sqrt(0.85 * 0.15 / 20) = sqrt(0.006375) = 0.0798436
    r = raw_complementary_accuracy(EX)
    assert r.estimate == pytest.approx(0.85)
    assert r.se == pytest.approx(0.0798436, abs=1e-7)


def test_fixed_weight_mixture() -> None:
    # w = 0.5: 0.5 * 0.7 + 0.5 * 0.55 = 0.625; Var = 0.25 * 0.021 + 0.25 * 0.057375 = 0.01959375
    r = mixture_accuracy(EX, 0.5)
    assert r.estimate == pytest.approx(0.625)
    assert r.se**2 == pytest.approx(0.01959375)
    assert r.weight == 0.5
    # w = 1 is A_ord and needs no complementary labels
    assert mixture_accuracy(LabelCounts(k=4, n_o=10, s_o=7), 1.0).estimate == pytest.approx(0.7)


def test_ivw_eq7() -> None:
    # w = 0.057375 / (0.021 + 0.057375) = 57375/78375 = 153/209 = 0.7320574
    # A_IVW = (153 * 0.7 + 56 * 0.55) / 209 = (107.1 + 30.8) / 209 = 137.9 / 209 = 0.6598086
    # Var = 0.021 * 0.057375 / 0.078375 = 0.021 * 153/209 = 3.213/209 = 0.01537321
    r = ivw_accuracy(EX)
    assert r.weight == pytest.approx(153 / 209)
    assert ivw_weight(EX) == pytest.approx(153 / 209)
    assert r.estimate == pytest.approx(137.9 / 209)
    assert r.se**2 == pytest.approx(3.213 / 209)


def test_ivw_one_sided_and_degenerate() -> None:
    only_c = LabelCounts(k=4, n_c=20, s_c=17)
    assert ivw_accuracy(only_c).weight == 0.0
    assert ivw_accuracy(only_c).estimate == pytest.approx(0.55)
    only_o = LabelCounts(k=4, n_o=10, s_o=7)
    assert ivw_accuracy(only_o).estimate == pytest.approx(0.7)
    # A_ord = 1 and q = 1: both plug-in variances are 0, Eq. 7 is 0/0; Eq. 8 with pilot A_ML = 1:
    # w = (1 + 2) * 10 / (1 * 20 + 3 * 10) = 30/50 = 0.6; estimate = 0.6 * 1 + 0.4 * 1 = 1
    r = ivw_accuracy(LabelCounts(k=4, n_o=10, s_o=10, n_c=20, s_c=20))
    assert r.weight == pytest.approx(0.6)
    assert r.estimate == pytest.approx(1.0)
    assert r.se == 0.0
    assert any("Eq. 8" in n for n in r.notes)
    # ... and the score interval is not a point: A0 is in it when
    # (1 - A0)^2 <= z^2 (1 - A0) [0.36 A0 / 10 + 0.16 (A0 + 2) / 20], i.e. 1 - A0 <= z^2 (0.044 A0 + 0.016)
    # -> A0 >= (1 - 0.016 z^2) / (1 + 0.044 z^2) = 0.9385367 / 1.1690242 = 0.8028377
    assert (r.ci_low, r.ci_high) == pytest.approx((0.8028377, 1.0), abs=1e-6)


def test_ml_eq9_by_hand() -> None:
    # T_o = 3, T_c = 3, N = 30; beta = (K-2)(T_o+T_c) + (K-3) S_o - S_c = 2*6 + 1*7 - 17 = 2
    # gamma = -(K-2) S_o = -14; A = (-2 + sqrt(4 + 4*30*14)) / 60 = (-2 + sqrt(1684)) / 60
    a = (-2 + math.sqrt(1684)) / 60  # = 0.6506095
    r = ml_accuracy(EX)
    assert r.estimate == pytest.approx(a, abs=1e-12)
    assert r.estimate == pytest.approx(0.6506095, abs=1e-7)
    # the score equation S_o/A - T_o/(1-A) + S_c/(A+K-2) - T_c/(1-A) vanishes there
    assert 7 / a - 3 / (1 - a) + 17 / (a + 2) - 3 / (1 - a) == pytest.approx(0.0, abs=1e-9)
    # se from the expected information at the estimate: [10 / (A(1-A)) + 20 / ((A + 2)(1-A))]^(-1/2)
    # (the complementary term is n_c / ((K-1)^2 q (1-q)) at q = (A + 2)/3)
    assert r.se == pytest.approx((10 / (a * (1 - a)) + 20 / ((a + 2) * (1 - a))) ** -0.5)
    assert r.se == pytest.approx(0.1234780, abs=1e-7)
    assert not r.clipped


def test_ml_reduces_to_ord_and_comp() -> None:
    # n_c = 0: A_ML = S_o / n_o = 13/40 = 0.325, same SE as A_ord
    o = LabelCounts(k=5, n_o=40, s_o=13)
    assert ml_accuracy(o).estimate == pytest.approx(0.325)
    assert ml_accuracy(o).se == pytest.approx(ordinary_accuracy(o).se)
    # n_o = 0: q = 35/40 = 0.875, A_comp = 4 * 0.875 - 3 = 0.5 = A_ML, same SE as A_comp
    c = LabelCounts(k=5, n_c=40, s_c=35)
    assert ml_accuracy(c).estimate == pytest.approx(0.5)
    assert ml_accuracy(c).se == pytest.approx(complementary_accuracy(c).se)


def test_ml_clipped_at_zero() -> None:
    # n_o = 0, q = 5/10: A_comp = 3 * 0.5 - 2 = -0.5 < 0; the likelihood over [0, 1] peaks at 0.
    r = ml_accuracy(LabelCounts(k=4, n_c=10, s_c=5))
    assert r.estimate == 0.0
    assert r.clipped
    assert r.raw_estimate == pytest.approx(-0.5)


def test_k2_complementary_labels_become_ordinary() -> None:
    # K = 2: "not option 1" means "option 2". 5 complementary labels, 4 avoided, join 3 ordinary (2 hit).
    c = LabelCounts(k=2, n_o=3, s_o=2, n_c=5, s_c=4)
    assert (c.n_o, c.s_o, c.n_c, c.s_c, c.n_converted) == (8, 6, 0, 0, 5)
    assert ordinary_accuracy(c).estimate == pytest.approx(6 / 8)
    assert ml_accuracy(c).estimate == pytest.approx(6 / 8)
    assert ivw_accuracy(c).estimate == pytest.approx(6 / 8)
    with pytest.raises(DataError, match="K=2"):
        complementary_accuracy(c)


def test_alpha_changes_interval() -> None:
    # 90% interval: 0.7 -/+ 1.6448536 * 0.1449138 = 0.7 -/+ 0.2383619
    r = ordinary_accuracy(EX, alpha=0.10, interval="wald")
    assert r.ci_low == pytest.approx(0.4616381, abs=1e-6)
    assert r.confidence == pytest.approx(0.9)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"k": 1},
        {"k": 4, "n_o": 3, "s_o": 4},
        {"k": 4, "n_c": -1},
        {"k": 4, "n_o": 2.5},
        {"k": "4"},
    ],
)
def test_bad_counts(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        LabelCounts(**kwargs)  # type: ignore[arg-type]


def test_missing_label_sets() -> None:
    with pytest.raises(DataError, match="complementary labels"):
        complementary_accuracy(LabelCounts(k=4, n_o=5, s_o=2))
    with pytest.raises(DataError, match="ordinary labels"):
        ordinary_accuracy(LabelCounts(k=4, n_c=5, s_c=2))
    with pytest.raises(DataError):
        mixture_accuracy(LabelCounts(k=4, n_c=5, s_c=2), 0.5)
    with pytest.raises(DataError, match="empty"):
        ml_accuracy(LabelCounts(k=4))


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), True])
def test_bad_weight_and_alpha(bad: float) -> None:
    with pytest.raises(ConfigError):
        mixture_accuracy(EX, bad)
    with pytest.raises(ConfigError):
        ordinary_accuracy(EX, alpha=bad if bad is not True else 0.0)


def test_counts_add() -> None:
    s = LabelCounts(k=4, n_o=1, s_o=1) + LabelCounts(k=4, n_c=2, s_c=1)
    assert (s.n_o, s.s_o, s.n_c, s.s_c) == (1, 1, 2, 1)
    with pytest.raises(ConfigError):
        _ = LabelCounts(k=4) + LabelCounts(k=5)
