"""Simulated raters against the real uvicorn server on 127.0.0.1: 200 all at once (a burst), and
raters at a human pace (arriving over time, thinking between requests; time compressed). No
judgment is lost, duplicated or stored for the wrong rater. Latencies are printed, never asserted;
the figures come from benchmarks/bench_study.py."""

from __future__ import annotations

import asyncio
import statistics
from collections import Counter

from seerbench.study import export_rows
from seerbench.study._loadgen import equivalent_raters, simulate_paced, simulate_raters

from .conftest import question


def test_200_concurrent_raters(make_study, live_server) -> None:
    qs = [question(f"q{i}", "AB"[i % 2]) for i in range(100)]
    # 100 questions x 2 conditions x 3 ratings = 600 slots = 200 raters x 3 tasks: the last
    # slots are contested
    store = make_study(questions=qs, conditions=["P", "PSA"], ratings_per_item=3, tasks_per_rater=3)
    srv = live_server(store)
    logs = asyncio.run(simulate_raters(srv.url, 200, quiz={"q0": "0"}, double_click_every=10))

    errors = [e for log in logs for e in log.errors]
    assert errors == []
    sent = {aid: (log.pid, comments) for log in logs for aid, comments in log.submitted.items()}
    rows = export_rows(store)
    # nothing lost, nothing duplicated
    assert len(rows) == len(sent) == sum(len(log.submitted) for log in logs)
    assert len({r["judgment_id"] for r in rows}) == len(rows)
    # nothing misassigned: each judgment is stored for the rater who sent it, with what it sent
    for r in rows:
        pid, comments = sent[r["judgment_id"]]
        assert r["rater_external_id"] == f"prolific:{pid}"
        assert r["comment"] in comments
    # quotas hold: no slot judged twice, no rater sees a question twice
    per_slot = Counter((r["item"], r["condition"]) for r in rows)
    assert max(per_slot.values()) <= 3
    for log in logs:
        mine = [r for r in rows if r["rater_external_id"] == f"prolific:{log.pid}"]
        assert len({r["question_id"] for r in mine}) == len(mine)
    prog = store.progress()
    assert sum(c["done"] for c in prog["conditions"].values()) == len(rows)
    assert all(log.finished for log in logs)

    lat = sorted(x for log in logs for x in log.latencies)
    p50, p99 = statistics.median(lat), lat[int(0.99 * (len(lat) - 1))]
    print(f"\n200 raters: {len(lat)} submit requests, p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms")


def test_paced_raters(make_study, live_server) -> None:
    # 60 raters, 2 tasks each, one submission every 30-120 s compressed 400 times (0.075-0.3 s a
    # task), arriving over 0.2 s; 40 questions x 2 conditions x 1 rating = 80 slots for 120 tasks,
    # so at least 20 raters find the study full
    qs = [question(f"q{i}", "AB"[i % 2]) for i in range(40)]
    store = make_study(questions=qs, conditions=["P", "PSA"], ratings_per_item=1, tasks_per_rater=2)
    srv = live_server(store)
    logs = asyncio.run(
        simulate_paced(
            srv.url, 60, quiz={"q0": "0"}, think_s=(30.0, 120.0), time_scale=400, arrival_s=0.2, seed=1
        )
    )
    assert equivalent_raters(60, 400) == 24_000
    assert [e for log in logs for e in log.errors] == []
    rows = export_rows(store)
    sent = {aid: (log.pid, comments) for log in logs for aid, comments in log.submitted.items()}
    assert len(rows) == len(sent) == 80  # every slot judged once, nothing lost or duplicated
    for r in rows:
        pid, comments = sent[r["judgment_id"]]
        assert r["rater_external_id"] == f"prolific:{pid}" and r["comment"] in comments
    assert Counter((r["item"], r["condition"]) for r in rows).most_common(1)[0][1] == 1
    # a rater either finishes the quota of 2 (and gets the code) or finds the study full first
    assert all(log.finished != log.full for log in logs)
    assert {len(log.submitted) for log in logs if log.finished} == {2}
    assert all(len(log.submitted) < 2 for log in logs if log.full) and sum(log.full for log in logs) >= 20
    # every request of the flow is timed: entry, quiz, per task start / submit / next and the pages
    kinds = Counter(k for log in logs for k, _ in log.requests)
    assert kinds["submit"] == 80 and kinds["start"] == 80 and kinds["tutorial"] == 60
    lat = sorted(x for log in logs for _, x in log.requests)
    print(
        f"\npaced: {len(lat)} requests, p50 {statistics.median(lat) * 1000:.1f} "
        f"ms, p99 {lat[int(0.99 * (len(lat) - 1))] * 1000:.1f} ms"
    )
