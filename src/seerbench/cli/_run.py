"""`seerbench run CONFIG` and `seerbench stats DIR`."""

from __future__ import annotations

import asyncio
import json
import math
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from seerbench.cli import app
from seerbench.cli._common import console, print_json
from seerbench.errors import ConfigError
from seerbench.experiment import Experiment, ExperimentConfig, RunSpec
from seerbench.metrics import DEFAULT_EPS, beta_key
from seerbench.models import default_tracker
from seerbench.results import paired, rescore, run_stats


def _usage_line() -> str:
    t = default_tracker().totals()
    cost = "unknown" if t.cost is None else f"${t.cost:.4f}"
    return (f"calls {t.calls}  cache hits {t.cache_hits}  tokens {t.prompt_tokens + t.completion_tokens}  "
            f"retries {t.retries}  errors {t.errors}  cost {cost}")


@app.command()
def run(
    config: Annotated[Path, typer.Argument(help="Experiment YAML (see examples/quickstart.yaml).")],
    out: Annotated[Path | None, typer.Option("--out", help="Output folder (overrides the config's `out`).")] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="Run at most N questions (overrides the config).")] = None,
    new: Annotated[bool, typer.Option("--new", help="If the output folder holds another config's results, write to a fresh sibling folder.")] = False,
    concurrency: Annotated[int | None, typer.Option(help="Questions in flight at once (overrides the config).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the final stats as JSON.")] = False,
) -> None:
    """Run an experiment grid; resumes where a previous run of the same config stopped."""
    cfg = ExperimentConfig.from_yaml(config)
    updates: dict[str, Any] = {}
    if out is not None:
        updates["out"] = str(out)
    if limit is not None:
        updates["limit"] = limit
    if concurrency is not None:
        updates["concurrency"] = concurrency
    if updates:
        cfg = ExperimentConfig.parse({**cfg.model_dump(mode="json", exclude_unset=True), **updates}, source=str(config))
    exp = Experiment(cfg)
    started = time.time()
    tasks: dict[str, TaskID] = {}
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
        TextColumn("[dim]{task.fields[usage]}"), console=console, disable=json_out, transient=False,
    ) as bar:

        def on_start(spec: RunSpec, done: int, total: int) -> None:
            tasks[spec.key] = bar.add_task(spec.key, total=total, completed=done, usage=_usage_line())

        def on_progress(spec: RunSpec, done: int, total: int, errors: int) -> None:
            desc = spec.key + (f" [red]({errors} failed)[/]" if errors else "")
            bar.update(tasks[spec.key], completed=done, description=desc, usage=_usage_line())

        results = asyncio.run(exp.arun(new=new, progress=on_progress, on_start=on_start))
    if json_out:
        print_json({r.spec.key: r.stats for r in results})
        return
    console.print(stats_table([r.stats for r in results], title=f"{cfg.name}: {exp.out}"))
    console.print(f"[dim]{_usage_line()}  wall {time.time() - started:.1f}s[/]")
    if exp.n_skipped:
        console.print(f"[yellow]{exp.n_skipped} questions without exactly one true option were left out.[/]")
    failed = sum(r.n_errors for r in results)
    if failed:
        console.print(f"[red]{failed} question runs failed (see below); run the same command again to retry them.[/]")
        for r in results:
            for e in r.errors[:5]:
                console.print(f"  {r.spec.key}: {e}")
    console.print(f"results: {exp.out}/  (seerbench stats {exp.out})")


def _fmt(s: dict[str, Any] | None) -> str:
    if not s or s.get("n", 0) == 0 or s["mean"] is None or (isinstance(s["mean"], float) and math.isnan(s["mean"])):
        return "n/a"
    return f"{s['mean']:.3f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}]"


def stats_table(stats: list[dict[str, Any]], *, title: str, beta: float = 1.0, score: str = "log") -> Table:
    b = beta_key(beta)
    t = Table(title=title)
    for col in ("protocol", "agent", "judge", "n", "fail", f"ASD({score})", f"JSE_{b}({score})", f"ASE_{b}({score})", "accuracy"):
        t.add_column(col, overflow="fold")
    for s in stats:
        m = s["metrics"]
        t.add_row(
            s["protocol"], s.get("agent") or "-", s["judge"], str(s["n_scored"]), str(s["parse_failures"]),
            _fmt(m.get("asd", {}).get(score)), _fmt(m.get(f"jse_{b}", {}).get(score)), _fmt(m.get(f"ase_{b}", {}).get(score)),
            _fmt(m.get("judge_accuracy")),
        )
    t.caption = (f"mean [95% bootstrap CI]; eps={stats[0]['eps'] if stats else DEFAULT_EPS}; "
                 f"parse failures {stats[0]['parse_failure_policy'] if stats else ''}d") if stats else None
    return t


def _read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@app.command()
def stats(
    run_dir: Annotated[Path, typer.Argument(help="An experiment output folder.")],
    beta: Annotated[float, typer.Option(help="Temperature of the open-choice JSE/ASE column (0, 1, inf or any >= 0).")] = 1.0,
    score: Annotated[str, typer.Option(help="Score type: log, logodds, brier or accuracy.")] = "log",
    eps: Annotated[float | None, typer.Option(help="Probability clipping for log scores (default: the run's).")] = None,
    parse_failures: Annotated[str | None, typer.Option(help="exclude or half (default: the run's).")] = None,
    baseline: Annotated[str | None, typer.Option(help="Protocol folder to compare against with paired differences, e.g. NaiveJudge.")] = None,
    json_out: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Table of protocol x agent x judge -> ASD, JSE/ASE(beta), accuracy with 95% CIs."""
    meta_path = run_dir / "experiment.json"
    if not meta_path.exists():
        raise ConfigError(f"{run_dir} is not an experiment output folder (no experiment.json); run `seerbench run` first")
    cfg = json.loads(meta_path.read_text())["config"]
    eps_v = cfg.get("eps", DEFAULT_EPS) if eps is None else eps
    policy: Any = parse_failures or cfg.get("parse_failures", "exclude")
    if policy not in ("exclude", "half"):
        raise ConfigError("--parse-failures must be 'exclude' or 'half'")
    if score not in ("log", "logodds", "brier", "accuracy"):
        raise ConfigError("--score must be one of log, logodds, brier, accuracy")
    betas = sorted({0.0, 1.0, math.inf, beta})
    cells = []
    for path in sorted(run_dir.glob("*/*/results.jsonl")):
        # rescored with this command's eps and parse-failure policy, for the paired differences too
        lines = [rescore(ln, eps=eps_v, policy=policy, betas=betas) for ln in _read_lines(path)]
        meta = {k: lines[0].get(k) for k in ("protocol", "agent", "judge", "tools", "best_of_n")} if lines else {
            "protocol": path.parent.parent.name, "agent": None, "judge": path.parent.name}
        s = run_stats(lines, meta, eps=eps_v, policy=policy, n_boot=cfg.get("n_boot", 2000), seed=cfg.get("seed", 0), betas=betas, scored=True)
        cells.append((path, lines, s))
    if not cells:
        raise ConfigError(f"no results.jsonl under {run_dir}")
    comparisons = []
    if baseline:
        base = [c for c in cells if c[2]["protocol"] == baseline]
        if not base:
            raise ConfigError(f"no protocol folder {baseline!r} in {run_dir}; have: {sorted({c[2]['protocol'] for c in cells})}")
        for _path, lines, s in cells:
            if s["protocol"] == baseline:
                continue
            for _bp, blines, bs in base:
                if bs["judge"] != s["judge"]:
                    continue
                comparisons.append({
                    "protocol": s["protocol"], "agent": s["agent"], "judge": s["judge"], "baseline": baseline,
                    "asd_diff": paired(lines, blines, "asd", score), "accuracy_diff": paired(lines, blines, "judge_accuracy"),
                })
    if json_out:
        print_json({"cells": [c[2] for c in cells], "paired": comparisons})
        return
    console.print(stats_table([c[2] for c in cells], title=str(run_dir), beta=beta, score=score))
    if comparisons:
        t = Table(title=f"paired differences vs {baseline} (same questions)")
        for col in ("protocol", "agent", "judge", f"ΔASD({score})", "Δaccuracy"):
            t.add_column(col)
        for c in comparisons:
            t.add_row(c["protocol"], c["agent"] or "-", c["judge"], _fmt(c["asd_diff"]), _fmt(c["accuracy_diff"]))
        console.print(t)
