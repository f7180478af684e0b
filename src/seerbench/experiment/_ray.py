"""The Ray executor: a grid's cells cut into shards of questions that run as Ray tasks.

The driver (the process that called :meth:`Experiment.arun`, e.g. ``seerbench run CONFIG
--executor ray``) reads the dataset, checks the config, and is the one writer of every results
file (:class:`seerbench.experiment._executor.CellWriter`): a task runs its questions and returns
their results lines as text, which the driver appends as each task finishes; a finished cell's
file is rewritten in dataset order and its statistics computed there. So a run on Ray gives the
same files, byte for byte, as a local run, and a driver killed at any moment loses at most the
shards in flight: rerunning resumes.

A worker rebuilds the experiment from the config (its plugins are imported there), so what a
config names must be importable on every node: model backends, plugins, prompts_dir. Relative
paths are read from the config file's folder when that folder exists on the node, else from the
task's working directory (a runtime env ``working_dir``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seerbench.errors import ConfigError, SeerbenchError
from seerbench.experiment._config import ExperimentConfig
from seerbench.experiment._executor import CellWriter, LineFormat, OnStart, Progress, run_questions
from seerbench.experiment._questions import RunQuestions
from seerbench.models import cache_scope, default_tracker, usage_cell
from seerbench.types import Question

if TYPE_CHECKING:
    from seerbench.experiment._cells import RunResult, RunSpec
    from seerbench.experiment._runner import Experiment, ModelFactory

log = logging.getLogger(__name__)

RAY_MISSING = "the Ray executor needs Ray: pip install 'seerbench[ray]'"


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(RAY_MISSING) from None
    return ray


@dataclass(frozen=True)
class _Setup:
    """What a worker needs to build a run's protocols: the config as data, the folder its relative
    paths are read from, and the Python API's model factory when it is not the default."""

    token: str
    config: dict[str, Any]
    base_dir: str | None
    model_factory: ModelFactory | None = None


_experiments: dict[str, Experiment] = {}  # per worker process: token -> the rebuilt experiment


def _worker_experiment(setup: _Setup) -> Experiment:
    from seerbench.experiment._runner import Experiment

    exp = _experiments.get(setup.token)
    if exp is None:
        base = Path(setup.base_dir) if setup.base_dir else None
        if base is not None and not base.is_dir():
            base = Path.cwd()  # the config's folder is not on this node: a runtime env working_dir
        cfg = ExperimentConfig.parse(setup.config, source="the config sent to a Ray worker", base_dir=base)
        exp = Experiment(cfg)
        if setup.model_factory is not None:
            exp.model_factory = setup.model_factory
        _experiments.clear()  # one run at a time per worker process
        _experiments[setup.token] = exp
    return exp


_COUNTS = ("calls", "cache_hits", "retries", "errors", "prompt_tokens", "completion_tokens")


@dataclass
class ShardResult:
    lines: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)  # model spec -> counts this shard added


def run_shard(setup: _Setup, spec: RunSpec, questions: list[Question], fmt: LineFormat) -> ShardResult:
    """The body of a Ray task: some questions of one cell, their lines as text, and the model
    usage they took (the driver adds it to its own, so ``seerbench run`` reports every call)."""
    exp = _worker_experiment(setup)
    res = ShardResult()
    protocol = exp._protocol(spec)
    before = default_tracker().snapshot()
    try:
        with cache_scope(exp.config.cache_scope):  # the driver's scope, in this worker too
            asyncio.run(
                run_questions(
                    protocol,
                    questions,
                    concurrency=exp.config.concurrency,
                    fmt=fmt,
                    cell=spec.key,
                    on_line=res.lines.append,
                    on_error=res.errors.append,
                )
            )
    finally:
        for model, u in default_tracker().snapshot().items():
            b = before.get(model, {})
            delta = {k: u[k] - b.get(k, 0) for k in _COUNTS}
            if any(delta.values()):
                res.usage[model] = delta
    return res


def _add_usage(usage: dict[str, dict[str, int]]) -> None:
    """Add a shard's model usage to this process's tracker, priced with its price table (a cost
    is linear in tokens, so pricing the sum is pricing each call)."""
    tracker = default_tracker()
    for model, d in usage.items():  # through add: also to the run folder's usage log
        tracker.add(model, {k: d[k] for k in _COUNTS})


@dataclass
class RayExecutor:
    """Runs a grid's questions as Ray tasks: each task is a shard of at most ``shard_size``
    questions of one cell (default: 4 x the config's ``concurrency``), run with ``concurrency``
    in flight, on ``num_cpus`` CPUs of the cluster. Cells run side by side as far as the cluster
    allows.

    ``address``: the cluster to join (``ray://head:10001``, ``auto``, or host:port); None joins
    the one in ``RAY_ADDRESS`` or starts a local instance. When Ray is already initialised in
    this process, that instance is used as it is. ``runtime_env`` is passed to ``ray.init``
    (e.g. ``{"working_dir": ".", "pip": ["seerbench"]}``). An instance this executor started is
    shut down when the run ends."""

    address: str | None = None
    shard_size: int | None = None
    num_cpus: float = 1.0
    runtime_env: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.shard_size is not None and self.shard_size < 1:
            raise ConfigError(f"shard_size must be >= 1, got {self.shard_size}")
        if not self.num_cpus > 0:
            raise ConfigError(f"num_cpus must be > 0, got {self.num_cpus}")
        _host_port(self.address)

    async def run_cells(
        self,
        exp: Experiment,
        out: Path,
        specs: Sequence[RunSpec],
        questions: RunQuestions,
        progress: Progress | None,
        on_start: OnStart | None,
    ) -> list[RunResult]:
        ray = _import_ray()
        started = False
        if not ray.is_initialized():
            # ray.init reads RAY_ADDRESS when no address is given: check that one the same way
            env = os.environ.get("RAY_ADDRESS") or None
            _check_reachable(
                self.address or env, "" if self.address or env is None else " (from RAY_ADDRESS)"
            )
            # a Ray instance started for a run does not report usage statistics unless asked to
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            try:
                ray.init(
                    address=self.address,
                    runtime_env=self.runtime_env,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except ConnectionError as e:
                raise ConfigError(
                    f"cannot join the Ray cluster at {self.address or 'RAY_ADDRESS'}: {e}"
                ) from None
            started = True
        try:
            return await self._run(ray, exp, out, specs, questions, progress, on_start)
        except ray.exceptions.RayError as e:  # a node, the head or the connection to it lost
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            raise SeerbenchError(
                f"the Ray cluster failed during the run ({type(e).__name__}: {first}); finished "
                "results are kept: rerun the same command to resume"
            ) from None
        finally:
            if started:
                _shutdown(ray)

    async def _run(
        self,
        ray: Any,
        exp: Experiment,
        out: Path,
        specs: Sequence[RunSpec],
        questions: RunQuestions,
        progress: Progress | None,
        on_start: OnStart | None,
    ) -> list[RunResult]:
        from seerbench.experiment._runner import default_model_factory

        factory = None if exp.model_factory is default_model_factory else exp.model_factory
        cfg = exp.config
        setup = _Setup(
            uuid.uuid4().hex,
            cfg.model_dump(mode="json"),
            str(cfg._base_dir.resolve()) if cfg._base_dir else None,
            factory,
        )
        try:
            setup_ref = ray.put(setup)
        except Exception as e:  # cloudpickle refused the model factory (or a class entry it closes over)
            raise ConfigError(
                f"the Ray executor cannot send this experiment to its workers: {type(e).__name__}: {e}"
            ) from None
        # a task whose worker or node died is run again (its lines reach the driver only when it
        # finishes, so nothing is written twice); an error raised by the task itself is not retried
        task = ray.remote(run_shard).options(num_cpus=self.num_cpus, max_retries=3, retry_exceptions=False)
        size = self.shard_size or 4 * cfg.concurrency
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        max_pending = max(2, int(2 * cpus / self.num_cpus))

        writers: dict[str, CellWriter] = {}
        left: dict[str, int] = {}  # shards of a cell not yet written
        results: dict[str, RunResult] = {}

        def shards() -> Iterator[tuple[RunSpec, list[Question]]]:
            for spec in specs:
                w = writers[spec.key] = CellWriter(exp, out, spec, questions, progress)
                if on_start:
                    on_start(spec, w.n_done, w.total)
                starts = range(0, len(w.todo), size)
                left[spec.key] = len(starts)
                if not starts:
                    results[spec.key] = w.finish()
                for i in starts:  # a shard's questions are read from the store when it is sent
                    yield spec, w.todo[i : i + size]

        pending: dict[asyncio.Future[Any], tuple[RunSpec, Any]] = {}
        todo = shards()
        try:
            while True:
                for spec, chunk in todo:
                    ref = task.remote(setup_ref, spec, chunk, writers[spec.key].fmt)
                    pending[asyncio.wrap_future(ref.future())] = (spec, ref)
                    if len(pending) >= max_pending:
                        break
                if not pending:
                    break
                finished, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for fut in finished:
                    spec, _ref = pending.pop(fut)
                    res: ShardResult = _result(ray, fut, spec)
                    w = writers[spec.key]
                    for text in res.lines:
                        w.write(text)
                    for message in res.errors:
                        w.error(message)
                    with usage_cell(spec.key):  # logged as the cell's, as a local run logs it
                        _add_usage(res.usage)
                    left[spec.key] -= 1
                    if left[spec.key] == 0:
                        results[spec.key] = w.finish()
        finally:
            for _spec, ref in pending.values():
                ray.cancel(ref, force=True)
            for w in writers.values():
                w.close()
        return [results[s.key] for s in specs]


def _shutdown(ray: Any) -> None:
    """Shut down the Ray instance this process started, and be sure its processes end even when
    a failed node leaves ``ray.shutdown`` half done (it raised, and processes outlived the run)."""
    try:
        node = ray._private.worker._global_node  # the processes ray.init started
    except AttributeError:
        node = None
    try:
        ray.shutdown()
    except Exception as e:  # the instance is broken already: its processes are ended below
        log.debug("ray.shutdown failed: %s", e)
    if node is not None:
        try:
            node.kill_all_processes(check_alive=False, allow_graceful=False, wait=True)
        except Exception as e:
            log.warning("could not end every process of the Ray instance this run started: %s", e)


def _host_port(address: str | None) -> tuple[str, int] | None:
    """The host and port of a cluster address (None for auto/local/none); ConfigError when it is
    not an address."""
    if address is None or address in ("auto", "local"):
        return None
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(
            f"Ray address {address!r}: give HOST:PORT (the head's GCS port, 6379 by default), "
            "ray://HOST:PORT (Ray Client, 10001) or auto"
        )
    return host, int(port)


def _check_reachable(address: str | None, source: str = "") -> None:
    """Refuse an address nothing answers at, at once: Ray itself retries for minutes. ``source``
    says where the address came from, when not --address."""
    hp = _host_port(address)
    if hp is None:
        return
    host, port = hp
    try:
        socket.create_connection((host, port), timeout=10).close()
    except OSError as e:
        raise ConfigError(
            f"cannot reach the Ray cluster at {address}{source} ({e.strerror or e}): is `ray start --head` "
            "running there, and is the port right?"
        ) from None


def _result(ray: Any, fut: asyncio.Future[Any], spec: RunSpec) -> ShardResult:
    """A task's result. A task that raised re-raises its own exception here (a ConfigError stays
    a ConfigError, one line on stderr), not Ray's wrapper; a task Ray could not run (its worker
    or node lost after the retries) is a one-line error too."""
    try:
        res: ShardResult = fut.result()
    except ray.exceptions.RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, SeerbenchError):  # a user error: its own one line
            raise cause from None
        if isinstance(cause, Exception):  # a bug: keep Ray's error, which holds the worker's traceback
            raise cause from e
        raise
    except ray.exceptions.RayError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise SeerbenchError(
            f"{spec.key}: a Ray task failed ({type(e).__name__}: {first}); finished results are kept: "
            "rerun to resume"
        ) from None
    return res
