"""OpenAI and OpenAI-compatible servers (vLLM, llama.cpp server, Ollama...) via the official SDK."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from seerbench.errors import AuthenticationError, ModelError
from seerbench.models._backend import Backend, RetryableError
from seerbench.models._types import ChatMessage, GenerateConfig, Sample, TokenLogprob, TopLogprob, Usage

DEFAULT_TIMEOUT = 120.0


class OpenAIBackend(Backend):
    """Chat completions through ``openai.AsyncOpenAI``.

    The key comes from ``api_key`` or ``$OPENAI_API_KEY``; the server from ``base_url`` or
    ``$OPENAI_BASE_URL`` (default api.openai.com). Local servers usually accept any key.
    """

    name = "openai"
    default_concurrency = 16

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        import openai

        self._model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if key is None:
            if self.base_url is None:
                raise AuthenticationError(
                    "no API key for openai/: set OPENAI_API_KEY, or point OPENAI_BASE_URL (or "
                    "openai/<model>@<base_url>) at an OpenAI-compatible server"
                )
            key = "not-needed"  # local OpenAI-compatible servers ignore it
        # Retries are ours (with jitter and usage accounting), so the SDK's are off.
        self._client = openai.AsyncOpenAI(api_key=key, base_url=self.base_url, max_retries=0, timeout=timeout)

    @property
    def model_id(self) -> str:
        return f"{self._model}@{self.base_url}" if self.base_url else self._model

    async def complete(self, messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> Sample:
        import openai

        kw: dict[str, Any] = {
            "model": self._model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            "n": 1,
        }
        if config.stop:
            kw["stop"] = list(config.stop)
        if seed is not None:
            kw["seed"] = seed
        if config.logprobs:
            kw["logprobs"] = True
            if config.top_logprobs:
                kw["top_logprobs"] = config.top_logprobs
        where = self.base_url or "api.openai.com"
        try:
            r = await self._client.chat.completions.create(**kw)
        except openai.AuthenticationError as e:
            raise AuthenticationError(f"{where} refused the API key (HTTP 401): check OPENAI_API_KEY") from e
        except openai.PermissionDeniedError as e:
            raise AuthenticationError(f"{where} denied access (HTTP 403): {e.message}") from e
        except openai.RateLimitError as e:
            raise RetryableError(f"rate limited by {where} (HTTP 429)", retry_after=_retry_after(e)) from e
        except openai.APITimeoutError as e:
            raise RetryableError(f"request to {where} timed out") from e
        except openai.APIConnectionError as e:
            raise RetryableError(f"cannot connect to {where}: {e}") from e
        except openai.APIStatusError as e:
            if e.status_code >= 500 or e.status_code == 408:
                raise RetryableError(f"{where} answered HTTP {e.status_code}") from e
            if e.status_code == 404:
                raise ModelError(f"{where} has no model {self._model!r} (HTTP 404): {e.message}") from e
            raise ModelError(f"{where} rejected the request (HTTP {e.status_code}): {e.message}") from e
        choice = r.choices[0]
        lps = None
        if config.logprobs and choice.logprobs is not None and choice.logprobs.content:
            lps = [
                TokenLogprob(
                    token=t.token,
                    logprob=t.logprob,
                    top=tuple(TopLogprob(token=x.token, logprob=x.logprob) for x in (t.top_logprobs or [])),
                )
                for t in choice.logprobs.content
            ]
        u = r.usage
        return Sample(
            text=choice.message.content or "",
            logprobs=lps,
            finish_reason=choice.finish_reason,
            usage=Usage(
                prompt_tokens=u.prompt_tokens if u else 0, completion_tokens=u.completion_tokens if u else 0
            ),
        )

    async def aclose(self) -> None:
        await self._client.close()


def _retry_after(e: Any) -> float | None:
    try:
        v = e.response.headers.get("retry-after")
        return float(v) if v is not None else None
    except (AttributeError, ValueError):
        return None
