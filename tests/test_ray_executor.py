"""The Ray executor (issue 15.1) on a local Ray instance started here: a run on Ray gives the same
results files, byte for byte, as a local run of the same config; a driver killed with SIGKILL and
run again resumes where it stopped and ends with those same files; errors raised in a task reach
the driver as themselves."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from seerbench.errors import AuthenticationError, ConfigError, SeerbenchError  # noqa: E402
from seerbench.experiment import Experiment, ExperimentConfig, RayExecutor  # noqa: E402
from seerbench.models import Model, get_model  # noqa: E402

pytestmark = pytest.mark.slow

# The models live in a plugin file, as on a cluster: every worker imports it from the config.
RESPONDERS = textwrap.dedent(
    """
    import hashlib
    import os
    import time
    from pathlib import Path

    from seerbench.errors import AuthenticationError
    from seerbench.models import register_scripted

    DELAY = Path(__file__).with_name("delay.txt")  # seconds per call; the kill test slows the run


    def _wait():
        if DELAY.exists():
            time.sleep(float(DELAY.read_text()))


    def judge(messages, config, seed):
        _wait()
        text = "\\n".join(m.content for m in messages)
        h = hashlib.sha256(f"{seed}|{text}".encode()).digest()
        return f"0.{1 + h[0] % 9}"


    def agent(messages, config, seed):
        _wait()
        text = messages[-1].content
        return f"My answer holds: {len(text) % 97} reasons, all of them sound."


    def refused(messages, config, seed):
        raise AuthenticationError("the API key was refused (test)")


    def crashing(messages, config, seed):
        # kills its worker process: once (a marker file says so), or always
        marker = Path(__file__).with_name("crashed-once")
        if Path(__file__).with_name("crash-always").exists() or not marker.exists():
            marker.touch()
            os._exit(1)
        return judge(messages, config, seed)


    register_scripted("ray-judge", judge, replace=True)
    register_scripted("ray-crashing", crashing, replace=True)
    register_scripted("ray-agent", agent, replace=True)
    register_scripted("ray-refused", refused, replace=True)
    """
)

CONFIG = """
name: raytest
plugins: [responders.py]
dataset: {name: arithmetic, n: 45, seed: 2}
judge_models: ["scripted:ray-judge"]
agent_models: ["scripted:ray-agent"]
protocols: [NaiveJudge, BlindTrust, Consultancy, SimultaneousDebate]
both_orders: true
elicitation: {order: [verbalized]}
concurrency: 3
n_boot: 200
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local Ray instance for the module, its workers (of every driver that joins it) with a
    disk cache of their own: the environment at ray.init is theirs. Yields its address."""
    env = {"SEERBENCH_CACHE_DIR": str(tmp_path_factory.mktemp("ray-cache")), "RAY_USAGE_STATS_ENABLED": "0"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    finally:
        for k, v in old.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "responders.py").write_text(RESPONDERS)
    (tmp_path / "raytest.yaml").write_text(CONFIG)
    return tmp_path


def _files(out: Path) -> dict[str, bytes]:
    """Every results, stats and cell file of a run folder (experiment.json and config.yaml name
    the folder and are not compared)."""
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name in ("results.jsonl", "stats.json", "cell.json", "all_stats.json")
    }


def _config(project: Path, **updates: Any) -> ExperimentConfig:
    return ExperimentConfig.from_yaml(project / "raytest.yaml").with_updates(**updates)


def test_ray_run_is_byte_identical_to_a_local_run(cluster: str, project: Path) -> None:
    ray_out, local_out = project / "on-ray", project / "local"
    results = Experiment(_config(project, out=str(ray_out)), executor=RayExecutor(shard_size=4)).run()
    Experiment(_config(project, out=str(local_out))).run()
    got, want = _files(ray_out), _files(local_out)
    assert sorted(got) == sorted(want)
    assert len([k for k in want if k.endswith("results.jsonl")]) == 4
    for name in want:
        assert got[name] == want[name], name
    # the workers' model usage reached the folder's record: the same requests (calls or cache hits) as locally
    used = {o: json.loads((o / "usage.json").read_text())["total"] for o in (ray_out, local_out)}
    assert (
        used[ray_out]["calls"] + used[ray_out]["cache_hits"]
        == used[local_out]["calls"] + used[local_out]["cache_hits"]
        > 0
    )
    # 45 questions per cell, each line once, in dataset order
    lines = (ray_out / "NaiveJudge_swap" / "J_scripted-ray-judge" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 45
    assert [r.n_done for r in results] == [45] * 4
    # a finished run run again on Ray runs nothing and leaves the files as they were
    done: list[int] = []
    Experiment(_config(project, out=str(ray_out)), executor=RayExecutor()).run(
        on_start=lambda s, d, t: done.append(d)
    )
    assert done == [45] * 4
    assert _files(ray_out) == want


SEERBENCH = str(Path(sys.executable).parent / "seerbench")


def _driver(project: Path, out: Path, address: str) -> subprocess.Popen[bytes]:
    cmd = [
        SEERBENCH,
        "run",
        str(project / "raytest.yaml"),
        "--out",
        str(out),
        "--executor",
        "ray",
        "--address",
        address,
        "--json",
    ]
    return subprocess.Popen(cmd, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test_killed_driver_resumes_to_the_same_files(cluster: str, project: Path) -> None:
    out = project / "killed"
    (project / "delay.txt").write_text("0.02")  # ~7 s of model calls: the kill lands mid-run
    proc = _driver(project, out, cluster)
    target = out / "NaiveJudge_swap" / "J_scripted-ray-judge" / "results.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if target.exists() and target.read_bytes().count(b"\n") >= 1:
            break
        time.sleep(0.01)
    assert proc.poll() is None, (
        f"the driver ended before it could be killed: {proc.stderr.read().decode() if proc.stderr else ''}"
    )
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    (project / "delay.txt").unlink()
    # what a kill mid-write leaves: a torn last line
    with open(target, "ab") as f:
        f.write(b'{"schema_version": 1, "question_id": "arith')
    written = {p: p.read_bytes().count(b"\n") for p in out.rglob("results.jsonl")}
    assert 0 < sum(written.values()) < 4 * 45
    done: dict[str, int] = {}
    Experiment(_config(project, out=str(out)), executor=RayExecutor(address=cluster, shard_size=5)).run(
        on_start=lambda s, d, t: done.__setitem__(s.key, d)
    )
    # the rerun took every complete line as done (the torn one cut) and ran only the rest
    assert sum(done.values()) == sum(written.values())
    Experiment(_config(project, out=str(project / "whole"))).run()
    assert _files(out) == _files(project / "whole")


def test_errors_in_tasks_reach_the_driver_as_themselves(cluster: str, project: Path) -> None:
    cfg = _config(
        project, out=str(project / "refused"), judge_models=["scripted:ray-refused"], protocols=["NaiveJudge"]
    )
    with pytest.raises(AuthenticationError, match="refused"):
        Experiment(cfg, executor=RayExecutor(shard_size=2)).run()


def test_a_lost_worker_is_retried_then_reported(cluster: str, project: Path) -> None:
    # the first task to call the model kills its worker: Ray runs the shard again, and the run
    # ends with the files of a run where nothing crashed
    cfg = _config(
        project, out=str(project / "crash"), judge_models=["scripted:ray-crashing"], protocols=["NaiveJudge"]
    )
    Experiment(cfg, executor=RayExecutor(shard_size=10)).run()
    assert (project / "crashed-once").exists()
    Experiment(_config(project, out=str(project / "plain"), protocols=["NaiveJudge"])).run()
    # the cells differ only in the judge's name: compare the lines with it replaced
    got = (project / "crash" / "NaiveJudge_swap" / "J_scripted-ray-crashing" / "results.jsonl").read_text()
    want = (project / "plain" / "NaiveJudge_swap" / "J_scripted-ray-judge" / "results.jsonl").read_text()
    assert got.count("\n") == 45
    assert [_without_cell(x) for x in got.splitlines()] == [_without_cell(x) for x in want.splitlines()]
    # a worker that dies every time: after Ray's retries, one line naming the cell
    (project / "crash-always").touch()
    cfg = _config(
        project,
        out=str(project / "crash2"),
        judge_models=["scripted:ray-crashing"],
        protocols=["NaiveJudge"],
        dataset={"name": "arithmetic", "n": 10, "seed": 7},
    )  # questions the cache has not seen
    with pytest.raises(
        SeerbenchError, match=r"NaiveJudge_swap/J_scripted-ray-crashing: a Ray task failed .*rerun to resume"
    ):
        Experiment(cfg, executor=RayExecutor(shard_size=50)).run()


def _without_cell(line: str) -> dict[str, Any]:
    rec = json.loads(line)
    for k in ("judge", "fingerprint"):
        rec.pop(k)
    return rec


def _coin_judges(spec: str, role: str) -> Model:
    """A model factory of the Python API: every judge is the built-in scripted coin."""
    return get_model("scripted:coin" if role == "judge" else spec)


def test_a_model_factory_travels_to_the_workers(cluster: str, project: Path) -> None:
    outs = []
    for name, executor in (("f-ray", RayExecutor(shard_size=8)), ("f-local", None)):
        exp = Experiment(
            _config(project, out=str(project / name), protocols=["NaiveJudge"]), executor=executor
        )
        exp.model_factory = _coin_judges
        exp.run()
        outs.append(
            (project / name / "NaiveJudge_swap" / "J_scripted-ray-judge" / "results.jsonl").read_bytes()
        )
    assert outs[0] == outs[1]
    # the coin answers with a letter, the configured judge with a probability: the factory was used
    raws = {c["case_probs"]["raw"] for x in outs[0].splitlines() for c in json.loads(x)["answer_cases"]}
    assert raws and raws <= {"[verbalized] A", "[verbalized] B"}, raws
    lock = threading.Lock()
    exp = Experiment(
        _config(project, out=str(project / "f-bad"), protocols=["NaiveJudge"]), executor=RayExecutor()
    )
    exp.model_factory = lambda spec, role: (lock, get_model(spec))[1]  # a lock cannot be pickled
    with pytest.raises(ConfigError, match="cannot send this experiment to its workers"):
        exp.run()
    assert not (project / "f-bad").exists()  # a run that could not start leaves no folder to trip on


def test_cli_refuses_bad_executor_options(project: Path) -> None:
    cfg = str(project / "raytest.yaml")
    for args, message in (
        (["--executor", "dask"], "--executor must be local or ray"),
        (["--address", "ray://x:10001"], "--address names a Ray cluster"),
    ):
        r = subprocess.run(
            [SEERBENCH, "run", cfg, *args], cwd=project, capture_output=True, text=True, timeout=120
        )
        assert r.returncode == 2
        assert message in r.stderr
        assert "Traceback" not in r.stderr


def test_an_address_nothing_answers_at_is_refused_at_once(project: Path) -> None:
    # a port on this machine that nothing listens on (bound, never listening)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        r = subprocess.run(
            [
                SEERBENCH,
                "run",
                str(project / "raytest.yaml"),
                "--executor",
                "ray",
                "--address",
                f"127.0.0.1:{port}",
            ],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 2
        assert f"cannot reach the Ray cluster at 127.0.0.1:{port}" in r.stderr
        # the same address from RAY_ADDRESS (which ray.init reads): refused too, not minutes of retries
        r = subprocess.run(
            [SEERBENCH, "run", str(project / "raytest.yaml"), "--executor", "ray"],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "RAY_ADDRESS": f"127.0.0.1:{port}"},
        )
        assert r.returncode == 2
        assert f"cannot reach the Ray cluster at 127.0.0.1:{port} (from RAY_ADDRESS)" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (project / "runs" / "raytest").exists()  # refused, and no skeleton folder left in its place
    with pytest.raises(ConfigError, match="give HOST:PORT"):
        RayExecutor(address="head-node")


def test_executor_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="shard_size"):
        RayExecutor(shard_size=0)
    with pytest.raises(ConfigError, match="num_cpus"):
        RayExecutor(num_cpus=0)
