"""Binary view: reproducible, unbiased, distractor rules, and a map back to the original options."""

from __future__ import annotations

import math

import pytest

from seerbench.datasets import binary_view, generate_arithmetic
from seerbench.errors import ConfigError, DataError
from seerbench.types import AnswerCase, Question

N = 2000
# Binomial standard error of a share near 1/2 over N draws: sqrt(0.25 / N) ~ 0.0112.
# Four standard errors (~0.045) make a false alarm about 1 in 16,000 runs.
TOL = 4 * math.sqrt(0.25 / N)


def _q(qid: str = "q", k: int = 4, best: str | None = None) -> Question:
    cases = [AnswerCase(short=s, long=f"opt {s}", value=1.0 if s == "A" else 0.0) for s in "ABCD"[:k]]
    return Question(
        id=qid, text="?", answer_cases=cases, metadata={} if best is None else {"best_distractor": best}
    )


def test_reproducible_and_seed_dependent() -> None:
    qs = generate_arithmetic(50, seed=0, k=4)
    assert binary_view(qs, seed=7) == binary_view(qs, seed=7)
    a = [q.true_case.short for q in binary_view(qs, seed=7)]
    b = [q.true_case.short for q in binary_view(qs, seed=8)]
    assert a != b


def test_view_of_a_question_does_not_depend_on_the_rest() -> None:
    qs = generate_arithmetic(20, seed=0, k=4)
    assert binary_view(qs, seed=1)[5:10] == binary_view(qs[5:10], seed=1)


def test_true_position_unbiased_over_seeds() -> None:
    q = _q()  # true option is always 'A' before the view
    share_a = sum(binary_view([q], seed=s)[0].true_case.short == "A" for s in range(N)) / N
    assert abs(share_a - 0.5) < TOL


def test_true_position_unbiased_over_questions() -> None:
    qs = [_q(f"q{i}") for i in range(N)]
    share_a = sum(v.true_case.short == "A" for v in binary_view(qs, seed=0)) / N
    assert abs(share_a - 0.5) < TOL


def test_random_distractor_uniform_over_wrong_options() -> None:
    counts = {"B": 0, "C": 0, "D": 0}
    for s in range(N):
        v = binary_view([_q()], seed=s, distractor="random")[0]
        counts[v.other(v.true_case.short).metadata["original_short"]] += 1
    # each share ~ 1/3 with SE sqrt(2/9 / N) ~ 0.0105
    for c in counts.values():
        assert abs(c / N - 1 / 3) < 4 * math.sqrt((1 / 3) * (2 / 3) / N)


def test_best_distractor_used_and_required_when_asked() -> None:
    (v,) = binary_view([_q(best="C")], seed=0)
    false = v.other(v.true_case.short)
    assert false.long == "opt C" and false.metadata["original_short"] == "C"
    assert v.metadata["binary_view"]["distractor"] == "best"
    with pytest.raises(DataError, match="no best distractor"):
        binary_view([_q()], seed=0, distractor="best")
    (fallback,) = binary_view([_q()], seed=0)
    assert fallback.metadata["binary_view"]["distractor"] == "random"


def test_arithmetic_best_distractor_is_the_slip() -> None:
    for q, v in zip(
        generate_arithmetic(30, seed=4, k=4),
        binary_view(generate_arithmetic(30, seed=4, k=4), seed=0),
        strict=True,
    ):
        assert v.other(v.true_case.short).long == q.case(q.metadata["best_distractor"]).long


def test_given_distractor_mapping_and_function() -> None:
    (v,) = binary_view([_q("x")], seed=0, distractor={"x": "D"})
    assert v.other(v.true_case.short).long == "opt D"
    (w,) = binary_view([_q("x")], seed=0, distractor=lambda q: "B")
    assert w.other(w.true_case.short).long == "opt B"
    with pytest.raises(ConfigError, match="is a true option"):
        binary_view([_q("x")], seed=0, distractor={"x": "A"})
    with pytest.raises(ConfigError, match="no distractor given"):
        binary_view([_q("x")], seed=0, distractor={})
    with pytest.raises(ConfigError, match="unknown distractor rule"):
        binary_view([_q("x")], seed=0, distractor="worst")  # type: ignore[arg-type]


def test_indices_map_back_to_original_options() -> None:
    qs = generate_arithmetic(40, seed=9, k=5)
    for q, v in zip(qs, binary_view(qs, seed=3), strict=True):
        assert v.id == q.id and v.shorts == ["A", "B"]
        info = v.metadata["binary_view"]
        for case, short, idx in zip(
            v.answer_cases, info["original_shorts"], info["original_indices"], strict=True
        ):
            orig = q.case(short)
            assert orig.long == case.long and orig.value == case.value
            assert q.answer_cases[idx] == orig


def test_needs_exactly_one_true_option() -> None:
    q = Question(id="two", text="?", answer_cases=[AnswerCase(short=s, long=s, value=1.0) for s in "AB"])
    with pytest.raises(DataError, match="2 true options"):
        binary_view([q], seed=0)
