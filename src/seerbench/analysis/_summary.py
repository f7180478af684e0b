from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

DEFAULT_N_BOOT = 2000


@dataclass(frozen=True)
class Summary:
    """Mean of per-question values with its spread and a seeded percentile-bootstrap CI."""

    n: int
    mean: float
    std: float
    se: float
    ci_low: float
    ci_high: float
    confidence: float
    n_boot: int
    seed: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _nan_summary(n: int, confidence: float, n_boot: int, seed: int) -> Summary:
    return Summary(n, math.nan, math.nan, math.nan, math.nan, math.nan, confidence, n_boot, seed)


def summarize(
    values: Sequence[float], *, confidence: float = 0.95, n_boot: int = DEFAULT_N_BOOT, seed: int = 0
) -> Summary:
    """Mean, sample std (ddof=1), standard error and percentile bootstrap CI of ``values``.

    Non-finite values are kept (a mean over an infinite score is infinite, honestly); an empty
    input gives NaNs. The CI is reproducible given ``seed``.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    x = np.asarray(values, dtype=float)
    n = int(x.size)
    if n == 0:
        return _nan_summary(0, confidence, n_boot, seed)
    mean = float(x.mean())
    with np.errstate(invalid="ignore"):  # an infinite value makes std NaN; no warning for it
        std = float(x.std(ddof=1)) if n > 1 else 0.0
    se = std / math.sqrt(n) if n > 1 else 0.0
    if n == 1 or not np.all(np.isfinite(x)):
        return Summary(n, mean, std, se, mean, mean, confidence, n_boot, seed)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    means = x[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return Summary(n, mean, std, se, float(lo), float(hi), confidence, n_boot, seed)


def paired_difference(
    a: Sequence[float], b: Sequence[float], **kw: Any
) -> Summary:
    """Summary of a - b over the same questions (paired: element i of each is question i)."""
    if len(a) != len(b):
        raise ValueError(f"paired difference needs equal lengths, got {len(a)} and {len(b)}")
    return summarize([x - y for x, y in zip(a, b, strict=True)], **kw)
