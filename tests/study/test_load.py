"""200 simulated raters against the real uvicorn server on 127.0.0.1, all at once: no judgment is
lost, duplicated or stored for the wrong rater. Latencies are printed, never asserted."""

from __future__ import annotations

import asyncio
import statistics
from collections import Counter

from seerbench.study import export_rows
from seerbench.study._loadgen import simulate_raters

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
