"""Prompt templates for agents and judges, kept as files rather than strings in code."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from seerbench.errors import ConfigError

PROMPTS_DIR = Path(__file__).parent


@cache
def _read(directory: str, name: str) -> str:
    p = Path(directory) / f"{name}.txt"
    if not p.is_file():
        p = PROMPTS_DIR / f"{name}.txt"
    if not p.is_file():
        raise ConfigError(f"no prompt template {name!r} in {directory} or {PROMPTS_DIR}")
    return p.read_text()


def render(name: str, directory: str | Path | None = None, **fields: object) -> str:
    """Fill template ``name`` (``<name>.txt``) with ``fields``; a file of the same name in
    ``directory`` overrides the built-in one."""
    template = _read(str(directory or PROMPTS_DIR), name)
    try:
        return template.format(**fields).strip()
    except KeyError as e:
        raise ConfigError(f"prompt template {name!r} uses an unknown field {e}; known: {sorted(fields)}") from e
