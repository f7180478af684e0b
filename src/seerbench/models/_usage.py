"""Usage accounting: calls, cache hits, tokens and cost per model."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from seerbench.config import load_yaml
from seerbench.errors import ConfigError

#: The environment variable naming the price table (``seerbench --prices FILE`` sets it).
PRICES_ENV = "SEERBENCH_PRICES"

#: Models known to cost nothing per token (they run on the user's own machine).
_FREE_BACKENDS = ("local", "scripted")


@dataclass
class Price:
    """US dollars per million prompt / completion tokens."""

    prompt_per_mtok: float
    completion_per_mtok: float


@dataclass
class PriceTable:
    """User-supplied prices by model spec. A model with no price has unknown cost (None), not 0."""

    prices: dict[str, Price] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceTable:
        """Read a YAML/JSON mapping ``spec: {prompt: $/Mtok, completion: $/Mtok}`` from ``path`` or
        ``$SEERBENCH_PRICES``; no file means an empty table."""
        where = "--prices" if path else PRICES_ENV
        path = path or os.environ.get(PRICES_ENV)
        if not path:
            return cls()
        p = Path(path)
        try:
            text = p.read_text()
        except FileNotFoundError:
            raise ConfigError(f"price table {p} (from {where}) does not exist") from None
        except OSError as e:
            raise ConfigError(f"price table {p} (from {where}) cannot be read: {e.strerror or e}") from None
        try:
            raw: Any = json.loads(text) if p.suffix == ".json" else load_yaml(text)
        except (ValueError, yaml.YAMLError) as e:
            raise ConfigError(
                f"price table {p} (from {where}) is not valid {'JSON' if p.suffix == '.json' else 'YAML'}: "
                f"{' '.join(str(e).split())}"
            ) from None
        if not isinstance(raw, dict):
            raise ConfigError(
                f"price table {p} must map model specs to {{prompt: ..., completion: ...}} ($/Mtok)"
            )
        prices = {}
        for spec, v in raw.items():
            if not isinstance(v, dict) or not {"prompt", "completion"} <= set(v):
                raise ConfigError(f"price table {p}: entry {spec!r} needs 'prompt' and 'completion' ($/Mtok)")
            try:
                price = Price(float(v["prompt"]), float(v["completion"]))
            except (TypeError, ValueError):
                raise ConfigError(
                    f"price table {p}: entry {spec!r}: prompt and completion must be numbers ($/Mtok)"
                ) from None
            if not (price.prompt_per_mtok >= 0 and price.completion_per_mtok >= 0):
                raise ConfigError(f"price table {p}: entry {spec!r}: prices must be >= 0")
            prices[str(spec).strip()] = price
        return cls(prices)

    def price(self, spec: str) -> Price | None:
        """The price of a model spec: its own entry, else (for ``openai/<model>@<base_url>``) the
        entry of ``openai/<model>``; None when the table has neither."""
        spec = spec.strip()
        if spec in self.prices:
            return self.prices[spec]
        base, at, _url = spec.partition("@")
        if at and base in self.prices:
            return self.prices[base]
        return None

    def cost(self, spec: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        """Dollars for the tokens; 0 for a model that runs on this machine (``local``,
        ``scripted``) unless the table prices it; None (unknown) for any other unpriced model."""
        price = self.price(spec)
        if price is None:
            return 0.0 if _is_free(spec) else None
        return (prompt_tokens * price.prompt_per_mtok + completion_tokens * price.completion_per_mtok) / 1e6

    def unmatched(self, specs: Iterable[str]) -> list[str]:
        """Entries of the table that price none of ``specs`` (a misspelt spec, or one never used)."""
        used = {s.strip() for s in specs}
        used |= {s.partition("@")[0] for s in used}
        return [k for k in self.prices if k not in used]


def _is_free(spec: str) -> bool:
    return spec.strip().split(":")[0].split("/")[0] in _FREE_BACKENDS


@dataclass
class ModelUsage:
    calls: int = 0  # requests that reached the backend
    cache_hits: int = 0
    retries: int = 0
    errors: int = 0
    prompt_tokens: int = 0  # tokens of calls that reached the backend
    completion_tokens: int = 0
    cost: float | None = 0.0  # None once any call had an unknown price

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


#: The grid cell whose questions the current task runs (set by the runner): each model event is
#: logged with it, so a run folder's usage can be read per cell (``seerbench plan``).
_CELL: ContextVar[str | None] = ContextVar("seerbench_usage_cell", default=None)


@contextmanager
def usage_cell(key: str | None) -> Iterator[None]:
    """Log the model events of this block (and of the tasks it starts) as cell ``key``'s."""
    token = _CELL.set(key)
    try:
        yield
    finally:
        _CELL.reset(token)


class UsageTracker:
    """Thread-safe running totals per model spec; shared by every Model in a process by default.
    Every count is also appended, as it happens, to each :class:`UsageLog` in ``logs`` (a run
    folder's, while a run writes there), so a killed process loses none of it."""

    def __init__(self, prices: PriceTable | None = None) -> None:
        self._lock = threading.Lock()
        self.prices = prices if prices is not None else PriceTable.load()
        self.by_model: dict[str, ModelUsage] = {}
        self.logs: list[UsageLog] = []

    def _get(self, spec: str) -> ModelUsage:
        return self.by_model.setdefault(spec, ModelUsage())

    def _log(self, spec: str, counts: dict[str, Any]) -> None:
        """Append one event to the attached logs (the caller holds the lock)."""
        for log in self.logs:
            log.append({"model": spec, **counts})

    def record_call(self, spec: str, prompt_tokens: int, completion_tokens: int) -> None:
        self.add(spec, {"calls": 1, "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens})

    def add(self, spec: str, counts: dict[str, int]) -> None:
        """Add ``counts`` (some of :data:`USAGE_KEYS`) to ``spec``'s totals; the tokens of calls are
        priced with this tracker's table (a cost is linear in tokens, so pricing a sum is pricing
        each call)."""
        with self._lock:
            u = self._get(spec)
            for k, v in counts.items():
                setattr(u, k, getattr(u, k) + v)
            event: dict[str, Any] = {k: v for k, v in counts.items() if v}
            if counts.get("calls"):
                c = self.prices.cost(spec, counts.get("prompt_tokens", 0), counts.get("completion_tokens", 0))
                u.cost = None if (u.cost is None or c is None) else u.cost + c
                event["cost"] = c
            if event:
                cell = _CELL.get()
                if cell is not None:
                    event["cell"] = cell
                self._log(spec, event)

    def record_hit(self, spec: str) -> None:
        self.add(spec, {"cache_hits": 1})

    def record_retry(self, spec: str) -> None:
        self.add(spec, {"retries": 1})

    def record_error(self, spec: str) -> None:
        self.add(spec, {"errors": 1})

    def totals(self) -> ModelUsage:
        with self._lock:
            t = ModelUsage()
            for u in self.by_model.values():
                t.calls += u.calls
                t.cache_hits += u.cache_hits
                t.retries += u.retries
                t.errors += u.errors
                t.prompt_tokens += u.prompt_tokens
                t.completion_tokens += u.completion_tokens
                t.cost = None if (t.cost is None or u.cost is None) else t.cost + u.cost
            return t

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {k: v.as_dict() for k, v in self.by_model.items()}


_default_tracker: UsageTracker | None = None


def default_tracker() -> UsageTracker:
    global _default_tracker
    if _default_tracker is None:
        _default_tracker = UsageTracker()
    return _default_tracker


def use_prices(path: str | Path) -> PriceTable:
    """Make the price table at ``path`` this process's (``seerbench --prices FILE``): it is read
    and checked now, replaces the default tracker's table, and is what later trackers load."""
    table = PriceTable.load(path)
    os.environ[PRICES_ENV] = str(path)
    if _default_tracker is not None:
        _default_tracker.prices = table
    return table


def unused_prices() -> list[str]:
    """Entries of the default tracker's price table that matched no model this process used
    (empty when no model was used): the command line warns about them, since such an entry
    usually means a spec written differently from the one run (e.g. ``openai/gpt-4o`` vs
    ``openai/gpt-4o-mini``)."""
    t = _default_tracker
    if t is None or not t.by_model:
        return []
    with t._lock:
        specs = list(t.by_model)
    return t.prices.unmatched(specs)


USAGE_KEYS = ("calls", "cache_hits", "retries", "errors", "prompt_tokens", "completion_tokens")

#: A run folder's usage events, appended as calls complete (``usage.json`` summarises them).
USAGE_LOG = "usage.jsonl"


class UsageLog:
    """A run folder's ``usage.jsonl``: one JSON line per model event (a call with its tokens and
    cost, a cache hit, a retry, an error) and one ``{"run": 1}`` per run, each appended with one
    ``write`` as it happens, so a process killed at any moment (SIGKILL included) has recorded
    every call it completed. Attach it to a tracker with ``with UsageLog(path).attached(t):``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def append(self, event: dict[str, Any]) -> None:
        if self._fd is None:
            return
        try:
            os.write(self._fd, (json.dumps(event, separators=(",", ":")) + "\n").encode())
        except OSError as e:  # a full disk: name the file
            raise OSError(e.errno, e.strerror, str(self.path)) from None

    @contextmanager
    def attached(self, tracker: UsageTracker) -> Iterator[UsageLog]:
        """Record ``tracker``'s events here (and one run) while the block runs; then write the
        folder's ``usage.json`` summary."""
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as e:
            raise OSError(e.errno, e.strerror, str(self.path)) from None
        failed = True
        try:
            self.append({"run": 1})
            with tracker._lock:
                tracker.logs.append(self)
            try:
                yield self
                failed = False
            finally:
                with tracker._lock:
                    tracker.logs.remove(self)
        finally:
            os.close(self._fd)
            self._fd = None
            try:  # also after a failure or Ctrl-C: the summary is a convenience, the log is the record
                write_usage_summary(self.path.parent)
            except OSError:
                if not failed:
                    raise


def _zero() -> dict[str, Any]:
    return {**dict.fromkeys(USAGE_KEYS, 0), "cost": 0.0}


def _add(m: dict[str, Any], counts: dict[str, Any], cost: float | None) -> None:
    for k in USAGE_KEYS:
        m[k] = int(m.get(k, 0)) + int(counts.get(k, 0) or 0)
    m["cost"] = None if m.get("cost") is None or cost is None else m["cost"] + cost


def read_usage(folder: Path) -> dict[str, Any] | None:
    """What every run into ``folder`` used: ``usage.json`` (the summary the last run that ended
    wrote, up to ``log_bytes`` of the log) plus the events of ``usage.jsonl`` past it (those of
    a run that was killed). ``{runs, models: {spec: counts}, cells: {cell: counts}, total}``,
    cost None where a call had no price; ``cells`` holds the events logged with their grid cell
    (runs before the cell was logged have none). None when the
    folder has neither file. A torn or unreadable event line is skipped."""
    summary, log = folder / "usage.json", folder / USAGE_LOG
    try:
        rec: dict[str, Any] = json.loads(summary.read_text()) if summary.is_file() else {}
    except (OSError, json.JSONDecodeError):
        rec = {}  # unreadable: the log still holds every event since it began
    if not isinstance(rec, dict):
        rec = {}
    if not rec and not log.is_file():
        return None
    runs = int(rec.get("runs", 0))
    models: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (rec.get("models") or {}).items()}
    cells: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (rec.get("cells") or {}).items()}
    if log.is_file():
        with open(log, "rb") as f:
            f.seek(int(rec.get("log_bytes", 0)))
            for raw in f:
                try:
                    ev = json.loads(raw) if raw.endswith(b"\n") else None
                except ValueError:
                    ev = None
                if not isinstance(ev, dict):
                    continue
                if "run" in ev:
                    runs += 1
                elif isinstance(ev.get("model"), str):
                    _add(models.setdefault(ev["model"], _zero()), ev, ev.get("cost", 0.0))
                    if isinstance(ev.get("cell"), str):
                        _add(cells.setdefault(ev["cell"], _zero()), ev, ev.get("cost", 0.0))
    total = _zero()
    for m in models.values():
        _add(total, m, m.get("cost"))
    return {"runs": runs, "models": models, "cells": cells, "total": total}


def write_usage_summary(folder: Path) -> dict[str, Any] | None:
    """Rewrite ``folder``'s ``usage.json`` from :func:`read_usage` (atomically), recording how
    much of the log it holds; returns what was written."""
    from seerbench._lock import tmp_name

    log = folder / USAGE_LOG
    size = log.stat().st_size if log.is_file() else 0
    rec = read_usage(folder)
    if rec is None:
        return None
    rec["log_bytes"] = size
    path = folder / "usage.json"
    tmp = tmp_name(path)
    try:
        tmp.write_text(json.dumps(rec, indent=2))
        os.replace(tmp, path)
    except OSError as e:
        raise OSError(e.errno, e.strerror, str(path)) from None
    return rec
