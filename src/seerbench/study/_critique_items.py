"""Items of critique studies (seed 002): answers to critique, and judgments to validate.

- task ``critique``: one item per answer of a ``critiques.jsonl`` (written by ``seerbench
  critique``, read by :func:`seerbench.critique.read_critiques`). The answer with its question,
  passage, kind, intended flaw and model critiques is kept in the item's
  ``question.metadata["critique"]``. The item's question id is the answer's *passage* (the passage
  text's hash, or the question id when there is none), so the study's rule that a rater never
  sees a question twice means a rater never sees the same passage twice (seed 002, section 3.2).
- task ``validation``: one item per critique task of a critique study's export that holds at
  least one critique; the rater marks each critique valid or invalid and, for misleading answers,
  whether it covers the intended flaw (seed 002, section 3.3.1).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from seerbench.errors import DataError
from seerbench.study._export import read_export
from seerbench.study._item import StudyItem
from seerbench.types import AnswerCase, Question

__all__ = ["answer_of", "critique_items", "passage_group", "validation_items"]


def passage_group(question_id: str, passage: str | None) -> str:
    """The id that stands for what a rater reads: the passage (hashed, white space folded) or,
    with no passage, the question."""
    text = " ".join((passage or "").split())
    if not text:
        return str(question_id)
    return "passage:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _answer_dict(ans: Any) -> dict[str, Any]:
    data = ans.model_dump(mode="json")
    return dict(data)


def _item(ans: dict[str, Any], key: str, group: str, extra: dict[str, Any] | None = None) -> StudyItem:
    correct = ans.get("correct")
    flawed_value = 0.0 if correct is None else float(not correct)
    q = Question(
        id=group,
        text=str(ans["question"]),
        source_text=ans.get("passage") or None,
        # the answer is the "correct" option when it is right, the "flawed" one otherwise
        answer_cases=[
            AnswerCase(
                short="correct",
                long=str(ans["answer"]),
                value=0.0 if correct is None else float(bool(correct)),
            ),
            AnswerCase(short="flawed", long=str(ans["answer"]), value=flawed_value),
        ],
        metadata={"critique": ans, **(extra or {})},
    )
    return StudyItem(key, q)


def answer_of(item: StudyItem) -> dict[str, Any]:
    """The critiqued answer an item of a critique or validation study is about."""
    ans = item.question.metadata.get("critique")
    if not isinstance(ans, dict):
        raise DataError(f"item {item.key!r} holds no critiqued answer")
    return ans


def _read_answers(path: Path) -> list[dict[str, Any]]:
    from seerbench.critique import read_critiques

    answers = [_answer_dict(a) for a in read_critiques(path)]
    if not answers:
        raise DataError(f"{path}: no answers to critique")
    return answers


def critique_items(path: Path) -> list[StudyItem]:
    """One item per answer of ``critiques.jsonl`` (keyed by ``answer_id``)."""
    items, seen = [], set()
    for ans in _read_answers(path):
        key = str(ans["answer_id"])
        if key in seen:
            raise DataError(f"{path}: answer_id {key!r} appears twice")
        seen.add(key)
        items.append(_item(ans, key, passage_group(str(ans["question_id"]), ans.get("passage"))))
    return items


def validation_items(judgments: Path, critiques: Path) -> list[StudyItem]:
    """One item per critique task in ``judgments`` (a critique study's ``.jsonl`` export: one row
    per written critique) that holds critiques; its answer comes from ``critiques``."""

    answers = {str(a["answer_id"]): a for a in _read_answers(critiques)}
    rows = read_export(judgments)
    tasks: dict[str, dict[str, Any]] = {}
    for n, row in enumerate(rows, 1):
        if row.get("task") != "critique":
            raise DataError(f"{judgments}:{n}: not a critique study's export (task {row.get('task')!r})")
        aid = str(row.get("answer_id"))
        if aid not in answers:
            raise DataError(
                f"{judgments}:{n}: answer {aid!r} is not in {critiques}; name the critiques.jsonl the "
                "critique study was created from"
            )
        t = tasks.setdefault(
            str(row["judgment_id"]),
            {
                "judgment_id": row["judgment_id"],
                "answer_id": aid,
                "condition": row.get("condition"),
                "critiques": [],
            },
        )
        if row.get("critique_id") is not None:
            t["critiques"].append(
                {
                    k: row.get(k)
                    for k in ("critique_id", "critique_text", "severity", "category", "used", "edited")
                }
            )
    items = [
        _item(answers[t["answer_id"]], f"val:{jid}", jid, {"judgment": t})
        for jid, t in tasks.items()
        if t["critiques"]
    ]
    if not items:
        raise DataError(f"{judgments}: no critique task holds a critique; nothing to validate")
    return items
