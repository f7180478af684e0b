"""De-duplication: hand-made paraphrases merge, distinct critiques stay."""

from __future__ import annotations

import pytest

from seerbench.critique import dedup
from seerbench.errors import ConfigError


def test_paraphrases_merge_and_distinct_critiques_stay() -> None:
    texts = [
        "The answer states 26 where the correct value is 19.",  # 0
        "The correct value is 19, but the answer states 26.",  # 1 paraphrase of 0
        "The answer leaves out the step 78 - 21 = 57.",  # 2
        "The answer says 26 but the correct value is 19",  # 3 paraphrase of 1 (single linkage)
        "The answer states 25 where the correct value is 27.",  # 4 same words, other numbers
        "The answer is too short.",  # 5
        "The answer is too long.",  # 6 one word apart, another point
        "the answer is TOO short!",  # 7 case and punctuation only
        "Priya Nakamura lives in Marrow Hill, not Brisk Harbour.",  # 8
        "Marrow Hill, not Brisk Harbour, is where Priya Nakamura lives.",  # 9 reordered
    ]
    assert dedup(texts) == [[0, 1, 3], [2], [4], [5, 7], [6], [8, 9]]


def test_threshold_is_configurable_and_checked() -> None:
    texts = ["The answer is too short.", "The answer is too long."]
    assert dedup(texts, threshold=80) == [[0, 1]]
    assert dedup(texts, threshold=95) == [[0], [1]]
    assert dedup([]) == []
    with pytest.raises(ConfigError, match="out of range"):
        dedup(texts, threshold=0)
    with pytest.raises(ConfigError, match="out of range"):
        dedup(texts, threshold=101)
