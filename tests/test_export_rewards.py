"""Reward data export (issue 25): per-argument rewards and per-question preference pairs in the
JSONL shapes TRL's reward and DPO trainers read, read back from a real run's output."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from seerbench.errors import ConfigError
from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.export import export_rewards, preference_record
from tests.test_cli_global import one_line_error, run_main


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rw") / "run"
    cfg = ExperimentConfig.parse(
        {
            "name": "rw",
            "dataset": {"name": "arithmetic", "n": 6, "seed": 0},
            "out": str(out),
            "judge_models": ["scripted:coin"],
            "agent_models": ["scripted:coin"],
            "protocols": ["Consultancy", "SimultaneousDebate"],
            "agent_generation": {"temperature": 0.8, "max_tokens": 40, "max_words": 20},
            "n_boot": 100,
        }
    )
    Experiment(cfg).run()
    return out


def test_rewards_are_the_agent_scores_of_the_lines(run: Path) -> None:
    ex = export_rewards(run)
    recs = read(ex.rewards)
    assert ex.n_rewards == len(recs) == 2 * 6 * 2  # two cells, six questions, two arguments each
    lines = {
        (c.parent.parent.name + "/" + c.parent.name, ln["question_id"]): ln
        for c in run.glob("*/*/results.jsonl")
        for ln in read(c)
    }
    for r in recs:
        ln = lines[(r["cell"], r["question_id"])]
        (case,) = [c for c in ln["answer_cases"] if c["short"] == r["answer_case"]]
        p = case["case_probs"]["probabilities"][r["answer_case"]]
        assert r["judge_probability"] == p
        assert r["reward"] == pytest.approx(math.log(p))  # log score of its side (p well inside eps)
        assert r["correct"] == (case["value"] == 1.0)
        assert r["prompt"].startswith(ln["question"]["text"])
        assert r["completion"].startswith(f"Answer: {case['long']}")
        assert isinstance(r["completion"], str) and len(r["completion"]) > len(f"Answer: {case['long']}")


def test_preferences_are_trl_pairs(run: Path) -> None:
    ex = export_rewards(run, run / "out")
    rewards = read(ex.rewards)
    prefs = read(ex.preferences)
    assert ex.n_preferences == len(prefs) and ex.n_preferences + ex.n_ties == 2 * 6
    by_q: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rewards:
        by_q.setdefault((r["cell"], r["question_id"]), []).append(r)
    for p in prefs:
        assert {"prompt", "chosen", "rejected"} <= set(p)
        a, b = by_q[(p["cell"], p["question_id"])]
        hi, lo = (a, b) if a["reward"] > b["reward"] else (b, a)
        assert (p["chosen"], p["rejected"]) == (hi["completion"], lo["completion"])
        assert p["prompt"] == a["prompt"] == b["prompt"]
        assert p["chosen_reward"] > p["rejected_reward"]


def test_a_tie_is_no_preference() -> None:
    r = {"prompt": "q", "completion": "x", "reward": -0.5, "correct": True, "question_id": "q", "cell": "c"}
    assert preference_record([r, {**r, "completion": "y"}]) is None
    assert preference_record([r]) is None
    pair = preference_record(
        [r, {**r, "completion": "y", "reward": -0.1, "score": "log"} | {"correct": False}]
    )
    assert pair is not None and pair["chosen"] == "y" and pair["rejected"] == "x"


def test_datasets_reads_them(run: Path) -> None:
    datasets = pytest.importorskip("datasets")
    ex = export_rewards(run, run / "hf")
    ds = datasets.load_dataset("json", data_files=str(ex.preferences), split="train")
    assert ds.column_names[:3] == ["prompt", "chosen", "rejected"] and len(ds) == ex.n_preferences


def test_cli_and_its_refusals(
    run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["export", str(run), "--format", "rewards", "--out", str(run / "cli"), "--json"]
    code, out, err = run_main(argv, capsys, monkeypatch)
    assert code == 0, err
    assert json.loads(out)["n_rewards"] == 24 and (run / "cli" / "preferences.jsonl").is_file()
    code, _, err = run_main(["export", str(run), "--format", "rewards", "--out", "-"], capsys, monkeypatch)
    assert code == 2 and "give --out a folder" in one_line_error(err)
    with pytest.raises(ConfigError, match="score must be one of"):
        export_rewards(run, score="elo")
