"""`seerbench datasets list | show | convert`."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from seerbench.cli._app import app
from seerbench.cli._common import console, err_console, print_json
from seerbench.datasets import (
    get_dataset,
    judge_material,
    list_datasets,
    load_dataset,
    write_questions_jsonl,
)
from seerbench.errors import ConfigError
from seerbench.types import Question

datasets_app = typer.Typer(help="List, inspect and convert datasets.", no_args_is_help=True)
app.add_typer(datasets_app, name="datasets")

_OPTION_HELP = "Dataset option KEY=VALUE (repeatable), e.g. -o k=4 -o quality_path=dev.jsonl."


def _parse_options(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"option {pair!r} should look like KEY=VALUE")
        # YAML scalars give ints, floats and booleans their natural types ("4" -> 4).
        out[key.strip()] = yaml.safe_load(value) if value.strip() else ""
    return out


def _load(name: str, path: Path | None, seed: int | None, options: dict[str, Any]) -> Any:
    if path is not None:
        options["path"] = str(path)
    if seed is not None:
        try:
            accepts_seed = "seed" in inspect.signature(get_dataset(name).loader).parameters
        except ConfigError:
            accepts_seed = False  # a seerbench JSONL path: nothing random to seed
        if accepts_seed:
            options["seed"] = seed
    return load_dataset(name, **options)


@datasets_app.command("list")
def list_cmd(
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Every loader and bundled dataset, with a one-line description and its options."""
    infos = list_datasets()
    if json_out:
        print_json(
            [
                {"name": d.name, "kind": d.kind, "description": d.description, "options": d.options}
                for d in infos
            ]
        )
        return
    t = Table(title="datasets")
    t.add_column("name")
    t.add_column("kind")
    t.add_column("description")
    t.add_column("options")
    for d in infos:
        t.add_row(d.name, d.kind, escape(d.description), escape(", ".join(d.options)))
    console.print(t)


def _agent_text(q: Question, max_source: int) -> str:
    lines = [f"Question: {q.text}"]
    if q.source_text is not None:
        src = q.source_text
        if max_source and len(src) > max_source:
            src = src[:max_source] + f" ... [{len(q.source_text) - max_source} more characters]"
        lines.append(f"Hidden source text:\n{src}")
    for a in q.answer_cases:
        lines.append(f"Option {a.short}: {a.long}   [{'TRUE' if a.is_true else 'false'}]")
        if a.argument:
            lines.append(f"  Argument: {a.argument}")
        lines += [f'  Quote #{i}: "{s}"' for i, s in enumerate(a.quotes, start=1)]
    return "\n".join(lines)


@datasets_app.command("show")
def show_cmd(
    name: Annotated[
        str, typer.Argument(help="A dataset name (see `datasets list`) or a seerbench JSONL file.")
    ],
    path: Annotated[
        Path | None, typer.Option("--path", "-p", help="The input file, for file formats.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=0, help="How many questions to show.")] = 3,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed for datasets that take one.")] = None,
    condition: Annotated[
        str, typer.Option("--condition", "-c", help="Judging condition: Q, S, SA, P, PS, PSA.")
    ] = "Q",
    option: Annotated[list[str] | None, typer.Option("--option", "-o", help=_OPTION_HELP)] = None,
    max_source: Annotated[
        int, typer.Option("--max-source", help="Characters of source text to print (0 = all).")
    ] = 600,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Print questions as a judge sees them (no hidden source text) and as an agent sees them."""
    options = _parse_options(option or [])
    if name in {d.name for d in list_datasets()} and "n" in get_dataset(name).options:
        options.setdefault("n", limit)  # generate only what is shown
    qs = _load(name, path, seed, options)
    shown = list(qs)[:limit]
    views = [(judge_material(q, condition), q) for q in shown]
    if json_out:
        print_json(
            {
                "dataset": name,
                "total": len(qs),
                "skipped": qs.skipped,
                "questions": [
                    {"judge": j.model_dump(mode="json"), "agent": q.model_dump(mode="json")} for j, q in views
                ],
            }
        )
        return
    console.print(f"[bold]{escape(name)}[/]: {len(qs)} question(s), showing {len(shown)}")
    for j, q in views:
        console.print(
            Panel(
                escape(j.render()), title=f"{escape(q.id)}: judge sees ({j.condition})", border_style="cyan"
            )
        )
        console.print(
            Panel(
                escape(_agent_text(q, max_source)),
                title=f"{escape(q.id)}: agent sees",
                border_style="magenta",
            )
        )
    if qs.skipped:
        first = f": {escape(qs.problems[0])}" if qs.problems else ""
        err_console.print(f"[yellow]skipped {qs.skipped} record(s){first}[/]")


@datasets_app.command("convert")
def convert_cmd(
    format: Annotated[
        str, typer.Argument(help="Input format, e.g. quality, single_turn_debate, gsm8k, generic.")
    ],
    input: Annotated[Path, typer.Argument(help="The file in that format.")],
    output: Annotated[Path, typer.Argument(help="Where to write seerbench JSONL.")],
    option: Annotated[list[str] | None, typer.Option("--option", "-o", help=_OPTION_HELP)] = None,
    lenient: Annotated[
        bool, typer.Option("--lenient", help="Skip malformed records instead of failing.")
    ] = False,
) -> None:
    """Convert a published file to seerbench JSONL (one JSON question per line)."""
    options = _parse_options(option or [])
    info = get_dataset(format)
    if "path" not in info.options:
        raise ConfigError(
            f"{format!r} is a generated dataset and reads no file; use `datasets show` or a config"
        )
    if lenient:
        options["lenient"] = True
    qs = load_dataset(format, path=str(input), **options)
    n = write_questions_jsonl(qs, output)
    console.print(f"wrote {n} question(s) to {escape(str(output))}")
    if qs.skipped:
        err_console.print(f"[yellow]skipped {qs.skipped} malformed record(s)[/]")
        for msg in qs.problems[:10]:
            err_console.print(f"  {escape(msg)}")
