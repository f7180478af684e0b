"""The async runner over an experiment's grid: resume, growth, planning, replay. The pieces it
composes live in their own modules: the questions (``_dataset``), the grid (``_grid``), building a
cell's judge, agent and protocol through a model factory (``_build``), a cell's identity
(``_identity``), the output folder (``_folder``) and the stand-in models of planning and replay
(``_inspect``)."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seerbench._lock import command_line, lock_folder
from seerbench.agents import Agent
from seerbench.errors import ConfigError, UnknownModelError, naming
from seerbench.experiment._build import CellBuilder, ModelFactory, default_model_factory
from seerbench.experiment._cells import RunResult, RunSpec
from seerbench.experiment._components import Entry
from seerbench.experiment._config import REPLAY, ExperimentConfig, _hash
from seerbench.experiment._dataset import load_dataset, load_questions
from seerbench.experiment._executor import Executor, LocalExecutor
from seerbench.experiment._files import _gather_cancelling, _group
from seerbench.experiment._folder import cell_conflicts, choose_out, question_conflicts, write_metadata
from seerbench.experiment._grid import _slug, build_grid
from seerbench.experiment._identity import cell_identity, prompt_hashes
from seerbench.experiment._inspect import Repeats, counting_factory, recording_factory, stand_in_factory
from seerbench.experiment._questions import QuestionStore
from seerbench.experiment._stopping import check_sequential, run_sequential
from seerbench.judges import Judge
from seerbench.models import USAGE_LOG, Model, UsageLog, UsageTracker, cache_scope, default_tracker, get_model
from seerbench.prompts import check_prompts_dir
from seerbench.protocols import PROTOCOLS, OversightProtocol
from seerbench.provenance import environment
from seerbench.store import atomic_write_text, done_keys
from seerbench.tools import get_tools
from seerbench.types import Question


@dataclass
class CellPlan:
    """What running one cell would cost (``seerbench run --dry-run``): questions still to run and
    the model calls and tokens they are expected to take, before any cache hit; of those, the
    calls (and their tokens) that repeat a request of this or an earlier cell exactly, which the
    disk cache will answer in the run (``repeat_calls``, ``repeat_tokens``)."""

    spec: RunSpec
    n_questions: int
    n_todo: int
    calls: float
    prompt_tokens: float
    completion_tokens: float
    cost: float | None
    repeat_calls: float = 0.0
    repeat_tokens: float = 0.0


class Experiment:
    """Run a grid over questions. ``questions`` overrides the config's dataset (Python API)::

    cfg = ExperimentConfig.from_yaml("examples/quickstart.yaml")
    results = Experiment(cfg).run()          # list[RunResult], one per grid cell

    ``model_factory(spec, role)`` makes every model a cell uses (judges', agents', a protocol's
    own); planning and prompt replay wrap it, never replace it.
    """

    def __init__(
        self,
        config: ExperimentConfig,
        questions: Sequence[Question] | None = None,
        *,
        out: str | Path | None = None,
        executor: Executor | None = None,
        model_factory: ModelFactory | None = None,
    ) -> None:
        self.config = config
        #: Where the questions run: :class:`LocalExecutor` (this process) unless given, e.g.
        #: ``RayExecutor(address=...)``. The results files are the same either way.
        self.executor: Executor = executor if executor is not None else LocalExecutor()
        self.out = Path(out) if out is not None else config.out_dir()
        self._made_out = False  # whether prepare_out made the output folder (removed if the run cannot start)
        self._questions = list(questions) if questions is not None else None
        self._loaded: QuestionStore | None = None
        self.n_skipped = 0  # questions without exactly one true option, left out
        self.model_factory: ModelFactory = model_factory or default_model_factory

    def builder(self, model_factory: ModelFactory | None = None) -> CellBuilder:
        """Builds cells' judges, agents and protocols with ``model_factory`` (default: this
        experiment's)."""
        return CellBuilder(self.config, model_factory or self.model_factory)

    # ---- data ---------------------------------------------------------------------------------
    def questions(self) -> QuestionStore:
        """The run's questions in dataset order: those with exactly one true option (the others
        counted in ``n_skipped``), each through the seeded binary view (K > 2 options become two,
        and the true answer's position is shuffled even where the published order is biased),
        the first ``limit``. A sequence read from disk on demand, so a large dataset is never
        held whole (see :class:`QuestionStore`)."""
        if self._loaded is None:
            self._loaded = load_questions(self.config, self._questions)
            self.n_skipped = self._loaded.n_skipped
        return self._loaded

    def _load_dataset(self) -> Any:
        return load_dataset(self.config)

    # ---- grid and identity --------------------------------------------------------------------
    def grid(self) -> list[RunSpec]:
        """The cells, named from the protocol classes and the config (see :func:`build_grid`)."""
        stand_ins = CellBuilder(self.config, stand_in_factory())
        return build_grid(self.config, instance_name=lambda s: stand_ins.protocol(s).config_name())

    def prompt_hashes(self) -> dict[str, str]:
        return prompt_hashes(self.config)

    def cell_identity(self, spec: RunSpec) -> dict[str, Any]:
        """Everything that decides a cell's results line for a given question (see
        :func:`seerbench.experiment._identity.cell_identity`), the provenance of its models
        included (:meth:`cell_models`)."""
        return cell_identity(self.config, spec, self.cell_models(spec))

    def cell_models(self, spec: RunSpec) -> dict[str, dict[str, Any]]:
        """Model spec -> :attr:`Model.provenance` of every model the cell's protocol is built with
        (what the model factory gives it: its judge's and agent's, a protocol's own, and those of
        class entries), the values its cache keys hold too. Worked out once per cell."""
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

            self.builder(recording).protocol(spec)
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

    # ---- building -----------------------------------------------------------------------------
    def make_judge(self, entry: Entry) -> Judge:
        return self.builder().make_judge(entry)

    def make_agent(self, entry: Entry, tools: Sequence[str] = ()) -> Agent:
        return self.builder().make_agent(entry, tools)

    def _judge(self, spec: RunSpec) -> Judge:
        return self.builder().judge(spec)

    def _agent(self, spec: RunSpec) -> Agent:
        return self.builder().agent(spec)

    def _protocol(self, spec: RunSpec) -> OversightProtocol:
        return self.builder().protocol(spec)

    def check(self, specs: Sequence[RunSpec] | None = None) -> list[RunSpec]:
        """Everything that can be checked before a model is called or a file written: model specs
        (resolved, nothing loaded; a protocol's own models too), tools, prompts_dir, and whether
        the data can give what each cell asks for. Raises :class:`ConfigError` naming the cell and
        the fix."""
        specs = list(specs) if specs is not None else self.grid()
        if self.config.prompts_dir:
            check_prompts_dir(self.config.resolved_prompts_dir())  # type: ignore[arg-type]
        questions = self.questions()
        builder = self.builder()
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
                # built for real (models load lazily; every spec resolved): entries and capabilities
                proto = builder.protocol(spec)
                proto.check_capabilities()
            except (ConfigError, UnknownModelError) as e:  # a protocol's own model spec, say
                raise ConfigError(f"cell {spec.key}: {e}") from None
            if proto.judge_sees_source and questions.n_no_source:
                raise ConfigError(
                    f"cell {spec.key}: the judge is to see the passage (judge_sees_source, or a condition "
                    f"starting with P), but {questions.n_no_source} of {len(questions)} questions have no "
                    f"source_text (e.g. {', '.join(questions.no_source)}). Use a dataset with passages "
                    "(e.g. single_turn_debate with quality_path), or a condition without P "
                    "(S, SA) / judge_sees_source: false."
                )
        check_sequential(self, specs)
        return specs

    def check_models(self, specs: Sequence[RunSpec]) -> None:
        """Kept for callers of 0.1: see :meth:`check`."""
        self.check(specs)

    # ---- the output folder --------------------------------------------------------------------
    def _conflicts(self, out: Path, specs: Sequence[RunSpec]) -> list[str]:
        return cell_conflicts(self.config, out, specs, self.cell_identity)

    def _question_conflicts(self, out: Path, specs: Sequence[RunSpec]) -> list[str]:
        return question_conflicts(out, specs, self.questions(), self.cell_identity)

    def choose_out(self, specs: Sequence[RunSpec], *, new: bool = False) -> Path:
        """The folder this grid writes to (see :func:`seerbench.experiment._folder.choose_out`)."""
        return choose_out(self.config, self.out, specs, self.questions(), self.cell_identity, new=new)

    def prepare_out(self, *, new: bool = False, specs: Sequence[RunSpec] | None = None) -> Path:
        """Create the output folder (or check that it can take this grid's results) and record the
        config, the prompt hashes and each cell's identity."""
        specs = list(specs) if specs is not None else self.grid()
        out = self.out = self.choose_out(specs, new=new)
        self._made_out = not out.exists()
        write_metadata(self.config, out, specs, self.cell_identity, self.environment(specs))
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
                    if self.config.sequential is not None:  # batches until each cell's target is met
                        results = await run_sequential(self, out, specs, questions, progress, on_start)
                    else:
                        results = await self.executor.run_cells(
                            self, out, specs, questions, progress, on_start
                        )
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
                atomic_write_text(out / "all_stats.json", json.dumps(all_stats, indent=2, allow_nan=True))
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
            atomic_write_text(meta_path, json.dumps(meta, indent=2))
        except (OSError, ValueError):  # a record, not the run: never hide the run's own outcome
            pass

    # ---- planning and inspection --------------------------------------------------------------
    def plan(self, *, sample: int = 3) -> list[CellPlan]:
        """Per cell: questions to run and the model calls and tokens they should take (before cache
        hits), found by running the cell's protocol on up to ``sample`` questions against models
        that answer instantly and count (every model of the cell: a protocol's own too). Prompt
        tokens are estimated as characters / 4; completion tokens are the ``max_tokens`` bound of
        each call. Nothing is written and no model is called."""
        specs = self.check()
        questions = self.questions()
        tracker = default_tracker()
        out = self.out
        plans = []
        repeats = Repeats()  # requests over every cell: a later cell's repeats are cache hits
        for spec in specs:
            path = out / spec.protocol_dir / spec.pair_dir / "results.jsonl"
            done = (
                done_keys(path, "question_id", fingerprint=_hash(self.cell_identity(spec)), repair=False)
                if path.exists() and not self._conflicts(out, [spec])
                else set()
            )
            todo = questions.subset([i for i, qid in enumerate(questions.ids) if qid not in done])
            counter = UsageTracker(tracker.prices)
            repeats.calls = repeats.tokens = 0
            proto = self.builder(counting_factory(self.model_factory, counter, repeats)).protocol(spec)
            probe = todo[:sample] or questions[:sample]
            asyncio.run(_gather_cancelling([proto.run_question(q) for q in probe]))
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
                    repeats.calls * scale,
                    repeats.tokens * scale,
                )
            )
        return plans

    async def replay_prompts(
        self, cell_key: str, question_id: str, *, allow_calls: bool = False, run_dir: Path | None = None
    ) -> list[dict[str, Any]]:
        """Every model request a cell made for one question (a protocol's own model's too), rebuilt
        by running the cell again on that question with the same config: the disk cache answers
        every call, so the prompts are exactly those of the run. With ``run_dir``, a cell whose
        identity changed since that run (edited code, another model file) is refused, naming what
        changed. With ``allow_calls=False`` a cache miss raises instead of calling the model (the
        cache was cleared, or the run used another machine's cache)."""
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
        proto = self.builder(recording_factory(self.model_factory, log, allow_calls)).protocol(spec)
        with cache_scope(self.config.cache_scope):  # the run's cache entries
            await proto.run_question(q)
        return log


__all__ = ["CellPlan", "Experiment", "ModelFactory", "RunResult", "RunSpec", "_slug", "default_model_factory"]
