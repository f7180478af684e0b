"""GPQA (Rein et al. 2023): graduate-level four-option science questions.

Real format: ``gpqa_main.csv`` / ``gpqa_diamond.csv`` / ``gpqa_extended.csv`` with columns
``Question``, ``Correct Answer``, ``Incorrect Answer 1..3``, ``Explanation``, ``Record ID``,
``Subdomain``, ``High-level domain`` (and many annotation columns, kept in metadata). The hub copy
``Idavidrein/gpqa`` (gated) has the same columns.
"""

from __future__ import annotations

from pathlib import Path

from seerbench.datasets._common import Collector, Questions, hub_records, req, shuffled_question
from seerbench.tables import Record, iter_csv
from seerbench.types import Question

_MAIN = {"Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"}


def _parse(rec: Record, seed: int) -> list[Question]:
    row = rec.data
    options = [req(row, "Correct Answer").strip()] + [
        req(row, f"Incorrect Answer {i}").strip() for i in (1, 2, 3)
    ]
    qid = str(row.get("Record ID") or f"gpqa-{rec.index}")
    return [
        shuffled_question(
            id=qid,
            text=req(row, "Question").strip(),
            options=options,
            correct=0,
            seed=seed,
            metadata={
                "dataset": "gpqa",
                "subdomain": row.get("Subdomain"),
                "domain": row.get("High-level domain"),
                "explanation": row.get("Explanation"),
                **{k: v for k, v in row.items() if k not in _MAIN and v not in (None, "")},
            },
        )
    ]


def load_gpqa(
    path: str | Path | None = None,
    *,
    config: str = "gpqa_main",
    seed: int = 0,
    lenient: bool = False,
) -> Questions:
    """Load GPQA from a local CSV, or from the hub (``config``: gpqa_main, gpqa_diamond,
    gpqa_extended) when ``path`` is None. The file lists the correct answer first, so option
    positions are shuffled per question with ``seed``."""
    records = (
        iter_csv(path) if path is not None else hub_records("Idavidrein/gpqa", config=config, split="train")
    )
    return Collector(lenient=lenient, source=str(path or "gpqa")).run(records, lambda r: _parse(r, seed))
