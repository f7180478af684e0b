"""Judges turn what they were shown into a :class:`~seerbench.types.Verdict`.

A judge never sees a question's hidden ``source_text`` unless the protocol passes
``with_source=True``: the prompt is built from :meth:`Question.judge_view`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

from seerbench.models import ChatMessage, ElicitConfig, GenerateConfig, Model, elicit, get_model
from seerbench.plugins import Registry
from seerbench.prompts import render
from seerbench.render import options_block, source_block, transcript_block
from seerbench.types import Question, Turn, Verdict

J = TypeVar("J", bound=type)

__all__ = ["JUDGES", "Judge", "ModelJudge", "QuestioningJudge", "TrustJudge", "register_judge"]


@runtime_checkable
class Judge(Protocol):
    """Anything that gives a verdict on a question after seeing some turns:
    ``await judge.judge(question, visible, with_source=..., argued=...)`` returns a
    :class:`~seerbench.types.Verdict` with a probability per option (or a failure). ``with_source``
    grants the hidden passage; ``argued`` is the answer the agent was assigned (only trust-style
    judges may use it). Example, a judge that shrinks another judge's probabilities to 1/2::

        class ShrinkJudge:
            def __init__(self, base: Judge, factor: float = 0.5) -> None:
                self.base, self.factor, self.name = base, factor, f"shrink({base.name})"

            async def judge(self, question, visible, *, with_source=False, argued=None):
                v = await self.base.judge(question, visible, with_source=with_source)
                if not v.ok:
                    return v
                k = len(question.shorts)
                probs = {s: self.factor * p + (1 - self.factor) / k for s, p in v.probabilities.items()}
                return v.model_copy(update={"probabilities": probs})
    """

    name: str

    async def judge(
        self,
        question: Question,
        visible: Sequence[Turn],
        *,
        with_source: bool = False,
        argued: str | None = None,
    ) -> Verdict: ...


@runtime_checkable
class QuestioningJudge(Protocol):
    """Capability ``ask questions``: a judge that can put a question to a consultant between turns
    (Consultancy uses it when the judge has it)."""

    async def ask(self, question: Question, visible: Sequence[Turn], *, with_source: bool = False) -> str: ...


class ModelJudge:
    """A model judge: probabilities via the elicitation chain of :mod:`seerbench.models`."""

    def __init__(
        self,
        model: Model | str,
        *,
        elicitation: ElicitConfig | None = None,
        prompts_dir: str | Path | None = None,
        ask_config: GenerateConfig | None = None,
    ) -> None:
        self.model = get_model(model) if isinstance(model, str) else model
        self.name = self.model.spec
        self.elicitation = elicitation or ElicitConfig()
        self.prompts_dir = prompts_dir
        self.ask_config = ask_config or GenerateConfig(max_tokens=60, temperature=0.0)

    def messages(
        self, question: Question, visible: Sequence[Turn], *, with_source: bool = False
    ) -> list[ChatMessage]:
        """Exactly what the judge model is shown (before the elicitation instruction)."""
        q = question.judge_view(with_source=with_source)
        user = render(
            "judge_decide",
            self.prompts_dir,
            source=source_block(q.source_text),
            question=q.text,
            options=options_block(q),
            transcript=transcript_block(visible),
        )
        return [
            ChatMessage(role="system", content=render("judge_system", self.prompts_dir)),
            ChatMessage(role="user", content=user),
        ]

    async def judge(
        self,
        question: Question,
        visible: Sequence[Turn],
        *,
        with_source: bool = False,
        argued: str | None = None,
    ) -> Verdict:
        msgs = self.messages(question, visible, with_source=with_source)
        return await elicit(self.model, msgs, question.shorts, self.elicitation)

    async def ask(self, question: Question, visible: Sequence[Turn], *, with_source: bool = False) -> str:
        """A question for a consultant (consultancy with an interactive judge)."""
        q = question.judge_view(with_source=with_source)
        user = render(
            "judge_ask",
            self.prompts_dir,
            source=source_block(q.source_text),
            question=q.text,
            options=options_block(q),
            transcript=transcript_block(visible),
        )
        out = await self.model.generate(
            [
                ChatMessage(role="system", content=render("judge_system", self.prompts_dir)),
                ChatMessage(role="user", content=user),
            ],
            self.ask_config,
        )
        return out.text.strip()


class TrustJudge:
    """BlindTrust's judge: adopts whatever answer the agent argued for (probability 1)."""

    name = "trust"

    async def judge(
        self,
        question: Question,
        visible: Sequence[Turn],
        *,
        with_source: bool = False,
        argued: str | None = None,
    ) -> Verdict:
        if argued is None:
            return Verdict.failure(raw="", error="TrustJudge needs the argued answer case", method="trust")
        return Verdict(
            probabilities={s: 1.0 if s == argued else 0.0 for s in question.shorts},
            method="trust",
            raw=argued,
        )


#: Judge classes usable by name in configs (``judge_models: [{class: <name>, ...}]``).
JUDGES: Registry[type] = Registry("judge", {"ModelJudge": ModelJudge, "TrustJudge": TrustJudge})


def register_judge(name: str | None = None, *, replace: bool = False) -> Callable[[type[J]], type[J]]:
    """Class decorator: ``judge_models: [{class: <name>, <constructor arguments>}]`` builds it.
    Constructor parameters annotated ``Judge`` (or ``Model``) take a judge config entry (or a model
    spec) in the config and receive the built judge (model)."""
    return JUDGES.register(name, replace=replace)
