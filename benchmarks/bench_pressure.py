"""Cost of the optimization-pressure analysis and of the Inspect export on a best-of-N run.

    python benchmarks/bench_pressure.py [--questions 1000] [--json out.json]

Runs examples/best_of_n.yaml (scripted coin model: Consultancy and SimultaneousDebate, N = 1, 2,
4, 8: 8 cells) on N arithmetic questions, then times: ``summarize_run`` (what ``seerbench stats
--json`` computes, pressure included), ``optimization_pressure`` alone, and ``export_inspect``
(one .eval log per cell; total size). No assertions: the figures go in the issue notes.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    from seerbench.analysis import optimization_pressure
    from seerbench.analysis.run import summarize_run
    from seerbench.experiment import Experiment, ExperimentConfig
    from seerbench.export import export_inspect, inspect_available

    out: dict[str, Any] = {"questions": args.questions}
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "bon"
        cfg = ExperimentConfig.from_yaml(REPO / "examples" / "best_of_n.yaml").with_updates(
            out=str(run), dataset={"name": "arithmetic", "n": args.questions, "seed": 0}
        )
        t = time.perf_counter()
        Experiment(cfg).run()
        out["run_s"] = time.perf_counter() - t
        t = time.perf_counter()
        summary = summarize_run(run)
        out["stats_s"] = time.perf_counter() - t
        t = time.perf_counter()
        res = optimization_pressure(run)
        out["pressure_s"] = time.perf_counter() - t
        out["groups"] = len(res.groups)
        out["slopes"] = {g.axes["protocol"]: g.slope.to_dict() if g.slope else None for g in res.groups}
        assert "pressure" in summary
        if inspect_available():
            t = time.perf_counter()
            ex = export_inspect(run)
            out["inspect_export_s"] = time.perf_counter() - t
            out["inspect_samples"] = ex.n_samples
            out["inspect_bytes"] = sum(p.stat().st_size for p in ex.logs.values())
    for k, v in out.items():
        print(f"{k}: {v:.2f}" if isinstance(v, float) else f"{k}: {v}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
