"""Calibration: a perfectly calibrated simulated rater has ECE near 0, an overconfident one has the
ECE worked out by hand; Brier scores by hand; model judges from a real (scripted) run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seerbench.complementarity import (
    ai_items,
    calibration,
    human_calibration,
    judge_calibration,
    simulate_ai_ratings,
)
from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.models import ChatMessage, GenerateConfig, register_scripted
from seerbench.runs import RunFolder
from seerbench.types import AnswerCase, Question


def test_calibrated_rater_has_ece_near_zero_and_the_expected_brier() -> None:
    a = ai_items(simulate_ai_ratings(40_000, seed=11))
    cal = calibration(a.confidence, a.correct, source="AI")
    assert cal.ece is not None and cal.ece < 0.01
    # Brier of a calibrated forecast c is E[c (1 - c)]; c ~ Uniform(0.5, 1): 1/6 (rounding c to
    # 1/50 changes it by less than 1e-4)
    assert cal.brier == pytest.approx(1 / 6, abs=0.004)


def test_overconfident_rater_is_caught() -> None:
    # right with probability 0.5 + 0.4 (c - 0.5): ECE = E[c - p] = 0.6 E[c - 0.5] = 0.6 * 0.25 = 0.15
    a = ai_items(simulate_ai_ratings(40_000, seed=12, accuracy_at=(0.5, 0.7)))
    cal = calibration(a.confidence, a.correct)
    assert cal.ece == pytest.approx(0.15, abs=0.012)
    assert all(b.accuracy < b.mean_confidence for b in cal.buckets if b.mean_confidence > 0.6)


def test_buckets_ece_and_brier_by_hand() -> None:
    c = [0.95, 0.95, 0.65, 0.65, 0.65, 1.0]
    y = [1, 0, 1, 1, 0, 1]
    cal = calibration(c, y, bins=10)
    assert [(b.low, b.n) for b in cal.buckets] == [(0.6, 3), (0.9, 3)]  # 1.0 falls in the last bucket
    # bucket 0.6: conf 0.65, acc 2/3; bucket 0.9: conf (0.95 + 0.95 + 1) / 3, acc 2/3
    ece = 0.5 * abs(2 / 3 - 0.65) + 0.5 * abs(2 / 3 - 2.9 / 3)
    assert cal.ece == pytest.approx(ece)
    assert cal.brier == pytest.approx((0.05**2 + 0.95**2 + 0.35**2 * 2 + 0.65**2 + 0) / 6)


def test_human_confidence_levels() -> None:
    levels = np.array([1, 1, 4, 4, 4, 4, np.nan])
    right = np.array([1, 0, 1, 1, 1, 0, 1.0])
    cal = human_calibration(levels, right)
    assert cal.n == 6  # the judgment without a confidence is left out
    # level 1 = 0.5 with accuracy 0.5 (gap 0), level 4 = 1.0 with accuracy 0.75 (gap 0.25)
    assert cal.ece == pytest.approx(4 / 6 * 0.25)
    assert [b.mean_confidence for b in cal.buckets] == [0.5, 1.0]


P_A = {"number 0": "0.8", "number 1": "0.8", "number 2": "0.8", "number 3": "0.3", "number 4": "0.6"}


def _judge(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    text = messages[-1].content
    if "How likely" not in text:
        return "A"
    return next(p for k, p in P_A.items() if k in text)


register_scripted("calib-judge", _judge, replace=True)


def test_model_judge_calibration_from_a_run(tmp_path: Path) -> None:
    qs = [
        Question(
            id=f"q{i}",
            text=f"This is question number {i}. Which?",
            answer_cases=[
                AnswerCase(short="A", long="a", value=1.0),
                AnswerCase(short="B", long="b", value=0.0),
            ],
        )
        for i in range(5)
    ]
    cfg = ExperimentConfig.parse(
        {
            "name": "calib",
            "dataset": "arithmetic",
            "judge_models": ["scripted:calib-judge"],
            "protocols": ["NaiveJudge"],
            "elicitation": {"order": ["verbalized"]},
            "n_boot": 100,
        }
    )
    Experiment(cfg, questions=qs, out=tmp_path / "run").run()
    (cal,) = judge_calibration(tmp_path / "run")
    # the run shows the options in a seeded order; the truth of each question is read from its line,
    # the judge's P(A) is the script's
    (cell,) = RunFolder(tmp_path / "run").cells()
    lines, _ = cell.read()
    conf, right = [], []
    for line in lines:
        truth = next(a["short"] for a in line["question"]["answer_cases"] if a["value"] == 1.0)
        p_a = float(P_A[f"number {line['question_id'][1:]}"])
        conf.append(max(p_a, 1 - p_a))
        right.append(1.0 if ("A" if p_a > 0.5 else "B") == truth else 0.0)
    assert cal.n == 5
    assert cal.brier == pytest.approx(float(np.mean((np.array(conf) - np.array(right)) ** 2)))
    by_bucket: dict[int, list[int]] = {}
    for k, c in enumerate(conf):
        by_bucket.setdefault(round(c * 10), []).append(k)
    ece = sum(
        len(ks) / 5 * abs(np.mean([right[k] for k in ks]) - np.mean([conf[k] for k in ks]))
        for ks in by_bucket.values()
    )
    assert cal.ece == pytest.approx(ece)


def test_judge_forecasts_by_hand_ties_failures_and_symmetric_lines() -> None:
    from seerbench.complementarity import judge_forecasts

    def case(probs: dict[str, float] | None, **cp: object) -> dict[str, Any]:
        return {"case_probs": {"probabilities": probs, **cp}}

    q3 = {"answer_cases": [{"short": s, "value": v} for s, v in (("A", 1.0), ("B", 0.0), ("C", 0.0))]}
    lines: list[dict[str, Any]] = [
        # a tie of two at the top, one of them true: 1/2; three tied with the truth among them: 1/3
        {
            "question": q3,
            "answer_cases": [case({"A": 0.4, "B": 0.4, "C": 0.2}), case({"A": 0.3, "B": 0.3, "C": 0.3})],
        },
        # a wrong top choice (0), one that did not parse and one with an error (both left out)
        {
            "question": q3,
            "answer_cases": [
                case({"A": 0.1, "B": 0.7, "C": 0.2}),
                case({"A": 0.9, "B": 0.1}, parse_status="failed"),
                case({"A": 0.9, "B": 0.1}, error="timeout"),
            ],
        },
        # symmetric: the first case only; excluded: nothing; no answer cases in the question: nothing
        {"question": q3, "symmetric": True, "answer_cases": [case({"A": 0.8, "B": 0.2}), case({"B": 1.0})]},
        {"question": q3, "excluded": True, "answer_cases": [case({"A": 0.8, "B": 0.2})]},
        {"question": {}, "answer_cases": [case({"A": 0.8, "B": 0.2})]},
        # two options share the truth's value (two true answers): a top on either is right
        {
            "question": {"answer_cases": [{"short": "A", "value": 1.0}, {"short": "B", "value": 1.0}]},
            "answer_cases": [case({"A": 0.5, "B": 0.5}), case({"A": 0.2, "B": 1.2})],
        },
    ]
    conf, right = judge_forecasts(lines)
    assert conf == [0.4, 0.3, 0.7, 0.8, 0.5, 1.0]
    assert right == [0.5, 1 / 3, 0.0, 1.0, 1.0, 1.0]
