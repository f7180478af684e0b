"""Judges and agents built from config entries.

An entry is a model spec string (``local``: a :class:`ModelJudge` / :class:`ModelAgent` on that
model; ``replay`` for agents: the dataset's human arguments) or a mapping
``{class: <registered name or module:Class>, <constructor arguments>}``. A constructor parameter
annotated ``Judge``, ``Agent`` or ``Model`` takes an entry (or a model spec) and receives the
built object, so ``{class: my_protocols:ShrinkJudge, base: local, factor: 0.5}`` builds
``ShrinkJudge(base=ModelJudge(local), factor=0.5)``; one annotated ``list[Judge]`` (``Agent``,
``Model``) takes a list of them and receives the list of built objects (a judge panel). A
protocol's keywords are injected the same way (:func:`inject`).
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Sequence
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
    too, in lists as well), so an edited plugin or helper module counts as a changed cell."""
    out: dict[str, dict[str, str]] = {}
    if isinstance(entry, dict):
        ref = str(entry.get("class"))
        cls = resolve_class(ref, role, base_dir)
        files = code_files(cls)
        if files:
            out[ref] = files
        out.update(keyword_code(entry, init_hints(cls), base_dir))
    return out


def keyword_code(
    kwargs: dict[str, Any], hints: dict[str, Any], base_dir: str | Path | None
) -> dict[str, dict[str, str]]:
    """:func:`entry_code` of every class entry among constructor arguments ``kwargs`` (a judge or
    agent entry's, or a protocol's keywords), by their annotations in ``hints``."""
    out: dict[str, dict[str, str]] = {}
    for k, v in kwargs.items():
        if k == "class":
            continue
        ann = hints.get(k)
        kind = component_kind(ann) or component_kind(list_element(ann))
        if kind not in ("judge", "agent"):
            continue
        for item in v if isinstance(v, list) else [v]:
            if isinstance(item, dict):
                out.update(entry_code(item, kind, base_dir))
    return out


def init_hints(cls: type) -> dict[str, Any]:
    """The constructor annotations of ``cls``, merged over its MRO (a subclass's win)."""
    merged: dict[str, Any] = {}
    if not isinstance(cls, type):
        return merged
    for klass in reversed(cls.__mro__):
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        try:
            merged.update(typing.get_type_hints(init))
        except Exception:
            continue
    return merged


def _hints(cls: type) -> dict[str, Any]:
    return init_hints(cls)


def _is(ann: Any, target: type) -> bool:
    if ann is None:
        return False
    if ann is target:
        return True
    if isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union:
        return any(_is(a, target) for a in typing.get_args(ann))
    return False


def component_kind(ann: Any) -> str | None:
    """'judge', 'agent' or 'model' for an annotation of that type (or an optional one)."""
    for kind, target in (("judge", Judge), ("agent", Agent), ("model", Model)):
        if _is(ann, target):
            return kind
    return None


def list_element(ann: Any) -> Any:
    """X for an annotation ``list[X]`` / ``Sequence[X]`` (or an optional one), else None."""
    if ann is None:
        return None
    if isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union:
        for a in typing.get_args(ann):
            el = list_element(a)
            if el is not None:
                return el
        return None
    origin = typing.get_origin(ann)
    if origin in (list, tuple, Sequence, typing.Sequence) or (
        isinstance(origin, type) and origin is not str and issubclass(origin, Sequence)
    ):
        args = typing.get_args(ann)
        return args[0] if args else None
    return None


def is_component_list(ann: Any) -> bool:
    """Whether ``ann`` is a list of judges, agents or models (a list value is one value, not a
    grid axis)."""
    return component_kind(list_element(ann)) is not None


def inject(
    owner: str,
    name: str,
    ann: Any,
    value: Any,
    *,
    make_judge: Callable[[Entry], Judge],
    make_agent: Callable[[Entry], Agent],
    make_model: Callable[[str, str], Model],
) -> Any:
    """The constructor argument ``name`` of ``owner`` (for errors): the built judge, agent or
    model when ``ann`` says it is one (or a list of them), else ``value`` as it is.
    ``make_model(spec, name)`` builds a model for the argument ``name``."""
    kind = component_kind(ann)
    if kind is None:
        el = list_element(ann)
        if component_kind(el) is None:
            return value
        if not isinstance(value, list):
            raise ConfigError(
                f"{owner}: argument {name} is a list of "
                f"{component_kind(el)}s: give a list, e.g. [local, local]"
            )
        return [
            inject(owner, name, el, v, make_judge=make_judge, make_agent=make_agent, make_model=make_model)
            for v in value
        ]
    if kind == "judge":
        return make_judge(value)
    if kind == "agent":
        return make_agent(value)
    if not isinstance(value, str):
        raise ConfigError(f"{owner}: argument {name} is a model: give a model spec string, e.g. local")
    return make_model(value, name)


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
            f"{role} {ref}: unknown argument(s) {', '.join(unknown)}; "
            f"it takes: {', '.join(allowed) or 'none'}"
        )
    kwargs = {
        k: inject(
            f"{role} {ref}",
            k,
            hints.get(k),
            v,
            make_judge=make_judge,
            make_agent=make_agent,
            make_model=lambda spec, _name: make_model(spec),
        )
        for k, v in d.items()
    }
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


__all__ = [
    "Entry",
    "build",
    "component_kind",
    "entry_code",
    "entry_label",
    "init_hints",
    "inject",
    "is_component_list",
    "keyword_code",
    "list_element",
    "resolve_class",
]
