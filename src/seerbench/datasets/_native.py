"""seerbench's own question format: one JSON :class:`~seerbench.types.Question` per line."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import ValidationError

from seerbench.datasets._common import Collector, Questions, describe
from seerbench.store import atomic_write_lines
from seerbench.tables import iter_lines
from seerbench.types import Question


def read_questions_jsonl(path: str | Path, *, lenient: bool = False) -> Questions:
    """Read a seerbench question file: the one reader of question JSONL (datasets, experiment
    configs and study manifests use it).

    Blank lines are skipped. A malformed line raises :class:`DataError` naming the file, line and
    problem (``q.jsonl:3: invalid JSON``, ``q.jsonl:2: answer_cases: List should have at least 2
    items``), as does a question id seen before (naming both lines); with ``lenient=True`` such a
    line is skipped, counted in ``.skipped`` and described in ``.problems``. A missing file is a
    :class:`DataError` too (``q.jsonl: no such file``)."""
    p = Path(path)
    coll = Collector(lenient=lenient, source=str(p))
    for where, _, line in iter_lines(p):
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
    n = 0

    def lines() -> Iterator[str]:
        nonlocal n
        for q in questions:
            yield q.model_dump_json()
            n += 1

    atomic_write_lines(p, lines())
    return n
