"""`seerbench rate CONFIG`: the AI fact-verification rater of seed 000 over a factcheck set."""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

from seerbench.cli._app import app
from seerbench.cli._common import console, err_console, plural, print_json, quiet
from seerbench.cli._run import _usage_line


class _Bar:
    """A live bar on a terminal; on a pipe or log, a line every ``every`` seconds and at the end."""

    def __init__(self, enabled: bool, every: float = 10.0) -> None:
        self.enabled, self.every, self.last = enabled, every, 0.0
        self.bar: Progress | None = None
        if enabled and err_console.is_terminal:
            self.bar = Progress(
                MofNCompleteColumn(), TimeRemainingColumn(), BarColumn(bar_width=20), console=err_console
            )
            self.task = self.bar.add_task("rating", total=None)

    def __enter__(self) -> _Bar:
        if self.bar:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar:
            self.bar.__exit__(None, None, None)

    def __call__(self, done: int, total: int, failed: int) -> None:
        if not self.enabled:
            return
        if self.bar:
            self.bar.update(self.task, completed=done, total=total)
            return
        now = time.monotonic()
        if done == total or now - self.last >= self.every:
            self.last = now
            print(
                f"[{done}/{total}] sentences rated" + (f" ({failed} failed)" if failed else ""),
                file=sys.stderr,
                flush=True,
            )


@app.command("rate")
def rate_cmd(
    config: Annotated[Path, typer.Argument(help="Rater YAML (see examples/factcheck.yaml).")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Run folder (overrides the config's `out`).")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Rate at most N sentences.")] = None,
    samples: Annotated[
        int | None, typer.Option("--samples", min=1, help="Samples per sentence (overrides the config).")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Model spec (overrides the config), e.g. local or scripted:factcheck."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
) -> None:
    """Rate sentences with the AI fact-verification rater (seed 000): N samples per sentence, a
    format verifier, majority rating and confidence, and the trace of a representative sample.
    Resumes where a previous run of the same config stopped."""
    from seerbench.factcheck import RaterConfig, rate

    cfg = RaterConfig.from_yaml(config)
    updates: dict[str, object] = {}
    if out is not None:
        updates["out"] = str(out)
    if limit is not None:
        updates["limit"] = limit
    if samples is not None:
        updates["samples"] = samples
    if model is not None:
        updates["model"] = model
    if updates:
        flags: dict[str, str] = {k: f"--{k}" for k in ("out", "limit", "samples", "model") if k in updates}
        cfg = RaterConfig.parse({**cfg.model_dump(), **updates}, str(config), flags=flags)
    started = time.time()
    with _Bar(not (json_out or quiet())) as bar:
        res = asyncio.run(rate(cfg, progress=bar))
    rated = [r for r in res.ratings if r.rating is not None]
    right = sum(1 for r in rated if (r.rating == "accurate") == (r.label == "accurate"))
    rejected: Counter[str] = Counter()
    for r in res.ratings:
        rejected.update(r.trace.get("verifier", {}).get("rejected", {}))
    summary = {
        "run_dir": str(res.out),
        "sentences": len(res.ratings),
        "resumed": res.resumed,
        "failed": len(res.failed),
        "with_rating": len(rated),
        "binary_accuracy_of_rated": right / len(rated) if rated else None,
        "samples": sum(r.n_samples for r in res.ratings),
        "verified_samples": sum(r.n_verified for r in res.ratings),
        "rejected": dict(rejected.most_common()),
    }
    if json_out:
        print_json(summary)
    elif not quiet():
        console.print(
            f"[bold]{escape(cfg.name)}[/]: {plural(len(res.ratings), 'sentence')} rated ({res.resumed} from "
            f"before), {summary['verified_samples']} of "
            f"{summary['samples']} samples passed the format verifier"
        )
        if rejected:
            console.print("rejected: " + ", ".join(f"{k} {v}" for k, v in rejected.most_common()))
        nulls = len(res.ratings) - len(rated)
        acc = summary["binary_accuracy_of_rated"]
        console.print(
            f"rating: {len(rated)} sentences"
            + (f", accuracy {acc:.3f} (binarised)" if acc is not None else "")
            + (f"; {nulls} with no verified sample (rating null)" if nulls else "")
        )
        console.print(f"[dim]{_usage_line()}  wall {time.time() - started:.1f}s[/]")
        console.print(f"ratings: {escape(str(res.out))}/ratings.jsonl")
    if res.failed:
        err_console.print(
            f"[red]{len(res.failed)} sentences failed; finished "
            "ratings are kept: run the same command again to retry.[/]"
        )
        for iid, e in res.failed[:3]:
            err_console.print(f"  {escape(iid)}: {escape(e)}")
        raise typer.Exit(1)
