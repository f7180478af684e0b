"""Judgment submissions per second and submit latency of the study server under concurrent raters.

Run by hand: ``python benchmarks/bench_study.py [--raters 50 200] [--tasks 10]``.

For each concurrency level a fresh study is created, ``seerbench study serve`` is started as its
own process on 127.0.0.1 (as in production), and that many simulated raters (one HTTP client
each, :mod:`seerbench.study._loadgen`) go through the whole flow at once: entry link, quiz, then per
task "start timer", "submit", "next". Two rates are reported:

- ``burst``: every rater holds a started task and all submit at the same moment, round after
  round; submissions/s = submissions / time spent in the bursts, latency of those submits;
- ``mixed``: the whole flow with page loads in between; submissions/s over the wall time, and
  the submit latency under that mixed load.

The load generator runs in this process and shares the machine's cores with the server, so the
figures are a lower bound for a server with its own cores. SQLite by default; set
``SEERBENCH_BENCH_POSTGRES_URL`` (an empty database) to measure PostgreSQL too. Writes
``benchmarks/results/bench_study.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from seerbench.study import StudyStore, create_study, load_manifest
from seerbench.study._loadgen import simulate_raters

ROOT = Path(__file__).resolve().parents[1]
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def _question(i: int) -> dict[str, Any]:
    passage = f"Passage {i}. " + "The keeper wrote in her log. " * 30 + f"The answer to {i} is here."
    return {
        "id": f"q{i}",
        "text": f"Question {i}?",
        "source_text": passage,
        "answer_cases": [
            {"short": "A", "long": "yes", "value": 1.0, "argument": "Because (#1).", "quotes": [f"The answer to {i} is here."]},
            {"short": "B", "long": "no", "value": 0.0, "argument": "Not so (#1).", "quotes": ["The keeper wrote in her log."]},
        ],
    }


def _make_study(db: str, tmp: Path, raters: int, tasks: int) -> StudyStore:
    n_q = max(50, (raters * tasks) // 2 + 20)  # x 2 conditions x 1 rating >= all the submissions
    (tmp / "items.jsonl").write_text("".join(json.dumps(_question(i)) + "\n" for i in range(n_q)))
    m = load_manifest(
        {
            "name": "bench",
            "items": [{"questions": "items.jsonl"}],
            "conditions": ["P", "PSA"],
            "ratings_per_item": 1,
            "tasks_per_rater": tasks,
            "catch_rate": 0.1,
            "completion_code": "BENCH",
            "tutorial": {"text": "x", "quiz": [{"question": "ok?", "options": ["yes", "no"], "answer": 0}]},
        }
    )
    return create_study(m, db, base_dir=tmp)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(db: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from seerbench.cli import main; main()", "study", "serve", "--db", db, "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            httpx.get(url + "/", timeout=1)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("study server did not start")


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * (len(s) - 1)))] * 1000


async def _burst(url: str, raters: int, rounds: int) -> dict[str, Any]:
    """All raters hold a started task; each round they all submit at once."""
    limits = httpx.Limits(max_connections=2)
    clients = [httpx.AsyncClient(base_url=url, limits=limits, timeout=120) for _ in range(raters)]
    try:

        async def enter(i: int) -> tuple[str, str]:
            c = clients[i]
            r = await c.get(f"/start?PROLIFIC_PID=burst{i}", follow_redirects=True)
            csrf = _CSRF.search(r.text).group(1)  # type: ignore[union-attr]
            r = await c.post("/tutorial", data={"csrf": csrf, "q0": "0"}, follow_redirects=True)
            return csrf, r.url.path

        async def start(i: int, csrf: str, path: str) -> str | None:
            if not path.startswith("/task/"):
                return None
            aid = path.split("/")[2]
            await clients[i].post(f"/task/{aid}/start", data={"csrf": csrf})
            return aid

        states = list(await asyncio.gather(*(enter(i) for i in range(raters))))
        csrfs = [c for c, _ in states]  # a rater's CSRF token never changes
        lat: list[float] = []
        n, busy = 0, 0.0
        for _ in range(rounds):
            aids = await asyncio.gather(*(start(i, csrf, p) for i, (csrf, p) in enumerate(states)))

            async def submit(i: int, aid: str) -> float:
                t0 = time.perf_counter()
                r = await clients[i].post(f"/task/{aid}/submit", data={"csrf": csrfs[i], "answer": "A", "probability": "80"})
                assert r.status_code == 303, r.status_code
                return time.perf_counter() - t0

            t0 = time.perf_counter()
            got = await asyncio.gather(*(submit(i, a) for i, a in enumerate(aids) if a))
            busy += time.perf_counter() - t0
            lat += got
            n += len(got)

            async def nxt(i: int) -> tuple[str, str]:
                r = await clients[i].get("/next", follow_redirects=True)
                return csrfs[i], r.url.path

            states = list(await asyncio.gather(*(nxt(i) for i in range(raters))))
        return {
            "submissions": n,
            "submissions_per_s": n / busy if busy else None,
            "p50_ms": _pct(lat, 0.5),
            "p99_ms": _pct(lat, 0.99),
        }
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))


def run_level(db_url: str | None, raters: int, tasks: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        out: dict[str, Any] = {"raters": raters}
        for mode in ("burst", "mixed"):
            db = db_url or str(tmp / f"{mode}.sqlite")
            if db_url:
                _reset_postgres(db_url)
            _make_study(db, tmp, raters, tasks).close()
            proc, url = _serve(db)
            try:
                if mode == "burst":
                    out["burst"] = asyncio.run(_burst(url, raters, tasks))
                else:
                    t0 = time.perf_counter()
                    logs = asyncio.run(simulate_raters(url, raters, quiz={"q0": "0"}))
                    wall = time.perf_counter() - t0
                    lat = [x for log in logs for x in log.latencies]
                    errors = [e for log in logs for e in log.errors]
                    out["mixed"] = {
                        "submissions": len(lat),
                        "wall_s": round(wall, 2),
                        "submissions_per_s": len(lat) / wall,
                        "p50_ms": _pct(lat, 0.5),
                        "p99_ms": _pct(lat, 0.99),
                        "errors": len(errors),
                    }
            finally:
                proc.terminate()
                proc.wait(timeout=10)
        return out


def _reset_postgres(url: str) -> None:
    from sqlalchemy import create_engine

    from seerbench.study._storage import database_url, metadata

    eng = create_engine(database_url(url))
    metadata.drop_all(eng)
    eng.dispose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--raters", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--tasks", type=int, default=10, help="tasks per rater (rounds of the burst mode)")
    args = ap.parse_args()
    results: dict[str, Any] = {"cpu_count": os.cpu_count(), "backends": {}}
    backends: list[tuple[str, str | None]] = [("sqlite", None)]
    if os.environ.get("SEERBENCH_BENCH_POSTGRES_URL"):
        backends.append(("postgresql", os.environ["SEERBENCH_BENCH_POSTGRES_URL"]))
    for name, url in backends:
        results["backends"][name] = []
        for n in args.raters:
            r = run_level(url, n, args.tasks)
            results["backends"][name].append(r)
            b, m = r["burst"], r["mixed"]
            print(
                f"{name:10s} {n:4d} raters | burst: {b['submissions_per_s']:7.1f} submissions/s, "
                f"p50 {b['p50_ms']:6.1f} ms, p99 {b['p99_ms']:6.1f} ms | mixed flow: "
                f"{m['submissions_per_s']:6.1f} submissions/s, p50 {m['p50_ms']:6.1f} ms, p99 {m['p99_ms']:6.1f} ms, "
                f"errors {m['errors']}",
                flush=True,
            )
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_study.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
