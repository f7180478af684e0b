"""`seerbench export RUN_DIR`: one flat row per question per grid cell, as CSV or parquet; or
one Inspect AI log per grid cell (``--format inspect``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from seerbench.cli._app import app, one_of
from seerbench.cli._common import console, err_console, print_json, quiet
from seerbench.errors import ConfigError
from seerbench.export import (
    FORMATS,
    INSPECT_HINT,
    PARQUET_HINT,
    export_inspect,
    export_rewards,
    export_rows,
    inspect_available,
    parquet_available,
    write_csv,
    write_parquet,
)
from seerbench.store import atomic_path

#: What ``--format`` takes: the tables of seerbench.export, and the two folder exports.
EXPORT_FORMATS = (*FORMATS, "inspect", "rewards")

_SUFFIX = {"csv": ".csv", "parquet": ".parquet"}
_ACCEPTS = {
    "csv": (".csv", ".txt", ""),
    "parquet": (".parquet", ".pq", ""),
}  # the file names each format may take


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="An experiment output folder (the `out` of a run).")],
    format: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            metavar=one_of(EXPORT_FORMATS),
            help="What to write (default: from --out's suffix, else csv).",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="File to write (default: RUN_DIR/export.csv or .parquet); - for stdout (csv); "
            "with --format inspect a folder (default RUN_DIR/inspect), with --format rewards a "
            "folder (default RUN_DIR/rewards).",
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print what was written as JSON.")] = False,
) -> None:
    """Per-question results of every grid cell as one flat table (columns: docs/experiments.md,
    Export), or as Inspect AI logs that `inspect view` browses (--format inspect)."""
    fmt = format or ("parquet" if out is not None and out.suffix in (".parquet", ".pq") else "csv")
    if fmt == "inspect":
        _export_inspect(run_dir, out, json_out=json_out)
        return
    if fmt == "rewards":
        _export_rewards(run_dir, out, json_out=json_out)
        return
    if fmt not in FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(EXPORT_FORMATS)}; got {fmt!r}")
    if fmt == "parquet" and not parquet_available():
        raise ConfigError(
            f"--format parquet needs pyarrow, which is not installed: {PARQUET_HINT} (or use --format csv)"
        )
    to_stdout = out is not None and str(out) == "-"
    if to_stdout and fmt != "csv":
        raise ConfigError("--out - (stdout) takes csv only; give a file for parquet")
    if out is not None and not to_stdout and out.suffix.lower() not in _ACCEPTS[fmt]:
        # a CSV under a .parquet or .xlsx name would fool the next program that opens it
        raise ConfigError(
            f"--out {out} does not end like a {fmt} file "
            f"({_SUFFIX[fmt]}); name it so, or pick the --format it ends in"
        )
    ex = export_rows(run_dir)
    if ex.n_cells == 0:
        raise ConfigError(f"no results.jsonl under {run_dir}: the run has not finished a question yet")
    target = out if out is not None else run_dir / f"export{_SUFFIX[fmt]}"
    if to_stdout:
        write_csv(ex.rows, sys.stdout)
    else:
        _write(ex.rows, fmt, target)
    if json_out:
        print_json(
            {
                "out": None if to_stdout else str(target),
                "format": fmt,
                "rows": len(ex.rows),
                "cells": ex.n_cells,
                "skipped_lines": ex.skipped_lines,
            }
        )
    if quiet():
        return
    # notes go to stderr when stdout carries the table or the JSON
    note = err_console if (to_stdout or json_out) else console
    if ex.skipped_lines:
        err_console.print(
            f"[yellow]skipped {ex.n_skipped} torn or corrupt results line(s) (a crash leaves a torn last "
            f"line; rerunning the config redoes them): "
            + ", ".join(f"{escape(k)} ({n})" for k, n in ex.skipped_lines.items())
            + "[/]",
            soft_wrap=True,
        )
    if not json_out:
        where = "stdout" if to_stdout else escape(str(target))
        note.print(
            f"wrote {len(ex.rows)} row(s) from {ex.n_cells} cell(s) to {where}",
            highlight=False,
            soft_wrap=True,
        )


def _export_inspect(run_dir: Path, out: Path | None, *, json_out: bool) -> None:
    if not inspect_available():
        raise ConfigError(f"--format inspect needs inspect-ai, which is not installed: {INSPECT_HINT}")
    if out is not None and str(out) == "-":
        raise ConfigError(
            "--format inspect writes one log file per cell: give --out a folder, not - (stdout)"
        )
    if out is not None and out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; --format inspect writes a folder of .eval logs")
    ex = export_inspect(run_dir, out)
    if json_out:
        print_json(
            {
                "out": str(ex.out_dir),
                "format": "inspect",
                "cells": len(ex.logs),
                "samples": ex.n_samples,
                "logs": {k: str(v) for k, v in ex.logs.items()},
                "skipped_lines": ex.skipped_lines,
            }
        )
    if quiet():
        return
    note = err_console if json_out else console
    if ex.skipped_lines:
        err_console.print(
            f"[yellow]skipped {sum(ex.skipped_lines.values())} torn or corrupt results line(s): "
            + ", ".join(f"{escape(k)} ({n})" for k, n in ex.skipped_lines.items())
            + "[/]",
            soft_wrap=True,
        )
    if not json_out:
        note.print(
            f"wrote {len(ex.logs)} Inspect log(s) with {ex.n_samples} sample(s) to "
            f"{escape(str(ex.out_dir))}; browse them with: inspect view --log-dir {escape(str(ex.out_dir))}",
            highlight=False,
            soft_wrap=True,
        )


def _export_rewards(run_dir: Path, out: Path | None, *, json_out: bool) -> None:
    """Per-argument rewards and per-question preference pairs (docs/tournaments.md, Reward data)."""
    if out is not None and str(out) == "-":
        raise ConfigError("--format rewards writes two files: give --out a folder, not -")
    ex = export_rewards(run_dir, out)
    if json_out:
        print_json(
            {
                "format": "rewards",
                "rewards": str(ex.rewards),
                "preferences": str(ex.preferences),
                "n_rewards": ex.n_rewards,
                "n_preferences": ex.n_preferences,
                "n_ties": ex.n_ties,
                "skipped_lines": ex.skipped_lines,
            }
        )
    if quiet() or json_out:
        return
    console.print(
        f"wrote {ex.n_rewards} rewarded argument(s) to {escape(str(ex.rewards))} and {ex.n_preferences} "
        f"preference pair(s) to {escape(str(ex.preferences))} ({ex.n_ties} tie(s) left out)",
        highlight=False,
        soft_wrap=True,
    )


def _write(rows: list[dict[str, Any]], fmt: str, target: Path) -> None:
    """Write to a temporary sibling and rename, so a failed export never leaves half a file."""
    try:
        with atomic_path(target) as tmp:
            if fmt == "csv":
                with tmp.open("w", newline="", encoding="utf-8") as f:
                    write_csv(rows, f)
            else:
                write_parquet(rows, tmp)
    except OSError as e:
        raise ConfigError(f"cannot write {target}: {e.strerror or e}") from None
