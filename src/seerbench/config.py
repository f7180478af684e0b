"""Process-wide settings resolved from arguments and environment variables."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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


def read_yaml_mapping(path: str | Path, what: str) -> dict[str, Any]:
    """The mapping a YAML file holds (a config, a manifest), or a one-line :class:`ConfigError`
    that names ``what`` and the file: missing, not YAML (with the line and column), not a mapping."""
    import yaml

    from seerbench.errors import ConfigError

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{what} {p} does not exist")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise ConfigError(f"{what} {p} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"{what} {p} is not valid YAML ({at}{problem})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{what} {p} must be a mapping of keys to values")
    return data
