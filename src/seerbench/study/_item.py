"""One judgeable unit of a study (its own module: every item builder makes them)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from seerbench.types import Question, Transcript

__all__ = ["StudyItem"]


@dataclass
class StudyItem:
    """One judgeable unit.

    ``answer_case`` is the option the transcript argues for (items from a results file), ``catch``
    is ``None`` for real items, ``"mismatch"`` for catch trials built as in seed 004 and
    ``"explicit"`` for ready-made ones.
    """

    key: str
    question: Question
    transcript: Transcript | None = None
    answer_case: str | None = None
    catch: str | None = None

    @property
    def correct(self) -> str:
        """The true option's label ('' when a question has no single true option)."""
        t = self.question.true_cases
        return t[0].short if len(t) == 1 else ""

    def to_json(self) -> str:
        return json.dumps(
            {
                "question": self.question.model_dump(mode="json"),
                "transcript": self.transcript.model_dump(mode="json") if self.transcript else None,
            }
        )

    @classmethod
    def from_row(cls, key: str, data: str, answer_case: str | None, catch: str | None) -> StudyItem:
        d = json.loads(data)
        tr = d.get("transcript")
        return cls(
            key=key,
            question=Question.model_validate(d["question"]),
            transcript=Transcript.model_validate(tr) if tr else None,
            answer_case=answer_case,
            catch=catch,
        )
