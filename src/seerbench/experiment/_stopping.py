"""Sequential runs (the config's ``sequential:`` section, docs/budget.md): questions added in
batches, in an order fixed by a seed, each cell stopped once its target is met, everything once
the budget is spent.

- **Order.** The run's questions are permuted once by ``sequential.seed``; step ``k`` runs the first
  ``(k + 1) * batch`` of them, so a stopped run is a prefix of the full one and a resumed run takes
  up where it stopped. Each cell's ``results.jsonl`` is kept in this order (a fixed-n run keeps
  dataset order), so the file of a stopped cell is, line for line, the first lines of the unstopped
  cell's file, and ``seerbench stats --anytime`` reads its values in the order they were watched.
- **Decisions.** After each step every running cell's anytime-valid confidence sequence
  (:func:`seerbench.estimators.confidence_sequence`, betting; valid however often it is looked at)
  is computed over its questions in that order: ``half_width: W`` stops a cell whose interval lies
  within ``mean +- W`` (:attr:`ConfidenceSequence.half_width`: the longer side, since a sequence is
  not symmetric about its mean); ``sign`` stops a comparison (a cell minus its baseline cell,
  paired on the questions both scored, :func:`seerbench.estimators.paired_sequence`) once its
  interval excludes 0, and a cell once every comparison it is in has stopped (each cell's own
  accuracy sequence is recorded too). A cell still running when the dataset runs out stops
  with ``dataset exhausted``.
- **Budget.** Before a cell's batch, what the folder's usage log holds (every run into the folder:
  calls made, tokens, dollars from the price table; cache hits are free) is compared with
  ``budget``; once any is reached every running cell stops with ``budget spent``. A batch that has
  started is finished, so the spend may pass the budget by at most one cell's batch.
- **Resume.** A rerun replays the steps from the results already in the folder (finished questions
  are not run again, and the same values give the same decisions), so a run stopped by its budget
  and rerun with a larger one continues from where it stopped.

The decisions and their reasons are written to ``sequential.json`` (:data:`DECISIONS`) after every
step, atomically.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from seerbench.errors import ConfigError, naming
from seerbench.estimators import ConfidenceSequence, confidence_sequence, paired_sequence
from seerbench.experiment._cells import RunResult, RunSpec
from seerbench.experiment._config import STOP_METRICS, SequentialSpec, _hash
from seerbench.experiment._executor import OnStart, Progress
from seerbench.experiment._questions import QuestionStore, QuestionView, _Lazy
from seerbench.models import read_usage
from seerbench.protocols import PROTOCOLS
from seerbench.results import CellStats, question_cluster
from seerbench.runs import DECISIONS, baseline_partners, json_safe
from seerbench.store import RecordReader, atomic_write_text, done_keys
from seerbench.types import Question

if TYPE_CHECKING:
    from seerbench.experiment._runner import Experiment

__all__ = ["SequentialQuestions", "check_sequential", "question_order", "run_sequential"]

#: Reasons a cell or comparison stops, as ``sequential.json`` writes them.
TARGET_MET = "target met"
BUDGET_SPENT = "budget spent"
EXHAUSTED = "dataset exhausted"
SETTLED = "comparisons settled"

#: What ``sequential.json`` says when questions share a passage (the sequences assume independent
#: questions, as drawn in a random order from the pool).
SHARED_PASSAGES = (
    "questions share passages: the confidence sequences treat them as independent, so their "
    "coverage is not guaranteed here (a passage's questions are correlated); stop on a wider target "
    "or check the fixed-n interval, which resamples passages"
)

#: The per-question value each stop metric watches (a key of :meth:`CellStats.paired_values`).
_VALUE_KEY = {"accuracy": "judge_accuracy"}


def question_order(n: int, seed: int) -> list[int]:
    """The positions of a run's ``n`` questions in the order a sequential run adds them."""
    return [int(i) for i in np.random.default_rng(seed).permutation(n)]


class SequentialQuestions(_Lazy):
    """The first ``m`` questions of a store in a sequential run's order, with what the cell writer
    reads from a store: ``ids``, ``position`` (id -> place here), ``dataset_order`` (id -> rank in
    the sequential order; questions of the folder past this run's, after them in dataset order),
    ``subset``."""

    def __init__(self, store: QuestionStore, order: Sequence[int], m: int) -> None:
        self.store = store
        self.positions = list(order[:m])
        self.ids = [store.ids[i] for i in self.positions]
        self.position = {q: i for i, q in enumerate(self.ids)}
        rank = {store.ids[i]: r for r, i in enumerate(order)}
        n = len(order)
        self.dataset_order = {q: rank.get(q, n + r) for q, r in store.dataset_order.items()}

    def __len__(self) -> int:
        return len(self.ids)

    def _get(self, i: int) -> Question:
        return self.store._get(self.positions[i])

    def subset(self, positions: Sequence[int]) -> QuestionView:
        return QuestionView(self.store, array("q", (self.positions[i] for i in positions)))


def _spent(out: Path) -> dict[str, Any]:
    """What the folder's usage log holds: calls made, tokens, dollars (None: a call had no price)."""
    t = (read_usage(out) or {}).get("total") or {}
    return {
        "calls": int(t.get("calls", 0)),
        "tokens": int(t.get("prompt_tokens", 0)) + int(t.get("completion_tokens", 0)),
        "dollars": t.get("cost", 0.0),
    }


def _over(spent: dict[str, Any], seq: SequentialSpec) -> str | None:
    """Which budget is spent (``"calls 2000 of 2000"``), or None."""
    b = seq.budget
    if b is None:
        return None
    for key in ("calls", "tokens", "dollars"):
        limit, used = getattr(b, key), spent[key]
        if limit is not None and used is not None and used >= limit:
            return f"{key} {used:g} of {limit:g}"
    return None


def _interval(cs: ConfidenceSequence) -> dict[str, Any]:
    return {**cs.summary(), "half_width": cs.half_width}


class _Controller:
    """A sequential run's state: per cell and per comparison, running or stopped (why, at what n)."""

    def __init__(self, exp: Experiment, out: Path, specs: Sequence[RunSpec], store: QuestionStore) -> None:
        seq = exp.config.sequential
        assert seq is not None
        self.exp, self.out, self.seq, self.specs = exp, out, seq, list(specs)
        self.order = question_order(len(store), seq.seed)
        self.store = store
        rule = seq.stop_when
        self.lo, self.hi = STOP_METRICS[rule.metric if rule else "accuracy"][1]
        self.key = _VALUE_KEY[rule.metric if rule else "accuracy"]
        self.cells: dict[str, dict[str, Any]] = {s.key: {"status": "running", "n": 0} for s in self.specs}
        self.comparisons: list[dict[str, Any]] = []
        if rule is not None and rule.sign:
            assert rule.baseline is not None
            metas = [_meta(s) for s in self.specs]
            pairs = baseline_partners(metas, rule.baseline)
            alone = [
                s.key
                for i, s in enumerate(self.specs)
                if not any(i in p for p in pairs) and s.protocol_dir.split("_")[0] != rule.baseline
            ]
            if alone:
                raise ConfigError(
                    f"sequential.stop_when.sign: no {rule.baseline} cell with the same judge to compare "
                    f"{', '.join(alone)} with; add one, or use half_width"
                )
            self.comparisons = [
                {"cell": self.specs[i].key, "baseline_cell": self.specs[j].key, "status": "running", "n": 0}
                for i, j in pairs
            ]
            compared = {c["cell"] for c in self.comparisons} | {c["baseline_cell"] for c in self.comparisons}
            for s in self.specs:  # a baseline cell of no comparison would have nothing to stop it
                if s.key not in compared:
                    self.cells[s.key] = {"status": "stopped", "reason": SETTLED, "n": 0}
        self.step = 0
        self.stopped_by: str | None = None
        self.shared_passages = False  # whether questions the sequences read share a passage

    def running(self) -> list[RunSpec]:
        return [s for s in self.specs if self.cells[s.key]["status"] == "running"]

    def values(self, spec: RunSpec, m: int) -> list[tuple[str, float]]:
        """The cell's watched values of the first ``m`` questions, in the sequential order."""
        path = self.out / spec.protocol_dir / spec.pair_dir / "results.jsonl"
        if not path.exists():
            return []
        acc = CellStats(paired_score="log")
        first = set(self.store.ids[i] for i in self.order[:m])
        passages: set[str] = set()
        with naming(path):
            for ln in RecordReader(path, "question_id", fingerprint=_hash(self.exp.cell_identity(spec))):
                acc.add(ln)
                label = question_cluster(ln.get("question") or {})
                if label is not None and ln["question_id"] in first:
                    if label in passages:
                        self.shared_passages = True
                    passages.add(label)
        v = acc.paired_values(self.key)
        ids = (self.store.ids[i] for i in self.order[:m])
        return [(q, v[q]) for q in ids if q in v]

    def todo(self, spec: RunSpec, m: int) -> int:
        """Questions of the first ``m`` the cell has not finished."""
        path = self.out / spec.protocol_dir / spec.pair_dir / "results.jsonl"
        if not path.exists():
            return m
        done = done_keys(path, "question_id", fingerprint=_hash(self.exp.cell_identity(spec)), repair=False)
        return sum(1 for i in self.order[:m] if self.store.ids[i] not in done)

    def decide(self, m: int) -> None:
        """After the step that brought the run to its first ``m`` questions."""
        rule = self.seq.stop_when
        alpha = self.seq.alpha
        by_key = {s.key: s for s in self.specs}
        last = m >= len(self.order)
        target = rule.half_width if rule is not None else None
        if rule is None or target is not None:  # each cell alone (budget only: no target)
            for s in self.running():
                vals = [x for _, x in self.values(s, m)]
                cs = confidence_sequence(vals, alpha=alpha, lo=self.lo, hi=self.hi)
                c = self.cells[s.key]
                c.update(n=m, n_scored=len(vals), interval=_interval(cs))
                if target is not None and vals and cs.half_width <= target:
                    c.update(status="stopped", reason=TARGET_MET)
                elif last:
                    c.update(status="stopped", reason=EXHAUSTED)
            return
        for comp in self.comparisons:
            if comp["status"] != "running":
                continue
            a = dict(self.values(by_key[comp["cell"]], m))
            b = dict(self.values(by_key[comp["baseline_cell"]], m))
            common = [q for q in a if q in b]  # in the sequential order
            cs = paired_sequence(
                [a[q] for q in common], [b[q] for q in common], alpha=alpha, lo=self.lo, hi=self.hi
            )
            comp.update(n=m, n_scored=len(common), interval=_interval(cs))
            if common and cs.excludes(0.0):
                comp.update(status="stopped", reason=TARGET_MET)
            elif last:
                comp.update(status="stopped", reason=EXHAUSTED)
        for s in self.running():
            c = self.cells[s.key]
            vals = [x for _, x in self.values(s, m)]
            cs = confidence_sequence(vals, alpha=alpha, lo=self.lo, hi=self.hi)
            c.update(n=m, n_scored=len(vals), interval=_interval(cs))
            mine = [x for x in self.comparisons if s.key in (x["cell"], x["baseline_cell"])]
            if all(x["status"] == "stopped" for x in mine):
                reasons = {x["reason"] for x in mine}
                c.update(status="stopped", reason=reasons.pop() if len(reasons) == 1 else SETTLED)

    def spend_out(self, why: str, m: int) -> None:
        """The budget is spent during the step to the first ``m`` questions: every running cell and
        comparison stops, at the questions it finished (some cells may have run the step, others
        not), with its interval there."""
        self.stopped_by = why
        by_key = {s.key: s for s in self.specs}
        vals = {s.key: self.values(s, m) for s in self.running()}
        for comp in self.comparisons:
            if comp["status"] != "running":
                continue
            a, b = dict(vals[comp["cell"]]), dict(vals[comp["baseline_cell"]])
            common = [q for q in a if q in b]
            cs = paired_sequence(
                [a[q] for q in common], [b[q] for q in common], alpha=self.seq.alpha, lo=self.lo, hi=self.hi
            )
            comp.update(
                status="stopped",
                reason=BUDGET_SPENT,
                budget=why,
                n=len(common),
                n_scored=len(common),
                interval=_interval(cs),
            )
        for key, v in vals.items():
            c = self.cells[key]
            n_done = m - self.todo(by_key[key], m)
            cs = confidence_sequence([x for _, x in v], alpha=self.seq.alpha, lo=self.lo, hi=self.hi)
            c.update(status="stopped", reason=BUDGET_SPENT, budget=why, n=n_done, n_scored=len(v))
            c.update(interval=_interval(cs))

    def record(self) -> None:
        rec = {
            "settings": self.seq.model_dump(mode="json"),
            "questions": len(self.order),
            "step": self.step,
            # the questions actually run: the most any cell reached (a budget stop can end a step
            # before any cell ran it, and a stopped cell stays where it stopped)
            "added": max((int(c.get("n", 0)) for c in self.cells.values()), default=0),
            "spent": _spent(self.out),
            "stopped_by_budget": self.stopped_by,
            "warnings": [SHARED_PASSAGES] if self.shared_passages else [],
            # every cell stopped by its target or the dataset's end (a budget stop may be resumed)
            "finished": not self.running() and self.stopped_by is None,
            "cells": self.cells,
            "comparisons": self.comparisons,
        }
        path = self.out / DECISIONS
        with naming(path):
            atomic_write_text(path, json.dumps(json_safe(rec), indent=2, allow_nan=False))


def _meta(spec: RunSpec) -> dict[str, Any]:
    """A cell's grid axes, as its results lines and ``stats`` name them."""
    return {
        "cell": spec.key,
        "protocol": spec.protocol_dir,
        "agent": spec.agent_model if PROTOCOLS[spec.protocol].needs_agent else None,
        "judge": spec.judge_model,
        "tools": list(spec.tools),
        "best_of_n": spec.best_of_n,
    }


def check_sequential(exp: Experiment, specs: Sequence[RunSpec]) -> None:
    """What a sequential config asks that can be checked before a call: a sign rule's comparisons,
    a dollar budget's prices (a model without one would make the budget unknowable), and that a
    folder's sequential run is resumed with its own order and level (changing either after the
    values were seen would void the sequences' guarantee)."""
    seq = exp.config.sequential
    if seq is None:
        return
    _Controller(exp, exp.out, specs, exp.questions())  # refuses cells with nothing to compare with
    try:
        old = json.loads((exp.out / DECISIONS).read_text()).get("settings") or {}
    except (OSError, ValueError, AttributeError):
        old = {}
    for key in ("seed", "alpha"):
        was = old.get(key)
        if was is not None and was != getattr(seq, key):
            raise ConfigError(
                f"sequential.{key}: {exp.out} holds a sequential run with {key} {was}; resuming it with "
                f"{getattr(seq, key)} would choose it after seeing the results. Use {key}: {was}, or "
                "--out NEW_DIR for a new run"
            )
    if seq.budget is not None and seq.budget.dollars is not None:
        from seerbench.models import default_tracker

        prices = default_tracker().prices
        for s in specs:
            for model in exp.cell_models(s):
                if prices.cost(model, 1, 1) is None:
                    raise ConfigError(
                        f"sequential.budget.dollars: model {model} has no price, so the spend cannot be "
                        "known; add it to the price table (seerbench --prices FILE) or budget calls/tokens"
                    )


async def run_sequential(
    exp: Experiment,
    out: Path,
    specs: Sequence[RunSpec],
    store: QuestionStore,
    progress: Progress | None,
    on_start: OnStart | None,
) -> list[RunResult]:
    """Run the grid sequentially (see the module docstring) on ``exp.executor``, one cell's batch
    at a time; the results of each cell's last batch."""
    ctl = _Controller(exp, out, specs, store)
    seq = ctl.seq
    results: dict[str, RunResult] = {}
    started: set[str] = set()

    def first_start(spec: RunSpec, done: int, total: int) -> None:
        if on_start is not None and spec.key not in started:
            started.add(spec.key)
            on_start(spec, done, total)

    n = len(store)
    for step in _steps(n, seq.batch):
        m = min(n, step * seq.batch)
        view = SequentialQuestions(store, ctl.order, m)
        for spec in ctl.running():
            if ctl.todo(spec, m):  # a replayed step (all done) spends nothing: no budget check
                why = _over(_spent(out), seq)
                if why is not None:
                    ctl.spend_out(why, m)
                    break
            (results[spec.key],) = await exp.executor.run_cells(exp, out, [spec], view, progress, first_start)
        ctl.step = step
        if ctl.stopped_by is None:
            ctl.decide(m)
        ctl.record()
        if ctl.stopped_by is not None or not ctl.running():
            break
    return [results[s.key] for s in specs if s.key in results]


def _steps(n: int, batch: int) -> Iterator[int]:
    yield from range(1, max(1, math.ceil(n / batch)) + 1)
