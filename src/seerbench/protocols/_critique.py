"""CritiqueJudge (seed 002): the judge sees the question, the answer under review and the top-k
model critiques (by helpfulness), and gives P(correct) / P(flawed).

Run it on the ``critiques`` dataset next to ``NaiveJudge`` (the judge without critiques): both
see the same questions, so ``seerbench stats --baseline NaiveJudge`` gives the paired difference
in accuracy and ASD with its interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from seerbench.errors import ConfigError, DataError
from seerbench.protocols._base import CaseRun, OversightProtocol
from seerbench.types import Question, Quote, Turn

__all__ = ["CritiqueJudge", "critique_turns"]


def critique_turns(question: Question, top_k: int) -> list[Turn]:
    """The top ``top_k`` critiques of a ``critiques``-dataset question as turns for the judge."""
    crits: Any = question.metadata.get("critiques")
    if not isinstance(crits, list):
        raise DataError(
            f"question {question.id!r} carries no critiques; CritiqueJudge runs on the `critiques` dataset"
        )
    turns = []
    for i, c in enumerate(crits[:top_k], 1):
        # the check `seerbench critique` made: verbatim in the answer (which the judge reads) or the passage
        quotes = [Quote(text=c["quote"], verified=c.get("quote_verified"))] if c.get("quote") else []
        turns.append(
            Turn(
                role="note",
                speaker=f"critique {i} (helpfulness {c['helpfulness']:.2f})",
                content=str(c["text"]),
                quotes=quotes,
                metadata={
                    "critique_id": c.get("id"),
                    "helpfulness": c["helpfulness"],
                    "quotes_in": "answer or the passage",
                },
            )
        )
    return turns


class CritiqueJudge(OversightProtocol):
    """The judge with the answer's ``top_k`` most helpful model critiques (keyword ``top_k``,
    default 3). Judge-only and symmetric, like NaiveJudge."""

    name: ClassVar[str] = "CritiqueJudge"
    needs_agent: ClassVar[bool] = False
    keywords: ClassVar[tuple[str, ...]] = ("top_k",)

    def __init__(self, *args: Any, top_k: int = 3, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.check_keywords({"top_k": top_k})
        self.top_k = top_k

    @classmethod
    def check_keywords(cls, keywords: Mapping[str, Any]) -> None:
        top_k = cls.keyword_value(keywords, "top_k")
        if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
            raise ConfigError(f"CritiqueJudge: top_k must be an integer >= 1, got {top_k!r}")

    @property
    def symmetric(self) -> bool:
        return True

    @classmethod
    def name_parts(cls, keywords: Mapping[str, Any]) -> list[str]:
        return [f"k{cls.keyword_value(keywords, 'top_k')}"]

    async def run(self, question: Question, answer_case: str) -> CaseRun:
        turns = critique_turns(question, self.top_k)
        verdict = await self.judge.judge(question, turns, with_source=self.judge_sees_source)
        return CaseRun(answer_case, self.transcript(question, turns), verdict)
