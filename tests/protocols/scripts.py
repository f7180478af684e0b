"""Scripted participants for protocol tests: each records exactly the messages it was shown."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from typing import Any

from seerbench.agents import ModelAgent
from seerbench.judges import ModelJudge
from seerbench.models import ChatMessage, ElicitConfig, GenerateConfig, Model, ScriptedBackend
from seerbench.types import AnswerCase, Question

SECRET = "The vault code is 4417 and only the passage says so."

VERBALIZED = re.compile(r"How likely is it that the answer is ([A-Z])\?")
ASSIGNED = re.compile(r'the correct answer is "([A-Z])\)')
ROUND = re.compile(r"round (\d+) of (\d+)")


def question(qid: str = "q1", *, true: str = "A", source: str | None = SECRET) -> Question:
    return Question(
        id=qid,
        text="What is the vault code?",
        answer_cases=[
            AnswerCase(short="A", long="4417", value=1.0 if true == "A" else 0.0),
            AnswerCase(short="B", long="7144", value=1.0 if true == "B" else 0.0),
        ],
        source_text=source,
    )


class Recorder:
    """A scripted model that records every prompt and answers with ``reply(messages, seed)``."""

    def __init__(self, name: str, reply: Callable[[Sequence[ChatMessage], int | None], str]) -> None:
        self.reply = reply
        self.prompts: list[list[ChatMessage]] = []
        self.backend = ScriptedBackend(self._respond)
        self.model = Model(f"scripted:{name}", self.backend, cache=False)

    def _respond(self, messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
        self.prompts.append(list(messages))
        return self.reply(messages, seed)

    @property
    def calls(self) -> int:
        return self.backend.calls

    def users(self) -> list[str]:
        """The last user message of every prompt, in call order."""
        return [[m for m in p if m.role == "user"][-1].content for p in self.prompts]


def judge_reply(
    prob_first: Callable[[str], float] | float = 0.5, question_text: str = "Is that so?"
) -> Callable[..., str]:
    """A judge: answers the verbalized instruction with P(first option), asks ``question_text``
    when asked to question the consultant."""

    def reply(messages: Sequence[ChatMessage], seed: int | None) -> str:
        last = messages[-1].content
        if VERBALIZED.search(last):
            p = prob_first(last) if callable(prob_first) else prob_first
            return f"{p}"
        if "Ask the consultant" in last:
            return question_text
        return "A"

    return reply


def agent_reply(messages: Sequence[ChatMessage], seed: int | None) -> str:
    """An agent: says which case it argues and in which round, e.g. 'A argues in round 2.'"""
    case = ASSIGNED.search(messages[0].content)
    side = case.group(1) if case else "?"
    m = ROUND.search(messages[-1].content)
    r = m.group(1) if m else str(messages[-1].content.count(f"consultant (arguing for {side})") + 1)
    return f"{side} argues in round {r}."


def model_judge(rec: Recorder) -> ModelJudge:
    return ModelJudge(rec.model, elicitation=ElicitConfig(order=("verbalized",)))


def model_agent(rec: Recorder, **kw: Any) -> ModelAgent:
    return ModelAgent(rec.model, **kw)


def run(coro: Any) -> Any:
    return asyncio.run(coro)
