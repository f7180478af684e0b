"""Your own fact-verification data: a sentences file and a corpus file (JSONL or CSV).

Sentences: one record per sentence with ``id``, ``sentence`` and ``label`` (one of accurate,
inaccurate, unsupported, disputed; case and white space ignored). Corpus: one record per page with
``id`` and ``text``, optionally ``title``, ``url`` and ``updated`` (a year). A ``.csv`` file has
those column names in its header; anything else is read as JSON lines. Every bad record is an
error naming its file and line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from seerbench.errors import DataError
from seerbench.factcheck._generate import LABELS, FactcheckSet, FactItem, Page
from seerbench.tables import Record, iter_csv, iter_jsonl


def _records(path: str | Path) -> Iterator[Record]:
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: no such file")
    yield from (iter_csv(p) if p.suffix.lower() == ".csv" else iter_jsonl(p))


def _field(rec: Record, key: str, *, required: bool = True) -> str | None:
    if rec.error is not None:
        raise DataError(f"{rec.where}: {rec.error}")
    if not isinstance(rec.data, dict):
        raise DataError(f"{rec.where}: expected an object with named fields")
    v: Any = rec.data.get(key)
    if v is None or (isinstance(v, str) and not v.strip()):
        if required:
            raise DataError(f"{rec.where}: missing field {key!r}")
        return None
    if not isinstance(v, str | int | float) or isinstance(v, bool):
        raise DataError(f"{rec.where}: field {key!r} should be text, found {type(v).__name__}")
    return str(v).strip()


def read_sentences(path: str | Path) -> list[FactItem]:
    """The sentences to rate, with their labels (checked against seed 000's label set)."""
    out: list[FactItem] = []
    seen: set[str] = set()
    for rec in _records(path):
        iid, sentence, label = (_field(rec, k) for k in ("id", "sentence", "label"))
        assert iid is not None and sentence is not None and label is not None
        lab = label.lower()
        if lab not in LABELS:
            raise DataError(f"{rec.where}: label {label!r} is not one of {', '.join(LABELS)}")
        if iid in seen:
            raise DataError(f"{rec.where}: sentence id {iid!r} appears twice")
        seen.add(iid)
        out.append(FactItem(iid, sentence, lab))
    if not out:
        raise DataError(f"{path}: no sentences")
    return out


def read_corpus(path: str | Path) -> list[Page]:
    """The corpus pages (ids unique; text required)."""
    out: list[Page] = []
    seen: set[str] = set()
    for rec in _records(path):
        pid, text = _field(rec, "id"), _field(rec, "text")
        assert pid is not None and text is not None
        if pid in seen:
            raise DataError(f"{rec.where}: page id {pid!r} appears twice")
        seen.add(pid)
        year = _field(rec, "updated", required=False)
        try:
            updated = int(float(year)) if year is not None else 0
        except ValueError:
            raise DataError(f"{rec.where}: updated should be a year, found {year!r}") from None
        out.append(
            Page(
                pid,
                "",
                _field(rec, "title", required=False) or pid,
                _field(rec, "url", required=False) or "",
                updated,
                text,
            )
        )
    if not out:
        raise DataError(f"{path}: no pages")
    return out


def load_factcheck_files(path: str | Path, corpus: str | Path, n: int | None = None) -> FactcheckSet:
    """Sentences from ``path`` and the corpus from ``corpus``; ``n`` keeps the first n sentences."""
    items = read_sentences(path)
    return FactcheckSet(
        items[:n] if n is not None else items, read_corpus(corpus), [], name="factcheck_files"
    )
