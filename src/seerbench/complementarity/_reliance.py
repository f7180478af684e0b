"""Reliance on the AI assistant, as seed 000 defines it (section 2.4.3).

For an assisted condition A and the unassisted condition U, with ``acc_X(S)`` the mean accuracy of
the individual judgments in condition X on the items of slice S:

- **over-reliance** (the seed's): how often an assisted rater gives the incorrect judgment where the
  AI is wrong, the assisted error rate ``1 - acc_A(AI wrong)`` (deferring to a wrong assistant);
- **under-reliance** (the seed's): how often an assisted rater still gives the incorrect judgment
  where the AI is right, ``1 - acc_A(AI right)`` (ignoring a correct assistant); near 0 is good;
- the accuracy changes against unassisted, under names that say what they are:
  ``accuracy_change_ai_wrong = acc_A(AI wrong) - acc_U(AI wrong)`` (negative when the assistant
  drags raters to its wrong ratings) and ``accuracy_change_ai_right = acc_A(AI right) -
  acc_U(AI right)`` (the gain where the assistant is right).

Each comes with a 95% interval from the cluster bootstrap (items and raters resampled together
for both conditions, so the two accuracies are paired replicate by replicate); an error rate's
interval is its accuracy's, flipped.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel

from seerbench.complementarity._data import AIItems, HumanData
from seerbench.complementarity._hybrid import Estimate
from seerbench.errors import ConfigError
from seerbench.stats import (
    Interval,
    cluster_group_means,
    correlation,
    difference_interval,
    group_interval,
)


class SliceAccuracy(BaseModel):
    """Accuracy of one condition's judgments on one slice (AI right or wrong)."""

    judgments: int
    accuracy: Estimate


class ConditionReliance(BaseModel):
    condition: str
    ai_wrong: SliceAccuracy
    ai_right: SliceAccuracy
    #: seed 000's rates, for an assisted condition (None for the unassisted one): the assisted
    #: error rate where the AI is wrong (over-reliance) and where it is right (under-reliance)
    over_reliance: Estimate | None
    under_reliance: Estimate | None
    #: assisted minus unassisted accuracy where the AI is wrong / right
    accuracy_change_ai_wrong: Estimate | None
    accuracy_change_ai_right: Estimate | None


class Reliance(BaseModel):
    unassisted: str
    conditions: list[ConditionReliance]
    n_boot: int
    seed: int


def _error_rate(acc: Interval) -> Estimate:
    """1 - accuracy, with the accuracy's interval flipped."""
    if math.isnan(acc.estimate):
        return Estimate.none()
    return Estimate.of(
        Interval(
            1 - acc.estimate, 1 - acc.ci_high, 1 - acc.ci_low, acc.n_eff, acc.method, acc.n, acc.confidence
        )
    )


def reliance(
    ai: AIItems, humans: HumanData, *, unassisted: str | None = None, n_boot: int = 1000, seed: int = 0
) -> Reliance:
    """Accuracy split by whether the AI was right, per condition, and over-/under-reliance of every
    assisted condition against the unassisted one."""
    base = unassisted or humans.unassisted
    if base is None:
        raise ConfigError(
            "which condition is unassisted? name it (--unassisted NAME); conditions: "
            + ", ".join(humans.conditions)
        )
    if base not in humans.conditions:
        raise ConfigError(
            f"unassisted condition {base!r} is not in the study; conditions: {', '.join(humans.conditions)}"
        )
    wrong = ai.correct[humans.item] == 0.0
    n_c = len(humans.conditions)
    groups = humans.condition * 2 + wrong.astype(np.int64)  # 2c: AI right, 2c+1: AI wrong
    means, cov = cluster_group_means(
        humans.correct, humans.item, humans.rater, groups, 2 * n_c, n_boot=n_boot, seed=seed
    )
    ivs = [group_interval(means, cov, g, groups == g, humans.item, humans.rater) for g in range(2 * n_c)]
    b = humans.conditions.index(base)
    out = []
    for c, name in enumerate(humans.conditions):
        counts = [int((groups == 2 * c + k).sum()) for k in (0, 1)]
        over = under = d_wrong = d_right = None
        if c != b:
            d_wrong = Estimate.of(
                difference_interval(ivs[2 * c + 1], ivs[2 * b + 1], correlation(cov, 2 * c + 1, 2 * b + 1))
            )
            d_right = Estimate.of(difference_interval(ivs[2 * c], ivs[2 * b], correlation(cov, 2 * c, 2 * b)))
            over, under = _error_rate(ivs[2 * c + 1]), _error_rate(ivs[2 * c])
        out.append(
            ConditionReliance(
                condition=name,
                ai_wrong=SliceAccuracy(judgments=counts[1], accuracy=Estimate.of(ivs[2 * c + 1])),
                ai_right=SliceAccuracy(judgments=counts[0], accuracy=Estimate.of(ivs[2 * c])),
                over_reliance=over,
                under_reliance=under,
                accuracy_change_ai_wrong=d_wrong,
                accuracy_change_ai_right=d_right,
            )
        )
    # unassisted first, then the others in study order
    out.sort(key=lambda r: r.condition != base)
    return Reliance(unassisted=base, conditions=out, n_boot=n_boot, seed=seed)
