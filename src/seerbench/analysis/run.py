"""The statistics of a whole run folder, as ``seerbench stats --json`` prints them: every cell
rescored, paired differences against a baseline, and the optimization-pressure section."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from seerbench.analysis._elo import elo_section
from seerbench.analysis._pressure import pressure_section
from seerbench.errors import ConfigError
from seerbench.metrics import DEFAULT_EPS
from seerbench.results import CellStats, rescore
from seerbench.runs import (
    UNFINISHED,
    ResultsFile,
    RunFolder,
    cell_meta,
    check_beta,
    check_eps,
    check_policy,
    check_score,
    paired_comparisons,
)

__all__ = ["MAX_REASONS", "summarize_run"]

#: At most this many skip reasons are reported (the count is always complete).
MAX_REASONS = 20


def _beside_elo(elo: dict[str, Any], cells: list[dict[str, Any]], *, beta: float, score: str) -> None:
    """The seed's comparison: beside each debater's Elo, its ASD and ASE (``score``, ``beta``) as
    the agent, averaged over its cross-play cells of that protocol and judge (one per opponent)."""
    from seerbench.metrics import beta_key

    ase = f"ase_{beta_key(beta)}"
    for t in elo["tournaments"]:
        for r in t["ratings"]:
            mine = [
                s
                for s in cells
                if s.get("adversary") is not None
                and s.get("agent") == r["debater"]
                and s.get("protocol") == t["protocol"]
                and s.get("judge") == t["judge"]
            ]
            for key, metric in (("asd", "asd"), ("ase", ase)):
                vals = [((s["metrics"].get(metric) or {}).get(score) or {}).get("mean") for s in mine]
                ok = [float(v) for v in vals if v is not None and math.isfinite(float(v))]
                r[key] = sum(ok) / len(ok) if ok else None
        t["score"], t["beta"] = score, beta


def summarize_run(
    run_dir: str | Path,
    *,
    beta: float = 1.0,
    score: str = "log",
    eps: float | None = None,
    parse_failures: str | None = None,
    baseline: str | None = None,
) -> dict[str, Any]:
    """Statistics of every cell of a run folder, rescored with ``eps`` and ``parse_failures``
    (default: the run's own), plus paired differences against the protocol folder ``baseline``
    on the same questions. Pure: the folder is not changed.

    Returns ``{"run_dir", "cells": [stats...], "paired": [...], "skipped_lines": n}``; when grid
    cells have no finished question yet, ``not_started`` (their keys); when lines were skipped,
    ``skipped_reasons`` (the first 20, ``FILE:LINE: reason``); when cells differ only in
    best-of-N, ``pressure`` (:func:`seerbench.analysis.optimization_pressure`); when it has
    cross-play cells, ``elo`` (:func:`seerbench.analysis._elo.elo_section`)."""
    folder = RunFolder(run_dir)
    cfg = folder.config
    check_beta(beta)
    check_score(score)
    eps_v = check_eps(cfg.get("eps", DEFAULT_EPS) if eps is None else eps)
    policy = check_policy(parse_failures or cfg.get("parse_failures", "exclude"))
    betas = sorted({0.0, 1.0, math.inf, beta})
    cells: list[tuple[list[dict[str, Any]] | CellStats, dict[str, Any]]] = []
    skipped = 0
    reasons: list[str] = []
    for cell in folder.cells():
        # one line at a time: a cell keeps a few floats per question, never its lines
        acc = CellStats(betas=betas, paired_score=score if baseline else None)
        f = ResultsFile(cell.results_path, reasons=reasons)
        for ln in f:
            acc.add(rescore(ln, eps=eps_v, policy=policy, betas=betas))
        skipped += f.skipped
        s = acc.stats(
            cell_meta(acc, cell),
            eps=eps_v,
            policy=policy,
            n_boot=cfg.get("n_boot", 2000),
            seed=cfg.get("seed", 0),
        )
        if f.skipped:
            s["skipped_lines"] = f.skipped
        if not (cell.folder / "stats.json").is_file():
            s["unfinished"] = True
            s["diagnostics"]["warnings"].insert(0, UNFINISHED)
        cells.append((acc if baseline else [], s))  # the per-question values only for paired differences
    if not cells:
        raise ConfigError(f"no results.jsonl under {folder.path}: the run has not finished a question yet")
    comparisons = paired_comparisons(cells, baseline, score) if baseline else []
    out = {
        "run_dir": str(folder.path),
        "cells": [s for _, s in cells],
        "paired": comparisons,
        "skipped_lines": skipped,
    }
    have = {c.key for c in folder.cells()}
    missing = [k for k in folder.meta.get("cells") or {} if k not in have]
    if missing:  # in the grid, no question finished yet (the run stopped before them)
        out["not_started"] = missing
    out.update(
        pressure_section(
            folder.path, [s for _, s in cells], beta=beta, score=score, eps=eps_v, parse_failures=policy
        )
    )
    elo = elo_section(folder.path, n_boot=int(cfg.get("n_boot", 2000)), seed=int(cfg.get("seed", 0)))
    if elo:  # cross-play cells: Elo ratings of the debaters (docs/tournaments.md)
        _beside_elo(elo, [s for _, s in cells], beta=beta, score=score)
        out["elo"] = elo
    if reasons:
        out["skipped_reasons"] = reasons[:MAX_REASONS]
    return out
