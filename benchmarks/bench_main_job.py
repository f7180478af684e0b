"""Issue 27's figures side by side in one run: what a user waits for, on this machine, now.

    python benchmarks/bench_main_job.py [--quick] [--out benchmarks/results/main_job.txt]

Runs, one after the other so that they do not share the cores:

1. ``bench_local_backends.py``: judge-call latency, calls/s and generation tokens/s of both local
   engines (xllamacpp, llama-cpp-python where installed), interleaved;
2. ``bench_quickstart.py``: the README's main job from an empty cache on each engine, with the
   per-call breakdown (``--quick``: its first 2 questions);
3. ``bench_report.py``: ``seerbench report`` at 10^3 and 10^4 questions x 6 cells (and 10^5, ten
   copies of a 10^4 run, without ``--quick``): wall and CPU seconds (the fastest of three builds at
   10^3 and 10^4), peak RSS, peak PSS of all its processes, size, time to first rows;
4. ``bench_setup.py``: a fresh clone's set-up time of each of the README's two commands.

Everything each prints goes to ``--out`` as well as the terminal, headed by the machine (CPU model,
cores, load average). No assertions: the figures go in the issue notes and the scripts' docstrings.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2 quickstart questions; no 10^5 report")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "main_job.txt")
    a = ap.parse_args(argv)
    engines = ["xllamacpp"]
    try:
        import llama_cpp  # noqa: F401

        engines.append("llama-cpp-python")
    except ImportError:
        print("llama-cpp-python is not installed: its columns are left out (pip install -e '.[llama-cpp]')")
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)  # the reports (the runs are each script's own temporary folders)
        steps: list[tuple[str, list[str]]] = [
            ("engines", ["bench_local_backends.py", *(["--quick"] if a.quick else [])]),
            (
                "main job",
                ["bench_quickstart.py", "--engines", *engines, *(["--limit", "2"] if a.quick else [])],
            ),
            (
                "report 10^3",
                ["bench_report.py", "--questions", "1000", "--repeat", "3", "--keep", str(runs / "r3.html")],
            ),
            (
                "report 10^4",
                ["bench_report.py", "--questions", "10000", "--repeat", "3", "--keep", str(runs / "r4.html")],
            ),
        ]
        if not a.quick:
            steps.append(
                ("report 10^5", ["bench_report.py", "--questions", "10000", "--copies", "10", "--no-browser"])
            )
        steps.append(("set-up", ["bench_setup.py"]))
        a.out.parent.mkdir(parents=True, exist_ok=True)
        with a.out.open("w") as log:

            def say(text: str) -> None:
                print(text, flush=True)
                log.write(text + "\n")
                log.flush()

            say(
                f"# {time.strftime('%Y-%m-%d %H:%M')}  {cpu_model()}, {os.cpu_count()} cores, "
                f"load average {os.getloadavg()[0]:.1f}, python {platform.python_version()}"
            )
            for name, cmd in steps:
                say(f"\n## {name}: {' '.join(cmd)}")
                t = time.perf_counter()
                p = subprocess.Popen(
                    [sys.executable, str(HERE / cmd[0]), *cmd[1:]],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
                assert p.stdout is not None
                for line in p.stdout:
                    say(line.rstrip("\n"))
                rc = p.wait()
                say(f"({name}: exit {rc}, {time.perf_counter() - t:.0f} s)")
    print(f"\nwritten: {a.out}")


if __name__ == "__main__":
    main()
