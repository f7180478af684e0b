"""Critique assistance (seed 002): answers to critique, critique generation, de-duplication,
helpfulness ranking, and the ``critiques.jsonl`` format shared with the study app."""

from seerbench.critique._format import AnswerKind, Critique, CritiquedAnswer, read_critiques, write_critiques

__all__ = ["AnswerKind", "Critique", "CritiquedAnswer", "read_critiques", "write_critiques"]
