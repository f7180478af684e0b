"""Results lines: rescore is pure."""

from __future__ import annotations

import copy
import math
from typing import Any

from seerbench.results import rescore, run_stats


def _line() -> dict[str, Any]:
    def case(short: str, p_a: float) -> dict[str, Any]:
        return {
            "short": short,
            "long": short,
            "value": 1.0 if short == "A" else 0.0,
            "case_probs": {
                "probabilities": {"A": p_a, "B": 1 - p_a},
                "method": "logprobs",
                "parse_status": "ok",
                "error": None,
                "raw": "",
                "n_samples": 1,
                "metadata": {},
                "transcript": [],
            },
        }

    return {
        "question_id": "q1",
        "question": {
            "id": "q1",
            "answer_cases": [{"short": "A", "value": 1.0}, {"short": "B", "value": 0.0}],
        },
        "symmetric": False,
        "chosen_case": None,
        "notes": [],
        "parse_failures": 0,
        "answer_cases": [case("A", 0.8), case("B", 0.4)],
        "asd": "stale",
    }


def test_rescore_does_not_change_its_input() -> None:
    line = _line()
    before = copy.deepcopy(line)
    out = rescore(line, eps=1e-6, policy="exclude")
    assert line == before
    # judge accuracy worked out by hand: P(true=A) is 0.8 and 0.4 -> accuracy 1 and 0 -> mean 0.5
    assert out["judge_accuracy"] == 0.5
    assert out["excluded"] is False
    # judge log score of the first case is ln 0.8
    assert math.isclose(
        out["answer_cases"][0]["case_probs"]["judge_score"]["log"], math.log(0.8), rel_tol=1e-9
    )


def test_run_stats_does_not_change_its_input() -> None:
    lines = [_line()]
    before = copy.deepcopy(lines)
    run_stats(lines, {}, eps=1e-6, policy="exclude", n_boot=10)
    assert lines == before
