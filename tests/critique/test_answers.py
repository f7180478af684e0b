"""Misleading answers: the planted flaw is found by an independent check and the intended critique
names it; model-answer temperatures; user-supplied answers."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from seerbench.critique import FLAW_KINDS, answer_correct, plant_flaw, reference_answer
from seerbench.critique._answers import ANSWER_TEMPERATURES, answer_temperature, read_user_answers
from seerbench.datasets import load_dataset
from seerbench.errors import DataError

_EQ = re.compile(r"([\d\s+\-*/x().]+?)=\s*(\d+(?:\.\d+)?)")
_SENT = re.compile(r"(?<=\.)\s+")


def _wrong_equations(text: str) -> list[str]:
    """Worked steps 'expression = value' of the text whose arithmetic fails (evaluated by Python)."""
    bad = []
    for m in (m for sent in _SENT.split(text) for m in _EQ.finditer(sent.split(":")[-1])):
        expr = m.group(1).replace("x", "*").strip()
        if not re.fullmatch(r"[\d\s+\-*/().]+", expr) or not re.search(r"[-+*/]", expr):
            continue  # not an arithmetic step ("35% of 280 = 98")
        if abs(eval(expr) - float(m.group(2))) > 1e-9:  # digits and operators only
            bad.append(m.group(0).strip())
    return bad


def _final(text: str) -> str:
    m = re.search(r"The answer is (.+?)\.$", text)
    assert m, text
    return m.group(1)


def test_changed_number_breaks_the_arithmetic_and_the_critique_names_both_numbers() -> None:
    for q in load_dataset("arithmetic", n=20, seed=3):
        ref = reference_answer(q)
        assert _wrong_equations(ref) == [] and _final(ref) == q.true_case.long
        f = plant_flaw(q, ("number",), seed=1)
        assert f is not None and f.kind == "number"
        assert _final(f.answer) != q.true_case.long  # the conclusion is wrong
        assert _wrong_equations(f.answer), f.answer  # and an independent check sees a false step
        assert f.original == q.true_case.long and f.replacement == _final(f.answer)
        assert f.original in f.critique and f.replacement in f.critique


def test_swapped_entity_states_something_the_passage_does_not_say() -> None:
    for q in load_dataset("reading", n=20, seed=2):
        passage = q.source_text or ""
        ref_sents = re.split(r"(?<=\.)\s+", reference_answer(q))[:-1]
        assert all(s in passage for s in ref_sents)  # the reference is the passage's own facts
        f = plant_flaw(q, ("entity",), seed=0)
        assert f is not None and f.replacement is not None
        bad = [s for s in re.split(r"(?<=\.)\s+", f.answer)[:-1] if s not in passage]
        assert bad, f.answer  # some claim is not in the passage
        assert all(f.replacement in s for s in bad)
        assert f.original in f.critique and f.replacement in f.critique


def test_omission_leaves_out_a_supporting_sentence_and_the_critique_quotes_it() -> None:
    for q in [*load_dataset("reading", n=10, seed=1), *load_dataset("arithmetic", n=10, seed=1)]:
        ref = reference_answer(q)
        f = plant_flaw(q, ("omission",), seed=0)
        assert f is not None
        assert f.original in ref and f.original not in f.answer
        assert len(f.answer) < len(ref) and _final(f.answer) == q.true_case.long
        assert f.original in f.critique


def test_flaw_kinds_are_mixed_and_reproducible() -> None:
    qs = list(load_dataset("arithmetic", n=30, seed=0))
    kinds = Counter(f.kind for q in qs if (f := plant_flaw(q, FLAW_KINDS, seed=0)))
    assert set(kinds) == {"number", "omission"}  # arithmetic answers name no entity
    assert [plant_flaw(q, seed=5) for q in qs] == [plant_flaw(q, seed=5) for q in qs]


def test_no_flaw_applies_gives_none() -> None:
    q = next(q for q in load_dataset("reading", n=20, seed=0) if not re.search(r"\d", reference_answer(q)))
    assert plant_flaw(q, ("number",)) is None  # a reading answer with no number


def test_answer_temperature_is_uniform_on_the_seed_grid() -> None:
    draws = Counter(answer_temperature(f"q{i}") for i in range(11000))
    assert set(draws) == set(ANSWER_TEMPERATURES) and len(ANSWER_TEMPERATURES) == 11
    assert all(abs(c - 1000) < 150 for c in draws.values())  # 1000 expected each, sd ~30


def test_answer_correct() -> None:
    q = next(iter(load_dataset("arithmetic", n=1, seed=0)))  # true 19, wrong 26
    assert answer_correct(q, "So the answer is 19.") is True
    assert answer_correct(q, "The answer is 26") is False
    assert answer_correct(q, "Either 19 or 26.") is None
    assert answer_correct(q, "The answer is 119.") is None
    # the conclusion counts, not a wrong option's value among the steps
    assert answer_correct(q, "First 45 - 26 = 19. The answer is 19.") is True
    assert answer_correct(q, "45 - 19 = 26.\nThe answer is: 26") is False


def test_user_answers(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    rows: list[dict[str, Any]] = [
        {"question_id": "q1", "question": "2+2?", "answer_kind": "reference", "answer": "4", "correct": True},
        {
            "question_id": "q1",
            "question": "2+2?",
            "answer_kind": "misleading",
            "answer": "5",
            "intended_flaw": "5 not 4",
            "intended_critique": "2+2 is 4, not 5.",
        },
    ]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    got = read_user_answers(p)
    assert [a.answer_id for a in got] == ["q1:reference", "q1:misleading"]
    p.write_text(json.dumps({**rows[1], "intended_critique": None}) + "\n")
    with pytest.raises(DataError, match=r"a.jsonl:1: .*misleading answer needs"):
        read_user_answers(p)
    p.write_text(json.dumps({**rows[0], "colour": "red"}) + "\n")
    with pytest.raises(DataError, match=r"a.jsonl:1: unknown keys \['colour'\]"):
        read_user_answers(p)
    p.write_text(json.dumps(rows[0]) + "\n" + json.dumps(rows[0]) + "\n")
    with pytest.raises(DataError, match="appears twice"):
        read_user_answers(p)
