"""Helpers of the runner's output folder (the results files themselves are read and written by
:mod:`seerbench.store`)."""

from __future__ import annotations

import asyncio
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


def _group(problems: list[str]) -> str:
    """'cell (why)' problems, grouped by why: '5 cells differ in: eps (e.g. NaiveJudge/J_local)'."""
    by_why: dict[str, list[str]] = {}
    for p in problems:
        cell, _, why = p.partition(" (")
        by_why.setdefault(why.removesuffix(")") if why else p, []).append(cell)
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
