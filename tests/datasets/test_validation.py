"""Malformed input: errors name file, line and problem; lenient mode skips and counts; duplicates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seerbench.datasets import load_dataset, load_generic, read_questions_jsonl, write_questions_jsonl
from seerbench.errors import DataError
from seerbench.tables import iter_csv

GOOD = {"question": "Q?", "options": ["a", "b"], "answer": 0}


def _write(p: Path, lines: list[str]) -> Path:
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.fixture
def bad_file(tmp_path: Path) -> Path:
    return _write(
        tmp_path / "bad.jsonl",
        [
            json.dumps({**GOOD, "id": "ok1"}),
            '{"question": "broken", ',
            json.dumps({"id": "x", "options": ["a", "b"], "answer": 0}),
            "",
            json.dumps({**GOOD, "id": "ok2", "answer": 7}),
            json.dumps({**GOOD, "id": "ok3"}),
        ],
    )


def test_strict_mode_names_file_line_and_problem(bad_file: Path) -> None:
    with pytest.raises(DataError, match=r"^bad\.jsonl:2: invalid JSON"):
        load_generic(bad_file)


def test_lenient_mode_skips_and_counts(bad_file: Path) -> None:
    qs = load_generic(bad_file, lenient=True)
    assert [q.id for q in qs] == ["ok1", "ok3"]
    assert qs.skipped == 3
    assert qs.problems[0].startswith("bad.jsonl:2: invalid JSON")
    assert qs.problems[1] == "bad.jsonl:3: missing field 'question'"
    # line 4 is blank and ignored, so the out-of-range answer is on line 5
    assert qs.problems[2] == "bad.jsonl:5: field 'answer': index 7 out of range for 2 options"


def test_wrong_type_is_named(tmp_path: Path) -> None:
    p = _write(tmp_path / "t.jsonl", [json.dumps({"question": 3, "options": ["a", "b"], "answer": 0})])
    with pytest.raises(DataError, match=r"t\.jsonl:1: field 'question' should be str, found int"):
        load_generic(p)


def test_duplicate_ids_detected_with_both_lines(tmp_path: Path) -> None:
    p = _write(tmp_path / "dup.jsonl", [json.dumps({**GOOD, "id": "same"})] * 2)
    with pytest.raises(
        DataError, match=r"dup\.jsonl:2: duplicate question id 'same' \(first seen at dup\.jsonl:1\)"
    ):
        load_generic(p)
    qs = load_generic(p, lenient=True)
    assert len(qs) == 1 and qs.skipped == 1


def test_csv_wrong_column_count_names_physical_line(tmp_path: Path) -> None:
    p = tmp_path / "c.csv"
    p.write_text('id,question,option_A,option_B,answer\nc1,"multi\nline",a,b,A\nc2,too,few\n')
    recs = list(iter_csv(p))
    assert recs[0].where == "c.csv:2" and recs[0].data["question"] == "multi\nline"
    assert recs[1].where == "c.csv:4" and recs[1].error == "expected 5 columns, found 3"
    with pytest.raises(DataError, match=r"c\.csv:4: expected 5 columns, found 3"):
        load_generic(p)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such file"):
        load_generic(tmp_path / "absent.jsonl")


def test_native_round_trip_and_errors(tmp_path: Path, fx: Path) -> None:
    qs = load_dataset("reading", n=5, seed=2, k=3)
    out = tmp_path / "sub" / "q.jsonl"
    assert write_questions_jsonl(qs, out) == 5
    back = read_questions_jsonl(out)
    assert list(back) == list(qs)
    assert list(load_dataset(str(out))) == list(qs)  # a path is accepted as a dataset
    lines = out.read_text().splitlines()
    bad = json.loads(lines[1])
    bad["answer_cases"] = bad["answer_cases"][:1]
    _write(out, [lines[0], json.dumps(bad), "{not json", lines[0]])
    with pytest.raises(DataError, match=r"q\.jsonl:2: answer_cases: List should have at least 2 items"):
        read_questions_jsonl(out)
    lenient = read_questions_jsonl(out, lenient=True)
    assert len(lenient) == 1 and lenient.skipped == 3
    assert "q.jsonl:3: invalid JSON" in lenient.problems[1]
    assert "duplicate question id" in lenient.problems[2]
