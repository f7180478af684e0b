"""The grid of an experiment: its cells (:class:`RunSpec`) and their folder names, from the config
and the protocol classes alone: no judge, agent or model is built to name a cell."""

from __future__ import annotations

import inspect
import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

from seerbench.errors import ConfigError, did_you_mean
from seerbench.experiment._cells import RunSpec
from seerbench.experiment._components import Entry, entry_label
from seerbench.experiment._config import DEBATERS, ENTRY_KEYS, SCHEDULE, Debater, ExperimentConfig
from seerbench.protocols import OversightProtocol, get_protocol

#: Constructor parameters of every protocol that a config's protocol entry may not give: the grid
#: supplies them (the judge and agent of the cell, the config's seed).
_SUPPLIED = frozenset({"self", "judge", "agent", "seed"})


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", s).strip("-") or "x"


def protocol_keywords(cls: type[OversightProtocol]) -> list[str]:
    """The keywords a config may give ``cls``: every named constructor parameter along its MRO
    (``num_turns``, ``both_orders``, ``judge_sees_source``, ``adversary``, its own) and ``keywords``."""
    names: list[str] = []
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        for p in inspect.signature(init).parameters.values():
            if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name not in _SUPPLIED:
                names.append(p.name)
    names.extend(cls.keywords)
    return list(dict.fromkeys(names))


def listed_keywords(cls: type[OversightProtocol]) -> list[str]:
    """What an error lists as the keys a protocol entry may give: the protocol's keywords (less the
    ones the grid supplies, as ``adversary``) and the entry's own keys (its judges and agents; a
    debate's ``debaters`` and ``schedule``)."""
    own = [*ENTRY_KEYS, *((DEBATERS, SCHEDULE) if cls.cross_play else ())]
    return ["num_turns", "both_orders", "judge_sees_source", *cls.keywords, *own]


def _check_keywords(cls: type[OversightProtocol], name: str, kwargs: dict[str, Any]) -> None:
    known = protocol_keywords(cls)
    unknown = sorted(k for k in kwargs if k not in known)
    if unknown:
        listed = listed_keywords(cls)
        raise ConfigError(
            f"protocol {name}: bad keyword ({', '.join(unknown)}: not a keyword of {cls.__name__}"
            f"{did_you_mean(unknown[0], listed)}); keywords: {', '.join(listed)}"
        )
    try:
        cls.check_keywords(kwargs)
    except ConfigError as e:
        raise ConfigError(f"protocol {name}: {e}") from None


def names_itself(cls: type[OversightProtocol]) -> bool:
    """Whether ``cls`` names its folder from an instance (the older ``_name_parts`` or an
    overridden ``config_name``) rather than from :meth:`OversightProtocol.cell_name`."""
    return (
        cls._name_parts is not OversightProtocol._name_parts
        or cls.config_name is not OversightProtocol.config_name
    )


def _name_hidden_keywords(specs: Sequence[RunSpec]) -> None:
    """One protocol entry's cells: where keyword values that vary in the entry leave two cells with
    the same folder (a user protocol whose ``name_parts`` does not show them), every cell of the
    entry gets ``_<keyword>-<value>`` for those keywords. Decided by the entry alone, so a cell's
    folder does not depend on the rest of the grid."""
    first: dict[str, RunSpec] = {}
    hidden: set[str] = set()
    for s in specs:
        other = first.setdefault(s.key, s)
        if other is not s:
            hidden.update(k for k, v in s.kwargs.items() if k != "num_turns" and v != other.kwargs.get(k))
    for s in specs:
        s.protocol_dir += "".join(f"_{k}-{_slug(str(s.kwargs[k]))}" for k in sorted(hidden))


def build_grid(
    config: ExperimentConfig, *, instance_name: Callable[[RunSpec], str] | None = None
) -> list[RunSpec]:
    """Every cell of ``config``'s grid, named by :meth:`OversightProtocol.cell_name` from the
    protocol class and the entry's keywords (checked here: unknown ones, and the class's
    :meth:`~OversightProtocol.check_keywords`). A protocol that still names itself from an
    instance is named by ``instance_name(spec)`` (a protocol built on stand-in models)."""
    c = config
    specs: list[RunSpec] = []
    for p in c.protocols:
        cls = get_protocol(p.name)
        start = len(specs)
        judge_entries = p.entries("judge_models") or c.judge_models
        agent_entries = p.entries("agent_models") or c.agent_models
        for kw in p.keyword_grid():
            _check_keywords(cls, p.name, {"both_orders": c.both_orders, **kw})
            turns = [kw.pop("num_turns")] if "num_turns" in kw else (c.num_turns if cls.takes_turns else [1])
            agents = agent_entries if cls.needs_agent else [agent_entries[0]]
            tools = c.agent_tools if cls.needs_agent else [[]]
            bons = c.best_of_n if cls.needs_agent else [1]
            judges: list[Entry | None] = list(judge_entries) if cls.fixed_judge is None else [None]
            debaters = p.debaters()
            if debaters is not None:
                specs.extend(_cross_play(c, p.name, kw, turns, judges, debaters, instance_name, p.schedule()))
                continue
            for nt, a, j, t, b in itertools.product(turns, agents, judges, tools, bons):
                kwargs = {**kw, "num_turns": int(nt)} if cls.takes_turns else dict(kw)
                j_label = cls.fixed_judge if j is None else entry_label(j)
                spec = RunSpec(
                    p.name,
                    kwargs,
                    entry_label(a),
                    j_label or "",
                    tuple(t),
                    b,
                    agent_entry=a,
                    judge_entry=j,
                )
                if names_itself(cls) and instance_name is not None:
                    spec.protocol_dir = instance_name(spec)
                else:
                    spec.protocol_dir = cls.cell_name({"both_orders": c.both_orders, **kwargs})
                a_label, j_label = spec.agent_model, spec.judge_model
                agent_part = (
                    f"A_{_slug(a_label)}" + (f"_T_{'+'.join(t)}" if t else "") + (f"_bo{b}" if b > 1 else "")
                )
                spec.pair_dir = (
                    f"{agent_part}_J_{_slug(j_label)}" if cls.needs_agent else f"J_{_slug(j_label)}"
                )
                specs.append(spec)
        _name_hidden_keywords(specs[start:])
    keys = [s.key for s in specs]
    if len(set(keys)) != len(keys):
        raise ConfigError(f"the grid has duplicate cells: {sorted({k for k in keys if keys.count(k) > 1})}")
    return specs


def balanced_pairs(n: int) -> list[tuple[int, int]]:
    """The cells of a balanced schedule of ``n`` debaters: each unordered pair ``{i, j}`` (i < j)
    once, as (agent, adversary). The agent role goes round-robin: with ``d = j - i``, ``i`` is the
    agent when ``d < n - d``, ``j`` when ``d > n - d``, and at ``d = n - d`` (even n) the one in the
    first half of the list. So with odd n every debater is the agent in (n - 1) / 2 cells; with
    even n in n / 2 or n / 2 - 1 (3 debaters: (0, 1), (2, 0), (1, 2))."""
    out = []
    for i, j in itertools.combinations(range(n), 2):
        d = j - i
        first = d < n - d or (d == n - d and i < n / 2)
        out.append((i, j) if first else (j, i))
    return out


def _cross_play(
    c: ExperimentConfig,
    name: str,
    kw: dict[str, Any],
    turns: Sequence[Any],
    judges: Sequence[Entry | None],
    debaters: Sequence[Debater],
    instance_name: Callable[[RunSpec], str] | None,
    schedule: str = "all_ordered",
) -> list[RunSpec]:
    """A cross-play entry's cells, for every judge and number of turns: every ordered pair of
    different debaters (the agent first, the adversary second), or with ``schedule`` balanced each
    unordered pair once (:func:`balanced_pairs`). Each cell runs both answer cases, so each debater
    argues both sides of every question against each other one: twice under all_ordered, once
    under balanced."""
    cls = get_protocol(name)
    n = len(debaters)
    if schedule == "balanced":
        pairs = balanced_pairs(n)
    else:
        pairs = [(i, k) for i in range(n) for k in range(n) if i != k]
    out = []
    for nt, j, (ia, id_) in itertools.product(turns, judges, pairs):
        a, d = debaters[ia], debaters[id_]
        kwargs = {**kw, "num_turns": int(nt)} if cls.takes_turns else dict(kw)
        spec = RunSpec(
            name,
            kwargs,
            a.label(),
            (cls.fixed_judge if j is None else entry_label(j)) or "",
            a.tools,
            a.best_of_n,
            agent_entry=a.agent,
            judge_entry=j,
            adversary=d,
        )
        if names_itself(cls) and instance_name is not None:
            spec.protocol_dir = instance_name(spec)
        else:
            spec.protocol_dir = cls.cell_name({"both_orders": c.both_orders, **kwargs})
        spec.pair_dir = f"A_{_slug(a.label())}_vs_{_slug(d.label())}_J_{_slug(spec.judge_model)}"
        out.append(spec)
    return out


__all__ = ["RunSpec", "balanced_pairs", "build_grid", "listed_keywords", "names_itself", "protocol_keywords"]
