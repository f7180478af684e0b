"""Consultancy (one agent, the judge may question it), RandomConsultancy and OpenConsultancy."""

from __future__ import annotations

from typing import ClassVar

from seerbench.agents import AgentContext, BeliefAgent
from seerbench.judges import QuestioningJudge
from seerbench.protocols._base import CaseRun, OversightProtocol, QuestionRun, stable_coin
from seerbench.records import AGENT_CHOICE_FAILED
from seerbench.types import Question, Turn, Verdict


class Consultancy(OversightProtocol):
    """One consultant argues for its assigned answer over ``num_turns`` turns; between turns the
    judge asks it a question (when the judge can ask). Asymmetric: one run per answer case."""

    name: ClassVar[str] = "Consultancy"
    takes_turns: ClassVar[bool] = True

    async def run(self, question: Question, answer_case: str) -> CaseRun:
        assert self.agent is not None
        turns: list[Turn] = []
        for r in range(1, self.num_turns + 1):
            ctx = AgentContext("consultancy", r, self.num_turns, speaker="consultant")
            turns.append(await self.argue(self.agent, question, answer_case, turns, ctx))
            if r < self.num_turns and isinstance(self.judge, QuestioningJudge):
                turns.append(
                    Turn(
                        role="judge",
                        speaker="judge",
                        content=await self.judge.ask(question, turns, with_source=self.judge_sees_source),
                    )
                )
        verdict = await self.judge.judge(
            question, turns, with_source=self.judge_sees_source, argued=answer_case
        )
        return CaseRun(answer_case, self.transcript(question, turns), verdict)


class RandomConsultancy(Consultancy):
    """Consultancy where a seeded coin, not the experimenter, picks the consultant's side: the
    weak baseline of the debate literature. Only the chosen case runs, so ASD is undefined; its
    judge accuracy is the number that papers report."""

    name: ClassVar[str] = "RandomConsultancy"

    async def run_question(self, question: Question) -> QuestionRun:
        self.check_question(question)
        chosen = question.shorts[stable_coin(self.seed, "random-consultancy", question.id) % question.k]
        r = await self._run_case(question, chosen)
        return QuestionRun(
            question, self.config_name(), {chosen: r}, chosen_case=chosen, notes={"coin_seed": self.seed}
        )


class OpenConsultancy(Consultancy):
    """The agent chooses which answer to argue for (the one its model believes), then consults.
    Its expected judge score for any temperature is also derivable from Consultancy's ASD (JSE_beta)."""

    name: ClassVar[str] = "OpenConsultancy"
    agent_needs: ClassVar[frozenset[str]] = frozenset({"state its belief"})

    async def run_question(self, question: Question) -> QuestionRun:
        self.check_question(question)
        assert isinstance(self.agent, BeliefAgent)  # agent_needs, checked when the config is read
        chosen, belief = await self.agent.believe(question)
        notes = {"agent_belief": belief.probabilities, "belief_method": belief.method}
        if chosen is None:
            failed = Verdict.failure(raw=belief.raw, error=f"{AGENT_CHOICE_FAILED}{belief.error}")
            case = question.shorts[0]
            return QuestionRun(
                question,
                self.config_name(),
                {case: CaseRun(case, self.transcript(question), failed)},
                chosen_case=None,
                notes=notes,
            )
        r = await self._run_case(question, chosen)
        return QuestionRun(question, self.config_name(), {chosen: r}, chosen_case=chosen, notes=notes)
