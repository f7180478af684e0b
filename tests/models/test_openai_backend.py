"""The OpenAI-compatible backend against a real HTTP server on 127.0.0.1 (seerbench.testing)."""

from __future__ import annotations

import math
import socket

import pytest

from seerbench.errors import AuthenticationError, ModelError, ModelUnavailableError
from seerbench.models import ElicitConfig, Model, PriceTable, RetryPolicy, UsageTracker, elicit, get_model
from seerbench.models._openai import OpenAIBackend
from seerbench.testing import FakeOpenAIServer
from tests.models.conftest import FAST_RETRY


def _model(
    srv: FakeOpenAIServer,
    *,
    key: str | None = None,
    model: str = "fake-model",
    retry: RetryPolicy = FAST_RETRY,
    cache: bool = False,
) -> Model:
    backend = OpenAIBackend(model, base_url=srv.base_url, api_key=key or srv.api_key)
    return Model(f"openai/{model}", backend, cache=cache, retry=retry, usage=UsageTracker(PriceTable()))


async def test_plain_answer_and_wire_format(fake_server: FakeOpenAIServer) -> None:
    fake_server.reply = "B is my answer"
    m = _model(fake_server)
    out = await m.generate(
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "which one?"}],
        max_tokens=7,
        temperature=0.5,
        stop=["\n"],
        seed=3,
    )
    assert out.text == "B is my answer"
    assert out.samples[0].logprobs is None  # not asked for
    assert out.usage.prompt_tokens == 4  # "be brief" + "which one?" counted by the fake: 2 + 2 words
    assert out.usage.completion_tokens == 4
    assert not out.cached
    (req,) = fake_server.requests
    body = req["body"]
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["authorization"] == "Bearer test-key"
    assert body["model"] == "fake-model"
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "which one?"},
    ]
    assert body["max_tokens"] == 7 and body["temperature"] == 0.5 and body["stop"] == ["\n"]
    # sample 0 of base seed 3 is sent with the derived seed, not the base seed
    assert body["seed"] == (3 * 1_000_003) % (2**31 - 1)
    assert "logprobs" not in body
    await m.aclose()


async def test_logprobs_are_parsed_and_elicitation_renormalises(fake_server: FakeOpenAIServer) -> None:
    m = _model(fake_server)
    out = await m.generate("q", max_tokens=1, logprobs=True, top_logprobs=3)
    (tok,) = out.samples[0].logprobs or []
    assert tok.token == "A" and tok.logprob == -1.0
    assert [(t.token, t.logprob) for t in tok.top] == [("A", -1.0), ("B", -2.0), ("C", -4.0)]
    assert fake_server.requests[-1]["body"]["top_logprobs"] == 3

    verdict = await elicit(m, "Which? A) x B) y", ["A", "B"], ElicitConfig(order=("logprobs",)))
    # p_A = e^-1 / (e^-1 + e^-2) = 1 / (1 + e^-1)
    assert verdict.ok and verdict.method == "logprobs"
    assert verdict.prob("A") == pytest.approx(1 / (1 + math.exp(-1)), abs=1e-12)
    assert verdict.prob("A") == pytest.approx(0.7310585786, abs=1e-9)
    assert verdict.prob("B") == pytest.approx(1 - 0.7310585786, abs=1e-9)
    assert fake_server.requests[-1]["body"]["top_logprobs"] == 20

    three = await elicit(m, "Which? A) x B) y C) z", ["A", "B", "C"], ElicitConfig(order=("logprobs",)))
    z = math.exp(-1) + math.exp(-2) + math.exp(-4)
    assert three.probabilities == pytest.approx(
        {"A": math.exp(-1) / z, "B": math.exp(-2) / z, "C": math.exp(-4) / z}
    )
    await m.aclose()


async def test_option_missing_from_top_logprobs_falls_back_to_verbalized(
    fake_server: FakeOpenAIServer,
) -> None:
    # the server knows no logprob for "D": the logprobs method must fail, not invent a number
    fake_server.reply = "0.25"
    m = _model(fake_server)
    v = await elicit(m, "Which? A) x D) y", ["A", "D"])
    assert v.ok and v.method == "verbalized"
    assert v.probabilities == pytest.approx({"A": 0.25, "D": 0.75})
    attempts = v.metadata["attempts"]
    assert [a["method"] for a in attempts] == ["logprobs", "verbalized"]
    assert "D" in attempts[0]["error"]
    await m.aclose()


async def test_429_then_success_is_retried_and_counted(fake_server: FakeOpenAIServer) -> None:
    m = _model(fake_server)
    fake_server.fail_next(429, retry_after=0)
    out = await m.generate("hello")
    assert out.text == "A"
    assert fake_server.request_count == 2
    u = m.usage.by_model["openai/fake-model"]
    assert (u.calls, u.retries, u.errors) == (1, 1, 0)
    await m.aclose()


async def test_503_twice_then_success(fake_server: FakeOpenAIServer) -> None:
    m = _model(fake_server)
    fake_server.fail_next(503, times=2)
    assert (await m.generate("hello")).text == "A"
    assert fake_server.request_count == 3
    assert m.usage.by_model["openai/fake-model"].retries == 2
    await m.aclose()


async def test_500_storm_gives_up_with_a_clear_error(fake_server: FakeOpenAIServer) -> None:
    m = _model(fake_server, retry=RetryPolicy(max_attempts=4, base_delay=0.001, max_delay=0.002))
    fake_server.fail_next(500, times=100)
    with pytest.raises(ModelUnavailableError) as ei:
        await m.generate("hello")
    msg = str(ei.value)
    assert "after 4 attempts" in msg and "HTTP 500" in msg and fake_server.base_url in msg
    assert fake_server.request_count == 4
    u = m.usage.by_model["openai/fake-model"]
    assert (u.calls, u.retries, u.errors) == (0, 3, 1)
    await m.aclose()


async def test_wrong_key_fails_at_once_without_retry(fake_server: FakeOpenAIServer) -> None:
    m = _model(fake_server, key="wrong-key")
    with pytest.raises(AuthenticationError) as ei:
        await m.generate("hello")
    assert "401" in str(ei.value) and "API key" in str(ei.value)
    assert fake_server.request_count == 1
    assert m.usage.by_model["openai/fake-model"].retries == 0
    await m.aclose()


async def test_unknown_model_is_a_model_error_without_retry(fake_server: FakeOpenAIServer) -> None:
    m = _model(fake_server, model="no-such-model")
    with pytest.raises(ModelError) as ei:
        await m.generate("hello")
    assert not isinstance(ei.value, ModelUnavailableError)
    assert "no-such-model" in str(ei.value) and "404" in str(ei.value)
    assert fake_server.request_count == 1
    await m.aclose()


async def test_bad_request_is_not_retried(fake_server: FakeOpenAIServer) -> None:
    m = _model(fake_server)
    fake_server.fail_next(400, message="max_tokens is too large")
    with pytest.raises(ModelError, match=r"HTTP 400.*max_tokens is too large"):
        await m.generate("hello")
    assert fake_server.request_count == 1
    await m.aclose()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_unreachable_server_gives_up_after_retries() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    m = Model(
        "openai/x",
        OpenAIBackend("x", base_url=url, api_key="k"),
        cache=False,
        retry=FAST_RETRY,
        usage=UsageTracker(PriceTable()),
    )
    with pytest.raises(ModelUnavailableError, match=r"after 3 attempts.*cannot connect"):
        await m.generate("hello")
    assert m.usage.by_model["openai/x"].retries == 2
    await m.aclose()


async def test_spec_with_base_url_and_cache(fake_server: FakeOpenAIServer) -> None:
    """The spec form openai/<model>@<base_url> reaches the server; a repeat comes from the cache."""
    m = get_model(f"openai/fake-model@{fake_server.base_url}", api_key="test-key", retry=FAST_RETRY)
    first = await m.generate("cache me")
    second = await m.generate("cache me")
    assert first.text == second.text == "A"
    assert not first.cached and second.cached
    assert fake_server.request_count == 1


def test_no_key_and_no_base_url_is_an_authentication_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
        OpenAIBackend("gpt-4o-mini")


async def test_asyncio_front_end_of_the_fake_server() -> None:
    """The benchmark serves from an asyncio loop: same answers and errors as the threaded server."""
    import asyncio

    srv = FakeOpenAIServer(reply="B", top_logprobs={"A": -2.0, "B": -1.0})
    task = asyncio.create_task(srv.serve_asyncio())
    try:
        m = _model(srv)
        outs = await asyncio.gather(
            *(m.generate(f"q{i}", max_tokens=1, logprobs=True, top_logprobs=2) for i in range(5))
        )
        assert [o.text for o in outs] == ["B"] * 5
        assert outs[0].samples[0].logprobs is not None and outs[0].samples[0].logprobs[0].logprob == -1.0
        srv.fail_next(429)
        assert (await m.generate("retry me")).text == "B"
        bad = _model(srv, key="bad")
        with pytest.raises(AuthenticationError):
            await bad.generate("x")
        assert srv.request_count == 5 + 2 + 1
        await m.aclose()
        await bad.aclose()
    finally:
        task.cancel()
        srv.stop()


def test_the_http_session_closes_with_its_event_loop(fake_server: FakeOpenAIServer) -> None:
    """The CLI runs several event loops in turn on one shared backend (probe, then the run) and
    never calls aclose: each loop's session must be closed when asyncio.run ends that loop."""
    import asyncio

    backend = OpenAIBackend("fake-model", base_url=fake_server.base_url, api_key=fake_server.api_key)
    m = Model("openai/fake-model", backend, cache=False, retry=FAST_RETRY, usage=UsageTracker(PriceTable()))
    assert asyncio.run(m.generate("first loop")).text == "A"
    assert backend._last is not None
    first = backend._last[1].session
    assert first.closed  # closed by asyncio.run's shutdown of async generators
    assert asyncio.run(m.generate("second loop")).text == "A"  # a new session on the new loop
    assert backend._last[1].session is not first and backend._last[1].session.closed
    assert fake_server.request_count == 2


async def test_a_server_slower_than_the_timeout_is_retried_then_reported() -> None:
    """The read timeout: a server that takes 1 s against a 0.2 s timeout times out on every
    attempt, and the error says so."""
    srv = FakeOpenAIServer(reply="A", delay=1.0).start()
    try:
        backend = OpenAIBackend("fake-model", base_url=srv.base_url, api_key=srv.api_key, timeout=0.2)
        m = Model(
            "openai/fake-model", backend, cache=False, retry=FAST_RETRY, usage=UsageTracker(PriceTable())
        )
        with pytest.raises(ModelUnavailableError, match=r"after 3 attempts.*timed out"):
            await m.generate("slow")
        assert srv.request_count == 3
        assert m.usage.by_model["openai/fake-model"].retries == 2
        await m.aclose()
    finally:
        srv.stop()
