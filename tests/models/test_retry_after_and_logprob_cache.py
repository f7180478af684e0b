"""Retry-After is obeyed, and option log probabilities are cached (issue 12: both could be broken
with every test green). No test waits: the retry sleep is recorded, not slept."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from seerbench.models import (
    Cache,
    ChatMessage,
    GenerateConfig,
    Model,
    PriceTable,
    RetryPolicy,
    Sample,
    UsageTracker,
    _retry,
)
from seerbench.models._backend import Backend, RetryableError
from seerbench.models._openai import OpenAIBackend
from seerbench.models._types import Usage
from seerbench.testing import FakeOpenAIServer


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The delays with_retries asks to sleep, recorded; the sleep itself takes no time."""
    real_sleep = asyncio.sleep
    delays: list[float] = []

    async def fake_sleep(delay: float) -> None:
        delays.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(_retry.asyncio, "sleep", fake_sleep)
    return delays


def test_retry_policy_delay_uses_retry_after_capped_at_max_delay() -> None:
    p = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=10.0)
    rng = random.Random(0)
    assert p.delay(1, rng, 2.5) == 2.5  # the server's value, not jitter in [0, 0.001]
    assert p.delay(4, rng, 2.5) == 2.5  # whatever the attempt
    assert p.delay(1, rng, 60.0) == 10.0  # never longer than max_delay
    assert 0.0 <= p.delay(1, rng, None) <= 0.001  # without one: full jitter up to base_delay


async def test_retry_after_header_sets_the_wait(slept: list[float]) -> None:
    # A real HTTP 429 with "Retry-After: 2.5" from the fake server: the backend must read the header
    # and the retry loop must wait 2.5 s (base_delay is 0.001, so jitter alone would wait <= 0.001).
    with FakeOpenAIServer(reply="A") as srv:
        backend = OpenAIBackend("fake-model", base_url=srv.base_url, api_key=srv.api_key)
        retry = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=10.0)
        m = Model("openai/fake-model", backend, cache=False, retry=retry, usage=UsageTracker(PriceTable()))
        srv.fail_next(429, retry_after=2.5)
        out = await m.generate("hello")
        await m.aclose()
    assert out.text == "A"
    assert slept == [2.5]


async def test_retryable_error_retry_after_reaches_the_sleep(slept: list[float]) -> None:
    calls = 0

    async def flaky() -> str:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise RetryableError("busy", retry_after=1.25 * calls)
        return "ok"

    got = await _retry.with_retries(
        flaky, RetryPolicy(max_attempts=5, base_delay=0.001, max_delay=30.0), what="t"
    )
    assert got == "ok" and calls == 3
    assert slept == [1.25, 2.5]


class _OptionBackend(Backend):
    """Knows the exact option log probabilities; counts how often it is asked."""

    name = "optfake"

    def __init__(self) -> None:
        self.option_calls = 0

    @property
    def model_id(self) -> str:
        return "optfake-1"

    async def complete(
        self, messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None
    ) -> Sample:
        raise AssertionError("option_logprobs must not fall back to sampling here")

    async def option_logprobs(
        self, messages: Sequence[ChatMessage], options: Sequence[str]
    ) -> tuple[dict[str, float], Usage] | None:
        self.option_calls += 1
        # -0.5, -1.5, -2.5, ... in option order
        return {o: -0.5 - i for i, o in enumerate(options)}, Usage(prompt_tokens=7, completion_tokens=0)


async def test_option_logprobs_are_cached(tmp_path: Path) -> None:
    backend = _OptionBackend()
    usage = UsageTracker(PriceTable())
    m = Model("optfake", backend, cache=Cache(tmp_path / "c.sqlite"), usage=usage)
    first = await m.option_logprobs("Which? A) x B) y", ["A", "B"])
    assert first == ({"A": -0.5, "B": -1.5}, False)
    assert backend.option_calls == 1
    again = await m.option_logprobs("Which? A) x B) y", ["A", "B"])
    assert again == ({"A": -0.5, "B": -1.5}, True)  # a hit: same values, flagged cached
    assert backend.option_calls == 1  # and no backend call
    u = usage.by_model["optfake"]
    assert (u.calls, u.cache_hits) == (1, 1)
    # the key holds the options and the messages: other options or another prompt is a new call
    assert await m.option_logprobs("Which? A) x B) y", ["A", "B", "C"]) == (
        {"A": -0.5, "B": -1.5, "C": -2.5},
        False,
    )
    assert await m.option_logprobs("Which now? A) x B) y", ["A", "B"]) == ({"A": -0.5, "B": -1.5}, False)
    assert backend.option_calls == 3
    # a new Model on the same cache file (a later run) hits too
    m2 = Model("optfake", backend, cache=Cache(tmp_path / "c.sqlite"), usage=UsageTracker(PriceTable()))
    assert await m2.option_logprobs("Which? A) x B) y", ["A", "B"]) == ({"A": -0.5, "B": -1.5}, True)
    assert backend.option_calls == 3
    # cache=False asks every time
    m3 = Model("optfake", backend, cache=False, usage=UsageTracker(PriceTable()))
    await m3.option_logprobs("Which? A) x B) y", ["A", "B"])
    await m3.option_logprobs("Which? A) x B) y", ["A", "B"])
    assert backend.option_calls == 5


async def test_giving_up_names_the_last_error_once() -> None:
    from seerbench.errors import ModelUnavailableError
    from seerbench.models._retry import RetryPolicy, with_retries

    async def down() -> None:
        raise RetryableError("cannot connect to http://127.0.0.1:9: Connection error.")

    with pytest.raises(ModelUnavailableError) as e:
        await with_retries(down, RetryPolicy(max_attempts=2, base_delay=0.0), what="openai/m")
    assert str(e.value) == (
        "openai/m still failing after 2 attempts: cannot connect to http://127.0.0.1:9: Connection error. "
        "Check that the server is running and reachable, or retry later."
    )
