"""seerbench's own question format: one JSON :class:`~seerbench.types.Question` per line."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from seerbench.datasets._common import Collector, Questions, describe
from seerbench.errors import DataError
from seerbench.types import Question


def read_questions_jsonl(path: str | Path, *, lenient: bool = False) -> Questions:
    """Read a seerbench question file. A malformed line raises :class:`DataError` naming the file,
    line and problem; with ``lenient=True`` it is skipped and counted in ``.skipped``."""
    p = Path(path)
    coll = Collector(lenient=lenient, source=str(p))
    if not p.is_file():
        raise DataError(f"{p}: no such file")
    with p.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            where = f"{p.name}:{lineno}"
            try:
                q = Question.model_validate_json(line)
            except ValidationError as e:
                kind = e.errors()[0]["type"]
                msg = "invalid JSON" if kind == "json_invalid" else describe(e)
                coll.bad(where, msg, e)
                continue
            coll.add(q, where)
    return coll.finish()


def write_questions_jsonl(questions: Iterable[Question], path: str | Path) -> int:
    """Write questions as seerbench JSONL (atomically: a crash leaves the old file intact).
    Returns the number of questions written."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    n = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for q in questions:
                f.write(q.model_dump_json())
                f.write("\n")
                n += 1
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return n
