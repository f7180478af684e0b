"""seerbench.stats, the one statistics home: the interval type, Wilson at the boundary, the main
stats table's accuracy and clustered intervals, score intervals at A = 1, per-condition rater
resampling in the hybrid sweep, and Monte Carlo coverage of the intervals the CLI prints.

Coverage tests are seeded; with R replicates a 95% interval's hit rate has standard error
sqrt(0.95 * 0.05 / R) (0.011 at R = 400): each asserts a band of about 3 standard errors around
0.95 (lower bound 0.915 at R = 400, 0.91 at R = 300), and an upper bound where an interval could
be inflated.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

import seerbench.stats as stats
from seerbench.complementarity import (
    ai_items,
    human_data,
    hybrid_sweep,
    simulate_ai_ratings,
    simulate_judgments,
)
from seerbench.estimators import LabelCounts, complementary_accuracy, ivw_accuracy, ordinary_accuracy
from seerbench.results import question_cluster

Z = 1.959963984540054  # the standard-normal 0.975 quantile


def _wilson(p: float, n: float) -> tuple[float, float]:
    """Wilson's interval written out from its formula."""
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


# ---- the type and the convention -----------------------------------------------------------------


def test_interval_always_holds_its_estimate() -> None:
    iv = stats.Interval(1.0, 0.7, 1.0 - 2e-15, 12.0, "wilson", 12)
    assert iv.ci_high == 1.0 and iv.covers(1.0)
    skewed = stats.Interval(0.5, 0.51, 0.7)  # a percentile interval can miss a skewed estimate
    assert skewed.ci_low == 0.5
    empty = stats.Interval(0.3, math.nan, math.nan, note="impossible")
    assert empty.empty and not empty.covers(0.3)


def test_one_confidence_convention() -> None:
    assert stats.z_value(0.95) == pytest.approx(Z, abs=1e-12)
    assert stats.z_value(stats.confidence_of_alpha(0.05)) == pytest.approx(Z, abs=1e-12)
    with pytest.raises(ValueError, match="confidence"):
        stats.z_value(1.5)


def test_wilson_twelve_of_twelve() -> None:
    # by hand: centre (1 + z^2/24) / (1 + z^2/12) = 0.87875, half z sqrt(z^2/576) / (1 + z^2/12)
    iv = stats.wilson_interval(12, 12)
    assert (iv.ci_low, iv.ci_high) == pytest.approx((0.75751, 1.0), abs=1e-5)
    assert iv.ci_high == 1.0 and iv.estimate == 1.0
    assert stats.wilson(0.0, 12)[0] == 0.0


def test_t_interval_by_hand_and_refuses_no_spread() -> None:
    iv = stats.t_interval([1.0, 2.0, 3.0, 4.0])
    # mean 2.5, s = 1.29099, t_{0.975, 3} = 3.182446
    assert (iv.ci_low, iv.ci_high) == pytest.approx(
        (2.5 - 3.182446 * 1.29099 / 2, 2.5 + 3.182446 * 1.29099 / 2), abs=1e-4
    )
    flat = stats.t_interval([2.0, 2.0, 2.0])
    assert flat.empty and flat.note  # never a zero-width interval


def test_replicate_interval_widens_the_percentile_interval_to_t() -> None:
    # replicates 0..4 over 5 clusters: percentile (linear) 0.1 and 3.9; SD sqrt(2.5) times
    # sqrt(5/4) = 1.767767, t_{0.975, 4} = 2.776445: 2 -/+ 4.908108, wider on both sides
    iv = stats.replicate_interval(2.0, np.array([0.0, 1.0, 2.0, 3.0, 4.0]), 5)
    assert (iv.ci_low, iv.ci_high) == pytest.approx((2 - 4.908108, 2 + 4.908108), abs=1e-5)
    assert iv.method == "cluster bootstrap over 5 clusters (percentile, widened to t on 4 df)"
    # skewed replicates over many clusters: the percentile bound (9.0) is kept where it is wider;
    # SD sqrt(20) sqrt(1000/999), t_{0.975, 999} = 1.962341: half 8.780249
    skew = stats.replicate_interval(0.0, np.array([0.0, 0.0, 0.0, 0.0, 10.0, math.nan]), 1000)
    assert (skew.ci_low, skew.ci_high) == pytest.approx((-8.780249, 9.0), abs=1e-5)
    none = stats.replicate_interval(1.0, np.array([1.0, math.inf]), 5)
    assert none.empty and none.note == "fewer than 2 replicates"


def test_one_question_or_cluster_has_no_interval_not_a_zero_width_one() -> None:
    # one cluster resampled is itself every time: the replicates all equal the estimate, and the
    # percentile interval would be [1, 1]; there is no interval, with a note
    one = stats.replicate_interval(1.0, np.full(50, 1.0), 1)
    assert math.isnan(one.ci_low) and math.isnan(one.ci_high)
    assert one.note == "one cluster resampled: no interval"
    # a mean of one value (ASD of a cell with one question): no interval, not [-0.41, -0.41]
    s = stats.summarize([-0.41])
    assert s.mean == -0.41 and math.isnan(s.ci_low) and math.isnan(s.ci_high)
    assert s.note == "one value: no interval"
    assert stats.summarize_many({"asd": [-0.41], "x": [1.0, 2.0]})["asd"] == s
    # several values, all in one passage: nothing measures the spread between passages
    c = stats.clustered_summary([0.2, 0.4, 0.9], ["p", "p", "p"])
    assert c.mean == pytest.approx(0.5) and math.isnan(c.ci_low) and c.clusters == 1
    assert c.note == "one cluster resampled: no interval"
    # a paired difference of 0/1 values over one question keeps MOVER's interval (Wilson's exist
    # at n = 1): see test_floating_point_noise_is_one_value_and_one_question_keeps_movers_interval


# ---- the main stats table --------------------------------------------------------------------------


def test_accuracy_twelve_of_twelve_is_wilson_not_a_point() -> None:
    s = stats.accuracy_summary(np.ones(12))
    assert s.method == "wilson"
    assert (s.ci_low, s.ci_high) == pytest.approx((_wilson(1.0, 12)[0], 1.0), abs=1e-12)
    assert s.ci_high - s.ci_low > 0.2


def test_clustered_accuracy_is_wilson_at_the_sandwich_n_eff() -> None:
    # 3 passages of 4 questions: values 1110 / 1111 / 1000 -> p = 8/12; cluster totals of x - p:
    # 3 - 4p, 4 - 4p, 1 - 4p = 1/3, 4/3, -5/3; V = g/(g-1) sum t^2 / n^2 = 1.5 * (42/9) / 144
    x = np.array([1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0], dtype=float)
    cl = [0] * 4 + [1] * 4 + [2] * 4
    p = 8 / 12
    v = 1.5 * (1 / 9 + 16 / 9 + 25 / 9) / 144
    s = stats.accuracy_summary(x, cl)
    assert s.clusters == 3 and s.n_eff == pytest.approx(min(p * (1 - p) / v, 12))
    assert (s.ci_low, s.ci_high) == pytest.approx(_wilson(p, p * (1 - p) / v), abs=1e-12)
    # every question its own cluster: plain Wilson at n
    s1 = stats.accuracy_summary(x)
    assert (s1.ci_low, s1.ci_high) == pytest.approx(_wilson(p, 12), abs=1e-12)


def test_clustered_summary_without_shared_clusters_is_summarize() -> None:
    x = np.random.default_rng(0).normal(size=40)
    a = stats.clustered_summary(x, [None] * 40, n_boot=300, seed=4)
    assert a == stats.summarize(x, n_boot=300, seed=4)


def test_question_cluster_prefers_the_dataset_cluster_then_the_passage() -> None:
    assert question_cluster({"metadata": {"cluster": "c1", "passage_id": 7}}) == "cluster:c1"
    assert question_cluster({"metadata": {"passage_id": 7}, "source_text": "x"}) == "passage_id:7"
    assert question_cluster({"source_text": " a  b "}) == question_cluster({"source_text": "a b"})
    assert question_cluster({"metadata": {}}) is None


# ---- score intervals at the boundary (seed 001) -----------------------------------------------


@pytest.mark.parametrize(
    "fn, counts",
    [
        (ordinary_accuracy, LabelCounts(k=4, n_o=100, s_o=100)),
        (complementary_accuracy, LabelCounts(k=4, n_c=300, s_c=300)),
        (ivw_accuracy, LabelCounts(k=10, n_o=50, s_o=50, n_c=50, s_c=50)),
    ],
)
def test_score_interval_includes_one_at_a_equals_one(fn: object, counts: LabelCounts) -> None:
    est = fn(counts)  # type: ignore[operator]
    assert est.estimate == 1.0 and est.ci_high == 1.0 and est.ci_low < 1.0
    iv = est.as_interval()
    assert isinstance(iv, stats.Interval) and iv.covers(1.0)


# ---- hybrid: only the analysed condition's raters are resampled --------------------------------


def test_none_condition_intervals_do_not_change_when_another_condition_is_added() -> None:
    ai_rows = simulate_ai_ratings(60, seed=3)
    ai = ai_items(ai_rows)
    rows = simulate_judgments(ai_rows, {"none": 0.0, "assist": 0.6}, n_raters=24, ratings_per_item=3, seed=3)
    # between subjects: the assisted condition has raters of its own
    for r in rows:
        if r["condition"] == "assist":
            r["rater_id"] = f"assist-{r['rater_id']}"
    alone = [r for r in rows if r["condition"] == "none"]
    a = hybrid_sweep(ai, human_data(alone, ai), "none", n_boot=200, thresholds=[0.6, 0.7, 0.8])
    b = hybrid_sweep(ai, human_data(rows, ai), "none", n_boot=200, thresholds=[0.6, 0.7, 0.8])
    assert a.humans_alone == b.humans_alone
    assert [r.hybrid for r in a.rows] == [r.hybrid for r in b.rows]
    assert [r.gain_over_ai for r in a.rows] == [r.gain_over_ai for r in b.rows]
    assert a.humans_alone.ci_low is not None and a.humans_alone.ci_low < a.humans_alone.ci_high  # type: ignore[operator]


# ---- Monte Carlo coverage --------------------------------------------------------------------------


@pytest.mark.parametrize("p, n", [(0.97, 12), (0.03, 12), (0.5, 12), (0.9, 30), (0.97, 30), (0.03, 30)])
def test_accuracy_interval_exact_coverage(p: float, n: int) -> None:
    """i.i.d. 0/1 verdicts: the coverage of the table's accuracy interval, summed exactly over the
    binomial outcomes (no simulation error). Wilson's dips below nominal at some p; at these it
    stays at or above 0.91 (the percentile bootstrap's at p = 0.97, n = 12 is 1 - 0.97^12 = 0.31)."""
    cover = 0.0
    for k in range(n + 1):
        s = stats.accuracy_summary(np.r_[np.ones(k), np.zeros(n - k)], n_boot=10)
        cover += float(binom.pmf(k, n, p)) * (s.ci_low <= p <= s.ci_high)
    assert cover >= 0.91, cover


def _logistic(x: np.ndarray) -> np.ndarray:
    return np.asarray(1 / (1 + np.exp(-x)))


@pytest.mark.parametrize("p, n, g, sd", [(0.8, 30, 10, 1.0), (0.95, 60, 12, 1.0), (0.5, 60, 12, 1.5)])
def test_clustered_accuracy_coverage(p: float, n: int, g: int, sd: float) -> None:
    """Questions in g passages with a passage effect (sd on the logit scale): the Wilson interval at
    the sandwich n_eff covers the population accuracy E[logistic(logit p + u)]."""
    rng = np.random.default_rng(11)
    truth = float(_logistic(math.log(p / (1 - p)) + np.random.default_rng(5).normal(0, sd, 400_000)).mean())
    per = n // g
    cl = np.repeat(np.arange(g), per)
    reps, hit = 400, 0
    for _ in range(reps):
        u = np.repeat(rng.normal(0, sd, g), per)
        x = (rng.random(n) < _logistic(math.log(p / (1 - p)) + u)).astype(float)
        s = stats.accuracy_summary(x, cl, n_boot=10)
        hit += s.ci_low <= truth <= s.ci_high
    assert 0.915 <= hit / reps <= 0.99, hit / reps


@pytest.mark.parametrize("n, g", [(30, 10), (60, 12)])
def test_clustered_mean_coverage(n: int, g: int) -> None:
    """ASD-like values (heavy tails, clipped as log scores are) in g passages with a passage effect:
    the cluster bootstrap (widened to t on g - 1 df) covers the true mean 0; without the passage
    clusters the i.i.d. interval would not."""
    rng = np.random.default_rng(7)
    per = n // g
    cl = np.repeat(np.arange(g), per)
    reps, hit = 300, 0
    for r in range(reps):
        x = np.clip(np.repeat(rng.normal(0, 1.0, g), per) + rng.standard_t(3, n), -14, 14)
        s = stats.clustered_summary(x, cl, n_boot=400, seed=r)
        hit += s.ci_low <= 0.0 <= s.ci_high
    assert 0.91 <= hit / reps <= 0.99, hit / reps


def test_impossible_counts_give_an_empty_interval_with_a_note_not_zero_zero() -> None:
    # K = 4: q = (A + 2) / 3 >= 2/3 for any A in [0, 1]; 100 of 300 avoided (q = 1/3) is far below
    est = complementary_accuracy(LabelCounts(k=4, n_c=300, s_c=100))
    assert est.estimate == pytest.approx(3 * (1 / 3) - 2)
    assert math.isnan(est.ci_low) and math.isnan(est.ci_high)
    assert any("impossible" in n for n in est.notes)
    iv = est.as_interval()
    assert iv.empty and iv.note and "impossible" in iv.note
    # merely unlikely counts still get an interval, clipped to [0, 1]
    ok = complementary_accuracy(LabelCounts(k=4, n_c=30, s_c=19))  # q = 0.633 < 2/3
    assert ok.ci_low == 0.0 and 0.0 < ok.ci_high < 1.0


def test_eq16_uses_eq8_variances_when_a_plug_in_variance_is_zero() -> None:
    from seerbench.estimators import ml_accuracy
    from seerbench.estimators._bounds import bernstein_ivw_bound

    # K = 10, 484/500 ordinary correct, 500/500 complementary avoided: var_comp's plug-in is 0
    c = LabelCounts(k=10, n_o=500, s_o=484, n_c=500, s_c=500)
    b = bernstein_ivw_bound(c)
    a = ml_accuracy(c).estimate  # the pilot of Eq. 8
    v_o, v_c = a * (1 - a) / 500, (a + 8) * (1 - a) / 500
    w = (a + 8) * 500 / (a * 500 + (a + 8) * 500)  # Eq. 8
    log = math.log(2 / 0.05)
    want = math.sqrt(2 * log * v_o * v_c / (v_o + v_c)) + log * max(w / 500, (1 - w) * 9 / 500)
    assert b.half_width == pytest.approx(want, rel=1e-9)
    assert b.half_width > log * max(w / 500, (1 - w) * 9 / 500)  # not the zero-variance width


def test_paired_accuracy_difference_keeps_a_width_at_the_boundary() -> None:
    s = stats.paired_proportion_difference(np.ones(12), np.ones(12), n_boot=200)
    assert s.mean == 0.0 and s.ci_low < -0.1 and s.ci_high > 0.1  # the percentile one is [0, 0]
    # MOVER by hand: each side is Wilson(12/12) = [0.7575, 1]; rho = 0 (no spread) -> +-0.2425
    lw = 1 - _wilson(1.0, 12)[0]
    assert (s.ci_low, s.ci_high) == pytest.approx((-lw, lw), abs=1e-9)


@pytest.mark.parametrize("pa, pb, n", [(0.97, 0.92, 30), (0.9, 0.9, 12)])
def test_paired_accuracy_difference_coverage(pa: float, pb: float, n: int) -> None:
    """Two judges on the same questions, their verdicts correlated through question difficulty."""
    rng = np.random.default_rng(3)
    reps, hit = 300, 0
    for r in range(reps):
        u = rng.random(n)
        x = (u < pa).astype(float)  # a shared uniform: a hard question is hard for both
        y = (np.where(rng.random(n) < 0.5, u, rng.random(n)) < pb).astype(float)
        s = stats.paired_proportion_difference(x, y, n_boot=200, seed=r)
        hit += s.ci_low <= pa - pb <= s.ci_high
    assert hit / reps >= 0.91, hit / reps


def test_stats_table_clusters_by_passage_and_says_so_under_the_table() -> None:
    import io
    import json

    from rich.console import Console

    from seerbench.cli._run import stats_table
    from seerbench.results import run_stats

    def line(i: int, correct: float, passage: int | None) -> dict[str, object]:
        meta = {} if passage is None else {"passage_id": passage}
        return {
            "question_id": f"q{i}",
            "question": {"metadata": meta, "answer_cases": [{"short": "A"}]},  # one case: no diagnostics
            "answer_cases": [],
            "excluded": False,
            "parse_failures": 0,
            "judge_accuracy": correct,
            "protocol": "NaiveJudge",
        }

    acc = [1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0]
    rec = run_stats(
        [line(i, a, i // 4) for i, a in enumerate(acc)], {}, eps=1e-6, policy="exclude", scored=True
    )
    assert rec["clusters"] == 3
    s = rec["metrics"]["judge_accuracy"]
    assert s["method"] == "wilson at n_eff (3 clusters)" and s["clusters"] == 3
    plain = run_stats(
        [line(i, a, None) for i, a in enumerate(acc)], {}, eps=1e-6, policy="exclude", scored=True
    )
    assert plain["clusters"] is None and plain["metrics"]["judge_accuracy"]["method"] == "wilson"
    assert (
        s["ci_high"] - s["ci_low"]
        > plain["metrics"]["judge_accuracy"]["ci_high"] - plain["metrics"]["judge_accuracy"]["ci_low"]
    )
    meta = {"protocol": "NaiveJudge", "agent": None, "judge": "j", "tools": None, "best_of_n": 1}
    out = io.StringIO()
    stats_table([{**meta, **rec}, {**meta, **plain}], title="t").print(Console(file=out, width=200))
    text = " ".join(out.getvalue().split())  # the caption wraps at the table's width
    assert "questions sharing a passage are resampled together in 1 of 2 cell(s) (3 clusters)" in text
    json.dumps(rec)  # the record stays plain JSON


@pytest.mark.parametrize("n", [12, 30])
def test_iid_mean_coverage_at_small_n(n: int) -> None:
    """ASD-like values (heavy tails, clipped as log scores are), one question a cluster: the table's
    interval (percentile bootstrap widened to t on n - 1 df) covers the true mean 0; the percentile
    interval alone covered 0.89 at n = 12."""
    rng = np.random.default_rng(13)
    reps, hit = 400, 0
    for r in range(reps):
        x = np.clip(rng.standard_t(3, n), -14, 14)
        s = stats.summarize(x, n_boot=400, seed=r)
        hit += s.ci_low <= 0.0 <= s.ci_high
    assert 0.915 <= hit / reps <= 0.99, hit / reps


def test_crossed_variance_scales_each_part_and_takes_satterthwaite_df() -> None:
    # parts 4.0 (items, 20), 3.0 (raters, 30), 3.0 (judgments, 101), worked by hand:
    # 4 * 20/19 = 4.210526, 3 * 30/29 = 3.103448, 3 * 101/100 = 3.03; V = 4.283974;
    # df = V^2 / (4.210526^2/19 + 3.103448^2/29 + 3.03^2/100) = 18.35243 / 1.357007 = 13.524
    v, df = stats.crossed_variance({"items": 4.0, "raters": 3.0, "judgments": 3.0}, 20, 30, 101)
    assert v == pytest.approx(4.283974, abs=1e-6) and df == pytest.approx(13.524, abs=1e-3)
    # below the larger one-way part (0.1 * 5/4) the variance is floored there; df at most the
    # fewer clusters less one (here 5 raters: 4)
    v, df = stats.crossed_variance({"items": 0.1, "raters": 0.1, "judgments": 0.3}, 20, 5, 100)
    assert v == pytest.approx(0.125) and df <= 4.0


def test_count_interval_is_the_quasi_poisson_score_interval() -> None:
    # mean 2 with variance 0.1: n_eff = 20; at 9 df the roots of (2 - mu)^2 = q^2 mu / 20
    iv = stats.count_interval(2.0, 0.1, 9.0, n_max=100)
    q = 2.2621571627409915
    b = 4 + q * q / 20
    lo, hi = (b - math.sqrt(b * b - 16)) / 2, (b + math.sqrt(b * b - 16)) / 2
    assert (iv.ci_low, iv.ci_high, iv.n_eff) == pytest.approx((lo, hi, 20.0))
    assert hi - 2 > 2 - lo  # skewed right, like the counts
    # a variance below the Poisson one of independent counts: n_eff capped at n_max
    assert stats.count_interval(2.0, 1e-9, 9.0, n_max=100).n_eff == 100
    # no event in 40 counts: the exact Poisson bound exp(-40 mu) = 0.05
    zero = stats.count_interval(0.0, 0.0, 9.0, n_max=40)
    assert zero.ci_low == 0.0 and zero.ci_high == pytest.approx(math.log(20) / 40)
    assert stats.count_interval(math.nan, 0.1, 9.0, n_max=40).empty


def test_floating_point_noise_is_one_value_and_one_question_keeps_movers_interval() -> None:
    # 0 and 1e-16 are one value summed two ways: no interval, not [1.7e-17, 1.9e-16]
    noise = stats.summarize([0.0, 1e-16, 0.0, 2e-16])
    assert math.isnan(noise.ci_low) and noise.note is not None and noise.note.startswith("every value equal")
    assert not math.isnan(stats.summarize([0.0, 1e-3, 0.0]).ci_low)  # a real spread keeps its interval
    # one question, right against wrong: MOVER of Wilson(1/1) = [1/(1+z^2), 1] and
    # Wilson(0/1) = [0, z^2/(1+z^2)]: low = 1 - sqrt((1 - l1)^2 + u0^2) = 1 - sqrt(2) z^2/(1+z^2)
    z = 1.959963984540054
    d = stats.paired_proportion_difference(np.array([1.0]), np.array([0.0]))
    assert d.mean == 1.0 and d.ci_high == pytest.approx(1.0)
    assert d.ci_low == pytest.approx(1 - math.sqrt(2) * z * z / (1 + z * z), abs=1e-9)


def test_quantiles_are_scipy_stats_own() -> None:
    """The t and normal quantiles come from scipy.special (scipy.stats takes 0.7 s to import):
    the same floats as scipy.stats, and its answers where the argument is outside (0, 1) or df <= 0."""
    from scipy.stats import norm, t

    from seerbench.stats._quantile import norm_ppf, t_ppf

    rng = np.random.default_rng(0)
    qs = [0.5 + c / 2 for c in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999)] + rng.random(200).tolist() + [0.5, 1e-300]
    dfs = [1, 2, 3, 11, 29, 1000, 0.5, 1.7, 3.25, 1e9, math.inf, *rng.uniform(0.01, 50, 40).tolist()]
    for q in qs:
        assert norm_ppf(q) == float(norm.ppf(q))
        for df in dfs:
            assert t_ppf(q, df) == float(t.ppf(q, df)), (q, df)
    for q, df in ((0.0, 3), (1.0, 3), (1.5, 3), (0.975, 0), (0.975, -1), (math.nan, 3), (0.975, math.nan)):
        want = float(t.ppf(q, df))
        assert t_ppf(q, df) == want or (math.isnan(want) and math.isnan(t_ppf(q, df))), (q, df)
    for q in (0.0, 1.0, -0.5, math.nan):
        want = float(norm.ppf(q))
        assert norm_ppf(q) == want or (math.isnan(want) and math.isnan(norm_ppf(q)))
    assert str(t_ppf(0.5, 3)) == str(float(t.ppf(0.5, 3)))  # the sign of a zero too
