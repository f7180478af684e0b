"""Estimators as a fitness signal for choosing between systems (seed 001, Section 3.4).

An agent-design or prompt search needs one number per candidate; with complementary labels that
number is an estimate with sizeable noise. :func:`rank_systems` ranks candidates by an estimator and
flags candidates statistically indistinguishable from the leader, so a search loop (or a person) can
see near-ties instead of trusting the argmax blindly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from seerbench.errors import ConfigError
from seerbench.estimators._core import (
    AccuracyEstimate,
    LabelCounts,
    complementary_accuracy,
    ivw_accuracy,
    mixture_accuracy,
    ml_accuracy,
    ordinary_accuracy,
    raw_complementary_accuracy,
    z_value,
)

__all__ = ["ESTIMATORS", "RankedSystem", "Ranking", "estimate_by_name", "fitness", "rank_systems"]

#: Estimators selectable by name. "q" is the raw complementary accuracy the paper also uses as fitness.
ESTIMATORS: dict[str, Callable[..., AccuracyEstimate]] = {
    "ord": ordinary_accuracy,
    "comp": complementary_accuracy,
    "q": raw_complementary_accuracy,
    "ivw": ivw_accuracy,
    "ml": ml_accuracy,
}


def estimate_by_name(
    counts: LabelCounts, method: str = "ivw", *, weight: float | None = None, alpha: float = 0.05
) -> AccuracyEstimate:
    """Run the estimator called ``method`` (a key of :data:`ESTIMATORS`, or "mix" with ``weight``)."""
    if method == "mix":
        if weight is None:
            raise ConfigError("method 'mix' needs a weight")
        return mixture_accuracy(counts, weight, alpha=alpha)
    try:
        fn = ESTIMATORS[method]
    except KeyError:
        raise ConfigError(f"unknown estimator {method!r}; choose from {[*ESTIMATORS, 'mix']}") from None
    return fn(counts, alpha=alpha)


def fitness(counts: LabelCounts, method: str = "ivw", *, weight: float | None = None) -> float:
    """The scalar objective for a selection loop: the point estimate of ``method`` (see :func:`rank_systems`
    for its uncertainty)."""
    return estimate_by_name(counts, method, weight=weight).estimate


@dataclass(frozen=True)
class RankedSystem:
    """One candidate in a :class:`Ranking`.

    ``gap`` is the leader's estimate minus this one's; ``gap_se`` = sqrt(se_leader^2 + se^2);
    ``tied_with_best`` is True when gap <= z_{1-alpha/2} * gap_se (the leader itself is always tied
    with itself).
    """

    name: str
    rank: int
    estimate: AccuracyEstimate
    gap: float
    gap_se: float
    tied_with_best: bool


@dataclass(frozen=True)
class Ranking:
    """Candidates sorted best first by ``method``."""

    method: str
    alpha: float
    systems: tuple[RankedSystem, ...]

    @property
    def best(self) -> RankedSystem:
        """The leader (highest estimate; ties broken by name)."""
        return self.systems[0]

    @property
    def near_ties(self) -> list[str]:
        """Names of the candidates (leader included) that cannot be told apart from the leader."""
        return [s.name for s in self.systems if s.tied_with_best]

    @property
    def decisive(self) -> bool:
        """True when the leader is distinguishable from every other candidate."""
        return len(self.near_ties) == 1

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON)."""
        return {
            "method": self.method,
            "alpha": self.alpha,
            "near_ties": self.near_ties,
            "systems": [
                {
                    "name": s.name,
                    "rank": s.rank,
                    "gap": s.gap,
                    "gap_se": s.gap_se,
                    "tied_with_best": s.tied_with_best,
                    **s.estimate.to_dict(),
                }
                for s in self.systems
            ],
        }


def rank_systems(
    systems: Mapping[str, LabelCounts],
    *,
    method: str = "ivw",
    weight: float | None = None,
    alpha: float = 0.05,
) -> Ranking:
    """Rank candidate systems by an accuracy estimator, with near-ties made visible.

    ``systems`` maps a name (a prompt, an agent design, a protocol config) to the label counts of its
    predictions. The gap test treats the candidates' estimates as independent; when all candidates
    were scored on the same labelled items their errors are usually positively correlated, which makes
    the test conservative (more near-ties reported, not fewer).

    For one fixed K, ranking by "q" and by "comp" gives the same order (A_comp is increasing in q);
    they differ in the uncertainty reported.
    """
    if not systems:
        raise ConfigError("rank_systems needs at least one system")
    z = z_value(alpha)
    est = {name: estimate_by_name(c, method, weight=weight, alpha=alpha) for name, c in systems.items()}
    order = sorted(est, key=lambda name: (-est[name].estimate, name))
    lead = est[order[0]]
    ranked = []
    for i, name in enumerate(order):
        e = est[name]
        gap = lead.estimate - e.estimate
        gap_se = math.sqrt(lead.se**2 + e.se**2) if name != order[0] else 0.0
        ranked.append(
            RankedSystem(
                name=name,
                rank=i + 1,
                estimate=e,
                gap=gap,
                gap_se=gap_se,
                tied_with_best=gap <= z * gap_se,
            )
        )
    return Ranking(method=method, alpha=float(alpha), systems=tuple(ranked))
