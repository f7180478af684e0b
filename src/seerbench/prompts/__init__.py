"""Prompt templates for agents and judges, kept as files rather than strings in code.

A ``prompts_dir`` overrides built-in templates by file name (``judge_decide.txt`` replaces the
built-in ``judge_decide``). :func:`template_hashes` is what an experiment records so that results
judged with an edited prompt never mix with results judged with the old one.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from seerbench.errors import ConfigError

PROMPTS_DIR = Path(__file__).parent

_texts: dict[tuple[str, int, int], str] = {}
#: (name, directory) -> the file its template is read from, as template_hashes last found it:
#: renders reuse it (a grid renders tens of thousands of prompts) and only stat the file.
_resolved: dict[tuple[str, str | None], str] = {}


def template_names() -> list[str]:
    """Names of the built-in templates (every name a ``prompts_dir`` may override)."""
    return sorted(p.stem for p in PROMPTS_DIR.glob("*.txt"))


def template_path(name: str, directory: str | Path | None = None) -> Path:
    """The file template ``name`` is read from: ``directory``'s own, else the built-in one."""
    if directory is not None:
        p = Path(directory) / f"{name}.txt"
        if p.is_file():
            return p
    p = PROMPTS_DIR / f"{name}.txt"
    if not p.is_file():
        raise ConfigError(
            f"no prompt template {name!r} in {directory or PROMPTS_DIR}; known: {', '.join(template_names())}"
        )
    return p


def _resolve(name: str, directory: str | Path | None, fresh: bool = False) -> str:
    key = (name, None if directory is None else str(directory))
    p = None if fresh else _resolved.get(key)
    if p is None:
        p = _resolved[key] = str(template_path(name, directory))
    return p


def _read(path: str) -> str:
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)  # an edited file is read again
    text = _texts.get(key)
    if text is None:
        text = _texts[key] = Path(path).read_text()
    return text


def check_prompts_dir(directory: str | Path) -> Path:
    """Refuse a ``prompts_dir`` that does not exist or holds a template file no template uses (a
    misspelt name would otherwise be ignored silently)."""
    d = Path(directory)
    if not d.is_dir():
        raise ConfigError(
            f"prompts_dir {d} does not exist (relative paths are read from the config file's folder)"
        )
    known = set(template_names())
    stray = sorted(p.name for p in d.glob("*.txt") if p.stem not in known)
    if stray:
        raise ConfigError(
            f"prompts_dir {d} holds {', '.join(stray)}, which no template uses; template names: "
            + ", ".join(f"{n}.txt" for n in sorted(known))
        )
    return d


def template_hashes(directory: str | Path | None = None) -> dict[str, str]:
    """sha256 (first 16 hex digits) of the text of every template as ``directory`` resolves it."""
    return {
        n: hashlib.sha256(_read(_resolve(n, directory, fresh=True)).encode()).hexdigest()[:16]
        for n in template_names()
    }


def render(name: str, directory: str | Path | None = None, **fields: object) -> str:
    """Fill template ``name`` (``<name>.txt``) with ``fields``; a file of the same name in
    ``directory`` overrides the built-in one."""
    try:
        template = _read(_resolve(name, directory))
    except FileNotFoundError:  # the file it was read from is gone: resolve again
        template = _read(_resolve(name, directory, fresh=True))
    try:
        return template.format(**fields).strip()
    except KeyError as e:
        raise ConfigError(
            f"prompt template {name!r} uses an unknown field {e}; known: {sorted(fields)}"
        ) from e


__all__ = ["PROMPTS_DIR", "check_prompts_dir", "render", "template_hashes", "template_names", "template_path"]
