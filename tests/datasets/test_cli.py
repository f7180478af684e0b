"""`seerbench datasets ...` through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from seerbench.cli import app
from seerbench.datasets import read_questions_jsonl
from seerbench.errors import ConfigError, DataError

runner = CliRunner()


def test_list_names_every_dataset() -> None:
    r = runner.invoke(app, ["datasets", "list", "--json"])
    assert r.exit_code == 0, r.output
    names = {d["name"] for d in json.loads(r.stdout)}
    assert {
        "arithmetic",
        "reading",
        "quality",
        "single_turn_debate",
        "gpqa",
        "mmlu",
        "mmlu_pro",
        "gsm8k",
        "truthfulqa",
        "medqa",
        "generic",
        "seerbench",
    } <= names
    r = runner.invoke(app, ["datasets", "list"])
    assert r.exit_code == 0 and "single_turn_debate" in r.stdout


def test_show_json_hides_source_from_judge() -> None:
    r = runner.invoke(app, ["datasets", "show", "reading", "--limit", "2", "--seed", "4", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert len(data["questions"]) == 2
    for item in data["questions"]:
        assert item["judge"]["passage"] is None
        assert item["agent"]["source_text"]
        assert item["agent"]["source_text"] not in json.dumps(item["judge"])


def test_show_pretty_prints_both_views(fx: Path) -> None:
    r = runner.invoke(app, ["datasets", "show", "arithmetic", "--limit", "1"])
    assert r.exit_code == 0, r.output
    assert "judge sees (Q)" in r.stdout and "agent sees" in r.stdout and "TRUE" in r.stdout
    r = runner.invoke(
        app,
        [
            "datasets",
            "show",
            "single_turn_debate",
            "-p",
            str(fx / "single_turn_debate.jsonl"),
            "-c",
            "SA",
            "-n",
            "1",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "Ana's only worry was Tomas" in r.stdout


def test_convert_writes_seerbench_jsonl(fx: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    r = runner.invoke(
        app, ["datasets", "convert", "single_turn_debate", str(fx / "single_turn_debate.jsonl"), str(out)]
    )
    assert r.exit_code == 0, r.output
    assert "wrote 3 question(s)" in r.stdout
    assert [q.id for q in read_questions_jsonl(out)] == ["901_1", "901_2", "902_1"]
    out2 = tmp_path / "g.jsonl"
    r = runner.invoke(
        app, ["datasets", "convert", "gsm8k", str(fx / "gsm8k_test.jsonl"), str(out2), "-o", "k=3"]
    )
    assert r.exit_code == 0, r.output
    assert [q.k for q in read_questions_jsonl(out2)] == [3, 3]


def test_convert_errors_and_lenient(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "options": ["a", "b"], "answer": 0}\nnot json\n')
    r = runner.invoke(app, ["datasets", "convert", "generic", str(bad), str(tmp_path / "o.jsonl")])
    assert isinstance(r.exception, DataError) and "bad.jsonl:2" in str(r.exception)
    r = runner.invoke(
        app, ["datasets", "convert", "generic", str(bad), str(tmp_path / "o.jsonl"), "--lenient"]
    )
    assert r.exit_code == 0, r.output
    assert "wrote 1 question(s)" in r.stdout and "skipped 1" in r.stderr
    r = runner.invoke(app, ["datasets", "convert", "arithmetic", str(bad), str(tmp_path / "o.jsonl")])
    assert isinstance(r.exception, ConfigError)
    r = runner.invoke(app, ["datasets", "show", "arithmetic", "-o", "nokey"])
    assert isinstance(r.exception, ConfigError)
