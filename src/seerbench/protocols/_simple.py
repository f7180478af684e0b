"""NaiveJudge (the judge alone) and BlindTrust (the judge adopts the agent's answer)."""

from __future__ import annotations

from typing import ClassVar

from seerbench.judges import TrustJudge
from seerbench.protocols._base import CaseRun, OversightProtocol
from seerbench.types import Question, Turn


class NaiveJudge(OversightProtocol):
    """The judge answers alone; nothing the agent does matters. The baseline protocol: its ASD is
    the judge's own log-odds edge, log q_T - log q_F."""

    name: ClassVar[str] = "NaiveJudge"
    needs_agent: ClassVar[bool] = False

    @property
    def symmetric(self) -> bool:
        return True

    async def run(self, question: Question, answer_case: str) -> CaseRun:
        verdict = await self.judge.judge(question, [], with_source=self.judge_sees_source)
        return CaseRun(answer_case, self.transcript(question), verdict)


class BlindTrust(OversightProtocol):
    """The judge adopts whatever answer the agent argues for, so honesty earns nothing: ASD = 0.
    No model is called; the configured judge is replaced by :class:`TrustJudge`."""

    name: ClassVar[str] = "BlindTrust"
    needs_agent: ClassVar[bool] = False
    fixed_judge: ClassVar[str | None] = "trust"

    async def run(self, question: Question, answer_case: str) -> CaseRun:
        turn = Turn(
            role="note",
            speaker="protocol",
            content=f"The judge adopts the agent's answer {answer_case}.",
            answer_case=answer_case,
        )
        verdict = await TrustJudge().judge(question, [turn], argued=answer_case)
        return CaseRun(answer_case, self.transcript(question, [turn]), verdict)
