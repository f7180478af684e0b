"""The ``seerbench`` command line. Thin: parses arguments, calls the library, prints.

Each command group lives in its own ``_<group>.py`` module and registers itself on :data:`app`
(defined in ``_app.py``, below the command modules).
Options that apply to every command (``--version``, ``-v``/``-q``, ``--log-file``, ``--cache-dir``,
``--prices``, ``--plugin``) are handled here, before the command runs; a command module asks
:func:`seerbench.cli._common.quiet` whether to print progress and tables.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
from pathlib import Path

import typer

from seerbench.cli import (  # each command module registers its commands on `app`
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
from seerbench.cli._app import app
from seerbench.errors import SeerbenchError

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
    return f"{where}: {e.strerror or os.strerror(e.errno or 0)}"


def _file_in_the_way(path: Path) -> Path | None:
    """The first of ``path`` and its parents that exists and is not a folder."""
    for p in (path, *path.parents):
        if p.exists() or p.is_symlink():
            return None if p.is_dir() else p
    return None


def _warn_unused_prices() -> None:
    from seerbench.models import unused_prices

    unused = unused_prices()
    if unused:
        log.warning(
            "the price table has entries that match no model used here, so they priced nothing: %s "
            "(an entry's key must be the model spec exactly as written in the config or --model)",
            ", ".join(repr(u) for u in unused),
        )


def main() -> None:
    """Console-script entry point: user errors print one line, not a traceback, and exit 2."""
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
        sys.exit(2)
    except OSError as e:
        msg = user_os_error(e)
        if msg is None:
            raise
        typer.secho(f"error: {msg}", fg="red", err=True)
        sys.exit(2)
