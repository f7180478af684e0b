"""Fixtures for the model-layer tests: a fake OpenAI-compatible server and fast retry policies."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from seerbench.models import RetryPolicy
from seerbench.testing import FakeOpenAIServer

#: Retries without real waiting, so failure-path tests stay fast.
FAST_RETRY = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.005)


@pytest.fixture
def fake_server() -> Iterator[FakeOpenAIServer]:
    """A chat-completions server on 127.0.0.1 that answers "A" with logprobs A=-1.0, B=-2.0."""
    with FakeOpenAIServer(reply="A", top_logprobs={"A": -1.0, "B": -2.0, "C": -4.0}) as srv:
        yield srv


@pytest.fixture
def isolated_cache_dir() -> Path:
    """The per-test cache directory set by the top-level autouse fixture."""
    return Path(os.environ["SEERBENCH_CACHE_DIR"])
