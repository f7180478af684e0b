"""Orchestration overhead of `Experiment` with an instant scripted model.

    python benchmarks/bench_experiment.py [--sizes 100 1000 10000] [--json out.json]

For each size: N questions x 6 protocols x 2 answer cases, first run (every call a cache miss and
a write) and a second run of the finished experiment (zero model calls). Prints seconds, model
calls and calls per second. No assertions: the figures go in the issue notes.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="seerbench-bench-"))
    os.environ["SEERBENCH_CACHE_DIR"] = str(tmp / "cache")

    from seerbench.experiment import Experiment, ExperimentConfig
    from seerbench.models import default_tracker, register_scripted

    def instant(messages, config, seed):  # type: ignore[no-untyped-def]
        last = messages[-1].content
        return "0.7" if "How likely" in last else "The answer is clearly right; the numbers add up."

    register_scripted("instant", instant)
    rows = []
    for n in args.sizes:
        cfg = ExperimentConfig.parse(
            {
                "name": f"bench{n}",
                "dataset": {"name": "arithmetic", "n": n, "seed": 0},
                "judge_models": ["scripted:instant"],
                "agent_models": ["scripted:instant"],
                "protocols": [
                    "NaiveJudge",
                    "BlindTrust",
                    "Consultancy",
                    "OpenConsultancy",
                    "SimultaneousDebate",
                    "SequentialDebate",
                ],
                "elicitation": {"order": ["verbalized"]},
                "concurrency": 64,
                "n_boot": 1000,
                "out": str(tmp / f"run{n}"),
            }
        )
        for attempt in ("first", "second"):
            tracker = default_tracker()
            c0 = tracker.totals().calls
            t0 = time.perf_counter()
            Experiment(cfg).run()
            dt = time.perf_counter() - t0
            calls = tracker.totals().calls - c0
            rows.append(
                {
                    "questions": n,
                    "run": attempt,
                    "seconds": round(dt, 2),
                    "model_calls": calls,
                    "calls_per_s": round(calls / dt) if calls else 0,
                    "question_cells_per_s": round(n * 6 / dt),
                }
            )
            print(
                f"{n:>6} questions  {attempt:>6} run  {dt:8.2f} s  {calls:>8} model calls  "
                f"{rows[-1]['calls_per_s']:>7} calls/s  "
                f"{rows[-1]['question_cells_per_s']:>7} question-cells/s",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
