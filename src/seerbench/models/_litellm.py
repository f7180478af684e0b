"""Hosted providers other than OpenAI (Anthropic, Gemini, Mistral, Together, ...) through LiteLLM,
an optional extra: ``pip install 'seerbench[litellm]'``."""

from __future__ import annotations

from collections.abc import Sequence

from seerbench.errors import AuthenticationError, ModelError, RequestError
from seerbench.models._backend import Backend, RetryableError
from seerbench.models._openai import _retry_after
from seerbench.models._types import ChatMessage, GenerateConfig, Sample, Usage, chat_request, token_logprobs


class LiteLLMBackend(Backend):
    """``litellm/<provider>/<model>``, e.g. ``litellm/anthropic/claude-3-5-haiku-latest``. Keys come
    from each provider's usual environment variable (``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``...)."""

    name = "litellm"
    default_concurrency = 16

    def __init__(self, model: str) -> None:
        try:
            import litellm  # noqa: F401
        except ImportError as e:
            raise ModelError(
                "the litellm backend needs the optional extra: pip install 'seerbench[litellm]'"
            ) from e
        self._model = model

    @property
    def model_id(self) -> str:
        return self._model

    async def complete(
        self, messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None
    ) -> Sample:
        import litellm

        kw = {**chat_request(self._model, messages, config, seed), "num_retries": 0}
        try:
            r = await litellm.acompletion(**kw)
        except litellm.AuthenticationError as e:
            raise AuthenticationError(f"{self._model}: the provider refused the API key: {e}") from e
        except (
            litellm.RateLimitError,
            litellm.Timeout,
            litellm.APIConnectionError,
            litellm.ServiceUnavailableError,
            litellm.InternalServerError,
        ) as e:
            # the provider's Retry-After, where the exception carries the HTTP response
            raise RetryableError(
                f"{self._model}: {type(e).__name__}: {e}", retry_after=_retry_after(e)
            ) from e
        except litellm.NotFoundError as e:
            raise ModelError(f"{self._model}: unknown model: {e}") from e
        except litellm.BadRequestError as e:
            raise RequestError(f"{self._model}: request rejected: {e}") from e  # this question fails
        choice = r.choices[0]
        lps = None
        content = getattr(getattr(choice, "logprobs", None), "content", None)
        if config.logprobs and content:
            lps = token_logprobs(content)
        u = getattr(r, "usage", None)
        return Sample(
            text=choice.message.content or "",
            logprobs=lps,
            finish_reason=choice.finish_reason,
            usage=Usage(
                prompt_tokens=getattr(u, "prompt_tokens", 0) or 0,
                completion_tokens=getattr(u, "completion_tokens", 0) or 0,
            ),
        )
