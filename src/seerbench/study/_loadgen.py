"""Simulated raters for load tests and benchmarks of a running study server.

Each simulated rater is an HTTP client with its own cookies that does what a browser would: enter
through a Prolific-style link, pass the quiz, then start the timer and submit for every task until
the study sends it to the completion page. Needs ``httpx`` (a dev dependency).
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RaterLog", "simulate_raters"]

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')
_ANSWER = re.compile(r'name="answer" value="([^"]+)"')


@dataclass
class RaterLog:
    """What one simulated rater did: its submissions (assignment id -> comment it sent; with a
    double click, every comment sent for that id), submit latencies in seconds, and errors."""

    pid: str
    submitted: dict[str, list[str]] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    finished: bool = False


async def _one_rater(
    client: Any, pid: str, quiz: dict[str, str], double_click: bool, max_tasks: int
) -> RaterLog:
    log = RaterLog(pid)
    r = await client.get(f"/start?PROLIFIC_PID={pid}&STUDY_ID=load&SESSION_ID={pid}", follow_redirects=True)
    m = _CSRF.search(r.text)
    if not m:
        log.errors.append(f"no csrf on {r.url} ({r.status_code})")
        return log
    csrf = m.group(1)
    if r.url.path == "/tutorial":
        r = await client.post("/tutorial", data={"csrf": csrf, **quiz}, follow_redirects=True)
    for n in range(max_tasks + 1):
        path = r.url.path
        if path.startswith("/done"):
            log.finished = True
            return log
        if not path.startswith("/task/"):
            log.errors.append(f"unexpected page {path} ({r.status_code})")
            return log
        aid = path.split("/")[2]
        r = await client.post(f"/task/{aid}/start", data={"csrf": csrf}, follow_redirects=True)
        options = _ANSWER.findall(r.text)
        if not options:
            log.errors.append(f"no answer options on {r.url} ({r.status_code})")
            return log
        comments = [f"{pid}:{aid}:{k}" for k in range(2 if double_click and n == 0 else 1)]

        async def submit(comment: str, aid: str = aid, options: list[str] = options) -> Any:
            t0 = time.perf_counter()
            resp = await client.post(
                f"/task/{aid}/submit",
                data={"csrf": csrf, "answer": options[0], "probability": "75", "comment": comment},
            )
            log.latencies.append(time.perf_counter() - t0)
            return resp

        resps = await asyncio.gather(*(submit(c) for c in comments))
        for resp in resps:
            if resp.status_code != 303:
                log.errors.append(f"submit {aid} -> {resp.status_code}")
        log.submitted[aid] = comments
        r = await client.get("/next", follow_redirects=True)
    log.errors.append("more tasks than the quota")
    return log


async def simulate_raters(
    base_url: str,
    n_raters: int,
    *,
    quiz: dict[str, str] | None = None,
    double_click_every: int = 0,
    max_tasks: int = 1000,
    prefix: str = "load",
) -> list[RaterLog]:
    """Run ``n_raters`` simulated raters concurrently against the server at ``base_url``.

    ``quiz`` holds the tutorial form answers (``{"q0": "1"}``); every ``double_click_every``-th
    rater submits its first task twice at once (0: never).
    """
    import httpx

    limits = httpx.Limits(max_connections=4, max_keepalive_connections=4)
    timeout = httpx.Timeout(120.0)

    async def run(i: int) -> RaterLog:
        async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=timeout) as client:
            dbl = double_click_every > 0 and i % double_click_every == 0
            try:
                return await _one_rater(client, f"{prefix}{i}", quiz or {}, dbl, max_tasks)
            except httpx.HTTPError as e:
                log = RaterLog(f"{prefix}{i}")
                log.errors.append(f"{type(e).__name__}: {e}")
                return log

    return list(await asyncio.gather(*(run(i) for i in range(n_raters))))
