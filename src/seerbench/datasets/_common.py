"""Plumbing shared by every loader: record sources with locations, field access with readable
errors, strict/lenient collection with duplicate-id detection, and the optional hub source."""

from __future__ import annotations

import hashlib
import json
import logging
import random
import string
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pydantic import ValidationError

from seerbench.errors import ConfigError, DataError
from seerbench.tables import Record
from seerbench.types import AnswerCase, Question

log = logging.getLogger("seerbench.datasets")

LETTERS = string.ascii_uppercase


class Questions(list[Question]):
    """A list of questions that also remembers what loading skipped.

    ``skipped`` counts records dropped in lenient mode and ``problems`` holds one message per
    dropped record (file, line, what was wrong), so a caller or the CLI can report them.
    """

    def __init__(
        self, items: Iterable[Question] = (), *, skipped: int = 0, problems: list[str] | None = None
    ):
        super().__init__(items)
        self.skipped = skipped
        self.problems: list[str] = list(problems or [])


class RecordError(ValueError):
    """Raised by a format parser when one record is malformed; the collector adds the location."""


def letters(k: int) -> list[str]:
    if not 1 <= k <= len(LETTERS):
        raise RecordError(f"cannot label {k} options (at most {len(LETTERS)})")
    return list(LETTERS[:k])


def hub_records(hub_id: str, *, config: str | None = None, split: str) -> Iterator[Record]:
    """Rows of a Hugging Face hub dataset (needs the optional ``hub`` extra and network)."""
    try:
        import datasets as hf_datasets
    except ImportError as e:
        raise ConfigError(
            f"loading {hub_id!r} from the Hugging Face hub needs the 'datasets' package: "
            "pip install 'seerbench[hub]', or download the file and pass path=..."
        ) from e
    try:
        ds = hf_datasets.load_dataset(hub_id, config, split=split)
    except Exception as e:  # the hub raises many unrelated types (network, auth, gating)
        raise DataError(
            f"could not load {hub_id!r} ({config or 'default'}, {split}) from the hub: {e}"
        ) from e
    for i, row in enumerate(ds):
        yield Record(f"{hub_id}[{split}][{i}]", i, dict(row))


def req(d: Any, key: str, kind: type | tuple[type, ...] = str) -> Any:
    """``d[key]`` checked for presence and type, with a message naming the field."""
    if not isinstance(d, dict):
        raise RecordError(f"expected a JSON object, found {type(d).__name__}")
    if key not in d or d[key] is None:
        raise RecordError(f"missing field {key!r}")
    v = d[key]
    # bool is an int subclass; a boolean where a number is expected is a data error.
    if not isinstance(v, kind) or (kind in (int, float, (int, float)) and isinstance(v, bool)):
        want = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise RecordError(f"field {key!r} should be {want}, found {type(v).__name__} {v!r:.60}")
    return v


def describe(e: Exception) -> str:
    """A one-line description of a parse failure."""
    if isinstance(e, ValidationError):
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        return f"{loc}: {first['msg']}" if loc else first["msg"]
    if isinstance(e, KeyError):
        return f"missing field {e.args[0]!r}"
    return str(e)


class Collector:
    """Accumulates questions: strict mode raises :class:`DataError` at the first bad record;
    lenient mode skips it, counts it and keeps its message. Duplicate ids are always detected."""

    def __init__(self, *, lenient: bool = False, source: str = ""):
        self.lenient = lenient
        self.source = source
        self.out = Questions()
        self._seen: dict[str, str] = {}

    def bad(self, where: str, message: str, cause: Exception | None = None) -> None:
        msg = f"{where}: {message}"
        if not self.lenient:
            raise DataError(msg) from cause
        self.out.skipped += 1
        self.out.problems.append(msg)

    def add(self, q: Question, where: str) -> None:
        if q.id in self._seen:
            self.bad(where, f"duplicate question id {q.id!r} (first seen at {self._seen[q.id]})")
            return
        self._seen[q.id] = where
        self.out.append(q)

    def run(self, records: Iterable[Record], parse: Callable[[Record], Iterable[Question]]) -> Questions:
        """Parse every record; errors from ``parse`` are reported with the record's location."""
        for rec in records:
            if rec.error is not None:
                self.bad(rec.where, rec.error)
                continue
            try:
                qs = list(parse(rec))
            except (RecordError, ValidationError, KeyError, TypeError, ValueError) as e:
                self.bad(rec.where, describe(e), e)
                continue
            for q in qs:
                self.add(q, rec.where)
        return self.finish()

    def finish(self) -> Questions:
        if self.out.skipped:
            log.warning("%s: skipped %d malformed record(s)", self.source or "dataset", self.out.skipped)
        return self.out


def make_question(
    *,
    id: str,
    text: str,
    options: list[str],
    correct: int,
    labels: list[str] | None = None,
    source_text: str | None = None,
    best_distractor: int | None = None,
    metadata: dict[str, Any] | None = None,
) -> Question:
    """Build a question from option texts and the index of the true one.

    Each option keeps its position in the published file as ``metadata['original_index']``;
    ``best_distractor`` (an index) is stored as the label in ``metadata['best_distractor']``.
    """
    labels = labels or letters(len(options))
    if not 0 <= correct < len(options):
        raise RecordError(f"answer index {correct} out of range for {len(options)} options")
    for i, o in enumerate(options):
        if not isinstance(o, str) or not o.strip():
            raise RecordError(f"option {labels[i]} is empty or not text")
    meta = dict(metadata or {})
    if best_distractor is not None:
        if not 0 <= best_distractor < len(options) or best_distractor == correct:
            raise RecordError(f"best distractor index {best_distractor} is not a wrong option")
        meta["best_distractor"] = labels[best_distractor]
    cases = [
        AnswerCase(short=lab, long=o, value=1.0 if i == correct else 0.0, metadata={"original_index": i})
        for i, (lab, o) in enumerate(zip(labels, options, strict=True))
    ]
    return Question(id=id, text=text, answer_cases=cases, source_text=source_text, metadata=meta)


def shuffled_order(n: int, seed: int | str, key: str) -> list[int]:
    """A permutation of range(n) that depends only on (seed, key): stable under subsetting."""
    order = list(range(n))
    random.Random(f"{seed}:{key}").shuffle(order)
    return order


def shuffled_question(
    *,
    id: str,
    text: str,
    options: list[str],
    correct: int,
    seed: int | str,
    **kw: Any,
) -> Question:
    """Like :func:`make_question` for formats that always list the true option first (GPQA,
    TruthfulQA): positions are shuffled with a per-question seeded permutation so the true answer
    is not always 'A'. ``original_index`` still records the position in the file."""
    order = shuffled_order(len(options), seed, id)
    best = kw.pop("best_distractor", None)
    q = make_question(
        id=id,
        text=text,
        options=[options[i] for i in order],
        correct=order.index(correct),
        best_distractor=None if best is None else order.index(best),
        **kw,
    )
    for case, orig in zip(q.answer_cases, order, strict=True):
        case.metadata["original_index"] = orig
    q.metadata["option_seed"] = seed
    return q


# ---- duplicate questions (one home: `seerbench run` and `seerbench study create`) ----------------


def _norm_text(s: str | None) -> str:
    return " ".join((s or "").split()).casefold()


def question_content_key(q: Question) -> tuple[str, str, tuple[str, ...]]:
    """What makes two questions the same question under different ids: their text, passage
    (``source_text``, or ``metadata.passage_id`` when there is no text) and option texts, ignoring
    case, white space and option order."""
    return (
        _norm_text(q.text),
        _norm_text(q.source_text) or str(q.metadata.get("passage_id") or ""),
        tuple(sorted(_norm_text(c.long) for c in q.answer_cases)),
    )


class DuplicateQuestions:
    """Finds questions that repeat an earlier one's content (:func:`question_content_key`), one
    question at a time, keeping a 16-byte digest per distinct question. :meth:`first` returns the
    id of the earlier question a repeat merges into (None for a new question); ``merged`` holds the
    (dropped id, kept id) pairs. Duplicates that disagree about the true answer are refused
    (:class:`DataError`): which one is right cannot be told."""

    def __init__(self) -> None:
        self._first: dict[bytes, tuple[str, bytes]] = {}
        self.merged: list[tuple[str, str]] = []

    @staticmethod
    def _digest(x: object) -> bytes:
        return hashlib.blake2b(json.dumps(x).encode(), digest_size=16).digest()

    def first(self, q: Question) -> str | None:
        key = self._digest(question_content_key(q))
        truth = self._digest(sorted(_norm_text(c.long) for c in q.true_cases))
        kept_id, kept_truth = self._first.setdefault(key, (q.id, truth))
        if kept_id == q.id:
            return None
        if truth != kept_truth:
            raise DataError(
                f"questions {kept_id!r} and {q.id!r} have the same text and options but different true "
                "answers; fix the data or remove one of them"
            )
        self.merged.append((q.id, kept_id))
        return kept_id

    def summary(self) -> str | None:
        """One line saying how many questions were merged (None when none was)."""
        if not self.merged:
            return None
        eg = ", ".join(f"{a} -> {b}" for a, b in self.merged[:3])
        return (
            f"{len(self.merged)} duplicate question(s) (same text, "
            f"options and passage) merged into the first: {eg}"
        )
