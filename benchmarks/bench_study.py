"""Latency and throughput of the study server under simulated raters: a paced study and a burst.

Run by hand (never in the tests)::

    python benchmarks/bench_study.py [--raters 50 200] [--tasks 5] [--modes paced burst mixed]
        [--time-scale 10] [--think 30 120] [--workers 1] [--repeat 1] [--arrival-s 10] [--timeout-s 120]

For each backend, concurrency level and mode a fresh study is created and served by its own
process(es) on 127.0.0.1, as in production: ``seerbench study serve`` for one worker, ``uvicorn
--factory seerbench.study:app_from_env --workers N`` for several. Modes:

- ``paced``: a real study. Raters arrive spread over one mean task time and think between
  requests (:func:`seerbench.study._loadgen.simulate_paced`): each task takes a uniform draw from
  ``--think`` seconds (30-120 s: reading the question, the material, the feedback page), divided
  by ``--time-scale`` to compress the study. At scale k, N raters send the requests of N*k raters
  at a real pace (printed as "~N*k real"). Latency of the submits and of every request.
- ``burst``: every rater holds a started task and all submit at the same moment, round after
  round; submissions/s = submissions / time spent in the bursts, latency of those submits (mostly
  queueing: the last of N simultaneous submits waits about N / throughput).
- ``mixed``: a launch: raters arrive within ``--arrival-s`` seconds (a Prolific study going live)
  and go through the whole flow with no think time (as fast as the server answers);
  submissions/s over the wall time, submit latency and that of every request. Raters sent to
  "This study is full" are split into correct turn-aways and wrong ones (a slot it could claim
  was open): the study has a slot for every submission, so any turn-away is suspect.

The load generator runs in this process and shares the machine's cores with the server, so the
figures are a lower bound for a server with its own cores. SQLite by default; set
``SEERBENCH_BENCH_POSTGRES_URL`` (a disposable database: its study tables are dropped) to measure
PostgreSQL too. Writes ``benchmarks/results/bench_study.json``.
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
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from seerbench.study import StudyStore, create_study, load_manifest
from seerbench.study._loadgen import simulate_paced, simulate_raters
from seerbench.study._schema import rater_t

ROOT = Path(__file__).resolve().parents[1]
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def _question(i: int) -> dict[str, Any]:
    passage = f"Passage {i}. " + "The keeper wrote in her log. " * 30 + f"The answer to {i} is here."
    return {
        "id": f"q{i}",
        "text": f"Question {i}?",
        "source_text": passage,
        "answer_cases": [
            {
                "short": "A",
                "long": "yes",
                "value": 1.0,
                "argument": "Because (#1).",
                "quotes": [f"The answer to {i} is here."],
            },
            {
                "short": "B",
                "long": "no",
                "value": 0.0,
                "argument": "Not so (#1).",
                "quotes": ["The keeper wrote in her log."],
            },
        ],
    }


def _make_study(db: str, tmp: Path, raters: int, tasks: int, questions: int | None = None) -> StudyStore:
    # x 2 conditions x 1 rating >= all the submissions
    n_q = max(50, (raters * tasks) // 2 + 20, questions or 0)
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


def _serve(db: str, workers: int, log: str | None = None) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    # the server runs this checkout's code, or the code on PYTHONPATH when set (to compare versions)
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH") or str(ROOT / "src")}
    if workers > 1:
        env["SEERBENCH_STUDY_DB"] = db
        cmd = [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "seerbench.study:app_from_env",
            "--workers",
            str(workers),
        ]
        cmd += ["--port", str(port), "--backlog", "2048", "--no-access-log"]
        cmd += ["--log-level", "info" if log else "warning"]  # info: workers dying and restarting
    else:
        cmd = [
            sys.executable,
            "-c",
            "from seerbench.cli import main; main()",
            "study",
            "serve",
            "--db",
            db,
            "--port",
            str(port),
        ]
    err = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 (the server's lifetime)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            httpx.get(url + "/", timeout=1)
            time.sleep(0.5 if workers > 1 else 0)  # let every worker come up
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("study server did not start")


def _cpu_s(proc: subprocess.Popen[bytes]) -> float | None:
    """CPU seconds (user + system) used so far by the server process and its children (the
    workers), from /proc; None where there is no /proc."""
    pids = [proc.pid]
    try:
        out = subprocess.run(
            ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True, check=False
        ).stdout
        pids += [int(x) for x in out.split()]
        total = 0
        for pid in pids:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
        return total / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return round(s[min(len(s) - 1, int(q * (len(s) - 1)))] * 1000, 1)


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
        csrfs = [c for c, _ in states]  # a rater's CSRF token never changes within a session
        lat: list[float] = []
        n, busy = 0, 0.0
        for _ in range(rounds):
            aids = await asyncio.gather(*(start(i, csrf, p) for i, (csrf, p) in enumerate(states)))

            async def submit(i: int, aid: str) -> float:
                t0 = time.perf_counter()
                r = await clients[i].post(
                    f"/task/{aid}/submit", data={"csrf": csrfs[i], "answer": "A", "probability": "80"}
                )
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
            "submissions_per_s": round(n / busy, 1) if busy else None,
            "p50_ms": _pct(lat, 0.5),
            "p99_ms": _pct(lat, 0.99),
        }
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))


def _paced(url: str, raters: int, tasks: int, scale: float, think: tuple[float, float]) -> dict[str, Any]:
    t0 = time.perf_counter()
    logs = asyncio.run(
        simulate_paced(url, raters, quiz={"q0": "0"}, think_s=think, time_scale=scale, max_tasks=tasks)
    )
    wall = time.perf_counter() - t0
    subs = [x for log in logs for x in log.latencies]
    every = [x for log in logs for _, x in log.requests]
    kinds = sorted({k for log in logs for k, _ in log.requests})
    return {
        "time_scale": scale,
        "equivalent_real_raters": raters * scale,
        "wall_s": round(wall, 1),
        "submissions": len(subs),
        "requests": len(every),
        "submissions_per_s": round(len(subs) / wall, 2),
        "requests_per_s": round(len(every) / wall, 1),
        "p50_ms": _pct(subs, 0.5),
        "p99_ms": _pct(subs, 0.99),
        "all_p50_ms": _pct(every, 0.5),
        "all_p99_ms": _pct(every, 0.99),
        "p99_ms_by_kind": {
            k: _pct([x for log in logs for kk, x in log.requests if kk == k], 0.99) for k in kinds
        },
        "errors": sum(len(log.errors) for log in logs),
    }


def _mixed(url: str, db: str, raters: int, args: argparse.Namespace) -> dict[str, Any]:
    """The launch: every rater goes through the whole flow, arriving within ``--arrival-s``. Each
    rater sent to "study full" is checked at once against the database: how many slots it could
    still claim (:meth:`StudyStore.open_slots_for`; slots never reopen within a run, so a slot
    found open then was open when the page was served). None is a correct turn-away; any is a bug."""
    checker = StudyStore(db)

    def open_slots(pid: str) -> int:
        with checker.engine.connect() as c:
            rid = c.execute(
                select(rater_t.c.id).where(rater_t.c.external_id == f"prolific:{pid}")
            ).scalar_one()
        return checker.open_slots_for(rid)

    async def on_full(pid: str) -> int:
        return open_slots(pid)  # on the event loop: nothing else moves until it has looked

    try:
        t0 = time.perf_counter()
        logs = asyncio.run(
            simulate_raters(
                url,
                raters,
                quiz={"q0": "0"},
                arrival_s=args.arrival_s,
                on_full=on_full,
                timeout_s=args.timeout_s,
                keep_alive=not args.no_keep_alive,
            )
        )
        wall = time.perf_counter() - t0
    finally:
        checker.close()
    lat = [x for log in logs for x in log.latencies]
    every = [x for log in logs for _, x in log.requests]
    kinds = sorted({k for log in logs for k, _ in log.requests})
    full = [log for log in logs if log.full]
    errors = [e for log in logs for e in log.errors]
    return {
        "arrival_s": args.arrival_s,
        "keep_alive": not args.no_keep_alive,
        "submissions": len(lat),
        "wall_s": round(wall, 2),
        "submissions_per_s": round(len(lat) / wall, 1),
        "p50_ms": _pct(lat, 0.5),
        "p99_ms": _pct(lat, 0.99),
        "all_p50_ms": _pct(every, 0.5),
        "all_p99_ms": _pct(every, 0.99),
        "p50_p99_ms_by_kind": {
            k: [_pct(xs, 0.5), _pct(xs, 0.99)]
            for k in kinds
            for xs in [[x for log in logs for kk, x in log.requests if kk == k]]
        },
        "finished": sum(log.finished for log in logs),
        "errors": len(errors),
        "error_kinds": dict(Counter(e.split(":")[0] for e in errors)),
        "busy": sum(log.busy for log in logs),
        # raters sent to "This study is full" (the study has a slot for every submission, so a
        # launch must turn none away: issue 28.1), split by whether a slot was open for them then
        "turned_away": len(full),
        "turned_away_correct": sum(1 for log in full if log.open_at_full == 0),
        "turned_away_with_open_slot": sum(1 for log in full if log.open_at_full),
        "open_slots_at_wrong_turn_away": sorted(log.open_at_full for log in full if log.open_at_full),
    }


def run_one(db_url: str | None, mode: str, raters: int, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        db = db_url or str(tmp / "bench.sqlite")
        if db_url:
            _reset_postgres(db_url)
        _make_study(db, tmp, raters, args.tasks, args.questions).close()
        proc, url = _serve(db, args.workers, args.server_log)
        try:
            cpu0 = _cpu_s(proc)
            if mode == "burst":
                out = asyncio.run(_burst(url, raters, args.tasks))
            elif mode == "paced":
                out = _paced(url, raters, args.tasks, args.time_scale, tuple(args.think))
            else:
                out = _mixed(url, db, raters, args)
            cpu1 = _cpu_s(proc)
            if cpu0 is not None and cpu1 is not None:
                out["server_cpu_s"] = round(cpu1 - cpu0, 2)
            return out
        finally:
            proc.terminate()
            proc.wait(timeout=20)


def _reset_postgres(url: str) -> None:
    from sqlalchemy import create_engine

    from seerbench.study._storage import database_url, metadata

    eng = create_engine(database_url(url))
    metadata.drop_all(eng)
    eng.dispose()


def _line(name: str, n: int, mode: str, r: dict[str, Any], workers: int) -> str:
    head = f"{name:10s} w{workers} {n:4d} raters {mode:6s}"
    if mode == "paced":
        return (
            f"{head} x{r['time_scale']:g} (~{r['equivalent_real_raters']:g} real) | {r['submissions']} "
            f"submits {r['submissions_per_s']}/s, {r['requests_per_s']} req/s | submit p50 {r['p50_ms']} "
            f"p99 {r['p99_ms']} ms | all requests p50 {r['all_p50_ms']} p99 "
            f"{r['all_p99_ms']} ms | errors {r['errors']}{_cpu(r, r['requests'])}"
        )
    extra = f" | errors {r['errors']}" if "errors" in r else ""
    if "turned_away" in r:
        extra += (
            f" | all requests p50 {r['all_p50_ms']} p99 {r['all_p99_ms']} ms | finished {r['finished']}"
            f" | busy {r['busy']} | full, correct {r['turned_away_correct']} | full with eligible "
            f"slot open {r['turned_away_with_open_slot']}"
        )
    return (
        f"{head} | {r['submissions_per_s']} submissions/s | p50 "
        f"{r['p50_ms']} p99 {r['p99_ms']} ms{extra}{_cpu(r, None)}"
    )


def _cpu(r: dict[str, Any], requests: int | None) -> str:
    if r.get("server_cpu_s") is None:
        return ""
    per = f", {1000 * r['server_cpu_s'] / requests:.2f} ms a request" if requests else ""
    return f" | server CPU {r['server_cpu_s']} s{per}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--raters", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--tasks", type=int, default=5, help="tasks per rater (rounds of the burst mode)")
    ap.add_argument("--modes", nargs="+", choices=["paced", "burst", "mixed"], default=["paced", "burst"])
    ap.add_argument("--time-scale", type=float, default=10.0, help="paced: think time divided by this")
    ap.add_argument(
        "--think", type=float, nargs=2, default=[30.0, 120.0], help="paced: seconds per task, min max"
    )
    ap.add_argument("--workers", type=int, default=1, help="server processes")
    ap.add_argument(
        "--questions",
        type=int,
        default=None,
        help=(
            "questions in the study (x 2 conditions = slots; default: just enough; 1472 = single_turn_debate)"
        ),
    )
    ap.add_argument(
        "--arrival-s", type=float, default=10.0, help="mixed: raters arrive uniformly within these seconds"
    )
    ap.add_argument(
        "--timeout-s", type=float, default=120.0, help="mixed: a request unanswered after this ends its rater"
    )
    ap.add_argument("--no-keep-alive", action="store_true", help="mixed: a new connection for every request")
    ap.add_argument("--server-log", default=None, help="append the server's log here")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--backends", nargs="+", choices=["sqlite", "postgresql"], default=None)
    args = ap.parse_args()
    results: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "load_average": os.getloadavg(),
        "args": vars(args),
        "runs": [],
    }
    backends: list[tuple[str, str | None]] = [("sqlite", None)]
    if os.environ.get("SEERBENCH_BENCH_POSTGRES_URL"):
        backends.append(("postgresql", os.environ["SEERBENCH_BENCH_POSTGRES_URL"]))
    if args.backends:
        backends = [b for b in backends if b[0] in args.backends]
    for name, url in backends:
        for n in args.raters:
            for mode in args.modes:
                for _ in range(args.repeat):
                    r = run_one(url, mode, n, args)
                    results["runs"].append(
                        {"backend": name, "raters": n, "mode": mode, "workers": args.workers, **r}
                    )
                    print(_line(name, n, mode, r, args.workers), flush=True)
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_study.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
