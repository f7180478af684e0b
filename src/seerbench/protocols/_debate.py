"""Debates: simultaneous and sequential over ``num_turns`` rounds, and single-turn debate with
evidence quotes (seed 004)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from seerbench.agents import AgentContext
from seerbench.conditions import EVIDENCE_CONDITIONS, JUDGING_CONDITIONS
from seerbench.errors import ConfigError
from seerbench.protocols._base import CaseRun, OversightProtocol
from seerbench.types import Question, Turn


def debater(short: str) -> str:
    """Debaters are named by the option they defend, so a transcript does not depend on which of
    them is "the agent" under test."""
    return f"debater_{short}"


class SimultaneousDebate(OversightProtocol):
    """Each round both debaters see only the previous rounds and answer at once; their turns are
    appended in option order. With identical debaters the transcript is the same whichever side the
    agent takes, so one run serves both answer cases."""

    name: ClassVar[str] = "SimultaneousDebate"
    cross_play: ClassVar[bool] = True
    takes_turns: ClassVar[bool] = True

    @property
    def symmetric(self) -> bool:
        return self.adversary is self.agent

    async def run(self, question: Question, answer_case: str) -> CaseRun:
        assert self.agent is not None and self.adversary is not None
        other = question.other(answer_case).short
        turns: list[Turn] = []
        for r in range(1, self.num_turns + 1):
            visible = list(turns)
            mine, theirs = await asyncio.gather(
                self.argue(
                    self.agent,
                    question,
                    answer_case,
                    visible,
                    AgentContext("debate", r, self.num_turns, debater(answer_case)),
                ),
                self.argue(
                    self.adversary,
                    question,
                    other,
                    visible,
                    AgentContext("debate", r, self.num_turns, debater(other)),
                    role="adversary",
                ),
            )
            pair = {answer_case: mine, other: theirs}
            turns.extend(pair[s] for s in question.shorts)
        verdict = await self.judge.judge(
            question, turns, with_source=self.judge_sees_source, argued=answer_case
        )
        return CaseRun(answer_case, self.transcript(question, turns), verdict)


class SequentialDebate(OversightProtocol):
    """Each round the agent speaks first and the adversary answers having seen it (the seed's
    loop). The order makes it asymmetric: one run per answer case."""

    name: ClassVar[str] = "SequentialDebate"
    cross_play: ClassVar[bool] = True
    takes_turns: ClassVar[bool] = True

    async def run(self, question: Question, answer_case: str) -> CaseRun:
        assert self.agent is not None and self.adversary is not None
        other = question.other(answer_case).short
        turns: list[Turn] = []
        for r in range(1, self.num_turns + 1):
            turns.append(
                await self.argue(
                    self.agent,
                    question,
                    answer_case,
                    turns,
                    AgentContext("debate", r, self.num_turns, debater(answer_case)),
                )
            )
            turns.append(
                await self.argue(
                    self.adversary,
                    question,
                    other,
                    turns,
                    AgentContext("debate", r, self.num_turns, debater(other)),
                    role="adversary",
                )
            )
        verdict = await self.judge.judge(
            question, turns, with_source=self.judge_sees_source, argued=answer_case
        )
        return CaseRun(answer_case, self.transcript(question, turns), verdict)


Condition = Literal["S", "SA", "PS", "PSA"]
CONDITIONS: tuple[str, ...] = (
    EVIDENCE_CONDITIONS  # the judging conditions that show snippets (seerbench.conditions)
)


class EvidenceDebate(OversightProtocol):
    """Single-turn debate with evidence (seed 004): each side gives an argument (<= 500 chars) and
    1-3 quotes (<= 250 chars) from the hidden passage, checked verbatim and marked verified or not.

    ``condition`` sets what the judge sees: S = snippets, SA = snippets + arguments, and with a P
    in front also the passage (PS, PSA)."""

    name: ClassVar[str] = "EvidenceDebate"
    cross_play: ClassVar[bool] = True
    keywords: ClassVar[tuple[str, ...]] = ("condition",)

    def __init__(self, *args: object, condition: str = "SA", **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.check_keywords({**kw, "condition": condition})
        self.condition = condition
        self.judge_sees_source = JUDGING_CONDITIONS[condition].passage

    @classmethod
    def check_keywords(cls, keywords: Mapping[str, Any]) -> None:
        condition = cls.keyword_value(keywords, "condition")
        if condition not in CONDITIONS:
            raise ConfigError(f"EvidenceDebate condition {condition!r} is not one of {list(CONDITIONS)}")
        if keywords.get("judge_sees_source") and not JUDGING_CONDITIONS[condition].passage:
            raise ConfigError(
                f"EvidenceDebate: judge_sees_source: true contradicts condition {condition} (no passage); "
                f"the condition decides what the judge sees: use condition P{condition} to show the passage"
            )

    @classmethod
    def cell_name(cls, keywords: Mapping[str, Any]) -> str:
        """``EvidenceDebate_<condition>[_swap]``: the condition says whether the judge sees the passage."""
        parts = [cls.name, str(cls.keyword_value(keywords, "condition"))]
        if keywords.get("both_orders"):
            parts.append("swap")
        return "_".join(parts)

    @property
    def symmetric(self) -> bool:
        return self.adversary is self.agent

    async def run(self, question: Question, answer_case: str) -> CaseRun:
        assert self.agent is not None and self.adversary is not None
        other = question.other(answer_case).short
        mine, theirs = await asyncio.gather(
            self.argue(
                self.agent, question, answer_case, [], AgentContext("evidence", 1, 1, debater(answer_case))
            ),
            self.argue(
                self.adversary,
                question,
                other,
                [],
                AgentContext("evidence", 1, 1, debater(other)),
                role="adversary",
            ),
        )
        pair = {answer_case: mine, other: theirs}
        turns = [pair[s] for s in question.shorts]
        shown = (
            turns
            if JUDGING_CONDITIONS[self.condition].arguments
            else [t.model_copy(update={"content": "(argument hidden)"}) for t in turns]
        )
        verdict = await self.judge.judge(
            question, shown, with_source=self.judge_sees_source, argued=answer_case
        )
        return CaseRun(answer_case, self.transcript(question, turns), verdict)
