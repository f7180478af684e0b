"""Pools of OpenAI-compatible servers (issue 15.2), against several real HTTP servers on 127.0.0.1:
balancing, the per-endpoint limit, failover from a dead or failing replica, its return after the
cool-down, and one cache key whichever replica answered."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seerbench.errors import AuthenticationError, ModelUnavailableError, UnknownModelError
from seerbench.models import Cache, Model, PriceTable, RetryPolicy, UsageTracker, make_backend
from seerbench.models import _openai as openai_mod
from seerbench.models._cache import cache_key
from seerbench.models._openai import OpenAIBackend, parse_base_urls
from seerbench.models._types import ChatMessage, GenerateConfig
from seerbench.testing import FakeOpenAIServer
from tests.models.conftest import FAST_RETRY


class _Gauge:
    """Counts the requests a server is answering at once (the reply function runs in the
    server's handler thread and holds the request for ``hold`` seconds)."""

    def __init__(self, hold: float, text: str) -> None:
        self.hold, self.text = hold, text
        self.now = self.peak = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(self.hold)
        with self.lock:
            self.now -= 1
        return self.text


@pytest.fixture
def servers() -> Iterator[list[FakeOpenAIServer]]:
    """Three replicas; replica i answers its own name so a test sees who answered."""
    srvs = [FakeOpenAIServer(reply=f"r{i}", api_key=None).start() for i in range(3)]
    yield srvs
    for s in srvs:
        s.stop()


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"  # nothing listens once closed


def _pool(
    urls: list[str], *, per_endpoint: int = 4, retry: RetryPolicy = FAST_RETRY, cache: Cache | bool = False
) -> Model:
    backend = OpenAIBackend("fake-model", base_url=urls, per_endpoint=per_endpoint)
    return Model("openai/fake-model", backend, cache=cache, retry=retry, usage=UsageTracker(PriceTable()))


async def test_requests_are_balanced_and_each_endpoint_keeps_its_limit(
    servers: list[FakeOpenAIServer],
) -> None:
    gauges = [_Gauge(0.05, f"r{i}") for i in range(3)]
    for s, g in zip(servers, gauges, strict=True):
        s.reply = g
    m = _pool([s.base_url for s in servers], per_endpoint=2)
    assert m.max_concurrency == 6  # 2 per endpoint x 3 endpoints
    outs = await asyncio.gather(*(m.generate(f"q{i}") for i in range(30)))
    counts = [s.request_count for s in servers]
    assert sum(counts) == 30 and [o.text for o in outs].count("r0") == counts[0]
    # 6 in flight over 3 endpoints with 2 slots each: every endpoint is used, none past its limit
    assert all(g.peak <= 2 for g in gauges)
    assert all(c >= 6 for c in counts), counts
    await m.aclose()


async def test_more_concurrency_than_slots_waits_for_a_slot(servers: list[FakeOpenAIServer]) -> None:
    gauges = [_Gauge(0.03, f"r{i}") for i in range(2)]
    for s, g in zip(servers[:2], gauges, strict=True):
        s.reply = g
    backend = OpenAIBackend("fake-model", base_url=[s.base_url for s in servers[:2]], per_endpoint=1)
    m = Model(
        "openai/fake-model",
        backend,
        cache=False,
        max_concurrency=8,
        retry=FAST_RETRY,
        usage=UsageTracker(PriceTable()),
    )  # the model allows 8, the pool 2
    await asyncio.gather(*(m.generate(f"q{i}") for i in range(10)))
    assert [g.peak for g in gauges] == [1, 1]
    assert servers[0].request_count + servers[1].request_count == 10
    await m.aclose()


async def test_a_dead_endpoint_is_taken_out_and_requests_fail_over(servers: list[FakeOpenAIServer]) -> None:
    dead = _dead_url()
    m = _pool([dead, servers[0].base_url, servers[1].base_url])
    outs = await asyncio.gather(*(m.generate(f"q{i}") for i in range(20)))
    assert {o.text for o in outs} <= {"r0", "r1"} and len(outs) == 20
    assert servers[0].request_count + servers[1].request_count == 20
    ep = {e.base_url: e for e in m.backend.endpoints}  # type: ignore[attr-defined]
    assert ep[dead].failures >= 1 and ep[dead].served == 0
    assert ep[dead].down_until > time.monotonic()  # out for its cool-down
    # a failover is not a retry of the call: the retry loop never ran
    assert m.usage.by_model["openai/fake-model"].retries == 0
    await m.aclose()


async def test_a_replica_answering_500_is_taken_out_then_tried_again_after_the_cool_down(
    servers: list[FakeOpenAIServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openai_mod, "COOLDOWN_S", 0.2)
    bad, good = servers[0], servers[1]
    bad.fail_next(500, times=1000)
    m = _pool([bad.base_url, good.base_url], per_endpoint=1)
    for i in range(10):  # one at a time: the least-loaded rule alone would alternate
        assert (await m.generate(f"q{i}")).text == "r1"
    assert bad.request_count == 1  # tried once, then out for the cool-down
    assert good.request_count == 10
    # the replica recovers; after its cool-down it is tried again and serves again
    bad._failures.clear()
    await asyncio.sleep(0.25)
    texts = [(await m.generate(f"later {i}")).text for i in range(4)]
    assert "r0" in texts
    ep = m.backend.endpoints[0]  # type: ignore[attr-defined]
    assert ep.failures == 0 and ep.served >= 1
    await m.aclose()


async def test_cool_down_doubles_while_an_endpoint_keeps_failing_and_honours_retry_after() -> None:
    ep = openai_mod.Endpoint("http://127.0.0.1:1/v1")
    t0 = time.monotonic()
    ep.mark_failed(None)
    assert ep.down_until - t0 == pytest.approx(openai_mod.COOLDOWN_S, abs=0.05)
    ep.mark_failed(None)
    ep.mark_failed(None)
    assert ep.down_until - t0 == pytest.approx(4 * openai_mod.COOLDOWN_S, abs=0.05)
    for _ in range(20):
        ep.mark_failed(None)
    assert ep.down_until - t0 == pytest.approx(openai_mod.MAX_COOLDOWN_S, abs=0.05)
    ep.mark_failed(7.0)  # a 429's Retry-After decides the wait
    assert ep.down_until - t0 == pytest.approx(7.0, abs=0.05)
    ep.mark_ok()
    assert ep.failures == 0 and ep.healthy(time.monotonic())


async def test_every_endpoint_failing_gives_up_with_a_clear_error(servers: list[FakeOpenAIServer]) -> None:
    dead1, dead2 = _dead_url(), _dead_url()
    m = _pool([dead1, dead2], retry=RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.002))
    with pytest.raises(ModelUnavailableError) as e:
        await m.generate("anyone?")
    # every server named (the message named the last one tried only)
    assert "after 3 attempts: all 2 servers of the pool failed: " in str(e.value)
    assert f"cannot connect to {dead1}: Connection error" in str(
        e.value
    ) and f"cannot connect to {dead2}: Connection error" in str(e.value)
    u = m.usage.by_model["openai/fake-model"]
    assert (u.calls, u.retries, u.errors) == (0, 2, 1)
    await m.aclose()


async def test_a_rejected_key_is_not_failed_over(servers: list[FakeOpenAIServer]) -> None:
    servers[0].api_key = "needs-this"
    m = _pool([servers[0].base_url, servers[1].base_url], per_endpoint=1)
    # the first request goes to the first endpoint (both idle): a 401 there is the user's error
    with pytest.raises(AuthenticationError, match="401"):
        await m.generate("hello")
    assert servers[1].request_count == 0
    await m.aclose()


async def test_cache_key_is_the_same_whichever_replica_answered(
    servers: list[FakeOpenAIServer], tmp_path: Path
) -> None:
    a, b = servers[0].base_url, servers[1].base_url
    cache = Cache(tmp_path / "c.sqlite")
    first = _pool([a, b], cache=cache)
    out = await first.generate("cache me")
    assert not out.cached and out.text in {"r0", "r1"}
    # the same pool named in the other order: a hit, whoever answered first
    again = _pool([b, a], cache=cache)
    hit = await again.generate("cache me")
    assert hit.cached and hit.text == out.text
    assert servers[0].request_count + servers[1].request_count == 1
    # the key, worked out from its parts: the model and the sorted set of URLs
    msgs = [ChatMessage(role="user", content="cache me")]
    cfg = GenerateConfig()
    expected = cache_key("openai", f"fake-model@{','.join(sorted([a, b]))}", msgs, cfg, 0)
    assert cache_key("openai", first.backend.model_id, msgs, cfg, 0) == expected
    # another set of servers is another key (they may serve another model under the same name)
    other = _pool([a, servers[2].base_url], cache=cache)
    assert (await other.generate("cache me")).cached is False
    for m in (first, again, other):
        await m.aclose()
    cache.close()


def test_pool_spec_strings() -> None:
    b = make_backend("openai/llama@http://h1:8000/v1,http://h2:8000/v1;per_endpoint=8")
    assert isinstance(b, OpenAIBackend)
    assert [e.base_url for e in b.endpoints] == ["http://h1:8000/v1", "http://h2:8000/v1"]
    assert b.per_endpoint == 8 and b.default_concurrency == 16
    assert b.model_id == "llama@http://h1:8000/v1,http://h2:8000/v1"
    one = make_backend("openai/llama@http://h1:8000/v1")
    assert isinstance(one, OpenAIBackend) and one.model_id == "llama@http://h1:8000/v1"  # as before pools
    assert one.base_url == "http://h1:8000/v1" and one.default_concurrency == 16
    assert parse_base_urls(" http://a/v1 , http://b/v1 ") == (["http://a/v1", "http://b/v1"], None, None)
    assert parse_base_urls("http://a/v1;timeout=2.5;per_endpoint=3") == (["http://a/v1"], 3, 2.5)
    slow = make_backend("openai/m@http://a/v1;timeout=7")
    assert (
        isinstance(slow, OpenAIBackend)
        and slow._timeout.sock_read == 7.0
        and slow._timeout.sock_connect == 7.0
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("openai/m@http://a/v1,,http://b/v1", "empty base URL"),
        ("openai/m@http://a/v1,http://a/v1", "named twice"),
        ("openai/m@a:8000/v1", "must start with http://"),
        (
            "openai/m@http://a/v1;per_endpoint=0",
            "per_endpoint must be a whole number >= 1 (requests in flight on each server), got '0'",
        ),
        ("openai/m@http://a/v1;timeout=0", "timeout must be a number of seconds > 0, got '0'"),
        ("openai/m@http://a/v1;timeout=soon", "timeout must be a number of seconds > 0, got 'soon'"),
        ("openai/m@http://a/v1;concurrency=4", "unknown option 'concurrency=4' after the base URLs"),
    ],
)
def test_bad_pool_specs_are_refused_naming_the_problem(spec: str, message: str) -> None:
    with pytest.raises(UnknownModelError) as e:
        make_backend(spec)
    assert message in str(e.value)
