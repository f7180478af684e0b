"""Calibration: accuracy by confidence bucket, expected calibration error (ECE) and Brier score,
for the AI rater, model judges (from ``seerbench run`` results) and human confidence ratings.

For forecasts ``c_j`` (the stated probability of being right) and outcomes ``y_j`` (1 right, 0
wrong; 1/2 for a judge's tie), with buckets ``B_b`` of the forecasts:

- ``ECE = sum_b (|B_b| / n) |mean_{B_b} y - mean_{B_b} c|``
- ``Brier = (1/n) sum_j (c_j - y_j)^2``
"""

from __future__ import annotations

import math
from collections.abc import Mapping, MutableSequence, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from seerbench.errors import ConfigError

#: The factuality task's 4-point confidence scale as a probability of being right: "not at all
#: confident" is a coin flip between the two binarised labels, "very confident" is certainty,
#: evenly spaced between.
HUMAN_CONFIDENCE_PROBABILITY: dict[int, float] = {1: 0.5, 2: 2 / 3, 3: 5 / 6, 4: 1.0}


class Bucket(BaseModel):
    low: float
    high: float
    n: int
    mean_confidence: float
    accuracy: float


class Calibration(BaseModel):
    source: str
    n: int
    ece: float | None
    brier: float | None
    buckets: list[Bucket]
    note: str | None = None


def calibration(
    confidence: Sequence[float] | np.ndarray,
    correct: Sequence[float] | np.ndarray,
    *,
    source: str = "",
    bins: int = 10,
    discrete: bool = False,
    note: str | None = None,
) -> Calibration:
    """Buckets, ECE and Brier of forecasts ``confidence`` (in [0, 1]) against outcomes ``correct``.

    ``bins`` equal-width buckets on [0, 1] (the last one closed), or with ``discrete=True`` one
    bucket per distinct forecast (for a fixed scale such as the 4-point human confidence).
    Empty buckets are left out.
    """
    c = np.asarray(confidence, dtype=float)
    y = np.asarray(correct, dtype=float)
    if c.shape != y.shape:
        raise ValueError(f"confidence and correct differ in length ({c.size} vs {y.size})")
    if c.size and (np.isnan(c).any() or c.min() < 0 or c.max() > 1):
        raise ConfigError("confidences must lie in [0, 1]")
    if bins < 1:
        raise ConfigError(f"bins must be at least 1, got {bins}")
    n = int(c.size)
    if n == 0:
        return Calibration(source=source, n=0, ece=None, brier=None, buckets=[], note=note)
    if discrete:
        levels = np.unique(c)
        idx = np.searchsorted(levels, c)
        edges = [(float(v), float(v)) for v in levels]
    else:
        idx = np.minimum((c * bins).astype(int), bins - 1)
        edges = [(k / bins, (k + 1) / bins) for k in range(bins)]
    buckets = []
    ece = 0.0
    for b, (lo, hi) in enumerate(edges):
        sel = idx == b
        m = int(sel.sum())
        if not m:
            continue
        acc, conf = float(y[sel].mean()), float(c[sel].mean())
        ece += m / n * abs(acc - conf)
        buckets.append(Bucket(low=lo, high=hi, n=m, mean_confidence=conf, accuracy=acc))
    return Calibration(
        source=source, n=n, ece=ece, brier=float(((c - y) ** 2).mean()), buckets=buckets, note=note
    )


def human_calibration(
    levels: np.ndarray,
    correct: np.ndarray,
    *,
    source: str = "humans",
    mapping: Mapping[int, float] = HUMAN_CONFIDENCE_PROBABILITY,
) -> Calibration:
    """Calibration of the raters' 1-4 confidence, read as probabilities through ``mapping``
    (judgments without a confidence are left out)."""
    ok = ~np.isnan(levels)
    lv = levels[ok].astype(int)
    bad = sorted(set(lv.tolist()) - set(mapping))
    if bad:
        raise ConfigError(f"confidence level {bad[0]} has no probability in the mapping ({sorted(mapping)})")
    probs = np.array([mapping[int(v)] for v in lv])
    return calibration(
        probs,
        correct[ok],
        source=source,
        discrete=True,
        note="4-point confidence read as " + ", ".join(f"{k}={v:.3g}" for k, v in sorted(mapping.items())),
    )


def judge_forecasts(lines: Sequence[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """(confidence, correct) of a model judge over results lines: per answer case that was judged
    (once for a symmetric line), the judge's largest probability and whether that option is the
    true one (1/m when m options share the largest probability and one of them is true)."""
    conf: list[float] = []
    right: list[float] = []
    for line in lines:
        add_judge_forecasts(line, conf, right)
    return conf, right


def judged_cases(line: dict[str, Any]) -> list[Any]:
    """A results line's answer cases, each a verdict: once for a symmetric line (one run served
    every case, and each case carries its verdict)."""
    cases = line.get("answer_cases") or []
    if isinstance(cases, dict):
        cases = list(cases.values())
    return cases[:1] if line.get("symmetric") else list(cases)


def add_judge_forecasts(
    line: dict[str, Any], conf: MutableSequence[float], right: MutableSequence[float]
) -> None:
    """:func:`judge_forecasts` of one line, appended to ``conf`` and ``right`` (lists or
    ``array("d")``: the report keeps a million of each)."""
    if line.get("excluded"):
        return
    q = line.get("question") or {}
    values = {}
    for ac in q.get("answer_cases") or ():
        values[str(ac.get("short"))] = float(ac.get("value") or 0.0)
    if not values:
        return
    best = max(values.values())
    truth = [k for k, v in values.items() if v == best]
    for case in judged_cases(line):
        cp = (case or {}).get("case_probs") or {}
        probs = cp.get("probabilities")
        if not probs or cp.get("error") or cp.get("parse_status", "ok") != "ok":
            continue
        top = max(map(float, probs.values()))
        if math.isnan(top):
            continue
        tied = true_tied = 0  # options at the largest probability, and the true ones among them
        for o, p in probs.items():
            if float(p) == top:
                tied += 1
                true_tied += o in truth
        conf.append(min(max(top, 0.0), 1.0))
        right.append(true_tied / tied)


def judge_calibration(run_dir: str | Path, *, bins: int = 10) -> list[Calibration]:
    """Calibration of every model judge in a ``seerbench run`` folder, one per grid cell."""
    from seerbench.runs import RunFolder

    folder = RunFolder(run_dir)
    out = []
    for cell in folder.cells():
        lines, skipped = cell.read()
        c, y = judge_forecasts(lines)
        judge = lines[0].get("judge") if lines else None
        note = f"judge {judge}" + (f"; {skipped} unreadable lines skipped" if skipped else "")
        out.append(calibration(c, y, source=cell.key, bins=bins, note=note))
    return out
