"""The statistics of a whole run folder, as ``seerbench stats --json`` prints them: every cell
rescored, paired differences against a baseline, and the optimization-pressure section."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from seerbench._forked import forked_map
from seerbench._lock import lock_holder
from seerbench.analysis._elo import elo_section
from seerbench.analysis._pressure import pressure_section
from seerbench.errors import ConfigError
from seerbench.metrics import DEFAULT_EPS, FailurePolicy
from seerbench.results import CellStats
from seerbench.runs import (
    ANYTIME_SHARED,
    FAILED,
    IN_PROGRESS,
    LEFT_OUT,
    UNFINISHED,
    Cell,
    RunFolder,
    cell_counts,
    cell_meta,
    check_beta,
    check_eps,
    check_policy,
    check_score,
    paired_comparisons,
    unreadable_note,
)
from seerbench.store import collector_paused

__all__ = ["MAX_REASONS", "LinePass", "summarize_run"]

#: At most this many skip reasons are reported (the count is always complete).
MAX_REASONS = 20


def _anytime(values: list[float], lo: float = 0.0) -> dict[str, Any] | None:
    from seerbench.estimators import confidence_sequence

    if not values:
        return None
    return confidence_sequence(values, lo=lo, hi=1.0).summary()


def _beside_elo(elo: dict[str, Any], cells: list[dict[str, Any]], *, beta: float, score: str) -> None:
    """The seed's comparison: beside each debater's Elo, its ASD and ASE (``score``, ``beta``) as
    the agent, averaged over its cross-play cells of that protocol and judge (one per opponent)."""
    from seerbench.metrics import beta_key

    ase = f"ase_{beta_key(beta)}"
    for t in elo["tournaments"]:
        for r in t["ratings"]:
            mine = [
                s
                for s in cells
                if s.get("adversary") is not None
                and s.get("agent") == r["debater"]
                and s.get("protocol") == t["protocol"]
                and s.get("judge") == t["judge"]
            ]
            for key, metric in (("asd", "asd"), ("ase", ase)):
                vals = [((s["metrics"].get(metric) or {}).get(score) or {}).get("mean") for s in mine]
                ok = [float(v) for v in vals if v is not None and math.isfinite(float(v))]
                r[key] = sum(ok) / len(ok) if ok else None
        t["score"], t["beta"] = score, beta


#: ``workers=None`` reads a run's cells in parallel from this many bytes of results on (below it,
#: starting the processes costs more than it saves).
PARALLEL_BYTES = 16 << 20


class LinePass(Protocol):
    """More from each line of a cell, in the pass that reads it for the statistics
    (:func:`summarize_run`'s ``per_line``): :meth:`add` sees every line the statistics count, as
    read (not rescored; it must not change it), and :meth:`result` (which must pickle: it may come
    from a worker process) is what the caller gets for the cell."""

    def add(self, ln: dict[str, Any], /) -> None: ...

    def result(self) -> Any: ...


@dataclass(frozen=True)
class _CellJob:
    """How :func:`_read_cell` reads and summarises one cell (a worker gets it by the fork)."""

    eps: float
    policy: FailurePolicy
    betas: tuple[float, ...]
    paired_score: str | None
    anytime: bool
    n_boot: int
    seed: int
    per_line: Callable[[], LinePass] | None = None


#: One cell read: its per-question values (when paired differences or anytime sequences need
#: them), its stats record, its unusable lines and why, and its ``per_line`` pass's result.
_CellRead = tuple[CellStats | None, dict[str, Any], int, list[str], Any]


def _ignore(ln: dict[str, Any]) -> None:
    pass


def _read_cell(cell: Cell, job: _CellJob) -> _CellRead:
    """One cell's statistics from its results file, one line at a time: a cell keeps a few floats
    per question, never its lines."""
    reasons: list[str] = []
    acc = CellStats(betas=job.betas, paired_score=job.paired_score)
    f = cell.results(reasons)
    n_read = 0
    more = job.per_line() if job.per_line is not None else None
    see = more.add if more is not None else _ignore
    with collector_paused():
        for ln in f:
            see(ln)  # before scoring: the line as read
            acc.add_stored(ln, eps=job.eps, policy=job.policy)
            n_read += 1
    s = acc.stats(cell_meta(acc, cell), eps=job.eps, policy=job.policy, n_boot=job.n_boot, seed=job.seed)
    s.update(cell_counts(cell, f, n_read))
    if job.anytime:
        s["anytime"] = {"judge_accuracy": _anytime(list(acc.paired_values("judge_accuracy").values()))}
    extra = more.result() if more is not None else None
    return (acc.keep_paired_only() if job.paired_score is not None else None), s, f.skipped, reasons, extra


def _read_cells(todo: list[Cell], job: _CellJob, workers: int | None) -> Iterator[_CellRead]:
    """Every cell of ``todo`` read (:func:`_read_cell`), in order: here, or in forked worker
    processes (``workers`` None: one per core for a run of :data:`PARALLEL_BYTES` or more), the
    largest cells first."""
    if workers is None:
        workers = None if sum(c.upto or 0 for c in todo) >= PARALLEL_BYTES else 1
    return forked_map(
        partial(_read_cell, job=job),
        todo,
        workers=workers,
        first=sorted(range(len(todo)), key=lambda i: -(todo[i].upto or 0)),
        describe=lambda c: f"reading {c.results_path}",
    )


def summarize_run(
    run_dir: str | Path,
    *,
    beta: float = 1.0,
    score: str = "log",
    eps: float | None = None,
    parse_failures: str | None = None,
    baseline: str | None = None,
    anytime: bool = False,
    workers: int | None = 1,
    per_line: Callable[[], LinePass] | None = None,
    done: Callable[[Cell, Any], None] | None = None,
) -> dict[str, Any]:
    """Statistics of every cell of a run folder, rescored with ``eps`` and ``parse_failures``
    (default: the run's own), plus paired differences against the protocol folder ``baseline``
    on the same questions. Pure: the folder is not changed.

    Returns ``{"run_dir", "cells": [stats...], "paired": [...], "skipped_lines": n}``; when grid
    cells have no finished question yet, ``not_started`` (their keys); when lines were skipped,
    ``skipped_reasons`` (the first 20, ``FILE:LINE: reason``); when cells differ only in
    best-of-N, ``pressure`` (:func:`seerbench.analysis.optimization_pressure`); when it has
    cross-play cells, ``elo`` (:func:`seerbench.analysis._elo.elo_section`); while another process
    holds the folder's lock (a run writing it), ``in_progress``: that process, and its unfinished
    cells are said to be in progress, not stopped; for a sequential run,
    ``sequential`` (its ``sequential.json``: each cell's and comparison's decision, reason, number of
    questions and anytime-valid interval then).

    Each cell's stats carry the counts of :func:`seerbench.runs.cell_counts` (failed, unstarted,
    skipped, foreign and duplicate lines, unfinished).

    With ``anytime``, every cell also gets ``anytime: {"judge_accuracy": ...}`` and every paired
    comparison ``accuracy_diff_anytime``: the anytime-valid 95% confidence sequence
    (:func:`seerbench.estimators.confidence_sequence`) over the questions in the results file's
    order (dataset order, fixed before any value was seen; a sequential run's seeded order), valid
    however often the run was looked at and whenever it stopped; and ``anytime_warnings``: where
    questions share passages (the sequences assume independent questions), which cells.

    The cells are read as their files are when it starts (:meth:`Cell.snapshot`), one at a time in
    this process, or with ``workers`` > 1 in that many forked processes (None: as many as this
    machine has cores, for a run of :data:`PARALLEL_BYTES` or more), each cell the same numbers
    either way. A caller that needs more of each line (the report's transcript browser and
    calibration) gives ``per_line``, which makes a :class:`LinePass` for each cell in the process
    that reads it (a worker gets it by the fork), and ``done(cell, result)``, called here with each cell's
    snapshot and its pass's result, cell by cell in order, before this returns: the lines are read
    once, and the pass sees exactly those the statistics count."""
    if (per_line is None) != (done is None):
        raise TypeError("summarize_run: give per_line and done together")
    folder = RunFolder(run_dir)
    cfg = folder.config
    # a live process holds the folder: its unfinished cells are being written, not stopped
    holder = lock_holder(folder.path)
    check_beta(beta)
    check_score(score)
    eps_v = check_eps(cfg.get("eps", DEFAULT_EPS) if eps is None else eps)
    policy = check_policy(parse_failures or cfg.get("parse_failures", "exclude"))
    betas = sorted({0.0, 1.0, math.inf, beta})
    cells: list[tuple[list[dict[str, Any]] | CellStats, dict[str, Any]]] = []
    skipped = 0
    reasons: list[str] = []
    todo = [c.snapshot() for c in folder.cells()]
    job = _CellJob(
        eps=eps_v,
        policy=policy,
        betas=tuple(betas),
        paired_score=score if (baseline or anytime) else None,
        anytime=anytime,
        n_boot=cfg.get("n_boot", 2000),
        seed=cfg.get("seed", 0),
        per_line=per_line,
    )
    for cell, (acc, s, n_skipped, cell_reasons, extra) in zip(
        todo, _read_cells(todo, job, workers), strict=True
    ):
        if done is not None:
            done(cell, extra)
        skipped += n_skipped
        reasons.extend(cell_reasons)
        if s["unfinished"] and (s["unstarted"] or not (cell.folder / "stats.json").is_file()):
            s["diagnostics"]["warnings"].insert(
                0, UNFINISHED if holder is None else IN_PROGRESS.format(holder=holder)
            )
        for what, n in (("foreign", s["foreign_lines"]), ("duplicate", s["duplicate_lines"])):
            if n:
                s["diagnostics"]["warnings"].insert(0, LEFT_OUT[what].format(n=n))
        if s["failed"]:
            s["diagnostics"]["warnings"].insert(0, FAILED.format(n=s["failed"]))
        damaged = unreadable_note(s)
        if damaged is not None:  # questions whose lines are there but damaged: not a stopped run
            s["diagnostics"]["warnings"].insert(0, damaged)
        # the per-question values only for paired differences and anytime sequences
        cells.append((acc if acc is not None else [], s))
    if not cells:
        raise ConfigError(f"no results.jsonl under {folder.path}: the run has not finished a question yet")
    comparisons = (
        paired_comparisons(cells, baseline, score, n_boot=cfg.get("n_boot", 2000), seed=cfg.get("seed", 0))
        if baseline
        else []
    )
    if anytime:
        by_key = {m["cell"]: a for a, m in cells if isinstance(a, CellStats)}
        shared = [k for k, a in by_key.items() if a.shares_clusters()]
        for c in comparisons:
            va = by_key[c["cell"]].paired_values("judge_accuracy")
            vb = by_key[c["baseline_cell"]].paired_values("judge_accuracy")
            common = [q for q in va if q in vb]  # in the cell's file order
            c["accuracy_diff_anytime"] = _anytime([va[q] - vb[q] for q in common], lo=-1.0)
    out: dict[str, Any] = {
        "run_dir": str(folder.path),
        "cells": [s for _, s in cells],
        "paired": comparisons,
        "skipped_lines": skipped,
    }
    if anytime:
        out["anytime_warnings"] = (
            [ANYTIME_SHARED.format(cells=f"{len(shared)} of {len(cells)} cells ({', '.join(shared)})")]
            if shared
            else []
        )
    decisions = folder.decisions()
    if holder is not None:
        out["in_progress"] = holder
    if decisions is not None:  # a sequential run: per cell (and comparison) why and when it stopped
        out["sequential"] = decisions
    have = {c.key for c in folder.cells()}
    missing = [k for k in folder.meta.get("cells") or {} if k not in have]
    if missing:  # in the grid, no question finished yet (the run stopped before them)
        out["not_started"] = missing
    out.update(
        pressure_section(
            folder.path, [s for _, s in cells], beta=beta, score=score, eps=eps_v, parse_failures=policy
        )
    )
    elo = elo_section(folder.path, n_boot=int(cfg.get("n_boot", 2000)), seed=int(cfg.get("seed", 0)))
    if elo:  # cross-play cells: Elo ratings of the debaters (docs/tournaments.md)
        _beside_elo(elo, [s for _, s in cells], beta=beta, score=score)
        out["elo"] = elo
    if reasons:
        out["skipped_reasons"] = reasons[:MAX_REASONS]
    return out
