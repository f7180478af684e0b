"""Flat memory over large results files (issue 15.6): the bootstrap draws its resample indices in
blocks and gives bit-identical intervals; statistics read results files one line at a time and
keep a few floats per question; the runner's final rewrite copies lines by offset."""

from __future__ import annotations

import json
import math
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import t as student_t

from seerbench.analysis import summarize, summarize_many
from seerbench.analysis.run import summarize_run
from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.models import register_scripted
from seerbench.results import CellStats, paired, rescore, run_stats
from seerbench.runs import ResultsFile, read_results
from seerbench.stats import _summary
from seerbench.store import done_keys, finalise


def _reference_ci(x: np.ndarray, n_boot: int, seed: int) -> tuple[float, float]:
    """The percentile interval as the seed's bootstrap defines it, drawing the whole
    n_boot x n index matrix at once (what seerbench did before blocks), widened to t."""
    idx = np.random.default_rng(seed).integers(0, len(x), size=(n_boot, len(x)))
    alpha = (1 - 0.95) / 2  # the 95% interval's tails, as the library computes them
    lo, hi = np.quantile(x[idx].mean(axis=1), [alpha, 1 - alpha])
    # widened where needed to Student's t interval on n - 1 df (t quantile from scipy)
    mean, se = float(x.mean()), float(x.std(ddof=1)) / math.sqrt(len(x))
    half = float(student_t.ppf(0.975, len(x) - 1)) * se
    return min(float(lo), mean - half), max(float(hi), mean + half)


@pytest.mark.parametrize("block", [1, 7, 1000, 1 << 21])
@pytest.mark.parametrize("n", [2, 3, 101, 2000])
def test_blocked_bootstrap_is_bit_identical(monkeypatch: pytest.MonkeyPatch, n: int, block: int) -> None:
    # blocks of one row, of an odd number of elements, and the default: the same stream of draws
    monkeypatch.setattr(_summary, "BLOCK_ELEMENTS", block)
    x = np.random.default_rng(n).normal(size=n)
    s = summarize(list(x), n_boot=2000, seed=11)
    assert (s.ci_low, s.ci_high) == _reference_ci(x, 2000, 11)
    assert s.mean == float(x.mean())


def test_summarize_many_equals_summarize_per_column(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_summary, "BLOCK_ELEMENTS", 999)
    rng = np.random.default_rng(0)
    cols = {
        "a": list(rng.normal(size=300)),
        "b": list(rng.uniform(size=300)),  # same length: shares a's index blocks
        "short": list(rng.normal(size=17)),  # another length: its own draws
        "inf": [1.0, -math.inf, 2.0],  # non-finite: no resampling
        "one": [4.0],
        "empty": [],
    }
    many = summarize_many(cols, n_boot=500, seed=3)
    assert list(many) == list(cols)
    for name, col in cols.items():
        single = summarize(col, n_boot=500, seed=3)
        assert many[name].as_dict() == pytest.approx(single.as_dict(), nan_ok=True), name
        if name in ("a", "b", "short"):
            assert (many[name].ci_low, many[name].ci_high) == _reference_ci(np.asarray(col), 500, 3)


# ---- a real run's results, then the readers over them ------------------------------------------


def _judge(messages: Any, config: Any, seed: int | None) -> str:
    # P(first option) from the question text, so the values vary from question to question
    text = messages[-1].content
    return f"0.{1 + sum(map(ord, text)) % 8}"


register_scripted("mem-judge", _judge, replace=True)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("memrun") / "run"
    cfg = ExperimentConfig.parse(
        {
            "name": "mem",
            "dataset": {"name": "arithmetic", "n": 1500, "seed": 1},
            "judge_models": ["scripted:mem-judge"],
            "agent_models": ["scripted:mem-judge"],
            "protocols": ["NaiveJudge", "BlindTrust"],
            "elicitation": {"order": ["verbalized"]},
            "concurrency": 16,
            "n_boot": 100,
            "out": str(out),
        }
    )
    Experiment(cfg).run()
    return out


def _wilson(p: float, n: float, z: float = 1.959963984540054) -> tuple[float, float]:
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def _naive(run_dir: Path) -> Path:
    return run_dir / "NaiveJudge" / "J_scripted-mem-judge" / "results.jsonl"


def test_streamed_stats_match_the_definition(run_dir: Path) -> None:
    """stats.json of the run and summarize_run (both streamed) against the mean and interval
    computed here from the lines read whole."""
    path = _naive(run_dir)
    lines = [json.loads(raw) for raw in path.read_text().splitlines()]
    assert len(lines) == 1500
    asd = np.array([ln["asd"]["log"] for ln in lines if not ln["excluded"]])
    acc = np.array([ln["judge_accuracy"] for ln in lines if not ln["excluded"]])
    stored = json.loads((path.parent / "stats.json").read_text())
    summary = summarize_run(run_dir)
    streamed = next(c for c in summary["cells"] if c["protocol"] == "NaiveJudge")
    for s in (stored, streamed):
        assert s["n_questions"] == 1500
        assert s["metrics"]["asd"]["log"]["mean"] == pytest.approx(float(asd.mean()), rel=1e-12)
        assert (s["metrics"]["asd"]["log"]["ci_low"], s["metrics"]["asd"]["log"]["ci_high"]) == pytest.approx(
            _reference_ci(asd, 100, 0), rel=1e-12
        )
        # accuracy: Wilson's score interval (a percentile interval collapses at 0 and 1), at n for
        # 0/1 values, else at n_eff = p(1 - p) / (s^2 / n), capped at n
        p, n = float(acc.mean()), acc.size
        binary = bool(np.all((acc == 0) | (acc == 1)))
        n_eff = n if binary else min(p * (1 - p) / (acc.var(ddof=1) / n), n)
        assert (
            s["metrics"]["judge_accuracy"]["ci_low"],
            s["metrics"]["judge_accuracy"]["ci_high"],
        ) == pytest.approx(_wilson(p, n_eff), rel=1e-9)
    # the same lines given whole, as a generator, or gathered one at a time give one record
    meta = {"cell": "x"}
    whole = run_stats(lines, meta, eps=1e-6, policy="exclude", n_boot=100)
    assert run_stats(iter(lines), meta, eps=1e-6, policy="exclude", n_boot=100) == whole
    acc_stats = CellStats()
    for ln in ResultsFile(path):
        acc_stats.add(rescore(ln, eps=1e-6, policy="exclude"))
    assert acc_stats.stats(meta, eps=1e-6, policy="exclude", n_boot=100) == whole


def test_paired_differences_from_kept_values(run_dir: Path) -> None:
    a = read_results(_naive(run_dir))[0]
    b = read_results(run_dir / "BlindTrust" / "J_trust" / "results.jsonl")[0]
    sa, sb = CellStats(paired_score="log"), CellStats(paired_score="log")
    for ln in a:
        sa.add(ln)
    for ln in b:
        sb.add(ln)
    for key in ("asd", "judge_accuracy"):
        assert paired(sa, sb, key) == paired(a, b, key)
    # by hand: accuracy of NaiveJudge minus BlindTrust over the common questions
    common = sorted({ln["question_id"] for ln in a} & {ln["question_id"] for ln in b})
    va = {ln["question_id"]: ln["judge_accuracy"] for ln in a}
    vb = {ln["question_id"]: ln["judge_accuracy"] for ln in b}
    d = paired(sa, sb, "judge_accuracy")
    assert d is not None
    assert d["mean"] == pytest.approx(sum(va[q] - vb[q] for q in common) / len(common))
    with pytest.raises(ValueError, match="paired_score"):
        paired(CellStats(), sb, "asd")


def _peak(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_summarize_run_memory_is_far_below_the_file(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a cell's lines whole holds every parsed line (several times the file's size);
    streaming holds a few floats per line. With small bootstrap blocks (whose size does not
    grow with the file) the peak of traced allocations while summarising the whole run, paired
    differences included, stays a small fraction of one results file."""
    monkeypatch.setattr(_summary, "BLOCK_ELEMENTS", 1 << 12)
    size = _naive(run_dir).stat().st_size
    whole = _peak(lambda: read_results(_naive(run_dir)))
    streamed = _peak(lambda: summarize_run(run_dir, baseline="BlindTrust"))
    assert size > 1_000_000
    assert whole > 2 * size  # what statistics held before
    # per line: its id (once, to count duplicates and foreign lines) and a few paired values per
    # cell; measured 0.25 x the file with every round-3 reader check, against > 2 x read whole
    assert streamed < size / 3, (streamed, size)
    # without paired differences only the ids are kept (once each, to count duplicate lines)
    assert _peak(lambda: summarize_run(run_dir)) < size / 4


def test_finalise_orders_dedups_and_cuts_torn_lines(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    rows = [{"question_id": q, "v": i} for i, q in enumerate(["c", "a", "b", "a", "z"])]
    text = "".join(json.dumps(r) + "\n" for r in rows) + "not json\n" + '{"question_id": "d", "v"'
    path.write_text(text)
    assert done_keys(path, "question_id", repair=False) == {"a", "b", "c", "z"}
    assert path.read_text() == text  # repair=False leaves the file alone
    assert done_keys(path, "question_id") == {"a", "b", "c", "z"}
    assert path.read_text().endswith("not json\n")  # the torn line is cut, nothing else
    seen: list[dict[str, object]] = []
    finalise(path, "question_id", ["a", "b", "c", "d"], on_line=seen.append)
    # dataset order, the first line of a duplicate, unknown ids last (by id), junk dropped
    expected = [
        {"question_id": "a", "v": 1},
        {"question_id": "b", "v": 2},
        {"question_id": "c", "v": 0},
        {"question_id": "z", "v": 4},
    ]
    assert [json.loads(x) for x in path.read_text().splitlines()] == expected
    assert seen == expected
    before = path.stat().st_mtime_ns
    finalise(path, "question_id", ["a", "b", "c", "d"])  # in order already and z unknown: rewritten the same
    assert [json.loads(x) for x in path.read_text().splitlines()] == expected
    ordered = tmp_path / "ordered.jsonl"
    ordered.write_text("".join(json.dumps(r) + "\n" for r in expected[:3]))
    mtime = ordered.stat().st_mtime_ns
    finalise(ordered, "question_id", ["a", "b", "c"])
    assert ordered.stat().st_mtime_ns == mtime  # a file in order is not rewritten
    assert before <= path.stat().st_mtime_ns
