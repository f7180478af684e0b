"""Disk cache of model samples: SQLite (WAL) keyed by a stable hash of the request."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from seerbench.config import CACHE_DIR_ENV, cache_dir
from seerbench.models._types import ChatMessage, GenerateConfig, Sample

#: Bump when the meaning of a cached value changes, so old entries are never misread.
CACHE_FORMAT = 1
CACHE_FILE = "cache.sqlite"


#: The cache scope of the calls made in this context (:func:`cache_scope`); "" is the default scope.
CACHE_SCOPE: ContextVar[str] = ContextVar("seerbench_cache_scope", default="")


@contextmanager
def cache_scope(scope: str | None) -> Iterator[None]:
    """Calls made inside take their cache entries from (and put them in) scope ``scope``: a new
    scope makes fresh calls without clearing the cache (config ``cache_scope``, ``--cache-scope``)."""
    token = CACHE_SCOPE.set(scope or "")
    try:
        yield
    finally:
        CACHE_SCOPE.reset(token)


def cache_key(
    backend: str,
    model: str,
    messages: Sequence[ChatMessage],
    config: GenerateConfig,
    index: int,
    purpose: str = "generate",
    *,
    provenance: str = "",
    scope: str = "",
) -> str:
    """Stable hash of everything that determines sample ``index`` of a request.

    ``n`` is left out on purpose: sample 3 of an n=5 request is the same as sample 3 of n=10.
    ``purpose`` separates other kinds of request (e.g. option log probabilities) from generation.
    ``provenance`` is the model's :func:`seerbench.provenance.provenance_key` (its backend's
    version and code, its file's hash) and ``scope`` the cache scope; each is left out when "".
    """
    payload: dict[str, object] = {
        "v": CACHE_FORMAT,
        "purpose": purpose,
        "backend": backend,
        "model": model,
        "messages": [[m.role, m.content] for m in messages],
        "config": config.model_dump(exclude={"n"}),
        "index": index,
    }
    if provenance:
        payload["provenance"] = provenance
    if scope:
        payload["scope"] = scope
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def _when_unlocked(fn: Callable[[], object], *, within: float = 60.0) -> None:
    """Run ``fn``, again after a short sleep while SQLite says the database is locked (up to
    ``within`` seconds)."""
    deadline = time.monotonic() + within
    delay = 0.01
    while True:
        try:
            fn()
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


class Cache:
    """A SQLite file of samples. Safe for concurrent writers in several processes (WAL journal,
    a busy timeout, one short transaction per write)."""

    def __init__(self, path: str | Path | None = None) -> None:
        p = Path(path) if path is not None else cache_dir() / CACHE_FILE
        if p.suffix != ".sqlite" and (p.is_dir() or not p.suffix):
            p = p / CACHE_FILE
        p.parent.mkdir(parents=True, exist_ok=True)
        self.path = p
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(p, timeout=60.0, check_same_thread=False, isolation_level=None)
        _when_unlocked(self._setup)

    def _setup(self) -> None:
        # Switching to WAL needs an exclusive lock, and SQLite answers "database is locked" at once
        # (no busy wait) when several processes open a new cache file together (Ray workers did):
        # switch only when needed, and retry while another process holds the lock.
        if self._conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS samples ("
            " key TEXT PRIMARY KEY, model TEXT NOT NULL, value TEXT NOT NULL, created REAL NOT NULL)"
        )

    def get(self, key: str) -> Sample | None:
        rows: list[Any] = []

        def read() -> None:
            rows[:] = self._conn.execute("SELECT value FROM samples WHERE key = ?", (key,)).fetchall()

        with self._lock:
            _when_unlocked(read)
        if not rows:
            return None
        return Sample.model_validate_json(rows[0][0])

    def put(self, key: str, model: str, sample: Sample) -> None:
        value = sample.model_dump_json(exclude={"cached"})
        with self._lock:
            # a write that finds the database locked at once (another process's checkpoint or a
            # stale read snapshot: SQLite's busy wait does not cover those) is tried again
            _when_unlocked(
                lambda: self._conn.execute(
                    "INSERT OR REPLACE INTO samples (key, model, value, created) VALUES (?, ?, ?, ?)",
                    (key, model, value, time.time()),
                )
            )

    def info(self) -> dict[str, Any]:
        with self._lock:
            n = self._conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
            per_model = self._conn.execute(
                "SELECT model, COUNT(*) FROM samples GROUP BY model ORDER BY 2 DESC"
            ).fetchall()
        size = sum(f.stat().st_size for f in self.path.parent.glob(self.path.name + "*") if f.is_file())
        return {"path": str(self.path), "entries": n, "bytes": size, "by_model": dict(per_model)}

    def clear(self, model: str | None = None) -> int:
        """Delete all entries (or one model's); returns how many were deleted."""
        with self._lock:
            if model is None:
                cur = self._conn.execute("DELETE FROM samples")
            else:
                cur = self._conn.execute("DELETE FROM samples WHERE model = ?", (model,))
            n = cur.rowcount
            self._conn.execute("VACUUM")
        return n

    def close(self) -> None:
        with self._lock:
            self._conn.close()


_caches: dict[Path, Cache] = {}
_caches_lock = threading.Lock()
#: The environment variables the cache's location is resolved from (--cache-dir sets the first).
_LOCATION_ENV = (CACHE_DIR_ENV, "XDG_CACHE_HOME", "HOME")
_by_env: dict[tuple[str | None, ...], Cache] = {}


def default_cache() -> Cache:
    """The process's cache at the configured location: resolved again whenever one of the
    variables it depends on changes (so tests and --cache-dir can move it), not on every request."""
    env = tuple(os.environ.get(v) for v in _LOCATION_ENV)
    c = _by_env.get(env)
    if c is not None:
        return c
    p = cache_dir() / CACHE_FILE
    with _caches_lock:
        c = _caches.get(p)
        if c is None:
            c = _caches[p] = Cache(p)
        _by_env[env] = c
        return c
