"""The backend contract: one sample per call. Everything shared (cache, concurrency, retries,
usage) lives in :class:`seerbench.models.Model`, not in backends."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from seerbench.models._types import ChatMessage, GenerateConfig, Sample, Usage


class RetryableError(Exception):
    """A transient failure (rate limit, 5xx, timeout, connection): the call may be retried."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Backend(ABC):
    """Generates one sample for a chat. Raise :class:`RetryableError` for transient failures and a
    :class:`seerbench.errors.ModelError` subclass for anything a retry cannot fix."""

    #: Backend family name, e.g. 'local', 'openai' (part of the cache key).
    name: str = "backend"
    #: Default concurrency limit for this backend.
    default_concurrency: int = 8
    #: The backend's version: part of the cache key and of a cell's identity, so bump it when a
    #: change makes other answers. (seerbench also hashes a user backend's source code, and the
    #: modules of the user's own code it imports, into both.)
    version: str = ""

    @property
    @abstractmethod
    def model_id(self) -> str:
        """Identifies the model within the backend (part of the cache key)."""

    @abstractmethod
    async def complete(
        self, messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None
    ) -> Sample:
        """Generate one sample with ``seed`` (already derived for the sample index)."""

    def content_identity(self) -> str | None:
        """What identifies the model's weights beyond :attr:`model_id` (e.g. ``sha256:<hex>`` of
        a model file), part of the cache key and of a cell's identity; None when unknown."""
        return None

    @property
    def supports_logprobs(self) -> bool:
        return True

    async def option_logprobs(
        self, messages: Sequence[ChatMessage], options: Sequence[str]
    ) -> tuple[dict[str, float], Usage] | None:
        """Exact log probability of each option label as the first answer token, for backends that
        can read their full next-token distribution; None means "use top_logprobs instead"."""
        return None

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release resources (HTTP clients)."""
