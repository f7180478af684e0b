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
    assert study_stats(rows, timeout_policy="exclude")["conditions"]["P"]["accuracy"][
        "mean"
    ] == pytest.approx(2 / 3)
    assert study_stats(rows, timeout_policy="half")["conditions"]["P"]["accuracy"]["mean"] == pytest.approx(
        2.5 / 4
    )
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
    fake_catch = {
        **rows[0],
        "is_catch": True,
        "answer": "B" if rows[0]["true_answer"] == "A" else "A",
        "timed_out": False,
        "judgment_id": "c1",
    }
    s = study_stats([*rows, fake_catch])
    assert s["conditions"]["P"]["accuracy"]["mean"] == pytest.approx(0.5)
    assert s["conditions"]["PSA"]["accuracy"]["mean"] == pytest.approx(0.75)
    assert s["catch"]["judgments"] == 1 and s["catch"]["accuracy"]["mean"] == 0.0


def test_asd_from_both_answer_cases_by_hand(make_study) -> None:
    # t1 (true A): the consultant argues A in one transcript and B in the other; 2 ratings each.
    tr = {
        "question_id": "t1",
        "protocol": "consultancy",
        "turns": [{"role": "agent", "speaker": "consultant", "content": "trust me"}],
    }
    results = [
        {
            "question": question("t1", "A"),
            "answer_cases": [{"short": "A", "transcript": tr}, {"short": "B", "transcript": tr}],
        }
    ]
    store = make_study(
        items=[{"results": "r.jsonl"}],
        extra_files={"r.jsonl": results},
        conditions=["transcript"],
        ratings_per_item=2,
        tasks_per_rater=1,
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
    assert s["asd"]["accuracy"]["mean"] == pytest.approx(
        1.0
    )  # AS_T acc 1 (0.7 > 0.3), AS_F acc 0 (0.4 < 0.6)


def test_expert_routing_verdicts() -> None:
    base = {
        "options": ["A", "B", "C"],
        "true_answer": "B",
        "task": "expert_routing",
        "question_id": "q",
        "timed_out": False,
    }
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
                {
                    "short": "inaccurate",
                    "long": "Not accurate",
                    "value": 1.0 if true == "inaccurate" else 0.0,
                },
            ],
            "metadata": {
                "ai_correct": ai_correct,
                "assistance": {
                    "evidence": ["USDA: 58.8 mg per 100 g"],
                    "judgments": "Accurate",
                    "confidence": "high (95%)",
                },
            },
        }

    qs = [
        fq("f0", "accurate", True),
        fq("f1", "inaccurate", False),
        fq("f2", "inaccurate", True),
        fq("f3", "accurate", False),
        fq("f4", "inaccurate", True),
    ]
    store = make_study(
        questions=qs,
        task="factuality",
        time_limit_s=None,
        conditions=[{"name": "evidence", "assistance": ["evidence"]}],
        ratings_per_item=1,
        tasks_per_rater=5,
    )
    c = TestClient(create_app(store))
    r = c.get("/start?PROLIFIC_PID=f")
    csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)  # type: ignore[union-attr]
    r = c.post("/tutorial", data={"csrf": csrf, "q0": "0"})
    plan = {
        "f0": {"rating": "accurate", "confidence": "4", "helpfulness": "3"},
        "f1": {"rating": "unsupported"},
        "f2": {"rating": "no_claim"},
        "f3": {"action": "skip"},
        "f4": {"rating": "cant_assess"},
    }
    for _ in range(5):
        html = r.text
        assert "this could be misleading" in html and "USDA: 58.8 mg per 100 g" in html
        assert "Model confidence" not in html  # only the condition's parts are shown
        # issue 28.7: every one of the six labels is defined on the page
        assert "reliable sources disagree about a claim" in html and "makes no factual claim" in html
        qid = re.search(r"\((f\d)\)", html).group(1)  # type: ignore[union-attr]
        aid = str(r.url).rsplit("/", 1)[-1]
        r = c.post(f"/task/{aid}/submit", data={"csrf": csrf, **plan[qid]})
        assert r.status_code == 200
        r = c.get("/next")
    rows = {x["question_id"]: x for x in export_rows(store)}
    assert (
        rows["f1"]["rating"] == "unsupported"
        and rows["f1"]["answer"] == "inaccurate"
        and rows["f1"]["correct"] == 1.0
    )
    assert rows["f0"]["confidence"] == 4 and rows["f0"]["helpfulness"] == 3
    # seed 000, section 2.2: "doesn't require assessment" is binarised to inaccurate (f2's truth:
    # right); "Can't confidently assess" is incorrect (issue 28.3: it was left empty here while
    # `seerbench complementarity` scored it 0); a skip is not counted
    assert rows["f2"]["correct"] == 1.0 and rows["f3"]["correct"] is None
    assert rows["f4"]["correct"] == 0.0
    s = study_stats(list(rows.values()))["conditions"]["evidence"]
    # f0 right, f1 right, f2 right, f3 skipped (not counted), f4 "can't assess" = wrong: 3/4
    assert s["accuracy"]["mean"] == pytest.approx(3 / 4) and s["accuracy"]["n"] == 4
    # reliance: AI right on f0 (1), f2 (1), f4 (0) -> 2/3; AI wrong on f1 (1); f3 skipped
    assert s["reliance"]["ai_right"]["mean"] == pytest.approx(2 / 3)
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

    store = make_study(
        questions=[q3(f"e{i}") for i in range(4)],
        task="expert_routing",
        conditions=["Q"],
        ratings_per_item=1,
        tasks_per_rater=4,
        time_limit_s=None,
    )
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
        expected = (
            {o: (1.0 if o == k else 0.0) for o in "ABC"}
            if k == "A"
            else {o: (0.0 if o == k else 0.5) for o in "ABC"}
        )
        assert v.probabilities == expected
    assert study_stats(rows)["conditions"]["Q"]["accuracy"]["mean"] == 1.0  # the experts' yes/no accuracy


def _judge_all(
    store: StudyStore, clock: FakeClock, plan: dict[tuple[str, str], tuple[str, float | None] | None]
) -> None:
    """Each rater named in ``plan`` ((rater, question) -> (answer, probability) or None for a
    timeout) takes tasks until none is left and answers as planned."""
    for name in sorted({r for r, _ in plan}):
        rid = str(store.rater_for(f"prolific:{name}", "prolific")["id"])
        a, _ = store.next_assignment(rid)
        while a is not None:
            store.start_timer(a.id, rid)
            step = plan[(name, a.question_id)]
            clock.advance(200 if step is None else 10)  # 200 s: past 90 + 30 + 3, a timeout
            ans, p = step or ("A", None)
            store.submit(a.id, rid, {"answer": ans, "probability": p})
            a, _ = store.next_assignment(rid)


def test_a_vote_at_probability_50_counts_for_the_chosen_option(make_study, tmp_path: Path) -> None:
    # issue 14.1: two questions whose answer is B; two raters choose B on both, at probability 50.
    # All four judgments are right, so accuracy, majority and unanimous are all 1 (the old code
    # read the 50/50 verdict as a vote for A: majority 0, unanimous 0, accuracy 0.5).
    clock = FakeClock()
    store = make_study(
        questions=[question("q0", "B"), question("q1", "B")],
        conditions=["P"],
        ratings_per_item=2,
        tasks_per_rater=2,
        clock=clock,
    )
    _judge_all(store, clock, {(r, q): ("B", 0.5) for r in ("r0", "r1") for q in ("q0", "q1")})
    rows = read_export(write_export(export_rows(store), tmp_path / "j.csv"))
    assert [r["correct"] for r in rows] == [1.0, 1.0, 1.0, 1.0]
    p = study_stats(rows)["conditions"]["P"]
    assert p["accuracy"]["mean"] == 1.0
    assert p["vote"] == {"items": 2, "majority": 1.0, "unanimous": 1.0}
    # the probability stays what the rater said (a tie) for log/Brier scores; vote=True is the choice
    assert judgment_verdict(rows[0]).probabilities == {"A": 0.5, "B": 0.5}
    assert judgment_verdict(rows[0], vote=True).probabilities == {"A": 0.0, "B": 1.0}


def test_accuracy_agrees_with_the_correct_column(make_study) -> None:
    # a wrong choice at 50 is wrong (0), not half right: accuracy is the mean of `correct`
    clock = FakeClock()
    store = make_study(
        questions=[question("q0", "B"), question("q1", "A")],
        conditions=["P"],
        ratings_per_item=1,
        tasks_per_rater=2,
        clock=clock,
    )
    _judge_all(store, clock, {("r0", "q0"): ("A", 0.5), ("r0", "q1"): ("A", 0.9)})
    rows = export_rows(store)
    assert sorted((r["question_id"], r["correct"]) for r in rows) == [("q0", 0.0), ("q1", 1.0)]
    assert study_stats(rows)["conditions"]["P"]["accuracy"]["mean"] == 0.5


def test_timed_out_judgments_are_wrong_votes(make_study) -> None:
    # issue 14.2: q0 (true A): r0 right, r1 and r2 time out -> 1 right of 3: majority 0 (the old
    # code dropped the timeouts and counted r0's lone vote: majority 1).
    # q1 (true A): r0 and r1 right, r2 times out -> 2 of 3: majority 1, not unanimous.
    clock = FakeClock()
    store = make_study(
        questions=[question("q0", "A"), question("q1", "A")],
        conditions=["P"],
        ratings_per_item=3,
        tasks_per_rater=2,
        clock=clock,
    )
    plan: dict[tuple[str, str], tuple[str, float | None] | None] = {
        ("r0", "q0"): ("A", 0.9),
        ("r1", "q0"): None,
        ("r2", "q0"): None,
        ("r0", "q1"): ("A", 0.9),
        ("r1", "q1"): ("A", 0.8),
        ("r2", "q1"): None,
    }
    _judge_all(store, clock, plan)
    rows = export_rows(store)
    assert sum(1 for r in rows if r["timed_out"]) == 3
    wrong = study_stats(rows)["conditions"]["P"]
    assert wrong["accuracy"]["mean"] == pytest.approx(3 / 6)
    assert wrong["vote"] == {"items": 2, "majority": 0.5, "unanimous": 0.0}
    # exclude: q0 has r0 only (right), q1 has r0, r1 (right): both unanimous
    assert study_stats(rows, timeout_policy="exclude")["conditions"]["P"]["vote"] == {
        "items": 2,
        "majority": 1.0,
        "unanimous": 1.0,
    }
    # half: a timeout is half a right vote: q0 1 + 0.5 + 0.5 = 2 of 3 > 1.5; q1 2.5 of 3
    assert study_stats(rows, timeout_policy="half")["conditions"]["P"]["vote"] == {
        "items": 2,
        "majority": 1.0,
        "unanimous": 0.0,
    }


def test_csv_export_neutralises_spreadsheet_formulas(make_study, tmp_path: Path) -> None:
    # issue 14.7: a cell starting with = + - @ (or tab, CR) is a formula in a spreadsheet
    comments = ['=HYPERLINK("http://evil.example","x")', "+1+2", "-3", "@SUM(A1)", "'kept quote", "plain"]
    store = make_study(
        questions=[question(f"q{i}") for i in range(6)],
        conditions=["P"],
        ratings_per_item=1,
        tasks_per_rater=6,
    )
    rid = str(store.rater_for("prolific:r0", "prolific")["id"])
    for text in comments:
        a, _ = store.next_assignment(rid)
        assert a is not None
        store.start_timer(a.id, rid)
        store.submit(a.id, rid, {"answer": "A", "comment": text})
    path = write_export(export_rows(store), tmp_path / "j.csv")
    import csv

    with path.open(newline="") as f:
        cells = [r["comment"] for r in csv.DictReader(f)]
    assert cells == [
        '\'=HYPERLINK("http://evil.example","x")',
        "'+1+2",
        "'-3",
        "'@SUM(A1)",
        "''kept quote",
        "plain",
    ]
    assert [r["comment"] for r in read_export(path)] == comments  # read back as written
    c = TestClient(create_app(store))
    body = c.get(f"/admin/export.csv?token={store.admin_token}").text
    assert "'=HYPERLINK(" in body and "\n=HYPERLINK" not in body and ",=HYPERLINK" not in body


def test_export_carries_prolific_study_and_session_ids(make_study) -> None:
    # issue 14.8: STUDY_ID and SESSION_ID from the link are in every row (the latest entry's)
    store = make_study(tutorial={"text": ""})
    c = TestClient(create_app(store))
    c.get("/start?PROLIFIC_PID=p1&STUDY_ID=st1&SESSION_ID=se1")
    r = c.get("/start?PROLIFIC_PID=p1&STUDY_ID=st1&SESSION_ID=se2")  # back after a break: a new session
    aid = str(r.url).rsplit("/", 1)[-1]
    csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)  # type: ignore[union-attr]
    c.post(f"/task/{aid}/start", data={"csrf": csrf})
    c.post(f"/task/{aid}/submit", data={"csrf": csrf, "answer": "A"})
    (row,) = export_rows(store)
    assert (row["prolific_study_id"], row["prolific_session_id"]) == ("st1", "se2")
    assert row["rater_external_id"] == "prolific:p1"
    # a later entry through another link leaves the rows submitted before it as they were
    r = c.get("/start?PROLIFIC_PID=p1&STUDY_ID=st1&SESSION_ID=se3")
    aid2 = str(r.url).rsplit("/", 1)[-1]
    csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)  # type: ignore[union-attr]
    c.post(f"/task/{aid2}/start", data={"csrf": csrf})
    c.post(f"/task/{aid2}/submit", data={"csrf": csrf, "answer": "A"})
    assert {r["judgment_id"]: r["prolific_session_id"] for r in export_rows(store)} == {
        aid: "se2",
        aid2: "se3",
    }


def test_a_study_made_before_the_link_columns_opens_and_exports(make_study) -> None:
    # a database whose assignment table lacks study_param / session_param (made by an earlier
    # version) gets them on open; its rows show the rater's latest link ids, as before
    from sqlalchemy import text

    from seerbench.study import StudyStore

    store = make_study(tutorial={"text": ""})
    rid = str(store.rater_for("prolific:old", "prolific", "st0", "se0", new_session=True)["id"])
    a, _ = store.next_assignment(rid)
    assert a is not None
    store.start_timer(a.id, rid)
    store.submit(a.id, rid, {"answer": "A"})
    with store.engine.begin() as c:
        c.execute(text("ALTER TABLE assignment DROP COLUMN study_param"))
        c.execute(text("ALTER TABLE assignment DROP COLUMN session_param"))
    path = store.url.removeprefix("sqlite:///")
    store.close()
    again = StudyStore(path)
    (row,) = export_rows(again)
    assert (row["prolific_study_id"], row["prolific_session_id"]) == ("st0", "se0")
    again.close()


def test_admin_shows_per_rater_accuracy_and_time(make_study) -> None:
    # issue 14.8: what bonuses need: accuracy on scored (non-catch) tasks and time, per rater.
    # q0 (true A) answered A after 10 s: right; q1 (true B) answered A after 20 s: wrong.
    clock = FakeClock()
    store = make_study(
        questions=[question("q0", "A"), question("q1", "B")],
        conditions=["P"],
        ratings_per_item=1,
        tasks_per_rater=2,
        clock=clock,
    )
    rid = str(store.rater_for("prolific:bonus1", "prolific")["id"])
    for _ in range(2):
        a, _ = store.next_assignment(rid)
        assert a is not None
        store.start_timer(a.id, rid)
        clock.advance(10 if a.question_id == "q0" else 20)
        store.submit(a.id, rid, {"answer": "A"})
    c = TestClient(create_app(store))
    (r,) = c.get(f"/admin/stats.json?token={store.admin_token}").json()["progress"]["raters"]
    assert (r["scored"], r["accuracy"], r["total_seconds"], r["median_seconds"]) == (2, 0.5, 30.0, 15.0)
    html = c.get(f"/admin?token={store.admin_token}").text
    row = html[html.index("prolific:bonus1") :]
    row = row[: row.index("</tr>")]
    assert (
        '<td class="scored">2</td><td class="accuracy">50%</td>' in row
        and '<td class="total-seconds">30.0</td>' in row
    )


def test_accuracy_is_the_shared_summary() -> None:
    # the judgment accuracy dict is seerbench.stats.Summary's, its interval the two-way cluster
    # bootstrap's (same seed, same numbers as cluster_mean_interval)
    import dataclasses

    import numpy as np

    from seerbench.stats import Summary, cluster_mean_interval, codes
    from seerbench.study._results import _judgment_summary

    vals = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    rows = [{"item": f"i{k % 4}", "rater_id": f"r{k % 3}"} for k in range(8)]
    s = _judgment_summary(list(zip(vals, rows, strict=True)), seed=3)
    # every field; ``note`` only where there is no interval (here there is one)
    assert set(s) == {f.name for f in dataclasses.fields(Summary)} - {"note"}
    items, _ = codes([r["item"] for r in rows])
    raters, _ = codes([r["rater_id"] for r in rows])
    iv = cluster_mean_interval(np.array(vals), items, raters, seed=3)
    assert (s["mean"], s["ci_low"], s["ci_high"], s["n_eff"]) == pytest.approx(
        (0.75, iv.ci_low, iv.ci_high, iv.n_eff)
    )
    assert s["n"] == 8 and s["clusters"] == 3 and s["se"] > 0 and s["method"].startswith("cluster bootstrap")
    empty = _judgment_summary([], seed=3)
    assert empty["n"] == 0 and math.isnan(empty["mean"]) and set(empty) == set(s)
