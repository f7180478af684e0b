"""A study over seerbench's own run output (issue 13.5): results.jsonl files written by a real
`Experiment` run with scripted models, not hand-written fixtures."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from seerbench.errors import DataError
from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.models import ChatMessage, GenerateConfig, register_scripted
from seerbench.study import create_app, create_study, export_rows, load_manifest, study_stats
from seerbench.types import AnswerCase, Question

from .conftest import base_manifest

JUDGE, AGENT = "scripted:study-run-judge", "scripted:study-run-agent"


def _judge(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    return "0.7" if "How likely" in messages[-1].content else "A"


def _agent(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    return "My side is right, read the story."


register_scripted("study-run-judge", _judge, replace=True)
register_scripted("study-run-agent", _agent, replace=True)

QUESTIONS = [
    Question(
        id=f"r{i}",
        text=f"Run question {i}: is it so?",
        answer_cases=[
            AnswerCase(short="A", long=f"yes {i}", value=1.0),
            AnswerCase(short="B", long=f"no {i}", value=0.0),
        ],
    )
    for i in range(3)
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "out"
    cfg = ExperimentConfig.parse(
        {
            "name": "for-study",
            "dataset": "arithmetic",
            "judge_models": [JUDGE],
            "agent_models": [AGENT],
            "protocols": ["Consultancy", "SimultaneousDebate", "NaiveJudge"],
            "elicitation": {"order": ["verbalized"]},
            "n_boot": 100,
        }
    )
    Experiment(cfg, questions=QUESTIONS, out=out).run()
    return out


def _results(run_dir: Path, protocol: str) -> str:
    (path,) = run_dir.glob(f"{protocol}*/*/results.jsonl")
    return str(path)


def test_consultancy_results_become_one_item_per_answer_case(run_dir: Path, tmp_path: Path) -> None:
    m = load_manifest(
        base_manifest(
            items=[{"results": _results(run_dir, "Consultancy")}],
            conditions=["transcript"],
            ratings_per_item=1,
            tasks_per_rater=3,
        )
    )
    store = create_study(m, tmp_path / "s.sqlite")
    items = sorted(
        (it.key, it.answer_case, it.question.case(it.correct).long) for it in store._items.values()
    )
    # the old reader looked for answer_cases[].transcript and found no item at all
    assert items == [(f"r{i}#{s}", s, f"yes {i}") for i in range(3) for s in "AB"]
    # raters see the consultant's turn (one answer case of a question each: a rater never sees
    # a question twice), and their verdicts give ASD per question
    for n in range(2):
        c = TestClient(create_app(store))
        r = c.get(f"/start?PROLIFIC_PID=run{n}")
        csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)  # type: ignore[union-attr]
        r = c.post("/tutorial", data={"csrf": csrf, "q0": "0"})
        for _ in range(3):
            aid = str(r.url).rsplit("/", 1)[-1]
            html = c.post(f"/task/{aid}/start", data={"csrf": csrf}).text
            assert "My side is right, read the story." in html and "consultant" in html
            case = re.search(r"\(arguing for ([AB])\)", html).group(1)  # type: ignore[union-attr]
            # the rater believes whichever side the consultant argues, at 80
            c.post(f"/task/{aid}/submit", data={"csrf": csrf, "answer": case, "probability": "80"})
            r = c.get("/next")
    assert len(export_rows(store)) == 6
    s = study_stats(export_rows(store))["conditions"]["transcript"]
    # believing the consultant: AS_T = log 0.8, AS_F = log 0.8, ASD = 0 on every question
    assert s["asd"]["questions"] == 3 and s["asd"]["log"]["mean"] == pytest.approx(0.0)
    assert s["accuracy"]["mean"] == pytest.approx(0.5)
    store.close()


def test_debate_results_become_one_item_per_question(run_dir: Path, tmp_path: Path) -> None:
    # a symmetric run has one transcript for both answer cases: judged once
    m = load_manifest(
        base_manifest(
            items=[{"results": _results(run_dir, "SimultaneousDebate")}],
            conditions=["transcript"],
            tasks_per_rater=3,
        )
    )
    store = create_study(m, tmp_path / "s.sqlite")
    items = sorted(
        (it.key, it.answer_case, len(it.transcript.turns)) for it in store._items.values() if it.transcript
    )
    assert items == [(f"r{i}#both", None, 2) for i in range(3)]
    store.close()


def test_results_without_transcripts_are_refused(run_dir: Path, tmp_path: Path) -> None:
    path = _results(run_dir, "NaiveJudge")
    m = load_manifest(base_manifest(items=[{"results": path}], conditions=["transcript"]))
    with pytest.raises(DataError, match=re.escape(f"{path}: no line holds a transcript with turns to show")):
        create_study(m, tmp_path / "s.sqlite")
