"""Timing of the factcheck corpus search (issue 9): queries per second over a 10^4-page corpus,
and the AI rater on the embedded model (seconds per item at N = 5 and N = 50, and the cache-hit
rerun).

Run: ``python benchmarks/bench_factcheck.py [--entities 2500] [--queries 2000] [--json out.json]``
for the search; add ``--rater --items 3`` for the rater on the embedded model (``--model local``;
minutes). Prints one row per step (wall-clock seconds, one run each). No assertions.

Search: the generated set with ``--entities`` entities (2,500 gives about 10^4 pages), an FTS5
index in memory, then ``--queries`` queries made from the set's sentences (what the rater asks),
one at a time, 5 results each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from seerbench.factcheck import CorpusIndex, generate_factcheck


def bench_search(entities: int, queries: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    fc = generate_factcheck(entities=entities, seed=0)
    t1 = time.perf_counter()
    ix = CorpusIndex(fc.pages)
    t2 = time.perf_counter()
    qs = [it.sentence for it in fc.items[:queries]]
    hits = 0
    for q in qs:
        hits += len(ix.search(q, k=5))
    t3 = time.perf_counter()
    return {
        "pages": len(fc.pages),
        "sentences": len(fc.items),
        "generate_s": round(t1 - t0, 3),
        "index_s": round(t2 - t1, 3),
        "queries": len(qs),
        "search_s": round(t3 - t2, 3),
        "queries_per_s": round(len(qs) / (t3 - t2), 1),
        "mean_hits": round(hits / max(len(qs), 1), 2),
    }


def bench_rater(
    model: str, items: int, samples: list[int], max_tokens: int, rounds: int
) -> list[dict[str, Any]]:
    from seerbench.factcheck import RaterConfig, rate

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SEERBENCH_CACHE_DIR"] = str(Path(tmp) / "cache")
        for n in samples:
            cfg = RaterConfig.model_validate(
                {
                    "name": f"bench-{n}",
                    "model": model,
                    "samples": n,
                    "out": str(Path(tmp) / f"run{n}"),
                    "max_tokens": max_tokens,
                    "max_search_rounds": rounds,
                    "dataset": {"name": "factcheck", "entities": 30, "seed": 0, "n": items},
                }
            )
            for label in ("fresh", "cache hit"):
                if label == "cache hit":
                    for f in Path(cfg.out).glob("*"):
                        f.unlink()
                t = time.perf_counter()
                res = asyncio.run(rate(cfg))
                dt = time.perf_counter() - t
                out.append(
                    {
                        "samples": n,
                        "run": label,
                        "items": items,
                        "s_per_item": round(dt / items, 2),
                        "verified_share": round(
                            sum(r.n_verified for r in res.ratings) / max(1, n * items), 3
                        ),
                    }
                )
                print(
                    f"rater N={n:<3} {label:<9} {dt / items:8.2f} "
                    f"s/item  (verified share {out[-1]['verified_share']})",
                    flush=True,
                )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entities", type=int, default=2500)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--rater", action="store_true", help="also time the AI rater")
    ap.add_argument("--model", default="local")
    ap.add_argument("--items", type=int, default=3)
    ap.add_argument("--samples", default="5,50")
    ap.add_argument("--max-tokens", type=int, default=400, help="rater max_tokens per reply")
    ap.add_argument("--rounds", type=int, default=2, help="rater max_search_rounds")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    res: dict[str, Any] = {"python": platform.python_version(), "cpus": os.cpu_count()}
    s = bench_search(a.entities, a.queries)
    res["search"] = s
    print(f"corpus: {s['pages']} pages  generate {s['generate_s']} s  index {s['index_s']} s")
    print(f"search: {s['queries']} queries in {s['search_s']} s = {s['queries_per_s']} queries/s (top 5)")
    if a.rater:
        res["rater"] = bench_rater(
            a.model, a.items, [int(x) for x in a.samples.split(",")], a.max_tokens, a.rounds
        )
    if a.json:
        a.json.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
