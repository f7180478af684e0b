"""Where a grid's questions run, and the one writer of its results files.

An executor runs the questions of each grid cell and hands every finished question's results line
(as text) to the driver's :class:`CellWriter`, which alone writes the cell's files: lines appended
to ``results.jsonl`` as they arrive, then the file rewritten in dataset order and ``stats.json``
computed from it. So whichever executor ran them, a grid gives the same files, byte for byte.

- :class:`LocalExecutor` (the default): the cells one after another, in this process, with
  ``config.concurrency`` questions in flight.
- :class:`seerbench.experiment.RayExecutor`: cells cut into shards of questions that run as Ray
  tasks on a cluster (``seerbench run CONFIG --executor ray``).
"""

from __future__ import annotations

import errno
import json
import logging
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from seerbench.errors import (
    AuthenticationError,
    CacheError,
    ConfigError,
    DataError,
    ModelUnavailableError,
    RequestError,
    UnknownModelError,
    naming,
)
from seerbench.experiment._cells import RunResult, RunSpec
from seerbench.experiment._config import _hash
from seerbench.experiment._files import _gather_cancelling
from seerbench.experiment._questions import RunQuestions
from seerbench.metrics import FailurePolicy
from seerbench.models import usage_cell
from seerbench.protocols import PROTOCOLS, OversightProtocol
from seerbench.results import CellStats, result_line
from seerbench.schema import dump_line
from seerbench.store import Appender, atomic_write_text, done_keys, finalise
from seerbench.types import Question

if TYPE_CHECKING:
    from seerbench.experiment._runner import Experiment

log = logging.getLogger(__name__)

#: OS errors of the machine, not of one question: they stop a run (one line, exit 2).
_ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EIO})

Progress = Callable[["RunSpec", int, int, int], None]
OnStart = Callable[["RunSpec", int, int], None]


class Executor(Protocol):
    """Runs the questions of a grid's cells; :meth:`Experiment.arun` calls it once per run."""

    async def run_cells(
        self,
        exp: Experiment,
        out: Path,
        specs: Sequence[RunSpec],
        questions: RunQuestions,
        progress: Progress | None,
        on_start: OnStart | None,
    ) -> list[RunResult]: ...


@dataclass(frozen=True)
class LineFormat:
    """What turns a finished question into its results line: the cell's grid coordinates and
    stamp (fingerprint, prompt hashes) and the scoring settings. Sent to workers with each shard."""

    meta: dict[str, Any]
    stamp: dict[str, Any]
    eps: float
    policy: FailurePolicy

    def text(self, qr: Any) -> str:
        return dump_line({**result_line(qr, self.meta, eps=self.eps, policy=self.policy), **self.stamp})


async def run_questions(
    protocol: OversightProtocol,
    questions: Sequence[Question],
    *,
    concurrency: int,
    fmt: LineFormat,
    cell: str,
    on_line: Callable[[str], None],
    on_error: Callable[[str], None],
) -> None:
    """Run ``questions`` through ``protocol`` with at most ``concurrency`` in flight (that many
    workers take the next question in order, so memory does not grow with the number of
    questions). Each finished question's line goes to ``on_line``; a question that failed goes
    to ``on_error`` as ``"<id>: <why>"`` and the others go on. A question fails on an error of
    its own: a model still failing after retries, a request the server rejects (HTTP 400, e.g.
    longer than the context), malformed data, an exception inside a protocol, agent or judge
    (a plugin's bug in one question). A bad key, an unknown model or a config error stops
    everything; so does a model that is down (nothing finished yet and a whole batch of
    ``concurrency`` questions failed after retries), and an exception that every question so far
    raised, at least ``max(concurrency, 3)`` of them (a bug, not one question's problem: it
    propagates as it is)."""
    todo = iter(questions)
    n_new = 0
    n_errors = 0

    async def worker() -> None:
        nonlocal n_new, n_errors
        for q in todo:
            try:
                qr = await protocol.run_question(q)
            except (AuthenticationError, UnknownModelError, ConfigError, CacheError):
                raise
            except (ModelUnavailableError, RequestError, DataError) as e:
                n_errors += 1
                on_error(f"{q.id}: {e}")
                if isinstance(e, ModelUnavailableError) and n_new == 0 and n_errors >= concurrency:
                    # Nothing has worked yet and a full batch failed after retries: the model
                    # is down, and grinding through every question's retries would help no one.
                    raise ModelUnavailableError(
                        f"{cell}: the first {n_errors} questions all failed, so the run stops "
                        f"(finished results are kept; rerun to resume). Last error: {e}"
                    ) from e
                continue
            except Exception as e:  # a bug in a protocol, agent or judge, met by this question
                if isinstance(e, OSError) and e.errno in _ENVIRONMENT_ERRNOS:
                    raise  # a full or read-only disk: the machine's problem, not this question's
                n_errors += 1
                log.debug("%s: question %s raised", cell, q.id, exc_info=True)
                if n_new == 0 and n_errors >= max(concurrency, 3):
                    raise  # every question so far raised it: a crash, with its traceback
                on_error(f"{q.id}: {type(e).__name__} raised inside the protocol: {e}")
                continue
            n_new += 1
            on_line(fmt.text(qr))

    with usage_cell(cell):  # the workers' model events are logged as this cell's
        await _gather_cancelling([worker() for _ in range(min(concurrency, len(questions)))])


class CellWriter:
    """The driver's side of one cell: which questions are left (a resumed run skips finished
    ones and cuts a torn last line), the appended lines, and at the end the file in dataset
    order and its statistics. Lines are appended with one ``write`` each, so a driver killed at
    any moment loses at most the questions in flight."""

    def __init__(
        self,
        exp: Experiment,
        out: Path,
        spec: RunSpec,
        questions: RunQuestions,
        progress: Progress | None = None,
    ) -> None:
        self.exp = exp
        self.spec = spec
        self.rank = questions.dataset_order
        self.in_run = questions.position  # this run's questions (dataset_order also past the limit)
        self.dir = out / spec.protocol_dir / spec.pair_dir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "results.jsonl"
        #: the cell's fingerprint: a line carrying another is foreign, done again and replaced
        self.fingerprint = _hash(exp.cell_identity(spec))
        done = done_keys(self.path, "question_id", fingerprint=self.fingerprint)
        #: the questions still to run, read from the store as they are taken
        self.todo = questions.subset(
            array("q", (i for i, qid in enumerate(questions.ids) if qid not in done))
        )
        self.total = len(questions)
        self.n_done = self.total - len(self.todo)
        if self.todo:  # stats.json is written when the cell ends: until then its absence marks it unfinished
            (self.dir / "stats.json").unlink(missing_ok=True)
        _record_size(self.dir / "cell.json", self.total)
        self.errors: list[str] = []
        self.progress = progress
        cfg = exp.config
        self.meta = {
            "protocol": spec.protocol_dir,
            "agent": spec.agent_model if PROTOCOLS[spec.protocol].needs_agent else None,
            "judge": spec.judge_model,
            "tools": list(spec.tools),
            "best_of_n": spec.best_of_n,
        }
        if spec.adversary is not None:  # cross-play: the other side's debater
            self.meta["adversary"] = spec.adversary.label()
        stamp = {"fingerprint": self.fingerprint, "prompts": exp.prompt_hashes()}
        self.fmt = LineFormat(self.meta, stamp, cfg.eps, cfg.parse_failures)
        self._file: Appender | None = Appender(self.path)

    def write(self, text: str) -> None:
        assert self._file is not None, "the cell's file is closed"
        with naming(self.path):
            self._file.write(text)
        self.n_done += 1
        if self.progress:
            self.progress(self.spec, self.n_done, self.total, len(self.errors))

    def error(self, message: str) -> None:
        self.errors.append(message)
        if self.progress:
            self.progress(self.spec, self.n_done, self.total, len(self.errors))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def finish(self) -> RunResult:
        """Close the file, put it in dataset order, and write ``stats.json`` (read back one line at
        a time: a cell keeps a few floats per question, never its lines)."""
        self.close()
        cfg = self.exp.config
        acc = CellStats()
        n_in_run = 0  # lines of this run's questions (a file may hold more, from a larger limit)

        def add(line: dict[str, Any]) -> None:
            nonlocal n_in_run
            acc.add(line)
            n_in_run += line["question_id"] in self.in_run

        with naming(self.path):
            finalise(self.path, "question_id", self.rank, fingerprint=self.fingerprint, on_line=add)
        stats = acc.stats(
            {"cell": self.spec.key, **self.meta},
            eps=cfg.eps,
            policy=cfg.parse_failures,
            n_boot=cfg.n_boot,
            seed=cfg.seed,
        )
        stats["n_errors"] = len(self.errors)
        stats["errors"] = list(self.errors)  # "<question id>: <why>", this run's failed questions
        stats["n_planned"] = self.total
        # what n leaves out, as `seerbench stats` states it (the rewrite above dropped torn,
        # foreign and duplicate lines)
        unstarted = max(0, self.total - n_in_run - len(self.errors))
        stats.update(
            failed=len(self.errors),
            unstarted=unstarted,
            skipped_lines=0,
            foreign_lines=0,
            duplicate_lines=0,
            unfinished=bool(self.errors or unstarted),
        )
        with naming(self.dir / "stats.json"):
            atomic_write_text(self.dir / "stats.json", json.dumps(stats, indent=2, allow_nan=True))
        return RunResult(self.spec, stats, self.n_done, len(self.errors), self.errors)


def _record_size(cell_json: Path, n: int) -> None:
    """Note in ``cell.json`` how many questions this run gives the cell (what ``stats`` counts
    unstarted questions against while the cell is unfinished)."""
    try:
        info = json.loads(cell_json.read_text())
    except (OSError, json.JSONDecodeError):
        return  # written by the runner just before; nothing to note in when it is gone
    if isinstance(info, dict) and info.get("n_planned") != n:
        atomic_write_text(cell_json, json.dumps({**info, "n_planned": n}, indent=2))


class LocalExecutor:
    """The cells one after another in this process, ``config.concurrency`` questions at a time."""

    async def run_cells(
        self,
        exp: Experiment,
        out: Path,
        specs: Sequence[RunSpec],
        questions: RunQuestions,
        progress: Progress | None,
        on_start: OnStart | None,
    ) -> list[RunResult]:
        results = []
        for spec in specs:
            w = CellWriter(exp, out, spec, questions, progress)
            if on_start:
                on_start(spec, w.n_done, w.total)
            try:
                await run_questions(
                    exp._protocol(spec),
                    w.todo,
                    concurrency=exp.config.concurrency,
                    fmt=w.fmt,
                    cell=spec.key,
                    on_line=w.write,
                    on_error=w.error,
                )
            finally:
                w.close()
            results.append(w.finish())
        return results
