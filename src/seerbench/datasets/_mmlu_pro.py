"""MMLU-Pro (Wang et al. 2024): up to ten options per question.

Real format (hub ``TIGER-Lab/MMLU-Pro``, or a local JSON/JSONL export of its rows):
``question_id``, ``question``, ``options`` (list), ``answer`` (letter), ``answer_index``,
``cot_content``, ``category``, ``src``.
"""

from __future__ import annotations

from pathlib import Path

from seerbench.datasets._common import Collector, Questions, RecordError, hub_records, make_question, req
from seerbench.tables import Record, iter_json_or_jsonl
from seerbench.types import Question


def _parse(rec: Record) -> list[Question]:
    row = rec.data
    options = req(row, "options", list)
    idx = req(row, "answer_index", int)
    letter = row.get("answer")
    if isinstance(letter, str) and letter and ord(letter.upper()) - ord("A") != idx:
        raise RecordError(f"answer {letter!r} disagrees with answer_index {idx}")
    return [
        make_question(
            id=f"mmlupro-{row.get('question_id', rec.index)}",
            text=req(row, "question"),
            options=options,
            correct=idx,
            metadata={
                "dataset": "mmlu_pro",
                "category": row.get("category"),
                "src": row.get("src"),
                "cot_content": row.get("cot_content"),
            },
        )
    ]


def load_mmlu_pro(path: str | Path | None = None, *, split: str = "test", lenient: bool = False) -> Questions:
    """Load MMLU-Pro from a local JSON/JSONL of its rows, or from the hub when ``path`` is None."""
    records = iter_json_or_jsonl(path) if path is not None else hub_records("TIGER-Lab/MMLU-Pro", split=split)
    return Collector(lenient=lenient, source=str(path or "mmlu_pro")).run(records, _parse)
