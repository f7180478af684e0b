"""`seerbench run CONFIG`, `seerbench stats DIR` and `seerbench show DIR QUESTION_ID`."""

from __future__ import annotations

import asyncio
import logging
import math
import re
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any, get_args

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

from seerbench._format import ci, count, num
from seerbench._lock import lock_holder
from seerbench.analysis import pressure_section
from seerbench.analysis.run import summarize_run
from seerbench.cli._app import app, one_of
from seerbench.cli._common import WholeNames, cli_plugins, console, err_console, print_json, quiet
from seerbench.cli._pressure import print_pressure
from seerbench.errors import ConfigError, did_you_mean
from seerbench.experiment import CellPlan, Experiment, ExperimentConfig, RayExecutor, RunSpec
from seerbench.metrics import SCORE_TYPES, FailurePolicy, beta_key
from seerbench.models import default_tracker
from seerbench.provenance import environment_lines
from seerbench.results import NONE_SCORED
from seerbench.runs import (
    CELL_AXES,
    PLAN_IN_PROGRESS,
    TORN,
    RunFolder,
    check_beta,
    check_eps,
    not_compared,
    stop_reason,
    stop_target,
    why_no_comparison,
)

log = logging.getLogger(__name__)


def _usage_line() -> str:
    t = default_tracker().totals()
    cost = "unknown" if t.cost is None else f"${t.cost:.4f}"
    return (
        f"calls {t.calls}  cache hits {t.cache_hits}  tokens {t.prompt_tokens + t.completion_tokens}  "
        f"retries {t.retries}  errors {t.errors}  cost {cost}"
    )


def _usage_since(before: Any) -> dict[str, Any]:
    """This run's usage: the process's totals less ``before`` (the library's tracker is shared)."""
    now = default_tracker().totals().as_dict()
    out = {k: v - getattr(before, k) for k, v in now.items() if k != "cost"}
    out["cost"] = None if now["cost"] is None or before.cost is None else now["cost"] - before.cost
    return out


def _eta(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "-:--"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def cost_weights(plans: list[CellPlan]) -> dict[str, float]:
    """Per cell, the expected tokens (prompt and completion, :meth:`Experiment.plan`) of one of its
    questions, less those of calls that repeat an earlier request (the cache answers them): what
    the ETA weighs a question by. A cell that makes no model call weighs a token's worth, so that
    it still counts as done work."""
    return {
        p.spec.key: max(
            (p.prompt_tokens + p.completion_tokens - p.repeat_tokens) / p.n_todo if p.n_todo else 0.0, 1.0
        )
        for p in plans
    }


def _eta_weights(exp: Experiment) -> dict[str, float] | None:
    """What a question of each cell costs, for the ETA: the dry run's estimate (model-free, about a
    second). Only advisory: a protocol that cannot run on the plan's stand-in answers (a plugin
    that parses its models' text its own way) leaves every question weighing the same, and the run
    goes on; the dry run itself still reports the failure."""
    try:
        return cost_weights(exp.plan(sample=1))
    except Exception as e:  # the ETA must never stop a run
        log.debug("no ETA weights (%s: %s); every question counts the same", type(e).__name__, e)
        return None


class _Progress:
    """Questions done and ETA first, then the cell. A live display on a terminal; on a pipe or a
    log file (CI, nohup), a plain line every ``every`` seconds (a thread prints it while no
    question ends) and when a cell ends, with the calls, cache hits and tokens so far.

    The ETA weighs each cell's questions by ``weights`` (:func:`cost_weights`: a debate question
    takes ten times a naive judge's tokens); without weights every question counts the same."""

    def __init__(
        self,
        specs: list[RunSpec],
        n_questions: int,
        *,
        enabled: bool,
        every: float = 10.0,
        weights: dict[str, float] | None = None,
    ) -> None:
        self.enabled = enabled
        self.total = len(specs) * n_questions
        self.weights = {s.key: (weights or {}).get(s.key, 1.0) for s in specs}
        self.work_total = sum(self.weights.values()) * n_questions
        self.done: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        self.live = enabled and err_console.is_terminal
        self.every = every
        self.t0 = time.monotonic()
        self.work0 = 0.0
        self.timing = False  # set at the first finished question, when t0 and work0 restart
        self.last_print = 0.0
        self.bar: Progress | None = None
        self.tasks: dict[str, TaskID] = {}
        self.current: tuple[RunSpec, int] | None = None  # the cell last reported, and its questions
        self._lock = threading.Lock()  # the heartbeat thread reads what the run's callbacks write
        self._beat: threading.Thread | None = None
        self._stop = threading.Event()
        if self.live:
            self.bar = Progress(
                MofNCompleteColumn(),
                TextColumn("{task.fields[eta]}"),  # on the all-cells row only
                BarColumn(bar_width=16),
                TextColumn("{task.description}"),
                console=err_console,
            )
            self.all = self.bar.add_task("[bold]all cells[/]", total=self.total, eta=f"eta {_eta(None)}")
            self.usage = self.bar.add_task("", total=None, start=False, eta="")

    def __enter__(self) -> _Progress:
        if self.bar:
            self.bar.__enter__()
        elif self.enabled:  # plain lines: one every `every` seconds even while no question ends
            self._stop = threading.Event()
            self._beat = threading.Thread(target=self._heartbeat, name="seerbench-progress", daemon=True)
            self._beat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar:
            self.bar.__exit__(None, None, None)
        if self._beat is not None:
            self._stop.set()
            self._beat.join()

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.every / 4):
            with self._lock:
                if self.current is not None and time.monotonic() - self.last_print >= self.every:
                    self._print(*self.current, time.monotonic())

    def start(self, spec: RunSpec, done: int, total: int) -> None:
        with self._lock:
            self.done[spec.key] = done
            self.work0 += done * self.weights.get(spec.key, 1.0)  # done before this run: not its rate
            if self.bar:
                for key in list(self.tasks):  # one row for the running cell; finished cells drop out
                    self.bar.remove_task(self.tasks.pop(key))
                task = self.bar.add_task(escape(spec.key), total=total, completed=done, eta="")
                self.tasks[spec.key] = task
            self._update(spec, total, force=True)

    def _work(self) -> float:
        return sum(n * self.weights.get(k, 1.0) for k, n in self.done.items())

    def eta(self, now: float) -> float | None:
        """Seconds left: the work left at this run's rate of work (questions weighted by cost),
        counted from its first finished question (which also paid for loading the models)."""
        if not self.timing:
            return None
        work = self._work()
        rate = (work - self.work0) / max(now - self.t0, 1e-9)
        return (self.work_total - work) / rate if rate > 0 else None

    def step(self, spec: RunSpec, done: int, total: int, errors: int) -> None:
        with self._lock:
            self.done[spec.key] = done
            self.errors[spec.key] = errors
            if not self.timing:  # the rate's clock starts here: a model's load is not its pace
                self.timing, self.t0, self.work0 = True, time.monotonic(), self._work()
            self._update(spec, total, force=done == total)

    def _update(self, spec: RunSpec, total: int, *, force: bool) -> None:
        if not self.enabled:
            return
        self.current = (spec, total)
        done_all = sum(self.done.values())
        err = self.errors.get(spec.key, 0)
        now = time.monotonic()
        if self.bar:
            self.bar.update(self.all, completed=done_all, eta=f"eta {_eta(self.eta(now))}")
            if spec.key in self.tasks:  # on Ray several cells run at once; the row is the last started
                self.bar.update(
                    self.tasks[spec.key],
                    completed=self.done[spec.key],
                    description=escape(spec.key) + (f" [red]{err} failed[/]" if err else ""),
                )
            self.bar.update(self.usage, description=f"[dim]{_usage_line()}")
            return
        if force or now - self.last_print >= self.every:
            self._print(spec, total, now)

    def _print(self, spec: RunSpec, total: int, now: float) -> None:
        """The plain progress line: questions done, ETA, the running cell, this process's usage."""
        self.last_print = now
        width = len(str(self.total))
        err = self.errors.get(spec.key, 0)
        t = default_tracker().totals()
        print(
            f"[{sum(self.done.values()):>{width}}/{self.total}] eta {_eta(self.eta(now))}  "
            f"{spec.key} {self.done[spec.key]}/{total}"
            + (f" ({err} failed)" if err else "")
            + f"  calls {t.calls}  cache hits {t.cache_hits}  tokens {t.prompt_tokens + t.completion_tokens}"
            + (f"  errors {t.errors}" if t.errors else ""),
            file=sys.stderr,
            flush=True,
        )


#: Where ``run --executor`` runs questions.
EXECUTORS = ("local", "ray")


@app.command()
def run(
    config: Annotated[Path, typer.Argument(help="Experiment YAML (see examples/quickstart.yaml).")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Output folder (overrides the config's `out`).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", help="Run at most N questions (overrides the config).")
    ] = None,
    new: Annotated[
        bool,
        typer.Option(
            "--new",
            help=(
                "If the output folder holds results this config would "
                "change, write to (or resume) a fresh sibling folder."
            ),
        ),
    ] = False,
    concurrency: Annotated[
        int | None, typer.Option(help="Questions in flight at once (overrides the config).")
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Show the grid cells, questions to run, expected model calls, tokens and cost; run nothing.",
        ),
    ] = False,
    wide: Annotated[
        bool, typer.Option("--wide", help="More columns (JSE, ASE at beta 1; parse failures), 3 decimals.")
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the final stats as JSON (same shape as `stats --json`).")
    ] = False,
    executor: Annotated[
        str,
        typer.Option(
            "--executor",
            metavar=one_of(EXECUTORS),
            help=(
                "Where questions run: local (this process) or "
                "ray (Ray tasks; this process writes the results)."
            ),
        ),
    ] = "local",
    address: Annotated[
        str | None,
        typer.Option(
            "--address",
            help=(
                "With --executor ray: the cluster to join (ray://HOST:10001, "
                "auto); default $RAY_ADDRESS, else a local Ray instance."
            ),
        ),
    ] = None,
    cache_scope: Annotated[
        str | None,
        typer.Option(
            "--cache-scope",
            help=(
                "A name put in every model cache key (overrides the config's "
                "cache_scope): a new scope makes fresh calls without clearing the cache."
            ),
        ),
    ] = None,
) -> None:
    """Run an experiment grid; resumes where a previous run of the same config stopped."""
    if executor not in EXECUTORS:
        raise ConfigError(f"--executor must be {' or '.join(EXECUTORS)}; got {executor!r}")
    if address is not None and executor != "ray":
        raise ConfigError("--address names a Ray cluster: use it with --executor ray")
    if executor == "ray" and cli_plugins():
        raise ConfigError(
            f"--plugin {' '.join(cli_plugins())} is imported in this process only, and Ray workers "
            "rebuild the experiment from the config: list the plugin in the config's plugins: instead"
        )
    cfg = ExperimentConfig.from_yaml(config)
    given = {
        "out": None if out is None else str(out),
        "limit": limit,
        "concurrency": concurrency,
        "cache_scope": cache_scope,
    }
    updates: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if updates.get("cache_scope") == "":
        updates["cache_scope"] = None  # --cache-scope '': the default scope
    if updates:  # each key from the flag of its name: a refused value is the flag's
        cfg = cfg.with_updates(flags={k: "--" + k.replace("_", "-") for k in updates}, **updates)
    exp = Experiment(cfg, executor=RayExecutor(address=address) if executor == "ray" else None)
    if dry_run:
        _print_plan(exp.plan(), exp, json_out=json_out)
        return
    specs = exp.check()
    show = not (json_out or quiet())
    weights = _eta_weights(exp) if show else None
    started, usage_before = time.time(), default_tracker().totals()
    with _Progress(specs, len(exp.questions()), enabled=show, weights=weights) as bar:
        results = asyncio.run(exp.arun(new=new, progress=bar.step, on_start=bar.start))
    stats = [r.stats for r in results]
    failed = sum(r.n_errors for r in results)
    pressure = pressure_section(exp.out, stats)  # {} unless cells differ only in best-of-N
    decisions = RunFolder(exp.out).decisions() if cfg.sequential is not None else None
    if json_out:
        print_json(
            {
                "run_dir": str(exp.out),
                "cells": stats,
                "paired": [],
                "skipped_lines": 0,
                **pressure,
                **({"sequential": decisions} if decisions is not None else {}),
                "failed_question_runs": failed,
                "usage": _usage_since(usage_before),
                "wall_s": round(time.time() - started, 3),
            }
        )
    elif not quiet():
        _print_stats(stats, title=f"{cfg.name}: {exp.out}", wide=wide)
        if pressure:
            print_pressure(pressure["pressure"])
        if decisions is not None:
            print_decisions(decisions)
        console.print(f"[dim]{_usage_line()}  wall {time.time() - started:.1f}s[/]")
        n_run, held = len(exp.questions()), max((s.get("n_questions", 0) for s in stats), default=0)
        if held > n_run:
            console.print(
                f"[dim]The table counts every question the folder holds (up to {held}); this run's "
                f"dataset{' and limit' if cfg.limit else ''} gave {n_run}.[/]"
            )
        if exp.n_skipped:
            console.print(
                f"[yellow]{exp.n_skipped} questions without exactly one true option were left out.[/]"
            )
        if exp.questions().merged_note:
            console.print(f"[yellow]{escape(str(exp.questions().merged_note))}.[/]")
        console.print(f"results: {exp.out}/  (seerbench stats {exp.out})")
    unscored = _unscored(stats)
    if unscored:
        err_console.print(f"[red]{escape(unscored)}[/]", soft_wrap=True)  # cell names stay whole
    if failed:
        n_runs = sum(r.n_done + r.n_errors for r in results)
        err_console.print(
            f"[red]{failed} of {n_runs} question runs failed in {sum(1 for r in results if r.n_errors)} "
            "cells; finished results are kept: run the same command again to retry the rest.[/]"
        )
        for r in results:
            for e in r.errors[:3]:
                err_console.print(f"  {escape(r.spec.key)}: {escape(e)}")
        raise typer.Exit(1)
    if unscored:
        raise typer.Exit(1)


def _unscored(stats: list[dict[str, Any]], shown: int = 5) -> str:
    """The run's failure message for cells that ran questions but scored none ('' when none did):
    each cell with its warning's reason and fix. Such a run measured nothing there, so it fails."""
    cells = []
    for s in stats:
        if s.get("n_questions") and not s.get("n_scored"):
            why = next(
                (w for w in (s.get("diagnostics") or {}).get("warnings", []) if w.startswith(NONE_SCORED)),
                NONE_SCORED + "every verdict failed to parse",
            )
            cells.append((str(s.get("cell", "?")), why[len(NONE_SCORED) :]))
    if not cells:
        return ""
    lines = [
        f"{len(cells)} of {len(stats)} cells scored no question, so the run measured nothing there "
        "(a rerun gives the same answers; finished results are kept):",
        *(f"  {cell}: {why}" for cell, why in cells[:shown]),
    ]
    if len(cells) > shown:
        lines.append(f"  and {len(cells) - shown} more cells")
    return "\n".join(lines)


def _print_plan(plans: list[CellPlan], exp: Experiment, *, json_out: bool) -> None:
    rows = [
        {
            "cell": p.spec.key,
            "questions": p.n_questions,
            "to_run": p.n_todo,
            "calls": round(p.calls),
            "prompt_tokens": round(p.prompt_tokens),
            "completion_tokens_max": round(p.completion_tokens),
            "cost_usd_max": p.cost,
            "repeat_calls": round(p.repeat_calls),
        }
        for p in plans
    ]
    costs = [p.cost for p in plans]
    total = {
        "cells": len(plans),
        "to_run": sum(p.n_todo for p in plans),
        "calls": round(sum(p.calls for p in plans)),
        "prompt_tokens": round(sum(p.prompt_tokens for p in plans)),
        "completion_tokens_max": round(sum(p.completion_tokens for p in plans)),
        "cost_usd_max": None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
        "repeat_calls": round(sum(p.repeat_calls for p in plans)),
    }
    holder = lock_holder(exp.out)  # another run writing the folder now: the plan is a snapshot
    if json_out:
        print_json({"out": str(exp.out), "cells": rows, "total": total, "in_progress": holder})
        return
    t = Table(
        title=f"dry run: {exp.config.name} -> {exp.out}",
        caption="before cache hits; prompt tokens ~ chars/4; completion tokens at most max_tokens",
    )
    for col in ("cell", "to run", "calls", "tokens in", "out (max)", "cost (max)"):
        t.add_column(col, overflow="fold", justify="left" if col == "cell" else "right")

    def cost(c: Any) -> str:
        return "unknown" if c is None else f"${c:.4f}"

    for r in rows:
        t.add_row(
            escape(str(r["cell"])),
            f"{count(r['to_run'])}/{count(r['questions'])}",
            count(r["calls"]),
            count(r["prompt_tokens"]),
            count(r["completion_tokens_max"]),
            cost(r["cost_usd_max"]),
        )
    t.add_row(
        "[bold]total[/]",
        count(total["to_run"]),
        count(total["calls"]),
        count(total["prompt_tokens"]),
        count(total["completion_tokens_max"]),
        cost(total["cost_usd_max"]),
    )
    console.print(t)
    calls, repeats = round(sum(p.calls for p in plans)), round(sum(p.repeat_calls for p in plans))
    if repeats:
        console.print(
            f"{count(repeats)} of the {count(calls)} calls repeat an earlier request of the grid exactly, "
            f"so the disk cache answers them: expect about {count(calls - repeats)} model calls"
        )
    if holder is not None:
        console.print(f"[yellow]{escape(PLAN_IN_PROGRESS.format(holder=holder))}[/]")


def _axis_value(s: dict[str, Any], axis: str) -> str:
    v = s.get(axis)
    if axis == "tools":
        return "+".join(v) if v else "none"
    if axis == "best_of_n":
        return str(v or 1)
    return str(v) if v else "-"


def stats_table(
    stats: list[dict[str, Any]], *, title: str, beta: float = 1.0, score: str = "log", wide: bool = False
) -> WholeNames:
    """One row per cell. The protocol is always a column; agent, judge, tools and best-of-N are
    columns when they vary between cells (else they are named in the title), so no two rows look
    alike. ``wide`` adds JSE/ASE and parse failures and prints 3 decimals. The name columns are
    never wrapped (:class:`WholeNames`: the protocol is what ``--baseline`` takes)."""
    b = beta_key(beta)
    digits = 3 if wide else 2
    # "-" (a protocol without an agent) and "trust" (BlindTrust's judge) are placeholders, not values
    placeholder = {"agent": {"-"}, "judge": {"trust"}, "tools": set(), "best_of_n": set(), "adversary": {"-"}}
    axes = [*CELL_AXES[1:], "adversary"]  # the adversary: cross-play cells only
    varying = [a for a in axes if len({_axis_value(s, a) for s in stats} - placeholder[a]) > 1]
    fixed = []
    for a in axes:
        values = sorted({_axis_value(s, a) for s in stats} - placeholder[a] - {"none", "1"})
        if a not in varying and values:
            fixed.append(f"{'best of' if a == 'best_of_n' else a} {values[0]}")
    t = Table(title=title + (f"\n[dim]{', '.join(fixed)}[/]" if fixed else ""))
    cols = ["protocol", *("BoN" if a == "best_of_n" else a for a in varying), "n"]  # best-of-N
    cols += (
        ["fail", f"ASD({score})", f"JSE_{b}({score})", f"ASE_{b}({score})", "accuracy"]
        if wide
        else [f"ASD({score})", "accuracy"]
    )
    left_out = [_left_out(s) for s in stats]
    if any(left_out):
        cols.append("not counted")
    for col in cols:
        t.add_column(col)
    for s, lo in zip(stats, left_out, strict=True):
        m = s["metrics"]
        row = [escape(str(s["protocol"])), *(escape(_axis_value(s, a)) for a in varying), str(s["n_scored"])]
        if wide:
            row += [
                str(s["parse_failures"]),
                ci(m.get("asd", {}).get(score), digits),
                ci(m.get(f"jse_{b}", {}).get(score), digits),
                ci(m.get(f"ase_{b}", {}).get(score), digits),
                ci(m.get("judge_accuracy"), digits),
            ]
        else:
            row += [ci(m.get("asd", {}).get(score), digits), ci(m.get("judge_accuracy"), digits)]
        if any(left_out):
            row.append(escape(lo))
        t.add_row(*row)
    if stats:
        clustered = [s for s in stats if s.get("clusters")]
        t.caption = (
            "mean [95% CI: bootstrap over questions; accuracy: Wilson]; "
            f"eps={stats[0]['eps']}; parse failures {stats[0]['parse_failure_policy']}d"
            + ("" if wide else "; --wide for JSE/ASE")
            + (
                f"\nquestions sharing a passage are resampled together in {len(clustered)} of "
                f"{len(stats)} cell(s) ({', '.join(sorted({str(s['clusters']) for s in clustered}))} "
                "clusters); accuracy there is Wilson at the effective n"
                if clustered
                else ""
            )
        )
    return WholeNames(t, names=1 + len(varying))


#: A cell's counts of what its numbers leave out, as the stats table names them.
def _left_out(s: dict[str, Any]) -> str:
    """'2 failed, 1 foreign line': what a cell's n does not count ('' when nothing). Questions:
    failed, unstarted (a torn last line's question among them) and unreadable (their line is
    damaged); then lines that hold none of those: unreadable (junk), foreign (another config's)
    and duplicate (a question's later line). Each question and each line is counted once."""
    other = (s.get("skipped_lines") or 0) - bool(s.get("torn_last_line")) - (s.get("unreadable") or 0)
    parts = (
        (s.get("failed"), "failed"),
        (s.get("unstarted"), "unstarted"),
        (s.get("unreadable"), "unreadable"),
        (other, "unreadable line"),
        (s.get("foreign_lines"), "foreign line"),
        (s.get("duplicate_lines"), "duplicate line"),
    )
    return ", ".join(
        f"{n} {name}" + ("s" if name.endswith("line") and n != 1 else "") for n, name in parts if n
    )


def _print_stats(
    stats: list[dict[str, Any]], *, title: str, wide: bool, beta: float = 1.0, score: str = "log"
) -> None:
    stats_table(stats, title=title, beta=beta, score=score, wide=wide).print(console)
    groups: dict[str, list[tuple[dict[str, Any], str]]] = {}
    for s in stats:
        for w in (s.get("diagnostics") or {}).get("warnings", []):
            groups.setdefault(re.sub(r"[\d.]+", "#", w), []).append((s, w))
    for items in groups.values():  # one line per kind of warning, not one per cell
        s, w = items[0]
        where = escape(str(s.get("cell") or s["protocol"])) + (
            f" and {len(items) - 1} more cells" if len(items) > 1 else ""
        )
        console.print(f"[yellow]warning[/] {where}: {escape(w)}")


@app.command()
def stats(
    run_dir: Annotated[Path, typer.Argument(help="An experiment output folder.")],
    beta: Annotated[
        float, typer.Option(help="Temperature of the open-choice JSE/ASE column (0, 1, inf or any >= 0).")
    ] = 1.0,
    score: Annotated[str, typer.Option(metavar=one_of(SCORE_TYPES), help="Score type.")] = "log",
    eps: Annotated[
        float | None,
        typer.Option(help="Probability clipping for log scores, in (0, 0.5) (default: the run's)."),
    ] = None,
    parse_failures: Annotated[
        str | None,
        typer.Option(
            metavar=one_of(get_args(FailurePolicy)),
            help="How a verdict that failed to parse counts (default: the run's).",
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(help="Protocol folder to compare against with paired differences, e.g. NaiveJudge."),
    ] = None,
    wide: Annotated[
        bool, typer.Option("--wide", help="More columns (JSE, ASE at --beta; parse failures), 3 decimals.")
    ] = False,
    anytime: Annotated[
        bool,
        typer.Option(
            "--anytime",
            help="Also the anytime-valid 95% interval (confidence sequence) of accuracy and Δaccuracy, "
            "valid however often the run was looked at (docs/budget.md).",
        ),
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print every cell's stats as JSON instead of the table.")
    ] = False,
) -> None:
    """Table of protocol x agent x judge -> ASD, JSE/ASE(beta), accuracy with 95% CIs."""
    check_beta(beta)
    if eps is not None:
        check_eps(eps)
    summary = summarize_run(
        run_dir,
        beta=beta,
        score=score,
        eps=eps,
        parse_failures=parse_failures,
        baseline=baseline,
        anytime=anytime,
        workers=None,  # a large run's cells in parallel
    )
    if json_out:
        print_json(summary)
        return
    _print_stats(summary["cells"], title=str(run_dir), beta=beta, score=score, wide=wide)
    if summary.get("in_progress"):
        console.print(
            f"[yellow]run in progress: {escape(summary['in_progress'])} is writing {escape(str(run_dir))}; "
            "these numbers are what it has finished so far[/]"
        )
    if summary.get("not_started"):
        running = summary.get("in_progress")
        why = "the run has not reached them yet" if running else "the run stopped before them"
        console.print(
            f"[yellow]{len(summary['not_started'])} cell(s) of the grid have no finished question yet "
            f"({why}): {escape(', '.join(summary['not_started']))}[/]"
        )
    _print_unreadable(summary)
    if summary["paired"]:
        t = Table(title=f"paired differences vs {baseline} (same questions)")
        several = len({c["baseline_cell"] for c in summary["paired"]}) > 1  # then name the one each row used
        for col in ("cell", *(["vs"] if several else []), "judge", f"ΔASD({score})", "Δaccuracy"):
            t.add_column(col)
        for c in summary["paired"]:
            vs = [escape(str(c["baseline_cell"]))] if several else []
            t.add_row(
                escape(str(c["cell"])),
                *vs,
                escape(str(c["judge"])),
                ci(c["asd_diff"], 2),
                ci(c["accuracy_diff"], 2),
            )
        WholeNames(t, names=3 if several else 2).print(console)
        paired = {c["cell"] for c in summary["paired"]} | {c["baseline_cell"] for c in summary["paired"]}
        alone = not_compared(summary["cells"], baseline, paired) if baseline is not None else []
        if alone:
            console.print(
                f"[dim]Not compared (no {baseline} cell with the same judge): {escape(', '.join(alone))}[/]"
            )
    elif baseline is not None:
        why = why_no_comparison(summary["cells"], baseline)
        console.print(f"[yellow]No paired differences: {escape(why)}.[/]")
    if "pressure" in summary:
        print_pressure(summary["pressure"])
    if anytime:
        _print_anytime(summary)
    if "sequential" in summary:
        print_decisions(summary["sequential"])

    if "elo" in summary:
        print_elo(summary["elo"])


def _print_unreadable(summary: dict[str, Any]) -> None:
    """What the skipped results lines were: a finished cell's damaged lines (its questions are
    unreadable), a torn last line (a crash), or lines that hold none of the run's questions."""
    cells = summary["cells"]  # a cell's damaged questions are among its warnings (unreadable_note)
    torn = [str(s.get("cell")) for s in cells if s.get("torn_last_line")]
    if torn:
        console.print(f"[yellow]{escape(TORN.format(cells=', '.join(torn)))}[/]")
    other = {  # whole lines that are none of a cell's missing questions: junk
        str(s.get("cell")): s["skipped_lines"] - bool(s.get("torn_last_line")) - (s.get("unreadable") or 0)
        for s in cells
    }
    if sum(other.values()) > 0:
        at = [a for s in cells if other[str(s.get("cell"))] > 0 for a in s.get("damaged_lines_at") or []]
        reasons = summary.get("skipped_reasons") or []
        first = next((r for r in reasons if any(r.startswith(f"{a}: ") for a in at)), at[0] if at else "?")
        console.print(
            f"[yellow]{sum(other.values())} unreadable results line(s) hold none of the run's missing "
            f"questions (junk, or a line of another layout) and were skipped. First: {escape(first)}[/]"
        )


def _print_anytime(summary: dict[str, Any]) -> None:
    """Accuracy's fixed-n interval beside the anytime-valid one, per cell and per comparison."""
    t = Table(title="accuracy: fixed-n 95% interval and anytime-valid 95% confidence sequence")
    for col in ("cell", "n", "fixed-n", "anytime-valid"):
        t.add_column(col, overflow="fold")
    for c in summary["cells"]:
        a = (c.get("anytime") or {}).get("judge_accuracy")
        t.add_row(
            escape(str(c.get("cell"))), str(c.get("n_scored")), ci(c["metrics"]["judge_accuracy"]), ci(a)
        )
    for p in summary["paired"]:
        d = p.get("accuracy_diff_anytime")
        t.add_row(
            escape(f"Δ {p['cell']} - {p['baseline_cell']}"),
            str((p.get("accuracy_diff") or {}).get("n", "-")),
            ci(p.get("accuracy_diff")),
            ci(d),
        )
    console.print(t)
    console.print(
        "[dim]the anytime-valid interval holds however often the run was looked at and whenever it "
        "stopped (questions in file order); ASD is unbounded and not covered[/]"
    )
    for w in summary.get("anytime_warnings") or []:
        console.print(f"[yellow]warning[/] anytime-valid intervals: {escape(str(w))}")


def print_decisions(rec: dict[str, Any]) -> None:
    """A sequential run's decisions (``sequential.json``): per cell and comparison, whether it
    stopped, why, at how many questions, and its anytime-valid interval then."""
    seq = rec.get("settings") or {}
    pct = round(100 * (1 - float(seq.get("alpha", 0.05))))
    t = Table(
        title=f"sequential run: batches of {seq.get('batch')}, target {stop_target(seq)}, "
        f"{pct}% anytime-valid"
    )
    for col in ("cell", "status", "reason", "questions", "anytime-valid interval"):
        t.add_column(col, overflow="fold")
    rows = [(k, c) for k, c in (rec.get("cells") or {}).items()]
    rows += [(f"Δ {c['cell']} - {c['baseline_cell']}", c) for c in rec.get("comparisons") or []]
    for name, c in rows:
        t.add_row(
            escape(str(name)),
            str(c.get("status")),
            escape(stop_reason(c)),
            str(c.get("n")),
            escape(ci(c.get("interval"))),
        )
    console.print(t)
    for w in rec.get("warnings") or []:
        console.print(f"[yellow]warning[/] sequential run: {escape(str(w))}")
    spent = rec.get("spent") or {}
    dollars = spent.get("dollars")
    console.print(
        f"[dim]{rec.get('added')} of {rec.get('questions')} questions run (the most any cell ran); "
        f"spent {spent.get('calls')} calls, {spent.get('tokens')} tokens, "
        + ("unknown $" if dollars is None else f"${dollars:.4f}")
        + "[/]"
    )


def print_elo(elo: dict[str, Any]) -> None:
    """The Elo table of each cross-play tournament: aggregate (its own fit, one rating per
    debater), correct-side and incorrect-side ratings and correct minus incorrect, with their
    intervals, then the win-rate matrix."""

    def iv(x: dict[str, float]) -> str:
        return ci(x, 0)

    for t in elo["tournaments"]:
        pct, nq = round(100 * t["confidence"]), t["n_questions"]
        cis = f"{pct}% CIs by question" if nq >= 2 else "no intervals from one question"
        tab = Table(
            title=f"Elo of the debaters: {t['protocol']}, judge {t['judge']} "
            f"({nq} question{'s' if nq != 1 else ''}, {t['n_matches']} debates, {cis})",
            caption="aggregate: a separate fit with one rating per debater over both sides (Khan et al.'s)",
        )
        score, b = t.get("score", "log"), beta_key(t.get("beta", 1.0))
        cols = ("debater", "aggregate", "correct side", "incorrect side", "correct - incorrect", "debates")
        for col in (*cols, f"ASD({score})", f"ASE_{b}({score})"):
            tab.add_column(col, overflow="fold")
        for r in sorted(t["ratings"], key=lambda r: -r["aggregate"]["estimate"]):
            tab.add_row(
                escape(r["debater"]),
                iv(r["aggregate"]),
                iv(r["correct"]),
                iv(r["incorrect"]),
                iv(r["difference"]),
                str(r["n_matches"]),
                num(r.get("asd"), 2),
                num(r.get("ase"), 2),
            )
        console.print(tab)
        tr = t["trend"]
        if tr["estimate"] is not None and not math.isnan(tr["estimate"]):
            console.print(
                f"correct - incorrect against aggregate Elo: slope {ci(tr, 2)}"
                + (f"; {tr['note']}" if tr.get("note") else "")
                + " "
                "(Khan et al. 2024 find it rising); ASD/ASE: the debater as agent, mean over its opponents",
                highlight=False,
            )
        w = Table(title="win rate: mean judge probability of the row debater's side against the column's")
        w.add_column("")
        for d in t["debaters"]:
            w.add_column(escape(d), overflow="fold")
        for d, row in zip(t["debaters"], t["win_rate"], strict=True):
            w.add_row(escape(d), *(num(v, 2) for v in row))
        console.print(w)


@app.command()
def show(
    run_dir: Annotated[Path, typer.Argument(help="An experiment output folder.")],
    question_id: Annotated[str, typer.Argument(help="A question id (as in the results lines).")],
    cell: Annotated[
        str | None, typer.Option(help="Only this cell (protocol folder/agent-judge folder).")
    ] = None,
    prompts: Annotated[
        bool,
        typer.Option(
            "--prompts/--no-prompts", help="Rebuild the exact prompts every model saw (from the disk cache)."
        ),
    ] = True,
    allow_calls: Annotated[
        bool,
        typer.Option(
            "--allow-calls", help="If the cache lacks a call, call the model to rebuild the prompts."
        ),
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the question's lines and prompts as JSON.")
    ] = False,
) -> None:
    """One question of a run: the transcripts, the judge's verdicts and scores, and the prompts."""
    folder = RunFolder(run_dir)
    cells = [folder.cell(cell)] if cell else folder.cells()
    found = []
    for c in cells:
        for ln in c.results():  # one line at a time: results files can be large
            if ln["question_id"] == question_id:
                found.append((c, ln))
    if not found:  # the ids are read again only for the message: the found path does no extra work
        seen = {str(ln["question_id"]) for ln in cells[0].results()} if cells else set()
        some = ", ".join(sorted(seen)[:3])
        raise ConfigError(
            f"question {question_id!r} is in no results file under {run_dir}"
            f"{did_you_mean(question_id, seen)}; its questions are ids such as {some}"
        )
    exp = Experiment(ExperimentConfig.from_run(run_dir)) if prompts else None
    env = folder.meta.get("environment")
    out = []
    for c, ln in found:
        rec: dict[str, Any] = {"cell": c.key, "line": ln}
        if exp is not None:
            rec["prompts"] = asyncio.run(
                exp.replay_prompts(c.key, question_id, allow_calls=allow_calls, run_dir=run_dir)
            )
        out.append(rec)
    if json_out:
        print_json(out)
        return
    q = found[0][1]["question"]  # the question first, then each cell, then what made the run
    console.print(f"[bold]{escape(question_id)}[/]: {escape(q['text'])}")
    for a in q["answer_cases"]:
        console.print(
            f"  {a['short']}) {escape(str(a['long']))}" + ("  [green](true)[/]" if a["value"] > 0.5 else "")
        )
    for rec in out:
        ln = rec["line"]
        console.rule(escape(rec["cell"]))
        shorts = [a["short"] for a in ln["question"]["answer_cases"]]
        cases = (
            ln["answer_cases"][:1] if ln.get("symmetric") else ln["answer_cases"]
        )  # one run served every case
        for case in cases:
            cp = case["case_probs"]
            probs = cp["probabilities"] or {}
            who = (
                "judge"
                if ln.get("agent") is None
                else "one run for both cases; judge"
                if ln.get("symmetric")
                else f"agent argues {case['short']}; judge"
            )
            console.print(
                f"[bold]{who}[/] {cp['method']}: "
                + ", ".join(f"P({k})={num(probs[k])}" for k in shorts if k in probs)
                + (
                    ""
                    if cp["parse_status"] == "ok"
                    else f"  [red]{cp['parse_status']}: {escape(str(cp['error']))}[/]"
                )
            )
            for turn in cp["transcript"]:
                side = f" ({escape(str(turn['answer_case']))})" if turn.get("answer_case") else ""
                console.print(
                    f"  [cyan]{escape(str(turn.get('speaker')))}[/]{side}: {escape(str(turn.get('content')))}"
                )
        asd = (ln.get("asd") or {}).get("log")
        console.print(f"ASD(log) {num(asd, 4)}  judge accuracy {num(ln.get('judge_accuracy'))}")
        for i, p in enumerate(rec.get("prompts", []), 1):
            console.print(f"[dim]--- request {i}: {p['role']} {escape(p['model'])} ({p['kind']})[/]")
            for m in p["messages"]:
                console.print(f"[magenta]{m['role']}:[/] {escape(m['content'])}")
            console.print(f"[green]-> {escape(str(p['output']))}[/]")
    env_lines = environment_lines(env)
    if env_lines:
        console.rule("[dim]run environment[/]")
    for line in env_lines:  # what made the run: Python, package versions, git revision
        console.print(f"[dim]{escape(line)}[/]", soft_wrap=True)  # a path or hash stays whole
