"""The whole seed-000 analysis in one call: hybridization per human condition, reliance,
calibration and the mixed-effects model."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from seerbench.complementarity._calibration import (
    Calibration,
    calibration,
    human_calibration,
    judge_calibration,
)
from seerbench.complementarity._data import AIItems, HumanData, ai_items, human_data
from seerbench.complementarity._hybrid import DEFAULT_THRESHOLDS, HybridSweep, hybrid_sweep
from seerbench.complementarity._mixed import MixedEffects, mixed_effects
from seerbench.complementarity._reliance import Reliance, reliance


class ComplementarityReport(BaseModel):
    items: int
    judgments: int
    raters: int
    conditions: list[str]
    unassisted: str | None
    hybrid: list[HybridSweep]
    reliance: Reliance | None
    calibration: list[Calibration]
    mixed_effects: MixedEffects | None
    notes: list[str]
    n_boot: int
    seed: int


def analyze(
    ai_ratings: Iterable[Any],
    rows: Sequence[dict[str, Any]],
    *,
    unassisted: str | None = None,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    cost_per_rating: float | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    folds: int = 5,
    repeats: int = 20,
    mixed: bool = True,
    interaction: bool = True,
    judge_runs: Sequence[str | Path] = (),
) -> ComplementarityReport:
    """AI ratings (:func:`read_ai_ratings`) and study export rows in, every seed-000 figure out.

    Hybridization is computed for every human condition with individual ratings and with the
    majority vote; reliance and the mixed-effects model need the unassisted condition (found in
    the study's manifest, by name, or given as ``unassisted``); without it they are left out
    with a note.
    """
    ai: AIItems = ai_items(ai_ratings)
    h: HumanData = human_data(rows, ai, unassisted=unassisted)
    notes = list(h.notes)
    n_null = sum(1 for r in ai.rating if r is None)
    if n_null:
        notes.append(
            f"{n_null} AI ratings have no verified sample: "
            "scored wrong, confidence 0 (always routed to humans)"
        )
    sweeps = [
        hybrid_sweep(
            ai,
            h,
            cond,
            aggregate=agg,
            thresholds=list(thresholds),
            cost_per_rating=cost_per_rating,
            n_boot=n_boot,
            seed=seed,
            folds=folds,
            repeats=repeats,
        )
        for cond in h.conditions
        for agg in ("majority", "individual")
    ]
    rel = None
    me = None
    if h.unassisted is None:
        notes.append(
            "no unassisted condition found (name it with "
            "unassisted=/--unassisted): reliance and mixed effects left out"
        )
    else:
        if len(h.conditions) > 1:
            rel = reliance(ai, h, unassisted=h.unassisted, n_boot=n_boot, seed=seed)
        if mixed:
            me = mixed_effects(
                ai, h, reference=h.unassisted, interaction=interaction and len(h.conditions) > 1
            )
    cal = [
        calibration(
            ai.confidence[np.array([r is not None for r in ai.rating])],
            ai.correct[np.array([r is not None for r in ai.rating])],
            source="AI rater",
        )
    ]
    for c, name in enumerate(h.conditions):
        sel = h.condition == c
        cal.append(human_calibration(h.confidence[sel], h.correct[sel], source=f"humans: {name}"))
    for run in judge_runs:
        cal.extend(judge_calibration(run))
    return ComplementarityReport(
        items=ai.n,
        judgments=h.n,
        raters=len(h.raters),
        conditions=h.conditions,
        unassisted=h.unassisted,
        hybrid=sweeps,
        reliance=rel,
        calibration=cal,
        mixed_effects=me,
        notes=notes,
        n_boot=n_boot,
        seed=seed,
    )
