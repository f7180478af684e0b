"""The typer application and its root options; the command modules register on :data:`app`."""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.core

from seerbench._version import __version__
from seerbench.config import CACHE_DIR_ENV
from seerbench.errors import ConfigError

__all__ = ["app", "one_line_short_helps", "one_of"]


def one_of(values: Iterable[str]) -> str:
    """The help's type column for an option that takes one of fixed ``values`` (its metavar):
    ``[log|logodds|brier|accuracy]``, where typer would say ``<str>``. The command still checks
    the value itself, with its own one-line error."""
    return "[" + "|".join(values) + "]"


def _flag_type(self: typer.core.TyperOption, ctx: Any) -> str | None:
    """An option's type in the help's type column: none for a flag (typer's own says `<bool>`,
    as if `--dry-run` took a value)."""
    return None if self.is_flag and self.metavar is None else _typer_type(self, ctx)


def _item_type(self: typer.core._TyperParameter, ctx: Any) -> str:
    """A list parameter's type as its items' (``<path>``): typer says ``<list[Path]>``, which
    reads as a value to type out. A repeatable option's help says it repeats, an argument of
    several ends in ``...``."""
    label = _typer_display(self, ctx)
    m = re.fullmatch(r"<list\[(\w+)\]>", label)
    return f"<{m[1].lower()}>" if m else label


def _argument_name(self: typer.core.TyperArgument) -> str:
    """An argument's name as usage lines, the help and errors show it: ``RUN_DIR``, as click
    writes one, where typer says ``{run_dir}`` (its metavar where it has one)."""
    return self.metavar if self.metavar is not None else (self.name or "").upper()


def _usage_name(self: typer.core.TyperArgument) -> str:
    """An argument in a usage line: ``RUN_DIR``, ``[RUN_DIR]`` when optional, ``...`` when repeated."""
    name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
    return name + ("..." if self.nargs != 1 else "")


def one_line_short_helps(group: typer.Typer) -> None:
    """Each command's line in its group's help: the first paragraph of its docstring joined into
    one line (rich help keeps the paragraph's line breaks, so a summary broke where its source
    line did), unless the command gives its own ``short_help``; in sub-groups too."""
    import inspect

    for info in group.registered_commands:
        if info.short_help is None:
            doc = info.help or (inspect.getdoc(info.callback) if info.callback else None) or ""
            info.short_help = " ".join(doc.split("\n\n")[0].split()) or None
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            one_line_short_helps(sub.typer_instance)


_typer_type = typer.core.TyperOption.display_type_rich
typer.core.TyperOption.display_type_rich = _flag_type  # type: ignore[method-assign]
_typer_display = typer.core._TyperParameter.display_type
typer.core._TyperParameter.display_type = _item_type  # type: ignore[method-assign]
typer.core.TyperArgument.display_name_raw = property(_argument_name)  # type: ignore[assignment]
typer.core.TyperArgument._usage_display_name = _usage_name  # type: ignore[method-assign]

app = typer.Typer(
    name="seerbench",
    help="Measure scalable-oversight protocols: debate, consultancy, judges, agent score difference.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # `-h` everywhere: sub-commands and sub-groups inherit the root context's help option names.
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"seerbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Debug logging on stderr (and in --log-file).")
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="Errors only: no progress bar, notes or closing summary (a run's stats table "
            "included); --json output and what a reading command shows (stats, show...) still print.",
        ),
    ] = False,
    log_file: Annotated[
        Path | None,
        typer.Option(
            "--log-file", help="Append the log (info and up; debug with -v) to this file.", dir_okay=False
        ),
    ] = None,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            "--cache-dir",
            help=f"Where the disk cache lives (default: ${CACHE_DIR_ENV} or the user cache dir).",
        ),
    ] = None,
    prices: Annotated[
        Path | None,
        typer.Option(
            "--prices",
            help="Price table, YAML or JSON of `spec: {prompt: $/Mtok, completion: $/Mtok}` "
            "(default: $SEERBENCH_PRICES).",
        ),
    ] = None,
    plugin: Annotated[
        list[str] | None,
        typer.Option(
            "--plugin",
            metavar="MODULE|FILE.py",
            help="Import a plugin (a module name, or a .py path from the working folder) before the "
            "command, so its protocols, judges, agents, backends, datasets and tools are known to "
            "every command. Repeatable; a config's `plugins:` are imported too.",
        ),
    ] = None,
) -> None:
    from seerbench.cli._common import (
        NORMAL,
        QUIET,
        VERBOSE,
        configure_logging,
        set_cli_plugins,
        widen_on_pipes,
    )

    widen_on_pipes()
    if verbose and quiet:
        raise ConfigError("-v/--verbose and -q/--quiet exclude each other; give one")
    configure_logging(VERBOSE if verbose else QUIET if quiet else NORMAL, log_file)
    logging.getLogger("seerbench.cli").debug(
        "seerbench %s; python %s; argv %s", __version__, sys.version.split()[0], sys.argv[1:]
    )
    if cache_dir is not None:
        os.environ[CACHE_DIR_ENV] = str(cache_dir)
    if prices is not None:
        from seerbench.models import use_prices

        use_prices(prices)
    set_cli_plugins(list(plugin or []))  # also when none: a second command in one process
