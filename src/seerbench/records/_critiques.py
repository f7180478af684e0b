"""The ``critiques.jsonl`` format: one line per critiqued answer (seed 002, section 3.2).

``seerbench critique`` writes it; the study app (``task: critique``) and the ``critiques`` dataset read
it through :func:`read_critiques`, which checks every line against :class:`CritiquedAnswer` and
names the file and line of anything unusable.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from seerbench.errors import DataError
from seerbench.store import RecordReader, atomic_write_lines

__all__ = [
    "AnswerKind",
    "Critique",
    "CritiquedAnswer",
    "Refinement",
    "dump_answer",
    "read_critiques",
    "write_critiques",
]

AnswerKind = Literal["model", "reference", "misleading"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Critique(_Record):
    """One model-written critique of an answer."""

    id: str = Field(description="Unique within its answer.")
    text: str
    temperature: float = Field(description="Sampling temperature the critique was written at.")
    helpfulness: float = Field(
        ge=0.0, le=1.0, description="P(the critique helps find a flaw), elicited from a model."
    )
    quote: str | None = Field(
        default=None, description="Text of the answer or passage the critique points at."
    )
    quote_verified: bool | None = Field(
        default=None,
        description="Whether the quote occurs verbatim (white space folded); null with no quote.",
    )
    merged: list[str] = Field(
        default_factory=list, description="Near-duplicate critiques folded into this one (their texts)."
    )
    covers_intended: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description=(
            "Misleading answers: P(this critique points out the intended flaw), from a model; else null."
        ),
    )


class Refinement(_Record):
    """Critique-conditional and direct rewrites of one answer, scored against the ground truth."""

    critique_id: str = Field(description="The critique the conditional rewrite was given (the most helpful).")
    conditional: str
    direct: str
    conditional_correct: bool
    direct_correct: bool
    win: float = Field(description="1 conditional right and direct not, 0 the reverse, 1/2 a tie.")


class CritiquedAnswer(_Record):
    """One answer to critique, with its model critiques sorted by helpfulness (highest first)."""

    question_id: str
    question: str
    passage: str | None = None
    answer_id: str
    answer_kind: AnswerKind
    answer: str
    correct: bool | None = Field(default=None, description="Whether the answer is correct, when known.")
    intended_flaw: str | None = Field(default=None, description="The flaw planted in a misleading answer.")
    intended_critique: str | None = Field(
        default=None, description="The critique that names the planted flaw."
    )
    critiques: list[Critique] = Field(default_factory=list)
    answer_temperature: float | None = Field(
        default=None, description="Temperature a model answer was sampled at."
    )
    refinement: Refinement | None = Field(
        default=None,
        description="Critique-conditional vs direct rewrites, scored on ground truth (when known).",
    )
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> CritiquedAnswer:
        ids = [c.id for c in self.critiques]
        if len(set(ids)) != len(ids):
            raise ValueError(f"answer {self.answer_id!r}: critique ids repeat")
        hs = [c.helpfulness for c in self.critiques]
        if any(a < b for a, b in itertools.pairwise(hs)):
            raise ValueError(
                f"answer {self.answer_id!r}: critiques are not sorted by helpfulness (highest first)"
            )
        if self.answer_kind == "misleading" and not (self.intended_flaw and self.intended_critique):
            raise ValueError(
                f"answer {self.answer_id!r}: a misleading answer needs intended_flaw and intended_critique"
            )
        return self


def read_critiques(path: str | Path) -> list[CritiquedAnswer]:
    """Every answer of a ``critiques.jsonl``, read through the record store
    (:class:`seerbench.store.RecordReader`): a malformed line raises :class:`DataError` naming it; a
    torn last line (what a crash leaves) is skipped with a warning; a repeated ``answer_id`` is
    refused."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such critiques file; write one with `seerbench critique CONFIG`")
    return [
        CritiquedAnswer.model_validate(rec)
        for rec in RecordReader(path, "answer_id", check=_check_answer, strict=True)
    ]


def _check_answer(rec: dict[str, Any]) -> dict[str, Any]:
    try:
        CritiquedAnswer.model_validate(rec)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "line"
        raise ValueError(f"{where}: {err['msg']}") from None
    return rec


def dump_answer(answer: CritiquedAnswer) -> str:
    """One line of ``critiques.jsonl`` (no newline)."""
    return json.dumps(answer.model_dump(mode="json"), ensure_ascii=False)


def write_critiques(path: str | Path, answers: Iterable[CritiquedAnswer]) -> Path:
    """Write ``answers`` to ``path`` atomically, one line each."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_lines(path, (dump_answer(a) for a in answers))
