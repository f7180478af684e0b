"""labels.csv reading (and its errors), protocol simulation, the (K-1) conversion, fitness ranking."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from seerbench.errors import ConfigError, DataError
from seerbench.estimators import (
    LabelCounts,
    LabelSet,
    complementary_accuracy,
    expand_complementary,
    fitness,
    log_likelihood,
    rank_systems,
    read_labels_csv,
    simulate_protocol,
    write_labels_csv,
)


def _csv(tmp_path: Path, text: str, name: str = "labels.csv") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


GOOD = """id,prediction,ordinary_label,complementary_label,k,note
a,1,1,,4,x
b,2,3,,4,
c,3,,3,4,hit the complementary label
d,4,,1,4,
e,2,,4,4,
"""


def test_read_good_file(tmp_path: Path) -> None:
    ls = read_labels_csv(_csv(tmp_path, GOOD))
    assert len(ls) == 5
    assert list(ls.rows) == [2, 3, 4, 5, 6]  # header is row 1
    assert ls.extra["id"] == ["a", "b", "c", "d", "e"]
    assert ls.extra["note"][2] == "hit the complementary label"
    # ordinary: a hit, b miss -> n_o = 2, s_o = 1; complementary: c lands on it (W=0), d and e avoid it
    assert ls.counts() == LabelCounts(k=4, n_o=2, s_o=1, n_c=3, s_c=2)


def test_whole_file_k_and_roundtrip(tmp_path: Path) -> None:
    text = "prediction,ordinary_label,complementary_label\n1,1,\n2,,1\n3.0,,2\n"
    ls = read_labels_csv(_csv(tmp_path, text), k=3)
    assert ls.counts() == LabelCounts(k=3, n_o=1, s_o=1, n_c=2, s_c=2)
    out = tmp_path / "out.csv"
    write_labels_csv(out, ls)
    back = read_labels_csv(out)
    assert back.counts() == ls.counts()
    assert out.read_text().splitlines()[0] == "prediction,ordinary_label,complementary_label,k"


@pytest.mark.parametrize(
    ("text", "k", "match"),
    [
        (
            "prediction,ordinary_label,complementary_label,k\n1,5,,4\n",
            None,
            r"row 2: ordinary_label 5 is outside 1\.\.4",
        ),
        (
            "prediction,ordinary_label,complementary_label,k\n1,1,,4\n1,,0,4\n",
            None,
            r"row 3: complementary_label 0",
        ),
        (
            "prediction,ordinary_label,complementary_label,k\n7,1,,4\n",
            None,
            r"row 2: prediction 7 is outside",
        ),
        (
            "prediction,ordinary_label,complementary_label,k\n1,1,,1\n",
            None,
            r"row 2: k=1: K must be at least 2",
        ),
        ("prediction,ordinary_label,complementary_label,k\n1,,,4\n", None, r"row 2: neither"),
        (
            "prediction,ordinary_label,complementary_label,k\n1,2,2,4\n",
            None,
            r"row 2: complementary_label 2 equals",
        ),
        ("prediction,ordinary_label,complementary_label,k\n1,2,3,4\n", None, r"row 2: both"),
        (
            "prediction,ordinary_label,complementary_label,k\nB,2,,4\n",
            None,
            r"row 2: prediction 'B' is not a number",
        ),
        (
            "prediction,ordinary_label,complementary_label,k\n1,2.5,,4\n",
            None,
            r"row 2: ordinary_label '2.5' is not a whole",
        ),
        (
            "prediction,ordinary_label,complementary_label,k\n1,2,,four\n",
            None,
            r"row 2: k 'four' is not a number",
        ),
        ("prediction,ordinary_label,complementary_label,k\n,2,,4\n", None, r"row 2: prediction is empty"),
        ("prediction,ordinary_label,complementary_label,k\n1,2,,4\n1,2,,\n", None, r"row 3: k is empty"),
        (
            "prediction,ordinary_label,complementary_label,k\n1,2,,4\n",
            5,
            r"row 2: k column says 4 but --k is 5",
        ),
        ("prediction,ordinary_label\n1,2\n", 4, r"missing column\(s\) complementary_label"),
        ("prediction,ordinary_label,complementary_label\n1,2,\n", None, r"no 'k' column"),
        ("", 4, r"empty file"),
        ("prediction,ordinary_label,complementary_label\n", 4, r"no label rows"),
        ("prediction,ordinary_label,complementary_label\n1,2,,9\n", 4, r"row 2: more cells"),
    ],
)
def test_bad_files(tmp_path: Path, text: str, k: int | None, match: str) -> None:
    with pytest.raises(DataError, match=match):
        read_labels_csv(_csv(tmp_path, text), k=k)


def test_mixed_k_and_missing_file(tmp_path: Path) -> None:
    p = _csv(tmp_path, "prediction,ordinary_label,complementary_label,k\n1,1,,4\n1,,2,5\n")
    with pytest.raises(DataError, match=r"rows 2 and 3 have different k \(4 and 5\)"):
        read_labels_csv(p).counts()
    with pytest.raises(DataError, match="cannot read"):
        read_labels_csv(tmp_path / "nope.csv", k=4)
    with pytest.raises(ConfigError):
        read_labels_csv(p, k=1)


def test_estimator_without_needed_set(tmp_path: Path) -> None:
    p = _csv(tmp_path, "prediction,ordinary_label,complementary_label\n1,1,\n2,2,\n")
    with pytest.raises(DataError, match="needs complementary labels"):
        complementary_accuracy(read_labels_csv(p, k=4).counts())


def test_labelset_from_arrays_errors() -> None:
    with pytest.raises(DataError, match="row 1: prediction 0 is outside"):
        LabelSet.from_arrays([1, 0], [1, 1], [False, True], 3)
    with pytest.raises(DataError, match="shape"):
        LabelSet.from_arrays([1, 2], [1], [False, True], 3)
    with pytest.raises(DataError, match="not a whole number"):
        LabelSet.from_arrays([1.5], [1], [False], 3)


def test_simulation_is_seeded_and_uniform() -> None:
    k, n = 4, 20000
    rng = np.random.default_rng(0)
    y = rng.integers(1, k + 1, n)
    pred = y.copy()
    a = simulate_protocol(y, pred, k, seed=11, shuffle_options=False)
    b = simulate_protocol(y, pred, k, seed=11, shuffle_options=False)
    assert np.array_equal(a.labels.label, b.labels.label)
    assert not np.array_equal(a.labels.label, simulate_protocol(y, pred, k, seed=12).labels.label)
    ls = a.labels
    # Expert routing: "yes" with probability 1/K = 0.25 (SE sqrt(0.25*0.75/20000) = 0.0031)
    assert abs(ls.n_ordinary / n - 0.25) < 4 * 0.0031
    # Eq. 1: a complementary label is uniform over the K-1 wrong options; offsets 1..3 from y each
    # about 1/3 (SE sqrt(2/9 / 15000) = 0.0038). Without shuffling, positions are the original ones.
    comp = ls.is_complementary
    offset = (ls.label[comp] - y[comp]) % k
    assert set(np.unique(offset)) == {1, 2, 3}
    for j in (1, 2, 3):
        assert abs(np.mean(offset == j) - 1 / 3) < 4 * 0.0038
    # Ordinary labels are the true option, and a perfect system therefore never hits a complementary one
    assert np.array_equal(ls.label[~comp], y[~comp])
    assert ls.counts().s_c == ls.n_complementary


def test_shuffle_moves_prediction_with_option() -> None:
    k, n = 5, 5000
    rng = np.random.default_rng(1)
    y = rng.integers(1, k + 1, n)
    pred = np.where(rng.random(n) < 0.6, y, (y % k) + 1)
    sim = simulate_protocol(y, pred, k, seed=3)
    ls = sim.labels
    # After shuffling, each item's order is a permutation, and the shown prediction is still the
    # original option: order[i, pred_pos - 1] + 1 == pred.
    assert np.array_equal(np.sort(sim.order, axis=1), np.broadcast_to(np.arange(k), (n, k)))
    assert np.array_equal(sim.order[np.arange(n), ls.prediction - 1] + 1, pred)
    # Ordinary labels in shown positions are spread over all positions (the shuffle), ~1/5 each
    ordinary = ls.label[~ls.is_complementary]
    assert min(np.bincount(ordinary, minlength=k + 1)[1:]) > 0.1 * len(ordinary)


def test_fixed_split_mode() -> None:
    y = np.array([1, 2, 3, 1, 2, 3, 1, 2])
    sim = simulate_protocol(y, y, 3, seed=0, n_ordinary=3)
    assert sim.labels.n_ordinary == 3 and sim.mode == "fixed"
    with pytest.raises(ConfigError):
        simulate_protocol(y, y, 3, seed=0, n_ordinary=9)
    with pytest.raises(DataError, match="item 0: true_label 4"):
        simulate_protocol([4], [1], 3, seed=0)


def test_expand_complementary() -> None:
    # 2 items, K = 4: item 0 true 2 predicted 2 (right), item 1 true 1 predicted 3 (wrong).
    ls = expand_complementary([2, 1], [2, 3], 4)
    assert list(ls.label) == [1, 3, 4, 2, 3, 4]
    assert list(ls.rows) == [0, 0, 0, 1, 1, 1]
    # W: item 0 avoids all three; item 1 hits label 3 once -> s_c = 3 + 2 = 5 of n_c = 6
    c = ls.counts()
    assert (c.n_c, c.s_c) == (6, 5)
    # A_comp = 3 * 5/6 - 2 = 0.5 = the items' ordinary accuracy (1 of 2), as the docstring says
    assert complementary_accuracy(c).estimate == pytest.approx(0.5)


def test_rank_systems_shows_near_ties() -> None:
    systems = {
        "clear_winner": LabelCounts(k=4, n_o=500, s_o=450, n_c=1500, s_c=1450),
        "close_second": LabelCounts(k=4, n_o=500, s_o=445, n_c=1500, s_c=1445),
        "far_behind": LabelCounts(k=4, n_o=500, s_o=250, n_c=1500, s_c=1200),
    }
    r = rank_systems(systems, method="ivw")
    assert [s.name for s in r.systems] == ["clear_winner", "close_second", "far_behind"]
    assert r.near_ties == ["clear_winner", "close_second"]
    assert not r.decisive
    assert r.systems[2].gap > 0.3
    assert fitness(systems["far_behind"], "ord") == pytest.approx(0.5)
    # q and comp order systems identically for one K
    assert [s.name for s in rank_systems(systems, method="q").systems] == [
        s.name for s in rank_systems(systems, method="comp").systems
    ]
    with pytest.raises(ConfigError):
        rank_systems(systems, method="nope")
    with pytest.raises(ConfigError):
        rank_systems({})
    assert rank_systems(systems, method="mix", weight=0.5).best.name == "clear_winner"


def test_log_likelihood_matches_binomial() -> None:
    from scipy.stats import binom

    c = LabelCounts(k=4, n_o=10, s_o=7, n_c=20, s_c=17)
    # l(A) differs from the binomial log-pmfs by the log binomial coefficients only.
    const = np.log(120.0) + np.log(1140.0)  # C(10,7) = 120, C(20,17) = 1140
    for a in (0.2, 0.5, 0.8):
        full = binom.logpmf(7, 10, a) + binom.logpmf(17, 20, (a + 2) / 3)
        assert log_likelihood(a, c) == pytest.approx(full - const)


def test_partition_questions_is_a_library_call() -> None:
    """The `partition` pipeline without the CLI: two 3-option questions, one predicted right."""
    from seerbench.estimators import partition_questions
    from seerbench.types import AnswerCase, Question

    def q(i: str, pred: str) -> Question:
        cases = [AnswerCase(short=s, long=s, value=1.0 if s == "A" else 0.0) for s in "ABC"]
        return Question(id=i, text="?", answer_cases=cases, metadata={"prediction": pred})

    qs = [q("q1", "A"), q("q2", "C")]
    part = partition_questions(qs, all_complementary=True)
    # K-1 = 2 complementary labels per item, each naming a wrong option of that item
    assert part.mode == "all-complementary" and len(part.labels) == 4 and part.labels.n_complementary == 4
    assert part.true_accuracy == 0.5
    assert sorted(zip(part.labels.extra["id"], part.labels.label.tolist(), strict=True)) == [
        ("q1", 2),
        ("q1", 3),
        ("q2", 2),
        ("q2", 3),
    ]
    # predictions given by the caller override metadata; ids that are not questions are refused
    assert partition_questions(qs, {"q2": "A"}, all_complementary=True).true_accuracy == 1.0
    with pytest.raises(DataError, match="not questions: \\['q9'\\]"):
        partition_questions(qs, {"q9": "A"})
    routed = partition_questions(qs, seed=3)
    assert routed.items == 2 and len(routed.labels) == 2 and routed.summary()["seed"] == 3
