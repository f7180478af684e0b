"""The protocol contract. A protocol never scores: it produces a transcript per answer case and
asks the judge for a verdict."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from seerbench.agents import Agent, AgentContext
from seerbench.errors import ConfigError, DataError
from seerbench.judges import Judge
from seerbench.records import CaseRun, QuestionRun
from seerbench.types import Question, Transcript, Turn, Verdict


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
        metadata={
            "both_orders": True,
            "original": v1.probabilities,
            "swapped": {x: v2.prob(to_new[x]) for x in to_new},
            "cached": bool(v1.metadata.get("cached") and v2.metadata.get("cached")),
        },
    )


class OversightProtocol(ABC):
    """Base of all protocols: a way of letting agents and a judge interact on one question.

    A subclass sets ``name`` and implements :meth:`run` for one answer case (the case the agent is
    assigned to argue for), building turns with :meth:`argue` and returning a :class:`CaseRun`
    made with :meth:`transcript` and the judge's verdict. :meth:`run_question` runs every case (or
    one, for :attr:`symmetric` protocols) and handles ``both_orders``. A protocol never scores.

    Example::

        @register_protocol("CritiquedConsultancy")
        class CritiquedConsultancy(OversightProtocol):
            async def run(self, question, answer_case):
                ctx = AgentContext("consultancy", 1, 1, speaker="consultant")
                turns = [await self.argue(self.agent, question, answer_case, [], ctx)]
                verdict = await self.judge.judge(question, turns, argued=answer_case)
                return CaseRun(answer_case, self.transcript(question, turns), verdict)

    Class attributes a subclass may set:

    - ``takes_turns``: ``num_turns`` means something for it (it becomes part of the folder name);
    - ``needs_agent``: False for judge-only protocols (NaiveJudge);
    - ``agent_needs`` / ``judge_needs``: capabilities the agent or judge must have (see
      :func:`seerbench.agents.capabilities`), checked when a config is read;
    - ``fixed_judge``: a judge name that replaces the configured judges (BlindTrust: ``trust``);
    - ``keywords``: extra constructor keywords a config may give (EvidenceDebate: ``condition``);
    - ``cross_play``: the adversary is an agent of its own, so a config's ``debaters`` may set the
      two sides to different debaters (the debates).

    A cell's folder name comes from the class and the config entry's keywords, never from a
    half-built instance: override the class method :meth:`name_parts` to show your keywords
    there, and :meth:`check_keywords` to refuse bad values when the config is read.
    """

    name: ClassVar[str]
    #: whether ``num_turns`` means something for this protocol
    takes_turns: ClassVar[bool] = False
    needs_agent: ClassVar[bool] = True
    agent_needs: ClassVar[frozenset[str]] = frozenset()
    judge_needs: ClassVar[frozenset[str]] = frozenset()
    fixed_judge: ClassVar[str | None] = None
    keywords: ClassVar[tuple[str, ...]] = ()
    #: the other side is an agent of its own (debates): a config may name ``debaters`` for cross-play
    cross_play: ClassVar[bool] = False

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

    @classmethod
    def keyword_value(cls, keywords: Mapping[str, Any], name: str) -> Any:
        """``keywords[name]``, else the default of the constructor parameter ``name`` (the first
        ``__init__`` in the class's MRO that names it), else None."""
        if name in keywords:
            return keywords[name]
        for klass in cls.__mro__:
            init = klass.__dict__.get("__init__")
            if init is None:
                continue
            p = inspect.signature(init).parameters.get(name)
            if p is not None and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                return None if p.default is p.empty else p.default
        return None

    @classmethod
    def name_parts(cls, keywords: Mapping[str, Any]) -> list[str]:
        """The parts of the folder name that show this protocol's own ``keywords`` (the config
        entry's values; :meth:`keyword_value` gives a default). Shown after ``t<num_turns>``."""
        return []

    @classmethod
    def check_keywords(cls, keywords: Mapping[str, Any]) -> None:
        """Refuse keyword values this protocol cannot run (raise :class:`ConfigError`); called
        when the grid is built from a config, and by the constructor."""
        return None

    @classmethod
    def cell_name(cls, keywords: Mapping[str, Any]) -> str:
        """Directory name of the configuration ``keywords`` describe (``num_turns``,
        ``both_orders``, ``judge_sees_source`` and the class's own), e.g. ``Consultancy_t2``."""
        parts = [cls.name]
        if cls.takes_turns:
            parts.append(f"t{keywords.get('num_turns', 1)}")
        parts.extend(cls.name_parts(keywords))
        if keywords.get("judge_sees_source"):
            parts.append("src")
        if keywords.get("both_orders"):
            parts.append("swap")
        return "_".join(parts)

    def keyword_values(self) -> dict[str, Any]:
        """This instance's keywords, as a config entry would give them."""
        own = {k: getattr(self, k) for k in self.keywords if hasattr(self, k)}
        return {
            "num_turns": self.num_turns,
            "both_orders": self.both_orders,
            "judge_sees_source": self.judge_sees_source,
            **own,
        }

    def config_name(self) -> str:
        """Directory name of this protocol configuration, e.g. ``Consultancy_t2``."""
        if type(self)._name_parts is not OversightProtocol._name_parts:  # an older protocol's instance hook
            parts = [self.name]
            if self.takes_turns:
                parts.append(f"t{self.num_turns}")
            parts.extend(self._name_parts())
            if self.judge_sees_source:
                parts.append("src")
            if self.both_orders:
                parts.append("swap")
            return "_".join(parts)
        return type(self).cell_name(self.keyword_values())

    def _name_parts(self) -> list[str]:
        """Deprecated instance hook (before :meth:`name_parts`); still honoured by :meth:`config_name`."""
        return []

    @abstractmethod
    async def run(self, question: Question, answer_case: str) -> CaseRun:
        """Run the protocol with the agent assigned ``answer_case``."""

    def transcript(self, question: Question, turns: Sequence[Turn] = ()) -> Transcript:
        """The transcript of one run: ``turns`` stamped with the question id and this configuration's name."""
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
                f"question {question.id!r} has {question.k} options and {len(question.true_cases)} true "
                f"ones; {self.name} needs two options with exactly "
                "one true (use a binary view of the dataset)"
            )

    async def run_question(self, question: Question) -> QuestionRun:
        self.check_question(question)
        if self.symmetric:
            r = await self._run_case(question, question.true_case.short)
            return QuestionRun(question, self.config_name(), {a: r for a in question.shorts}, symmetric=True)
        runs = await asyncio.gather(*(self._run_case(question, a) for a in question.shorts))
        return QuestionRun(question, self.config_name(), {r.answer_case: r for r in runs})

    async def argue(
        self,
        agent: Agent,
        question: Question,
        case: str,
        visible: Sequence[Turn],
        ctx: AgentContext,
        role: str = "agent",
    ) -> Turn:
        """Ask ``agent`` to argue for answer ``case`` having seen ``visible`` turns, and stamp the
        turn with the speaker name in ``ctx``, ``role`` and the case."""
        t = await agent(question, case, list(visible), ctx)
        return t.model_copy(update={"speaker": ctx.speaker, "role": role, "answer_case": case})

    def check_capabilities(self) -> None:
        """Refuse an agent or judge that lacks what this protocol needs (``agent_needs``,
        ``judge_needs``): raised when the config is read, not in the middle of a run."""
        from seerbench.agents import capabilities

        for who, obj, needs in (
            ("agent", self.agent, self.agent_needs),
            ("judge", self.judge, self.judge_needs),
        ):
            if obj is None or not needs:
                continue
            missing = sorted(needs - capabilities(obj))
            if missing:
                raise ConfigError(
                    f"{self.name} needs a{'n' if who == 'agent' else ''} {who} that can "
                    f"{', '.join(missing)}; {getattr(obj, 'name', type(obj).__name__)} "
                    f"({type(obj).__name__}) cannot"
                )


#: The 0.1 name of :class:`OversightProtocol` (easily confused with ``typing.Protocol``).
Protocol = OversightProtocol
