"""The ``seerbench`` command line. Thin: parses arguments, calls the library, prints.

Each command group lives in its own ``_<group>.py`` module and registers itself on :data:`app`
(defined in ``_app.py``, below the command modules) when imported. ``seerbench.cli.app`` is the
whole command line (every module imported on first use); :func:`main` imports only the module of
the command it is given (``seerbench run`` never imports scipy.stats) and none for ``--version``.
Options that apply to every command (``--version``, ``-v``/``-q``, ``--log-file``, ``--cache-dir``,
``--prices``, ``--plugin``) are handled here, before the command runs; a command module asks
:func:`seerbench.cli._common.quiet` whether to print progress and tables.
"""

from __future__ import annotations

import errno
import importlib
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import NoReturn

import typer
from typer import Abort

try:  # typer vendors click (as typer._click) in its newer versions; older ones use click itself
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
except ImportError:  # pragma: no cover
    from click.exceptions import ClickException, NoArgsIsHelpError, UsageError  # type: ignore[assignment]

from seerbench import __version__
from seerbench.cli._app import app as _app
from seerbench.cli._app import one_line_short_helps
from seerbench.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_USER,
    ConfigError,
    SeerbenchError,
)

#: Each command (or command group) -> the module that registers it on `app` when imported.
COMMAND_MODULES = {
    "complementarity": "_complementarity",
    "critique": "_critique",
    "datasets": "_datasets",
    "estimate": "_estimate",
    "plan": "_estimate",
    "partition": "_estimate",
    "export": "_export",
    "models": "_models",
    "ask": "_models",
    "cache": "_models",
    "rate": "_rate",
    "report": "_report",
    "run": "_run",
    "stats": "_run",
    "show": "_run",
    "study": "_study",
}
#: Root options that take a value (the command's name is the first word after the root options).
_VALUED_ROOT_OPTIONS = frozenset({"--log-file", "--cache-dir", "--prices", "--plugin"})
#: Every root option: no command has one of these names, so one after the command is misplaced.
_ROOT_OPTIONS = _VALUED_ROOT_OPTIONS | {"-v", "--verbose", "-q", "--quiet"}


def _misplaced_root_option(argv: list[str]) -> str | None:
    """What to say when a root option comes after a known command (`seerbench run cfg.yaml -q`,
    which click refuses as 'No such option' without saying where it goes); else None."""
    name = _command_name(argv)
    if name not in COMMAND_MODULES:
        return None
    rest = argv[argv.index(name) + 1 :]
    words = rest[: rest.index("--")] if "--" in rest else rest
    for i, a in enumerate(words):
        opt = a.split("=", 1)[0]
        if opt in _ROOT_OPTIONS:
            given = " ".join(words[i : i + 2]) if opt == a and opt in _VALUED_ROOT_OPTIONS else a
            return (
                f"{opt} is an option of seerbench itself, not of `{name}`: put it before the command "
                f"(seerbench {given} {name} ...)"
            )
    return None


def _load(modules: list[str]) -> None:
    for m in modules:
        importlib.import_module(f"seerbench.cli.{m}")
    one_line_short_helps(_app)


def __getattr__(name: str) -> typer.Typer:
    """``app``: the Typer application with every command registered (imported on first use, so
    that ``seerbench --version`` and a single command import only what they need)."""
    if name != "app":
        raise AttributeError(f"module 'seerbench.cli' has no attribute {name!r}")
    _load(sorted(set(COMMAND_MODULES.values())))
    globals()["app"] = _app
    return _app


def _command_name(argv: list[str]) -> str | None:
    """The command a command line names: the first word after the root options, or None."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if not a.startswith("-"):
            return a
        i += 2 if a in _VALUED_ROOT_OPTIONS else 1
    return None


def _app_for(argv: list[str]) -> typer.Typer:
    """The application with the modules ``argv`` needs: only its command's, when it names a known
    one; every module otherwise (help, completion, a misspelt command)."""
    module = COMMAND_MODULES.get(_command_name(argv) or "")
    if module is None:
        return __getattr__("app")
    _load([module])
    return _app


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
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            f"{where}: {e.strerror or os.strerror(e.errno)}: free some space, then run the same "
            "command again (finished results are kept)"
        )
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
    models = sys.modules.get("seerbench.models")
    if models is None:  # no model was used (and importing them all takes a tenth of a second)
        return
    unused = models.unused_prices()
    if unused:
        log.warning(
            "the price table has entries that match no model used here, so they priced nothing: %s "
            "(an entry's key must be the model spec exactly as written in the config or --model)",
            ", ".join(repr(u) for u in unused),
        )


def main() -> None:
    """Console-script entry point: user errors print one line, not a traceback, and exit 2; an
    internal error prints its traceback and exits 3 (see :mod:`seerbench.errors`)."""
    argv = sys.argv[1:]
    stdout_at_start = _stdout_identity()
    if argv == ["--version"]:  # nothing to import for it
        typer.echo(f"seerbench {__version__}")
        sys.exit(0)
    try:
        try:
            misplaced = _misplaced_root_option(argv)
            if misplaced is not None:
                raise ConfigError(misplaced)
            # Not standalone: click's own errors (an unknown option...) come out to be printed as
            # every user error is; a closed stdout pipe still exits here. The fixed name keeps
            # usage lines and the completion script right under `python -m seerbench` too.
            code = _app_for(argv)(prog_name="seerbench", standalone_mode=False)
            sys.exit(code or 0)  # a command returns None; typer.Exit(n) (and Ctrl-C: 130) returns n
        except NoArgsIsHelpError:  # `seerbench`, `seerbench cache`: the help was printed
            sys.exit(EXIT_USER)
        except Abort:  # a confirmation answered no (or Ctrl-C, end of input at its prompt)
            typer.echo("Aborted!", err=True)
            sys.exit(1)  # as click says it
        except SystemExit as e:
            if e.code == 130:  # Ctrl-C (typer turns KeyboardInterrupt into exit 130)
                typer.secho(
                    "interrupted: every finished question is saved; the same command resumes a run",
                    fg="yellow",
                    err=True,
                )
            if e.code == 1 and _stdout_closed(stdout_at_start):  # 1 means "questions failed"
                sys.exit(EXIT_BROKEN_PIPE)
            _warn_unused_prices()  # also after a run that exited 1 for failed questions
            raise
    except SeerbenchError as e:
        _user_error(str(e))
    except UsageError as e:
        _user_error(usage_error(e))
    except ClickException as e:  # click's other errors (an unreadable file argument)
        _user_error(e.format_message())
    except OSError as e:
        msg = user_os_error(e)
        if msg is None:
            _internal_error()
        _user_error(msg)
    except Exception:
        _internal_error()


def _user_error(msg: str) -> NoReturn:
    """A user's mistake: ``error: MSG``, one line on stderr, and exit 2."""
    typer.secho(f"error: {msg}", fg="red", err=True)
    sys.exit(EXIT_USER)


def usage_error(e: UsageError) -> str:
    """The one-line message for a command line click refuses (an unknown command or option, a
    missing argument, a value of the wrong type): click's message and suggestion, then where the
    help is, as ``No such option: --wid (Possible options: --wide) (seerbench stats -h)``."""
    msg = " ".join(e.format_message().split())
    if e.ctx is None:
        return msg
    help_option = (e.ctx.help_option_names or ["--help"])[0]
    return f"{msg} ({e.ctx.command_path} {help_option})"


def _stdout_identity() -> tuple[int, int] | None:
    try:
        st = os.fstat(1)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _stdout_closed(at_start: tuple[int, int] | None) -> bool:
    """Whether the reader of our output went away (``| head``). click and rich both exit 1 then:
    click after swapping in its flush-silencing wrapper, rich after pointing descriptor 1 at
    /dev/null; and a pipe whose reader is gone polls as an error."""
    if type(sys.stdout).__name__ == "_PacifyFlushWrapper" or _stdout_identity() != at_start:
        return True
    try:
        import select

        poller = select.poll()
        poller.register(1, select.POLLOUT)
        return any(ev & select.POLLERR for _, ev in poller.poll(0))
    except (OSError, AttributeError, ValueError):  # no poll() on this platform
        return False


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
