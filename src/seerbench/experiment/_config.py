"""The experiment config: the grid's axes and settings, validated with one line per problem."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from seerbench.config import explain_validation, read_yaml_mapping
from seerbench.errors import ConfigError, UnknownModelError, did_you_mean
from seerbench.metrics import DEFAULT_EPS, FailurePolicy
from seerbench.models import ElicitationSpec, check_model_spec
from seerbench.plugins import load_plugin
from seerbench.protocols import get_protocol

#: Config keys that may change between runs into the same output folder. Growing the grid or the
#: dataset is allowed too: results are checked per cell (cell.json) and per question (its content).
#: ``sequential`` decides which questions run (and when to stop), never a question's results line.
NOT_IN_FINGERPRINT = frozenset({"out", "limit", "concurrency", "name", "sequential"})

#: Keys of a dataset mapping that name files; relative ones are read from the config file's folder.
_PATH_KEYS = ("path",)

#: What a ``dataset`` mapping without a name lacks (refused when the config is read).
NO_DATASET_NAME = "give a name (or path), e.g. {name: arithmetic, n: 20}"


def resolve_path(path: str | Path, base_dir: str | Path | None) -> Path:
    """``path`` as a config means it: a relative one is read from ``base_dir`` (the config
    file's folder; the working directory when None)."""
    p = Path(path).expanduser()
    return p if p.is_absolute() or base_dir is None else Path(base_dir) / p


def dataset_file(ref: str, base_dir: str | Path | None) -> Path | None:
    """The file a dataset reference that is no registered name names (read from ``base_dir``):
    one that exists, or that looks like a file (a suffix, a folder); None for a bare word, which
    can only be a dataset's name (a misspelt one, to be refused as such)."""
    path = resolve_path(ref, base_dir)
    return path if path.exists() or Path(ref).suffix or "/" in ref or "\\" in ref else None


DEBATERS = "debaters"  # a debate protocol entry's key for cross-play
SCHEDULE = "schedule"  # a cross-play entry's key: which pairs of debaters get a cell
#: The cross-play schedules: every ordered pair (each debater the cell's agent against every other),
#: or each unordered pair once, the agent role rotated round-robin (:func:`balanced_pairs`).
SCHEDULES = ("all_ordered", "balanced")

REPLAY = "replay"  # agent model name for human-written arguments replayed from the dataset


def _known_spec(entry: Any, role: str) -> None:
    """A judge's or agent's model spec resolved as its cell would resolve it (its backend, a
    scripted responder's name), nothing loaded or called, so a misspelt one is refused when the
    config is read, under its key; ``replay`` is an agent's; a class entry is left to its cell."""
    if isinstance(entry, str) and not (role == "agent" and entry == REPLAY):
        check_model_spec(entry)


def _reading(info: ValidationInfo) -> bool:
    """Whether the config is read to be run (names checked), not a run folder's record read back
    to look at the run (what it names need not be installed any more)."""
    return not (info.context or {}).get("recorded")


def _judge_entry(v: Any, info: ValidationInfo) -> Any:
    if _reading(info):
        _known_spec(v, "judge")
    return v


def _agent_entry(v: Any, info: ValidationInfo) -> Any:
    if _reading(info):
        _known_spec(v, "agent")
    return v


#: An item of ``judge_models`` / ``agent_models``: a model spec or ``{class: ..., <arguments>}``.
JudgeEntry = Annotated[str | dict[str, Any], AfterValidator(_judge_entry)]
AgentEntry = Annotated[str | dict[str, Any], AfterValidator(_agent_entry)]


class GenerationSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=200, ge=1)
    max_words: int = Field(default=120, ge=1)


#: The metrics a sequential stop rule may watch: name -> (what it is, its bounds). Only bounded
#: per-question values have anytime-valid confidence sequences (seerbench.estimators._sequential).
STOP_METRICS = {"accuracy": ("the judge's accuracy", (0.0, 1.0))}
#: Metrics a stop rule may not watch, each with why (refused when the config is read).
UNCOVERED_METRICS = {
    "asd": "ASD is a difference of log scores, unbounded, so no confidence sequence covers it",
    "jse": "JSE is a log score, unbounded, so no confidence sequence covers it",
    "ase": "ASE is a log score, unbounded, so no confidence sequence covers it",
}


class StopWhen(BaseModel):
    """When a sequential run stops a cell: its interval narrow enough (``half_width``), or, with
    ``sign: true``, the sign of its paired difference against the ``baseline`` protocol's cell
    settled (the interval excludes 0)."""

    model_config = ConfigDict(extra="forbid")
    half_width: float | None = Field(default=None, gt=0.0, lt=0.5)
    sign: bool | None = None
    baseline: str | None = None
    metric: str = "accuracy"

    @field_validator("metric")
    @classmethod
    def _bounded(cls, v: str) -> str:
        if v in UNCOVERED_METRICS:
            raise ValueError(f"{v}: {UNCOVERED_METRICS[v]}; use metric: accuracy (bounded in [0, 1])")
        if v not in STOP_METRICS:
            raise ValueError(f"unknown metric {v!r}; a stop rule watches: {', '.join(STOP_METRICS)}")
        return v

    @model_validator(mode="after")
    def _one_rule(self) -> StopWhen:
        if self.sign is False:
            raise ValueError("sign: false is no rule; give sign: true (with baseline: P) or leave it out")
        if (self.half_width is None) == (self.sign is None):
            raise ValueError(
                "give one rule: {half_width: W} (a cell's interval that narrow) or "
                "{sign: true, baseline: P} (its paired difference against protocol P settled)"
            )
        if self.sign and not self.baseline:
            raise ValueError("sign: true needs baseline: P, the protocol folder each cell is compared with")
        if self.baseline and not self.sign:
            raise ValueError("baseline is for sign: true; a half_width rule watches each cell alone")
        return self


class Budget(BaseModel):
    """What a sequential run may spend in all, over every run into its folder (its usage log):
    model calls (cache hits are free), tokens (prompt + completion), dollars (the price table)."""

    model_config = ConfigDict(extra="forbid")
    calls: int | None = Field(default=None, ge=1)
    tokens: int | None = Field(default=None, ge=1)
    dollars: float | None = Field(default=None, gt=0.0)

    @model_validator(mode="after")
    def _some(self) -> Budget:
        if self.calls is None and self.tokens is None and self.dollars is None:
            raise ValueError("give calls, tokens and/or dollars, or leave budget out")
        return self


class SequentialSpec(BaseModel):
    """A sequential run (docs/budget.md): questions added ``batch`` at a time in an order fixed by
    ``seed``; after each batch every still-running cell's anytime-valid confidence sequence is
    checked against ``stop_when``, and everything stops once ``budget`` is spent."""

    model_config = ConfigDict(extra="forbid")
    batch: int = Field(ge=1)
    seed: int = 0
    stop_when: StopWhen | None = None
    budget: Budget | None = None
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)

    @model_validator(mode="after")
    def _something_stops(self) -> SequentialSpec:
        if self.stop_when is None and self.budget is None:
            raise ValueError("give stop_when and/or budget: without either the run is a fixed one")
        return self


#: Keys of a protocol entry that are not constructor keywords: the entry's own judges and agents,
#: used instead of the config's ``judge_models`` / ``agent_models`` for this protocol's cells.
ENTRY_KEYS = ("judge_models", "agent_models")


class Debater(BaseModel):
    """One side of a cross-play debate: an agent entry with its own tools and best-of-N."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    agent: str | dict[str, Any]
    tools: tuple[str, ...] = ()
    best_of_n: int = Field(default=1, ge=1)

    def label(self) -> str:
        """How folders and tables name the debater (as a cell names its agent)."""
        from seerbench.experiment._components import entry_label

        t = f"_T_{'+'.join(self.tools)}" if self.tools else ""
        return entry_label(self.agent) + t + (f"_bo{self.best_of_n}" if self.best_of_n > 1 else "")

    def identity(self) -> dict[str, Any]:
        return {"agent": self.agent, "tools": list(self.tools), "best_of_n": self.best_of_n}


def parse_debater(v: Any) -> Debater:
    """A ``debaters`` item: a model spec, a class entry ``{class: ...}``, or
    ``{agent: <entry>, tools: [...], best_of_n: N}``."""
    if isinstance(v, str) or (isinstance(v, dict) and "class" in v):
        return Debater(agent=v)
    if isinstance(v, dict) and "agent" in v:
        keys = list(Debater.model_fields)
        unknown = [k for k in v if k not in keys]
        if unknown:
            raise ValueError(
                f"{DEBATERS}: {unknown[0]!r} is not a key of a debater{did_you_mean(str(unknown[0]), keys)}; "
                f"keys: {', '.join(keys)}"
            )
        return Debater.model_validate(v)
    raise ValueError(
        "a debater is a model spec, a {class: ...} entry or {agent: ..., best_of_n: N, tools: [...]}; "
        f"got {v!r}"
    )


class ProtocolSpec(BaseModel):
    """A protocol and its keyword grid: any extra key is a protocol keyword; a list value is an axis
    of the grid (e.g. ``{name: EvidenceDebate, condition: [SA, PSA]}``), except for a keyword the
    protocol annotates as a list of judges, agents or models (a panel), whose list is one value (a
    list of such lists is an axis). ``judge_models`` / ``agent_models`` on the entry pair this
    protocol with its own judges / agents instead of the config's. ``debaters`` (debates only)
    makes it a cross-play grid: every ordered pair of different debaters, one cell each, or with
    ``schedule: balanced`` each unordered pair once."""

    model_config = ConfigDict(extra="allow")
    name: str

    @field_validator("name")
    @classmethod
    def _known(cls, v: str) -> str:
        get_protocol(v)
        return v

    @model_validator(mode="after")
    def _debaters(self) -> ProtocolSpec:
        raw = (self.model_extra or {}).get(DEBATERS)
        schedule = (self.model_extra or {}).get(SCHEDULE)
        if schedule is not None and raw is None:
            raise ValueError(
                f"{SCHEDULE} of protocol {self.name}: only a cross-play entry has a schedule; "
                f"give it {DEBATERS}: [...] or remove {SCHEDULE}"
            )
        if schedule is not None and schedule not in SCHEDULES:
            raise ValueError(
                f"{SCHEDULE} of protocol {self.name}: {schedule!r} is not a schedule; give all_ordered "
                "(every ordered pair of debaters) or balanced (each pair once, agent role rotated)"
            )
        if raw is None:
            return self
        if not get_protocol(self.name).cross_play:
            raise ValueError(
                f"{DEBATERS}: {self.name} has no second debater; cross-play is for the debates "
                "(SimultaneousDebate, SequentialDebate, EvidenceDebate)"
            )
        if not isinstance(raw, list):
            raise ValueError(f"{DEBATERS}: give a list of at least two debaters, got {raw!r}")
        ds = [parse_debater(v) for v in raw]
        labels = [d.label() for d in ds]
        if len(set(labels)) < 2 or len(set(labels)) != len(labels):
            raise ValueError(f"{DEBATERS}: give at least two different debaters, each once; got {labels}")
        return self

    def schedule(self) -> str:
        """The cross-play schedule (one of :data:`SCHEDULES`; all_ordered unless given)."""
        return str((self.model_extra or {}).get(SCHEDULE, "all_ordered"))

    def debaters(self) -> list[Debater] | None:
        """The cross-play debaters, or None for an ordinary (self-play) entry."""
        raw = (self.model_extra or {}).get(DEBATERS)
        return None if raw is None else [parse_debater(v) for v in raw]

    @model_validator(mode="after")
    def _own_entries(self) -> ProtocolSpec:
        for key in ENTRY_KEYS:
            v = (self.model_extra or {}).get(key)
            if v is None:
                continue
            if not isinstance(v, list) or not v:
                raise ValueError(f"{key} of protocol {self.name}: give a non-empty list of entries")
            for e in v:
                if not isinstance(e, str | dict) or (
                    isinstance(e, dict) and not isinstance(e.get("class"), str)
                ):
                    raise ValueError(
                        f"{key} of protocol {self.name}: an entry is a model spec or "
                        f"{{class: ..., <arguments>}}; got {e!r}"
                    )
        return self

    @model_validator(mode="after")
    def _known_specs(self, info: ValidationInfo) -> ProtocolSpec:
        """Every model spec the entry names resolved (:func:`_known_spec`): its own judges and
        agents, its debaters' agents, and its keywords that are a judge, an agent or a model (a
        protocol's own referee, say), each error naming the key."""
        if not _reading(info):
            return self
        from seerbench.experiment._components import component_kind, init_hints, list_element

        extra = self.model_extra or {}
        named: list[tuple[str, str, Any]] = []  # (key, role, entry)
        for key, role in zip(ENTRY_KEYS, ("judge", "agent"), strict=True):
            entries = extra.get(key)
            named += [(key, role, e) for e in entries] if isinstance(entries, list) else []
        named += [(DEBATERS, "agent", d.agent) for d in self.debaters() or []]
        hints = init_hints(get_protocol(self.name))
        for key, v in extra.items():
            ann = hints.get(key)
            kind = component_kind(ann) or component_kind(list_element(ann))
            if kind is None or key in (*ENTRY_KEYS, DEBATERS, SCHEDULE):
                continue
            for x in v if isinstance(v, list) else [v]:  # an axis, a panel, or an axis of panels
                named += [(key, kind, e) for e in (x if isinstance(x, list) else [x])]
        for key, role, e in named:
            try:
                _known_spec(e, role)
            except UnknownModelError as err:
                raise ValueError(f"{key} of protocol {self.name}: {err}") from None
        return self

    def entries(self, key: str) -> list[str | dict[str, Any]] | None:
        """The entry's own ``judge_models`` or ``agent_models`` (None: the config's)."""
        v = (self.model_extra or {}).get(key)
        return list(v) if v is not None else None

    def keyword_grid(self) -> list[dict[str, Any]]:
        from seerbench.experiment._components import init_hints, is_component_list

        hints = init_hints(get_protocol(self.name))
        own = (*ENTRY_KEYS, DEBATERS, SCHEDULE)  # the entry's keys that are no protocol keyword
        extra = {k: v for k, v in (self.model_extra or {}).items() if k not in own}

        def axis(k: str, v: Any) -> list[Any]:
            if not isinstance(v, list):
                return [v]
            if is_component_list(hints.get(k)) and not all(isinstance(x, list) for x in v):
                return [v]  # one panel
            return v

        axes = {k: axis(k, v) for k, v in extra.items()}
        keys = sorted(axes)
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(axes[k] for k in keys))]


class ExperimentConfig(BaseModel):
    """An experiment grid. See ``examples/quickstart.yaml`` for every key in use."""

    model_config = ConfigDict(extra="forbid")

    name: str = "experiment"
    dataset: str | dict[str, Any] = Field(
        description="A dataset name or seerbench JSONL path, or {name: ..., <options>}"
    )
    binary_seed: int = Field(
        default=0, description="Seed of the binary view (distractor choice and option order)."
    )
    out: str | None = None
    limit: int | None = Field(default=None, ge=1)
    seed: int = 0
    plugins: list[str] = Field(
        default_factory=list,
        description="Modules or .py files that register protocols, judges, agents, backends or datasets.",
    )
    judge_models: list[JudgeEntry] = ["local"]
    agent_models: list[AgentEntry] = ["local"]
    agent_tools: list[list[str]] = [[]]
    best_of_n: list[int] = [1]
    protocols: list[ProtocolSpec] = Field(min_length=1)
    num_turns: list[int] = [1]
    both_orders: bool = False
    elicitation: ElicitationSpec = ElicitationSpec()
    agent_generation: GenerationSpec = GenerationSpec()
    parse_failures: FailurePolicy = "exclude"
    eps: float = Field(default=DEFAULT_EPS, ge=0.0, lt=0.5)
    concurrency: int = Field(default=4, ge=1)
    n_boot: int = Field(default=2000, ge=100)
    prompts_dir: str | None = None
    sequential: SequentialSpec | None = Field(
        default=None,
        description="Add questions in batches and stop each cell when its target is met (docs/budget.md).",
    )
    cache_scope: str | None = Field(
        default=None,
        description=(
            "A name put in every model cache key: a new scope makes fresh calls without clearing the cache."
        ),
    )

    #: The folder relative input paths (dataset files, prompts_dir) are read from: the config
    #: file's folder for a YAML config, else the working directory.
    _base_dir: Path | None = PrivateAttr(default=None)

    @field_validator("protocols", mode="before")
    @classmethod
    def _protocol_strings(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [{"name": p} if isinstance(p, str) else p for p in v]
        return v

    @model_validator(mode="before")
    @classmethod
    def _load_plugins(cls, data: Any, info: ValidationInfo) -> Any:
        """Import the config's plugins before anything names what they register."""
        if isinstance(data, dict) and isinstance(data.get("plugins"), list):
            base = (info.context or {}).get("base_dir")
            for ref in data["plugins"]:
                if isinstance(ref, str):
                    load_plugin(ref, base)
        return data

    @field_validator("dataset")
    @classmethod
    def _known_dataset(cls, v: str | dict[str, Any], info: ValidationInfo) -> str | dict[str, Any]:
        """A dataset's name is looked up in the registry (nothing loaded), so a misspelt one is
        refused when the config is read, under its key; a file is read when the run needs it."""
        ref = (v.get("name") or v.get("path")) if isinstance(v, dict) else v
        if ref is None:
            raise ValueError(NO_DATASET_NAME)
        if (
            isinstance(ref, str)
            and _reading(info)
            and dataset_file(ref, (info.context or {}).get("base_dir")) is None
        ):
            from seerbench.datasets import get_dataset

            get_dataset(ref)  # a bare word: a dataset's name, registered or refused
        return v

    @field_validator("judge_models", "agent_models")
    @classmethod
    def _entries(cls, v: list[Any]) -> list[Any]:
        if not v:
            raise ValueError("give at least one (a model spec, or {class: ..., <arguments>})")
        for e in v:
            if isinstance(e, dict) and not isinstance(e.get("class"), str):
                raise ValueError(
                    f"a mapping entry needs a 'class' (a registered name or module:Class); got {e}"
                )
        return v

    @model_validator(mode="after")
    def _cross_play_axes(self) -> ExperimentConfig:
        """Agent axes that no cell would use (every agent protocol entry is cross-play, whose
        debaters carry their own) are refused rather than ignored, when set to anything but their
        default: a saved config (experiment.json, a Ray worker's copy) holds every key with its
        value, the defaults too, and must read back as it was written."""
        agentful = [p for p in self.protocols if get_protocol(p.name).needs_agent]
        if agentful and all(p.debaters() is not None for p in agentful):
            fields = type(self).model_fields
            unused = [
                k
                for k in ("agent_models", "agent_tools", "best_of_n")
                if getattr(self, k) != fields[k].get_default(call_default_factory=True)
            ]
            if unused:
                raise ValueError(
                    f"{', '.join(unused)} would be ignored: every agent protocol here is cross-play; "
                    f"give each debater its own ({DEBATERS}: [{{agent: ..., best_of_n: N, tools: [...]}}])"
                )
        return self

    @model_validator(mode="after")
    def _sequential_cross_play(self, info: ValidationInfo) -> ExperimentConfig:
        """A sequential run stops each cell on its own (its target met, or the budget spent before
        its batch), so a tournament's pairs would end at different numbers of questions and its
        sides, balanced per question, would no longer be balanced over the tournament: refused.
        A recorded config (a run folder's, read back by ``from_run``) is not a run to plan."""
        if self.sequential is None or (info.context or {}).get("recorded"):
            return self
        crossed = [p.name for p in self.protocols if p.debaters() is not None]
        if crossed:
            raise ValueError(
                f"sequential: {', '.join(crossed)} is a cross-play tournament ({DEBATERS}), whose pairs "
                "would stop at different numbers of questions and leave its sides unbalanced; remove "
                "sequential and give the tournament a fixed number of questions (limit: N)"
            )
        return self

    @model_validator(mode="after")
    def _sequential_baseline(self) -> ExperimentConfig:
        """A sign rule's baseline names one of the config's protocols (as ``stats --baseline``)."""
        rule = self.sequential.stop_when if self.sequential else None
        if rule is not None and rule.baseline is not None:
            names = [p.name for p in self.protocols]
            if rule.baseline.split("_")[0] not in names:
                raise ValueError(
                    f"sequential.stop_when.baseline: {rule.baseline!r} is not a protocol of this config "
                    f"({', '.join(names)})"
                )
            if len(names) < 2:
                raise ValueError("sequential.stop_when.sign compares protocols: give at least two")
        return self

    @field_validator("num_turns", "best_of_n")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if not v or any(x < 1 for x in v):
            raise ValueError("must be a non-empty list of integers >= 1")
        return v

    @classmethod
    def from_yaml(cls, path: str | Path) -> ExperimentConfig:
        p = Path(path)
        raw = read_yaml_mapping(p, "config file")
        return cls.parse(raw, source=str(p), base_dir=p.parent)

    @classmethod
    def parse(
        cls,
        raw: dict[str, Any],
        source: str = "config",
        base_dir: str | Path | None = None,
        *,
        recorded: bool = False,
        flags: Mapping[str, str] | None = None,
    ) -> ExperimentConfig:
        """``raw`` validated (one line per problem); ``recorded``: a config a run folder holds,
        read back to look at the run, not to run it; ``flags``: the command-line flag that set
        each of these keys, named in place of the config where its value is refused."""
        plugins = raw.get("plugins")
        if isinstance(plugins, list):  # first, so their errors are their own one-line messages
            for ref in plugins:
                if isinstance(ref, str):
                    load_plugin(ref, base_dir)
        try:
            cfg = cls.model_validate(raw, context={"base_dir": base_dir, "recorded": recorded})
        except ValidationError as e:
            raise ConfigError(explain(e, source, flags)) from None
        cfg._base_dir = Path(base_dir) if base_dir is not None else None
        return cfg

    @classmethod
    def from_run(cls, run_dir: str | Path) -> ExperimentConfig:
        """The config recorded in a run folder's experiment.json (relative paths read as the
        original config file's folder read them)."""
        from seerbench.runs import read_experiment_json

        meta = read_experiment_json(Path(run_dir) / "experiment.json")
        return cls.parse(
            meta["config"],
            source=f"{run_dir}/experiment.json",
            base_dir=meta.get("config_dir"),
            recorded=True,
        )

    def with_updates(self, *, flags: Mapping[str, str] | None = None, **updates: Any) -> ExperimentConfig:
        """A copy with some keys replaced (validated), reading relative paths from the same folder;
        ``flags``: the command-line flag each key's new value came from (``{"limit": "--limit"}``),
        named in an error about that value (``--limit -1: must be 1 or more``)."""
        return ExperimentConfig.parse(
            {**self.model_dump(mode="json", exclude_unset=True), **updates},
            base_dir=self._base_dir,
            flags=flags,
        )

    def resolve(self, path: str | Path) -> Path:
        """``path`` as the config means it: relative paths are read from the config file's folder."""
        return resolve_path(path, self._base_dir)

    def resolved_prompts_dir(self) -> Path | None:
        return self.resolve(self.prompts_dir) if self.prompts_dir else None

    def out_dir(self) -> Path:
        return Path(self.out or f"runs/{self.name}")

    def fingerprint(self) -> str:
        """Hash of the config apart from out, limit, concurrency and name (for the record; whether
        a folder's results may be extended is decided per cell, see :meth:`Experiment.cell_identity`)."""
        d = self.model_dump(mode="json", exclude=set(NOT_IN_FINGERPRINT))
        if d.get("cache_scope") is None:
            del d["cache_scope"]  # the default scope: the fingerprint of configs written before it
        return _hash(d)


def _hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def explain(e: ValidationError, source: str = "config", flags: Mapping[str, str] | None = None) -> str:
    """One line: every problem in an experiment config, with the key and what is allowed there
    (with the flag and value where a command-line flag set the key)."""
    return explain_validation(e, source, model=ExperimentConfig, docs="docs/experiments.md", flags=flags)
