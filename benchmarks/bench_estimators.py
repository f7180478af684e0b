"""Timing of the complementary-label estimators and bounds on 10^6 labels (issue 5).

Run: ``python benchmarks/bench_estimators.py [--n 1000000] [--json out.json]``. Prints one row per
step with the best of ``--repeat`` wall-clock timings. No assertions: the target (each step under 1 s
on 10^6 labels) is for a person to read off.

Steps: simulating the protocol (Algorithm 1) on n items, counting the labels (LabelSet.counts), every
estimator and bound from the counts, the whole ``estimate_all`` report, and writing + reading the
labels as labels.csv (the CSV reader is pure Python and validates row by row, so it is the slow part).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from seerbench.estimators import (
    bernstein_ivw_bound,
    bernstein_mixture_bound,
    complementary_accuracy,
    complementary_bound,
    estimate_all,
    expand_complementary,
    ivw_accuracy,
    mixture_accuracy,
    ml_accuracy,
    ordinary_accuracy,
    read_labels_csv,
    simulate_protocol,
    union_mixture_bound,
    write_labels_csv,
)


def _best(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="number of labels (items)")
    ap.add_argument("--k", type=int, default=4, help="options per item")
    ap.add_argument("--repeat", type=int, default=3, help="timings per step; the best is reported")
    ap.add_argument("--json", type=Path, default=None, help="also write the results as JSON here")
    ap.add_argument("--skip-csv", action="store_true", help="skip the labels.csv write/read steps")
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    y = rng.integers(1, args.k + 1, args.n)
    pred = np.where(rng.random(args.n) < 0.7, y, rng.integers(1, args.k + 1, args.n))
    sim = simulate_protocol(y, pred, args.k, seed=0)
    labels = sim.labels
    counts = labels.counts()

    steps: list[tuple[str, Callable[[], Any]]] = [
        ("simulate_protocol (Algorithm 1)", lambda: simulate_protocol(y, pred, args.k, seed=0)),
        (f"expand_complementary ({args.k - 1} per item)", lambda: expand_complementary(y, pred, args.k)),
        ("LabelSet.counts", labels.counts),
        ("ordinary_accuracy", lambda: ordinary_accuracy(counts)),
        ("complementary_accuracy (Eq. 2-3)", lambda: complementary_accuracy(counts)),
        ("ivw_accuracy (Eq. 7)", lambda: ivw_accuracy(counts)),
        ("mixture_accuracy (w=0.5)", lambda: mixture_accuracy(counts, 0.5)),
        ("ml_accuracy (Eq. 9)", lambda: ml_accuracy(counts)),
        ("complementary_bound (Thm 2)", lambda: complementary_bound(counts, 0.05)),
        ("union_mixture_bound (Prop 3, IVW w)", lambda: union_mixture_bound(counts, None, 0.05)),
        ("bernstein_mixture_bound (Thm 4 / Eq. 15)", lambda: bernstein_mixture_bound(counts, 0.5, 0.05)),
        ("bernstein_ivw_bound (Eq. 16)", lambda: bernstein_ivw_bound(counts, 0.05)),
        ("counts + every estimator and bound", lambda: estimate_all(labels.counts())),
    ]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "labels.csv"
        if not args.skip_csv:
            steps += [
                ("write_labels_csv", lambda: write_labels_csv(path, labels)),
                ("read_labels_csv (validating)", lambda: read_labels_csv(path)),
            ]
        for name, fn in steps:
            results.append({"step": name, "seconds": _best(fn, args.repeat)})

    print(f"n={args.n} labels, K={args.k}, n_o={counts.n_o}, n_c={counts.n_c}; best of {args.repeat}")
    width = max(len(r["step"]) for r in results)
    print(f"{'step':<{width}}  seconds")
    for r in results:
        print(f"{r['step']:<{width}}  {r['seconds']:.6f}")
    if args.json is not None:
        meta = {"n": args.n, "k": args.k, "repeat": args.repeat, "python": platform.python_version()}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**meta, "results": results}, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
