"""The results files of a run: append-only while running, rewritten in dataset order at the end,
every rewrite atomic."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

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
    """Ids of complete lines; a torn last line (killed mid-write) is cut off the file."""
    if not path.exists():
        return set()
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep != len(data) and truncate:
        with open(path, "r+b") as f:
            f.truncate(keep)
    done: set[str] = set()
    for raw in data[:keep].splitlines():
        try:
            done.add(json.loads(raw)["question_id"])
        except (json.JSONDecodeError, KeyError):
            continue
    return done


def _finalise(path: Path, order: list[str]) -> list[dict[str, Any]]:
    """Rewrite results.jsonl atomically: one line per question, in dataset order, no duplicates."""
    by_id: dict[str, tuple[str, dict[str, Any]]] = {}
    for raw in path.read_text().splitlines():
        try:
            rec = json.loads(raw)
            qid = rec["question_id"]
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
        by_id.setdefault(qid, (raw, rec))
    rank = {q: i for i, q in enumerate(order)}
    ids = sorted(by_id, key=lambda q: (rank.get(q, len(rank)), q))
    _atomic_write(path, "".join(by_id[q][0] + "\n" for q in ids))
    return [by_id[q][1] for q in ids]


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
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
