"""Simulating the partitioned-supervision labelling protocol (seed 001, Appendix B, Algorithm 1).

On data with known answers these functions produce the labels that the expert-routing protocol would
collect, so the estimators can be checked against the true accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from seerbench.errors import ConfigError, DataError
from seerbench.estimators._labels import LabelSet, _int_array

__all__ = ["SimulatedPartition", "expand_complementary", "simulate_protocol"]


@dataclass(frozen=True, eq=False)
class SimulatedPartition:
    """The labels one run of the protocol produced, and how it produced them.

    ``labels`` use positions *after* the options were shuffled (prediction and label alike).
    ``order[i, p]`` is the 0-based original index of the option shown at position p + 1 of item i
    (-1 beyond the item's K). ``seed`` is the seed that reproduces the run.
    """

    labels: LabelSet
    order: npt.NDArray[np.int64]
    seed: int
    mode: str


def _inputs(true_label: Any, prediction: Any, k: Any) -> tuple[npt.NDArray[np.int64], ...]:
    y = _int_array("true_label", true_label, "simulation input")
    pred = _int_array("prediction", prediction, "simulation input")
    k_arr = _int_array("k", k, "simulation input")
    if y.ndim != 1 or pred.shape != y.shape:
        raise ConfigError(
            f"true_label and prediction must be 1-D of equal length, got {y.shape} and {pred.shape}"
        )
    if k_arr.ndim == 0:
        k_arr = np.full(y.shape[0], int(k_arr), dtype=np.int64)
    if k_arr.shape != y.shape:
        raise ConfigError(f"k must be a scalar or match true_label's length, got shape {k_arr.shape}")
    if y.shape[0] == 0:
        raise DataError("simulation input: no items")
    for name, arr in (("k", k_arr),):
        if (arr < 2).any():
            i = int(np.argmax(arr < 2))
            raise DataError(f"item {i}: {name}={int(arr[i])}: K must be at least 2")
    for name, arr in (("true_label", y), ("prediction", pred)):
        bad = (arr < 1) | (arr > k_arr)
        if bad.any():
            i = int(np.argmax(bad))
            raise DataError(f"item {i}: {name} {int(arr[i])} is outside 1..{int(k_arr[i])}")
    return y, pred, k_arr


def simulate_protocol(
    true_label: Any,
    prediction: Any,
    k: Any,
    *,
    seed: int,
    n_ordinary: int | None = None,
    shuffle_options: bool = True,
) -> SimulatedPartition:
    """Simulate Algorithm 1 on items whose true option is known (options numbered 1..K).

    For each item the options are shuffled uniformly (``shuffle_options``; the prediction moves with
    its option), then:

    * ``n_ordinary=None`` (expert routing, Section 2): an option k is drawn uniformly from 1..K, as if
      the item went to the expert for k. "Yes" (k is the true option) gives an ordinary label k,
      "no" a complementary label k. Conditional on "no", k is uniform over the K-1 wrong options,
      which is Eq. 1; about 1/K of the items get ordinary labels.
    * ``n_ordinary=m`` (fixed sizes, Algorithm 1 with n_o and n_c given): m items drawn uniformly
      without replacement keep their ordinary label; each other item gets a complementary label drawn
      uniformly from its K-1 wrong options.

    Everything random comes from ``numpy.random.default_rng(seed)``.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ConfigError(f"seed must be an integer, got {seed!r}")
    y, pred, k_arr = _inputs(true_label, prediction, k)
    n = y.shape[0]
    rng = np.random.default_rng(int(seed))
    k_max = int(k_arr.max())
    cols = np.arange(k_max)
    if shuffle_options:
        keys = rng.random((n, k_max))
        keys[cols[None, :] >= k_arr[:, None]] = np.inf  # padding sorts last
        order = np.argsort(keys, axis=1).astype(np.int64)
    else:
        order = np.broadcast_to(cols, (n, k_max)).astype(np.int64).copy()
    # position_of[i, original] = 0-based shuffled position of that original option.
    position_of = np.argsort(order, axis=1)
    rows = np.arange(n)
    y_pos = position_of[rows, y - 1] + 1
    pred_pos = position_of[rows, pred - 1] + 1
    order[cols[None, :] >= k_arr[:, None]] = -1
    if n_ordinary is None:
        asked = rng.integers(1, k_arr + 1)  # the expert's option, uniform over 1..K
        is_comp = asked != y_pos
        label = asked
        mode = "routing"
    else:
        if isinstance(n_ordinary, bool) or not isinstance(n_ordinary, int) or not 0 <= n_ordinary <= n:
            raise ConfigError(f"n_ordinary must be an integer in 0..{n}, got {n_ordinary!r}")
        is_comp = np.ones(n, dtype=bool)
        is_comp[rng.choice(n, size=n_ordinary, replace=False)] = False
        offset = rng.integers(1, k_arr)  # 1..K-1 steps round the circle from y: a uniform wrong option
        wrong = (y_pos - 1 + offset) % k_arr + 1
        label = np.where(is_comp, wrong, y_pos)
        mode = "fixed"
    labels = LabelSet.from_arrays(
        pred_pos, label, is_comp, k_arr, rows=np.arange(n), source="simulated labels"
    )
    return SimulatedPartition(labels=labels, order=order, seed=int(seed), mode=mode)


def expand_complementary(true_label: Any, prediction: Any, k: Any) -> LabelSet:
    """The "(K-1) complementary labels per item" conversion (Appendix F, Comp-(K-1)).

    Each item with true option y becomes K-1 complementary labels, one for every option other than y;
    the ordinary label is discarded. ``rows`` holds the 0-based item index of every label.

    Caution: the K-1 labels of one item are not independent. For an item, sum_j W_j = K-2 + Z, so
    A_comp on the expanded set equals the items' ordinary accuracy exactly, and the i.i.d. standard
    error of Eq. 3 (with n_c = (K-1) n) does not describe its sampling variance.
    """
    y, pred, k_arr = _inputs(true_label, prediction, k)
    reps = k_arr - 1
    item = np.repeat(np.arange(y.shape[0]), reps)
    # j-th label of an item (j = 0..K-2) is option j+1, skipping y.
    starts = np.cumsum(reps) - reps
    j = np.arange(item.shape[0]) - np.repeat(starts, reps)
    y_rep = y[item]
    label = j + 1 + (j + 1 >= y_rep)
    return LabelSet.from_arrays(
        pred[item],
        label,
        np.ones(item.shape[0], dtype=bool),
        k_arr[item],
        rows=item,
        source="expanded labels",
    )
