"""`seerbench report` at scale: a 10,000-question x 6-protocol run (scripted model).

    python benchmarks/bench_report.py [--questions 10000] [--copies 1] [--run DIR] [--keep DIR]
                                      [--repeat N] [--no-browser] [--json FILE]

Makes the run (arithmetic questions, the six protocols of bench_scale.py, an instant scripted
model; skipped when ``--run`` names a finished one; ``--copies K`` then repeats every cell's lines
K times under new question ids, for 10^5 questions without an hour of running), then in a fresh
child process builds its report (wall seconds; CPU seconds and peak RSS of the report's process
and of the statistics' worker processes it forks for a large run; the peak proportional set size of
all of them together, sampled every 100 ms, which counts the pages a worker shares with its parent
once; the report's size, one file or
the folder it becomes past the one-file limit), and opens it in headless Chromium from file:// with
the network blocked: seconds to the load event, seconds until the transcript browser shows its
first page, how many rows are in the DOM (one page, not all of them), the JS heap, and seconds for
a full-text search over every row. No assertions: the figures go in docs/report.md.
"""

from __future__ import annotations

import argparse
import json
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
CHROMIUM = "/usr/bin/chromium"

RESPONDERS = """
from seerbench.models import register_scripted


def instant(messages, config, seed):
    last = messages[-1].content
    return "0.7" if "How likely" in last else "The answer is clearly right; the numbers add up."


register_scripted("instant", instant, replace=True)
"""


def make_run(folder: Path, n: int) -> Path:
    from seerbench.experiment import Experiment, ExperimentConfig

    (folder / "responders.py").write_text(RESPONDERS)
    cfg = ExperimentConfig.parse(
        {
            "name": f"report{n}",
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
    t0 = time.perf_counter()
    Experiment(cfg).run()
    print(f"run: {n} questions x {len(PROTOCOLS)} protocols in {time.perf_counter() - t0:.1f} s", flush=True)
    return folder / f"run{n}"


def copy_run(run: Path, folder: Path, copies: int) -> Path:
    """``run`` with every cell's lines written ``copies`` times, question ids (and the questions'
    own ids) suffixed ``~k`` for the k-th copy: a bigger run of the same shape, in a few seconds."""
    import shutil

    out = folder / f"{run.name}x{copies}"
    shutil.copytree(run, out, ignore=shutil.ignore_patterns("results.jsonl", "report*"))
    for res in run.glob("*/*/results.jsonl"):
        lines = res.read_text().splitlines()
        with open(out / res.relative_to(run), "w") as f:
            for k in range(copies):
                for ln in lines:
                    rec = json.loads(ln)
                    rec["question_id"] = rec["question"]["id"] = f"{rec['question_id']}~{k}"
                    f.write(json.dumps(rec) + "\n")
    return out


def _pss_kb(pid: int) -> int:
    """The proportional set size of process ``pid`` and of its descendants (Linux), in KiB: pages
    shared by a forked worker and its parent counted once, split between them, where the sum of
    their peak RSS counts them in each."""
    total = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1])
        for task in Path(f"/proc/{pid}/task").iterdir():
            for kid in (task / "children").read_text().split():
                total += _pss_kb(int(kid))
    except (OSError, ValueError):  # gone meanwhile, or not Linux
        pass
    return total


class _PeakPss:
    """Samples :func:`_pss_kb` of this process and its workers every 100 ms in a thread: the peak
    memory the report takes from the machine, all its processes together."""

    def __init__(self) -> None:
        import os
        import threading

        self.peak, self._stop = 0, threading.Event()
        self._thread = threading.Thread(target=self._run, args=(os.getpid(),), daemon=True)
        self._thread.start()

    def _run(self, pid: int) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, _pss_kb(pid))

    def stop(self) -> float | None:
        self._stop.set()
        self._thread.join()
        return self.peak / 1024 if self.peak else None


def _child_report(run: Path, out: Path) -> dict[str, Any]:
    from seerbench.report import build_report

    pss = _PeakPss()
    t0, c0 = time.perf_counter(), time.process_time()
    path = build_report([run], out)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # the statistics' worker processes, if any
    return {
        "peak_pss_all_mb": pss.stop(),
        "path": str(path),
        "report_s": time.perf_counter() - t0,
        "report_cpu_s": time.process_time() - c0,
        "workers_cpu_s": kids.ru_utime + kids.ru_stime,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "workers_peak_rss_mb": kids.ru_maxrss / 1024,
    }


def report_size(path: Path) -> dict[str, Any]:
    """The page's size and, for a report folder, everything in it."""
    files = [path] if path.name != "index.html" else [f for f in path.parent.rglob("*") if f.is_file()]
    return {
        "page_mb": path.stat().st_size / 1e6,
        "total_mb": sum(f.stat().st_size for f in files) / 1e6,
        "files": len(files),
    }


def open_in_chromium(path: Path) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    url = path.resolve().as_uri()
    mine = path.resolve().parent.as_uri() + "/" if path.name == "index.html" else url  # its transcripts
    out: dict[str, Any] = {}
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"], headless=True
        )
        ctx = b.new_context(offline=True)
        blocked: list[str] = []
        ctx.route(
            "**/*",
            lambda r: (
                r.continue_()
                if r.request.url.startswith(mine)
                else (blocked.append(r.request.url), r.abort())
            ),
        )
        page = ctx.new_page()
        t0 = time.perf_counter()
        page.goto(url, wait_until="load", timeout=300_000)
        out["load_s"] = time.perf_counter() - t0
        page.wait_for_selector(".tb-row", timeout=300_000)  # the first page's transcripts loaded
        out["first_rows_s"] = time.perf_counter() - t0
        out["rows_in_dom"] = page.locator(".tb-row").count()
        out["dom_nodes"] = page.evaluate("() => document.getElementsByTagName('*').length")
        heap = page.evaluate("() => performance.memory ? performance.memory.usedJSHeapSize : null")
        out["js_heap_mb"] = None if heap is None else heap / 1e6
        t1 = time.perf_counter()
        page.fill("#tb-search", "tank")
        page.wait_for_function(
            "() => document.getElementById('tb-status').textContent.indexOf('of') >= 0 && "
            "document.getElementById('tb-search').value === 'tank'"
        )
        page.wait_for_timeout(200)  # the search runs 150 ms after the last keystroke
        page.wait_for_function(
            "() => /rows 1–|no rows/.test(document.getElementById('tb-status').textContent)"
        )
        out["search_s_incl_200ms_debounce"] = time.perf_counter() - t1
        out["status_after_search"] = page.locator("#tb-status").text_content()
        out["blocked_requests"] = len(blocked)
        b.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=10_000)
    ap.add_argument("--run", type=Path, help="a finished run folder to report on (default: make one)")
    ap.add_argument("--copies", type=int, default=1, help="repeat every cell's lines K times (new ids)")
    ap.add_argument("--keep", type=Path, help="write the report here (default: a temporary folder)")
    ap.add_argument("--no-browser", action="store_true", help="skip opening it in Chromium")
    ap.add_argument("--repeat", type=int, default=1, help="build it N times; the fastest is reported")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run or make_run(Path(tmp), args.questions)
        if args.copies > 1:
            run = copy_run(run, Path(tmp), args.copies)
        out = args.keep or Path(tmp) / "report.html"
        code = (
            f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import bench_report as "
            "b; from pathlib import Path; "
            f"print(json.dumps(b._child_report(Path({str(run)!r}), Path({str(out)!r}))))"
        )
        rounds = []
        for _ in range(args.repeat):
            child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            rounds.append(json.loads(child.stdout.strip().splitlines()[-1]))
        res: dict[str, Any] = {"run": str(run), **min(rounds, key=lambda r: r["report_s"])}
        if args.repeat > 1:
            res["report_s_each"] = " ".join(f"{r['report_s']:.1f}" for r in rounds)
        page = Path(res["path"])
        res.update(report_size(page))
        if Path(CHROMIUM).exists() and not args.no_browser:
            res.update(open_in_chromium(page))
        for k, v in res.items():
            print(f"{k:32} {v:.2f}" if isinstance(v, float) else f"{k:32} {v}")
        if args.json:
            args.json.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
