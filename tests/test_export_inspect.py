"""`seerbench export --format inspect`: a real run (scripted models) written as Inspect AI logs and
read back with Inspect's own reader. The run is tests/test_export.py's (6 cells: NaiveJudge,
BlindTrust, Consultancy and RandomConsultancy with and without a calculator; 5 questions each):
the scripted judge holds
P(A) = 0.8 after an agent argued A and 0.3 after B; question q2's verdicts fail to parse (excluded
under the run's policy)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai", reason="inspect-ai is in the dev extra: pip install -e '.[dev]'")

from inspect_ai.log import list_eval_logs, read_eval_log

from seerbench.analysis.run import summarize_run
from seerbench.export import export_inspect
from seerbench.runs import RunFolder, read_results
from tests.test_cli_global import one_line_error, run_main
from tests.test_export import make_run

CONS = "Consultancy_t1/A_scripted-export-agent_J_scripted-export-judge"
NAIVE = "NaiveJudge/J_scripted-export-judge"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("export") / "out")


@pytest.fixture(scope="module")
def exported(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("logs") / "inspect"
    export_inspect(run_dir, out)
    return out


def _true(line: dict[str, Any]) -> str:
    return next(c["short"] for c in line["question"]["answer_cases"] if c["value"] > 0.5)


def _log_of(exported: Path, cell: str) -> Path:
    return exported / (cell.replace("/", "__") + ".eval")


def test_one_log_per_cell_with_every_line_as_a_sample(run_dir: Path, exported: Path) -> None:
    cells = RunFolder(run_dir).cells()
    assert len(cells) == 6
    infos = list_eval_logs(str(exported))  # what `inspect view` lists
    assert len(infos) == len(cells)
    for cell in cells:
        lines, _ = read_results(cell.results_path)
        log = read_eval_log(str(_log_of(exported, cell.key)))
        assert log.status == "success"
        assert log.samples is not None and len(log.samples) == len(lines) == 5
        assert [s.id for s in log.samples] == [ln["question_id"] for ln in lines]
        assert log.eval.metadata is not None and log.eval.metadata["seerbench_cell"] == cell.key
        assert [s.target for s in log.samples] == [_true(ln) for ln in lines]


def test_scores_equal_the_run(run_dir: Path, exported: Path) -> None:
    """Per sample: the judge's accuracy and ASD(log) of the line, worked by hand for consultancy
    (argued A: P(A) = 0.8, argued B: P(B) = 0.7: the judge follows the consultant, so accuracy
    0.5, and ASD = AS_T - AS_F = log 0.8 - log 0.7 when A is true, log 0.7 - log 0.8 when B is);
    q2 is excluded and carries no score. Per log: the cell's stats means and CIs."""
    log = read_eval_log(str(_log_of(exported, CONS)))
    assert log.samples is not None
    by_id = {s.id: s for s in log.samples}
    assert by_id["q2"].scores is None
    for qid in ("q0", "q1", "q3", "q4"):
        scores = by_id[qid].scores
        assert scores is not None
        assert scores["judge_accuracy"].value == 0.5
        sign = 1 if by_id[qid].target == "A" else -1
        assert scores["asd"].value == pytest.approx(sign * (math.log(0.8) - math.log(0.7)))
        meta = scores["judge_accuracy"].metadata
        assert meta is not None
        assert meta["cases"]["A"]["probabilities"] == pytest.approx({"A": 0.8, "B": 0.2})
        assert meta["cases"]["B"]["probabilities"] == pytest.approx({"A": 0.3, "B": 0.7})
        assert meta["cases"]["A"]["method"] == "verbalized"
        assert meta["cases"]["A"]["choice"] == "A" and meta["cases"]["B"]["choice"] == "B"
    stats = {c["cell"]: c for c in summarize_run(run_dir)["cells"]}
    for path in exported.glob("*.eval"):
        log = read_eval_log(str(path))
        assert log.results is not None and log.eval.metadata is not None
        cell = stats[log.eval.metadata["seerbench_cell"]]
        acc = next(s for s in log.results.scores if s.name == "judge_accuracy")
        want = cell["metrics"]["judge_accuracy"]
        assert acc.metrics["mean"].value == pytest.approx(want["mean"])
        assert (acc.metrics["ci_low"].value, acc.metrics["ci_high"].value) == pytest.approx(
            (want["ci_low"], want["ci_high"])
        )
        assert acc.scored_samples == cell["n_scored"]
        assert acc.unscored_samples == 5 - cell["n_scored"]
        assert log.samples is not None
        scored = [s.scores["judge_accuracy"].value for s in log.samples if s.scores]
        assert sum(scored) / len(scored) == pytest.approx(want["mean"])  # type: ignore[arg-type]


def test_transcript_as_messages(exported: Path) -> None:
    log = read_eval_log(str(_log_of(exported, CONS)))
    assert log.samples is not None
    s = log.samples[0]
    assert s.messages[0].role == "user" and "This is question number 0" in s.messages[0].text
    assert s.choices is not None and sorted(s.choices) == ["no 0", "yes 0"]
    assert f"A) {s.choices[0]}\nB) {s.choices[1]}" in s.messages[0].text
    roles = [m.role for m in s.messages]
    # per answer case: a note, the consultant's turn, the judge's verdict
    assert roles == ["user", "system", "assistant", "assistant", "system", "assistant", "assistant"]
    consultant = s.messages[2]
    assert consultant.text.endswith("My side is right.")
    assert consultant.metadata is not None and consultant.metadata["answer_case"] == "A"
    assert "P(A)=0.800" in s.messages[3].text and "P(A)=0.300" in s.messages[6].text
    # NaiveJudge: one run serves both cases, shown once
    naive = read_eval_log(str(_log_of(exported, NAIVE)))
    assert naive.samples is not None
    assert [m.role for m in naive.samples[0].messages].count("system") == 1


def test_inspect_cli_reads_the_logs(exported: Path) -> None:
    """Inspect's own command line dumps a log (what `inspect view` serves)."""
    inspect_bin = Path(sys.executable).parent / "inspect"
    res = subprocess.run(
        [str(inspect_bin), "log", "dump", str(_log_of(exported, CONS))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert len(json.loads(res.stdout)["samples"]) == 5


def test_cli(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    code, out, _ = run_main(["export", str(run), "--format", "inspect", "--json"], capsys, monkeypatch)
    assert code == 0
    d = json.loads(out)
    assert d["out"] == str(run / "inspect") and d["cells"] == 6 and d["samples"] == 30
    assert sorted(p.name for p in (run / "inspect").glob("*.eval")) == sorted(
        Path(p).name for p in d["logs"].values()
    )
    code, _, err = run_main(["export", str(run), "-f", "inspect", "--out", "-"], capsys, monkeypatch)
    assert code == 2 and "folder" in one_line_error(err)
    a_file = tmp_path / "x.txt"
    a_file.write_text("")
    code, _, err = run_main(["export", str(run), "-f", "inspect", "--out", str(a_file)], capsys, monkeypatch)
    assert code == 2 and "is a file" in one_line_error(err)
    code, _, err = run_main(["export", str(run), "-f", "inspekt"], capsys, monkeypatch)
    assert code == 2 and "csv, parquet, inspect" in one_line_error(err)
    monkeypatch.setattr("seerbench.cli._export.inspect_available", lambda: False)
    code, _, err = run_main(["export", str(run), "-f", "inspect"], capsys, monkeypatch)
    assert code == 2 and "seerbench[inspect]" in one_line_error(err)


def test_torn_line_is_skipped_and_reported(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    f = run / CONS / "results.jsonl"
    f.write_text(f.read_text() + '{"schema_version": 1, "question_id": "q9", "prot')
    code, _, err = run_main(["export", str(run), "-f", "inspect"], capsys, monkeypatch)
    assert code == 0 and "skipped 1 torn or corrupt" in err
    log = read_eval_log(str(_log_of(run / "inspect", CONS)))
    assert log.samples is not None and len(log.samples) == 5
    assert list(f.read_text().splitlines())[-1].endswith('"prot')  # the results file is not changed
