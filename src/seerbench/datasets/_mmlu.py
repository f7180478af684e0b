"""MMLU (Hendrycks et al. 2021): four-option questions in 57 subjects.

Real formats: the original headerless CSVs (``data/test/<subject>_test.csv``: question, A, B, C,
D, answer letter) and the hub rows of ``cais/mmlu`` (``question``, ``subject``, ``choices``,
``answer`` as an index 0-3), which a local JSONL file may also hold.
"""

from __future__ import annotations

import re
from pathlib import Path

from seerbench.datasets._common import Collector, Questions, RecordError, hub_records, make_question, req
from seerbench.tables import Record, iter_csv, iter_json_or_jsonl
from seerbench.types import Question


def _subject_of(path: Path) -> str:
    return re.sub(r"_(test|dev|val|validation|train|auxiliary_train)$", "", path.stem)


def _parse_csv(rec: Record, subject: str) -> list[Question]:
    row = rec.data
    if len(row) != 6:
        raise RecordError(f"expected 6 columns (question, A, B, C, D, answer), found {len(row)}")
    answer = row[5].strip().upper()
    if answer not in ("A", "B", "C", "D"):
        raise RecordError(f"answer {row[5]!r} is not one of A, B, C, D")
    return [
        make_question(
            id=f"mmlu-{subject}-{rec.index}",
            text=row[0],
            options=row[1:5],
            correct="ABCD".index(answer),
            metadata={"dataset": "mmlu", "subject": subject},
        )
    ]


def _parse_row(rec: Record, default_subject: str) -> list[Question]:
    row = rec.data
    choices = req(row, "choices", list)
    subject = str(row.get("subject") or default_subject)
    return [
        make_question(
            id=str(row.get("id") or f"mmlu-{subject}-{rec.index}"),
            text=req(row, "question"),
            options=choices,
            correct=req(row, "answer", int),
            metadata={"dataset": "mmlu", "subject": subject},
        )
    ]


def load_mmlu(
    path: str | Path | None = None,
    *,
    subject: str = "all",
    split: str = "test",
    lenient: bool = False,
) -> Questions:
    """Load MMLU from an original per-subject CSV, a JSONL of hub rows, or (``path=None``) the
    ``cais/mmlu`` hub dataset (``subject`` is its config, ``split`` its split)."""
    if path is None:
        coll = Collector(lenient=lenient, source="mmlu")
        return coll.run(
            hub_records("cais/mmlu", config=subject, split=split), lambda r: _parse_row(r, subject)
        )
    p = Path(path)
    coll = Collector(lenient=lenient, source=str(p))
    if p.suffix.lower() == ".csv":
        subj = _subject_of(p)
        return coll.run(iter_csv(p, header=False), lambda r: _parse_csv(r, subj))
    return coll.run(iter_json_or_jsonl(p), lambda r: _parse_row(r, _subject_of(p)))
