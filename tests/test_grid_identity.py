"""The Experiment split (issue 24) keeps every cell's identity byte-identical (issue 22 added each
model's provenance, "models"), so folders written
before it resume: identities written out by hand from the rules in docs/experiments.md, and a
folder whose cell.json holds them is taken as it is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.experiment._config import _hash
from seerbench.prompts import template_hashes

RAW: dict[str, Any] = {
    "dataset": {"name": "arithmetic", "n": 4, "seed": 0},
    "judge_models": ["scripted:coin", {"class": "TrustJudge"}],
    "agent_models": ["scripted:coin", "replay"],
    "agent_tools": [[], ["calculator"]],
    "best_of_n": [1, 2],
    "num_turns": [1, 2],
    "seed": 3,
    "protocols": [
        "NaiveJudge",
        "BlindTrust",
        "Consultancy",
        {"name": "EvidenceDebate", "condition": ["S", "PSA"]},
        {"name": "SequentialDebate", "num_turns": 3, "both_orders": True},
        {"name": "CritiqueJudge", "top_k": 2},
    ],
}
ELICIT = {"order": ["logprobs", "verbalized", "vote"], "vote_samples": 5, "vote_temperature": 1.0}
GENERATION = {"temperature": 0.0, "max_tokens": 200, "max_words": 120}


def _common() -> dict[str, Any]:
    return {
        "seed": 3,
        "binary_seed": 0,
        "eps": 1e-6,
        "parse_failures": "exclude",
        "prompts": template_hashes(None),
    }


#: A cell's models and their provenance (issue 22): the scripted backend and its responder.
COIN = {"scripted:coin": {"backend": "scripted", "model": "coin"}}


def _expected() -> dict[str, dict[str, Any]]:
    trust = {"class": "TrustJudge"}
    return {
        "NaiveJudge/J_scripted-coin": {
            "protocol": "NaiveJudge",
            "keywords": {"both_orders": False},
            "judge": "scripted:coin",
            **_common(),
            "elicitation": ELICIT,
            "models": COIN,
        },
        "BlindTrust/J_trust": {
            "protocol": "BlindTrust",
            "keywords": {"both_orders": False},
            "judge": "trust",
            **_common(),
            "models": {},
        },
        "Consultancy_t2/A_scripted-coin_T_calculator_bo2_J_TrustJudge": {
            "protocol": "Consultancy",
            "keywords": {"both_orders": False, "num_turns": 2},
            "judge": trust,
            **_common(),
            "elicitation": ELICIT,
            "agent": "scripted:coin",
            "tools": ["calculator"],
            "best_of_n": 2,
            "agent_generation": GENERATION,
            "models": COIN,
        },
        "EvidenceDebate_PSA/A_replay_J_scripted-coin": {
            "protocol": "EvidenceDebate",
            "keywords": {"both_orders": False, "condition": "PSA"},
            "judge": "scripted:coin",
            **_common(),
            "elicitation": ELICIT,
            "agent": "replay",
            "tools": [],
            "best_of_n": 1,
            "models": COIN,
        },
        "SequentialDebate_t3_swap/A_replay_J_scripted-coin": {
            "protocol": "SequentialDebate",
            "keywords": {"both_orders": True, "num_turns": 3},
            "judge": "scripted:coin",
            **_common(),
            "elicitation": ELICIT,
            "agent": "replay",
            "tools": [],
            "best_of_n": 1,
            "models": COIN,
        },
        "CritiqueJudge_k2/J_TrustJudge": {
            "protocol": "CritiqueJudge",
            "keywords": {"both_orders": False, "top_k": 2},
            "judge": trust,
            **_common(),
            "elicitation": ELICIT,
            "models": {},
        },
    }


def test_cell_identities_are_those_written_before_the_split() -> None:
    exp = Experiment(ExperimentConfig.parse(RAW))
    specs = {s.key: s for s in exp.grid()}
    # 2 + 1 + (2 turns x 2 agents x 2 judges x 2 tool sets x 2 bo) + (2 conditions x 16) + 16 + 2
    assert len(specs) == 2 + 1 + 32 + 32 + 16 + 2
    for key, ident in _expected().items():
        got = exp.cell_identity(specs[key])
        # the same keys in the same order, so the same json and the same fingerprint
        assert json.dumps(got) == json.dumps(ident), key
        assert _hash(got) == _hash(ident)


def test_a_folder_written_before_the_split_resumes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for key, ident in _expected().items():
        (out / key).mkdir(parents=True)
        (out / key / "cell.json").write_text(
            json.dumps({"cell": key, "fingerprint": _hash(ident), "identity": ident})
        )
    cfg = ExperimentConfig.parse(RAW)
    meta = {"config": cfg.model_dump(mode="json"), "cells": {k: _hash(v) for k, v in _expected().items()}}
    (out / "experiment.json").write_text(json.dumps(meta))
    exp = Experiment(cfg, out=out)
    assert exp.choose_out(exp.grid()) == out  # no cell differs
    changed = Experiment(ExperimentConfig.parse({**RAW, "seed": 4}), out=out)
    specs = changed.grid()
    problems = changed._conflicts(out, specs)
    assert len(problems) == len(_expected()) and all("differs in: seed" in p for p in problems)
