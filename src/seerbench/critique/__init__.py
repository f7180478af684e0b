"""Critique assistance (seed 002): answers to critique, critique generation, de-duplication,
helpfulness ranking, and the ``critiques.jsonl`` format shared with the study app."""

from seerbench.critique._answers import FLAW_KINDS, PlantedFlaw, answer_correct, plant_flaw, reference_answer
from seerbench.critique._dedup import dedup
from seerbench.critique._format import AnswerKind, Critique, CritiquedAnswer, read_critiques, write_critiques
from seerbench.critique._generate import (
    DEFAULT_TEMPERATURES,
    CritiqueConfig,
    CritiqueRun,
    generate_critiques,
    sort_by_helpfulness,
)

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

from seerbench.critique import _scripted  # noqa: F401  (registers scripted:critic)
