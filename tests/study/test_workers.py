"""Several server processes on one study (issue 14.13): ``uvicorn --factory seerbench.study:app_from_env
--workers 2`` plus a second, separate server process, raters spread over both, and one task
submitted to two processes at the same moment. The assignment guarantees (no slot assigned twice,
quotas respected, no judgment lost or duplicated) are checked from the export. On PostgreSQL when
SEERBENCH_TEST_POSTGRES_URL names a disposable database (its study tables are dropped), and on a
SQLite file always. Latencies are never asserted."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from seerbench.study import StudyStore, create_study, export_rows, load_manifest
from seerbench.study._loadgen import simulate_raters

from .conftest import base_manifest, free_port, question

PG_URL = os.environ.get("SEERBENCH_TEST_POSTGRES_URL")
SRC = Path(__file__).resolve().parents[2] / "src"
RATINGS, TASKS, RATERS = 2, 3, 80


def _db(backend: str, tmp_path: Path) -> str:
    if backend == "sqlite":
        return str(tmp_path / "study.sqlite")
    if not PG_URL:
        pytest.skip("set SEERBENCH_TEST_POSTGRES_URL to a disposable PostgreSQL database")
    pytest.importorskip("psycopg")
    from sqlalchemy import create_engine

    from seerbench.study._storage import database_url, metadata

    eng = create_engine(database_url(PG_URL))
    metadata.drop_all(eng)
    eng.dispose()
    return PG_URL


def _spawn(db: str, workers: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "SEERBENCH_STUDY_DB": db, "PYTHONPATH": str(SRC)}
    cmd = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "seerbench.study:app_from_env",
        "--host",
        "127.0.0.1",
    ]
    cmd += ["--port", str(port), "--workers", str(workers), "--log-level", "warning", "--backlog", "2048"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    for _ in range(1200):  # started within seconds; no timing asserted
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
        try:
            httpx.get(url + "/", timeout=2)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("server did not start")


@pytest.fixture(params=["sqlite", "postgresql"])
def study_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, StudyStore]]:
    db = _db(request.param, tmp_path)
    # 50 questions x 2 conditions x 2 ratings = 200 slots for 80 raters x 3 tasks = 240 tasks: the
    # last slots are contested, and some raters find the study full
    qs = [question(f"q{i}", "AB"[i % 2]) for i in range(50)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    m = load_manifest(base_manifest(ratings_per_item=RATINGS, tasks_per_rater=TASKS, catch_rate=0.1, seed=5))
    store = create_study(m, db, base_dir=tmp_path)
    yield db, store
    store.close()


@pytest.fixture
def servers(study_db: tuple[str, StudyStore]) -> Iterator[list[str]]:
    db, _ = study_db
    procs = [_spawn(db, 2), _spawn(db, 1)]  # three processes in all
    try:
        yield [url for _, url in procs]
    finally:
        for proc, _ in procs:
            proc.terminate()
        for proc, _ in procs:
            proc.wait(timeout=30)


def _double_submit_across_processes(urls: list[str]) -> str:
    """One rater enters through the first server and submits one task to both servers at once
    (their cookie and CSRF token are valid on every process). Returns the assignment id, after
    checking that both requests end on the feedback page."""

    async def go() -> tuple[str, list[httpx.Response]]:
        async with httpx.AsyncClient(base_url=urls[0], timeout=60) as a:
            r = await a.get("/start?PROLIFIC_PID=twice", follow_redirects=True)
            csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)  # type: ignore[union-attr]
            r = await a.post("/tutorial", data={"csrf": csrf, "q0": "0"}, follow_redirects=True)
            aid = r.url.path.split("/")[2]
            await a.post(f"/task/{aid}/start", data={"csrf": csrf})
            async with httpx.AsyncClient(base_url=urls[1], cookies=a.cookies, timeout=60) as b:
                resps = await asyncio.gather(
                    a.post(f"/task/{aid}/submit", data={"csrf": csrf, "answer": "A", "comment": "via-0"}),
                    b.post(f"/task/{aid}/submit", data={"csrf": csrf, "answer": "B", "comment": "via-1"}),
                )
            return aid, list(resps)

    aid, resps = asyncio.run(go())
    # one answer is stored and shown its feedback; the other, a different answer, is told the task
    # was answered elsewhere (not shown the feedback of an answer it did not give; issue 28.5)
    assert sorted(r.status_code for r in resps) == [303, 409]
    assert {r.headers["location"] for r in resps if r.status_code == 303} == {f"/task/{aid}/feedback"}
    return aid


def test_several_server_processes_keep_the_guarantees(
    study_db: tuple[str, StudyStore], servers: list[str]
) -> None:
    _, store = study_db
    twice = _double_submit_across_processes(servers)
    logs = asyncio.run(simulate_raters(servers, RATERS, quiz={"q0": "0"}, double_click_every=8, prefix="w"))
    assert [e for log in logs for e in log.errors] == []

    rows = export_rows(store)
    # the task submitted to two processes at once is stored once, with one of the two answers
    (tw,) = [r for r in rows if r["judgment_id"] == twice]
    assert (tw["answer"], tw["comment"]) in {("A", "via-0"), ("B", "via-1")}
    rows = [r for r in rows if r["judgment_id"] != twice]
    sent = {aid: (log.pid, comments) for log in logs for aid, comments in log.submitted.items()}
    # nothing lost, nothing duplicated, nothing stored for the wrong rater
    assert len(rows) == len(sent) == sum(len(log.submitted) for log in logs)
    assert len({r["judgment_id"] for r in rows}) == len(rows)
    for r in rows:
        pid, comments = sent[r["judgment_id"]]
        assert r["rater_external_id"] == f"prolific:{pid}" and r["comment"] in comments
    # no slot assigned twice: at most RATINGS judgments of an item in a condition
    real = [r for r in [*rows, tw] if not r["is_catch"]]
    assert max(Counter((r["item"], r["condition"]) for r in real).values()) <= RATINGS
    # quotas: no rater over tasks_per_rater, no question twice for one rater
    per_rater = Counter(r["rater_id"] for r in rows)
    assert max(per_rater.values()) <= TASKS
    for rid in per_rater:
        mine = [r for r in rows if r["rater_id"] == rid]
        assert len({r["question_id"] for r in mine}) == len(mine)
    # every rater either finished the quota or found the study full; the slots add up
    finished = [log for log in logs if log.finished]
    assert all(len(log.submitted) == TASKS for log in finished)
    assert all(log.finished != log.full for log in logs)
    prog = store.progress()
    assert sum(c["done"] for c in prog["conditions"].values()) == len(real)
    assert sum(c["total"] for c in prog["conditions"].values()) == 50 * 2 * RATINGS
