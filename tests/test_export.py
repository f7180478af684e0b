"""`seerbench export`: a real run's results (scripted models) as flat rows, CSV and parquet. Every
value is worked out by hand from the scripted judge and the definitions in seerbench.metrics."""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.export import COLUMNS, SCHEMA, export_rows, flat_row, to_csv
from seerbench.models import ChatMessage, GenerateConfig, register_scripted
from seerbench.results import rescore
from seerbench.types import AnswerCase, Question
from tests.test_cli_global import one_line_error, run_main

JUDGE, AGENT = "scripted:export-judge", "scripted:export-agent"
FAIL_TEXT = "question number 2"


#: The judge's P(A), by which sides it heard argued: (A argued, B argued).
P_A = {(True, False): "0.8", (False, True): "0.3", (False, False): "0.6"}


def _judge(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    """P(A) from :data:`P_A`; an unparseable answer on question 2; "A" to anything else."""
    text = messages[-1].content
    if FAIL_TEXT in text:
        return "I cannot say."
    return P_A[("(arguing for A)" in text, "(arguing for B)" in text)] if "How likely" in text else "A"


register_scripted("export-judge", _judge, replace=True)
register_scripted("export-agent", lambda messages, config, seed: "My side is right.", replace=True)


def _question(i: int) -> Question:
    cases = [
        AnswerCase(short="A", long=f"yes {i}", value=1.0),
        AnswerCase(short="B", long=f"no {i}", value=0.0),
    ]
    return Question(id=f"q{i}", text=f"This is question number {i}. Which is right?", answer_cases=cases)


QUESTIONS = [_question(i) for i in range(5)]
CONS = "Consultancy_t1/A_scripted-export-agent_J_scripted-export-judge"
CONS_CALC = "Consultancy_t1/A_scripted-export-agent_T_calculator_J_scripted-export-judge"
NAIVE = "NaiveJudge/J_scripted-export-judge"
TRUST = "BlindTrust/J_trust"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("export") / "out")


def make_run(out: Path) -> Path:
    """The run these tests read (also tests/test_export_inspect.py's), written to ``out``."""
    cfg = ExperimentConfig.parse(
        {
            "name": "export",
            "dataset": "arithmetic",
            "judge_models": [JUDGE],
            "agent_models": [AGENT],
            "agent_tools": [[], ["calculator"]],
            "protocols": ["NaiveJudge", "BlindTrust", "Consultancy", "RandomConsultancy"],
            "elicitation": {"order": ["verbalized"]},
            "n_boot": 100,
        }
    )
    Experiment(cfg, questions=QUESTIONS, out=out).run()
    return out


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(run_dir, dst)
    return dst


def _by_cell(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["cell"], []).append(r)
    return out


L = math.log
# After the consultant argued A the judge holds q = (0.8, 0.2); after B, q = (0.3, 0.7).
# Per true option T: the t_ case (agent argued T) and the f_ case (agent argued the other one).
CONSULTANCY = {
    "A": {
        "t_p_true": 0.8,
        "t_choice": "A",
        "t_judge_log": L(0.8),
        "t_judge_brier": -0.08,
        "t_judge_accuracy": 1.0,
        "t_agent_log": L(0.8),
        "t_agent_brier": -0.08,
        "t_agent_accuracy": 1.0,
        "f_p_true": 0.3,
        "f_choice": "B",
        "f_judge_log": L(0.3),
        "f_judge_brier": -0.98,
        "f_judge_accuracy": 0.0,
        "f_agent_log": L(0.7),
        "f_agent_brier": -0.18,
        "f_agent_accuracy": 1.0,
        # ASD = AS_T - AS_F
        "asd_log": L(0.8) - L(0.7),
        "asd_logodds": L(0.8 / 0.2) - L(0.7 / 0.3),
        "asd_brier": 0.10,
        "asd_accuracy": 0.0,
        # beta 0: ASD > 0, so the free agent argues T; beta inf: the mean of both cases;
        # beta 1: p_T = sigmoid(log(0.8 / 0.7)) = 0.8 / 1.5
        "jse_b0_log": L(0.8),
        "ase_b0_log": L(0.8),
        "jse_binf_log": (L(0.8) + L(0.3)) / 2,
        "ase_binf_log": (L(0.8) + L(0.7)) / 2,
        "jse_b1_log": 0.8 / 1.5 * L(0.8) + 0.7 / 1.5 * L(0.3),
        "ase_b1_log": 0.8 / 1.5 * L(0.8) + 0.7 / 1.5 * L(0.7),
        "judge_accuracy": 0.5,
    },
    "B": {
        "t_p_true": 0.7,
        "t_choice": "B",
        "t_judge_log": L(0.7),
        "t_judge_brier": -0.18,
        "t_judge_accuracy": 1.0,
        "t_agent_log": L(0.7),
        "t_agent_brier": -0.18,
        "t_agent_accuracy": 1.0,
        "f_p_true": 0.2,
        "f_choice": "A",
        "f_judge_log": L(0.2),
        "f_judge_brier": -1.28,
        "f_judge_accuracy": 0.0,
        "f_agent_log": L(0.8),
        "f_agent_brier": -0.08,
        "f_agent_accuracy": 1.0,
        "asd_log": L(0.7) - L(0.8),
        "asd_logodds": L(0.7 / 0.3) - L(0.8 / 0.2),
        "asd_brier": -0.10,
        "asd_accuracy": 0.0,
        # beta 0: ASD < 0, so the free agent argues F; p_T(beta 1) = 0.7 / 1.5
        "jse_b0_log": L(0.2),
        "ase_b0_log": L(0.8),
        "jse_binf_log": (L(0.7) + L(0.2)) / 2,
        "ase_binf_log": (L(0.7) + L(0.8)) / 2,
        "jse_b1_log": 0.7 / 1.5 * L(0.7) + 0.8 / 1.5 * L(0.2),
        "ase_b1_log": 0.7 / 1.5 * L(0.7) + 0.8 / 1.5 * L(0.8),
        "judge_accuracy": 0.5,
    },
}
CASE_SCORES = [
    f"{r}_{k}"
    for r in "tf"
    for k in (
        "p_true",
        "choice",
        "judge_log",
        "judge_brier",
        "judge_accuracy",
        "agent_log",
        "agent_brier",
        "agent_accuracy",
    )
]
METRICS = [
    "asd_log",
    "asd_logodds",
    "asd_brier",
    "asd_accuracy",
    "jse_b0_log",
    "jse_b1_log",
    "jse_binf_log",
    "ase_b0_log",
    "ase_b1_log",
    "ase_binf_log",
    "judge_accuracy",
]


def _check(row: dict[str, Any], expected: dict[str, Any]) -> None:
    for k, v in expected.items():
        assert row[k] == (v if isinstance(v, str) or v is None else pytest.approx(v)), (row["question_id"], k)


def test_consultancy_rows_by_hand(run_dir: Path) -> None:
    ex = export_rows(run_dir)
    cells = _by_cell(ex.rows)
    assert ex.n_cells == 6 and ex.skipped_lines == {}
    assert set(cells) >= {CONS, CONS_CALC, NAIVE, TRUST} and len(ex.rows) == 6 * 5
    for key, tools in ((CONS, ""), (CONS_CALC, "calculator")):
        rows = cells[key]
        assert [r["question_id"] for r in rows] == ["q0", "q1", "q2", "q3", "q4"]
        assert {r["true_option"] for r in rows} == {
            "A",
            "B",
        }  # the binary view shuffles: both branches checked
        for r in rows:
            assert (r["protocol"], r["agent"], r["judge"], r["tools"], r["best_of_n"]) == (
                "Consultancy_t1",
                AGENT,
                JUDGE,
                tools,
                1,
            )
            assert r["true_answer"] == f"yes {r['question_id'][1]}" and r["chosen_case"] is None
            assert (r["eps"], r["parse_failure_policy"]) == (1e-6, "exclude")
            assert r["t_method"] == r["f_method"] == "verbalized"
            if r["question_id"] == "q2":  # the judge failed in both cases: excluded, nothing scored
                assert r["excluded"] is True and r["parse_failures"] == 2
                assert r["t_parse_status"] == r["f_parse_status"] == "failed"
                assert all(r[k] is None for k in CASE_SCORES + METRICS)
                continue
            assert r["excluded"] is False and r["parse_failures"] == 0
            assert r["t_parse_status"] == r["f_parse_status"] == "ok"
            _check(r, CONSULTANCY[r["true_option"]])
    # the same numbers `stats` averages: mean ASD(log) over the 4 scored questions
    stats = json.loads((run_dir / CONS / "stats.json").read_text())
    asd = [r["asd_log"] for r in cells[CONS] if not r["excluded"]]
    assert stats["metrics"]["asd"]["log"]["mean"] == pytest.approx(sum(asd) / 4)


def test_other_protocols_rows_by_hand(run_dir: Path) -> None:
    cells = _by_cell(export_rows(run_dir).rows)
    # NaiveJudge: no agent; one verdict q = (0.6, 0.4) stored under both cases
    for r in cells[NAIVE]:
        assert (r["agent"], r["tools"]) == (None, "")
        if r["question_id"] == "q2":
            assert r["excluded"] is True and r["parse_failures"] == 1  # one verdict, counted once
            continue
        p = 0.6 if r["true_option"] == "A" else 0.4
        _check(
            r,
            {
                "t_p_true": p,
                "f_p_true": p,
                "t_choice": "A",
                "f_choice": "A",
                "asd_log": L(p) - L(1 - p),
                "judge_accuracy": 1.0 if p > 0.5 else 0.0,
                "t_judge_brier": -2 * (1 - p) ** 2,
            },
        )
    # BlindTrust: the judge adopts the argued answer (P = 1 or 0, clipped to eps = 1e-6 for logs)
    for r in cells[TRUST]:
        assert (r["judge"], r["agent"], r["t_method"], r["f_method"], r["excluded"]) == (
            "trust",
            None,
            "trust",
            "trust",
            False,
        )
        _check(
            r,
            {
                "t_p_true": 1.0,
                "f_p_true": 0.0,
                "t_judge_log": L(1 - 1e-6),
                "f_judge_log": L(1e-6),
                "f_agent_log": L(1 - 1e-6),
                "asd_log": 0.0,
                "asd_brier": 0.0,
                "judge_accuracy": 0.5,
                "jse_binf_log": (L(1 - 1e-6) + L(1e-6)) / 2,
            },
        )
    # RandomConsultancy: only the case the coin chose ran; no ASD
    random_cells = [k for k in cells if k.startswith("RandomConsultancy")]
    assert len(random_cells) == 2
    for r in cells[random_cells[0]]:
        assert r["asd_log"] is None and r["chosen_case"] in ("A", "B")
        ran, empty = ("t", "f") if r["chosen_case"] == r["true_option"] else ("f", "t")
        assert all(
            r[f"{empty}_{k}"] is None for k in ("p_true", "choice", "judge_log", "agent_log", "method")
        )
        if r["question_id"] == "q2":
            assert r["excluded"] is True and r[f"{ran}_parse_status"] == "failed"
            continue
        argued = r["chosen_case"]  # the judge sides with the argued option: right iff it is the true one
        assert r[f"{ran}_choice"] == argued
        assert r["judge_accuracy"] == (1.0 if ran == "t" else 0.0)


def _parse(value: str, kind: str) -> Any:
    if value == "" and kind != "str":
        return None
    if kind == "bool":
        return {"true": True, "false": False}[value]
    return {"str": str, "int": int, "float": float}[kind](value)


def test_csv_through_the_cli(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = export_rows(run_dir).rows
    target = tmp_path / "flat.csv"
    code, out, err = run_main(
        ["export", str(run_dir), "--format", "csv", "--out", str(target)], capsys, monkeypatch
    )
    assert (code, err) == (0, "") and out == f"wrote 30 row(s) from 6 cell(s) to {target}\n"
    with target.open(newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        data = list(reader)
    assert tuple(header) == COLUMNS
    kinds = dict(SCHEMA)
    parsed = [{c: _parse(v, kinds[c]) for c, v in zip(header, line, strict=True)} for line in data]
    # floats in full precision; a missing value is an empty field (so a missing text reads back as "")
    assert parsed == [{c: "" if v is None and kinds[c] == "str" else v for c, v in r.items()} for r in rows]
    first = next(line for line in data if line[0] == CONS and line[6] == "q0")
    assert first[header.index("t_p_true")] in ("0.8", "0.7") and first[header.index("excluded")] == "false"
    assert not list(run_dir.glob("export.*"))  # --out given: nothing written into the run folder


def test_default_out_quiet_json_and_stdout(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _copy(run_dir, tmp_path)
    code, out, err = run_main(["-q", "export", str(run)], capsys, monkeypatch)
    assert (code, out, err) == (0, "", "")
    assert (run / "export.csv").read_text() == to_csv(export_rows(run).rows)
    code, out, _ = run_main(["export", str(run), "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out) == {
        "out": str(run / "export.csv"),
        "format": "csv",
        "rows": 30,
        "cells": 6,
        "skipped_lines": {},
    }
    code, out, err = run_main(["export", str(run), "--out", "-"], capsys, monkeypatch)
    assert code == 0 and out == (run / "export.csv").read_text()
    assert err == "wrote 30 row(s) from 6 cell(s) to stdout\n"


def test_parquet(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    rows = export_rows(run_dir).rows
    target = tmp_path / "flat.parquet"
    code, out, _ = run_main(
        ["export", str(run_dir), "--out", str(target)], capsys, monkeypatch
    )  # format from the suffix
    assert code == 0 and out == f"wrote 30 row(s) from 6 cell(s) to {target}\n"
    table = pq.read_table(target)
    assert table.column_names == list(COLUMNS)
    kinds = dict(SCHEMA)
    assert {c: str(table.schema.field(c).type) for c in COLUMNS} == {
        c: {"str": "string", "int": "int64", "float": "double", "bool": "bool"}[kinds[c]] for c in COLUMNS
    }
    assert table.to_pylist() == rows


def test_parquet_without_pyarrow_is_one_line(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # makes `import pyarrow` fail
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    target = tmp_path / "x.parquet"
    code, _, err = run_main(
        ["export", str(run_dir), "--format", "parquet", "--out", str(target)], capsys, monkeypatch
    )
    assert code == 2 and "pip install 'seerbench[parquet]'" in one_line_error(err)
    assert not target.exists()


def test_torn_last_line_is_skipped_and_reported(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _copy(run_dir, tmp_path)
    results = run / CONS / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    torn = "".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2]  # what a crash mid-write leaves
    results.write_text(torn)
    ex = export_rows(run)
    assert ex.skipped_lines == {CONS: 1} and ex.n_skipped == 1
    cons = _by_cell(ex.rows)[CONS]
    assert [r["question_id"] for r in cons] == ["q0", "q1", "q2", "q3"] and len(ex.rows) == 29
    code, out, err = run_main(["export", str(run)], capsys, monkeypatch)
    assert code == 0 and out == f"wrote 29 row(s) from 6 cell(s) to {run / 'export.csv'}\n"
    assert "skipped 1 torn or corrupt results line(s)" in err and f"{CONS} (1)" in " ".join(err.split())
    assert results.read_text() == torn  # export never changes a results file
    code, out, _ = run_main(["export", str(run), "--json"], capsys, monkeypatch)
    assert json.loads(out)["skipped_lines"] == {CONS: 1}


def test_user_errors_are_one_line(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def error(*argv: str) -> str:
        code, _, err = run_main(["export", *argv], capsys, monkeypatch)
        assert code == 2, err
        return one_line_error(err)

    assert "no experiment.json" in error(str(tmp_path))
    assert "is not a folder" in error(str(tmp_path / "missing"))
    assert "--format must be one of csv, parquet, inspect, rewards; got 'xlsx'" in error(
        str(run_dir), "--format", "xlsx"
    )
    assert "stdout" in error(str(run_dir), "--format", "parquet", "--out", "-")
    # a CSV under another format's name (it was written silently)
    for name in ("x.parquet", "x.xlsx"):
        msg = error(str(run_dir), "--format", "csv", "--out", str(tmp_path / name))
        assert "does not end like a csv file (.csv)" in msg and not (tmp_path / name).exists()
    assert "does not end like a parquet file" in error(
        str(run_dir), "--format", "parquet", "--out", str(tmp_path / "x.csv")
    )
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert error(str(run_dir), "--out", str(blocker / "flat.csv")).startswith(
        f"error: cannot write {blocker / 'flat.csv'}: "
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "experiment.json").write_text((run_dir / "experiment.json").read_text())
    assert "no results.jsonl" in error(str(empty))
    (empty / "experiment.json").write_text('{"config": ')
    assert "is corrupt" in error(str(empty))


def test_csv_quotes_awkward_text() -> None:
    row = dict.fromkeys(COLUMNS)
    row.update(cell="P/J", question_id='q,"1"\nx', excluded=False, true_answer="a, b")
    text = to_csv([row])
    back = list(csv.reader(io.StringIO(text)))
    assert (
        back[1][COLUMNS.index("question_id")] == 'q,"1"\nx'
        and back[1][COLUMNS.index("true_answer")] == "a, b"
    )
    assert back[1][COLUMNS.index("excluded")] == "false" and back[1][COLUMNS.index("asd_log")] == ""


def test_a_near_tie_is_no_choice(run_dir: Path) -> None:
    """Within TIE_TOL, as the accuracy score counts ties: 0.5000000000000001 vs 0.5 (a rounding step)."""
    line = json.loads((run_dir / CONS / "results.jsonl").read_text().splitlines()[0])
    for c in line["answer_cases"]:
        c["case_probs"]["probabilities"] = {"A": 0.5000000000000001, "B": 0.5}
    row = flat_row(rescore(line, eps=1e-6, policy="exclude"), CONS)
    assert row["t_choice"] is None and row["f_choice"] is None
    assert row["t_judge_accuracy"] == 0.5 and row["judge_accuracy"] == 0.5


def test_the_docs_list_the_columns_in_their_order() -> None:
    # docs/experiments.md's export table, "Columns, in this order": every column, in COLUMNS' order
    import re

    from seerbench.export import COLUMNS

    text = (Path(__file__).resolve().parents[1] / "docs" / "experiments.md").read_text()
    table = text.split("Columns, in this order", 1)[1].split("\n\n", 2)[1]
    listed: list[str] = []
    for row in table.splitlines()[2:]:
        names = re.findall(r"`([a-z_0-9]+)`", row.split("|")[1])
        if "..." in row.split("|")[1]:  # `f_p_true` ... `f_parse_status`: the t_ block again as f_
            t_block = [c for c in listed if c.startswith("t_")]
            names = ["f_" + c[2:] for c in t_block]
            assert (names[0], names[-1]) == tuple(re.findall(r"`([a-z_0-9]+)`", row.split("|")[1]))
        listed += names
    assert listed == list(COLUMNS)
