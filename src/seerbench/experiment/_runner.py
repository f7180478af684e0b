"""The grid of an experiment and the async runner over it: resume, growth, planning, replay."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from seerbench._lock import command_line, lock_folder
from seerbench._version import __version__
from seerbench.agents import Agent, BestOfNAgent, ModelAgent
from seerbench.errors import ConfigError, naming
from seerbench.experiment._cells import RunResult, RunSpec
from seerbench.experiment._components import Entry, build, entry_code, entry_label
from seerbench.experiment._config import _PATH_KEYS, REPLAY, Debater, ExperimentConfig, _hash
from seerbench.experiment._executor import Executor, LocalExecutor
from seerbench.experiment._files import (
    _atomic_write,
    _diff_keys,
    _gather_cancelling,
    _group,
    _legacy_fingerprint,
    _load_done,
    _records,
)
from seerbench.experiment._inspect import CountingBackend, RecordingModel
from seerbench.experiment._questions import QuestionStore
from seerbench.judges import Judge, ModelJudge
from seerbench.models import (
    USAGE_LOG,
    GenerateConfig,
    Model,
    UsageLog,
    cache_scope,
    default_tracker,
    get_model,
)
from seerbench.prompts import check_prompts_dir, template_hashes
from seerbench.protocols import PROTOCOLS, OversightProtocol, get_protocol
from seerbench.provenance import code_files, describe_changes, environment
from seerbench.tools import get_tools
from seerbench.types import Question


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", s).strip("-") or "x"


def _name_hidden_keywords(specs: Sequence[RunSpec]) -> None:
    """One protocol entry's cells: where keyword values that vary in the entry leave two cells with
    the same folder (a user protocol whose ``_name_parts`` does not show them), every cell of the
    entry gets ``_<keyword>-<value>`` for those keywords. Decided by the entry alone, so a cell's
    folder does not depend on the rest of the grid."""
    first: dict[str, RunSpec] = {}
    hidden: set[str] = set()
    for s in specs:
        other = first.setdefault(s.key, s)
        if other is not s:
            hidden.update(k for k, v in s.kwargs.items() if k != "num_turns" and v != other.kwargs.get(k))
    for s in specs:
        s.protocol_dir += "".join(f"_{k}-{_slug(str(s.kwargs[k]))}" for k in sorted(hidden))


@dataclass
class CellPlan:
    """What running one cell would cost (``seerbench run --dry-run``): questions still to run and
    the model calls and tokens they are expected to take, before any cache hit."""

    spec: RunSpec
    n_questions: int
    n_todo: int
    calls: float
    prompt_tokens: float
    completion_tokens: float
    cost: float | None


ModelFactory = Callable[[str, str], Model]  # (spec, role 'judge' | 'agent') -> Model


def default_model_factory(spec: str, role: str) -> Model:
    """The model of a spec, whatever the role (:func:`seerbench.models.get_model`)."""
    return get_model(spec)


def _rescore_hint(problems: Sequence[str], out: Path) -> str:
    """When only scoring settings differ, say that stats rescores the stored results."""
    scoring = {"eps", "parse_failures"}
    diffs = [set(p.partition("differs in: ")[2].rstrip(")").split(", ")) for p in problems]
    if not diffs or not all(d and d <= scoring for d in diffs):
        return ""
    return (
        f" eps and parse_failures only change scoring: `seerbench stats {out} --eps X --parse-failures half|exclude` "
        "rescores the stored results without a model call."
    )


class Experiment:
    """Run a grid over questions. ``questions`` overrides the config's dataset (Python API)::

    cfg = ExperimentConfig.from_yaml("examples/quickstart.yaml")
    results = Experiment(cfg).run()          # list[RunResult], one per grid cell
    """

    def __init__(
        self,
        config: ExperimentConfig,
        questions: Sequence[Question] | None = None,
        *,
        out: str | Path | None = None,
        executor: Executor | None = None,
    ) -> None:
        self.config = config
        #: Where the questions run: :class:`LocalExecutor` (this process) unless given, e.g.
        #: ``RayExecutor(address=...)``. The results files are the same either way.
        self.executor: Executor = executor if executor is not None else LocalExecutor()
        self.out = Path(out) if out is not None else config.out_dir()
        self._made_out = (
            False  # whether prepare_out made the output folder (removed again if the run cannot start)
        )
        self._questions = list(questions) if questions is not None else None
        self._loaded: QuestionStore | None = None
        self.n_skipped = 0  # questions without exactly one true option, left out
        self.model_factory: ModelFactory = default_model_factory

    # ---- data ---------------------------------------------------------------------------------
    def questions(self) -> QuestionStore:
        """The run's questions in dataset order: those with exactly one true option (the others
        counted in ``n_skipped``), each through the seeded binary view (K > 2 options become two,
        and the true answer's position is shuffled even where the published order is biased),
        the first ``limit``. A sequence read from disk on demand, so a large dataset is never
        held whole (see :class:`QuestionStore`)."""
        if self._loaded is None:
            qs = self._questions if self._questions is not None else self._load_dataset()
            self._loaded = QuestionStore.build(
                qs, binary_seed=self.config.binary_seed, limit=self.config.limit
            )
            self.n_skipped = self._loaded.n_skipped
        return self._loaded

    def _load_dataset(self) -> Iterable[Question]:
        from seerbench.datasets import (
            iter_dataset as load_dataset,  # one question at a time where it can
        )
        from seerbench.datasets import list_datasets

        dataset_names = {d.name for d in list_datasets()}

        def name_or_path(ref: str) -> str:
            """A dataset's name as it is; a file relative to the config's folder. A word that is
            neither (a misspelt name) stays as written, to be refused as an unknown dataset."""
            if ref in dataset_names:
                return ref
            path = self.config.resolve(ref)
            return str(path) if path.exists() or Path(ref).suffix or "/" in ref or "\\" in ref else ref

        ds = self.config.dataset
        if isinstance(ds, str):
            return load_dataset(name_or_path(ds))
        opts = dict(ds)
        name = opts.pop("name", None) or opts.pop("path", None)
        if name is None:
            raise ConfigError("dataset: give a name (or path), e.g. {name: arithmetic, n: 20}")
        name = name_or_path(name)
        for k in _PATH_KEYS:
            if isinstance(opts.get(k), str):
                opts[k] = str(self.config.resolve(opts[k]))
        return load_dataset(name, **opts)

    # ---- grid ---------------------------------------------------------------------------------
    def grid(self) -> list[RunSpec]:
        c = self.config
        specs: list[RunSpec] = []
        for p in c.protocols:
            cls = get_protocol(p.name)
            start = len(specs)
            for kw in p.keyword_grid():
                turns = (
                    [kw.pop("num_turns")] if "num_turns" in kw else (c.num_turns if cls.takes_turns else [1])
                )
                agents = c.agent_models if cls.needs_agent else [c.agent_models[0]]
                tools = c.agent_tools if cls.needs_agent else [[]]
                bons = c.best_of_n if cls.needs_agent else [1]
                judges: list[Entry | None] = list(c.judge_models) if cls.fixed_judge is None else [None]
                debaters = p.debaters()
                if debaters is not None:
                    specs.extend(self._cross_play(p.name, kw, turns, judges, debaters))
                    continue
                for nt, a, j, t, b in itertools.product(turns, agents, judges, tools, bons):
                    kwargs = {**kw, "num_turns": int(nt)} if cls.takes_turns else dict(kw)
                    j_label = cls.fixed_judge if j is None else entry_label(j)
                    spec = RunSpec(
                        p.name,
                        kwargs,
                        entry_label(a),
                        j_label or "",
                        tuple(t),
                        b,
                        agent_entry=a,
                        judge_entry=j,
                    )
                    a, j = spec.agent_model, spec.judge_model
                    proto = self._protocol(spec, dry=True)
                    spec.protocol_dir = proto.config_name()
                    agent_part = (
                        f"A_{_slug(a)}" + (f"_T_{'+'.join(t)}" if t else "") + (f"_bo{b}" if b > 1 else "")
                    )
                    spec.pair_dir = f"{agent_part}_J_{_slug(j)}" if cls.needs_agent else f"J_{_slug(j)}"
                    specs.append(spec)
            _name_hidden_keywords(specs[start:])
        keys = [s.key for s in specs]
        if len(set(keys)) != len(keys):
            raise ConfigError(
                f"the grid has duplicate cells: {sorted({k for k in keys if keys.count(k) > 1})}"
            )
        return specs

    def _cross_play(
        self,
        name: str,
        kw: dict[str, Any],
        turns: Sequence[int],
        judges: Sequence[Entry | None],
        debaters: Sequence[Debater],
    ) -> list[RunSpec]:
        """A cross-play entry's cells: every ordered pair of different debaters (the agent first,
        the adversary second), every judge and number of turns. Each cell runs both answer cases, so
        each debater argues both sides of every question against each other one."""
        cls = PROTOCOLS[name]
        out = []
        for nt, j, a, d in itertools.product(turns, judges, debaters, debaters):
            if a == d:
                continue
            kwargs = {**kw, "num_turns": int(nt)} if cls.takes_turns else dict(kw)
            spec = RunSpec(
                name,
                kwargs,
                a.label(),
                (cls.fixed_judge if j is None else entry_label(j)) or "",
                a.tools,
                a.best_of_n,
                agent_entry=a.agent,
                judge_entry=j,
                adversary=d,
            )
            spec.protocol_dir = self._protocol(spec, dry=True).config_name()
            spec.pair_dir = f"A_{_slug(a.label())}_vs_{_slug(d.label())}_J_{_slug(spec.judge_model)}"
            out.append(spec)
        return out

    def prompt_hashes(self) -> dict[str, str]:
        return template_hashes(self.config.resolved_prompts_dir())

    def cell_identity(self, spec: RunSpec) -> dict[str, Any]:
        """Everything that decides a cell's results line for a given question: two runs of a cell
        with the same identity may share a results file. (The question itself is checked per line.)"""
        c = self.config
        cls = PROTOCOLS[spec.protocol]
        base = c._base_dir
        ident: dict[str, Any] = {
            "protocol": spec.protocol,
            "keywords": {"both_orders": c.both_orders, **spec.kwargs},
            "judge": spec.judge_model if spec.judge_entry is None else spec.judge_entry,
            "seed": c.seed,
            "binary_seed": c.binary_seed,
            "eps": c.eps,
            "parse_failures": c.parse_failures,
            "prompts": self.prompt_hashes(),
        }
        code = {}
        files = code_files(cls)
        if files:  # a user's protocol: its source (and the user modules it imports) decide the results
            code[f"{cls.__module__}:{cls.__name__}"] = files
        if spec.judge_entry is not None:
            ident["elicitation"] = c.elicitation.model_dump(mode="json")
            code.update(entry_code(spec.judge_entry, "judge", base))
        if cls.needs_agent:
            ident.update(agent=spec.agent_entry, tools=list(spec.tools), best_of_n=spec.best_of_n)
            if spec.agent_entry != REPLAY:
                ident["agent_generation"] = c.agent_generation.model_dump(mode="json")
            if spec.agent_entry is not None:
                code.update(entry_code(spec.agent_entry, "agent", base))
        if spec.adversary is not None:  # cross-play only: self-play cells keep their identity
            ident["adversary"] = spec.adversary.identity()
            code.update(entry_code(spec.adversary.agent, "agent", base))
        if code:
            ident["code"] = code
        ident["models"] = self.cell_models(spec)  # each model's backend, version, file hash, code
        if c.cache_scope:
            ident["cache_scope"] = c.cache_scope
        return ident

    def cell_models(self, spec: RunSpec) -> dict[str, dict[str, Any]]:
        """Model spec -> :attr:`Model.provenance` of every model the cell's protocol is built with
        (what the model factory gives it: its judge's and agent's, and those of class entries),
        the values its cache keys hold too. Worked out once per cell."""
        memo: dict[str, dict[str, dict[str, Any]]] = self.__dict__.setdefault("_cell_models", {})
        engines: set[str] = self.__dict__.setdefault("_backend_modules", set())
        backends: dict[str, Any] = self.__dict__.setdefault("_backends", {})
        if spec.key not in memo:
            seen: dict[str, dict[str, Any]] = {}
            factory = self.model_factory

            def recording(s: str, role: str) -> Model:
                m = factory(s, role)
                seen[s] = m.provenance
                backends[s] = m.backend
                engines.add(type(m.backend).__module__)
                return m

            self.model_factory = recording
            try:
                self._protocol(spec)
            finally:
                self.model_factory = factory
            memo[spec.key] = dict(sorted(seen.items()))
        return memo[spec.key]

    def environment(self, specs: Sequence[RunSpec]) -> dict[str, Any]:
        """What a run records besides the config (:func:`seerbench.provenance.environment`): the
        host's Python, seerbench's, the engines' and the user's package versions, and the git
        revision of the user's code."""
        modules: set[str] = set()
        for s in specs:
            for ref in self.cell_identity(s).get("code", {}):
                modules.add(ref.partition(":")[0])
        backends: set[str] = self.__dict__.get("_backend_modules", set())
        folders = [self.config._base_dir] if self.config._base_dir is not None else []
        return environment(code_modules=modules, backend_modules=backends, folders=folders)

    def _judge(self, spec: RunSpec) -> Judge:
        assert spec.judge_entry is not None
        return self.make_judge(spec.judge_entry)

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

    def _agent(self, spec: RunSpec) -> Agent:
        assert spec.agent_entry is not None
        return self._side(spec, spec.agent_entry, spec.agent_model, spec.tools, spec.best_of_n)

    def _side(self, spec: RunSpec, entry: Entry, label: str, tools: Sequence[str], n: int) -> Agent:
        base = self.make_agent(entry, tools)
        if n > 1:
            if not isinstance(base, ModelAgent):
                raise ConfigError(
                    f"cell {spec.key}: best_of_n needs a model agent (a model spec), not {label}"
                )
            return BestOfNAgent(base, n, self._judge(spec))
        return base

    def _protocol(self, spec: RunSpec, *, dry: bool = False) -> OversightProtocol:
        cls = PROTOCOLS[spec.protocol]
        adv: Any = None
        if dry:
            judge: Any = None
            agent: Any = object() if cls.needs_agent else None
            adv = object() if spec.adversary is not None else None
        else:
            judge = self._judge(spec) if spec.judge_entry is not None else None
            agent = self._agent(spec) if cls.needs_agent else None
            if spec.adversary is not None:
                d = spec.adversary
                adv = self._side(spec, d.agent, d.label(), d.tools, d.best_of_n)
        try:
            kw = {"both_orders": self.config.both_orders, **spec.kwargs}  # a protocol entry may override
            if adv is not None:
                kw["adversary"] = adv
            return cls(judge, agent, seed=self.config.seed, **kw)
        except TypeError as e:
            known = ", ".join(("num_turns", "both_orders", "judge_sees_source", *cls.keywords))
            raise ConfigError(f"protocol {spec.protocol}: bad keyword ({e}); keywords: {known}") from None

    def check(self, specs: Sequence[RunSpec] | None = None) -> list[RunSpec]:
        """Everything that can be checked before a model is called or a file written: model specs
        (resolved, nothing loaded), tools, prompts_dir, and whether the data can give what each cell
        asks for. Raises :class:`ConfigError` naming the cell and the fix."""
        specs = list(specs) if specs is not None else self.grid()
        if self.config.prompts_dir:
            check_prompts_dir(self.config.resolved_prompts_dir())  # type: ignore[arg-type]
        questions = self.questions()
        for spec in specs:
            cls = PROTOCOLS[spec.protocol]
            if isinstance(spec.judge_entry, str):
                get_model(spec.judge_entry)
            if cls.needs_agent and isinstance(spec.agent_entry, str) and spec.agent_entry != REPLAY:
                get_model(spec.agent_entry)
                get_tools(list(spec.tools))
            elif cls.needs_agent and spec.tools:
                raise ConfigError(
                    f"cell {spec.key}: tools are for model agents; {spec.agent_model} takes none "
                    "(use agent_tools: [[]] with this agent)"
                )
            d = spec.adversary
            if d is not None and isinstance(d.agent, str) and d.agent != REPLAY:
                get_model(d.agent)
                get_tools(list(d.tools))
            elif d is not None and d.tools:
                raise ConfigError(
                    f"cell {spec.key}: tools are for model agents; debater {d.label()} takes none"
                )
            try:
                proto = self._protocol(
                    spec
                )  # built for real (models load lazily): entries and capabilities checked
                proto.check_capabilities()
            except ConfigError as e:
                raise ConfigError(f"cell {spec.key}: {e}") from None
            if proto.judge_sees_source and questions.n_no_source:
                raise ConfigError(
                    f"cell {spec.key}: the judge is to see the passage (judge_sees_source, or a condition starting with P), "
                    f"but {questions.n_no_source} of {len(questions)} questions have no source_text (e.g. {', '.join(questions.no_source)}). "
                    "Use a dataset with passages (e.g. single_turn_debate with quality_path), or a condition without P "
                    "(S, SA) / judge_sees_source: false."
                )
        return specs

    def check_models(self, specs: Sequence[RunSpec]) -> None:
        """Kept for callers of 0.1: see :meth:`check`."""
        self.check(specs)

    # ---- the output folder --------------------------------------------------------------------
    def _conflicts(self, out: Path, specs: Sequence[RunSpec]) -> list[str]:
        """Why ``out`` cannot take this grid's results: cells whose recorded identity differs."""
        meta_path = out / "experiment.json"
        if not meta_path.exists():
            return []
        from seerbench.runs import read_experiment_json

        old = read_experiment_json(meta_path)
        if "cells" not in old:  # written by seerbench 0.1: one fingerprint for the whole config
            if old.get("fingerprint") != _legacy_fingerprint(self.config):
                diff = _diff_keys(old.get("config", {}), self.config.model_dump(mode="json"))
                return [f"the whole folder (differs in: {', '.join(diff) or 'unknown'})"]
            return []
        problems = []
        for spec in specs:
            cj = out / spec.protocol_dir / spec.pair_dir / "cell.json"
            if not cj.exists():
                continue
            try:
                rec = json.loads(cj.read_text())
            except (OSError, json.JSONDecodeError):
                problems.append(f"{spec.key} (its cell.json is unreadable)")
                continue
            ident = self.cell_identity(spec)
            if rec.get("fingerprint") != _hash(ident):
                old_ident = rec.get("identity", {})
                diff = _diff_keys(
                    {k: v for k, v in old_ident.items() if k not in ("code", "models")},
                    {k: v for k, v in ident.items() if k not in ("code", "models")},
                    nested=True,
                ) + describe_changes(old_ident, ident)
                problems.append(f"{spec.key} (differs in: {', '.join(diff) or 'unknown'})")
        return problems

    def _question_conflicts(self, out: Path, specs: Sequence[RunSpec]) -> list[str]:
        """Finished questions whose stored content differs from the dataset's question of that id."""
        store = self.questions()
        problems = []
        for spec in specs:
            path = out / spec.protocol_dir / spec.pair_dir / "results.jsonl"
            if not path.exists():
                continue
            bad = []
            for ln in _records(path):  # one line at a time
                i = store.position.get(ln["question_id"])
                if i is not None and ln.get("question") != store.as_json(i):
                    bad.append(ln["question_id"])
            if bad:
                problems.append(
                    f"{spec.key}: questions {', '.join(bad[:3])}{' ...' if len(bad) > 3 else ''} differ from the dataset's"
                )
        return problems

    def choose_out(self, specs: Sequence[RunSpec], *, new: bool = False) -> Path:
        """The folder this grid writes to: ``self.out`` when its results can be extended by this
        grid; with ``new``, the first of ``out``, ``out_2``, ``out_3``... that can (so a rerun with
        ``--new`` resumes the folder it made last time)."""
        candidates = [self.out]
        if new:
            i = 2
            while Path(f"{self.out}_{i}").exists():
                candidates.append(Path(f"{self.out}_{i}"))
                i += 1
            candidates.append(Path(f"{self.out}_{i}"))
        for cand in candidates:
            problems = self._conflicts(cand, specs) or self._question_conflicts(cand, specs)
            if not problems:
                return cand
            if not new:
                raise ConfigError(
                    f"{cand} holds results this config would change: {_group(problems)}. Mixing them would be wrong: "
                    "use --out NEW_DIR, or --new to write to (or resume) a fresh sibling folder. Adding cells or questions is fine."
                    + _rescore_hint(problems, cand)
                )
        raise AssertionError("unreachable: the last candidate does not exist")

    def prepare_out(self, *, new: bool = False, specs: Sequence[RunSpec] | None = None) -> Path:
        """Create the output folder (or check that it can take this grid's results) and record the
        config, the prompt hashes and each cell's identity."""
        specs = list(specs) if specs is not None else self.grid()
        out = self.out = self.choose_out(specs, new=new)
        self._made_out = not out.exists()
        prompts = self.prompt_hashes()
        cells = {s.key: _hash(self.cell_identity(s)) for s in specs}
        env = self.environment(specs)
        try:
            out.mkdir(parents=True, exist_ok=True)
            old_cells: dict[str, str] = {}
            meta_path = out / "experiment.json"
            if meta_path.exists():
                from seerbench.runs import read_experiment_json

                old_cells = dict(read_experiment_json(meta_path).get("cells") or {})
            _atomic_write(
                meta_path,
                json.dumps(
                    {
                        "fingerprint": self.config.fingerprint(),
                        "seerbench_version": __version__,
                        "environment": env,
                        "config": self.config.model_dump(mode="json"),
                        "prompts": prompts,
                        "config_dir": str(self.config._base_dir.resolve()) if self.config._base_dir else None,
                        "cells": {**old_cells, **cells},  # cells of earlier, smaller grids stay listed
                    },
                    indent=2,
                ),
            )
            _atomic_write(
                out / "config.yaml", yaml.safe_dump(self.config.model_dump(mode="json"), sort_keys=False)
            )
            for s in specs:
                d = out / s.protocol_dir / s.pair_dir
                d.mkdir(parents=True, exist_ok=True)
                ident = self.cell_identity(s)
                _atomic_write(
                    d / "cell.json",
                    json.dumps({"cell": s.key, "fingerprint": _hash(ident), "identity": ident}, indent=2),
                )
        except OSError as e:
            raise ConfigError(
                f"cannot write the output folder {out}: {e.strerror or e} ({e.filename or out})"
            ) from None
        return out

    # ---- running ------------------------------------------------------------------------------
    async def arun(
        self,
        *,
        new: bool = False,
        progress: Callable[[RunSpec, int, int, int], None] | None = None,
        on_start: Callable[[RunSpec, int, int], None] | None = None,
    ) -> list[RunResult]:
        """Run every cell of the grid on ``self.executor``; finished questions are skipped.
        ``on_start(spec, done, total)`` and ``progress(spec, done, total, errors)`` drive a
        progress display."""
        specs = self.check()
        questions = self.questions()
        chosen = self.choose_out(specs, new=new)
        made = not chosen.exists()
        # the folder is this process's alone for the whole run: a second run on it is refused
        with lock_folder(chosen, command_line()):
            out = self.prepare_out(new=new, specs=specs)  # checked again, now under the lock
            self._made_out = made
            if out != chosen:
                raise ConfigError(f"{chosen} changed while this run started; run the command again")
            for b in self.__dict__.get("_backends", {}).values():
                getattr(b, "served", set()).clear()  # what servers report in this run's responses
            try:
                # every model event is appended to the folder's usage log as it happens (a killed
                # run loses none); usage.json is its summary, rewritten when the run ends
                with (
                    UsageLog(out / USAGE_LOG).attached(default_tracker()),
                    cache_scope(self.config.cache_scope),
                ):
                    results = await self.executor.run_cells(self, out, specs, questions, progress, on_start)
            except ConfigError:
                # the executor refused to start (e.g. a Ray cluster that cannot be reached): a folder
                # this run made holds no result, so leave none behind for a corrected config to trip on
                if self._made_out and not any(out.rglob("results.jsonl")):
                    shutil.rmtree(out, ignore_errors=True)
                raise
            finally:
                if out.is_dir():
                    self._record_served(out)
            all_stats = {r.spec.key: r.stats for r in results}
            with naming(out / "all_stats.json"):
                _atomic_write(out / "all_stats.json", json.dumps(all_stats, indent=2, allow_nan=True))
        return results

    def run(self, **kw: Any) -> list[RunResult]:
        return asyncio.run(self.arun(**kw))

    def _record_served(self, out: Path) -> None:
        """Add the model names servers reported in this run's responses to experiment.json's
        environment (``served_models``: model spec -> names)."""
        served = {
            s: sorted(b.served)
            for s, b in self.__dict__.get("_backends", {}).items()
            if getattr(b, "served", None)
        }
        meta_path = out / "experiment.json"
        if not served or not meta_path.is_file():
            return
        try:
            meta = json.loads(meta_path.read_text())
            meta.setdefault("environment", {})["served_models"] = served
            _atomic_write(meta_path, json.dumps(meta, indent=2))
        except (OSError, ValueError):  # a record, not the run: never hide the run's own outcome
            pass

    # ---- planning and inspection --------------------------------------------------------------
    def plan(self, *, sample: int = 3) -> list[CellPlan]:
        """Per cell: questions to run and the model calls and tokens they should take (before cache
        hits), found by running the cell's protocol on up to ``sample`` questions against a model
        that answers instantly and counts. Prompt tokens are estimated as characters / 4;
        completion tokens are the ``max_tokens`` bound of each call. Nothing is written."""
        from seerbench.models import UsageTracker

        specs = self.check()
        questions = self.questions()
        tracker = default_tracker()
        out = self.out
        plans = []
        for spec in specs:
            path = out / spec.protocol_dir / spec.pair_dir / "results.jsonl"
            done = (
                _load_done(path, truncate=False)
                if path.exists() and not self._conflicts(out, [spec])
                else set()
            )
            todo = questions.subset([i for i, qid in enumerate(questions.ids) if qid not in done])
            counter = UsageTracker(tracker.prices)
            factory = self.model_factory
            self.model_factory = lambda s, role, _c=counter, _f=factory: Model(  # type: ignore[misc]
                s, CountingBackend(_f(s, role).backend), cache=False, usage=_c
            )
            try:
                proto = self._protocol(spec)
                probe = todo[:sample] or questions[:sample]
                asyncio.run(_gather_cancelling([proto.run_question(q) for q in probe]))
            finally:
                self.model_factory = factory
            t = counter.totals()
            scale = len(todo) / len(probe) if probe else 0.0
            plans.append(
                CellPlan(
                    spec,
                    len(questions),
                    len(todo),
                    t.calls * scale,
                    t.prompt_tokens * scale,
                    t.completion_tokens * scale,
                    None if t.cost is None else t.cost * scale,
                )
            )
        return plans

    async def replay_prompts(
        self, cell_key: str, question_id: str, *, allow_calls: bool = False, run_dir: Path | None = None
    ) -> list[dict[str, Any]]:
        """Every model request a cell made for one question, rebuilt by running the cell again on
        that question with the same config: the disk cache answers every call, so the prompts are
        exactly those of the run. With ``run_dir``, a cell whose identity changed since that run
        (edited code, another model file) is refused, naming what changed. With ``allow_calls=False`` a cache miss raises instead of calling
        the model (the cache was cleared, or the run used another machine's cache)."""
        specs = {s.key: s for s in self.grid()}
        spec = specs.get(cell_key)
        if spec is None:
            raise ConfigError(f"no cell {cell_key!r} in this config's grid; cells: {', '.join(specs)}")
        q = self.questions().get(question_id)
        if q is None:
            raise ConfigError(f"no question {question_id!r} in this config's dataset")
        changed = self._conflicts(run_dir, [spec]) if run_dir is not None else []
        if changed:  # rerun now, the cell would not make the run's requests
            raise ConfigError(
                f"the prompts of {run_dir} cannot be rebuilt: what made the cell changed since the run: "
                f"{_group(changed)}. Use --no-prompts, or restore what changed"
            )
        log: list[dict[str, Any]] = []
        factory = self.model_factory
        self.model_factory = lambda s, role: RecordingModel(get_model(s), role, log, allow_calls)
        try:
            with cache_scope(self.config.cache_scope):  # the run's cache entries
                await self._protocol(spec).run_question(q)
        finally:
            self.model_factory = factory
        return log
