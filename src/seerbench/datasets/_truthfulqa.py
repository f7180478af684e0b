"""TruthfulQA multiple choice (Lin et al. 2021), MC1 targets (exactly one true option).

Real formats: hub ``truthfulqa/truthful_qa`` config ``multiple_choice`` rows (``question``,
``mc1_targets: {choices: [...], labels: [1, 0, ...]}``), and the original repository's
``data/mc_task.json`` (a JSON array; ``mc1_targets`` maps option text -> 0/1).
"""

from __future__ import annotations

from pathlib import Path

from seerbench.datasets._common import Collector, Questions, RecordError, hub_records, req, shuffled_question
from seerbench.tables import Record, iter_json_or_jsonl
from seerbench.types import Question


def _parse(rec: Record, seed: int) -> list[Question]:
    row = rec.data
    targets = req(row, "mc1_targets", dict)
    if "choices" in targets:
        choices = list(targets["choices"])
        labels = list(targets.get("labels") or [])
    else:  # mc_task.json: {option text: 0/1}
        choices, labels = list(targets), list(targets.values())
    if len(choices) != len(labels):
        raise RecordError(f"mc1_targets has {len(choices)} choices but {len(labels)} labels")
    true = [i for i, v in enumerate(labels) if v == 1]
    if len(true) != 1:
        raise RecordError(f"mc1_targets should mark exactly one true choice, marks {len(true)}")
    return [
        shuffled_question(
            id=str(row.get("id") or f"truthfulqa-{rec.index}"),
            text=req(row, "question"),
            options=choices,
            correct=true[0],
            seed=seed,
            metadata={"dataset": "truthfulqa"},
        )
    ]


def load_truthfulqa(path: str | Path | None = None, *, seed: int = 0, lenient: bool = False) -> Questions:
    """Load TruthfulQA MC1 from ``mc_task.json``, a JSONL of hub rows, or the hub. The true option
    is listed first in both files, so positions are shuffled per question with ``seed``."""
    records = (
        iter_json_or_jsonl(path)
        if path is not None
        else hub_records("truthfulqa/truthful_qa", config="multiple_choice", split="validation")
    )
    return Collector(lenient=lenient, source=str(path or "truthfulqa")).run(
        records, lambda r: _parse(r, seed)
    )
