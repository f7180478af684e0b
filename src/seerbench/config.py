"""Process-wide settings resolved from arguments and environment variables."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

CACHE_DIR_ENV = "SEERBENCH_CACHE_DIR"


def cache_dir(override: str | Path | None = None) -> Path:
    """Where the disk cache lives: ``override`` (CLI/config), else ``$SEERBENCH_CACHE_DIR``, else the
    user's cache directory (e.g. ``~/.cache/seerbench`` on Linux)."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("seerbench"))
