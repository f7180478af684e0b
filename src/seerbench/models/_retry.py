"""Retries with exponential backoff and full jitter for transient backend failures."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from seerbench.errors import ModelUnavailableError
from seerbench.models._backend import RetryableError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` tries in all; the wait before retry k (1-based) is uniform in
    [0, min(max_delay, base_delay * 2**(k-1))], or the server's Retry-After when it gives one."""

    max_attempts: int = 6
    base_delay: float = 0.5
    max_delay: float = 30.0

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None = None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_delay)
        cap = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return rng.uniform(0, cap)


async def with_retries(
    fn: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    what: str,
    on_retry: Callable[[int, Exception], None] | None = None,
) -> T:
    """Await ``fn()``; on :class:`RetryableError` wait and try again, up to ``policy.max_attempts``.
    Other exceptions propagate at once (authentication, bad request...)."""
    rng: random.Random | None = None  # seeded from the OS only when a retry needs it (costly per call)
    last: RetryableError | None = None
    for attempt in range(1, policy.max_attempts + 1):
        try:
            return await fn()
        except RetryableError as e:
            last = e
            if attempt == policy.max_attempts:
                break
            if on_retry is not None:
                on_retry(attempt, e)
            rng = rng or random.Random()
            await asyncio.sleep(policy.delay(attempt, rng, e.retry_after))
    raise ModelUnavailableError(
        f"{what} still failing after {policy.max_attempts} attempts: {str(last).rstrip('.')}. "
        "Check that the server is running and reachable, or retry later."
    ) from last
