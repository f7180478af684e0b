"""The results schema (seerbench.schema) against real results files and its documentation."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from seerbench.analysis.run import summarize_run
from seerbench.cli import app
from seerbench.errors import DataError
from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.runs import read_results
from seerbench.schema import (
    SCHEMA_VERSION,
    CaseProbs,
    CaseResult,
    LineError,
    ResultLine,
    Scores,
    iter_result_lines,
    parse_line,
)
from tests.test_cli_global import one_line_error, run_main

DOC = Path(__file__).resolve().parents[1] / "docs" / "results-schema.md"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("schema") / "out"
    cfg = ExperimentConfig.parse(
        {
            "name": "schema",
            "dataset": {"name": "arithmetic", "n": 5, "seed": 1},
            "out": str(out),
            "judge_models": ["scripted:coin"],
            "agent_models": ["scripted:echo"],
            "both_orders": True,
            "protocols": ["NaiveJudge", "BlindTrust", "Consultancy", "OpenConsultancy", "SimultaneousDebate"],
            "elicitation": {"order": ["vote"], "vote_samples": 3},
        }
    )
    Experiment(cfg).run()
    return out


def _files(run_dir: Path) -> list[Path]:
    files = sorted(run_dir.glob("*/*/results.jsonl"))
    assert len(files) == 5
    return files


def test_every_line_the_runner_writes_fits_the_schema_exactly(run_dir: Path) -> None:
    for path in _files(run_dir):
        raws = path.read_bytes().splitlines()
        typed = list(iter_result_lines(path, skip_bad=False))
        assert len(typed) == len(raws) == 5
        for raw, line in zip(raws, typed, strict=True):
            assert json.loads(raw)["schema_version"] == SCHEMA_VERSION == line.schema_version
            # nothing is lost or added between the file and the model (extra fields are refused)
            assert line.model_dump(mode="json", exclude_unset=True) == json.loads(raw)


def _first_line(run_dir: Path) -> dict[str, Any]:
    return json.loads(_files(run_dir)[2].read_text().splitlines()[0])


@pytest.mark.parametrize(
    "edit, reason",
    [
        (lambda d: d.pop("judge"), "judge: Field required"),
        (lambda d: d.update(surprise=1), "surprise: Extra inputs are not permitted"),
        (
            lambda d: d["answer_cases"][0]["case_probs"].update(probabilities="high"),
            "answer_cases.0.case_probs.probabilities",
        ),
        (lambda d: d.update(parse_failure_policy="drop"), "parse_failure_policy"),
    ],
)
def test_a_line_that_does_not_fit_is_skipped_with_its_reason(
    run_dir: Path, tmp_path: Path, edit: Any, reason: str
) -> None:
    good = _first_line(run_dir)
    bad = json.loads(json.dumps(good))
    edit(bad)
    path = tmp_path / "results.jsonl"
    path.write_text(
        json.dumps(good) + "\n" + json.dumps(bad) + "\n" + '{"question_id": "torn', encoding="utf-8"
    )
    reasons: list[str] = []
    lines, skipped = read_results(path, reasons=reasons)
    assert [ln["question_id"] for ln in lines] == [good["question_id"]] and skipped == 2
    assert reasons[0].startswith(f"{path}:2: ") and reason in reasons[0]
    assert reasons[1].startswith(f"{path}:3: not JSON")
    with pytest.raises(LineError, match=rf"{re.escape(str(path))}:2: .*{re.escape(reason.split(':')[0])}"):
        list(iter_result_lines(path, skip_bad=False))


def test_stats_report_the_skip_reason(run_dir: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    path = sorted(copy.glob("NaiveJudge*/*/results.jsonl"))[0]
    with path.open("a") as f:
        f.write('{"question_id": "x", "answer_cases": []}\n')
    summary = summarize_run(copy)
    assert summary["skipped_lines"] == 1
    assert (
        summary["skipped_reasons"][0].startswith(f"{path}:6: ")
        and "Field required" in summary["skipped_reasons"][0]
    )
    r = CliRunner().invoke(app, ["stats", str(copy)])
    assert r.exit_code == 0 and "torn" not in r.output and "question(s) unreadable" not in r.output
    said = " ".join(r.output.split())  # the note as one line, however the console wrapped it
    assert (
        "1 unreadable results line(s) hold none of the run's missing questions (junk, or a line of "
        f"another layout) and were skipped. First: {path}:6: " in said
    )


def test_a_newer_schema_version_is_refused_in_one_line(run_dir: Path, tmp_path: Path) -> None:
    line = {**_first_line(run_dir), "schema_version": SCHEMA_VERSION + 1}
    with pytest.raises(
        DataError,
        match=f"schema version {SCHEMA_VERSION + 1}; this seerbench reads up to {SCHEMA_VERSION}: upgrade",
    ):
        parse_line(json.dumps(line))


@pytest.mark.parametrize(
    "version, shown", [("2", '"2"'), (2.0, "2.0"), (1.0, "1.0"), (True, "true"), (0, "0")]
)
def test_a_schema_version_that_is_no_version_number_is_refused(
    run_dir: Path,
    tmp_path: Path,
    version: Any,
    shown: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lax pydantic would read "2" and 2.0 as version 2 (past the upgrade check, which compares
    ints) and 1.0 or true as 1: never guessed at. `seerbench stats` says which line, in one line."""
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    path = _files(copy)[2]
    lines = path.read_text().splitlines()
    lines[1] = json.dumps({**json.loads(lines[1]), "schema_version": version})
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=f"^schema_version {re.escape(shown)} is not a version number"):
        parse_line(lines[1])
    code, out, err = run_main(["stats", str(copy)], capsys, monkeypatch)
    assert code == 2 and out == ""
    assert one_line_error(err) == (
        f"error: {path}:2: schema_version {shown} is not a version number (an integer from 1; this "
        f"seerbench writes {SCHEMA_VERSION}): the line was written or edited by something else; "
        "correct it or remove it"
    )


def test_a_newer_schema_version_names_its_line(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    path = _files(copy)[0]
    with path.open("a") as f:
        f.write(json.dumps({**_first_line(copy), "question_id": "new", "schema_version": 7}) + "\n")
    n = len(path.read_text().splitlines())
    code, _, err = run_main(["stats", str(copy)], capsys, monkeypatch)
    assert code == 2 and one_line_error(err) == (
        f"error: {path}:{n}: results written with schema version 7; this seerbench reads up to "
        f"{SCHEMA_VERSION}: upgrade seerbench to read them"
    )


def test_lines_without_a_version_read_as_version_1(run_dir: Path) -> None:
    """seerbench 0.1 lines: no schema_version, fingerprint or prompts; the same layout otherwise."""
    line = _first_line(run_dir)
    for k in ("schema_version", "fingerprint", "prompts"):
        line.pop(k)
    assert ResultLine.model_validate(parse_line(json.dumps(line))).schema_version == 1


def _doc_tables() -> dict[str, set[str]]:
    """The field names in each '## ' section's table of the doc."""
    out: dict[str, set[str]] = {}
    section = ""
    for ln in DOC.read_text().splitlines():
        if ln.startswith("## "):
            section = ln[3:]
        m = re.match(r"\| `([a-z_0-9]+)` \|", ln)
        if m:
            out.setdefault(section, set()).add(m.group(1))
    return out


@pytest.mark.parametrize(
    "section, model",
    [
        ("A line", ResultLine),
        ("A case result (`answer_cases[i]`)", CaseResult),
        ("A verdict (`answer_cases[i].case_probs`)", CaseProbs),
        ("Scores", Scores),
    ],
)
def test_the_doc_lists_exactly_the_schemas_fields(section: str, model: type[BaseModel]) -> None:
    assert _doc_tables()[section] == set(model.model_fields)
