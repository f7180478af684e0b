"""Regression tests from the independent audit (issue 12, item 7) for behaviour that every test let
slip when broken: results files in dataset order although questions finish out of order, and the
non-finite filter of paired differences."""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.models import (
    ChatMessage,
    GenerateConfig,
    Model,
    PriceTable,
    Sample,
    ScriptedBackend,
    UsageTracker,
    register_scripted,
)
from seerbench.models._backend import Backend
from seerbench.results import paired
from seerbench.types import AnswerCase, Question

N = 6
JUDGE = "scripted:audit-order-judge"


def _judge(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    return "0.7" if "How likely" in messages[-1].content else "A"


register_scripted("audit-order-judge", _judge, replace=True)

QUESTIONS = [
    Question(
        id=f"q{i}",
        text=f"This is question number {i}. Which is right?",
        answer_cases=[
            AnswerCase(short="A", long=f"yes {i}", value=1.0),
            AnswerCase(short="B", long=f"no {i}", value=0.0),
        ],
    )
    for i in range(N)
]


class _LastFirst(Backend):
    """The scripted judge, but a call about question i first yields to the event loop 40 (N - i)
    times, so with every question in flight at once the last question finishes first and q0 last.
    Deterministic (no clock): asyncio runs ready tasks in turn. Records the order calls finish in."""

    name = "scripted"

    def __init__(self) -> None:
        self.inner = ScriptedBackend("audit-order-judge")
        self.finished: list[int] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def supports_logprobs(self) -> bool:
        return False

    async def complete(
        self, messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None
    ) -> Sample:
        m = re.search(r"question number (\d+)", "\n".join(x.content for x in messages))
        assert m is not None
        i = int(m.group(1))
        for _ in range(40 * (N - i)):
            await asyncio.sleep(0)
        out = await self.inner.complete(messages, config, seed)
        self.finished.append(i)
        return out


def test_results_are_in_dataset_order_when_questions_finish_out_of_order(tmp_path: Path) -> None:
    cfg = ExperimentConfig.parse(
        {
            "name": "order",
            "dataset": "arithmetic",
            "judge_models": [JUDGE],
            "agent_models": [JUDGE],
            "protocols": ["NaiveJudge"],
            "elicitation": {"order": ["verbalized"]},
            "n_boot": 100,
            "concurrency": N,
        }
    )
    backend = _LastFirst()
    exp = Experiment(cfg, questions=QUESTIONS, out=tmp_path / "out")
    exp.model_factory = lambda spec, role: Model(spec, backend, cache=False, usage=UsageTracker(PriceTable()))
    exp.run()
    # the scenario really happened: the questions' calls finished last-first
    assert backend.finished, "the gated judge was not used"
    firsts = list(dict.fromkeys(backend.finished))
    assert firsts == list(range(N - 1, -1, -1)), backend.finished
    (path,) = (tmp_path / "out").glob("NaiveJudge*/*/results.jsonl")
    ids = [json.loads(x)["question_id"] for x in path.read_text().splitlines()]
    assert ids == [f"q{i}" for i in range(N)]


def _line(qid: str, asd_log: float) -> dict[str, object]:
    return {"question_id": qid, "asd": {"log": asd_log, "accuracy": 0.0}, "excluded": False}


def test_paired_difference_drops_non_finite_questions() -> None:
    # a: q1 has ASD -inf (eps = 0 and a certain judge), q2 NaN; b is finite everywhere.
    a = [_line("q0", 0.5), _line("q1", -math.inf), _line("q2", math.nan), _line("q3", 0.25)]
    b = [_line("q0", 0.1), _line("q1", 0.2), _line("q2", 0.3), _line("q3", 0.05)]
    d = paired(a, b, "asd", n_boot=200)
    assert d is not None
    # only q0 and q3 are paired: differences 0.4 and 0.2, mean 0.3, sd (ddof 1) = sqrt(0.02) = 0.1414214
    assert d["n"] == 2
    assert d["mean"] == 0.5 * ((0.5 - 0.1) + (0.25 - 0.05))
    assert math.isclose(d["std"], math.sqrt(0.02), rel_tol=1e-9)
    assert math.isfinite(d["ci_low"]) and math.isfinite(d["ci_high"])
    # the filter applies to either side
    d2 = paired(b, a, "asd", n_boot=200)
    assert d2 is not None and d2["n"] == 2 and math.isclose(d2["mean"], -0.3, rel_tol=1e-12)
    # nothing finite in common: no paired difference at all
    assert paired([_line("q1", math.inf)], b, "asd") is None
