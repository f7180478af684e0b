"""OpenAI and OpenAI-compatible servers (vLLM, llama.cpp server, Ollama...) via the official SDK."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from seerbench.errors import AuthenticationError, ModelError
from seerbench.models._backend import Backend, RetryableError
from seerbench.models._types import ChatMessage, GenerateConfig, Sample, Usage, chat_request, token_logprobs

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
        if not key:  # unset, or set to an empty string
            if self.base_url is None:
                raise AuthenticationError(
                    f"no API key for openai/{model}: set OPENAI_API_KEY, or point OPENAI_BASE_URL (or "
                    f"openai/{model}@<base_url>) at an OpenAI-compatible server"
                )
            key = "not-needed"  # local OpenAI-compatible servers ignore it
        # Retries are ours (with jitter and usage accounting), so the SDK's are off.
        self._client = openai.AsyncOpenAI(api_key=key, base_url=self.base_url, max_retries=0, timeout=timeout)

    @property
    def model_id(self) -> str:
        return f"{self._model}@{self.base_url}" if self.base_url else self._model

    async def complete(self, messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> Sample:
        import openai

        kw = chat_request(self._model, messages, config, seed)
        where = self.base_url or "api.openai.com"
        try:
            # The SDK's own low-level POST (documented for custom requests): same connection pool,
            # headers, timeouts and typed errors as ``chat.completions.create``, without its
            # per-request TypedDict transform and pydantic response model, which cost about twice
            # this whole layer per call and capped loopback throughput (see benchmarks/).
            raw = await self._client.post("/chat/completions", body=kw, cast_to=bytes)
            r = json.loads(raw)
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
        except ValueError as e:  # not JSON
            raise RetryableError(f"{where} sent a malformed response: {e}") from e
        return _parse_completion(r, config, where)

    async def aclose(self) -> None:
        await self._client.close()


def _parse_completion(r: Any, config: GenerateConfig, where: str) -> Sample:
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
            usage=Usage(prompt_tokens=u.get("prompt_tokens") or 0, completion_tokens=u.get("completion_tokens") or 0),
        )
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as e:
        raise ModelError(f"{where} sent a response that is not a chat completion: {str(r)[:200]}") from e


def _retry_after(e: Any) -> float | None:
    try:
        v = e.response.headers.get("retry-after")
        return float(v) if v is not None else None
    except (AttributeError, ValueError):
        return None
