"""Data crossing the model interface: chat messages, generation settings, outputs, usage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


class GenerateConfig(BaseModel):
    """Generation parameters. Every field is part of the cache key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int = Field(default=1, ge=1, description="Number of samples; sample i is cached under index i.")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=256, ge=1)
    stop: tuple[str, ...] = ()
    seed: int | None = Field(
        default=0, description="Base seed; sample i uses a seed derived from (seed, i). None: unseeded."
    )
    logprobs: bool = False
    top_logprobs: int = Field(default=0, ge=0, le=20)

    @field_validator("stop", mode="before")
    @classmethod
    def _stop_tuple(cls, v: object) -> object:
        if isinstance(v, str):
            return (v,)
        if isinstance(v, list):
            return tuple(v)
        return v

    def sample_seed(self, index: int) -> int | None:
        """A distinct, reproducible seed for sample ``index`` (None when unseeded)."""
        if self.seed is None:
            return None
        return (self.seed * 1_000_003 + index * 7_919) % (2**31 - 1)


class TopLogprob(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    token: str
    logprob: float


class TokenLogprob(BaseModel):
    """Log probability of one generated token and the most likely alternatives at its position."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: str
    logprob: float
    top: tuple[TopLogprob, ...] = ()


def chat_request(
    model: str, messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None
) -> dict[str, Any]:
    """The chat-completions request body for one sample (the OpenAI wire format, which
    OpenAI-compatible servers and LiteLLM accept)."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": m.role, "content": m.content} for m in messages],
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "n": 1,
    }
    if config.stop:
        body["stop"] = list(config.stop)
    if seed is not None:
        body["seed"] = seed
    if config.logprobs:
        body["logprobs"] = True
        if config.top_logprobs:
            body["top_logprobs"] = config.top_logprobs
    return body


def token_logprobs(content: list[Any]) -> list[TokenLogprob]:
    """Convert the chat-completions wire format (``logprobs.content``: dicts, or SDK objects with
    ``model_dump``) into :class:`TokenLogprob` s."""
    out = []
    for t in content:
        d = t if isinstance(t, dict) else t.model_dump()
        top = tuple(
            TopLogprob(token=x["token"], logprob=float(x["logprob"])) for x in d.get("top_logprobs") or ()
        )
        out.append(TokenLogprob(token=d["token"], logprob=float(d["logprob"]), top=top))
    return out


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Sample(BaseModel):
    """One generated completion."""

    model_config = ConfigDict(extra="forbid")

    text: str
    logprobs: list[TokenLogprob] | None = Field(
        default=None, description="Per-token logprobs, where the backend has them and they were asked for."
    )
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    cached: bool = False


class ModelOutput(BaseModel):
    """The result of :meth:`Model.generate`: ``n`` samples and their summed usage."""

    model_config = ConfigDict(extra="forbid")

    model: str
    samples: list[Sample]

    @property
    def text(self) -> str:
        return self.samples[0].text

    @property
    def usage(self) -> Usage:
        return Usage(
            prompt_tokens=sum(s.usage.prompt_tokens for s in self.samples),
            completion_tokens=sum(s.usage.completion_tokens for s in self.samples),
        )

    @property
    def cached(self) -> bool:
        """True when every sample came from the disk cache."""
        return all(s.cached for s in self.samples)


def parse_completion(r: Any, config: GenerateConfig, where: str) -> Sample:
    """A chat-completions JSON body -> Sample (tolerant of servers that omit optional fields)."""
    try:
        choice = r["choices"][0]
        message = choice.get("message") or {}
        lps = None
        content = (choice.get("logprobs") or {}).get("content")
        if config.logprobs and content:
            lps = token_logprobs(content)
        u = r.get("usage") or {}
        return Sample(
            text=message.get("content") or "",
            logprobs=lps,
            finish_reason=choice.get("finish_reason"),
            usage=Usage(
                prompt_tokens=u.get("prompt_tokens") or 0, completion_tokens=u.get("completion_tokens") or 0
            ),
        )
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as e:
        from seerbench.errors import ModelError

        raise ModelError(f"{where} sent a response that is not a chat completion: {str(r)[:200]}") from e
