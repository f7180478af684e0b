"""Load time and peak memory of the single_turn_debate loader on the real published file.

Run by hand: ``python benchmarks/bench_datasets.py [PATH] [--repeat N]``. Prints the number of
questions, the median and best wall time over the repeats, and the peak traced Python memory
(tracemalloc) of one load, plus the same for the binary view and seerbench JSONL round trip.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seerbench.datasets import (
    binary_view,
    load_single_turn_debate,
    read_questions_jsonl,
    write_questions_jsonl,
)

DEFAULT = Path("/work/shared/data/single_turn_debate/all_arguments.jsonl")


def _measure(fn: Callable[[], Any], repeat: int) -> tuple[Any, list[float], int]:
    times = []
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, times, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    size = args.path.stat().st_size
    qs, times, peak = _measure(lambda: load_single_turn_debate(args.path), args.repeat)
    n_args = sum(1 for q in qs for c in q.answer_cases if c.argument)
    print(f"file: {args.path} ({size / 1e6:.2f} MB)")
    print(f"questions: {len(qs)}  arguments: {n_args}  skipped: {qs.skipped}")
    print(
        f"load: median {statistics.median(times) * 1e3:.1f} "
        f"ms, best {min(times) * 1e3:.1f} ms over {args.repeat}"
    )
    print(f"load peak traced memory: {peak / 1e6:.1f} MB")
    _, bt, bpeak = _measure(lambda: binary_view(qs, seed=0), args.repeat)
    print(f"binary_view: median {statistics.median(bt) * 1e3:.1f} ms, peak {bpeak / 1e6:.1f} MB")
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "q.jsonl"
        _, wt, _ = _measure(lambda: write_questions_jsonl(qs, out), args.repeat)
        _, rt, rpeak = _measure(lambda: read_questions_jsonl(out), args.repeat)
        print(
            f"seerbench JSONL ({out.stat().st_size / 1e6:.2f} MB): write median "
            f"{statistics.median(wt) * 1e3:.1f} ms, read median "
            f"{statistics.median(rt) * 1e3:.1f} ms, read peak {rpeak / 1e6:.1f} MB"
        )


if __name__ == "__main__":
    main()
