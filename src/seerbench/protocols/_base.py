"""The protocol contract. A protocol never scores: it produces a transcript per answer case and
asks the judge for a verdict."""

from __future__ import annotations

import asyncio
import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from seerbench.agents import Agent, AgentContext
from seerbench.errors import ConfigError, DataError
from seerbench.judges import Judge
from seerbench.types import Question, Transcript, Turn, Verdict


@dataclass
class CaseRun:
    """One run of a protocol with the agent assigned ``answer_case``."""

    answer_case: str
    transcript: Transcript
    verdict: Verdict


@dataclass
class QuestionRun:
    """Every run of a protocol on one question. ``cases`` is keyed by the answer case argued for;
    a symmetric protocol ran once and both keys hold the same run. Random and open consultancy run
    one case only, the ``chosen_case``."""

    question: Question
    protocol: str
    cases: dict[str, CaseRun]
    symmetric: bool = False
    chosen_case: str | None = None
    notes: dict[str, Any] = field(default_factory=dict)


def stable_coin(seed: int, *parts: str) -> int:
    """A reproducible pseudo-random integer from a seed and strings (e.g. a question id)."""
    h = hashlib.sha256("\x1f".join([str(seed), *parts]).encode()).digest()
    return int.from_bytes(h[:8], "big")


def swap_options(question: Question) -> tuple[Question, dict[str, str]]:
    """The question with the option contents in reverse order under the same labels, and the map
    from each original label to its new label (for position-bias control)."""
    shorts = question.shorts
    rev = list(reversed(question.answer_cases))
    swapped = [a.model_copy(update={"short": s}) for a, s in zip(rev, shorts, strict=True)]
    to_new = {a.short: s for a, s in zip(rev, shorts, strict=True)}
    return question.model_copy(update={"answer_cases": swapped}), to_new


def average_verdicts(v1: Verdict, v2: Verdict, to_new: dict[str, str]) -> Verdict:
    """Average the original-order verdict with the swapped-order one mapped back to original labels."""
    if not v1.ok or not v2.ok:
        bad = v1 if not v1.ok else v2
        return bad.model_copy(update={"metadata": {**bad.metadata, "both_orders": True}})
    probs = {x: 0.5 * (v1.prob(x) + v2.prob(to_new[x])) for x in to_new}
    return Verdict(
        probabilities=probs,
        method=v1.method,
        raw=v1.raw,
        n_samples=v1.n_samples + v2.n_samples,
        metadata={"both_orders": True, "original": v1.probabilities, "swapped": {x: v2.prob(to_new[x]) for x in to_new},
                  "cached": bool(v1.metadata.get("cached") and v2.metadata.get("cached"))},
    )


class Protocol(ABC):
    """Base of all protocols.

    Subclasses implement :meth:`run` for one answer case; :meth:`run_question` runs every case (or
    one, for symmetric protocols) and handles running both option orders.
    """

    name: ClassVar[str]
    #: whether ``num_turns`` means something for this protocol
    takes_turns: ClassVar[bool] = False
    needs_agent: ClassVar[bool] = True

    def __init__(
        self,
        judge: Judge,
        agent: Agent | None = None,
        adversary: Agent | None = None,
        *,
        num_turns: int = 1,
        both_orders: bool = False,
        seed: int = 0,
        judge_sees_source: bool = False,
    ) -> None:
        if self.needs_agent and agent is None:
            raise ConfigError(f"{self.name} needs an agent")
        if num_turns < 1:
            raise ConfigError(f"num_turns must be >= 1, got {num_turns}")
        self.judge = judge
        self.agent = agent
        self.adversary = adversary if adversary is not None else agent
        self.num_turns = num_turns if self.takes_turns else 1
        self.both_orders = both_orders
        self.seed = seed
        self.judge_sees_source = judge_sees_source

    @property
    def symmetric(self) -> bool:
        """True when the judge sees the same transcript whichever case the agent argues, so one
        run serves both answer cases."""
        return False

    def config_name(self) -> str:
        """Directory name of this protocol configuration, e.g. ``Consultancy_t2``."""
        parts = [self.name]
        if self.takes_turns:
            parts.append(f"t{self.num_turns}")
        parts.extend(self._name_parts())
        if self.judge_sees_source:
            parts.append("src")
        if self.both_orders:
            parts.append("swap")
        return "_".join(parts)

    def _name_parts(self) -> list[str]:
        return []

    @abstractmethod
    async def run(self, question: Question, answer_case: str) -> CaseRun:
        """Run the protocol with the agent assigned ``answer_case``."""

    def _transcript(self, question: Question, turns: Sequence[Turn] = ()) -> Transcript:
        return Transcript(question_id=question.id, protocol=self.config_name(), turns=list(turns))

    async def _run_case(self, question: Question, answer_case: str) -> CaseRun:
        first = await self.run(question, answer_case)
        if not self.both_orders:
            return first
        swapped, to_new = swap_options(question)
        second = await self.run(swapped, to_new[answer_case])
        verdict = average_verdicts(first.verdict, second.verdict, to_new)
        verdict.metadata["swapped_transcript"] = second.transcript.model_dump(mode="json")
        return CaseRun(answer_case, first.transcript, verdict)

    def check_question(self, question: Question) -> None:
        if not question.is_binary:
            raise DataError(
                f"question {question.id!r} has {question.k} options and {len(question.true_cases)} true ones; "
                f"{self.name} needs two options with exactly one true (use a binary view of the dataset)"
            )

    async def run_question(self, question: Question) -> QuestionRun:
        self.check_question(question)
        if self.symmetric:
            r = await self._run_case(question, question.true_case.short)
            return QuestionRun(question, self.config_name(), {a: r for a in question.shorts}, symmetric=True)
        runs = await asyncio.gather(*(self._run_case(question, a) for a in question.shorts))
        return QuestionRun(question, self.config_name(), {r.answer_case: r for r in runs})

    async def _argue(self, agent: Agent, question: Question, case: str, visible: Sequence[Turn], ctx: AgentContext, role: str = "agent") -> Turn:
        """Call an agent and stamp the turn with the protocol's speaker name and role."""
        t = await agent(question, case, list(visible), ctx)
        return t.model_copy(update={"speaker": ctx.speaker, "role": role, "answer_case": case})
