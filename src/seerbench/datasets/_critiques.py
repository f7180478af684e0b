"""The ``critiques`` dataset: the answers of a ``critiques.jsonl`` as two-option questions for
model judges ("is this answer correct or flawed?"), with their critiques, sorted by helpfulness,
in ``metadata["critiques"]`` for the ``CritiqueJudge`` protocol.

Option A is "correct", B "flawed"; the true one is the answer's ``correct`` field. An answer whose
correctness is not known (``correct: null``) cannot be scored: it is refused, naming it, unless
``unknown: skip`` says to leave such answers out.
"""

from __future__ import annotations

from typing import Literal

from seerbench.datasets._common import Questions
from seerbench.datasets._registry import register_dataset
from seerbench.errors import ConfigError, DataError
from seerbench.records import read_critiques
from seerbench.types import AnswerCase, Question

__all__ = ["critique_questions"]


def judge_text(question: str, answer: str) -> str:
    return (
        f"{question.strip()}\n\nAnswer under review: {answer.strip()}\n"
        "\nIs the answer under review correct, or is it flawed?"
    )


@register_dataset(
    "critiques",
    kind="format",
    description=(
        "answers of a critiques.jsonl (seerbench critique): "
        "is each correct or flawed? critiques for CritiqueJudge"
    ),
)
def critique_questions(path: str, unknown: Literal["refuse", "skip"] = "refuse") -> Questions:
    if unknown not in ("refuse", "skip"):
        raise ConfigError(f"dataset critiques: unknown must be refuse or skip, not {unknown!r}")
    out: list[Question] = []
    problems: list[str] = []
    for a in read_critiques(path):
        if a.correct is None:
            if unknown == "skip":  # left out, and counted: `datasets show` reports it
                problems.append(f"{path}: answer {a.answer_id!r} has correct: null (left out: unknown: skip)")
                continue
            raise DataError(
                f"{path}: answer {a.answer_id!r} has correct: null, so a judge's verdict on it cannot be "
                "scored; give `unknown: skip` in the dataset options to leave such answers out"
            )
        out.append(
            Question(
                id=a.answer_id,
                text=judge_text(a.question, a.answer),
                source_text=a.passage,
                answer_cases=[
                    AnswerCase(short="A", long="The answer is correct.", value=float(a.correct)),
                    AnswerCase(short="B", long="The answer is flawed.", value=float(not a.correct)),
                ],
                metadata={
                    "question_id": a.question_id,
                    "answer_kind": a.answer_kind,
                    "critiques": [c.model_dump(mode="json") for c in a.critiques],
                },
            )
        )
    if not out:
        raise DataError(f"{path}: no answer with a known correctness to judge")
    return Questions(out, skipped=len(problems), problems=problems)
