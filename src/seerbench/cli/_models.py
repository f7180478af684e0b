"""`seerbench models`, `seerbench ask`, `seerbench cache ...`."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from seerbench.cli._app import app
from seerbench.cli._common import console, print_json
from seerbench.errors import CacheError, ConfigError
from seerbench.models import (
    DEFAULT_MODEL,
    METHODS,
    ElicitConfig,
    default_cache,
    default_tracker,
    elicit,
    get_model,
    list_backends,
)


@app.command()
def models(
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List model backends and spec forms, and which are usable on this machine."""
    infos = list_backends()
    if json_out:
        print_json([vars(i) for i in infos])
        return
    t = Table(title="model specs")
    t.add_column("spec")
    t.add_column("what")
    t.add_column("usable here")
    t.add_column("note")
    for i in infos:
        t.add_row(
            escape(i.form),
            escape(i.description),
            "[green]yes[/]" if i.usable else "[red]no[/]",
            escape(i.note),
        )
    console.print(t)


def _parse_order(order: str) -> tuple[Any, ...]:
    methods = tuple(m.strip() for m in order.split(",") if m.strip())
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise ConfigError(f"--methods: unknown method(s) {bad}; choose from {', '.join(METHODS)}")
    return methods


@app.command()
def ask(
    prompt: Annotated[str, typer.Argument(help="The question, including its lettered options.")],
    model: Annotated[
        str, typer.Option("--model", "-m", help="Model spec (see `seerbench models`).")
    ] = DEFAULT_MODEL,
    options: Annotated[
        str, typer.Option("--options", help="Comma-separated option labels, e.g. A,B.")
    ] = "A,B",
    methods: Annotated[str, typer.Option("--methods", help="Elicitation fallback order.")] = ",".join(
        METHODS
    ),
    max_tokens: Annotated[int, typer.Option(help="Length limit of the free-text answer.")] = 128,
    vote_samples: Annotated[int, typer.Option(help="Samples for the 'vote' method.")] = 5,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Ask a model a question: print its answer text and its probability for each option."""
    opts = [o.strip() for o in options.split(",") if o.strip()]
    cfg = ElicitConfig(order=_parse_order(methods), vote_samples=vote_samples)
    m = get_model(model)

    async def run() -> tuple[Any, Any]:
        out = await m.generate(prompt, max_tokens=max_tokens, temperature=0.0)
        verdict = await elicit(m, prompt, opts, cfg)
        return out, verdict

    def counts() -> tuple[int, int, int, int]:
        u = default_tracker().by_model.get(model)
        return (u.calls, u.cache_hits, u.prompt_tokens, u.completion_tokens) if u else (0, 0, 0, 0)

    before = counts()
    out, verdict = asyncio.run(run())
    # this command's calls only: the free-text answer and every elicitation call (votes included)
    calls, hits, prompt_tokens, completion_tokens = (a - b for a, b in zip(counts(), before, strict=True))
    result = {
        "model": model,
        "text": out.text,
        "probabilities": verdict.probabilities,
        "method": verdict.method if verdict.ok else None,
        "parse_status": verdict.parse_status,
        "error": verdict.error,
        "attempts": verdict.metadata.get("attempts"),
        "usage": {
            "prompt_tokens": prompt_tokens,  # of the fresh model calls (cache hits cost none)
            "completion_tokens": completion_tokens,
            "model_calls": calls,
            "cache_hits": hits,
        },
        "cached": bool(out.cached and verdict.metadata.get("cached")),
    }
    if json_out:
        print_json(result)
        return
    console.print(f"[bold]{model}[/] says:", out.text.strip(), highlight=False)
    if verdict.ok and verdict.probabilities:
        for o, p in verdict.probabilities.items():
            console.print(f"  P({o}) = {p:.3f}")
        console.print(f"[dim]probabilities by: {verdict.method}[/]")
    else:
        console.print(f"[red]could not elicit probabilities:[/] {verdict.error}")
    console.print(
        f"[dim]tokens of fresh calls: {prompt_tokens} prompt + {completion_tokens} completion; "
        + (
            "from the disk cache"
            if result["cached"]
            else "fresh model calls: " + str(result["usage"]["model_calls"])
        )
        + "[/]"
    )


cache_app = typer.Typer(help="Inspect or clear the disk cache of model calls.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")


@cache_app.command("info")
def cache_info(
    json_out: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Where the cache is, how many entries and bytes, per model."""
    info = default_cache().info()
    if json_out:
        print_json(info)
        return
    console.print(f"cache: {info['path']}")
    console.print(f"entries: {info['entries']}   size: {info['bytes'] / 1e6:.2f} MB")
    for k, v in info["by_model"].items():
        console.print(f"  {k}: {v}")


@cache_app.command("clear")
def cache_clear(
    model: Annotated[str | None, typer.Option("--model", help="Only this model spec's entries.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print what was deleted as JSON (asks no confirmation).")
    ] = False,
) -> None:
    """Delete cached model outputs (a damaged cache file: the file itself)."""
    from seerbench.config import cache_dir
    from seerbench.models import CACHE_FILE, remove_cache_files

    try:
        c = default_cache()
        c.info()  # a damaged file fails here, before the question
    except CacheError:
        if model is not None:
            raise ConfigError(
                f"the disk cache {cache_dir() / CACHE_FILE} is damaged, so one model's entries cannot "
                "be picked out: `seerbench cache clear` (without --model) starts it afresh"
            ) from None
        path = cache_dir() / CACHE_FILE
        if not yes and not json_out:
            typer.confirm(f"The disk cache {path} is damaged. Delete it?", abort=True)
        remove_cache_files(path)
        if json_out:
            print_json({"deleted": None, "path": str(path), "damaged": True})
        else:
            console.print(f"deleted the damaged disk cache {path}; the next run starts a new one")
        return
    if not yes and not json_out:
        typer.confirm(f"Delete {'all' if model is None else model + ' '} entries in {c.path}?", abort=True)
    n = c.clear(model)
    if json_out:
        print_json({"deleted": n, "path": str(c.path)})
    else:
        console.print(f"deleted {n} entries from {c.path}")
