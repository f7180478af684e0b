"""Timing of the complementarity analysis (issue 9) on 10^5 human ratings and 20 thresholds.

Run: ``python benchmarks/bench_complementarity.py [--items 10000] [--ratings 5] [--n-boot 1000]
[--json out.json]``. Prints one row per step (wall-clock seconds, one run each). No assertions:
"seconds, not minutes" is for a person to read off.

Data: simulated AI ratings on ``--items`` items and simulated raters (``--raters``) judging every
item ``--ratings`` times in two conditions (unassisted, and an assistant followed with
probability 0.4), written as study export rows: items x ratings x 2 judgments in all.

Steps: simulating the rows; matching them to the AI ratings (``human_data``); the threshold sweep
with the cluster bootstrap (three resamplings of ``--n-boot`` replicates each) for one condition,
majority vote and individual ratings; reliance; the mixed-effects fit (GPBoost, when installed);
and ``analyze`` (all of it, both conditions).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from seerbench.complementarity import (
    ai_items,
    analyze,
    gpboost_available,
    human_data,
    hybrid_sweep,
    mixed_effects,
    reliance,
    simulate_ai_ratings,
    simulate_judgments,
)

THRESHOLDS = [round(0.5 + 0.025 * k, 3) for k in range(20)]


def _timed(name: str, fn: Callable[[], Any], out: dict[str, float]) -> Any:
    t0 = time.perf_counter()
    r = fn()
    out[name] = time.perf_counter() - t0
    print(f"{name:<46} {out[name]:8.2f} s", flush=True)
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--ratings", type=int, default=5, help="ratings per item per condition")
    ap.add_argument("--raters", type=int, default=500)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    times: dict[str, float] = {}
    ai = simulate_ai_ratings(args.items, seed=0)
    conds = {"none": 0.0, "trace": 0.4}
    rows = _timed(
        "simulate rows",
        lambda: simulate_judgments(ai, conds, n_raters=args.raters, ratings_per_item=args.ratings, seed=1),
        times,
    )
    print(
        f"{len(rows)} human ratings, {args.items} items, "
        f"{len(THRESHOLDS)} thresholds, n_boot {args.n_boot} x 3"
    )
    a = ai_items(ai)
    h = _timed("human_data (match rows to AI ratings)", lambda: human_data(rows, a), times)
    for agg in ("majority", "individual"):
        _timed(
            f"hybrid_sweep, one condition, {agg}",
            lambda agg=agg: hybrid_sweep(
                a, h, "none", aggregate=agg, thresholds=THRESHOLDS, n_boot=args.n_boot
            ),
            times,
        )
    _timed(
        "reliance (2 conditions x AI right/wrong)",
        lambda: reliance(a, h, unassisted="none", n_boot=args.n_boot),
        times,
    )
    if gpboost_available():
        _timed("mixed effects (GPBoost)", lambda: mixed_effects(a, h, reference="none"), times)
    _timed(
        "analyze (everything, both conditions)",
        lambda: analyze(ai, rows, thresholds=THRESHOLDS, n_boot=args.n_boot, mixed=gpboost_available()),
        times,
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "ratings": len(rows),
                    "items": args.items,
                    "raters": args.raters,
                    "thresholds": len(THRESHOLDS),
                    "n_boot": args.n_boot,
                    "seconds": times,
                    "python": platform.python_version(),
                    "cpus": os.cpu_count(),
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
