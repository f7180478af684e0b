"""Generic multiple-choice data in JSONL or CSV (the schema is documented in docs/datasets.md).

JSONL, one object per line::

    {"id": "q1", "question": "...", "options": ["...", "..."], "answer": 0,
     "source_text": "...", "best_distractor": 1, "metadata": {...}}

``options`` is a list (labels A, B, ... by position) or an object label -> text; ``answer`` and
``best_distractor`` are a 0-based index or the option's text (list) or a label (object).
``id``, ``source_text``, ``best_distractor`` and ``metadata`` are optional.

CSV: columns ``question``, ``answer`` (a label), option columns named ``option_<label>``
(``option_A``, ``option_B``, ...; empty cells are skipped, so rows may have different numbers of
options), and optionally ``id``, ``source_text``, ``best_distractor`` (a label); any other column
goes into metadata.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seerbench.datasets._common import Collector, Questions, RecordError, make_question, req
from seerbench.tables import Record, iter_csv, iter_jsonl
from seerbench.types import Question


def _index(value: Any, labels: list[str], texts: list[str], field: str, by_label: bool) -> int:
    if isinstance(value, bool):
        raise RecordError(f"field {field!r} should be an index or an option, found a boolean")
    if isinstance(value, int) and not by_label:
        if not 0 <= value < len(texts):
            raise RecordError(f"field {field!r}: index {value} out of range for {len(texts)} options")
        return value
    if isinstance(value, str):
        pool = labels if by_label else texts
        if value in pool:
            return pool.index(value)
        what = "option label" if by_label else "option text"
        raise RecordError(f"field {field!r}: {value!r:.60} is not an {what} (options: {pool})")
    raise RecordError(f"field {field!r} should be an index or an option, found {type(value).__name__}")


def _parse_json(rec: Record) -> list[Question]:
    row = rec.data
    options = req(row, "options", (list, dict))
    if isinstance(options, dict):
        labels, texts, by_label = [str(k) for k in options], [str(v) for v in options.values()], True
    else:
        labels, texts, by_label = [chr(ord("A") + i) for i in range(len(options))], options, False
    if "answer" not in row:
        raise RecordError("missing field 'answer'")
    correct = _index(row["answer"], labels, texts, "answer", by_label)
    best = row.get("best_distractor")
    meta = row.get("metadata") or {}
    if not isinstance(meta, dict):
        raise RecordError("field 'metadata' should be an object")
    return [
        make_question(
            id=str(row.get("id") or f"q{rec.index}"),
            text=req(row, "question"),
            options=texts,
            labels=labels,
            correct=correct,
            source_text=row.get("source_text"),
            best_distractor=None
            if best is None
            else _index(best, labels, texts, "best_distractor", by_label),
            metadata=meta,
        )
    ]


def _parse_csv(rec: Record) -> list[Question]:
    row: dict[str, str] = rec.data
    opt_cols = [c for c in row if c.startswith("option_")]
    if not opt_cols:
        raise RecordError("no option columns (expected option_A, option_B, ...)")
    pairs = [(c[len("option_") :], row[c]) for c in opt_cols if row[c].strip()]
    labels, texts = [p[0] for p in pairs], [p[1] for p in pairs]
    correct = _index(req(row, "answer").strip(), labels, texts, "answer", True)
    best = (row.get("best_distractor") or "").strip()
    known = {"id", "question", "answer", "source_text", "best_distractor", *opt_cols}
    return [
        make_question(
            id=(row.get("id") or "").strip() or f"q{rec.index}",
            text=req(row, "question"),
            options=texts,
            labels=labels,
            correct=correct,
            source_text=row.get("source_text") or None,
            best_distractor=_index(best, labels, texts, "best_distractor", True) if best else None,
            metadata={k: v for k, v in row.items() if k not in known and v != ""},
        )
    ]


def load_generic(path: str | Path, *, lenient: bool = False) -> Questions:
    """Load generic multiple-choice data: ``.csv`` files as CSV, anything else as JSONL."""
    p = Path(path)
    coll = Collector(lenient=lenient, source=str(p))
    if p.suffix.lower() == ".csv":
        return coll.run(iter_csv(p), _parse_csv)
    return coll.run(iter_jsonl(p), _parse_json)
