"""Model-side measures: intended flaw found, refinement win rate (worked by hand on the scripted
critic's real output), and the coverage of their intervals under clustering and near 0 and 1."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from seerbench.critique import read_critiques
from seerbench.critique._assess import rate_interval, win_value
from tests.test_cli_global import run_main


def test_win_value() -> None:
    assert [
        win_value(True, False),
        win_value(False, True),
        win_value(True, True),
        win_value(False, False),
    ] == [1, 0, 0.5, 0.5]


def test_found_rate_and_win_rate_by_hand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        json.dumps(
            {
                "model": "scripted:critic",
                "dataset": {"name": "arithmetic", "n": 8, "seed": 1},
                "kinds": ["reference", "misleading"],
                "out": "r",
                "elicitation": {"order": ["verbalized"]},
            }
        )
    )
    code, out, err = run_main(["critique", str(cfg), "--json"], capsys, monkeypatch)
    assert code == 0, err
    measures = json.loads(out)["measures"]
    answers = read_critiques(tmp_path / "r/critiques.jsonl")
    mis = [a for a in answers if a.answer_kind == "misleading"]
    number = [a for a in mis if a.metadata["flaw_kind"] == "number"]
    assert 0 < len(number) < len(mis) == 8  # both flaw kinds occur
    # the scripted critic names the false step of every changed-number answer and the validator
    # says it covers the flaw; an omission leaves no false step, so nothing covers it
    for a in mis:
        covered = [c for c in a.critiques if (c.covers_intended or 0) > 0.5]
        assert bool(covered) == (a.metadata["flaw_kind"] == "number")
    assert measures["intended_flaw_found"]["estimate"] == pytest.approx(len(number) / 8)
    # refinement: given the critique that names the false step the scripted model fixes a changed
    # number, directly it repeats the answer: win 1 each; every other answer is repeated both
    # ways: a tie, 1/2 (references and omissions are right both times, so accuracy counts them)
    for a in answers:
        assert a.refinement is not None
        expect = 1.0 if a in number else 0.5
        assert a.refinement.win == expect, a.answer_id
    n = len(answers)
    assert measures["refinement_win_rate"]["estimate"] == pytest.approx(
        (len(number) + 0.5 * (n - len(number))) / n
    )
    assert measures["refined_direct_accuracy"]["estimate"] == pytest.approx((n - len(number)) / n)
    assert measures["refined_conditional_accuracy"]["estimate"] == pytest.approx(1.0)
    lo, hi = measures["refinement_win_rate"]["ci_low"], measures["refinement_win_rate"]["ci_high"]
    assert lo < measures["refinement_win_rate"]["estimate"] < hi


def test_no_refinement_or_validation_when_switched_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        json.dumps(
            {
                "model": "scripted:critic",
                "dataset": {"name": "arithmetic", "n": 2},
                "out": "r",
                "refine": False,
                "validate_intended": False,
                "elicitation": {"order": ["verbalized"]},
            }
        )
    )
    code, out, _ = run_main(["critique", str(cfg), "--json"], capsys, monkeypatch)
    assert code == 0
    answers = read_critiques(tmp_path / "r/critiques.jsonl")
    assert all(a.refinement is None and all(c.covers_intended is None for c in a.critiques) for a in answers)
    m = json.loads(out)["measures"]
    assert m["refinement_win_rate"]["n"] == 0 and m["intended_flaw_found"]["n"] == 0


@pytest.mark.slow
@pytest.mark.parametrize(("mean", "kind"), [(0.5, "win"), (0.92, "win"), (0.05, "binary"), (0.6, "binary")])
def test_rate_interval_covers_under_clustering(mean: float, kind: str) -> None:
    """Questions differ (a question effect shifts every answer of it); 3 answers per question.
    Win values take 0, 1/2, 1; found indicators 0/1. The 95% interval covers the true mean in
    about 95% of simulations (at least 90% of 300)."""
    rng = np.random.default_rng(7)
    n_q, per_q, sims, hits = 40, 3, 300, 0
    for s in range(sims):
        # question-level rates around the mean (Beta with concentration 6): clustered answers
        a = mean * 6
        p_q = rng.beta(a, 6 - a, size=n_q)
        vals: list[float] = []
        for p in p_q:
            if kind == "binary":
                vals += list(rng.random(per_q) < p)
            else:  # win 1 with prob p * 0.8, tie with 0.2, loss otherwise: E = 0.8p + 0.1
                u = rng.random(per_q)
                vals += [1.0 if x < 0.8 * p else 0.5 if x < 0.8 * p + 0.2 else 0.0 for x in u]
        truth = mean if kind == "binary" else 0.8 * mean + 0.1
        iv = rate_interval([float(v) for v in vals], [f"q{i // per_q}" for i in range(len(vals))], seed=s)
        hits += iv["ci_low"] <= truth <= iv["ci_high"]
    assert hits / sims >= 0.90, hits / sims
