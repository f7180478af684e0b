"""Critique assistance (seed 002): answers to critique, critique generation, de-duplication,
helpfulness ranking, and the ``critiques.jsonl`` format shared with the study app."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from seerbench.critique import _dataset, _scripted  # noqa: F401  (register the `critiques` dataset, scripted:critic)
from seerbench.critique._answers import FLAW_KINDS, PlantedFlaw, answer_correct, plant_flaw, reference_answer
from seerbench.critique._dedup import dedup
from seerbench.critique._format import AnswerKind, Critique, CritiquedAnswer, read_critiques, write_critiques

if TYPE_CHECKING:
    from seerbench.critique._generate import (
        DEFAULT_TEMPERATURES,
        CritiqueConfig,
        CritiqueRun,
        generate_critiques,
        sort_by_helpfulness,
    )

# the generator reads experiment configs, which name protocols, one of which loads this package:
# it is imported on first use
_LAZY = ("DEFAULT_TEMPERATURES", "CritiqueConfig", "CritiqueRun", "generate_critiques", "sort_by_helpfulness")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from seerbench.critique import _generate

        return getattr(_generate, name)
    raise AttributeError(f"module 'seerbench.critique' has no attribute {name!r}")


__all__ = [
    "DEFAULT_TEMPERATURES",
    "FLAW_KINDS",
    "AnswerKind",
    "Critique",
    "CritiqueConfig",
    "CritiqueRun",
    "CritiquedAnswer",
    "PlantedFlaw",
    "answer_correct",
    "dedup",
    "generate_critiques",
    "plant_flaw",
    "read_critiques",
    "reference_answer",
    "sort_by_helpfulness",
    "write_critiques",
]
