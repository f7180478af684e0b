"""Critique assistance (seed 002): answers to critique, critique generation, de-duplication,
helpfulness ranking; the ``critiques.jsonl`` format shared with the study app lives in
:mod:`seerbench.records` (re-exported here) and the ``critiques`` dataset in :mod:`seerbench.datasets`."""

from __future__ import annotations

from seerbench.critique import _scripted  # noqa: F401  (registers the model spec scripted:critic)
from seerbench.critique._answers import FLAW_KINDS, PlantedFlaw, answer_correct, plant_flaw, reference_answer
from seerbench.critique._dedup import dedup
from seerbench.critique._generate import (
    DEFAULT_TEMPERATURES,
    CritiqueConfig,
    CritiqueRun,
    generate_critiques,
    sort_by_helpfulness,
)
from seerbench.records import AnswerKind, Critique, CritiquedAnswer, read_critiques, write_critiques

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
