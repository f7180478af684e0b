"""Reading the files records come in: JSON lines, a JSON array or JSON lines, CSV; each record
with where it came from (``'dev.jsonl:12'``) so that every error can name the file and line.

Below every package that reads such files (the dataset loaders, the fact-check corpus).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seerbench.errors import DataError

__all__ = ["Record", "iter_csv", "iter_json_or_jsonl", "iter_jsonl", "iter_lines"]


@dataclass(frozen=True)
class Record:
    """One raw record and where it came from (``where`` is e.g. ``'dev.jsonl:12'``)."""

    where: str
    index: int
    data: Any = None
    error: str | None = None


def _check_file(path: str | Path) -> Path:
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: no such file")
    return p


def iter_lines(path: str | Path) -> Iterator[tuple[str, int, str]]:
    """The non-blank lines of a text file as ``(where, line number, line)``, ``where`` being
    ``'name.jsonl:12'``: the one place JSON-lines files are read line by line."""
    p = _check_file(path)
    with p.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if line.strip():
                yield f"{p.name}:{lineno}", lineno, line


def iter_jsonl(path: str | Path) -> Iterator[Record]:
    """Records of a JSON-lines file; blank lines are ignored, undecodable lines become errors."""
    for where, lineno, line in iter_lines(path):
        try:
            yield Record(where, lineno, json.loads(line))
        except json.JSONDecodeError as e:
            yield Record(where, lineno, error=f"invalid JSON ({e.msg} at column {e.colno})")


def iter_json_or_jsonl(path: str | Path) -> Iterator[Record]:
    """A file holding either one JSON array of records or JSON lines (decided by its first byte)."""
    p = _check_file(path)
    with p.open(encoding="utf-8") as f:
        head = f.read(4096).lstrip()
    if not head.startswith("["):
        yield from iter_jsonl(p)
        return
    try:
        items = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(f"{p.name}:{e.lineno}: invalid JSON ({e.msg} at column {e.colno})") from e
    for i, item in enumerate(items):
        yield Record(f"{p.name}[item {i}]", i, item)


def iter_csv(path: str | Path, *, header: bool = True) -> Iterator[Record]:
    """Rows of a CSV file as dicts (``header=True``) or lists; ``where`` names the physical line."""
    p = _check_file(path)
    with p.open(encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        columns: list[str] | None = None
        start = 1
        for row in reader:
            where = f"{p.name}:{start}"
            start = reader.line_num + 1
            if not any(cell.strip() for cell in row):
                continue
            if header and columns is None:
                columns = [c.strip() for c in row]
                continue
            if columns is None:
                yield Record(where, reader.line_num, row)
            elif len(row) != len(columns):
                yield Record(
                    where, reader.line_num, error=f"expected {len(columns)} columns, found {len(row)}"
                )
            else:
                yield Record(where, reader.line_num, dict(zip(columns, row, strict=True)))
