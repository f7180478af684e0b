"""OpenAI and OpenAI-compatible servers (vLLM, llama.cpp server, Ollama...) over aiohttp.

One server, or a pool of replicas of one model (several base URLs): requests go to the healthy
endpoint with the fewest requests in flight, at most ``per_endpoint`` at a time on each; an
endpoint that fails (connection refused, timeout, HTTP 5xx/408/429) is taken out for a cool-down
that doubles with each consecutive failure and is tried again after it, and the request moves on
to the next endpoint. The cache key names the model and the set of URLs, never the replica that
answered.

The client is aiohttp, not the ``openai`` SDK: on a loopback server the SDK's httpx/httpcore
stack cost ~0.9 ms of CPU per request, aiohttp about a fifth of that (benchmarks/bench_models.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import weakref
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from yarl import URL

from seerbench.errors import AuthenticationError, ModelError, RequestError, UnknownModelError
from seerbench.models._backend import Backend, RetryableError
from seerbench.models._types import ChatMessage, GenerateConfig, Sample, chat_request
from seerbench.models._types import parse_completion as _parse_completion

DEFAULT_TIMEOUT = 120.0
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Requests in flight on one endpoint unless the spec says otherwise (``;per_endpoint=N``).
DEFAULT_PER_ENDPOINT = 16
#: First cool-down of a failing pool endpoint, and the longest one (doubling in between).
COOLDOWN_S = 1.0
MAX_COOLDOWN_S = 60.0


@dataclass(eq=False)
class Endpoint:
    """One replica of a pool: its URL, requests in flight, and when it may be tried again."""

    base_url: str
    chat_url: URL = field(init=False)
    in_flight: int = 0
    failures: int = 0  # consecutive
    down_until: float = 0.0  # time.monotonic(); 0 = healthy
    served: int = 0  # successful requests (for tests and `seerbench models`)

    def __post_init__(self) -> None:
        self.chat_url = URL(self.base_url.rstrip("/") + "/chat/completions")

    def healthy(self, now: float) -> bool:
        return now >= self.down_until

    def mark_failed(self, retry_after: float | None) -> None:
        self.failures += 1
        cool = min(MAX_COOLDOWN_S, COOLDOWN_S * 2 ** (self.failures - 1))
        if retry_after is not None and retry_after >= 0:
            cool = min(MAX_COOLDOWN_S, retry_after)
        self.down_until = time.monotonic() + cool

    def mark_ok(self) -> None:
        self.failures = 0
        self.down_until = 0.0
        self.served += 1


def parse_base_urls(text: str) -> tuple[list[str], int | None, float | None]:
    """``url1,url2;per_endpoint=N;timeout=S`` -> ([url1, url2], N, S) (None: not given). Refuses
    empty or duplicate URLs, unknown options and bad values, naming them."""
    urls_part, *opts = text.split(";")
    urls = [u.strip() for u in urls_part.split(",")]
    if not all(urls):
        raise UnknownModelError(f"empty base URL in {text!r}: separate the servers of a pool with commas")
    dup = sorted({u for u in urls if urls.count(u) > 1})
    if dup:
        raise UnknownModelError(f"base URL {dup[0]} is named twice in {text!r}")
    for u in urls:
        if not u.startswith(("http://", "https://")):
            raise UnknownModelError(
                f"base URL {u!r} must start with http:// or https:// (e.g. http://127.0.0.1:8000/v1)"
            )
    per: int | None = None
    timeout: float | None = None
    for opt in opts:
        k, _, v = (x.strip() for x in opt.partition("="))
        if k == "per_endpoint":
            if not v.isdigit() or int(v) < 1:
                raise UnknownModelError(
                    "per_endpoint must be a whole number >= 1 (requests "
                    f"in flight on each server), got {v!r} in {text!r}"
                )
            per = int(v)
        elif k == "timeout":
            try:
                timeout = float(v)
            except ValueError:
                timeout = -1.0
            if not 0 < timeout < float("inf"):
                raise UnknownModelError(f"timeout must be a number of seconds > 0, got {v!r} in {text!r}")
        else:
            raise UnknownModelError(
                f"unknown option {opt!r} after the base URLs in {text!r}: the options are per_endpoint=N "
                "(requests in flight on each server) and timeout=SECONDS "
                f"(connect and read, per attempt; default {DEFAULT_TIMEOUT:g})"
            )
    return urls, per, timeout


class _LoopState:
    """What belongs to one event loop: the HTTP session and the condition slot waiters sleep on."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session
        self.slot_freed = asyncio.Condition()
        self.closer: AsyncIterator[None] | None = None


class OpenAIBackend(Backend):
    """Chat completions over aiohttp, against one server or a pool of replicas.

    The key comes from ``api_key`` or ``$OPENAI_API_KEY``; the server from ``base_url`` (a URL, or
    a list of URLs for a pool) or ``$OPENAI_BASE_URL`` (default api.openai.com). Local servers
    usually accept any key. ``per_endpoint`` caps the requests in flight on each server of a pool;
    the default concurrency of the model is ``per_endpoint`` times the number of servers.
    """

    name = "openai"
    default_concurrency = DEFAULT_PER_ENDPOINT

    def __init__(
        self,
        model: str,
        *,
        base_url: str | Sequence[str] | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        per_endpoint: int | None = None,
    ) -> None:
        self._model = model
        urls = [base_url] if isinstance(base_url, str) else list(base_url or [])
        if not urls and os.environ.get("OPENAI_BASE_URL"):
            urls = [os.environ["OPENAI_BASE_URL"]]
        #: The one server's URL as given, or None for api.openai.com (kept for compatibility).
        self.base_url: str | None = urls[0] if len(urls) == 1 else None
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:  # unset, or set to an empty string
            if not urls:
                raise AuthenticationError(
                    f"no API key for openai/{model}: set OPENAI_API_KEY, or point OPENAI_BASE_URL (or "
                    f"openai/{model}@<base_url>) at an OpenAI-compatible server"
                )
            key = "not-needed"  # local OpenAI-compatible servers ignore it
        self.endpoints = [Endpoint(u) for u in (urls or [DEFAULT_BASE_URL])]
        self._urls = urls
        self.per_endpoint = per_endpoint or DEFAULT_PER_ENDPOINT
        if len(self.endpoints) > 1 or per_endpoint is not None:
            self.default_concurrency = self.per_endpoint * len(self.endpoints)
        self._headers = {
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        # Like the SDK's: connecting and each read are bounded, not the whole request (a long
        # generation that keeps sending is not cut). The pool has no size limit (the Model's
        # semaphore is the limit), so no request waits for a connection: sock_connect, which
        # arms a timer only for a new connection, bounds the same thing as the SDK's connect
        # timeout at one timer less per request.
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout)
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary()
        )
        self._last: tuple[asyncio.AbstractEventLoop, _LoopState] | None = None  # fast path
        #: The model names the server reported in its responses (a run records them: what a
        #: server serves under a name can change between runs).
        self.served: set[str] = set()

    @property
    def model_id(self) -> str:
        if not self._urls:
            return self._model
        if len(self._urls) == 1:
            return f"{self._model}@{self._urls[0]}"
        # a pool: the set of replicas, whichever order they were named in and whichever answered
        return f"{self._model}@{','.join(sorted(self._urls))}"

    # -- per-loop state ------------------------------------------------------------------------
    async def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        last = self._last
        if last is not None and last[0] is loop and not last[1].session.closed:
            return last[1]
        st = self._loops.get(loop)
        if st is not None and not st.session.closed:
            self._last = (loop, st)
            return st
        connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)  # concurrency is the Model's
        st = self._loops[loop] = _LoopState(
            aiohttp.ClientSession(
                connector=connector,
                timeout=self._timeout,
                headers=self._headers,
                skip_auto_headers=("User-Agent",),
                raise_for_status=False,
                cookie_jar=aiohttp.DummyCookieJar(),
            )  # an API client keeps no cookies
        )
        # Closed with its loop: asyncio.run() (and pytest's loops) close every open async
        # generator before closing the loop, which runs this one's ``finally``.
        st.closer = _close_with_loop(st.session)
        await st.closer.__anext__()
        self._last = (loop, st)
        return st

    # -- choosing an endpoint ------------------------------------------------------------------
    def _pick(self, tried: set[int]) -> Endpoint | None:
        """The healthy endpoint with the fewest requests in flight and a free slot; None if all
        healthy untried ones are full. When every untried endpoint is down, the one back soonest
        (so a pool that is all down is still probed, and the retry loop's backoff applies)."""
        now = time.monotonic()
        untried = [e for e in self.endpoints if id(e) not in tried]
        if not untried:
            return None
        healthy = [e for e in untried if e.healthy(now)]
        if healthy:
            free = [e for e in healthy if e.in_flight < self.per_endpoint]
            return min(free, key=lambda e: e.in_flight) if free else None
        soonest = min(untried, key=lambda e: e.down_until)
        return soonest if soonest.in_flight < self.per_endpoint else None

    async def complete(
        self, messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None
    ) -> Sample:
        body = json.dumps(chat_request(self._model, messages, config, seed)).encode()
        st = await self._state()
        if len(self.endpoints) == 1:  # one server: the Model's concurrency limit is its limit
            return await self._post(st, self.endpoints[0], body, config)
        tried: set[int] = set()
        last: RetryableError | None = None
        failures: list[str] = []  # each server's error, for the message when every one failed
        while True:
            async with st.slot_freed:
                ep = self._pick(tried)
                while ep is None:
                    if len(tried) == len(self.endpoints):
                        assert last is not None
                        raise RetryableError(
                            f"all {len(self.endpoints)} servers of the pool failed: " + "; ".join(failures),
                            retry_after=last.retry_after,
                        ) from last
                    await st.slot_freed.wait()
                    ep = self._pick(tried)
                ep.in_flight += 1
            try:
                sample = await self._post(st, ep, body, config)
                ep.mark_ok()
                return sample
            except RetryableError as e:
                ep.mark_failed(e.retry_after)
                tried.add(id(ep))
                last = e
                failures.append(str(e).rstrip("."))
            finally:
                ep.in_flight -= 1
                async with st.slot_freed:
                    st.slot_freed.notify_all()

    async def _post(self, st: _LoopState, ep: Endpoint, body: bytes, config: GenerateConfig) -> Sample:
        where = ep.base_url if self._urls else "api.openai.com"
        try:
            async with st.session.post(ep.chat_url, data=body) as resp:
                raw = await resp.read()
                status = resp.status
                retry_after = resp.headers.get("Retry-After")
        except TimeoutError as e:
            raise RetryableError(f"request to {where} timed out") from e
        except aiohttp.ClientError as e:
            # connection refused or reset, a broken response: the SDK said "Connection error."
            raise RetryableError(f"cannot connect to {where}: Connection error.") from e
        if status >= 400:
            _raise_for_status(status, raw, where, self._model, retry_after)
        try:
            r = json.loads(raw)
        except ValueError as e:  # not JSON
            raise RetryableError(f"{where} sent a malformed response: {e}") from e
        if isinstance(r, dict) and "error" in r and "choices" not in r:
            # HTTP 200 with an error body (some servers and proxies): a server failure, like a 5xx
            message = _error_message(status, raw).partition(" - ")[2] or "no message"
            raise RetryableError(f"{where} answered HTTP 200 with an error body: {message}")
        if isinstance(r, dict) and isinstance(r.get("model"), str):
            self.served.add(r["model"])
        return _parse_completion(r, config, where)

    async def aclose(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        st = self._loops.pop(loop, None)
        self._last = None
        if st is not None:
            await st.session.close()


async def _close_with_loop(session: aiohttp.ClientSession) -> AsyncIterator[None]:
    try:
        yield
        await asyncio.Event().wait()  # pragma: no cover - never resumed
    finally:
        if not session.closed:
            await session.close()


def _error_message(status: int, raw: bytes) -> str:
    """The server's error as the SDK worded it: ``Error code: N - <error.message>``."""
    msg = f"Error code: {status}"
    try:
        body = json.loads(raw)
    except ValueError:
        return msg
    error = body.get("error", body) if isinstance(body, dict) else None
    text = error.get("message") if isinstance(error, dict) else None
    return f"{msg} - {text}" if isinstance(text, str) and text else msg


def _raise_for_status(status: int, raw: bytes, where: str, model: str, retry_after: str | None) -> None:
    message = _error_message(status, raw)
    if status == 401:
        raise AuthenticationError(f"{where} refused the API key (HTTP 401): check OPENAI_API_KEY")
    if status == 403:
        raise AuthenticationError(f"{where} denied access (HTTP 403): {message}")
    if status == 429:
        raise RetryableError(f"rate limited by {where} (HTTP 429)", retry_after=_seconds(retry_after))
    if status >= 500 or status == 408:
        raise RetryableError(f"{where} answered HTTP {status}")
    if status == 404:
        raise ModelError(f"{where} has no model {model!r} (HTTP 404): {message}")
    if status in (400, 413):  # this request's fault (too long for the context, ...): its question fails
        raise RequestError(f"{where} rejected the request (HTTP {status}): {message}")
    raise ModelError(f"{where} rejected the request (HTTP {status}): {message}")


def _seconds(v: str | None) -> float | None:
    """A Retry-After header in seconds (an HTTP date is not read: the backoff applies instead)."""
    try:
        return float(v) if v is not None else None
    except ValueError:
        return None


def _retry_after(e: Any) -> float | None:
    """The Retry-After of an SDK error that carries its HTTP response (LiteLLM's, OpenAI's)."""
    try:
        return _seconds(e.response.headers.get("retry-after"))
    except AttributeError:
        return None
