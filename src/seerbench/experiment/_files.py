"""The results files of a run: append-only while running, rewritten in dataset order at the end,
every rewrite atomic."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from seerbench._lock import tmp_name
from seerbench.experiment._config import NOT_IN_FINGERPRINT, ExperimentConfig


async def _gather_cancelling(coros: list[Any]) -> None:
    """Like gather, but a fatal error cancels the siblings instead of leaving them running."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _load_done(path: Path, *, truncate: bool = True) -> set[str]:
    """Ids of complete lines; a torn last line (killed mid-write) is cut off the file. Read one
    line at a time: only the ids are kept."""
    if not path.exists():
        return set()
    done: set[str] = set()
    keep = 0  # bytes up to the end of the last complete line
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break  # a torn last line
            keep += len(raw)
            qid = _question_id(raw)
            if qid is not None:
                done.add(qid)
        torn = f.tell() != keep
    if torn and truncate:
        with open(path, "r+b") as f:
            f.truncate(keep)
    return done


def _record(raw: bytes) -> dict[str, Any] | None:
    """A results line as a dict, or None for junk (no JSON object with a string question_id)."""
    try:
        rec = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return rec if isinstance(rec, dict) and isinstance(rec.get("question_id"), str) else None


def _question_id(raw: bytes) -> str | None:
    rec = _record(raw)
    return None if rec is None else rec["question_id"]


def _records(path: Path) -> Iterator[dict[str, Any]]:
    """The complete lines of a results file the runner wrote, one at a time (junk skipped; no
    schema check: the runner reads its own lines)."""
    with open(path, "rb") as f:
        for raw in f:
            rec = _record(raw) if raw.endswith(b"\n") else None
            if rec is not None:
                yield rec


def _finalise(
    path: Path,
    order: Sequence[str] | Mapping[str, int],
    on_line: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Rewrite results.jsonl atomically: one line per question, in dataset order (``order``: the
    ids, or id -> position), no duplicates (the first line of a question wins), ids not in the
    dataset last. Then each line, parsed, goes to ``on_line`` in that order.

    Flat in memory: the first pass keeps each question's byte offset, the second copies lines
    in order from those offsets. A file already in order (a run that was not interrupted, or a
    finished cell run again) is left as it is."""
    where: dict[str, tuple[int, int]] = {}  # question id -> (offset, length) of its first line
    rank = order if isinstance(order, Mapping) else {q: i for i, q in enumerate(order)}
    in_order, last, offset = True, -1, 0
    with open(path, "rb") as f:
        for raw in f:
            qid = _question_id(raw) if raw.endswith(b"\n") else None
            if qid is None or qid in where:
                in_order = False  # junk, a torn line or a duplicate: the rewrite drops it
            else:
                where[qid] = (offset, len(raw))
                r = rank.get(qid, len(rank))
                in_order = in_order and r > last and qid in rank
                last = r
            offset += len(raw)
    ids = sorted(where, key=lambda q: (rank.get(q, len(rank)), q))
    if not in_order:
        tmp = tmp_name(path)
        with open(path, "rb") as src, open(tmp, "wb") as dst:
            for qid in ids:
                off, n = where[qid]
                src.seek(off)
                dst.write(src.read(n))
            dst.flush()
            os.fsync(dst.fileno())
        os.replace(tmp, path)
    if on_line is not None:
        with open(path, "rb") as f:
            for raw in f:
                on_line(json.loads(raw))


def _atomic_write(path: Path, text: str) -> None:
    tmp = tmp_name(path)
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _group(problems: list[str]) -> str:
    """'cell (why)' problems, grouped by why: '5 cells differ in: eps (e.g. NaiveJudge/J_local)'."""
    by_why: dict[str, list[str]] = {}
    for p in problems:
        cell, _, why = p.partition(" (")
        by_why.setdefault(why.rstrip(")") if why else p, []).append(cell)
    parts = []
    for why, cells in by_why.items():
        if len(cells) == 1:
            parts.append(f"{cells[0]} ({why})" if why != cells[0] else why)
        else:
            parts.append(f"{len(cells)} cells ({why}; e.g. {cells[0]})")
    return "; ".join(parts)


def _legacy_fingerprint(config: ExperimentConfig) -> str:
    """The whole-config fingerprint seerbench 0.1 recorded."""
    return config.fingerprint()


def _diff_keys(old: dict[str, Any], new: dict[str, Any], *, nested: bool = False) -> list[str]:
    keys = sorted(k for k in set(old) | set(new) if k not in NOT_IN_FINGERPRINT and old.get(k) != new.get(k))
    if not nested:
        return keys
    out: list[str] = []
    for k in keys:
        a, b = old.get(k), new.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            out.extend(f"{k}.{sub}" for sub in _diff_keys(a, b, nested=True))
        else:
            out.append(k)
    return out
