"""Judges and agents built from config entries.

An entry is a model spec string (``local``: a :class:`ModelJudge` / :class:`ModelAgent` on that
model; ``replay`` for agents: the dataset's human arguments) or a mapping
``{class: <registered name or module:Class>, <constructor arguments>}``. A constructor parameter
annotated ``Judge``, ``Agent`` or ``Model`` takes an entry (or a model spec) and receives the
built object, so ``{class: my_protocols:ShrinkJudge, base: local, factor: 0.5}`` builds
``ShrinkJudge(base=ModelJudge(local), factor=0.5)``.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seerbench.agents import AGENTS, Agent
from seerbench.errors import ConfigError
from seerbench.judges import JUDGES, Judge
from seerbench.models import Model
from seerbench.plugins import Registry, import_object
from seerbench.provenance import code_files

Entry = str | dict[str, Any]


def entry_label(entry: Entry) -> str:
    """How a cell's folder and table name a judge or agent: the spec, or ``Class(arg=value,...)``."""
    if isinstance(entry, str):
        return entry
    d = dict(entry)
    ref = str(d.pop("class", "?"))
    args = ",".join(f"{k}={entry_label(v) if isinstance(v, dict) else v}" for k, v in sorted(d.items()))
    short = ref.rsplit(":", 1)[-1]
    return f"{short}({args})" if args else short


def resolve_class(ref: str, role: str, base_dir: str | Path | None) -> type:
    registry: Registry[type] = JUDGES if role == "judge" else AGENTS
    obj = import_object(ref, base_dir) if ":" in ref else registry.lookup(ref)
    if not isinstance(obj, type) and not callable(obj):
        raise ConfigError(f"{ref} is not a class")
    return obj


def entry_code(entry: Entry, role: str, base_dir: str | Path | None) -> dict[str, dict[str, str]]:
    """Class reference -> its :func:`seerbench.provenance.code_files` (its source file and the
    user modules it imports, each file's hash), for every user class in an entry (nested ones
    too), so an edited plugin or helper module counts as a changed cell."""
    out: dict[str, dict[str, str]] = {}
    if isinstance(entry, dict):
        ref = str(entry.get("class"))
        cls = resolve_class(ref, role, base_dir)
        files = code_files(cls)
        if files:
            out[ref] = files
        hints = _hints(cls)
        for k, v in entry.items():
            if isinstance(v, dict):
                sub = "judge" if _is(hints.get(k), Judge) else "agent"
                out.update(entry_code(v, sub, base_dir))
    return out


def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls.__dict__.get("__init__") or type.__getattribute__(cls, "__init__"))
    except Exception:
        return {}


def _is(ann: Any, target: type) -> bool:
    if ann is None:
        return False
    if ann is target:
        return True
    if isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union:
        return any(_is(a, target) for a in typing.get_args(ann))
    return False


def build(
    entry: dict[str, Any],
    role: str,
    *,
    base_dir: str | Path | None,
    make_judge: Callable[[Entry], Judge],
    make_agent: Callable[[Entry], Agent],
    make_model: Callable[[str], Model],
) -> Any:
    """Instantiate a ``{class: ..., ...}`` entry (see the module docstring)."""
    d = dict(entry)
    ref = d.pop("class", None)
    if not isinstance(ref, str):
        raise ConfigError(
            f"{role} entry {entry!r} needs a 'class' (a registered {role} name or module:Class)"
        )
    cls = resolve_class(ref, role, base_dir)
    hints = _hints(cls)
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unknown = [k for k in d if k not in params and not takes_any]
    if unknown:
        allowed = [p for p in params if p not in ("self", "args", "kwargs")]
        raise ConfigError(
            f"{role} {ref}: unknown argument(s) {', '.join(unknown)}; it takes: {', '.join(allowed) or 'none'}"
        )
    kwargs: dict[str, Any] = {}
    for k, v in d.items():
        ann = hints.get(k)
        if _is(ann, Judge):
            kwargs[k] = make_judge(v)
        elif _is(ann, Agent):
            kwargs[k] = make_agent(v)
        elif _is(ann, Model):
            if not isinstance(v, str):
                raise ConfigError(
                    f"{role} {ref}: argument {k} is a model: give a model spec string, e.g. local"
                )
            kwargs[k] = make_model(v)
        else:
            kwargs[k] = v
    try:
        obj = cls(**kwargs)
    except TypeError as e:
        raise ConfigError(f"{role} {ref}: {e}") from None
    proto = Judge if role == "judge" else Agent
    if not isinstance(obj, proto):
        need = (
            "an async judge(question, visible, *, with_source, argued) method"
            if role == "judge"
            else "an async __call__(question, answer_case, visible, context) method"
        )
        raise ConfigError(f"{ref} is not a {role}: it needs a `name` and {need}")
    return obj


__all__ = ["Entry", "build", "entry_code", "entry_label", "resolve_class"]
