"""Exported judgments scored by seerbench.metrics give the numbers worked out by hand."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from seerbench.metrics import judge_accuracy
from seerbench.study import (
    StudyStore,
    create_app,
    export_rows,
    judgment_question,
    judgment_verdict,
    read_export,
    study_stats,
    write_export,
)

from .conftest import FakeClock, question

# (question, condition) -> (answer, probability as the rater types it) ; None = let the timer run out
PLAN = {
    ("q0", "P"): ("A", 90),  # right
    ("q1", "P"): ("A", 60),  # wrong (q1's answer is B)
    ("q2", "P"): None,  # timed out
    ("q3", "P"): ("B", None),  # right, no probability given
    ("q0", "PSA"): ("A", 80),  # right
    ("q1", "PSA"): ("B", 100),  # right
    ("q2", "PSA"): ("B", 70),  # wrong
    ("q3", "PSA"): ("B", 55),  # right
}


def _run_plan(store: StudyStore, clock: FakeClock) -> None:
    n = 0
    while True:
        rid = str(store.rater_for(f"prolific:r{n}", "prolific")["id"])
        n += 1
        a, _ = store.next_assignment(rid)
        if a is None:
            return
        while a is not None:
            store.start_timer(a.id, rid)
            step = PLAN[(a.question_id, a.condition)]
            if step is None:
                clock.advance(200)
                store.submit(a.id, rid, {"answer": "A"})
            else:
                clock.advance(10)
                ans, p = step
                store.submit(a.id, rid, {"answer": ans, "probability": None if p is None else p / 100})
            a, _ = store.next_assignment(rid)


@pytest.fixture
def scored(make_study) -> StudyStore:
    clock = FakeClock()
    qs = [question("q0", "A"), question("q1", "B"), question("q2", "A"), question("q3", "B")]
    store = make_study(questions=qs, ratings_per_item=1, tasks_per_rater=2, clock=clock)
    _run_plan(store, clock)
    return store


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_round_trip_and_accuracy_by_hand(scored: StudyStore, tmp_path: Path, fmt: str) -> None:
    path = write_export(export_rows(scored), tmp_path / f"out.{fmt}")
    rows = read_export(path)
    assert len(rows) == 8
    for r in rows:
        assert r["timer_started_at"] and r["submitted_at"] and r["assigned_at"] and r["started_at"]
        assert r["rater_external_id"].startswith("prolific:")
    s = study_stats(rows)
    # P: right, wrong, timed out (wrong), right = 2/4; PSA: 3/4
    assert s["conditions"]["P"]["accuracy"]["mean"] == pytest.approx(0.5)
    assert s["conditions"]["PSA"]["accuracy"]["mean"] == pytest.approx(0.75)
    assert s["conditions"]["P"]["timed_out"] == 1
    assert study_stats(rows, timeout_policy="exclude")["conditions"]["P"]["accuracy"]["mean"] == pytest.approx(2 / 3)
    assert study_stats(rows, timeout_policy="half")["conditions"]["P"]["accuracy"]["mean"] == pytest.approx(2.5 / 4)
    # one rating per item: majority vote = the rating
    assert s["conditions"]["PSA"]["vote"] == {"items": 4, "majority": 0.75, "unanimous": 0.75}


def test_verdicts_feed_judge_accuracy(scored: StudyStore) -> None:
    rows = [r for r in export_rows(scored) if r["condition"] == "P"]
    verdicts = [judgment_verdict(r) for r in rows]
    questions = [judgment_question(r) for r in rows]
    assert all(v.method == "human" for v in verdicts)
    acc, n, failed = judge_accuracy(verdicts, questions, "exclude")
    assert (acc, n, failed) == (pytest.approx(2 / 3), 3, 1)
    by_q = {r["question_id"]: v for r, v in zip(rows, verdicts, strict=True)}
    assert by_q["q1"].probabilities == pytest.approx({"A": 0.6, "B": 0.4})
    assert by_q["q3"].probabilities == {"A": 0.0, "B": 1.0}  # no probability given: the choice, fully
    assert not by_q["q2"].ok and by_q["q2"].error == "timed_out"


def test_catch_trials_are_excluded_and_reported_separately(scored: StudyStore) -> None:
    rows = export_rows(scored)
    fake_catch = {**rows[0], "is_catch": True, "answer": "B" if rows[0]["true_answer"] == "A" else "A", "timed_out": False, "judgment_id": "c1"}
    s = study_stats([*rows, fake_catch])
    assert s["conditions"]["P"]["accuracy"]["mean"] == pytest.approx(0.5)
    assert s["conditions"]["PSA"]["accuracy"]["mean"] == pytest.approx(0.75)
    assert s["catch"]["judgments"] == 1 and s["catch"]["accuracy"]["mean"] == 0.0


def test_asd_from_both_answer_cases_by_hand(make_study) -> None:
    # t1 (true A): the consultant argues A in one transcript and B in the other; 2 ratings each.
    tr = {"question_id": "t1", "protocol": "consultancy", "turns": [{"role": "agent", "speaker": "consultant", "content": "trust me"}]}
    results = [{"question": question("t1", "A"), "answer_cases": [{"short": "A", "transcript": tr}, {"short": "B", "transcript": tr}]}]
    store = make_study(
        items=[{"results": "r.jsonl"}], extra_files={"r.jsonl": results}, conditions=["transcript"], ratings_per_item=2, tasks_per_rater=1
    )
    answers = {"A": [("A", 0.8), ("A", 0.6)], "B": [("B", 0.6), ("A", 0.8)]}
    for i in range(4):
        rid = str(store.rater_for(f"prolific:r{i}", "prolific")["id"])
        a, _ = store.next_assignment(rid)
        assert a is not None
        store.start_timer(a.id, rid)
        case = store.item(a.item_id).answer_case
        ans, p = answers[str(case)].pop()
        store.submit(a.id, rid, {"answer": ans, "probability": p})
    s = study_stats(export_rows(store))["conditions"]["transcript"]
    # after A: mean q(A) = (0.8 + 0.6)/2 = 0.7; after B: q = mean({A .4, B .6}, {A .8, B .2}) = {A .6, B .4}
    assert s["asd"]["questions"] == 1
    assert s["asd"]["log"]["mean"] == pytest.approx(math.log(0.7) - math.log(0.4))
    assert s["asd"]["accuracy"]["mean"] == pytest.approx(1.0)  # AS_T acc 1 (0.7 > 0.3), AS_F acc 0 (0.4 < 0.6)


def test_expert_routing_verdicts() -> None:
    base = {"options": ["A", "B", "C"], "true_answer": "B", "task": "expert_routing", "question_id": "q", "timed_out": False}
    yes = judgment_verdict({**base, "expert_option": "B", "answer": "yes"})
    no = judgment_verdict({**base, "expert_option": "A", "answer": "no"})
    assert yes.probabilities == {"A": 0.0, "B": 1.0, "C": 0.0}
    assert no.probabilities == {"A": 0.0, "B": 0.5, "C": 0.5}  # a complementary label: "not A"


def test_factuality_task_and_reliance(make_study) -> None:
    def fq(qid: str, true: str, ai_correct: bool) -> dict:
        return {
            "id": qid,
            "text": f"Strawberries are a source of vitamin C ({qid}).",
            "answer_cases": [
                {"short": "accurate", "long": "Accurate", "value": 1.0 if true == "accurate" else 0.0},
                {"short": "inaccurate", "long": "Not accurate", "value": 1.0 if true == "inaccurate" else 0.0},
            ],
            "metadata": {
                "ai_correct": ai_correct,
                "assistance": {"evidence": ["USDA: 58.8 mg per 100 g"], "judgments": "Accurate", "confidence": "high (95%)"},
            },
        }

    qs = [fq("f0", "accurate", True), fq("f1", "inaccurate", False), fq("f2", "inaccurate", True), fq("f3", "accurate", False)]
    store = make_study(
        questions=qs, task="factuality", time_limit_s=None,
        conditions=[{"name": "evidence", "assistance": ["evidence"]}], ratings_per_item=1, tasks_per_rater=4,
    )
    c = TestClient(create_app(store))
    r = c.get("/start?PROLIFIC_PID=f")
    csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)  # type: ignore[union-attr]
    r = c.post("/tutorial", data={"csrf": csrf, "q0": "0"})
    plan = {"f0": {"rating": "accurate", "confidence": "4", "helpfulness": "3"}, "f1": {"rating": "unsupported"}, "f2": {"rating": "no_claim"}, "f3": {"action": "skip"}}
    for _ in range(4):
        html = r.text
        assert "this could be misleading" in html and "USDA: 58.8 mg per 100 g" in html
        assert "Model confidence" not in html  # only the condition's parts are shown
        qid = re.search(r"\((f\d)\)", html).group(1)  # type: ignore[union-attr]
        aid = str(r.url).rsplit("/", 1)[-1]
        r = c.post(f"/task/{aid}/submit", data={"csrf": csrf, **plan[qid]})
        assert r.status_code == 200
        r = c.get("/next")
    rows = {x["question_id"]: x for x in export_rows(store)}
    assert rows["f1"]["rating"] == "unsupported" and rows["f1"]["answer"] == "inaccurate" and rows["f1"]["correct"] == 1.0
    assert rows["f0"]["confidence"] == 4 and rows["f0"]["helpfulness"] == 3
    assert rows["f2"]["correct"] == 0.0 and rows["f3"]["correct"] is None
    s = study_stats(list(rows.values()))["conditions"]["evidence"]
    # f0 right, f1 right, f2 "doesn't require assessment" = wrong, f3 skipped (not counted): 2/3
    assert s["accuracy"]["mean"] == pytest.approx(2 / 3) and s["accuracy"]["n"] == 3
    # reliance: AI right on f0 (1), f2 (0) -> 0.5; AI wrong on f1 (1); f3 skipped
    assert s["reliance"]["ai_right"]["mean"] == pytest.approx(0.5)
    assert s["reliance"]["ai_wrong"]["mean"] == pytest.approx(1.0) and s["reliance"]["ai_wrong"]["n"] == 1


def test_expert_routing_flow(make_study) -> None:
    # K = 3; each slot names one option k at random; "is the answer k?" yes/no
    def q3(qid: str) -> dict:
        return {
            "id": qid,
            "text": f"Which city? ({qid})",
            "answer_cases": [
                {"short": "A", "long": "Paris", "value": 1.0},
                {"short": "B", "long": "Rome", "value": 0.0},
                {"short": "C", "long": "Oslo", "value": 0.0},
            ],
        }

    store = make_study(questions=[q3(f"e{i}") for i in range(4)], task="expert_routing", conditions=["Q"], ratings_per_item=1, tasks_per_rater=4, time_limit_s=None)
    c = TestClient(create_app(store))
    r = c.get("/start?PROLIFIC_PID=ex")
    csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)  # type: ignore[union-attr]
    r = c.post("/tutorial", data={"csrf": csrf, "q0": "0"})
    for _ in range(4):
        m = re.search(r"Is the correct answer <strong>([ABC])</strong>", r.text)
        assert m, r.text[-800:]
        aid = str(r.url).rsplit("/", 1)[-1]
        # an honest expert: yes exactly when k is the true option A
        r = c.post(f"/task/{aid}/submit", data={"csrf": csrf, "answer": "yes" if m.group(1) == "A" else "no"})
        assert r.status_code == 200
        r = c.get("/next")
    rows = export_rows(store)
    assert len(rows) == 4 and all(x["correct"] == 1.0 for x in rows)
    for x in rows:
        v = judgment_verdict(x)
        k = x["expert_option"]
        expected = {o: (1.0 if o == k else 0.0) for o in "ABC"} if k == "A" else {o: (0.0 if o == k else 0.5) for o in "ABC"}
        assert v.probabilities == expected
    assert study_stats(rows)["conditions"]["Q"]["accuracy"]["mean"] == 1.0  # the experts' yes/no accuracy
