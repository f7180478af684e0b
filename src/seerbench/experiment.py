"""Experiment grids: judge models x agent models x tool sets x protocols x protocol keywords, run
over a dataset, resumable, with results files laid out as in seed 003::

    out/experiment.json                                  config, fingerprint, library version
    out/<protocol config>/<agent-judge config>/results.jsonl
    out/<protocol config>/<agent-judge config>/stats.json
    out/all_stats.json

``results.jsonl`` is append-only while running (one complete line per question, written with a
single ``write``), so a run killed at any moment loses at most the questions in flight; a rerun
drops a torn last line, skips finished questions and, at the end, rewrites the file in dataset
order, so an interrupted-and-resumed run ends with the same file as an uninterrupted one.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from seerbench import __version__
from seerbench.agents import Agent, BestOfNAgent, ModelAgent
from seerbench.errors import (
    AuthenticationError,
    ConfigError,
    DataError,
    ModelUnavailableError,
    UnknownModelError,
)
from seerbench.judges import Judge, ModelJudge
from seerbench.metrics import DEFAULT_EPS, FailurePolicy
from seerbench.models import ElicitConfig, GenerateConfig, get_model
from seerbench.models._elicit import Method
from seerbench.protocols import PROTOCOLS, Protocol, QuestionRun, get_protocol
from seerbench.results import result_line, run_stats
from seerbench.types import Question

#: Config keys that may change between runs into the same output folder.
NOT_IN_FINGERPRINT = frozenset({"out", "limit", "concurrency", "name"})

REPLAY = "replay"  # agent model name for human-written arguments replayed from the dataset


class ElicitationSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    order: list[Method] = ["logprobs", "verbalized", "vote"]
    vote_samples: int = Field(default=5, ge=1)
    vote_temperature: float = Field(default=1.0, ge=0.0)

    def build(self, seed: int) -> ElicitConfig:
        return ElicitConfig(order=tuple(self.order), vote_samples=self.vote_samples, vote_temperature=self.vote_temperature, seed=seed)


class GenerationSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=200, ge=1)
    max_words: int = Field(default=120, ge=1)


class ProtocolSpec(BaseModel):
    """A protocol and its keyword grid: any extra key is a protocol keyword; a list value is an axis
    of the grid (e.g. ``{name: EvidenceDebate, condition: [SA, PSA]}``)."""

    model_config = ConfigDict(extra="allow")
    name: str

    @field_validator("name")
    @classmethod
    def _known(cls, v: str) -> str:
        get_protocol(v)
        return v

    def keyword_grid(self) -> list[dict[str, Any]]:
        extra = dict(self.model_extra or {})
        axes = {k: (v if isinstance(v, list) else [v]) for k, v in extra.items()}
        keys = sorted(axes)
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(axes[k] for k in keys))]


class ExperimentConfig(BaseModel):
    """An experiment grid. See ``examples/quickstart.yaml`` for every key in use."""

    model_config = ConfigDict(extra="forbid")

    name: str = "experiment"
    dataset: str | dict[str, Any] = Field(description="A dataset name or seerbench JSONL path, or {name: ..., <options>}")
    binary_seed: int = Field(default=0, description="Seed of the binary view (distractor choice and option order).")
    out: str | None = None
    limit: int | None = Field(default=None, ge=1)
    seed: int = 0
    judge_models: list[str] = ["local"]
    agent_models: list[str] = ["local"]
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

    @field_validator("protocols", mode="before")
    @classmethod
    def _protocol_strings(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [{"name": p} if isinstance(p, str) else p for p in v]
        return v

    @field_validator("num_turns", "best_of_n")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if not v or any(x < 1 for x in v):
            raise ValueError("must be a non-empty list of integers >= 1")
        return v

    @classmethod
    def from_yaml(cls, path: str | Path) -> ExperimentConfig:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file {p} does not exist")
        try:
            raw = yaml.safe_load(p.read_text())
        except yaml.YAMLError as e:
            raise ConfigError(f"{p} is not valid YAML: {e}") from e
        if not isinstance(raw, dict):
            raise ConfigError(f"{p} must be a mapping of experiment keys")
        return cls.parse(raw, source=str(p))

    @classmethod
    def parse(cls, raw: dict[str, Any], source: str = "config") -> ExperimentConfig:
        try:
            return cls.model_validate(raw)
        except ValidationError as e:
            raise ConfigError(f"invalid {source}:\n{explain(e)}") from None

    def out_dir(self) -> Path:
        return Path(self.out or f"runs/{self.name}")

    def fingerprint(self) -> str:
        """Hash of everything that changes results (not out, limit, concurrency or name)."""
        d = self.model_dump(mode="json", exclude=set(NOT_IN_FINGERPRINT))
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def explain(e: ValidationError) -> str:
    """One line per problem: the offending key and what is allowed."""
    lines = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            parent = _section(err["loc"][:-1])
            allowed = sorted(parent.model_fields) if parent is not None else None
            msg = "unknown key" + (f"; allowed keys: {', '.join(allowed)}" if allowed else "")
        elif err["type"] == "literal_error":
            msg = f"{msg} (got {err.get('input')!r})"
        lines.append(f"  {loc}: {msg}")
    return "\n".join(lines)


def _section(loc: Sequence[int | str]) -> type[BaseModel] | None:
    """The config model at ``loc`` (e.g. ``("elicitation",)`` -> ElicitationSpec), for listing its keys."""
    cls: type[BaseModel] = ExperimentConfig
    for part in loc:
        f = cls.model_fields.get(str(part))
        ann = f.annotation if f is not None else None
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)):
            return None
        cls = ann
    return cls


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", s).strip("-") or "x"


@dataclass
class RunSpec:
    """One cell of the grid."""

    protocol: str
    kwargs: dict[str, Any]
    agent_model: str
    judge_model: str
    tools: tuple[str, ...]
    best_of_n: int
    protocol_dir: str = ""
    pair_dir: str = ""

    @property
    def key(self) -> str:
        return f"{self.protocol_dir}/{self.pair_dir}"


@dataclass
class RunResult:
    spec: RunSpec
    stats: dict[str, Any]
    n_done: int
    n_errors: int
    errors: list[str] = field(default_factory=list)


class Experiment:
    """Run a grid over questions. ``questions`` overrides the config's dataset (Python API)."""

    def __init__(self, config: ExperimentConfig, questions: Sequence[Question] | None = None, *, out: str | Path | None = None) -> None:
        self.config = config
        self.out = Path(out) if out is not None else config.out_dir()
        self._questions = list(questions) if questions is not None else None
        self.n_skipped = 0  # questions without exactly one true option, left out

    # ---- data ---------------------------------------------------------------------------------
    def questions(self) -> list[Question]:
        qs = self._questions if self._questions is not None else self._load_dataset()
        if not qs:
            raise DataError("the dataset is empty")
        usable = [q for q in qs if len(q.true_cases) == 1]
        self.n_skipped = len(qs) - len(usable)
        if not usable:
            raise DataError(
                "the dataset has no binary-compatible questions: the protocols need questions with exactly "
                "one true option (a binary view keeps it and one distractor)"
            )
        from seerbench.datasets import binary_view

        # Every question goes through the seeded binary view: K > 2 options become two, and the
        # true answer's position is shuffled even where the published order is biased.
        out = binary_view(usable, seed=self.config.binary_seed)
        ids = [q.id for q in out]
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
            raise DataError(f"duplicate question ids in the dataset: {dup}")
        return out[: self.config.limit] if self.config.limit else out

    def _load_dataset(self) -> list[Question]:
        from seerbench.datasets import load_dataset

        ds = self.config.dataset
        if isinstance(ds, str):
            return list(load_dataset(ds))
        opts = dict(ds)
        name = opts.pop("name", None) or opts.pop("path", None)
        if name is None:
            raise ConfigError("dataset: give a name (or path), e.g. {name: arithmetic, n: 20}")
        return list(load_dataset(name, **opts))

    # ---- grid ---------------------------------------------------------------------------------
    def grid(self) -> list[RunSpec]:
        c = self.config
        specs: list[RunSpec] = []
        for p in c.protocols:
            cls = get_protocol(p.name)
            for kw in p.keyword_grid():
                turns = [kw.pop("num_turns")] if "num_turns" in kw else (c.num_turns if cls.takes_turns else [1])
                agents = c.agent_models if cls.needs_agent else [c.agent_models[0]]
                tools = c.agent_tools if cls.needs_agent else [[]]
                bons = c.best_of_n if cls.needs_agent else [1]
                judges = c.judge_models if p.name != "BlindTrust" else ["trust"]
                for nt, a, j, t, b in itertools.product(turns, agents, judges, tools, bons):
                    kwargs = {**kw, "num_turns": int(nt)} if cls.takes_turns else dict(kw)
                    spec = RunSpec(p.name, kwargs, a, j, tuple(t), b)
                    proto = self._protocol(spec, dry=True)
                    spec.protocol_dir = proto.config_name()
                    agent_part = f"A_{_slug(a)}" + (f"_T_{'+'.join(t)}" if t else "") + (f"_bo{b}" if b > 1 else "")
                    spec.pair_dir = f"{agent_part}_J_{_slug(j)}" if cls.needs_agent else f"J_{_slug(j)}"
                    specs.append(spec)
        keys = [s.key for s in specs]
        if len(set(keys)) != len(keys):
            raise ConfigError(f"the grid has duplicate cells: {sorted({k for k in keys if keys.count(k) > 1})}")
        return specs

    def _judge(self, spec: RunSpec) -> Judge:
        c = self.config
        return ModelJudge(get_model(spec.judge_model), elicitation=c.elicitation.build(c.seed), prompts_dir=c.prompts_dir)

    def _agent(self, spec: RunSpec) -> Agent:
        c = self.config
        if spec.agent_model == REPLAY:
            from seerbench.datasets import ReplayAgent

            return ReplayAgent(show_snippets=False)
        g = c.agent_generation
        base = ModelAgent(
            get_model(spec.agent_model),
            tools=list(spec.tools),
            generation=GenerateConfig(temperature=g.temperature, max_tokens=g.max_tokens, seed=c.seed),
            max_words=g.max_words,
            prompts_dir=c.prompts_dir,
        )
        if spec.best_of_n > 1:
            return BestOfNAgent(base, spec.best_of_n, self._judge(spec))
        return base

    def _protocol(self, spec: RunSpec, *, dry: bool = False) -> Protocol:
        cls = PROTOCOLS[spec.protocol]
        if dry:
            judge: Any = None
            agent: Any = object() if cls.needs_agent else None
        else:
            judge = self._judge(spec) if spec.judge_model != "trust" else None
            agent = self._agent(spec) if cls.needs_agent else None
        try:
            kw = {"both_orders": self.config.both_orders, **spec.kwargs}  # a protocol entry may override
            return cls(judge, agent, seed=self.config.seed, **kw)
        except TypeError as e:
            raise ConfigError(f"protocol {spec.protocol}: bad keyword ({e}); keywords: num_turns, both_orders, judge_sees_source"
                              + (", condition" if spec.protocol == "EvidenceDebate" else "")) from None

    def check_models(self, specs: Sequence[RunSpec]) -> None:
        """Resolve every model spec of the grid (cheap: nothing is loaded or called), so an unknown
        one is reported before the output folder records this config."""
        for spec in specs:
            if spec.judge_model != "trust":
                get_model(spec.judge_model)
            if PROTOCOLS[spec.protocol].needs_agent and spec.agent_model != REPLAY:
                get_model(spec.agent_model)

    # ---- running ------------------------------------------------------------------------------
    def prepare_out(self, *, new: bool = False) -> Path:
        """Create the output folder or check that it holds results of the same config."""
        out = self.out
        if new and out.exists():
            i = 2
            while Path(f"{out}_{i}").exists():
                i += 1
            out = self.out = Path(f"{out}_{i}")
        meta = out / "experiment.json"
        fp = self.config.fingerprint()
        if meta.exists():
            old = json.loads(meta.read_text())
            if old.get("fingerprint") != fp:
                diff = _diff_keys(old.get("config", {}), self.config.model_dump(mode="json"))
                raise ConfigError(
                    f"{out} holds results of a different config (differs in: {', '.join(diff) or 'unknown'}); "
                    "mixing them would be wrong. Use --out NEW_DIR, or --new to write to a fresh sibling folder."
                )
        out.mkdir(parents=True, exist_ok=True)
        _atomic_write(meta, json.dumps(
            {"fingerprint": fp, "seerbench_version": __version__, "config": self.config.model_dump(mode="json")}, indent=2
        ))
        _atomic_write(out / "config.yaml", yaml.safe_dump(self.config.model_dump(mode="json"), sort_keys=False))
        return out

    async def arun(
        self, *, new: bool = False, progress: Callable[[RunSpec, int, int, int], None] | None = None,
        on_start: Callable[[RunSpec, int, int], None] | None = None,
    ) -> list[RunResult]:
        """Run every cell of the grid; finished questions are skipped. ``on_start(spec, done, total)``
        and ``progress(spec, done, total, errors)`` drive a progress display."""
        questions = self.questions()
        specs = self.grid()
        self.check_models(specs)
        out = self.prepare_out(new=new)
        results: list[RunResult] = []
        for spec in specs:
            results.append(await self._run_spec(out, spec, questions, progress, on_start))
        all_stats = {r.spec.key: r.stats for r in results}
        _atomic_write(out / "all_stats.json", json.dumps(all_stats, indent=2, allow_nan=True))
        return results

    def run(self, **kw: Any) -> list[RunResult]:
        return asyncio.run(self.arun(**kw))

    async def _run_spec(self, out: Path, spec: RunSpec, questions: list[Question],
                        progress: Callable[[RunSpec, int, int, int], None] | None,
                        on_start: Callable[[RunSpec, int, int], None] | None) -> RunResult:
        d = out / spec.protocol_dir / spec.pair_dir
        d.mkdir(parents=True, exist_ok=True)
        path = d / "results.jsonl"
        done = _load_done(path)
        todo = [q for q in questions if q.id not in done]
        total = len(questions)
        if on_start:
            on_start(spec, total - len(todo), total)
        protocol = self._protocol(spec)
        sem = asyncio.Semaphore(self.config.concurrency)
        errors: list[str] = []
        n_done = total - len(todo)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        meta = {"protocol": spec.protocol_dir, "agent": spec.agent_model if PROTOCOLS[spec.protocol].needs_agent else None,
                "judge": spec.judge_model, "tools": list(spec.tools), "best_of_n": spec.best_of_n}

        n_new = 0  # questions finished in this run of the cell

        async def one(q: Question) -> None:
            nonlocal n_done, n_new
            async with sem:
                try:
                    qr: QuestionRun = await protocol.run_question(q)
                except (AuthenticationError, UnknownModelError, ConfigError):
                    raise
                except (ModelUnavailableError, DataError) as e:
                    errors.append(f"{q.id}: {e}")
                    if progress:
                        progress(spec, n_done, total, len(errors))
                    if isinstance(e, ModelUnavailableError) and n_new == 0 and len(errors) >= self.config.concurrency:
                        # Nothing has worked yet and a full batch failed after retries: the model
                        # is down, and grinding through every question's retries would help no one.
                        raise ModelUnavailableError(
                            f"{spec.key}: the first {len(errors)} questions all failed, so the run stops "
                            f"(finished results are kept; rerun to resume). Last error: {e}"
                        ) from e
                    return
            line = result_line(qr, meta, eps=self.config.eps, policy=self.config.parse_failures)
            os.write(fd, (json.dumps(line, allow_nan=True) + "\n").encode())
            n_done += 1
            n_new += 1
            if progress:
                progress(spec, n_done, total, len(errors))

        try:
            await _gather_cancelling([one(q) for q in todo])
        finally:
            os.close(fd)
        lines = _finalise(path, [q.id for q in questions])
        stats = run_stats(lines, meta, eps=self.config.eps, policy=self.config.parse_failures, n_boot=self.config.n_boot,
                          seed=self.config.seed, scored=True)
        stats["n_errors"] = len(errors)
        _atomic_write(d / "stats.json", json.dumps(stats, indent=2, allow_nan=True))
        return RunResult(spec, stats, n_done, len(errors), errors)


async def _gather_cancelling(coros: list[Any]) -> None:
    """Like gather, but a fatal error cancels the siblings instead of leaving them running."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _load_done(path: Path) -> set[str]:
    """Ids of complete lines; a torn last line (killed mid-write) is cut off the file."""
    if not path.exists():
        return set()
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep != len(data):
        with open(path, "r+b") as f:
            f.truncate(keep)
    done: set[str] = set()
    for raw in data[:keep].splitlines():
        try:
            done.add(json.loads(raw)["question_id"])
        except (json.JSONDecodeError, KeyError):
            continue
    return done


def _finalise(path: Path, order: list[str]) -> list[dict[str, Any]]:
    """Rewrite results.jsonl atomically: one line per question, in dataset order, no duplicates."""
    by_id: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        try:
            qid = json.loads(raw)["question_id"]
        except (json.JSONDecodeError, KeyError):
            continue
        by_id.setdefault(qid, raw)
    rank = {q: i for i, q in enumerate(order)}
    ids = sorted(by_id, key=lambda q: (rank.get(q, len(rank)), q))
    _atomic_write(path, "".join(by_id[q] + "\n" for q in ids))
    return [json.loads(by_id[q]) for q in ids]


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _diff_keys(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return sorted(k for k in set(old) | set(new) if k not in NOT_IN_FINGERPRINT and old.get(k) != new.get(k))

