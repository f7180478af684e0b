"""Timing of critique generation (issue 10): 1,000 answers x 8 temperatures with an instant
scripted model (``scripted:critic``), wall time and backend calls, then the cache-hit rerun into a
new folder (about 0 calls); and de-duplication of 10^4 critiques (1,250 answers x 8, as the
generator dedups them: per answer).

Run: ``python benchmarks/bench_critique.py [--questions 334] [--json out.json]``. Prints one row
per step (wall-clock seconds, one run each). No assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from seerbench.critique import CritiqueConfig, dedup, generate_critiques
from seerbench.models import Cache, Model, ScriptedBackend


def _generation(questions: int, tmp: Path) -> list[dict[str, Any]]:
    cfg = CritiqueConfig.parse(
        {
            "model": "scripted:critic",
            "dataset": {"name": "arithmetic", "n": questions, "seed": 0},
            "elicitation": {"order": ["verbalized"]},
            "out": str(tmp / "first"),
            "concurrency": 64,
        }
    )
    backend = ScriptedBackend("critic")
    model = Model("scripted:critic", backend, cache=Cache(tmp / "cache"))
    rows = []
    for label, out in (("generate", "first"), ("cache-hit rerun (new folder)", "second")):
        before = backend.calls
        t0 = time.perf_counter()
        res = asyncio.run(generate_critiques(cfg.model_copy(update={"out": str(tmp / out)}), critic=model))
        wall = time.perf_counter() - t0
        rows.append(
            {
                "step": label,
                "answers": len(res.answers),
                "temperatures": len(cfg.temperatures),
                "critiques_kept": sum(len(a.critiques) for a in res.answers),
                "backend_calls": backend.calls - before,
                "wall_s": round(wall, 2),
                "failed": len(res.failed),
            }
        )
    return rows


def _phrases(rng: random.Random) -> list[str]:
    subjects = ["The answer", "This answer", "The reply", "The response"]
    flaws = [
        "states {a} where the correct value is {b}",
        "leaves out the step {a} + {b}",
        "names the wrong town for person {a}",
        "does not explain the step {a} / {b}",
        "is too short",
        "gives no reason for {a}",
        "contradicts the passage about {b}",
        "rounds {a} to {b}",
    ]
    out = []
    for _ in range(8):
        f = rng.choice(flaws).format(a=rng.randrange(100), b=rng.randrange(100))
        s = rng.choice(subjects)
        out.append(rng.choice([f"{s} {f}.", f"{s} {f}", f"In short, {s.lower()} {f}!"]))
    return out


def _dedup(n_answers: int) -> dict[str, Any]:
    rng = random.Random(0)
    sets = [_phrases(rng) for _ in range(n_answers)]
    t0 = time.perf_counter()
    kept = sum(len(dedup(s)) for s in sets)
    wall = time.perf_counter() - t0
    n = sum(len(s) for s in sets)
    return {
        "step": f"dedup {n} critiques ({n_answers} answers x 8)",
        "kept": kept,
        "wall_s": round(wall, 3),
        "per_critique_us": round(wall / n * 1e6, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--questions", type=int, default=334, help="questions (x3 answer kinds: 334 gives 1,002 answers)"
    )
    ap.add_argument("--dedup-answers", type=int, default=1250)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        os.environ["SEERBENCH_CACHE_DIR"] = str(Path(d) / "default-cache")
        rows = _generation(a.questions, Path(d))
    rows.append(_dedup(a.dedup_answers))
    for r in rows:
        print(json.dumps(r))
    info = {"python": platform.python_version(), "cpus": os.cpu_count(), "rows": rows}
    if a.json:
        a.json.write_text(json.dumps(info, indent=2))


if __name__ == "__main__":
    main()
