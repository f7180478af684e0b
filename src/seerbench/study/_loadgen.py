"""Simulated raters for load tests and benchmarks of a running study server.

Each simulated rater is an HTTP client with its own cookies that does what a browser would: enter
through a Prolific-style link, pass the quiz, then start the timer and submit for every task until
the study sends it to the completion page. Needs ``httpx`` (a dev dependency).

Two shapes of load:

- :func:`simulate_raters`: every rater goes through the flow as fast as the server answers (a
  burst; latency there is mostly queueing);
- :func:`simulate_paced`: raters arrive spread over time and think between requests as people do
  (a real study: one submission every 30-120 s per rater), with the think time divided by
  ``time_scale`` to compress a long study into a short run. Compressing time by ``k`` raises the
  request rate ``k`` times: ``n`` raters at ``time_scale=k`` send what ``n * k`` raters would at a
  real pace (:func:`equivalent_raters`).
"""

from __future__ import annotations

import asyncio
import random
import re
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RaterLog", "equivalent_raters", "simulate_paced", "simulate_raters"]

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')
_ANSWER = re.compile(r'name="answer" value="([^"]+)"')
_RATING = re.compile(r'name="rating" value="([^"]+)"')


@dataclass
class RaterLog:
    """What one simulated rater did: its submissions (assignment id -> comment it sent; with a
    double click, every comment sent for that id), submit latencies in seconds, the latency of
    every request as (kind, seconds), busy answers (503, retried), errors, and how it ended (the
    completion page, or the "study full" page; ``open_at_full``: what the ``on_full`` check of
    :func:`simulate_raters` returned right after that page, e.g. the slots still open for it)."""

    pid: str
    submitted: dict[str, list[str]] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    requests: list[tuple[str, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    finished: bool = False
    full: bool = False
    open_at_full: Any = None
    busy: int = 0


def _task_of(log: RaterLog, r: Any) -> str | None:
    """The assignment id of the task page ``r``, or None when the rater's study has ended: the
    completion page, the "study full" page, or an unexpected page (logged as an error)."""
    path = r.url.path
    if path.startswith("/task/"):
        return str(path.split("/")[2])
    if path.startswith("/done"):
        log.finished = True
    elif path.startswith("/full"):
        log.full = True
    else:
        log.errors.append(f"unexpected page {path} ({r.status_code})")
    return None


async def _one_rater(
    client: Any,
    pid: str,
    quiz: dict[str, str],
    double_click: bool,
    max_tasks: int,
    arrive_s: float = 0.0,
    on_full: Callable[[str], Awaitable[Any]] | None = None,
) -> RaterLog:
    log = RaterLog(pid)

    async def timed(kind: str, method: str, url: str, **kw: Any) -> Any:
        """One step (its redirects followed), timed as ``kind``; a busy answer (503, "your next task
        loads in a moment") is retried after its Retry-After, as the page does."""
        for _ in range(30):
            t0 = time.perf_counter()
            resp = await client.request(method, url, follow_redirects=True, **kw)
            log.requests.append((kind, time.perf_counter() - t0))
            if resp.status_code != 503 or resp.url.path != "/next":
                return resp
            log.busy += 1
            await asyncio.sleep(float(resp.headers.get("retry-after", "2")))
            method, url, kw = "GET", "/next", {}
        return resp

    await asyncio.sleep(arrive_s)
    r = await timed("entry", "GET", f"/start?PROLIFIC_PID={pid}&STUDY_ID=load&SESSION_ID={pid}")
    m = _CSRF.search(r.text)
    if not m:
        log.errors.append(f"no csrf on {r.url} ({r.status_code})")
        return log
    csrf = m.group(1)
    if r.url.path == "/tutorial":
        r = await timed("tutorial", "POST", "/tutorial", data={"csrf": csrf, **quiz})
    for n in range(max_tasks + 1):
        aid = _task_of(log, r)
        if aid is None:
            if log.full and on_full is not None:
                log.open_at_full = await on_full(pid)
            return log
        r = await timed("start", "POST", f"/task/{aid}/start", data={"csrf": csrf})
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
            log.requests.append(("submit", log.latencies[-1]))
            return resp

        resps = await asyncio.gather(*(submit(c) for c in comments))
        for resp in resps:
            if resp.status_code != 303:
                log.errors.append(f"submit {aid} -> {resp.status_code}")
        log.submitted[aid] = comments
        r = await timed("next", "GET", "/next")
    log.errors.append("more tasks than the quota")
    return log


async def simulate_raters(
    base_url: str | list[str],
    n_raters: int,
    *,
    quiz: dict[str, str] | None = None,
    double_click_every: int = 0,
    max_tasks: int = 1000,
    prefix: str = "load",
    arrival_s: float = 0.0,
    on_full: Callable[[str], Awaitable[Any]] | None = None,
    timeout_s: float = 120.0,
    seed: int = 0,
    keep_alive: bool = True,
) -> list[RaterLog]:
    """Run ``n_raters`` simulated raters concurrently against the server at ``base_url``.

    ``quiz`` holds the tutorial form answers (``{"q0": "1"}``); every ``double_click_every``-th
    rater submits its first task twice at once (0: never). A list of URLs spreads the raters over
    several servers of one study (rater i uses ``base_url[i % len(base_url)]``). Raters arrive
    uniformly over ``arrival_s`` seconds (0: all at once; drawn from ``seed``). ``on_full(pid)``
    is awaited as soon as a rater lands on "study full"; its result is the log's ``open_at_full``.
    A request unanswered after ``timeout_s`` ends its rater with the error logged.
    ``keep_alive=False`` opens a connection for every request: a load generator too busy to send
    its next request within the server's keep-alive time (uvicorn: 5 s) otherwise sends it on a
    connection the server is closing ("Server disconnected"), which a browser would retry.
    """
    master = random.Random(seed)
    arrivals = [master.uniform(0, arrival_s) if arrival_s > 0 else 0.0 for _ in range(n_raters)]

    def one(i: int, client: Any) -> Any:
        dbl = double_click_every > 0 and i % double_click_every == 0
        return _one_rater(client, f"{prefix}{i}", quiz or {}, dbl, max_tasks, arrivals[i], on_full)

    return await _run_raters(base_url, n_raters, prefix, 4, one, timeout_s, keep_alive)


async def _run_raters(
    base_url: str | list[str],
    n_raters: int,
    prefix: str,
    connections: int,
    one: Any,
    timeout_s: float = 120.0,
    keep_alive: bool = True,
) -> list[RaterLog]:
    """Run ``one(i, client)`` for every rater at once, each with its own HTTP client (its own
    cookies); a transport error ends that rater with the error logged."""
    import httpx

    urls = [base_url] if isinstance(base_url, str) else list(base_url)
    limits = httpx.Limits(
        max_connections=connections, max_keepalive_connections=connections if keep_alive else 0
    )
    timeout = httpx.Timeout(timeout_s)
    # one TLS context for all: httpx builds one a client by default (loading the CA bundle), which
    # for 1,000 raters took seconds of the load generator's CPU and a gigabyte of memory
    tls = ssl.create_default_context()

    async def run(i: int) -> RaterLog:
        async with httpx.AsyncClient(
            base_url=urls[i % len(urls)], limits=limits, timeout=timeout, verify=tls
        ) as client:
            try:
                return await one(i, client)
            except httpx.HTTPError as e:
                log = RaterLog(f"{prefix}{i}")
                log.errors.append(f"{type(e).__name__}: {e}")
                return log

    return list(await asyncio.gather(*(run(i) for i in range(n_raters))))


# ---------------------------------------------------------------------- paced load

#: Share of a task's time spent before "start timer" (reading the question), between "start
#: timer" and "submit" (the material and the answer), and on the feedback page.
_PHASES = (0.2, 0.75, 0.05)


def equivalent_raters(n_raters: int, time_scale: float) -> float:
    """Raters at a real pace that send the same request rate as ``n_raters`` whose think time is
    divided by ``time_scale``."""
    return n_raters * time_scale


async def _paced_rater(
    client: Any,
    pid: str,
    quiz: dict[str, str],
    rng: random.Random,
    think_s: tuple[float, float],
    time_scale: float,
    arrive_s: float,
    max_tasks: int,
) -> RaterLog:
    """One rater at a human pace: every request timed on its own (redirects followed by hand, each
    hop a request of its kind)."""
    log = RaterLog(pid)

    async def req(kind: str, method: str, url: str, **kw: Any) -> Any:
        t0 = time.perf_counter()
        resp = await client.request(method, url, **kw)
        dt = time.perf_counter() - t0
        log.requests.append((kind, dt))
        if kind == "submit":
            log.latencies.append(dt)
        return resp

    async def follow(kind: str, resp: Any) -> Any:
        """Follow 303s as a browser would; each hop is timed as ``kind`` (or ``page``)."""
        for _ in range(5):
            if resp.status_code not in (302, 303):
                return resp
            resp = await req(kind, "GET", resp.headers["location"])
        return resp

    async def think(share: float) -> None:
        await asyncio.sleep(rng.uniform(*think_s) * share / time_scale)

    await asyncio.sleep(arrive_s)
    r = await follow(
        "entry", await req("entry", "GET", f"/start?PROLIFIC_PID={pid}&STUDY_ID=paced&SESSION_ID={pid}")
    )
    m = _CSRF.search(r.text)
    if not m:
        log.errors.append(f"no csrf on {r.url} ({r.status_code})")
        return log
    csrf = m.group(1)
    if r.url.path == "/tutorial":
        await think(0.1)
        r = await follow("page", await req("tutorial", "POST", "/tutorial", data={"csrf": csrf, **quiz}))
    for _ in range(max_tasks + 1):
        aid = _task_of(log, r)
        if aid is None:
            return log
        await think(_PHASES[0])
        r = await follow("page", await req("start", "POST", f"/task/{aid}/start", data={"csrf": csrf}))
        answers, ratings = _ANSWER.findall(r.text), _RATING.findall(r.text)
        if not answers and not ratings:
            log.errors.append(f"no answer options on {r.url} ({r.status_code})")
            return log
        await think(_PHASES[1])
        comment = f"{pid}:{aid}"
        form = {"csrf": csrf, "comment": comment, "action": "submit"}
        if answers:
            form.update(answer=rng.choice(answers), probability=str(rng.randint(50, 100)))
        else:
            form.update(rating=rng.choice(ratings), confidence=str(rng.randint(1, 4)))
        resp = await req("submit", "POST", f"/task/{aid}/submit", data=form)
        if resp.status_code != 303:
            log.errors.append(f"submit {aid} -> {resp.status_code}")
            return log
        log.submitted[aid] = [comment]
        r = await follow("page", resp)  # the feedback page
        await think(_PHASES[2])
        r = await follow("page", await req("next", "GET", "/next"))
    log.errors.append("more tasks than the quota")
    return log


async def simulate_paced(
    base_url: str | list[str],
    n_raters: int,
    *,
    quiz: dict[str, str] | None = None,
    think_s: tuple[float, float] = (30.0, 120.0),
    time_scale: float = 1.0,
    arrival_s: float | None = None,
    max_tasks: int = 1000,
    prefix: str = "paced",
    seed: int = 0,
) -> list[RaterLog]:
    """Raters at a human pace against the server(s) at ``base_url``.

    Each task takes a uniform draw from ``think_s`` seconds between one submission and the next
    (split 20% reading the question, 75% with the material, 5% on the feedback page), divided by
    ``time_scale``. Raters arrive uniformly over ``arrival_s`` seconds (default: one mean task
    time, scaled), as they do when a study is published, rather than all at once.
    """
    if time_scale <= 0:
        raise ValueError(f"time_scale must be positive, not {time_scale}")
    spread = (sum(think_s) / 2) / time_scale if arrival_s is None else arrival_s
    master = random.Random(seed)
    plans = [(random.Random(master.random()), master.uniform(0, spread)) for _ in range(n_raters)]

    def one(i: int, client: Any) -> Any:
        rng, arrive = plans[i]
        return _paced_rater(client, f"{prefix}{i}", quiz or {}, rng, think_s, time_scale, arrive, max_tasks)

    return await _run_raters(base_url, n_raters, prefix, 2, one)
