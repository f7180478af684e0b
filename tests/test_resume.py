"""A run killed with SIGKILL mid-way and started again ends with exactly the results of an
uninterrupted run: no duplicated, lost or half-written lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

# A slow deterministic scripted model (so the kill lands mid-run), then the real CLI entry point.
RUNNER = textwrap.dedent(
    """
    import sys, time
    from seerbench.models import register_scripted
    from seerbench.models._scripted import _coin

    def slow(messages, config, seed):
        time.sleep(0.01)
        return _coin(messages, config, seed)

    register_scripted("slowcoin", slow)
    from seerbench.cli import main
    sys.argv = ["seerbench", *sys.argv[1:]]
    main()
    """
)

CONFIG = """
name: resume
dataset: {name: arithmetic, n: 40, seed: 3}
judge_models: ["scripted:slowcoin"]
agent_models: ["scripted:slowcoin"]
protocols: [NaiveJudge, Consultancy, SimultaneousDebate]
num_turns: [2]
elicitation: {order: [verbalized, vote], vote_samples: 3}
concurrency: 4
"""


def _run(cfg: Path, out: Path, cache: Path, *, kill_after_lines: int | None = None) -> None:
    env = {**os.environ, "SEERBENCH_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-c", RUNNER, "run", str(cfg), "--out", str(out), "--json"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if kill_after_lines is None:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        return
    target = out / "Consultancy_t2" / "A_scripted-slowcoin_J_scripted-slowcoin" / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if target.exists() and target.read_bytes().count(b"\n") >= kill_after_lines:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the run finished before it could be killed; make it slower"
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def _files(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): p.read_text() for p in sorted(out.glob("*/*/results.jsonl"))}


@pytest.mark.slow
def test_killed_run_resumes_to_identical_results(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG)

    ref = tmp_path / "ref"
    _run(cfg, ref, tmp_path / "cache_ref")

    out = tmp_path / "killed"
    cache = tmp_path / "cache_killed"
    _run(cfg, out, cache, kill_after_lines=5)
    partial = _files(out)
    consultancy = "Consultancy_t2/A_scripted-slowcoin_J_scripted-slowcoin/results.jsonl"
    n_partial = partial[consultancy].count("\n")
    assert 5 <= n_partial < 40  # really interrupted mid-cell
    # stats on the killed folder: the cut cell is marked unfinished, the finished one is not
    from seerbench.analysis.run import summarize_run
    from seerbench.runs import UNFINISHED

    by = {c["cell"]: c for c in summarize_run(out)["cells"]}
    assert (
        by[consultancy.rsplit("/", 1)[0]]["unfinished"]
        and by[consultancy.rsplit("/", 1)[0]]["diagnostics"]["warnings"][0] == UNFINISHED
    )
    assert by["NaiveJudge/J_scripted-slowcoin"]["unfinished"] is False
    # the debate cell comes after consultancy in the grid: not started, and said so
    assert summarize_run(out)["not_started"] == [
        "SimultaneousDebate_t2/A_scripted-slowcoin_J_scripted-slowcoin"
    ]

    _run(cfg, out, cache)  # resume
    assert not any(
        c.get("unfinished") for c in summarize_run(out)["cells"]
    ) and "not_started" not in summarize_run(out)
    got, want = _files(out), _files(ref)
    assert got.keys() == want.keys() and len(want) == 3
    for name in want:
        lines = got[name].splitlines()
        ids = [json.loads(x)["question_id"] for x in lines]
        assert len(ids) == len(set(ids)) == 40, name  # no duplicates, nothing lost
        assert got[name] == want[name], name  # byte-identical to the uninterrupted run


def test_torn_last_line_is_dropped_and_redone(tmp_path: Path) -> None:
    """Simulate a kill in the middle of a write: the partial line is cut and the question rerun."""
    from seerbench.store import done_keys

    p = tmp_path / "results.jsonl"
    p.write_text(json.dumps({"question_id": "q1"}) + "\n" + '{"question_id": "q2", "answ')
    assert done_keys(p, "question_id") == {"q1"}
    assert p.read_text() == json.dumps({"question_id": "q1"}) + "\n"
