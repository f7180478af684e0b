"""Bounds (Theorem 2, Proposition 3, Theorem 4, Eq. 15-16) and planning (Eq. 4, 5, 8) by hand."""

from __future__ import annotations

import math

import pytest

from seerbench.errors import ConfigError, DataError
from seerbench.estimators import (
    LabelCounts,
    bernstein_ivw_bound,
    bernstein_mixture_bound,
    complementary_bound,
    complementary_labels_to_match,
    labels_for_half_width,
    plan_labels,
    union_mixture_bound,
    variance_ratio,
)

EX = LabelCounts(k=4, n_o=10, s_o=7, n_c=20, s_c=17)  # A_ord = 0.7, q = 0.85, A_comp = 0.55


def test_theorem2_default_splits_delta() -> None:
    # delta = 0.05 split over the two branches: d = 0.025.
    # Hoeffding: sqrt(log(2/0.025) / (2*20)) = sqrt(log 80 / 40) = sqrt(4.3820266/40) = 0.3309843
    # Bernstein: sqrt(2 * 0.85*0.15 * log(160) / 19) + 7 log(160) / (3*19)
    #          = sqrt(0.255 * 5.0751738 / 19) + 35.526217/57 = 0.2609862 + 0.6232670 = 0.8842532
    # min = 0.3309843; times K-1 = 3: 0.9929529
    b = complementary_bound(EX, 0.05)
    assert b.half_width == pytest.approx(0.9929529, abs=1e-6)
    assert b.estimate == pytest.approx(0.55)
    assert b.rigorous and b.holds_for_data_dependent_weight and not b.assumes_fixed_weight
    assert (b.lower, b.upper) == (0.0, 1.0)


def test_theorem2_paper_constants() -> None:
    # d = delta = 0.05: 3 * sqrt(log 40 / 40) = 3 * sqrt(3.6888795/40) = 3 * 0.3036808 = 0.9110425
    b = complementary_bound(EX, 0.05, paper_constants=True)
    assert b.half_width == pytest.approx(0.9110425, abs=1e-6)
    assert not b.rigorous


def test_theorem2_bernstein_branch_wins_when_q_near_one() -> None:
    # n_c = 2000, q = 1990/2000 = 0.995, K = 3, d = 0.025:
    # Hoeffding: sqrt(log 80 / 4000) = 0.0330984
    # Bernstein: sqrt(2 * 0.995*0.005 * log 160 / 1999) + 7 log 160 / 5997
    #          = sqrt(0.00995 * 5.0751738 / 1999) + 0.0059240 = 0.0050261 + 0.0059240 = 0.0109501
    # half = 2 * 0.0109501 = 0.0219002
    b = complementary_bound(LabelCounts(k=3, n_c=2000, s_c=1990), 0.05)
    assert b.half_width == pytest.approx(0.0219002, abs=1e-6)
    assert "Bernstein" in b.notes[0]


def test_proposition3_by_formula() -> None:
    # w = 0.5, delta_o = delta_c = 0.025, each branch at half: 0.0125.
    d = 0.0125
    hoeff = 0.5 * math.sqrt(math.log(2 / d) / 20) + 0.5 * 3 * math.sqrt(math.log(2 / d) / 40)
    eb_o = math.sqrt(2 * 0.21 * math.log(4 / d) / 9) + 7 * math.log(4 / d) / 27
    eb_c = math.sqrt(2 * 9 * 0.1275 * math.log(4 / d) / 19) + 7 * 3 * math.log(4 / d) / 57
    expected = min(hoeff, 0.5 * eb_o + 0.5 * eb_c)
    # hoeff = 0.5 * sqrt(5.0751738/20) + 1.5 * sqrt(5.0751738/40) = 0.2518723 + 0.5343019 = 0.7861742
    assert expected == pytest.approx(0.7861742, abs=1e-6)
    b = union_mixture_bound(EX, 0.5, 0.05)
    assert b.half_width == pytest.approx(expected)
    assert b.estimate == pytest.approx(0.625)
    assert b.holds_for_data_dependent_weight and b.rigorous


def test_proposition3_at_plugin_ivw_weight_and_w1() -> None:
    b = union_mixture_bound(EX, None, 0.05)
    assert b.weight == pytest.approx(153 / 209)
    assert b.holds_for_data_dependent_weight
    # w = 1: the ordinary arm gets all of delta; Hoeffding at 0.025: sqrt(log 80 / 20) = 0.4680826
    # Bernstein at 0.025: sqrt(2*0.21*log 160/9) + 7 log 160/27 = 0.4866564 + 1.3157858 -> Hoeffding wins
    b1 = union_mixture_bound(LabelCounts(k=4, n_o=10, s_o=7), 1.0, 0.05)
    assert b1.half_width == pytest.approx(0.4680826, abs=1e-6)


def test_theorem4_oracle() -> None:
    # A = 0.7, w = 0.5, K = 4: q = 2.7/3 = 0.9
    # v = 0.25 * 0.21/10 + 0.25 * 9 * 0.09/20 = 0.00525 + 0.010125 = 0.015375
    # c = max(0.5/10, 0.5*3/20) = max(0.05, 0.075) = 0.075; L = log(2/0.05) = log 40 = 3.6888795
    # half = sqrt(2 * 0.015375 * 3.6888795) + 0.075 * 3.6888795 = 0.3367984 + 0.2766660 = 0.6134644
    b = bernstein_mixture_bound(EX, 0.5, 0.05, accuracy=0.7)
    assert b.half_width == pytest.approx(0.6134644, abs=1e-6)
    assert b.rigorous and b.assumes_fixed_weight and not b.holds_for_data_dependent_weight


def test_eq15_plugin() -> None:
    # v_hat = 0.25 * 0.021 + 0.25 * 0.057375 = 0.01959375; c = 0.075
    # half = sqrt(2 * 0.01959375 * 3.6888795) + 0.075 * 3.6888795 = 0.3802078 + 0.2766660 = 0.6568738
    b = bernstein_mixture_bound(EX, 0.5, 0.05)
    assert b.half_width == pytest.approx(0.6568738, abs=1e-6)
    assert not b.rigorous and not b.holds_for_data_dependent_weight


def test_eq16_plugin_ivw() -> None:
    # h_min = 0.021 * 0.057375 / 0.078375 = 0.01537321; w = 153/209 = 0.7320574
    # c = max(0.7320574/10, 0.2679426 * 3/20) = max(0.0732057, 0.0401914) = 0.0732057
    # half = sqrt(2 * 3.6888795 * 0.01537321) + 0.0732057 * 3.6888795
    #      = 0.3367788 + 0.2700472 = 0.6068260
    b = bernstein_ivw_bound(EX, 0.05)
    assert b.half_width == pytest.approx(0.6068260, abs=1e-6)
    assert not b.rigorous and not b.holds_for_data_dependent_weight
    with pytest.raises(DataError):
        bernstein_ivw_bound(LabelCounts(k=4, n_c=5, s_c=4))


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 2])
def test_bad_delta(delta: float) -> None:
    with pytest.raises(ConfigError):
        complementary_bound(EX, delta)


def test_bounds_need_their_labels() -> None:
    with pytest.raises(DataError):
        complementary_bound(LabelCounts(k=4, n_o=3, s_o=1))
    with pytest.raises(DataError):
        union_mixture_bound(LabelCounts(k=4, n_o=3, s_o=1), 0.5)
    with pytest.raises(ConfigError):
        union_mixture_bound(EX, 0.5, 0.05, delta_o=0.05)


def test_eq5_and_eq4() -> None:
    # Eq. 5: n_c = (1 + (K-2)/A) n_o. K=4, A=0.5, n_o=100: (1 + 2/0.5) * 100 = 500
    assert complementary_labels_to_match(0.5, 4, 100) == 500
    # K=10, A=0.8, n_o=300: (1 + 8/0.8) * 300 = 11 * 300 = 3300
    assert complementary_labels_to_match(0.8, 10, 300) == 3300
    # K=4, A=0.7, n_o=300: (1 + 2/0.7) * 300 = 1157.14 -> 1158
    assert complementary_labels_to_match(0.7, 4, 300) == 1158
    # Eq. 4 at n_c = n_o, K=4, A=0.5: (0.5 + 2)/0.5 = 5
    assert variance_ratio(0.5, 4, 100, 100) == pytest.approx(5.0)
    # ... and at the matched n_c the ratio is 1
    assert variance_ratio(0.5, 4, 100, 500) == pytest.approx(1.0)


def test_half_width_plan() -> None:
    # A = 0.5, h = 0.05, z^2 = 3.8414588: ordinary n = 3.8414588 * 0.25 / 0.0025 = 384.15 -> 385
    # complementary (K=4): 3.8414588 * (2.5 * 0.5) / 0.0025 = 1920.73 -> 1921
    # alongside n_o = 100: target info 1536.58 - 100/0.25 = 1136.58; * 1.25 = 1420.73 -> 1421
    p = labels_for_half_width(0.5, 4, 0.05, n_ordinary=100)
    assert (p.n_ordinary_alone, p.n_complementary_alone, p.n_complementary_alongside) == (385, 1921, 1421)
    # 1000 ordinary labels already give half-width 1.96 * sqrt(0.25/1000) = 0.031 < 0.05
    assert labels_for_half_width(0.5, 4, 0.05, n_ordinary=1000).n_complementary_alongside == 0


def test_plan_eq8_matches_paper_ablation() -> None:
    # Section 3.2 ablation: with n_c = (K-1) n_o, w* = (A+K-2)/(AK+K-2); K=4, A=0.7: 2.7/4.8 = 0.5625
    p = plan_labels(0.7, 4, 300)
    assert p.ivw_weight_k_minus_1 == pytest.approx(0.5625)
    assert p.n_complementary_k_minus_1 == 900
    # ordinary half-width: 1.959964 * sqrt(0.21/300) = 1.959964 * 0.0264575 = 0.0518558
    assert p.half_width_ordinary == pytest.approx(0.0518558, abs=1e-6)
    # variance ratio at equal n: 2.7/0.7 = 3.8571429
    assert p.variance_ratio_equal_n == pytest.approx(2.7 / 0.7)


@pytest.mark.parametrize(
    "args",
    [(0.0, 4, 100), (1.2, 4, 100), (0.5, 1, 100), (0.5, 4, 0), (0.5, 4, 2.5)],
)
def test_plan_bad_args(args: tuple[float, int, int]) -> None:
    with pytest.raises(ConfigError):
        plan_labels(*args)
    with pytest.raises(ConfigError):
        labels_for_half_width(0.5, 4, 0.0)
