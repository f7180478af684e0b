"""Agents argue for an assigned answer case: ``await agent(question, answer_case, visible, context)``.

An agent *simulates* an AI with a given alignment: told to argue for the true or the false option,
it argues for it. Agents see the question's hidden ``source_text`` (that is the information gap).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, TypeVar, runtime_checkable

from seerbench.judges import Judge, QuestioningJudge
from seerbench.models import ChatMessage, GenerateConfig, Model, elicit, get_model
from seerbench.plugins import Registry
from seerbench.prompts import render
from seerbench.quotes import check_quotes  # the one quote check; re-exported here
from seerbench.render import options_block, source_block, transcript_block
from seerbench.tools import Tool, get_tools
from seerbench.types import Question, Turn, Verdict

A = TypeVar("A", bound=type)

__all__ = [
    "AGENTS",
    "CAPABILITIES",
    "Agent",
    "AgentContext",
    "BeliefAgent",
    "BestOfNAgent",
    "ModelAgent",
    "capabilities",
    "check_quotes",
    "register_agent",
]

Setting = Literal["consultancy", "debate", "evidence"]

MAX_ARGUMENT_CHARS = 500  # seed 004
MAX_QUOTE_CHARS = 250
MAX_QUOTES = 3


@dataclass(frozen=True)
class AgentContext:
    """What the protocol tells the agent about the situation it argues in."""

    setting: Setting = "consultancy"
    round: int = 1
    num_rounds: int = 1
    speaker: str = "agent"


@runtime_checkable
class Agent(Protocol):
    """Anything that argues for an assigned answer: ``await agent(question, answer_case, visible,
    context)`` returns one :class:`~seerbench.types.Turn`. ``visible`` holds the turns the agent
    may see; ``context`` says the setting, round and speaker name. Example::

        class Stubborn:
            name = "stubborn"

            async def __call__(self, question, answer_case, visible, context=None):
                return Turn(
                    role="agent", speaker="stubborn", content=f"It is {answer_case}.", answer_case=answer_case
                )
    """

    name: str

    async def __call__(
        self,
        question: Question,
        answer_case: str,
        visible: Sequence[Turn],
        context: AgentContext | None = None,
    ) -> Turn: ...


@runtime_checkable
class BeliefAgent(Protocol):
    """Capability ``state its belief``: an agent that can say which answer it believes is correct
    (OpenConsultancy lets it argue for that one). Returns the option (None when it could not be
    elicited) and the verdict it came from."""

    async def believe(self, question: Question) -> tuple[str | None, Verdict]: ...


#: Capability name -> the typing.Protocol an object must satisfy to have it.
CAPABILITIES: dict[str, type] = {"state its belief": BeliefAgent, "ask questions": QuestioningJudge}


def capabilities(obj: object) -> set[str]:
    """The capabilities ``obj`` (an agent or a judge) declares by having the methods."""
    return {name for name, proto in CAPABILITIES.items() if isinstance(obj, proto)}


_TOOL_CALL = re.compile(r"\b([A-Z]+)\(([^()]*(?:\([^()]*\)[^()]*)*)\)")


def parse_evidence(text: str) -> tuple[str, list[str], bool]:
    """Split an evidence reply into (argument, quotes, truncated) per the ARGUMENT/QUOTE format."""
    arg_lines: list[str] = []
    quotes: list[str] = []
    for line in text.splitlines():
        s = line.strip()
        m = re.match(r"(?i)^quote\s*\d*\s*:\s*(.*)$", s)
        if m:
            q = m.group(1).strip().strip('"').strip("“”").strip()
            if q:
                quotes.append(q)
            continue
        m = re.match(r"(?i)^argument\s*:\s*(.*)$", s)
        arg_lines.append(m.group(1) if m else s)
    argument = " ".join(x for x in arg_lines if x).strip()
    truncated = (
        len(argument) > MAX_ARGUMENT_CHARS
        or len(quotes) > MAX_QUOTES
        or any(len(q) > MAX_QUOTE_CHARS for q in quotes)
    )
    return argument[:MAX_ARGUMENT_CHARS], [q[:MAX_QUOTE_CHARS] for q in quotes[:MAX_QUOTES]], truncated


class ModelAgent:
    """An LLM told to argue for its assigned answer, optionally with tools (e.g. a calculator)."""

    def __init__(
        self,
        model: Model | str,
        *,
        tools: Sequence[str] | Sequence[Tool] = (),
        generation: GenerateConfig | None = None,
        max_words: int = 120,
        max_tool_rounds: int = 2,
        prompts_dir: str | Path | None = None,
    ) -> None:
        self.model = get_model(model) if isinstance(model, str) else model
        self.tools: tuple[Tool, ...] = tuple(t if isinstance(t, Tool) else get_tools([t])[0] for t in tools)
        self.name = self.model.spec + (
            "+" + "+".join(t.name.lower() for t in self.tools) if self.tools else ""
        )
        self.generation = generation or GenerateConfig(max_tokens=200, temperature=0.0)
        self.max_words = max_words
        self.max_tool_rounds = max_tool_rounds
        self.prompts_dir = prompts_dir

    async def believe(self, question: Question) -> tuple[str | None, Verdict]:
        """The option this agent's model believes is correct (capability ``state its belief``)."""
        return await choose_side(self.model, question, self.prompts_dir)

    def messages(
        self, question: Question, answer_case: str, visible: Sequence[Turn], context: AgentContext
    ) -> list[ChatMessage]:
        case = question.case(answer_case)
        fields: dict[str, object] = {
            "source": source_block(question.source_text),
            "question": question.text,
            "options": options_block(question),
            "short": case.short,
            "answer": case.long,
            "history": transcript_block(visible, "The discussion so far"),
            "max_words": self.max_words,
            "round": context.round,
            "num_rounds": context.num_rounds,
        }
        if question.k == 2:
            other = question.other(answer_case)
            fields.update(other_short=other.short, other_answer=other.long)
        template = {
            "consultancy": "agent_consultancy",
            "debate": "agent_debate",
            "evidence": "agent_evidence",
        }[context.setting]
        user = render(template, self.prompts_dir, **fields)
        if self.tools:
            user += (
                "\n\nTools: "
                + "; ".join(t.description for t in self.tools)
                + ". Write a call on its own line; you will get the result."
            )
        return [
            ChatMessage(
                role="system",
                content=render("agent_system", self.prompts_dir, answer=f"{case.short}) {case.long}"),
            ),
            ChatMessage(role="user", content=user),
        ]

    async def _generate(
        self, msgs: list[ChatMessage], config: GenerateConfig
    ) -> tuple[list[str], list[list[dict[str, str]]]]:
        """Generate ``config.n`` replies, running tool calls for up to ``max_tool_rounds`` rounds.
        Returns the final texts and, per reply, the tool calls it made."""
        out = await self.model.generate(msgs, config)
        texts: list[str] = []
        calls: list[list[dict[str, str]]] = []
        for i, s in enumerate(out.samples):
            text, convo, mine = s.text, list(msgs), []
            for _ in range(self.max_tool_rounds if self.tools else 0):
                results = self._run_tools(text)
                if not results:
                    break
                mine.extend(results)
                convo += [
                    ChatMessage(role="assistant", content=text),
                    ChatMessage(
                        role="user",
                        content="Tool results:\n"
                        + "\n".join(f"{c['call']} = {c['result']}" for c in results)
                        + "\nNow write your final argument.",
                    ),
                ]
                text = (
                    await self.model.generate(
                        convo, config.model_copy(update={"n": 1}), seed=(config.seed or 0) + i
                    )
                ).text
            texts.append(text)
            calls.append(mine)
        return texts, calls

    def _run_tools(self, text: str) -> list[dict[str, str]]:
        by_name = {t.name: t for t in self.tools}
        return [
            {"call": f"{m.group(1)}({m.group(2)})", "result": by_name[m.group(1)].fn(m.group(2))}
            for m in _TOOL_CALL.finditer(text)
            if m.group(1) in by_name
        ]

    def _turn(
        self,
        question: Question,
        answer_case: str,
        text: str,
        context: AgentContext,
        calls: list[dict[str, str]],
    ) -> Turn:
        meta: dict[str, object] = {"model": self.model.spec}
        if calls:
            meta["tool_calls"] = calls
        if context.setting == "evidence":
            argument, quotes, truncated = parse_evidence(text)
            meta.update(raw=text, truncated=truncated)
            return Turn(
                role="agent",
                speaker=context.speaker,
                content=argument,
                answer_case=answer_case,
                quotes=check_quotes(quotes, question.source_text),
                metadata=meta,
            )
        return Turn(
            role="agent",
            speaker=context.speaker,
            content=text.strip(),
            answer_case=answer_case,
            metadata=meta,
        )

    async def __call__(
        self,
        question: Question,
        answer_case: str,
        visible: Sequence[Turn],
        context: AgentContext | None = None,
    ) -> Turn:
        ctx = context or AgentContext()
        texts, calls = await self._generate(
            self.messages(question, answer_case, visible, ctx), self.generation
        )
        return self._turn(question, answer_case, texts[0], ctx, calls[0])

    async def candidates(
        self,
        question: Question,
        answer_case: str,
        visible: Sequence[Turn],
        context: AgentContext,
        n: int,
        temperature: float,
    ) -> list[Turn]:
        """``n`` sampled arguments (distinct, reproducible sample indices)."""
        cfg = self.generation.model_copy(update={"n": n, "temperature": temperature})
        texts, calls = await self._generate(self.messages(question, answer_case, visible, context), cfg)
        return [self._turn(question, answer_case, t, context, c) for t, c in zip(texts, calls, strict=True)]


class BestOfNAgent:
    """Samples N arguments and keeps the one a preference judge finds most convincing for the
    assigned answer: the knob for optimization pressure (persuasiveness)."""

    def __init__(
        self, base: ModelAgent, n: int, preference_judge: Judge, *, temperature: float = 0.8
    ) -> None:
        if n < 1:
            raise ValueError("best-of-N needs n >= 1")
        self.base, self.n, self.preference_judge, self.temperature = base, n, preference_judge, temperature
        self.name = f"{base.name}-bo{n}"

    async def believe(self, question: Question) -> tuple[str | None, Verdict]:
        """Best-of-N argues like its base agent and believes what its base model believes."""
        return await self.base.believe(question)

    async def __call__(
        self,
        question: Question,
        answer_case: str,
        visible: Sequence[Turn],
        context: AgentContext | None = None,
    ) -> Turn:
        ctx = context or AgentContext()
        cands = await self.base.candidates(question, answer_case, visible, ctx, self.n, self.temperature)
        scores: list[float] = []
        for c in cands:
            v = await self.preference_judge.judge(question, [*visible, c], argued=answer_case)
            scores.append(v.prob(answer_case) if v.ok else -1.0)
        best = max(range(len(cands)), key=lambda i: scores[i])
        chosen = cands[best]
        return chosen.model_copy(
            update={"metadata": {**chosen.metadata, "best_of_n": self.n, "preference_scores": scores}}
        )


async def choose_side(
    model: Model, question: Question, prompts_dir: str | Path | None = None
) -> tuple[str | None, Verdict]:
    """The option a model believes is correct (for open consultancy) and the verdict it came
    from; None when the model's belief could not be elicited."""
    msgs = [
        ChatMessage(
            role="user",
            content=render(
                "agent_choose",
                prompts_dir,
                source=source_block(question.source_text),
                question=question.text,
                options=options_block(question),
            ),
        )
    ]
    v = await elicit(model, msgs, question.shorts)
    if v.probabilities is None:
        return None, v
    probs = v.probabilities
    return max(probs, key=lambda k: probs[k]), v


#: Agent classes usable by name in configs (``agent_models: [{class: <name>, ...}]``).
AGENTS: Registry[type] = Registry("agent", {"ModelAgent": ModelAgent})


def register_agent(name: str | None = None, *, replace: bool = False) -> Callable[[type[A]], type[A]]:
    """Class decorator: ``agent_models: [{class: <name>, <constructor arguments>}]`` builds it.
    Constructor parameters annotated ``Model`` (or ``Judge``, ``Agent``) take a model spec (a judge,
    an agent entry) in the config and receive the built object."""
    return AGENTS.register(name, replace=replace)
