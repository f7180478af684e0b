"""MedQA (Jin et al. 2021), USMLE questions.

Real format (``data_clean/questions/US/*.jsonl`` of the MedQA release; hub
``GBaker/MedQA-USMLE-4-options`` has the same fields): ``question``, ``options`` (object
label -> text), ``answer`` (text), ``answer_idx`` (label), ``meta_info``.
"""

from __future__ import annotations

from pathlib import Path

from seerbench.datasets._common import Collector, Questions, RecordError, hub_records, make_question, req
from seerbench.tables import Record, iter_json_or_jsonl
from seerbench.types import Question


def _parse(rec: Record) -> list[Question]:
    row = rec.data
    options = req(row, "options", dict)
    labels = sorted(options)
    answer_idx = req(row, "answer_idx")
    if answer_idx not in options:
        raise RecordError(f"answer_idx {answer_idx!r} is not one of the option labels {labels}")
    answer = row.get("answer")
    if isinstance(answer, str) and answer.strip() != str(options[answer_idx]).strip():
        raise RecordError(f"answer {answer!r:.60} differs from option {answer_idx}")
    return [
        make_question(
            id=str(row.get("id") or f"medqa-{rec.index}"),
            text=req(row, "question"),
            options=[options[k] for k in labels],
            labels=labels,
            correct=labels.index(answer_idx),
            metadata={"dataset": "medqa", "meta_info": row.get("meta_info")},
        )
    ]


def load_medqa(path: str | Path | None = None, *, split: str = "test", lenient: bool = False) -> Questions:
    """Load MedQA (US, 4 or 5 options) from a local JSONL, or the hub when ``path`` is None."""
    records = (
        iter_json_or_jsonl(path)
        if path is not None
        else hub_records("GBaker/MedQA-USMLE-4-options", split=split)
    )
    return Collector(lenient=lenient, source=str(path or "medqa")).run(records, _parse)
