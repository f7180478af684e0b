"""Where a study request spends its time: the whole rater flow in one process under pyinstrument.

Run by hand (needs ``pip install pyinstrument``)::

    python benchmarks/profile_study.py [--raters 100] [--tasks 5] [--db postgresql://...] [--html out.html]

The app is driven in-process through httpx's ASGI transport, one rater after another (entry link,
quiz, then per task: task page, "start timer", task page, submit, feedback, "next"), with the
sync endpoints run inline instead of in the thread pool so that the profiler sees them. Prints the
mean milliseconds per request of each kind and pyinstrument's call tree.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_study import _make_study, _reset_postgres

from seerbench.study import create_app

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


async def _inline(func: Any, *args: Any, **_kw: Any) -> Any:
    return func(*args)


async def _flow(app: Any, raters: int, tasks: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = defaultdict(list)
    transport = httpx.ASGITransport(app=app)
    for i in range(raters):
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as c:

            async def req(
                kind: str, method: str, url: str, c: httpx.AsyncClient = c, **kw: Any
            ) -> httpx.Response:
                t0 = time.perf_counter()
                r = await c.request(method, url, **kw)
                times[kind].append(time.perf_counter() - t0)
                while r.status_code in (302, 303):
                    t0 = time.perf_counter()
                    loc = r.headers["location"]
                    r = await c.get(loc)
                    times["page " + re.sub(r"/task/[^/]+", "/task/ID", loc.split("?")[0])].append(
                        time.perf_counter() - t0
                    )
                return r

            r = await req("start link", "GET", f"/start?PROLIFIC_PID=prof{i}")
            csrf = _CSRF.search(r.text).group(1)  # type: ignore[union-attr]
            r = await req("tutorial POST", "POST", "/tutorial", data={"csrf": csrf, "q0": "0"})
            for _ in range(tasks):
                if not r.url.path.startswith("/task/"):
                    break
                aid = r.url.path.split("/")[2]
                r = await req("start POST", "POST", f"/task/{aid}/start", data={"csrf": csrf})
                r = await req(
                    "submit POST",
                    "POST",
                    f"/task/{aid}/submit",
                    data={"csrf": csrf, "answer": "A", "probability": "70"},
                )
                r = await req("next GET", "GET", "/next")
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--raters", type=int, default=100)
    ap.add_argument("--tasks", type=int, default=5)
    ap.add_argument("--db", default=None, help="a disposable PostgreSQL URL (default: a SQLite file)")
    ap.add_argument("--html", type=Path, default=None, help="also write pyinstrument's HTML report here")
    ap.add_argument("--no-profile", action="store_true", help="timings only")
    args = ap.parse_args()
    anyio.to_thread.run_sync = _inline  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        db = args.db or str(tmp / "profile.sqlite")
        if args.db:
            _reset_postgres(args.db)
        store = _make_study(db, tmp, args.raters, args.tasks)
        app = create_app(store)
        asyncio.run(_flow(app, 2, 1))  # warm up: imports, template compilation
        profiler = None
        if not args.no_profile:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.0005, async_mode="disabled")
            profiler.start()
        t0 = time.perf_counter()
        times = asyncio.run(_flow(app, args.raters, args.tasks))
        wall = time.perf_counter() - t0
        if profiler is not None:
            profiler.stop()
        n = sum(len(v) for v in times.values())
        print(f"{n} requests in {wall:.2f} s: {1000 * wall / n:.2f} ms per request on average")
        for kind, xs in sorted(times.items()):
            print(f"  {kind:28s} {len(xs):5d} x {1000 * sum(xs) / len(xs):6.2f} ms")
        if profiler is not None:
            print(profiler.output_text(unicode=False, color=False, show_all=False))
            if args.html:
                args.html.write_text(profiler.output_html())
        store.close()


if __name__ == "__main__":
    main()
