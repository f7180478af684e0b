"""Helpers shared by CLI command modules."""

from __future__ import annotations

import copy
import json
import logging
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.table import Column, Table
from rich.text import Text

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
    """True under ``seerbench -q``: a command prints no progress bar, note or closing summary (a
    run's stats table, a report's path), only what it was asked for (``--json`` output, what a
    reading command such as ``stats`` shows, a written file's content on stdout) and errors."""
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


# ---- tables whose first columns hold names people copy ------------------------------------------


class WholeNames:
    """``table`` (rows added, no column ``width`` set), printed by :meth:`print` so that its
    first ``names`` columns never break a name across lines: people copy a protocol folder into
    ``--baseline``, a cell key into a path. Rich, short of width, wraps or cuts every column,
    names too.

    Where the table fits the console with the names whole and every other column at least as
    wide as its longest word, it prints as one table, the other columns wrapped at spaces to fit.
    Where it does not, the names leave the table: its rows are numbered (``#``), and under it
    each number's names are printed on a line of their own that rich neither wraps nor cuts (a
    terminal narrower than the line folds it on screen; the line copied is whole)."""

    def __init__(self, table: Table, names: int) -> None:
        self.table, self.names = table, names

    def layout(self, width: int) -> tuple[Table, list[Text]]:
        """The table to print at ``width`` columns, and the key lines under it (none when the
        names fit in the table)."""
        t = self.table
        cols = t.columns
        whole = _fit(t, cols, self.names, width)
        if whole is not None:
            return whole, []
        numbers = [str(i + 1) for i in range(t.row_count)]
        cells: list[RenderableType] = list(numbers)
        number = Column(header="#", justify="right", no_wrap=True, _cells=cells)
        heads = [_plain(c.header) for c in cols[: self.names]]
        rows = list(zip(numbers, *([_plain(x) for x in c.cells] for c in cols[: self.names]), strict=True))
        col_w = [max(cell_len(x) for x in col) for col in zip(["#", *heads], *rows, strict=True)]
        if sum(col_w) + 2 * self.names <= width:  # one line a row, aligned under a header
            lines = [
                Text("  ".join(x + " " * (w - cell_len(x)) for x, w in zip(row, col_w, strict=True)).rstrip())
                for row in [("#", *heads), *rows]
            ]
            lines[0].stylize("dim")
        else:  # one line a name: "1  cell  NaiveJudge/J_judge", then "   vs    ..."
            head_w = max(cell_len(h) for h in heads)
            lines = [
                Text(f"{n if j == 0 else '':>{col_w[0]}}  {h + ' ' * (head_w - cell_len(h))}  {name}")
                for n, *names in rows
                for j, (h, name) in enumerate(zip(heads, names, strict=True))
            ]
        numbered = [number, *cols[self.names :]]
        return _fit(t, numbered, 1, width) or _with_columns(t, numbered), lines

    def print(self, console: Console) -> None:
        table, key = self.layout(console.width)
        console.print(table)
        for line in key:
            console.print(line, soft_wrap=True)  # neither wrapped nor cut


def _plain(x: Any) -> str:
    return Text.from_markup(x).plain if isinstance(x, str) else x.plain if isinstance(x, Text) else str(x)


def _cells_width(c: Column, *, whole: bool, least: bool = False) -> int:
    """The widest of a column's header and cells: whole (a name), or as its longest word."""
    texts = [_plain(c.header), *(_plain(x) for x in c.cells)]
    if whole or not least:
        return max(cell_len(line) for x in texts for line in x.splitlines() or [""])
    return max((cell_len(w) for x in texts for w in x.split()), default=1)


def _fit(t: Table, cols: list[Column], names: int, width: int) -> Table | None:
    """``t`` with ``cols``, each of a width that keeps its first ``names`` columns' cells whole and
    no other column narrower than its longest word, at ``width`` columns; None if none does."""
    borders = (len(cols) + 1 if t.show_edge else len(cols) - 1) if t.box else 0
    full = [_cells_width(c, whole=i < names) for i, c in enumerate(cols)]
    least = [_cells_width(c, whole=i < names, least=True) for i, c in enumerate(cols)]
    widths = _shrink(full, least, width - borders - len(cols) * (t.padding[1] + t.padding[3]))
    if widths is None:
        return None
    return _with_columns(
        t, [replace(c, width=w, no_wrap=i < names) for i, (c, w) in enumerate(zip(cols, widths, strict=True))]
    )


def _shrink(full: list[int], least: list[int], room: int) -> list[int] | None:
    """Column widths that sum to at most ``room``: each ``full`` width, the widest ones narrowed
    towards their ``least`` one; None when even the least widths do not fit."""
    if sum(least) > room:
        return None
    widths = list(full)
    while sum(widths) > room:
        i = max(range(len(widths)), key=lambda j: (widths[j] - least[j] > 0, widths[j]))
        widths[i] -= 1
    return widths


def _with_columns(t: Table, columns: list[Column]) -> Table:
    new = copy.copy(t)
    new.columns = [replace(c, _index=i) for i, c in enumerate(columns)]
    return new


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``1 answer``, ``2 answers`` (``many``: an irregular plural)."""
    return f"{n} {noun if n == 1 else many or noun + 's'}"
