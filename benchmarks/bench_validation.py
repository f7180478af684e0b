"""What checking a results line costs: pydantic alone (as ``check_line`` was) against ``check_line``
with its pre-check (:mod:`seerbench._precheck`), in CPU µs per line (``time.process_time``).

    python benchmarks/bench_validation.py RUN_FOLDER [--rounds 3]

Over every line of the run folder's ``*/*/results.jsonl``: the check alone (lines parsed
beforehand), the check where a reader does it (``loads`` + check, less ``loads`` alone), and the
whole read (``RunFolder(...).cells()``, each cell's ``results()``) with each check and with none
(what is left is validation's share of a read). Each figure is the smallest of ``--rounds``
rounds, before and after interleaved (other work on the machine only ever adds). No assertions.
"""

from __future__ import annotations

import argparse
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import seerbench.runs as runs
from seerbench import schema
from seerbench.runs import RunFolder
from seerbench.store import loads


def pydantic_only(rec: dict[str, Any]) -> dict[str, Any]:
    schema._validate(rec)
    return rec


def nothing(rec: dict[str, Any]) -> dict[str, Any]:
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    raws = [raw for p in sorted(args.run.glob("*/*/results.jsonl")) for raw in p.read_bytes().splitlines()]
    raws = [r for r in raws if r.strip()]
    recs = [loads(r) for r in raws]
    n = len(recs)
    fits = schema._fits()
    print(f"{n} lines, {sum(map(fits, recs))} of them taken by the pre-check")

    def timed(fn: Callable[[], object]) -> float:
        t = time.process_time()
        fn()
        return time.process_time() - t

    def whole_read(check: Callable[[Any], dict[str, Any]]) -> None:
        # the check ResultsFile hands the record store (setattr: mypy takes no other function there)
        setattr(runs, "check_line", check)  # noqa: B010
        try:
            for cell in RunFolder(args.run).cells():
                list(cell.results())
        finally:
            setattr(runs, "check_line", schema.check_line)  # noqa: B010

    checks = {"before": pydantic_only, "after": schema.check_line}
    # (lines checked, or parsed, one after the other and let go, as a reader does)
    work: dict[str, Callable[[], object]] = {
        "loads": lambda: deque(map(loads, raws), maxlen=0),
        "read, no check": partial(whole_read, nothing),
    }
    for name, check in checks.items():
        work[f"alone {name}"] = partial(lambda c: deque(map(c, recs), maxlen=0), check)
        work[f"in a reader {name}"] = partial(lambda c: deque((c(loads(r)) for r in raws), maxlen=0), check)
        work[f"read {name}"] = partial(whole_read, check)
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, fn in work.items():
            best[name] = min(best.get(name, float("inf")), timed(fn) / n * 1e6)
    for name, us in best.items():
        print(f"  {name:22s} {us:7.1f} µs/line")
    rows = {  # what, and what it is less
        "check alone": ("alone", 0.0),
        "in a reader, less loads": ("in a reader", best["loads"]),
        "a read, less one with no check": ("read", best["read, no check"]),
        "whole read": ("read", 0.0),
    }
    for label, (what, base) in rows.items():
        before, after = best[f"{what} before"] - base, best[f"{what} after"] - base
        print(f"{label:32s} before {before:6.1f}  after {after:6.1f} µs/line  {before / after:.2f}x")


if __name__ == "__main__":
    main()
