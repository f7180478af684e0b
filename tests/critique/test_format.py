"""The critiques.jsonl format: round trip and refusals naming the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seerbench.critique import Critique, CritiquedAnswer, read_critiques, write_critiques
from seerbench.errors import DataError


def _answer(**kw: object) -> CritiquedAnswer:
    base: dict[str, object] = {
        "question_id": "q1",
        "question": "What is 2+3?",
        "passage": None,
        "answer_id": "q1:misleading",
        "answer_kind": "misleading",
        "answer": "2+3 = 6",
        "correct": False,
        "intended_flaw": "changed number: 5 -> 6",
        "intended_critique": "The sum is 5, not 6.",
        "critiques": [
            Critique(id="c0", text="Wrong sum", temperature=0.0, helpfulness=0.9),
            Critique(
                id="c1", text="Too terse", temperature=1.0, helpfulness=0.2, quote="6", quote_verified=True
            ),
        ],
    }
    base.update(kw)
    return CritiquedAnswer.model_validate(base)


def test_round_trip(tmp_path: Path) -> None:
    a = _answer()
    p = write_critiques(tmp_path / "critiques.jsonl", [a])
    (back,) = read_critiques(p)
    assert back == a
    line = json.loads(p.read_text())
    for key in (
        "question_id",
        "question",
        "passage",
        "answer_id",
        "answer_kind",
        "answer",
        "correct",
        "intended_flaw",
        "intended_critique",
        "critiques",
    ):
        assert key in line
    assert set(line["critiques"][0]) >= {
        "id",
        "text",
        "temperature",
        "helpfulness",
        "quote",
        "quote_verified",
    }


def test_refuses_unsorted_and_bad_lines(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    good = json.loads(_answer().model_dump_json())
    bad = dict(good, critiques=list(reversed(good["critiques"])))
    p.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(DataError, match=r"c.jsonl:2: .*not sorted by helpfulness"):
        read_critiques(p)
    p.write_text("{not json\n")
    with pytest.raises(DataError, match=r"c.jsonl:1: not JSON"):
        read_critiques(p)
    p.write_text(json.dumps(dict(good, answer_kind="other")) + "\n")
    with pytest.raises(DataError, match=r"c.jsonl:1: answer_kind"):
        read_critiques(p)
    p.write_text(json.dumps(dict(good, intended_critique=None)) + "\n")
    with pytest.raises(DataError, match=r"misleading answer needs intended_flaw"):
        read_critiques(p)
    with pytest.raises(DataError, match="no such critiques file"):
        read_critiques(tmp_path / "missing.jsonl")
