"""Robust runs (issue 21): one process per output folder, failures isolated per question, usage
that survives SIGKILL, a damaged cache and a full disk named in one line, exit codes."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from seerbench._lock import lock_folder, lock_holder
from seerbench.errors import ConfigError
from seerbench.models import ChatMessage, GenerateConfig, register_scripted
from seerbench.testing import CONTEXT_EXCEEDED, Failure, FakeOpenAIServer
from seerbench.types import AnswerCase, Question
from tests.test_cli_global import one_line_error, run_main

# A slow deterministic scripted model (so a second process or a kill lands mid-run), then the CLI.
RUNNER = textwrap.dedent(
    """
    import os, sys, time
    from seerbench.models import register_scripted
    from seerbench.models._scripted import _coin

    def slow(messages, config, seed):
        while os.path.exists(os.environ["HOLD"]):  # the test holds the run here
            time.sleep(0.01)
        time.sleep(0.005)
        with open(os.environ["COUNT"], "a") as f:  # every call that reached the model, counted here
            f.write("1\\n")
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
elicitation: {order: [vote], vote_samples: 1}  # the coin answers a letter: one vote, one call
concurrency: 2
"""
CELL = "Consultancy_t2/A_scripted-slowcoin_J_scripted-slowcoin"


def _start(cfg: Path, out: Path, cache: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "SEERBENCH_CACHE_DIR": str(cache),
        "HOLD": str(cache.parent / "hold"),
        "COUNT": str(cache.parent / "calls"),
    }
    cmd = [sys.executable, "-c", RUNNER, "run", str(cfg), "--out", str(out), "--json"]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_locked(proc: subprocess.Popen[bytes], out: Path) -> None:
    """Wait until ``proc`` holds the folder's lock (its model calls wait while ``hold`` exists)."""
    lock = out / ".seerbench.lock"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if lock.exists() and f'"pid": {proc.pid},' in lock.read_text():
            return
        time.sleep(0.01)
    raise AssertionError(f"the run never took the lock: {proc.poll()}")


def test_second_process_on_a_folder_is_refused_naming_the_holder(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG)
    out = tmp_path / "out"
    (tmp_path / "hold").touch()
    first = _start(cfg, out, tmp_path / "cache")
    _wait_locked(first, out)
    second = _start(cfg, out, tmp_path / "cache")
    _, err = second.communicate(timeout=120)
    lines = err.decode().strip().splitlines()
    assert second.returncode == 2 and len(lines) == 1, err.decode()
    assert f"is in use by PID {first.pid} on host" in lines[0] and "seerbench" in lines[0]
    assert first.poll() is None  # the first run is untouched by the refusal ...
    (tmp_path / "hold").unlink()
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err.decode()
    ids = [json.loads(x)["question_id"] for x in (out / CELL / "results.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 30  # ... and ends with every question once
    assert not list(out.rglob("*.tmp*"))


def test_lock_of_a_killed_run_is_taken_over(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG)
    out = tmp_path / "out"
    (tmp_path / "hold").touch()
    first = _start(cfg, out, tmp_path / "cache")
    _wait_locked(first, out)
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert json.loads((out / ".seerbench.lock").read_text())["pid"] == first.pid  # left behind
    (tmp_path / "hold").unlink()
    again = _start(cfg, out, tmp_path / "cache")
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err.decode()
    # the file stays after a clean exit too (docs/experiments.md), held by no one: harmless
    assert json.loads((out / ".seerbench.lock").read_text())["pid"] == again.pid
    assert lock_holder(out) is None
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


def test_usage_of_a_killed_run_is_kept(tmp_path: Path) -> None:
    from seerbench.runs import RunFolder

    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG)
    out, count, hold = tmp_path / "out", tmp_path / "calls", tmp_path / "hold"
    first = _start(cfg, out, tmp_path / "cache")
    results = out / CELL / "results.jsonl"
    deadline = time.monotonic() + 120
    while not (results.exists() and results.read_bytes().count(b"\n") >= 3):
        assert time.monotonic() < deadline and first.poll() is None, "the run ended before the kill"
        time.sleep(0.005)
    hold.touch()  # the calls in flight stop before the model: every counted call is complete
    n = -1
    while n != (n := len(count.read_text())):
        time.sleep(0.5)
    first.send_signal(signal.SIGKILL)
    first.wait()
    made = len(count.read_text().splitlines())
    assert not (out / "usage.json").exists()  # the killed run never wrote its summary ...
    usage = RunFolder(out).usage()
    assert usage is not None and usage["total"]["calls"] == made  # ... but its log counts each call
    hold.unlink()
    again = _start(cfg, out, tmp_path / "cache")
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err.decode()
    made = len(count.read_text().splitlines())
    usage = RunFolder(out).usage()
    assert usage is not None and usage["runs"] == 2 and usage["total"]["calls"] == made
    summary = json.loads((out / "usage.json").read_text())
    assert summary["total"]["calls"] == made and summary["log_bytes"] == (out / "usage.jsonl").stat().st_size


# ---- failures isolated per question ---------------------------------------------------------


def _judge_reply(body: dict[str, Any]) -> str:
    return "0.9" if "How likely" in body["messages"][-1]["content"] else "A"


def _q_config(folder: Path, judge: str, n: int = 6) -> Path:
    rows = [
        Question(
            id=f"q{i}",
            text=f"This is question number {i}.",
            answer_cases=[
                AnswerCase(short="A", long=f"yes {i}", value=1.0),
                AnswerCase(short="B", long=f"no {i}", value=0.0),
            ],
        ).model_dump(mode="json")
        for i in range(n)
    ]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = {
        "name": "iso",
        "dataset": "questions.jsonl",
        "judge_models": [judge],
        "agent_models": ["scripted:coin"],
        "protocols": ["NaiveJudge"],
        "elicitation": {"order": ["verbalized"]},
        "n_boot": 100,
        "concurrency": 2,
        "out": str(folder / "out"),
    }
    (folder / "xp.yaml").write_text(yaml.safe_dump(cfg))
    return folder / "xp.yaml"


def _ids(path: Path) -> list[str]:
    return [json.loads(x)["question_id"] for x in path.read_text().splitlines()]


def _asks_about(n: int) -> Callable[[dict[str, Any]], Failure | None]:
    def fail_if(body: dict[str, Any]) -> Failure | None:
        return CONTEXT_EXCEEDED if f"number {n}." in body["messages"][-1]["content"] else None

    return fail_if


def test_http_400_for_one_question_fails_only_it_and_a_rerun_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAIServer(reply=_judge_reply, api_key=None, fail_if=_asks_about(2)) as srv:
        cfg = _q_config(tmp_path / "c", f"openai/fake-model@{srv.base_url}")
        code, _, err = run_main(["run", str(cfg), "--json"], capsys, monkeypatch)
        cell = next((tmp_path / "c" / "out" / "NaiveJudge").iterdir())
        assert code == 1, err  # a partial run, not a user error (2) or a crash (3)
        assert "1 of 6 question runs failed" in err and "exceeds the available context size" in err
        assert _ids(cell / "results.jsonl") == ["q0", "q1", "q3", "q4", "q5"]
        stats = json.loads((cell / "stats.json").read_text())
        assert stats["n_errors"] == 1 and stats["errors"][0].startswith("q2: ")
        assert "HTTP 400" in stats["errors"][0]
        asked = len(srv.requests)
        code, _, err = run_main(["run", str(cfg), "--json"], capsys, monkeypatch)  # still too long
        assert code == 1 and all(
            "number 2." in r["body"]["messages"][-1]["content"] for r in srv.requests[asked:]
        )
        srv.fail_if = None  # e.g. a server restarted with a larger context
        code, _, err = run_main(["run", str(cfg), "--json"], capsys, monkeypatch)
        assert code == 0, err
        assert _ids(cell / "results.jsonl") == [f"q{i}" for i in range(6)]


def test_a_200_with_an_error_body_is_retried_and_failed_over_like_a_5xx() -> None:
    from seerbench.models import get_model

    async def ask(spec: str, n: int) -> list[str]:
        model = get_model(spec, cache=False)
        return [o.text for o in await asyncio.gather(*(model.generate(f"q {i}") for i in range(n)))]

    with FakeOpenAIServer(reply="A", api_key=None) as one:
        one.fail_next(200, message="upstream overloaded")  # HTTP 200, body {"error": {...}}
        assert asyncio.run(ask(f"openai/fake-model@{one.base_url}", 1)) == ["A"]
        assert one.request_count == 2  # the error body was retried, not taken for an answer

    def overloaded(body: dict[str, Any]) -> Failure:
        return Failure(200, "upstream overloaded")

    with (
        FakeOpenAIServer(reply="B", api_key=None, fail_if=overloaded) as bad,
        FakeOpenAIServer(reply="A", api_key=None) as good,
    ):
        texts = asyncio.run(ask(f"openai/fake-model@{bad.base_url},{good.base_url}", 6))
        assert texts == ["A"] * 6 and good.request_count == 6 and bad.request_count >= 1


def _boom_on_2(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    if "number 2." in messages[-1].content:
        raise RuntimeError("plugin bug on this question")
    return "0.9" if "How likely" in messages[-1].content else "A"


def _boom_always(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    raise RuntimeError("plugin bug everywhere")


register_scripted("robust-boom2", _boom_on_2, replace=True)
register_scripted("robust-boom", _boom_always, replace=True)


def test_an_exception_in_one_question_fails_it_and_one_in_every_question_is_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _q_config(tmp_path / "one", "scripted:robust-boom2")
    code, _, err = run_main(["run", str(cfg), "--json"], capsys, monkeypatch)
    assert code == 1, err
    cell = tmp_path / "one" / "out" / "NaiveJudge" / "J_scripted-robust-boom2"
    assert _ids(cell / "results.jsonl") == ["q0", "q1", "q3", "q4", "q5"]
    reason = json.loads((cell / "stats.json").read_text())["errors"]
    assert reason == ["q2: RuntimeError raised inside the protocol: plugin bug on this question"]

    cfg = _q_config(tmp_path / "all", "scripted:robust-boom")
    code, _, err = run_main(["run", str(cfg), "--json"], capsys, monkeypatch)
    assert code == 3  # a crash: not a partial run (1) nor a user error (2)
    assert "Traceback" in err and "RuntimeError: plugin bug everywhere" in err
    assert err.strip().splitlines()[-1].startswith("internal error: the traceback above is a bug")


# ---- a damaged cache, a full disk -------------------------------------------------------------


def _scripted_config(folder: Path) -> Path:
    return _q_config(folder, "scripted:robust-judge")


def _judge(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    return "0.9" if "How likely" in messages[-1].content else "A"


register_scripted("robust-judge", _judge, replace=True)


def test_a_damaged_cache_file_is_one_line_and_cache_clear_removes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = Path(os.environ["SEERBENCH_CACHE_DIR"]) / "cache.sqlite"
    db.parent.mkdir(parents=True, exist_ok=True)
    db.write_bytes(b"this is not a SQLite database\n" * 200)
    cfg = _scripted_config(tmp_path / "c")
    for argv in (["run", str(cfg), "--json"], ["cache", "info"], ["cache", "clear", "--model", "x", "--yes"]):
        code, _, err = run_main(argv, capsys, monkeypatch)
        line = one_line_error(err)
        assert code == 2 and str(db) in line and "`seerbench cache clear`" in line, argv
    assert "damaged" in line and db.exists()  # --model cannot pick rows out of a damaged file
    code, out, err = run_main(["cache", "clear", "--yes"], capsys, monkeypatch)
    assert code == 0 and f"deleted the damaged disk cache {db}" in " ".join(out.split()) and not db.exists()
    code, out, _ = run_main(["cache", "info", "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out)["entries"] == 0
    code, _, err = run_main(["run", str(cfg)], capsys, monkeypatch)
    assert code == 0, err


def test_a_cache_row_that_does_not_parse_is_a_logged_miss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    cfg = _scripted_config(tmp_path / "c")
    assert run_main(["run", str(cfg)], capsys, monkeypatch)[0] == 0
    cell = tmp_path / "c" / "out" / "NaiveJudge" / "J_scripted-robust-judge"
    first = (cell / "results.jsonl").read_text()
    db = Path(os.environ["SEERBENCH_CACHE_DIR"]) / "cache.sqlite"
    with sqlite3.connect(db) as conn:
        (n,) = conn.execute("SELECT COUNT(*) FROM samples").fetchone()
        (key,) = conn.execute("SELECT key FROM samples ORDER BY key LIMIT 1").fetchone()
        conn.execute("UPDATE samples SET value = '{\"text\": 1' WHERE key = ?", (key,))
    code, _, err = run_main(
        ["run", str(cfg), "--out", str(tmp_path / "again"), "--json"], capsys, monkeypatch
    )
    assert code == 0, err
    warnings = [ln for ln in err.splitlines() if "does not parse" in ln]
    assert len(warnings) == 1 and str(db) in warnings[0] and key[:12] in warnings[0]
    assert (
        tmp_path / "again" / cell.relative_to(tmp_path / "c" / "out") / "results.jsonl"
    ).read_text() == first
    with sqlite3.connect(db) as conn:  # called again, and the good answer replaced the bad row
        assert conn.execute("SELECT COUNT(*) FROM samples").fetchone() == (n,)
        (value,) = conn.execute("SELECT value FROM samples WHERE key = ?", (key,)).fetchone()
    assert json.loads(value)["text"] in ("A", "0.9")


def test_a_full_disk_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = os.write

    def full(fd: int, data: bytes) -> int:  # the disk fills when the results file is written
        if os.readlink(f"/proc/self/fd/{fd}").endswith("results.jsonl"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    cfg = _scripted_config(tmp_path / "c")
    monkeypatch.setattr(os, "write", full)
    code, _, err = run_main(["run", str(cfg), "--json"], capsys, monkeypatch)
    monkeypatch.setattr(os, "write", real_write)
    results = tmp_path / "c" / "out" / "NaiveJudge" / "J_scripted-robust-judge" / "results.jsonl"
    assert code == 2
    assert one_line_error(err) == (
        f"error: {results}: No space left on device: free some space, then run the same command again "
        "(finished results are kept)"
    )
    # the cache fills up too: SQLite's "database or disk is full", named as the cache file
    import sqlite3

    from seerbench.models import default_cache

    class FullConnection:
        def __init__(self, conn: sqlite3.Connection) -> None:
            self.conn = conn

        def execute(self, sql: str, *args: Any) -> Any:
            if sql.startswith("INSERT"):
                raise sqlite3.OperationalError("database or disk is full")
            return self.conn.execute(sql, *args)

        def close(self) -> None:
            self.conn.close()

    cache = default_cache()
    monkeypatch.setattr(cache, "_conn", FullConnection(cache._conn))
    code, _, err = run_main(["run", str(cfg), "--out", str(tmp_path / "o2"), "--json"], capsys, monkeypatch)
    assert code == 2 and one_line_error(err).startswith(f"error: {cache.path}: No space left on device")


# ---- Ray: a node lost mid-run -----------------------------------------------------------------

RAY_NODE_DIES = textwrap.dedent(
    """
    import json, os, sys
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    import ray
    from seerbench.experiment import Experiment, ExperimentConfig, RayExecutor
    from seerbench.experiment._ray import RayExecutor as R

    pids = []

    async def node_dies(self, ray_, *args):
        # the instance this run started is up; then a node is lost, as Ray reports it
        node = ray_._private.worker._global_node
        pids.extend(p.process.pid for procs in node.all_processes.values() for p in procs)
        raise ray_.exceptions.NodeDiedError("node 1.2.3.4 died (test)")

    R._run = node_dies
    cfg = ExperimentConfig.from_yaml(sys.argv[1])
    try:
        Experiment(cfg, executor=RayExecutor()).run()
    except Exception as e:
        print(json.dumps({"error": f"{type(e).__name__}: {e}", "pids": pids, "up": ray.is_initialized()}))
    """
)


@pytest.mark.slow
def test_a_lost_ray_node_is_one_line_and_leaves_no_ray_process(tmp_path: Path) -> None:
    import psutil

    pytest.importorskip("ray")
    cfg = _q_config(tmp_path / "c", "scripted:coin")
    proc = subprocess.run(
        [sys.executable, "-c", RAY_NODE_DIES, str(cfg)], capture_output=True, timeout=300, check=True
    )
    rec = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    assert rec["error"] == (
        "SeerbenchError: the Ray cluster failed during the run (NodeDiedError: node 1.2.3.4 died (test)); "
        "finished results are kept: rerun the same command to resume"
    )
    assert len(rec["pids"]) >= 3 and not rec["up"]  # gcs_server, raylet, ... were started, then ended
    alive = [p for p in rec["pids"] if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    assert alive == []


def test_stats_on_a_folder_a_live_run_holds_says_in_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cell without stats.json in a folder another process is writing is in progress, not
    stopped: "run the config again to finish it" would be refused while the run holds the folder."""
    import socket

    from seerbench._lock import lock_holder
    from seerbench.runs import IN_PROGRESS, UNFINISHED

    monkeypatch.setenv("SEERBENCH_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out"
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "name": "inuse",
                "dataset": {"name": "arithmetic", "n": 6, "seed": 3},
                "judge_models": ["scripted:coin"],
                "agent_models": ["scripted:coin"],
                "protocols": ["NaiveJudge", "Consultancy"],
                "elicitation": {"order": ["vote"]},
                "n_boot": 100,
                "out": str(out),
            }
        )
    )
    code, _, err = run_main(["-q", "run", str(cfg)], capsys, monkeypatch)
    assert code == 0, err
    cons = next(out.glob("Consultancy*/*"))
    key = f"{cons.parent.name}/{cons.name}"
    (cons / "stats.json").unlink()  # the cell a run is still writing has no stats.json yet
    assert lock_holder(out) is None
    with lock_folder(out, "seerbench run cfg.yaml"):  # another open file: flock sees another process
        holder = f"PID {os.getpid()} on host {socket.gethostname()} (seerbench run cfg.yaml)"
        assert lock_holder(out) == holder
        code, stdout, err = run_main(["stats", str(out), "--json"], capsys, monkeypatch)
        assert code == 0, err
        s = json.loads(stdout)
        assert s["in_progress"] == holder
        (c,) = [c for c in s["cells"] if c["cell"] == key]
        assert c["unfinished"] and c["diagnostics"]["warnings"][0] == IN_PROGRESS.format(holder=holder)
        assert UNFINISHED not in c["diagnostics"]["warnings"]
        code, stdout, err = run_main(["stats", str(out)], capsys, monkeypatch)
        flat = " ".join(stdout.split())
        assert code == 0 and f"run in progress: {holder} is writing {out}" in flat
        assert "run the config again to finish it" not in flat and "in progress: PID" in flat
    # released: the same cell is a stopped one, which rerunning the config finishes
    s = json.loads(run_main(["stats", str(out), "--json"], capsys, monkeypatch)[1])
    assert "in_progress" not in s
    (c,) = [c for c in s["cells"] if c["cell"] == key]
    assert c["diagnostics"]["warnings"][0] == UNFINISHED
    code, _, err = run_main(["-q", "run", str(cfg)], capsys, monkeypatch)  # the probe left no lock
    assert code == 0, err
    assert (cons / "stats.json").is_file()


def test_the_lock_names_the_whole_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """A root option before the command no longer pushes the config out of the lock's command
    ('seerbench -q run' said nothing of which config); a very long line is cut, marked."""
    from seerbench._lock import COMMAND_CHARS, command_line

    monkeypatch.setattr("sys.argv", ["/venv/bin/seerbench", "-q", "run", "big.yaml", "--limit", "5"])
    assert command_line() == "seerbench -q run big.yaml --limit 5"
    monkeypatch.setattr("sys.argv", ["seerbench", "run", "x" * 500])
    long = command_line()
    assert len(long) == COMMAND_CHARS and long.startswith("seerbench run xxx") and long.endswith("...")
