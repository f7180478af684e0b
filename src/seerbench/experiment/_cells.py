"""A cell of the grid and the result of running it: what the runner plans and the executors run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from seerbench.experiment._components import Entry

if TYPE_CHECKING:
    from seerbench.experiment._config import Debater

__all__ = ["RunResult", "RunSpec"]


@dataclass
class RunSpec:
    """One cell of the grid."""

    protocol: str
    kwargs: dict[str, Any]
    agent_model: str  # the agent's label: its model spec, or Class(arg=value,...) for a class entry
    judge_model: str  # the judge's label; the protocol's fixed judge (e.g. "trust") when it has one
    tools: tuple[str, ...]
    best_of_n: int
    protocol_dir: str = ""
    pair_dir: str = ""
    agent_entry: Entry | None = None  # the config entry the agent is built from
    judge_entry: Entry | None = None  # None: the protocol's fixed judge
    adversary: Debater | None = None  # cross-play: the other side; None: the agent itself

    @property
    def key(self) -> str:
        return f"{self.protocol_dir}/{self.pair_dir}"


@dataclass
class RunResult:
    spec: RunSpec
    stats: dict[str, Any]
    n_done: int
    n_errors: int
    errors: list[str] = field(default_factory=list)
