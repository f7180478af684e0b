"""The ``seerbench`` command line. Thin: parses arguments, calls the library, prints.

Each command group lives in its own ``_<group>.py`` module and registers itself on :data:`app`.
Options that apply to every command (``--version``, ``-v``/``-q``, ``--log-file``, ``--cache-dir``,
``--prices``) are handled here, before the command runs; a command module asks
:func:`seerbench.cli._common.quiet` whether to print progress and tables.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from seerbench import __version__
from seerbench.config import CACHE_DIR_ENV
from seerbench.errors import EXIT_INTERNAL, EXIT_USER, ConfigError, SeerbenchError

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
            help="Errors only: no progress bar, tables or notes (--json output still prints).",
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
) -> None:
    from seerbench.cli._common import NORMAL, QUIET, VERBOSE, configure_logging

    if verbose and quiet:
        raise ConfigError("-v/--verbose and -q/--quiet exclude each other; give one")
    configure_logging(VERBOSE if verbose else QUIET if quiet else NORMAL, log_file)
    logging.getLogger("seerbench.cli").debug(
        "seerbench %s; python %s; argv %s", __version__, sys.version.split()[0], sys.argv[1:]
    )
    if cache_dir is not None:
        os.environ[CACHE_DIR_ENV] = str(cache_dir)
    if prices is not None:
        from seerbench.models._usage import use_prices

        use_prices(prices)


# Command modules register themselves on `app` when imported.
from seerbench.cli import (  # noqa: E402
    _complementarity,  # noqa: F401
    _critique,  # noqa: F401
    _datasets,  # noqa: F401
    _estimate,  # noqa: F401
    _export,  # noqa: F401
    _models,  # noqa: F401
    _rate,  # noqa: F401
    _report,  # noqa: F401
    _run,  # noqa: F401
    _study,  # noqa: F401
)

log = logging.getLogger("seerbench.cli")

#: OS errors that come from the user's paths and environment (a folder that is a file, no write
#: permission, a full or read-only disk), not from a bug: one line, exit 2.
_USER_ERRNOS = frozenset(
    {
        errno.EACCES,
        errno.EPERM,
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EEXIST,
        errno.EROFS,
        errno.ENOSPC,
        errno.EDQUOT,
        errno.ENAMETOOLONG,
        errno.ELOOP,
    }
)


def user_os_error(e: OSError) -> str | None:
    """The one-line message for an OS error about a named path caused by the user's files or
    disk, or None when it is not one (then it is a bug, and shows a traceback)."""
    if e.filename is None and e.errno in (errno.ENOSPC, errno.EDQUOT):  # a write that names no file
        return f"{e.strerror or os.strerror(e.errno)}: free some space, then run the same command again"
    if e.filename is None or e.errno not in _USER_ERRNOS:
        return None
    where = os.fsdecode(e.filename)
    if e.filename2 is not None:
        where += f" -> {os.fsdecode(e.filename2)}"
    if e.errno in (errno.EEXIST, errno.ENOTDIR) and e.filename2 is None:
        blocker = _file_in_the_way(Path(where))
        if blocker is not None:  # creating a folder, or a file inside one, where a file is
            return (
                f"{where} is a file, not a folder"
                if blocker == Path(where)
                else f"{where}: {blocker} is a file, not a folder"
            )
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            f"{where}: {e.strerror or os.strerror(e.errno)}: free some space, then run the same "
            "command again (finished results are kept)"
        )
    return f"{where}: {e.strerror or os.strerror(e.errno or 0)}"


def _file_in_the_way(path: Path) -> Path | None:
    """The first of ``path`` and its parents that exists and is not a folder."""
    for p in (path, *path.parents):
        if p.exists() or p.is_symlink():
            return None if p.is_dir() else p
    return None


def _warn_unused_prices() -> None:
    from seerbench.models._usage import unused_prices

    unused = unused_prices()
    if unused:
        log.warning(
            "the price table has entries that match no model used here, so they priced nothing: %s "
            "(an entry's key must be the model spec exactly as written in the config or --model)",
            ", ".join(repr(u) for u in unused),
        )


def main() -> None:
    """Console-script entry point: user errors print one line, not a traceback, and exit 2; an
    internal error prints its traceback and exits 3 (see :mod:`seerbench.errors`)."""
    try:
        try:
            # standalone: always ends in SystemExit (click handles a closed stdout pipe); the fixed
            # name keeps usage lines and the completion script right under `python -m seerbench` too
            app(prog_name="seerbench")
        except SystemExit as e:
            if e.code == 130:  # Ctrl-C (typer turns KeyboardInterrupt into exit 130)
                typer.secho(
                    "interrupted: every finished question is saved; the same command resumes a run",
                    fg="yellow",
                    err=True,
                )
            _warn_unused_prices()  # also after a run that exited 1 for failed questions
            raise
    except SeerbenchError as e:
        typer.secho(f"error: {e}", fg="red", err=True)
        sys.exit(EXIT_USER)
    except OSError as e:
        msg = user_os_error(e)
        if msg is None:
            _internal_error()
        typer.secho(f"error: {msg}", fg="red", err=True)
        sys.exit(EXIT_USER)
    except Exception:
        _internal_error()


def _internal_error() -> NoReturn:
    """A crash of seerbench (or of a plugin): the traceback, then exit 3, so it is never taken
    for a run that finished with some questions failed (exit 1)."""
    traceback.print_exc()
    typer.secho(
        "internal error: the traceback above is a bug in seerbench or in a plugin; finished "
        "results are kept (a rerun resumes). Please report it with the traceback.",
        fg="red",
        err=True,
    )
    sys.exit(EXIT_INTERNAL)
