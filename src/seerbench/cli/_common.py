"""Helpers shared by CLI command modules."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.console import Console

from seerbench.errors import ConfigError

console = Console()
err_console = Console(stderr=True)
#: Columns of the consoles when they write to a pipe or file and ``COLUMNS`` is not set: wide
#: enough for a table's cell names to stay whole (at rich's default of 80 they wrap mid-word).
PIPE_WIDTH = 200


def widen_on_pipes() -> None:
    """Give :data:`console` and :data:`err_console` :data:`PIPE_WIDTH` columns where they do not
    write to a terminal and ``COLUMNS`` does not say a width (called once a command)."""
    for c in (console, err_console):
        if not c.is_terminal and "COLUMNS" not in os.environ:
            c.width = PIPE_WIDTH


def print_json(obj: Any) -> None:
    """Print ``obj`` as valid JSON on stdout (pydantic models and nested containers allowed); a
    non-finite number (an undefined statistic: NaN, an infinite bound) is printed as null."""
    from seerbench.runs import json_safe

    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    plain = json.loads(json.dumps(obj, default=_default))  # containers and floats only
    print(json.dumps(json_safe(plain), indent=2, allow_nan=False))


def _default(o: Any) -> Any:
    if isinstance(o, BaseModel):
        return o.model_dump(mode="json")
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "__dict__"):
        return vars(o)
    raise TypeError(f"cannot serialise {type(o).__name__}")


# ---- plugins given on the command line (set once per process by the global --plugin option) -------

_cli_plugins: list[str] = []


def set_cli_plugins(refs: list[str]) -> None:
    """Import the ``--plugin`` modules or files (from the working folder) and remember them."""
    from seerbench.plugins import load_plugins

    load_plugins(refs, Path.cwd())
    _cli_plugins[:] = refs


def cli_plugins() -> list[str]:
    """The plugins ``--plugin`` imported in this process (not the configs' ``plugins:``)."""
    return list(_cli_plugins)


# ---- verbosity and logging (set once per process by the global -v/-q/--log-file options) ---------

#: Verbosity levels: ``QUIET`` (-q: errors only), ``NORMAL`` (the default), ``VERBOSE`` (-v).
QUIET, NORMAL, VERBOSE = -1, 0, 1
_verbosity = NORMAL
_LOGGER = "seerbench"
_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def verbosity() -> int:
    """The verbosity the command line asked for: ``QUIET``, ``NORMAL`` or ``VERBOSE``."""
    return _verbosity


def quiet() -> bool:
    """True under ``seerbench -q``: a command prints no progress bar, table or note, only what
    it was asked for (``--json`` output, a written file's content on stdout) and errors."""
    return _verbosity <= QUIET


def verbose() -> bool:
    """True under ``seerbench -v``: debug logging is on."""
    return _verbosity >= VERBOSE


class _Handler(logging.Handler):
    """Marks the handlers :func:`configure_logging` installed, so a second call replaces them."""


class _StderrHandler(logging.StreamHandler, _Handler):
    """Writes to whatever ``sys.stderr`` is at the time of the record (as the standard library's
    last-resort handler does), so a replaced or captured stderr is honoured."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


class _FileHandler(logging.FileHandler, _Handler):
    pass


class _ShortFormatter(logging.Formatter):
    """``warning: message``, like the command line's ``error: message``."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname.lower()}: {super().format(record)}"


def configure_logging(level: int = NORMAL, log_file: Path | None = None) -> None:
    """Set the verbosity and route the ``seerbench`` logger hierarchy: stderr gets warnings
    (``VERBOSE``: everything from debug up; ``QUIET``: errors only); ``log_file``, when given, gets
    info and up (debug with ``VERBOSE``) appended, whatever stderr shows. Replaces the handlers
    of an earlier call; leaves other loggers alone (records still propagate to the root logger,
    which has no handler in the command line)."""
    global _verbosity
    _verbosity = level
    logger = logging.getLogger(_LOGGER)
    for h in [h for h in logger.handlers if isinstance(h, _Handler)]:
        logger.removeHandler(h)
        h.close()
    console_level = {QUIET: logging.ERROR, NORMAL: logging.WARNING, VERBOSE: logging.DEBUG}[level]
    stream = _StderrHandler()
    stream.setLevel(console_level)
    stream.setFormatter(_ShortFormatter() if level < VERBOSE else logging.Formatter(_LOG_FORMAT))
    logger.addHandler(stream)
    levels = [console_level]
    if log_file is not None:
        file_level = logging.DEBUG if level >= VERBOSE else logging.INFO
        try:
            fh = _FileHandler(log_file, mode="a", encoding="utf-8")
        except OSError as e:
            raise ConfigError(
                f"--log-file {log_file}: cannot open it for writing: {e.strerror or e}"
            ) from None
        fh.setLevel(file_level)
        fh.setFormatter(logging.Formatter(_LOG_FORMAT))
        logger.addHandler(fh)
        levels.append(file_level)
    logger.setLevel(min(levels))


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``1 answer``, ``2 answers`` (``many``: an irregular plural)."""
    return f"{n} {noun if n == 1 else many or noun + 's'}"
