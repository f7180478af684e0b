"""Usage accounting: calls, cache hits, tokens and cost per model."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from seerbench.errors import ConfigError

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
        path = path or os.environ.get("SEERBENCH_PRICES")
        if not path:
            return cls()
        p = Path(path)
        if not p.exists():
            raise ConfigError(f"price table {p} does not exist (set by SEERBENCH_PRICES or --prices)")
        raw: Any = json.loads(p.read_text()) if p.suffix == ".json" else yaml.safe_load(p.read_text())
        if not isinstance(raw, dict):
            raise ConfigError(f"price table {p} must map model specs to {{prompt: ..., completion: ...}}")
        prices = {}
        for spec, v in raw.items():
            if not isinstance(v, dict) or not {"prompt", "completion"} <= set(v):
                raise ConfigError(f"price table {p}: entry {spec!r} needs 'prompt' and 'completion' ($/Mtok)")
            prices[str(spec)] = Price(float(v["prompt"]), float(v["completion"]))
        return cls(prices)

    def cost(self, spec: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        if spec.split(":")[0].split("/")[0] in _FREE_BACKENDS:
            return 0.0
        price = self.prices.get(spec)
        if price is None:
            return None
        return (prompt_tokens * price.prompt_per_mtok + completion_tokens * price.completion_per_mtok) / 1e6


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
