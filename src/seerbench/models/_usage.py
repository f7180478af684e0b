"""Usage accounting: calls, cache hits, tokens and cost per model."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
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


class UsageTracker:
    """Thread-safe running totals per model spec; shared by every Model in a process by default."""

    def __init__(self, prices: PriceTable | None = None) -> None:
        self._lock = threading.Lock()
        self.prices = prices if prices is not None else PriceTable.load()
        self.by_model: dict[str, ModelUsage] = {}

    def _get(self, spec: str) -> ModelUsage:
        return self.by_model.setdefault(spec, ModelUsage())

    def record_call(self, spec: str, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock:
            u = self._get(spec)
            u.calls += 1
            u.prompt_tokens += prompt_tokens
            u.completion_tokens += completion_tokens
            c = self.prices.cost(spec, prompt_tokens, completion_tokens)
            u.cost = None if (u.cost is None or c is None) else u.cost + c

    def record_hit(self, spec: str) -> None:
        with self._lock:
            self._get(spec).cache_hits += 1

    def record_retry(self, spec: str) -> None:
        with self._lock:
            self._get(spec).retries += 1

    def record_error(self, spec: str) -> None:
        with self._lock:
            self._get(spec).errors += 1

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


def record_usage(
    path: Path, before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Add the usage between two :meth:`UsageTracker.snapshot` calls to the run folder's
    ``usage.json`` (every run into the folder adds its own): per model spec, calls (requests that
    reached the backend), cache hits, retries, errors, tokens and cost (None once any call had no
    price), and the number of runs. Written atomically; returns what was written."""
    import json
    import os

    try:
        rec: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, json.JSONDecodeError):
        rec = {}  # an unreadable record is started again rather than stopping the run
    models: dict[str, dict[str, Any]] = rec.get("models") or {}
    for spec, now in after.items():
        was = before.get(spec, {})
        delta = {k: int(now.get(k, 0)) - int(was.get(k, 0)) for k in USAGE_KEYS}
        if not any(delta.values()):
            continue
        cost = (
            None
            if now.get("cost") is None or was.get("cost", 0.0) is None
            else now["cost"] - was.get("cost", 0.0)
        )
        m = models.setdefault(spec, {**dict.fromkeys(USAGE_KEYS, 0), "cost": 0.0})
        for k in USAGE_KEYS:
            m[k] = int(m.get(k, 0)) + delta[k]
        m["cost"] = None if m.get("cost") is None or cost is None else m["cost"] + cost
    total: dict[str, Any] = {k: sum(int(m.get(k, 0)) for m in models.values()) for k in USAGE_KEYS}
    total["cost"] = (
        None
        if any(m.get("cost") is None for m in models.values())
        else sum(m["cost"] for m in models.values())
    )
    rec = {"runs": int(rec.get("runs", 0)) + 1, "models": models, "total": total}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(rec, indent=2))
    os.replace(tmp, path)
    return rec
