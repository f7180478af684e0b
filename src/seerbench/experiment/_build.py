"""Building a cell's judge, agent and protocol from its config entries, through one model factory:
every model a cell uses (the judge's, the agent's, and a protocol's own, e.g. a referee) comes
from ``model_factory(spec, role)``, so planning and prompt replay swap the factory, not the code."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from seerbench.agents import Agent, BestOfNAgent, ModelAgent
from seerbench.errors import ConfigError
from seerbench.experiment._components import Entry, build, init_hints, inject
from seerbench.experiment._config import REPLAY, ExperimentConfig
from seerbench.experiment._grid import RunSpec, listed_keywords
from seerbench.judges import Judge, ModelJudge
from seerbench.models import GenerateConfig, Model, get_model
from seerbench.protocols import PROTOCOLS, OversightProtocol

ModelFactory = Callable[[str, str], Model]  # (spec, role: 'judge' | 'agent' | a protocol keyword) -> Model


def default_model_factory(spec: str, role: str) -> Model:
    """The model of a spec, whatever the role (:func:`seerbench.models.get_model`)."""
    return get_model(spec)


class CellBuilder:
    """Judges, agents and protocols of ``config``'s cells, their models made by ``model_factory``."""

    def __init__(self, config: ExperimentConfig, model_factory: ModelFactory = default_model_factory) -> None:
        self.config = config
        self.model_factory = model_factory

    def make_judge(self, entry: Entry) -> Judge:
        """The judge a config entry describes: a :class:`ModelJudge` on a model spec, or a class
        entry built by :func:`seerbench.experiment._components.build`."""
        c = self.config
        if isinstance(entry, str):
            return ModelJudge(
                self.model_factory(entry, "judge"),
                elicitation=c.elicitation.build(c.seed),
                prompts_dir=c.resolved_prompts_dir(),
            )
        judge: Judge = build(
            entry,
            "judge",
            base_dir=c._base_dir,
            make_judge=self.make_judge,
            make_agent=self.make_agent,
            make_model=lambda s: self.model_factory(s, "judge"),
        )
        return judge

    def make_agent(self, entry: Entry, tools: Sequence[str] = ()) -> Agent:
        """The agent a config entry describes: ``replay``, a :class:`ModelAgent` on a model spec
        (with ``tools``), or a class entry."""
        c = self.config
        if entry == REPLAY:
            from seerbench.datasets import ReplayAgent

            return ReplayAgent(show_snippets=False)
        if isinstance(entry, str):
            g = c.agent_generation
            return ModelAgent(
                self.model_factory(entry, "agent"),
                tools=list(tools),
                generation=GenerateConfig(temperature=g.temperature, max_tokens=g.max_tokens, seed=c.seed),
                max_words=g.max_words,
                prompts_dir=c.resolved_prompts_dir(),
            )
        agent: Agent = build(
            entry,
            "agent",
            base_dir=c._base_dir,
            make_judge=self.make_judge,
            make_agent=self.make_agent,
            make_model=lambda s: self.model_factory(s, "agent"),
        )
        return agent

    def judge(self, spec: RunSpec) -> Judge:
        assert spec.judge_entry is not None
        return self.make_judge(spec.judge_entry)

    def agent(self, spec: RunSpec) -> Agent:
        assert spec.agent_entry is not None
        return self.side(spec, spec.agent_entry, spec.agent_model, spec.tools, spec.best_of_n)

    def adversary(self, spec: RunSpec) -> Agent | None:
        """A cross-play cell's other debater (None in self-play: the agent argues both sides)."""
        d = spec.adversary
        return None if d is None else self.side(spec, d.agent, d.label(), d.tools, d.best_of_n)

    def side(self, spec: RunSpec, entry: Entry, label: str, tools: Sequence[str], n: int) -> Agent:
        """One debater of a cell: its agent entry with its tools, best-of-N when ``n`` > 1."""
        base = self.make_agent(entry, tools)
        if n > 1:
            if not isinstance(base, ModelAgent):
                raise ConfigError(
                    f"cell {spec.key}: best_of_n needs a model agent (a model spec), not {label}"
                )
            return BestOfNAgent(base, n, self.judge(spec))
        return base

    def keywords(self, spec: RunSpec) -> dict[str, Any]:
        """The protocol's constructor keywords: the entry's values, with a judge, agent or model
        (or a list of them) built where the constructor's annotation asks for one."""
        cls = PROTOCOLS[spec.protocol]
        hints = init_hints(cls)
        raw = {"both_orders": self.config.both_orders, **spec.kwargs}  # a protocol entry may override
        return {
            k: inject(
                f"protocol {spec.protocol}",
                k,
                hints.get(k),
                v,
                make_judge=self.make_judge,
                make_agent=self.make_agent,
                make_model=self.model_factory,
            )
            for k, v in raw.items()
        }

    def protocol(self, spec: RunSpec) -> OversightProtocol:
        """The cell's protocol, built whole: its judge, agent and every injected keyword."""
        cls = PROTOCOLS[spec.protocol]
        judge: Any = self.judge(spec) if spec.judge_entry is not None else None
        agent: Any = self.agent(spec) if cls.needs_agent else None
        kw = self.keywords(spec)
        adv = self.adversary(spec)
        if adv is not None:
            kw["adversary"] = adv
        try:
            return cls(judge, agent, seed=self.config.seed, **kw)
        except TypeError as e:
            known = ", ".join(listed_keywords(cls))
            raise ConfigError(f"protocol {spec.protocol}: bad keyword ({e}); keywords: {known}") from None


__all__ = ["CellBuilder", "ModelFactory", "default_model_factory"]
