"""A run's cells read in worker processes give byte for byte the statistics and the report that
one process gives; every reader of a snapshot sees the same lines while a run appends; an error in
a worker reaches the user as it would from one process."""

from __future__ import annotations

import filecmp
import json
import shutil
import warnings
from pathlib import Path

import pytest

import seerbench._forked as forked_mod
import seerbench.analysis.run as run_mod
from seerbench.analysis.run import summarize_run
from seerbench.errors import DataError
from seerbench.report import build_report
from seerbench.runs import RunFolder
from seerbench.store import RecordReader, numbered_lines
from tests.test_export import CONS, make_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("parallel") / "out")


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"anytime": True, "baseline": "NaiveJudge"},
        {"parse_failures": "half", "eps": 1e-3, "beta": 0.5, "score": "brier", "baseline": "NaiveJudge"},
    ],
)
def test_workers_give_the_same_statistics(run_dir: Path, kw: dict[str, object]) -> None:
    one = summarize_run(run_dir, workers=1, **kw)  # type: ignore[arg-type]
    two = summarize_run(run_dir, workers=2, **kw)  # type: ignore[arg-type]
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    assert len(one["cells"]) == 6 and any(c["parse_failures"] for c in one["cells"])


class _Count:
    """A per-line pass: the question ids it saw (picklable, for the workers)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def add(self, ln: dict[str, object]) -> None:
        self.seen.append(str(ln["question_id"]))

    def result(self) -> list[str]:
        return self.seen


def test_a_per_line_pass_sees_the_lines_the_statistics_count_in_both_modes(run_dir: Path) -> None:
    seen: dict[int, list[tuple[str, list[str]]]] = {}
    for workers in (1, 2):
        got: list[tuple[str, list[str]]] = []

        def done(cell: run_mod.Cell, ids: list[str], got: list[tuple[str, list[str]]] = got) -> None:
            assert cell.upto == cell.results_path.stat().st_size  # the snapshot's cell
            got.append((cell.key, ids))

        out = summarize_run(run_dir, workers=workers, per_line=_Count, done=done)
        assert [k for k, _ in got] == [c["cell"] for c in out["cells"]]  # in order, one call each
        assert [len(ids) for _, ids in got] == [c["n_questions"] for c in out["cells"]]
        seen[workers] = got
    assert seen[1] == seen[2] and len(seen[1]) == 6
    assert all(ids == [f"q{k}" for k in range(5)] for _, ids in seen[1])


def test_per_line_and_done_go_together(run_dir: Path) -> None:
    with pytest.raises(TypeError, match="together"):
        summarize_run(run_dir, per_line=_Count)


def test_the_report_is_the_same_from_workers(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Statistics, transcript rows and figures: all in this process (one core), or in workers."""
    monkeypatch.setattr(forked_mod, "available_cpus", lambda: 1)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        serial = build_report([run_dir], tmp_path / "serial.html")
    # 81-character cell labels: the interval plots widen for them, so matplotlib lays them out
    assert not [w for w in said if "constrained_layout" in str(w.message)], [str(w.message) for w in said]
    monkeypatch.setattr(run_mod, "PARALLEL_BYTES", 0)  # workers=None now forks, even for 30 lines
    monkeypatch.setattr(forked_mod, "available_cpus", lambda: 2)
    forked = build_report([run_dir], tmp_path / "forked.html")
    assert filecmp.cmp(serial, forked, shallow=False)
    assert serial.read_text().count("<svg") >= 6  # the figures, drawn in the workers the second time


def test_a_figure_that_fails_in_a_worker_is_an_internal_error_with_its_traceback(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import seerbench.report._figures as figures_mod

    def broken(*args: object, **kwargs: object) -> str:
        raise ZeroDivisionError("a bug in a figure")

    monkeypatch.setattr(forked_mod, "available_cpus", lambda: 2)
    monkeypatch.setattr(figures_mod, "reliability", figures_mod._figure_function(broken))
    with pytest.raises(RuntimeError, match="drawing broken in a worker process") as e:
        build_report([run_dir], tmp_path / "r.html")
    assert "ZeroDivisionError: a bug in a figure" in str(e.value)
    assert not (tmp_path / "r.html").exists()  # no page with a placeholder for a figure


def test_a_workers_user_error_is_the_error_one_process_gives(run_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    res = run / CONS / "results.jsonl"
    first = json.loads(res.read_text().splitlines()[0])
    with res.open("a") as f:
        f.write(json.dumps({**first, "question_id": "new", "schema_version": 99}) + "\n")
    errors = []
    for workers in (1, 2):
        with pytest.raises(DataError) as e:
            summarize_run(run, workers=workers)
        errors.append(str(e.value))
    assert errors[0] == errors[1] and "schema version 99" in errors[0] and "upgrade seerbench" in errors[0]


def test_a_snapshot_reads_the_bytes_it_saw(run_dir: Path, tmp_path: Path) -> None:
    """Lines appended after the snapshot are in no reader's view; a line the snapshot cut is a torn
    line (skipped, as after a crash), the same for every reader."""
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    (cell,) = [c for c in RunFolder(run).cells() if c.key == CONS]
    snap = cell.snapshot()
    lines = cell.results_path.read_bytes().splitlines(keepends=True)
    with cell.results_path.open("ab") as f:
        f.write(lines[0].replace(b'"q0"', b'"q9"'))  # a new question, after the snapshot
    assert [ln["question_id"] for ln in snap.results()] == [json.loads(x)["question_id"] for x in lines]
    assert sum(1 for _ in cell.results()) == 6  # the folder as it is now
    cut = len(lines[0]) + 10  # the second line cut 10 bytes in
    reader = RecordReader(cell.results_path, "question_id", upto=cut, warn=False)
    assert len(list(reader)) == 1 and reader.skipped == 1
    assert [raw for _, raw in numbered_lines(cell.results_path, cut)] == [lines[0], lines[1][:10]]
    assert list(numbered_lines(cell.results_path, 0)) == []


def test_a_cell_kept_for_pairing_keeps_its_pairs_and_drops_its_scores(run_dir: Path) -> None:
    from seerbench.results import CellStats

    (cell,) = [c for c in RunFolder(run_dir).cells() if c.key == CONS]
    acc = CellStats(paired_score="log")
    for ln in cell.results():
        acc.add_stored(ln, eps=1e-4, policy="exclude")
    pairs = {k: acc.paired_values(k) for k in ("asd", "judge_accuracy")}
    shares = acc.shares_clusters()
    assert acc.keep_paired_only() is acc
    assert {k: acc.paired_values(k) for k in ("asd", "judge_accuracy")} == pairs and len(pairs["asd"]) > 0
    assert acc.shares_clusters() == shares and acc._values == {}
    with pytest.raises(ValueError, match="keep_paired_only"):
        acc.stats({}, eps=1e-4, policy="exclude")
