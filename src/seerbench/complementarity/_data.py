"""Inputs of the complementarity analysis: the AI rater's ratings and the humans' judgments,
scored as seed 000 scores them.

Seed 000 (section 2.2, "Analysis"): every rating is binarised to Accurate / Inaccurate, with
Unsupported, Disputed and "Doesn't require attribution" counted as Inaccurate; a rating is correct
when it matches the (binarised) golden label; "Can't confidently assess" is incorrect. A skip is
no rating and is not counted. An AI rating with no verified sample (``rating: null``) is scored
like "can't assess": incorrect, and its confidence is taken as 0, so every threshold routes it to
the humans.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from seerbench.errors import ConfigError, DataError
from seerbench.store import RecordReader, atomic_write_lines

ACCURATE = "accurate"
INACCURATE = "inaccurate"
CANT_ASSESS = "cant_assess"
#: Vote codes of a human judgment for majority votes.
VOTE_ACCURATE, VOTE_INACCURATE, VOTE_NONE = 0, 1, 2
#: Names taken as the unassisted condition of an export when no study database says which it is.
UNASSISTED_NAMES = ("none", "baseline", "unassisted", "Q")


def binarize(label: str | None) -> str | None:
    """Seed 000's binarisation: ``accurate`` stays, every other label (inaccurate, unsupported,
    disputed, no_claim / doesn't require attribution, ...) is ``inaccurate``; "can't assess",
    a skip and no label give None (no label)."""
    if label is None:
        return None
    s = str(label).strip().lower()
    if s in ("", "skip", CANT_ASSESS, "can't confidently assess", "cant confidently assess"):
        return None
    return ACCURATE if s == ACCURATE else INACCURATE


@dataclass(frozen=True)
class AIRating:
    """One sentence rated by the AI rater (a line of ``ratings.jsonl``)."""

    item_id: str
    label: str
    rating: str | None
    confidence: float | None
    sentence: str = ""
    n_samples: int = 0
    n_verified: int = 0
    votes: dict[str, int] | list[Any] | None = None
    trace: dict[str, Any] = field(default_factory=dict)


def read_ai_ratings(path: str | Path) -> list[AIRating]:
    """The AI rater's ratings from ``ratings.jsonl`` or the run folder holding it.

    Uses :func:`seerbench.factcheck.read_ratings` when the factcheck module provides it; this
    reader of the same JSON lines is the fallback."""
    try:
        mod = importlib.import_module("seerbench.factcheck")
    except ImportError:
        mod = None
    reader = getattr(mod, "read_ratings", None)
    if reader is None:
        return _read_ratings_jsonl(path)
    return list(reader(path))


def write_ai_ratings(ratings: Iterable[AIRating], path: str | Path) -> Path:
    """Write ratings as the AI rater's ``ratings.jsonl`` (``path`` is the file, or a folder that
    gets one), e.g. simulated ones (:func:`seerbench.complementarity.simulate_ai_ratings`)."""
    p = Path(path)
    if p.suffix != ".jsonl":
        p.mkdir(parents=True, exist_ok=True)
        p = p / "ratings.jsonl"
    return atomic_write_lines(p, (json.dumps(asdict(r)) for r in ratings))


def _read_ratings_jsonl(path: str | Path) -> list[AIRating]:
    """The ratings of a ``ratings.jsonl``, read through the record store
    (:class:`seerbench.store.RecordReader`): a malformed line raises :class:`DataError` naming it;
    a torn last line (what a crash leaves) is skipped with a warning; a repeated ``item_id`` is
    refused."""
    p = Path(path)
    if p.is_dir():
        p = p / "ratings.jsonl"
    if not p.is_file():
        raise DataError(
            f"{p} does not exist; give the AI rater's run folder (with ratings.jsonl) or the file"
        )
    out = []
    for n, d in RecordReader(p, "item_id", strict=True).numbered():
        try:
            conf = d.get("confidence")
            r = AIRating(
                item_id=str(d["item_id"]),
                label=str(d["label"]),
                rating=None if d.get("rating") is None else str(d["rating"]),
                confidence=None if conf is None else float(conf),
                sentence=str(d.get("sentence", "")),
                n_samples=int(d.get("n_samples") or 0),
                n_verified=int(d.get("n_verified") or 0),
                votes=d.get("votes"),
                trace=d.get("trace") or {},
            )
        except (KeyError, TypeError, ValueError) as e:
            raise DataError(f"{p}:{n}: not an AI rating line ({type(e).__name__}: {e})") from None
        out.append(r)
    return out


@dataclass
class AIItems:
    """The AI rater's items as arrays, in a fixed order (the order of :attr:`ids`)."""

    ids: list[str]
    truth: list[str]  # binarised golden label
    rating: list[str | None]
    correct: np.ndarray  # 0/1 float
    confidence: np.ndarray  # in [0, 1]; a missing confidence is 0
    index: dict[str, int]

    @property
    def n(self) -> int:
        return len(self.ids)


def ai_items(ratings: Iterable[Any]) -> AIItems:
    """Score the AI's ratings (objects with ``item_id``, ``label``, ``rating``, ``confidence``)."""
    ids: list[str] = []
    truth: list[str] = []
    rating: list[str | None] = []
    correct: list[float] = []
    conf: list[float] = []
    index: dict[str, int] = {}
    for r in ratings:
        iid = str(r.item_id)
        if iid in index:
            raise DataError(f"AI ratings: item {iid!r} appears twice")
        t = binarize(r.label)
        if t is None:
            raise DataError(f"AI ratings: item {iid!r} has no usable true label ({r.label!r})")
        c = r.confidence
        if c is not None and (not isinstance(c, int | float) or math.isnan(c) or not 0.0 <= c <= 1.0):
            raise DataError(
                f"AI ratings: item {iid!r} has confidence {c!r}; it must lie in [0, 1] (or be null)"
            )
        b = binarize(r.rating)
        index[iid] = len(ids)
        ids.append(iid)
        truth.append(t)
        rating.append(r.rating)
        correct.append(1.0 if b is not None and b == t else 0.0)
        conf.append(0.0 if c is None or r.rating is None else float(c))
    if not ids:
        raise DataError("AI ratings: no items")
    return AIItems(ids, truth, rating, np.array(correct), np.array(conf), index)


@dataclass
class HumanData:
    """Human judgments matched to the AI's items, as arrays (one entry per counted judgment)."""

    item: np.ndarray  # index into AIItems
    rater: np.ndarray  # index into raters
    condition: np.ndarray  # index into conditions
    correct: np.ndarray  # 0/1 float
    vote: np.ndarray  # VOTE_ACCURATE / VOTE_INACCURATE / VOTE_NONE
    confidence: np.ndarray  # the rater's 1-4 confidence, NaN when not given
    raters: list[str]
    conditions: list[str]
    unassisted: str | None
    notes: list[str]

    @property
    def n(self) -> int:
        return int(self.item.size)

    def subset(self, mask: np.ndarray) -> HumanData:
        return HumanData(
            self.item[mask],
            self.rater[mask],
            self.condition[mask],
            self.correct[mask],
            self.vote[mask],
            self.confidence[mask],
            self.raters,
            self.conditions,
            self.unassisted,
            self.notes,
        )


def human_data(rows: Sequence[dict[str, Any]], ai: AIItems, *, unassisted: str | None = None) -> HumanData:
    """Judgments from study export rows (:func:`seerbench.study.export_rows` or
    :func:`seerbench.study.read_export`) matched to the AI's items by ``question_id``.

    Catch trials and skips are left out; every other judgment is scored by seed 000's rule (see
    the module docstring), from its ``rating`` and ``true_answer`` (not from the export's
    ``correct`` column, which counts "doesn't require assessment" as wrong whatever the truth).
    The true label and ``ai_correct`` of a row must agree with the AI ratings: a study built
    from another rater run would otherwise be analysed silently wrong.
    """
    notes: list[str] = []
    items, raters, conds, correct, votes, confs = [], [], [], [], [], []
    rater_ix: dict[str, int] = {}
    cond_ix: dict[str, int] = {}
    unmatched: set[str] = set()
    skipped = 0
    for n, r in enumerate(rows):
        if r.get("is_catch"):
            continue
        if r.get("task") not in (None, "factuality"):
            raise DataError(
                f"human judgments: row {n} is a {r.get('task')!r} task; the complementarity analysis takes a factuality study"
            )
        qid = str(r.get("question_id"))
        i = ai.index.get(qid)
        if i is None:
            unmatched.add(qid)
            continue
        truth = binarize(r.get("true_answer"))
        if truth != ai.truth[i]:
            raise DataError(
                f"human judgments: item {qid!r} has true answer {r.get('true_answer')!r} in the study but label "
                f"{ai.truth[i]!r} in the AI ratings; were they built from the same data?"
            )
        rc = r.get("ai_correct")
        if rc is not None and bool(rc) != bool(ai.correct[i]):
            raise DataError(
                f"human judgments: item {qid!r} says ai_correct={bool(rc)} but the AI ratings give "
                f"{bool(ai.correct[i])}; was the study built from this rater run?"
            )
        rating = r.get("rating") or r.get("answer")
        if r.get("timed_out"):
            rating = CANT_ASSESS
        if rating in (None, "", "skip"):
            skipped += 1
            continue
        b = binarize(str(rating))
        items.append(i)
        rid = str(r.get("rater_id"))
        raters.append(rater_ix.setdefault(rid, len(rater_ix)))
        cname = str(r.get("condition"))
        conds.append(cond_ix.setdefault(cname, len(cond_ix)))
        correct.append(1.0 if b == truth else 0.0)
        votes.append(VOTE_NONE if b is None else VOTE_ACCURATE if b == ACCURATE else VOTE_INACCURATE)
        c = r.get("confidence")
        confs.append(math.nan if c is None else float(c))
    if not items:
        sample = ", ".join(sorted(unmatched)[:3])
        raise DataError(
            "human judgments: no judgment matches an AI-rated item"
            + (
                f" (study items such as {sample} are not among the AI's item ids, e.g. {ai.ids[0]!r})"
                if unmatched
                else ""
            )
        )
    if unmatched:
        notes.append(f"{len(unmatched)} study items have no AI rating; their judgments are left out")
    if skipped:
        notes.append(f"{skipped} skipped judgments are not counted (seed 000)")
    conditions = list(cond_ix)
    if unassisted is not None and unassisted not in cond_ix:
        raise ConfigError(
            f"unassisted condition {unassisted!r} is not in the study; conditions: {', '.join(conditions)}"
        )
    if unassisted is None:
        named = [c for c in conditions if c in UNASSISTED_NAMES]
        unassisted = named[0] if len(named) == 1 else None
    return HumanData(
        np.array(items, dtype=np.int64),
        np.array(raters, dtype=np.int64),
        np.array(conds, dtype=np.int64),
        np.array(correct),
        np.array(votes, dtype=np.int64),
        np.array(confs),
        list(rater_ix),
        conditions,
        unassisted,
        notes,
    )


def load_human_rows(source: str | Path) -> tuple[list[dict[str, Any]], str | None]:
    """Export rows from a study database (SQLite path or URL) or an export file (``.csv`` /
    ``.jsonl``), and the unassisted condition when the study's manifest says which it is (the
    condition with no assistance parts)."""
    from seerbench.study import StudyStore, export_rows, read_export

    s = str(source)
    if s.endswith((".csv", ".jsonl")):
        return read_export(s), None
    store = StudyStore(s)
    try:
        rows = export_rows(store)
        m = store.manifest
        if m.task != "factuality":
            raise DataError(
                f"{s} is a {m.task!r} study; the complementarity analysis takes a factuality study"
            )
        bare = [c.name for c in m.conditions if not c.assistance]
        return rows, bare[0] if len(bare) == 1 else None
    finally:
        store.close()
