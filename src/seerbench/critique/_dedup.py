"""Near-duplicate critiques (seed 002, section 3.2: "critiques were de-duplicated").

Two critiques are near duplicates when RapidFuzz's ``token_set_ratio`` of their normalised texts
(lower case, punctuation dropped, white space folded) is at least ``threshold`` (0-100). The score
compares the words both texts share with each text's own words, so a reworded critique that makes
the same point about the same words scores high, and one about another number, name or sentence
scores low. Two critiques that cite different numbers are never duplicates (a number is the
point of a critique that cites it: "states 26, should be 19" and "states 25, should be 27" are two
critiques however alike their wording). Critiques are taken in order (temperature order, so the
lowest-temperature wording stays); each joins the first group holding a critique it duplicates
(single linkage), else starts a group.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from rapidfuzz import fuzz, process

from seerbench.errors import ConfigError

__all__ = ["DEFAULT_THRESHOLD", "dedup", "normalise"]

DEFAULT_THRESHOLD = 90.0
_PUNCT = re.compile(r"[^\w\s]")
_NUM = re.compile(r"\d+(?:\.\d+)?")


def normalise(text: str) -> str:
    """Lower case, punctuation dropped, white space folded."""
    return " ".join(_PUNCT.sub(" ", text.lower()).split())


def dedup(texts: Sequence[str], threshold: float = DEFAULT_THRESHOLD) -> list[list[int]]:
    """Groups of near-duplicate texts, as index lists: each group's first index is the kept text
    (groups ordered by it), the rest were merged into it. Every index appears exactly once."""
    if not 0 < threshold <= 100:
        raise ConfigError(f"dedup threshold {threshold} is out of range; give a similarity in (0, 100]")
    norm = [normalise(t) for t in texts]
    if not norm:
        return []
    scores = process.cdist(norm, norm, scorer=fuzz.token_set_ratio, dtype=np.float32, workers=1)
    numbers = [sorted(_NUM.findall(t)) for t in texts]
    groups: list[list[int]] = []
    for i in range(len(norm)):
        home = next(
            (g for g in groups if any(scores[i, j] >= threshold and numbers[i] == numbers[j] for j in g)),
            None,
        )
        if home is None:
            groups.append([i])
        else:
            home.append(i)
    return groups
