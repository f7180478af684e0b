"""Repeated questions must not inflate n: the arithmetic generator never repeats a problem within a
set, and `run` merges questions that repeat another's text, options and passage under a new id
(the rule `study create` uses, from one home), refusing repeats that disagree about the answer."""

from __future__ import annotations

import pytest

from seerbench.datasets import DuplicateQuestions, load_dataset
from seerbench.datasets._common import make_question
from seerbench.errors import DataError
from seerbench.experiment._questions import QuestionStore
from seerbench.types import Question


def test_arithmetic_never_repeats_a_problem_and_keeps_its_prefix() -> None:
    qs = list(load_dataset("arithmetic", n=1000, seed=0))
    assert len({q.text for q in qs}) == 1000  # it was 908 before (92 repeats)
    short = list(load_dataset("arithmetic", n=50, seed=0))
    assert [q.text for q in short] == [q.text for q in qs[:50]]  # question i whatever n is


def _q(qid: str, text: str, options: list[str], correct: int = 0, passage: str | None = None) -> Question:
    return make_question(id=qid, text=text, options=options, correct=correct, source_text=passage)


def test_run_merges_repeats_under_other_ids_and_says_how_many() -> None:
    qs = [
        _q("a", "What is 2 + 2?", ["4", "5"]),
        _q("b", "what is  2 + 2?", ["5", "4"], correct=1),  # same question: case, spaces, order
        _q("c", "What is 2 + 2?", ["4", "5"], passage="another passage"),  # other passage: kept
        _q("d", "What is 3 + 3?", ["6", "7"]),
        _q("e", "What is 3 + 3?", ["6", "7"]),
    ]
    store = QuestionStore.build(qs, binary_seed=0)
    assert store.ids == ["a", "c", "d"]
    assert store.merged == [("b", "a"), ("e", "d")]
    assert store.merged_note is not None and store.merged_note.startswith("2 duplicate question(s)")


def test_repeats_with_different_answers_are_refused() -> None:
    qs = [_q("a", "What is 2 + 2?", ["4", "5"]), _q("b", "What is 2 + 2?", ["4", "5"], correct=1)]
    with pytest.raises(DataError, match="'a' and 'b' have the same text and options but different true"):
        QuestionStore.build(qs, binary_seed=0)


def test_duplicate_questions_one_at_a_time() -> None:
    same = DuplicateQuestions()
    assert same.first(_q("x", "Q?", ["1", "2"])) is None
    assert same.first(_q("y", "q?", ["2", "1"], correct=1)) == "x"
    assert same.first(_q("z", "Q?", ["1", "3"])) is None  # other options: another question
    assert same.merged == [("y", "x")]
