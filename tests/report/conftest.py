"""Runs the report tests read: the quickstart config (examples/quickstart.yaml) with scripted
models instead of the embedded one, so a run takes a second.

- ``quickstart_run``: the quickstart config as written (arithmetic questions), models swapped for
  ``scripted:coin`` and 4 questions.
- ``evidence_run``: the same config plus EvidenceDebate, on hand-written questions with passages;
  the scripted agent argues with a ``<script>``/``<img onerror>`` payload and quotes one sentence
  of the passage verbatim and one made-up sentence; the scripted judge answers P(A) = 0.8 after
  A was argued, 0.3 after B, 0.6 after both (debate), and nothing parseable on question e2.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.models import ChatMessage, GenerateConfig, register_scripted
from seerbench.types import AnswerCase, Question

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "examples" / "quickstart.yaml"
XSS = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
VERIFIED = "The keeper counted three ships that winter."
MADE_UP = "The keeper counted ninety ships."
FAIL_TEXT = "question e2"
JUDGE, AGENT = "scripted:report-judge", "scripted:report-agent"


def _judge(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    text = messages[-1].content
    if FAIL_TEXT in "\n".join(m.content for m in messages):
        return "I cannot say."
    a, b = "(arguing for A)" in text, "(arguing for B)" in text
    p = "0.6" if a == b else "0.8" if a else "0.3"
    return p if "How likely" in text else "A"


def _agent(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    text = messages[-1].content
    if "QUOTE:" in text:
        return f"ARGUMENT: My side is right {XSS}\nQUOTE: {VERIFIED}\nQUOTE: {MADE_UP}"
    return f"My side is right {XSS}"


register_scripted("report-judge", _judge, replace=True)
register_scripted("report-agent", _agent, replace=True)


def quickstart_config(**over: Any) -> ExperimentConfig:
    raw = yaml.safe_load(QUICKSTART.read_text())
    raw.update({"judge_models": ["scripted:coin"], "agent_models": ["scripted:coin"], "n_boot": 200, **over})
    return ExperimentConfig.parse(raw)


def _question(i: int) -> Question:
    passage = f"{VERIFIED} It was a cold winter on island {i}. The supply boat came late."
    cases = [
        AnswerCase(short="A", long=f"three ({i})", value=1.0),
        AnswerCase(short="B", long=f"ninety ({i})", value=0.0),
    ]
    return Question(
        id=f"e{i}",
        text=f"This is question e{i}: how many ships did the keeper count?",
        answer_cases=cases,
        source_text=passage,
    )


@pytest.fixture(scope="session")
def quickstart_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "quickstart"
    Experiment(quickstart_config(limit=4), out=out).run()
    return out


@pytest.fixture(scope="session")
def evidence_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "evidence"
    raw = yaml.safe_load(QUICKSTART.read_text())
    cfg = quickstart_config(
        judge_models=[JUDGE],
        agent_models=[AGENT],
        protocols=[*raw["protocols"], "EvidenceDebate"],
        elicitation={"order": ["logprobs", "verbalized"]},
        both_orders=False,
    )
    Experiment(cfg, questions=[_question(i) for i in range(5)], out=out).run()
    return out
