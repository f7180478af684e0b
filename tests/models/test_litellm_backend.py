"""The LiteLLM backend's ``complete()``: request and response conversion and error mapping, through a
fake ``litellm`` module put in ``sys.modules`` (litellm itself is an optional extra). The backend's
own code runs unchanged; only ``litellm.acompletion`` and the exception classes are fakes."""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace
from typing import Any

import pytest

from seerbench.errors import AuthenticationError, ModelError, ModelUnavailableError
from seerbench.models import GenerateConfig, Model, PriceTable, RetryPolicy, UsageTracker
from seerbench.models._backend import RetryableError
from seerbench.models._litellm import LiteLLMBackend


class _Token:
    """Like litellm's token-logprob objects: attributes plus ``model_dump``."""

    def __init__(self, token: str, logprob: float, top: list[tuple[str, float]]) -> None:
        self.token, self.logprob, self.top = token, logprob, top

    def model_dump(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "logprob": self.logprob,
            "top_logprobs": [{"token": t, "logprob": lp} for t, lp in self.top],
        }


class _FakeLiteLLM(types.ModuleType):
    def __init__(self) -> None:
        super().__init__("litellm")
        self.requests: list[dict[str, Any]] = []
        self.fail_with: list[Exception] = []
        for name in (
            "AuthenticationError",
            "RateLimitError",
            "Timeout",
            "APIConnectionError",
            "ServiceUnavailableError",
            "InternalServerError",
            "NotFoundError",
            "BadRequestError",
        ):
            setattr(self, name, type(name, (Exception,), {}))

    async def acompletion(self, **kw: Any) -> Any:
        self.requests.append(kw)
        if self.fail_with:
            raise self.fail_with.pop(0)
        logprobs = None
        if kw.get("logprobs"):
            logprobs = SimpleNamespace(content=[_Token("B", -0.25, [("B", -0.25), ("A", -1.5)])])
        return SimpleNamespace(
            choices=[
                SimpleNamespace(
                    message=SimpleNamespace(content="B"), finish_reason="length", logprobs=logprobs
                )
            ],
            usage=SimpleNamespace(prompt_tokens=12, completion_tokens=1),
        )


@pytest.fixture
def fake_litellm(monkeypatch: pytest.MonkeyPatch) -> _FakeLiteLLM:
    fake = _FakeLiteLLM()
    monkeypatch.setitem(sys.modules, "litellm", fake)
    return fake


def _model(retry: RetryPolicy | None = None) -> Model:
    return Model(
        "litellm/anthropic/claude-x",
        LiteLLMBackend("anthropic/claude-x"),
        cache=False,
        retry=retry or RetryPolicy(max_attempts=2, base_delay=0.0, max_delay=0.0),
        usage=UsageTracker(PriceTable()),
    )


async def test_request_and_response_conversion(fake_litellm: _FakeLiteLLM) -> None:
    m = _model()
    cfg = GenerateConfig(max_tokens=5, temperature=0.3, stop=["\n"], logprobs=True, top_logprobs=2, seed=7)
    out = await m.generate(
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "A or B?"}], cfg
    )
    (req,) = fake_litellm.requests
    assert req["model"] == "anthropic/claude-x"  # the provider/model part of the spec
    assert req["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "A or B?"},
    ]
    assert (req["max_tokens"], req["temperature"], req["stop"], req["n"]) == (5, 0.3, ["\n"], 1)
    assert req["logprobs"] is True and req["top_logprobs"] == 2
    assert req["seed"] == 7 * 1_000_003  # sample 0 of base seed 7: (7 * 1000003 + 0 * 7919) mod (2^31 - 1)
    assert req["num_retries"] == 0  # seerbench retries, LiteLLM must not retry on top
    s = out.samples[0]
    assert s.text == "B" and s.finish_reason == "length"
    assert (s.usage.prompt_tokens, s.usage.completion_tokens) == (12, 1)
    assert s.logprobs is not None and len(s.logprobs) == 1
    tok = s.logprobs[0]
    assert (tok.token, tok.logprob) == ("B", -0.25)
    assert [(t.token, t.logprob) for t in tok.top] == [("B", -0.25), ("A", -1.5)]
    assert m.usage.by_model["litellm/anthropic/claude-x"].calls == 1
    # without logprobs asked for, none are sent or returned
    out2 = await m.generate("again", max_tokens=3)
    assert "logprobs" not in fake_litellm.requests[-1] and out2.samples[0].logprobs is None


async def test_errors_are_mapped(fake_litellm: _FakeLiteLLM) -> None:
    m = _model()
    fake_litellm.fail_with = [fake_litellm.AuthenticationError("bad key")]
    with pytest.raises(AuthenticationError, match="refused the API key"):
        await m.generate("x")
    fake_litellm.fail_with = [fake_litellm.NotFoundError("no such model")]
    with pytest.raises(ModelError, match="unknown model"):
        await m.generate("x")
    fake_litellm.fail_with = [fake_litellm.BadRequestError("too long")]
    with pytest.raises(ModelError, match="request rejected"):
        await m.generate("x")
    # a transient failure is retried, then succeeds
    n = len(fake_litellm.requests)
    fake_litellm.fail_with = [fake_litellm.ServiceUnavailableError("busy")]
    assert (await m.generate("y")).text == "B"
    assert len(fake_litellm.requests) == n + 2
    # and fails for good after max_attempts
    fake_litellm.fail_with = [fake_litellm.Timeout("slow"), fake_litellm.APIConnectionError("down")]
    with pytest.raises(ModelUnavailableError):
        await m.generate("z")


async def test_rate_limit_carries_retry_after(fake_litellm: _FakeLiteLLM) -> None:
    err = fake_litellm.RateLimitError("slow down")
    err.response = SimpleNamespace(headers={"retry-after": "3"})
    fake_litellm.fail_with = [err]
    backend = LiteLLMBackend("anthropic/claude-x")
    with pytest.raises(RetryableError) as info:
        await backend.complete([], GenerateConfig(), None)
    assert info.value.retry_after == 3.0
