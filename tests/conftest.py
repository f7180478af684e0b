"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own empty disk cache, so no test sees another's answers."""
    d = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("SEERBENCH_CACHE_DIR", str(d))
    return d
