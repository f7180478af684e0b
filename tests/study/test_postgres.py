"""The same guarantees on PostgreSQL (runs when SEERBENCH_TEST_POSTGRES_URL names an empty,
disposable database; its study tables are dropped first)."""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from seerbench.study import StudyStore, create_study, export_rows, load_manifest
from seerbench.study._loadgen import simulate_raters

from .conftest import base_manifest, question

URL = os.environ.get("SEERBENCH_TEST_POSTGRES_URL")
pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not URL, reason="set SEERBENCH_TEST_POSTGRES_URL to a disposable PostgreSQL database"),
]


def _drop_study_tables() -> str:
    """Start from an empty database: the study tables of an earlier test dropped; returns its URL."""
    from sqlalchemy import create_engine

    from seerbench.study._storage import database_url, metadata

    assert URL
    eng = create_engine(database_url(URL))
    metadata.drop_all(eng)
    eng.dispose()
    return URL


@pytest.fixture
def pg_store(tmp_path: Path):
    pytest.importorskip("psycopg")
    url = _drop_study_tables()
    qs = [question(f"q{i}", "AB"[i % 2]) for i in range(60)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    m = load_manifest(base_manifest(ratings_per_item=2, tasks_per_rater=3, catch_rate=0.1))
    store = create_study(m, url, base_dir=tmp_path)
    yield store
    store.close()


def test_postgres_concurrent_claims_and_double_submits(pg_store: StudyStore) -> None:
    store = pg_store

    def rater(i: int) -> list[str]:
        rid = str(store.rater_for(f"prolific:pg{i}", "prolific")["id"])
        done: list[str] = []
        while True:
            a, _ = store.next_assignment(rid)
            if a is None:
                return done
            store.start_timer(a.id, rid)
            # a double click: two submits of the same task at once
            with ThreadPoolExecutor(2) as ex:
                outs = list(ex.map(lambda ans, aid=a.id: store.submit(aid, rid, {"answer": ans}), ["A", "B"]))
            assert sorted(o.outcome for o in outs if o) == ["duplicate", "stored"]
            done.append(a.id)

    with ThreadPoolExecutor(32) as ex:
        results = list(ex.map(rater, range(100)))
    rows = export_rows(store)
    assert len(rows) == sum(len(r) for r in results)
    assert len({r["judgment_id"] for r in rows}) == len(rows)
    real = [r for r in rows if not r["is_catch"]]
    assert max(Counter((r["item"], r["condition"]) for r in real).values()) <= 2
    for rid in {r["rater_id"] for r in rows}:
        mine = [r for r in rows if r["rater_id"] == rid]
        assert len({r["question_id"] for r in mine}) == len(mine)
    assert sum(c["done"] for c in store.progress()["conditions"].values()) == len(real)


def test_postgres_live_server(pg_store: StudyStore, live_server) -> None:
    srv = live_server(pg_store)
    logs = asyncio.run(simulate_raters(srv.url, 100, quiz={"q0": "0"}, double_click_every=5))
    assert [e for log in logs for e in log.errors] == []
    rows = export_rows(pg_store)
    assert len(rows) == sum(len(log.submitted) for log in logs)


def test_postgres_critique_and_validation_rows(tmp_path: Path) -> None:
    # the critique and validation tables on PostgreSQL: written critiques with their flags, one
    # submission only, and a validation's marks
    pytest.importorskip("psycopg")
    from fastapi.testclient import TestClient

    from seerbench.study import create_app

    from .test_critique_study import critique_manifest, critiqued_answers, write_critiques

    url = _drop_study_tables()
    write_critiques(
        tmp_path / "critiques.jsonl", [a for a in critiqued_answers() if a["answer_id"] == "q1-misleading"]
    )
    store = create_study(
        load_manifest(critique_manifest(conditions=["misleading.assist"], tasks_per_rater=1)),
        url,
        base_dir=tmp_path,
    )
    try:
        c = TestClient(create_app(store))
        page = c.get("/start?PROLIFIC_PID=pg1")
        aid = str(page.url).rsplit("/", 1)[-1]
        csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        form = {
            "csrf": csrf,
            "n_rows": "2",
            "likert": "2",
            "c0_text": "Mine.",
            "c0_severity": "minor",
            "c0_category": "other",
            "c1_text": "The answer states the wrong number!",
            "c1_source": "q1-misleading-c0",
            "c1_severity": "critical",
            "c1_category": "accuracy",
        }
        for _ in range(2):
            assert c.post(f"/task/{aid}/submit", data=form, follow_redirects=False).status_code == 303
        rows = export_rows(store)
        assert [(r["critique_text"], r["used"], r["edited"], r["likert"]) for r in rows] == [
            ("Mine.", False, False, 2),
            ("The answer states the wrong number!", True, True, 2),
        ]
        marks = [{"critique_id": rows[0]["critique_id"], "valid": False, "covers_intended": None}]
        res = store.submit(aid, rows[0]["rater_id"], {"validations": marks})
        assert res is not None and res.outcome == "duplicate"  # a submitted task takes nothing more
        assert store.validations() == {}
    finally:
        store.close()


def test_postgres_failed_create_leaves_no_tables(tmp_path: Path) -> None:
    # a create that fails inside the database writes (a condition with no item) drops what it
    # made, so the same URL takes the fixed manifest; the columns an older study lacks are added
    pytest.importorskip("psycopg")
    from sqlalchemy import create_engine, inspect, text

    from seerbench.errors import ConfigError
    from seerbench.study._storage import database_url, metadata

    assert URL
    eng = create_engine(database_url(URL))
    metadata.drop_all(eng)
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(question(f"q{i}")) + "\n" for i in range(3)))
    with pytest.raises(ConfigError, match="have no items to show"):
        create_study(
            load_manifest(base_manifest(conditions=["transcript"], tasks_per_rater=3)), URL, base_dir=tmp_path
        )
    assert not inspect(eng).has_table("study_meta") and not inspect(eng).has_table("assignment")
    store = create_study(
        load_manifest(base_manifest(conditions=["P"], tasks_per_rater=3)), URL, base_dir=tmp_path
    )
    store.close()
    with eng.begin() as c:
        c.execute(text("ALTER TABLE assignment DROP COLUMN session_param"))
    StudyStore(URL).close()
    assert "session_param" in {col["name"] for col in inspect(eng).get_columns("assignment")}
    metadata.drop_all(eng)
    eng.dispose()


def test_postgres_simultaneous_first_claims_never_report_full(tmp_path: Path) -> None:
    # A launch: many raters claim their first task in the same instant while hundreds of slots are
    # open. Under READ COMMITTED every claimer read the same few candidate rows, the losers' guarded
    # UPDATE matched nothing, and after a handful of lost races the claim said "exhausted" (the
    # rater was shown "This study is full"; 3 of 96 here before the fix). Every one gets a task.
    # (96 connections at once: .ci/run starts its server with max_connections=300.)
    n_raters = 96
    pytest.importorskip("psycopg")
    import threading

    url = _drop_study_tables()
    qs = [question(f"q{i}", "AB"[i % 2]) for i in range(200)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    m = load_manifest(base_manifest(ratings_per_item=3, tasks_per_rater=4, catch_rate=0.0))
    stores = [create_study(m, url, base_dir=tmp_path)] + [StudyStore(url) for _ in range(7)]
    try:
        rids = [
            str(stores[i % 8].rater_for(f"prolific:launch{i}", "prolific")["id"]) for i in range(n_raters)
        ]
        barrier = threading.Barrier(n_raters)

        def claim(i: int) -> str:
            barrier.wait()
            a, reason = stores[i % 8].next_assignment(rids[i])
            return reason if a is None else "ok"

        with ThreadPoolExecutor(n_raters) as ex:
            reasons = list(ex.map(claim, range(n_raters)))
        assert Counter(reasons) == {"ok": n_raters}  # 1,200 slots were open
    finally:
        for s in stores:
            s.close()


def test_postgres_claims_in_flight_never_make_a_rater_see_full(tmp_path: Path) -> None:
    # issue 28: a claim locks the slots it reads (FOR UPDATE SKIP LOCKED) until it commits, and
    # the others skip them. A claim read 8 slots and took one, so near the end of a launch a few
    # claims in flight held every open slot and the rest were told "exhausted" (11 of 200 raters in
    # the benchmark, with 88 slots open). Here a claim in flight (its transaction held open) reads
    # the first of 2 open slots; the other rater gets the second one, not "full". While the last
    # open slot is held, a rater is told to try again (StudyBusyError, the page reloads), never
    # "exhausted"; once the holder rolls back it gets that slot; then the study is full for real.
    pytest.importorskip("psycopg")
    from sqlalchemy import select

    from seerbench.study._schema import _PICK_OPEN, slot_t
    from seerbench.study._slots import StudyBusyError

    url = _drop_study_tables()
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(question(f"q{i}")) + "\n" for i in range(2)))
    m = load_manifest(base_manifest(conditions=["P"], ratings_per_item=1, tasks_per_rater=2, catch_rate=0.0))
    store = create_study(m, url, base_dir=tmp_path)
    try:
        holder, a, b, late = (
            str(store.rater_for(f"prolific:{n}", "prolific")["id"]) for n in ("holder", "a", "b", "late")
        )
        with store.engine.connect() as c, c.begin() as tx:
            params = {"cond": "P", "rid": holder, "now": store.clock()}
            held = [row.id for row in c.execute(_PICK_OPEN, params)]
            assert len(held) == 1  # a claim holds only the slot it is about to take
            got, reason = store.next_assignment(a)
            assert reason == "ok" and got is not None and got.slot_id not in held
            assert store.open_slots_for(b) == 1  # the held slot is not taken yet
            with pytest.raises(StudyBusyError):
                store.next_assignment(b)
            tx.rollback()  # the claim in flight gave up: its slot is open again
        got_b, reason = store.next_assignment(b)
        assert reason == "ok" and got_b is not None and [got_b.slot_id] == held
        with store.engine.connect() as c:
            assert set(c.execute(select(slot_t.c.status)).scalars()) == {"taken"}
        assert store.open_slots_for(late) == 0
        assert store.next_assignment(late) == (None, "exhausted")
    finally:
        store.close()
