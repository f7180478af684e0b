"""Kept for imports: seed 004's judging conditions and catch trials live in
:mod:`seerbench.conditions`; ``seerbench.datasets`` re-exports them from there."""

from __future__ import annotations

from seerbench.conditions import (
    JUDGING_CONDITIONS,
    JudgeMaterial,
    OptionMaterial,
    canonical_condition,
    judge_material,
    make_catch_trials,
)

__all__ = [
    "CONDITIONS",
    "JudgeMaterial",
    "OptionMaterial",
    "canonical_condition",
    "judge_material",
    "make_catch_trials",
]

CONDITIONS: dict[str, str] = {name: c.description for name, c in JUDGING_CONDITIONS.items()}
"""Condition name -> what the judge sees (derived from :data:`seerbench.conditions.JUDGING_CONDITIONS`)."""
