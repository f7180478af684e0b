"""``seerbench plan RUN_DIR``: from a pilot run, the questions each comparison (or each cell's
precision) needs, with the model calls, tokens and cost they would take (issue 26).

The per-question values are the ones ``seerbench stats`` uses (rescored with the run's ``eps`` and
parse-failure policy; paired differences on the questions both cells scored, each cell matched to
its baseline cell as ``stats --baseline`` matches it). Questions that share a passage count as one
cluster: the design effect of :func:`seerbench.estimators.design_effect` widens the variance.
Usage comes from the run folder's ``usage.json``/``usage.jsonl``: per cell where the log names the
cell of every model event (runs since the runner logs it), else averaged over every question of
every cell of the pilot (a cache hit counts as a call a fresh run would make; its tokens and cost
are those of the cell's calls made, or the folder's where the cell made none)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seerbench.analysis._pressure import _cluster_label
from seerbench.errors import ConfigError
from seerbench.estimators import design_effect, power_at, questions_for_half_width, questions_for_power
from seerbench.metrics import DEFAULT_EPS
from seerbench.results import CellStats
from seerbench.runs import (
    ResultsFile,
    RunFolder,
    cell_meta,
    check_eps,
    check_policy,
    check_score,
    paired_comparisons,
    why_no_comparison,
)

__all__ = ["plan_run"]

#: The per-question metrics a plan covers: (name shown, key of CellStats.paired_values).
METRICS = (("accuracy", "judge_accuracy"), ("asd", "asd"))


def _per_question(t: dict[str, Any], n_lines: int, priced: dict[str, Any]) -> dict[str, Any] | None:
    """Calls, tokens and cost per results line of usage counts ``t`` (calls made plus cache hits:
    a fresh run makes both). Tokens and cost per call come from the calls ``t`` made, else from
    ``priced`` (the folder's counts: a cell whose every call was a cache hit)."""
    if not n_lines:
        return None
    calls = int(t.get("calls", 0)) + int(t.get("cache_hits", 0))
    src = t if int(t.get("calls", 0)) else priced
    made = int(src.get("calls", 0))
    tokens = int(src.get("prompt_tokens", 0)) + int(src.get("completion_tokens", 0))
    cost = src.get("cost")
    return {
        "calls": calls / n_lines,
        "tokens": tokens / made * calls / n_lines if made else None,
        "cost": cost / made * calls / n_lines if (made and cost is not None) else None,
    }


def _usage_per_question(
    folder: RunFolder, n_lines: int, cell_lines: dict[str, int]
) -> tuple[dict[str, Any] | None, dict[str, dict[str, Any]] | None]:
    """Usage per question: averaged over every cell's lines, and per cell where the usage log
    names the cell of every event (None: a pilot run before it did, whose usage is per model)."""
    usage = folder.usage()
    if usage is None:
        return None, None
    total = usage["total"]
    per_q = _per_question(total, n_lines, total)
    cells = usage.get("cells") or {}
    logged = sum(int(c.get("calls", 0)) + int(c.get("cache_hits", 0)) for c in cells.values())
    if not cells or logged != int(total.get("calls", 0)) + int(total.get("cache_hits", 0)):
        return per_q, None
    by_cell = {}
    for key, n in cell_lines.items():
        q = _per_question(cells.get(key) or {}, n, total)
        if q is not None:
            by_cell[key] = q
    return per_q, by_cell


def _expected(per_q: Sequence[dict[str, Any] | None], questions: int) -> dict[str, Any]:
    """What ``questions`` more questions of each cell whose per-question usage is in ``per_q``
    take, in all."""
    if not per_q or any(p is None for p in per_q):
        return {"calls": None, "tokens": None, "cost": None}
    ps = [p for p in per_q if p is not None]

    def total(k: str) -> float | None:
        v = [p[k] for p in ps]
        return None if any(x is None for x in v) else sum(v) * questions

    calls, tokens, cost = total("calls"), total("tokens"), total("cost")
    return {
        "calls": None if calls is None else round(calls),
        "tokens": None if tokens is None else round(tokens),
        "cost": cost,
    }


def _spread(values: dict[str, float], clusters: dict[str, str]) -> tuple[int, float, float, float, int]:
    ids = sorted(values)
    x = np.array([values[q] for q in ids])
    n = int(x.size)
    sd = float(x.std(ddof=1)) if n > 1 else math.nan
    labels = [clusters.get(q, q) for q in ids]
    deff = design_effect(x, labels) if n > 1 else 1.0
    return n, float(x.mean()) if n else math.nan, sd, deff, len(set(labels))


def _pilot_row(
    head: dict[str, Any], values: dict[str, float], clusters: dict[str, str], what: str
) -> tuple[dict[str, Any], int, float, float]:
    """A plan row's pilot part (``head`` then the pilot's n, clusters, mean, sd and design effect)
    and, where the pilot cannot support a plan, ``questions: None`` and ``why``; with n, sd and
    the design effect for the planner."""
    n, mean, sd, deff, n_clusters = _spread(values, clusters)
    row: dict[str, Any] = {
        **head,
        "pilot_n": n,
        "pilot_clusters": n_clusters,
        "pilot_mean": mean,
        "sd": sd,
        "design_effect": deff,
    }
    why = _unplannable(n, sd, what)
    if why:
        row["questions"] = None
        row["why"] = why
    return row, n, sd, deff


def _unplannable(n: int, sd: float, what: str) -> str | None:
    if n < 2:
        return f"{n} {what} in the pilot: a plan needs at least 2"
    if sd == 0:
        return f"the {n} pilot values do not vary (sd 0): a larger pilot is needed to plan from"
    return None


def plan_run(
    run_dir: str | Path,
    *,
    baseline: str | None = None,
    effect: float | None = None,
    power: float = 0.8,
    half_width: float | None = None,
    score: str = "log",
    alpha: float = 0.05,
    eps: float | None = None,
    parse_failures: str | None = None,
) -> dict[str, Any]:
    """The plan (see the module docstring): with ``baseline`` and ``effect``, per comparison and
    metric the questions that detect a paired difference of ``effect`` with ``power``; with
    ``half_width``, per cell and metric the questions for a ``1 - alpha`` interval that narrow."""
    if effect is not None and baseline is None:
        raise ConfigError("--effect needs --baseline P: the protocol folder each cell is compared with")
    if baseline is not None and effect is None:
        raise ConfigError("--baseline needs --effect D: the smallest paired difference worth detecting")
    if effect is None and half_width is None:
        raise ConfigError("give --effect D (with --baseline P) for comparisons, or --half-width W for cells")
    if effect is not None and not (math.isfinite(effect) and effect != 0):
        raise ConfigError(f"--effect must be a non-zero number, got {effect}")
    if half_width is not None and not (math.isfinite(half_width) and half_width > 0):
        raise ConfigError(f"--half-width must be a positive number, got {half_width}")
    if not 0.0 < power < 1.0:
        raise ConfigError(f"--power must lie strictly between 0 and 1, got {power}")
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"--alpha must lie strictly between 0 and 1, got {alpha}")
    check_score(score)
    folder = RunFolder(run_dir)
    cfg = folder.config
    eps_v = check_eps(cfg.get("eps", DEFAULT_EPS) if eps is None else eps)
    policy = check_policy(parse_failures or cfg.get("parse_failures", "exclude"))
    cells: list[tuple[CellStats, dict[str, Any]]] = []
    clusters: dict[str, str] = {}
    n_lines = 0
    for cell in folder.cells():
        acc = CellStats(paired_score=score)
        for ln in ResultsFile(cell.results_path):
            acc.add_stored(ln, eps=eps_v, policy=policy)
            clusters.setdefault(ln["question_id"], _cluster_label(ln, "source"))
        n_lines += acc.n_lines
        cells.append((acc, cell_meta(acc, cell)))
    if not n_lines:
        raise ConfigError(f"no results under {folder.path}: the pilot has not finished a question yet")
    per_q, by_cell = _usage_per_question(folder, n_lines, {m["cell"]: a.n_lines for a, m in cells})

    def usage_of(*keys: str) -> list[dict[str, Any] | None]:
        return [by_cell.get(k) for k in keys] if by_cell is not None else [per_q] * len(keys)

    out: dict[str, Any] = {
        "run_dir": str(folder.path),
        "alpha": alpha,
        "score": score,
        "pilot_questions": {m["cell"]: a.n_lines for a, m in cells},
        "usage_per_question": per_q,
        # per cell when the usage log names each event's cell; else every cell at the average
        "usage_per_question_by_cell": by_cell,
        "comparisons": [],
        "cells": [],
    }
    if effect is not None and baseline is not None:
        by_key = {m["cell"]: a for a, m in cells}
        out.update(baseline=baseline, effect=effect, power=power)
        for comp in paired_comparisons(cells, baseline, score):
            a, b = by_key[comp["cell"]], by_key[comp["baseline_cell"]]
            for name, key in METRICS:
                va, vb = a.paired_values(key), b.paired_values(key)
                diffs = {q: va[q] - vb[q] for q in va.keys() & vb.keys()}
                head = {"cell": comp["cell"], "baseline_cell": comp["baseline_cell"], "metric": name}
                row, n, sd, deff = _pilot_row(head, diffs, clusters, "shared scored question(s)")
                if "why" not in row:
                    q = questions_for_power(sd, effect, power=power, alpha=alpha, deff=deff)
                    row["questions"] = q
                    row["power_at_pilot_n"] = power_at(n, sd, effect, alpha=alpha, deff=deff)
                    row["expected"] = _expected(usage_of(comp["cell"], comp["baseline_cell"]), q)
                out["comparisons"].append(row)
        if not out["comparisons"]:
            why = why_no_comparison([m for _, m in cells], baseline)
            if half_width is None:  # nothing at all to plan: a user error, not an empty table
                raise ConfigError(f"nothing to plan: {why}")
            out["no_comparison"] = why
    if half_width is not None:
        out["half_width"] = half_width
        for a, m in cells:
            for name, key in METRICS:
                head = {"cell": m["cell"], "metric": name}
                row, n, sd, deff = _pilot_row(head, a.paired_values(key), clusters, "scored question(s)")
                if "why" not in row:
                    q = questions_for_half_width(sd, half_width, alpha=alpha, deff=deff)
                    row["questions"] = q
                    row["expected"] = _expected(usage_of(m["cell"]), q)
                out["cells"].append(row)
    return out
