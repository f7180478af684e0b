"""Robust runs (issue 21): one process per output folder, failures isolated per question, usage
that survives SIGKILL, a damaged cache and a full disk named in one line, exit codes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from seerbench._lock import lock_folder
from seerbench.errors import ConfigError
from tests.test_cli_global import one_line_error, run_main

# A slow deterministic scripted model (so a second process or a kill lands mid-run), then the CLI.
RUNNER = textwrap.dedent(
    """
    import sys, time
    from seerbench.models import register_scripted
    from seerbench.models._scripted import _coin

    def slow(messages, config, seed):
        time.sleep(0.02)
        return _coin(messages, config, seed)

    register_scripted("slowcoin", slow)
    from seerbench.cli import main
    sys.argv = ["seerbench", *sys.argv[1:]]
    main()
    """
)

CONFIG = """
name: robust
dataset: {name: arithmetic, n: 30, seed: 3}
judge_models: ["scripted:slowcoin"]
agent_models: ["scripted:slowcoin"]
protocols: [Consultancy]
num_turns: [2]
elicitation: {order: [verbalized]}
concurrency: 2
"""
CELL = "Consultancy_t2/A_scripted-slowcoin_J_scripted-slowcoin"


def _start(cfg: Path, out: Path, cache: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SEERBENCH_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-c", RUNNER, "run", str(cfg), "--out", str(out), "--json"]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_lines(proc: subprocess.Popen[bytes], path: Path, n: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return
        time.sleep(0.005)
    raise AssertionError("the run finished (or never started) before the check; make it slower")


def test_second_process_on_a_folder_is_refused_naming_the_holder(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG)
    out = tmp_path / "out"
    first = _start(cfg, out, tmp_path / "cache")
    _wait_lines(first, out / CELL / "results.jsonl", 2)
    second = _start(cfg, out, tmp_path / "cache")
    _, err = second.communicate(timeout=120)
    lines = err.decode().strip().splitlines()
    assert second.returncode == 2 and len(lines) == 1, err.decode()
    assert f"is in use by PID {first.pid} on host" in lines[0] and "seerbench" in lines[0]
    assert first.poll() is None  # the first run is untouched by the refusal ...
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err.decode()
    ids = [json.loads(x)["question_id"] for x in (out / CELL / "results.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 30  # ... and ends with every question once
    assert not list(out.rglob("*.tmp*"))


def test_lock_of_a_killed_run_is_taken_over(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG)
    out = tmp_path / "out"
    first = _start(cfg, out, tmp_path / "cache")
    _wait_lines(first, out / CELL / "results.jsonl", 2)
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert json.loads((out / ".seerbench.lock").read_text())["pid"] == first.pid  # left behind
    again = _start(cfg, out, tmp_path / "cache")
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err.decode()
    assert json.loads((out / ".seerbench.lock").read_text())["pid"] == again.pid
    assert len((out / CELL / "results.jsonl").read_text().splitlines()) == 30


def test_rate_and_critique_refuse_a_locked_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from seerbench.factcheck import RaterConfig, rate

    out = tmp_path / "runs" / "c"
    crit = tmp_path / "critique.yaml"
    crit.write_text(
        json.dumps({"model": "scripted:critic", "dataset": {"name": "arithmetic", "n": 2}, "out": str(out)})
    )
    with lock_folder(out, "seerbench test"):  # another open file: flock refuses it as another process
        code, _, err = run_main(["critique", str(crit)], capsys, monkeypatch)
        assert code == 2 and f"{out} is in use by PID {os.getpid()} on host" in one_line_error(err)
        cfg = RaterConfig.parse(
            {"model": "scripted:fc-hand", "out": str(out), "dataset": {"name": "factcheck", "entities": 4}}
        )
        with pytest.raises(ConfigError, match=r"in use by PID \d+ on host .* \(seerbench test\)"):
            asyncio.run(rate(cfg))
    assert not (out / "critiques.jsonl").exists() and not (out / "ratings.jsonl").exists()
    code, _, err = run_main(["critique", str(crit)], capsys, monkeypatch)  # released: it runs
    assert code == 0, err
    rows = [json.loads(x) for x in (out / "critiques.jsonl").read_text().splitlines()]
    assert {r["question_id"] for r in rows} == {"arithmetic-0-0", "arithmetic-0-1"}
