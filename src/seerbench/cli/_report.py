"""`seerbench report RUN_DIR [RUN_DIR...] [--out FILE]` and `seerbench report --study DB`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seerbench.cli._app import app
from seerbench.cli._common import console, quiet
from seerbench.errors import ConfigError


@app.command()
def report(
    run_dirs: Annotated[
        list[Path] | None, typer.Argument(help="Experiment output folders (several: side by side).")
    ] = None,
    out: Annotated[
        str | None,  # as typed: a trailing slash means a folder, which Path would drop
        typer.Option(
            "--out",
            metavar="<path>",
            help=(
                "The HTML file to write (default: RUN_DIR/report.html; "
                "--study study.sqlite: study.report.html); a folder (or a path ending in /) gets "
                "that name inside it."
            ),
        ),
    ] = None,
    study: Annotated[
        str | None,
        typer.Option(
            "--study", help="A human study's database (the --db of `seerbench study`) instead of runs."
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            help="Protocol folder for the paired differences (default: the run's NaiveJudge folder)."
        ),
    ] = None,
    complementarity: Annotated[
        list[Path] | None,
        typer.Option(
            "--complementarity",
            help="The JSON of `seerbench complementarity --json` (hybridization and reliance); repeatable.",
        ),
    ] = None,
    critique: Annotated[
        list[Path] | None,
        typer.Option("--critique", help="A `seerbench critique` folder (seed 002's measures); repeatable."),
    ] = None,
) -> None:
    """One self-contained HTML file (no network needed) with figures and a transcript browser; past
    10 MB of transcripts, a folder: index.html and the transcript files it loads on demand."""
    from seerbench.report import CHUNK_DIR, build_report, build_study_report

    if study is not None and (run_dirs or complementarity or critique):
        raise ConfigError(
            "give --study alone, not both it and run folders or analyses (make one report for each)"
        )
    if study is not None:
        if baseline is not None:
            raise ConfigError("--baseline applies to run folders, not to --study")
        path = build_study_report(study, out)
    elif run_dirs or complementarity or critique:
        if baseline is not None and not run_dirs:
            raise ConfigError("--baseline applies to run folders")
        path = build_report(
            run_dirs or [],
            out,
            baseline=baseline,
            complementarity=complementarity or [],
            critique=critique or [],
        )
    else:
        raise ConfigError(
            "give one or more run folders (seerbench report runs/quickstart), --complementarity FILE, "
            "--critique DIR, or --study DB"
        )
    if not quiet():
        size = f"{path.stat().st_size / 1e6:.1f} MB"
        parts = sorted((path.parent / CHUNK_DIR).glob("*.js")) if path.name == "index.html" else []
        if parts:  # the folder layout: the page and its transcript files
            mb = sum(p.stat().st_size for p in parts) / 1e6
            size += f"; its transcripts: {len(parts)} files, {mb:.1f} MB in {path.parent / CHUNK_DIR}"
        console.print(f"report: {path} ({size})")
