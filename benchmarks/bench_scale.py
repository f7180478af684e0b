"""Scale of a grid run: wall time, model calls per second and peak RSS at 10^3..10^5 questions.

    python benchmarks/bench_scale.py [--sizes 1000 10000 100000] [--executor local|ray] [--json out.json]

Each size runs in a fresh child process (so peak RSS is that size's alone): N arithmetic questions
x 6 protocols x 2 answer cases with an instant scripted model (registered by a plugin file, so Ray
workers have it too), then ``seerbench stats`` over the finished folder in another child. Prints
seconds, model calls, calls/s and the peak RSS of each child. No assertions: the figures go in the
issue notes. 10^5 questions takes many minutes on 2 cores: run it in the background.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROTOCOLS = [
    "NaiveJudge",
    "BlindTrust",
    "Consultancy",
    "OpenConsultancy",
    "SimultaneousDebate",
    "SequentialDebate",
]

RESPONDERS = """
from seerbench.models import register_scripted


def instant(messages, config, seed):
    last = messages[-1].content
    return "0.7" if "How likely" in last else "The answer is clearly right; the numbers add up."


register_scripted("instant", instant, replace=True)
"""


def _child_run(folder: Path, n: int, executor: str) -> dict[str, object]:
    from seerbench.experiment import Experiment, ExperimentConfig
    from seerbench.models import default_tracker

    cfg = ExperimentConfig.parse(
        {
            "name": f"scale{n}",
            "plugins": [str(folder / "responders.py")],
            "dataset": {"name": "arithmetic", "n": n, "seed": 0},
            "judge_models": ["scripted:instant"],
            "agent_models": ["scripted:instant"],
            "protocols": PROTOCOLS,
            "elicitation": {"order": ["verbalized"]},
            "concurrency": 64,
            "n_boot": 1000,
            "out": str(folder / f"run{n}"),
        },
        base_dir=folder,
    )
    exp = Experiment(cfg)
    if executor == "ray":
        from seerbench.experiment import RayExecutor

        exp.executor = RayExecutor(num_cpus=1)
    t0 = time.perf_counter()
    exp.run()
    dt = time.perf_counter() - t0
    calls = default_tracker().totals().calls
    return {"seconds": round(dt, 2), "model_calls": calls}


def _child_stats(folder: Path, n: int) -> dict[str, object]:
    from seerbench.analysis.run import summarize_run

    t0 = time.perf_counter()
    s = summarize_run(folder / f"run{n}")
    return {"seconds": round(time.perf_counter() - t0, 2), "cells": len(s["cells"])}


def child(what: str, folder: Path, n: int, executor: str) -> None:
    os.environ["SEERBENCH_CACHE_DIR"] = str(folder / f"cache{n}")  # a fresh cache per size: every call a miss
    row = _child_run(folder, n, executor) if what == "run" else _child_stats(folder, n)
    row["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(row))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--executor", choices=["local", "ray"], default="local")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--child", nargs=4, metavar=("WHAT", "FOLDER", "N", "EXECUTOR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        what, folder, n, executor = args.child
        child(what, Path(folder), int(n), executor)
        return
    tmp = Path(tempfile.mkdtemp(prefix="seerbench-scale-"))
    (tmp / "responders.py").write_text(RESPONDERS)
    rows = []
    for n in args.sizes:
        row: dict[str, Any] = {
            "questions": n,
            "protocols": len(PROTOCOLS),
            "executor": args.executor,
            "load_average_before": [round(x, 2) for x in os.getloadavg()],
        }
        for what in ("run", "stats"):
            out = subprocess.run(
                [sys.executable, __file__, "--child", what, str(tmp), str(n), args.executor],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            res = json.loads(out.strip().splitlines()[-1])
            row.update({f"{what}_{k}": v for k, v in res.items()})
        row["calls_per_s"] = round(row["run_model_calls"] / row["run_seconds"])
        rows.append(row)
        print(
            f"{n:>7} questions x {len(PROTOCOLS)}  run {row['run_seconds']:>8} s  "
            f"{row['run_model_calls']:>8} calls  {row['calls_per_s']:>6} calls/s  peak RSS "
            f"{row['run_peak_rss_mb']:>5} MB  |  stats {row['stats_seconds']:>6} "
            f"s  peak RSS {row['stats_peak_rss_mb']:>5} MB",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
