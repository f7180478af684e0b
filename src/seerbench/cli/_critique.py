"""`seerbench critique CONFIG`: answers -> critiques at temperatures, de-duplicated, scored for
helpfulness and sorted (seed 002, section 3.2)."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from seerbench._format import ci
from seerbench.cli._app import app
from seerbench.cli._common import console, err_console, plural, print_json, quiet
from seerbench.cli._rate import _Bar
from seerbench.cli._run import _usage_line


class _AnswerBar(_Bar):
    """The rater's progress bar, counting answers."""

    def __call__(self, done: int, total: int, failed: int) -> None:
        if self.enabled and self.bar is None:
            now = time.monotonic()
            if done == total or now - self.last >= self.every:
                self.last = now
                print(
                    f"[{done}/{total}] answers critiqued" + (f" ({failed} failed)" if failed else ""),
                    file=sys.stderr,
                    flush=True,
                )
            return
        super().__call__(done, total, failed)


@app.command("critique")
def critique_cmd(
    config: Annotated[Path, typer.Argument(help="Critique YAML (see examples/critique.yaml).")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Run folder (overrides the config's `out`).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Only the first N questions (or answers).")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Model spec for every role (overrides the config).")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
) -> None:
    """Write critiques of answers (model, reference, misleading with a planted flaw): one per
    temperature, near duplicates merged, helpfulness elicited from a model, sorted by it. Writes
    critiques.jsonl in the run folder; resumes where a previous run of the same config stopped."""
    from seerbench.critique import CritiqueConfig, generate_critiques

    cfg = CritiqueConfig.from_yaml(config)
    updates: dict[str, object] = {}
    if out is not None:
        updates["out"] = str(out)
    if limit is not None:
        updates["limit"] = limit
    if model is not None:
        updates.update(model=model, answer_model=None, helpfulness_model=None)
    if updates:
        flags: dict[str, str] = {k: f"--{k}" for k in ("out", "limit", "model") if k in updates}
        cfg = CritiqueConfig.parse({**cfg.model_dump(), **updates}, str(config), flags=flags)
    started = time.time()
    with _AnswerBar(not (json_out or quiet())) as bar:
        res = asyncio.run(generate_critiques(cfg, progress=bar))
    n_crit = sum(len(a.critiques) for a in res.answers)
    merged = sum(len(c.merged) for a in res.answers for c in a.critiques)
    summary = {
        "run_dir": str(res.out),
        "critiques_file": str(res.path),
        "answers": len(res.answers),
        "resumed": res.resumed,
        "failed": len(res.failed),
        "critiques": n_crit,
        "merged_duplicates": merged,
        "quotes": sum(1 for a in res.answers for c in a.critiques if c.quote is not None),
        "quotes_verified": sum(1 for a in res.answers for c in a.critiques if c.quote_verified),
        "measures": res.summary,
    }
    if json_out:
        print_json(summary)
    elif not quiet():
        console.print(
            f"[bold]{escape(cfg.name)}[/]: {plural(len(res.answers), 'answer')} critiqued ({res.resumed} "
            f"from before), {n_crit} critiques kept, {merged} near duplicates merged; "
            f"{summary['quotes_verified']} of {summary['quotes']} quotes verified"
        )
        for key, label in (
            ("intended_flaw_found", "intended flaw found (misleading answers)"),
            ("refinement_win_rate", "refinement win rate (critique-conditional vs direct)"),
        ):
            m = res.summary.get(key) or {}
            if m.get("estimate") is not None:
                console.print(f"{label}: {ci(m)} over {plural(m['n'], 'answer')}")
        console.print(f"[dim]{_usage_line()}  wall {time.time() - started:.1f}s[/]")
        console.print(f"critiques: {escape(str(res.path))}")
    if res.failed:
        err_console.print(
            f"[red]{len(res.failed)} answers failed; finished ones "
            "are kept: run the same command again to retry.[/]"
        )
        for aid, e in res.failed[:3]:
            err_console.print(f"  {escape(aid)}: {escape(e)}")
        raise typer.Exit(1)
