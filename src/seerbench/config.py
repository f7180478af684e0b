"""Process-wide settings resolved from arguments and environment variables."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

from seerbench.errors import close_sibling, did_you_mean

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

CACHE_DIR_ENV = "SEERBENCH_CACHE_DIR"


def available_cpus() -> int:
    """The CPU cores this process may run on (its affinity where the OS says it, else all)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def cache_dir(override: str | Path | None = None) -> Path:
    """Where the disk cache lives: ``override`` (CLI/config), else ``$SEERBENCH_CACHE_DIR``, else the
    user's cache directory (e.g. ``~/.cache/seerbench`` on Linux)."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("seerbench"))


def load_yaml(text: str) -> Any:
    """YAML as ``yaml.safe_load`` reads it, except that a key written twice in one mapping is an
    error (``yaml.MarkedYAMLError`` at the second one) instead of the last one silently winning."""
    import yaml

    class _NoDuplicates(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: dict[Any, Any] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue  # a `<<: *anchor` merge may legitimately be overridden
                    key = self.construct_object(key_node, deep=True)
                    try:
                        first = seen.setdefault(key, key_node.start_mark)
                    except TypeError:  # an unhashable key: safe_load refuses it itself
                        continue
                    if first is not key_node.start_mark:
                        raise yaml.constructor.ConstructorError(
                            None,
                            None,
                            f"key {key!r} is written twice (first at line {first.line + 1})",
                            key_node.start_mark,
                        )
            return super().construct_mapping(node, deep=deep)

    return yaml.load(text, Loader=_NoDuplicates)  # a SafeLoader subclass: safe


def read_yaml_mapping(path: str | Path, what: str) -> dict[str, Any]:
    """The mapping a YAML file holds (a config, a manifest), or a one-line :class:`ConfigError`
    that names ``what`` and the file: missing, not YAML (with the line and column), not a mapping."""
    import yaml

    from seerbench.errors import ConfigError

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{what} {p} does not exist{close_sibling(p, suffixes=('.yaml', '.yml'))}")
    try:
        data = load_yaml(p.read_text(encoding="utf-8"))
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


def explain_validation(
    e: ValidationError,
    what: str,
    *,
    model: type[BaseModel] | None = None,
    docs: str | None = None,
    flags: Mapping[str, str] | None = None,
) -> str:
    """One line for a config or manifest that failed validation (``what`` names it and its file):
    every problem as ``key: what is wrong``; an unknown key with the closest known one of
    ``model``'s section there (or the keys allowed there) and ``docs``, the page to read.
    ``flags``: the command-line flag that set each top-level key (``{"limit": "--limit"}``): a
    problem with one of those values names the flag and the value given, ``--limit -1: must be 1
    or more``, not the config, which did not hold it."""
    parts, flagged = [], []
    for err in e.errors():
        flag = (flags or {}).get(str(err["loc"][0])) if err["loc"] else None
        if flag is not None:
            flagged.append(f"{flag} {shlex.quote(str(err.get('input')))}: {_flag_problem(err)}")
            continue
        loc = ".".join(str(x) for x in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            parent = _section(model, err["loc"][:-1]) if model is not None else None
            allowed = sorted(parent.model_fields) if parent is not None else []
            msg = (
                "unknown key"
                + did_you_mean(str(err["loc"][-1]), allowed)
                + (f"; allowed keys: {', '.join(allowed)}" if allowed else "")
                + (f"; see {docs}" if docs else "")
            )
        elif err["type"] == "missing":
            msg = "Field required" + (f" (see {docs} for what it is)" if docs else "")
        elif err["type"] not in _NAMES_ITS_VALUE:
            msg += _given(err.get("input"))
        parts.append(f"{loc}: {msg}" if loc else msg)  # a whole-config rule names its keys itself
    return "; ".join([*flagged, *([f"invalid {what}: " + "; ".join(parts)] if parts else [])])


#: Errors whose message says what was given itself (a validator's own words), or had nothing given.
_NAMES_ITS_VALUE = frozenset({"value_error", "assertion_error", "extra_forbidden", "missing"})


def _given(value: Any) -> str:
    """`` (got 'five')``: the value a type or bound error refused, where it is short enough to
    echo (a whole mapping or list is left out: the key says where to look)."""
    text = repr(value)
    return f" (got {text})" if not isinstance(value, dict | list) and len(text) <= 60 else ""


def _flag_problem(err: Any) -> str:
    """What is wrong with a flag's value, in the words of a bound where it broke one."""
    bound = err.get("ctx") or {}
    words = {
        "greater_than_equal": ("ge", "must be {} or more"),
        "greater_than": ("gt", "must be more than {}"),
        "less_than_equal": ("le", "must be {} or less"),
        "less_than": ("lt", "must be less than {}"),
    }.get(err["type"])
    if words is not None and words[0] in bound:
        return words[1].format(bound[words[0]])
    if err["type"] == "string_too_short" and bound.get("min_length") == 1:
        return "must not be empty"
    msg = str(err["msg"]).removeprefix("Value error, ")
    return msg[:1].lower() + msg[1:]


def _section(model: type[BaseModel], loc: Sequence[int | str]) -> type[BaseModel] | None:
    """The model at ``loc`` inside ``model`` (e.g. ``("elicitation",)`` -> its section's model), to
    list its keys; None where ``loc`` goes through a list or a non-model value."""
    from pydantic import BaseModel

    cls = model
    for part in loc:
        f = cls.model_fields.get(str(part))
        ann = f.annotation if f is not None else None
        # an optional section (``Section | None``): its model
        models = [a for a in getattr(ann, "__args__", ()) if isinstance(a, type) and issubclass(a, BaseModel)]
        if len(models) == 1 and type(None) in getattr(ann, "__args__", ()):
            ann = models[0]
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)):
            return None
        cls = ann
    return cls
