"""What every part of the study store shares: the engine, the manifest, the items (in memory), a
write transaction, and a rater's task counts (which the catch rule and the quota read)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from seerbench.study._items import StudyItem
from seerbench.study._manifest import StudyManifest
from seerbench.study._schema import _COUNTS, _NEXT_SEQ

__all__ = ["StoreBase"]


@dataclass
class _Counts:
    """One rater's tasks: per condition (not abandoned), catch trials given and submitted
    ((n, right) per condition), submitted tasks, judged (non-catch) submitted tasks, next seq."""

    per_cond: dict[str, int]
    catch_given: dict[str, int]
    catch_done: dict[str, tuple[int, float]]
    done: int = 0
    scored: int = 0
    seq: int = 0


class StoreBase:
    """The state of a :class:`~seerbench.study.StudyStore` and the helpers all its parts use."""

    url: str
    engine: Engine
    clock: Callable[[], float]
    manifest: StudyManifest
    secret: str
    admin_token: str
    _write_lock: AbstractContextManager[Any]
    _items: dict[int, StudyItem]
    _catch_fit: dict[str, list[int]]

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` on SQLite).

        On SQLite, writers of this process also queue on a lock first: SQLite's own busy handler
        waits by sleeping with growing back-off (up to 100 ms a try), which under many threads
        costs far more than waiting in line. Correctness never rests on this lock; the database
        constraints and guarded updates hold across processes.
        """
        with self._write_lock, self.engine.connect() as c:
            c.execution_options(seerbench_write=True)
            with c.begin():
                yield c

    # ------------------------------------------------------------------ items
    def item(self, item_id: int) -> StudyItem:
        """The item with database id ``item_id`` (cached: items never change after creation)."""
        return self._items[item_id]

    def _counts(self, c: Connection, rater_id: str) -> _Counts:
        rows = c.execute(_COUNTS, {"rid": rater_id}).all()
        k = _Counts({cond.name: 0 for cond in self.manifest.conditions}, {}, {})
        for cond_name, st, is_catch, n, right in rows:
            if st == "submitted":
                k.done += n
                k.scored += 0 if is_catch else n
                if is_catch:
                    k.catch_done[cond_name] = (int(n), float(right))
            if st != "abandoned":
                k.per_cond[cond_name] = k.per_cond.get(cond_name, 0) + n
                if is_catch:
                    k.catch_given[cond_name] = k.catch_given.get(cond_name, 0) + n
        k.seq = int(c.execute(_NEXT_SEQ, {"rid": rater_id}).scalar_one())
        return k

    def _is_stopped_by_catch_rule(self, k: _Counts) -> bool:
        """Seed 004 (appendix E) stops a worker from completing any more tasks once the catch rule
        fires in one condition (``catch_rule: stop``, the default); ``catch_rule: per_condition``
        removes them from that condition only and stops them when every condition removed them."""
        removed = self._removed(k)
        if self.manifest.catch_rule == "stop":
            return bool(removed)
        return len(removed) == len(self.manifest.conditions)

    def _removed(self, k: _Counts) -> set[str]:
        """Conditions the rater is removed from (seed 004, counted per condition): at least
        ``catch_min`` catch trials submitted there with accuracy below ``catch_threshold``."""
        m = self.manifest
        return {
            cond
            for cond, (n, right) in k.catch_done.items()
            if n >= m.catch_min and right / n < m.catch_threshold
        }
