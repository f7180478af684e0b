"""The `seerbench study` commands, on the shipped example manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seerbench.cli import app
from seerbench.study import StudyStore, read_export

ROOT = Path(__file__).resolve().parents[2]


def test_create_serve_export_stats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    db = str(tmp_path / "s.sqlite")
    r = runner.invoke(app, ["study", "create", str(ROOT / "examples" / "study.yaml"), "--db", db])
    assert r.exit_code == 0, r.output
    assert "condition P: 12 ratings to collect" in r.output and "condition PSA: 12" in r.output
    # a second create on the same database is refused
    r = runner.invoke(app, ["study", "create", str(ROOT / "examples" / "study.yaml"), "--db", db])
    assert r.exit_code != 0 and "already holds a study" in str(r.exception)

    served: dict = {}
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda application, **kw: served.update(kw, app=application))
    r = runner.invoke(app, ["study", "serve", "--db", db, "--port", "8123", "--invites", "1"])
    assert r.exit_code == 0, r.output
    store = StudyStore(db)
    assert "http://127.0.0.1:8123/start?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}" in r.output
    assert f"http://127.0.0.1:8123/admin?token={store.admin_token}" in r.output
    assert "http://127.0.0.1:8123/invite/" in r.output
    assert served["port"] == 8123 and served["host"] == "127.0.0.1"

    # one judgment, then export and stats
    rid = str(store.rater_for("prolific:cli", "prolific")["id"])
    a, _ = store.next_assignment(rid)
    assert a is not None
    store.start_timer(a.id, rid)
    store.submit(a.id, rid, {"answer": store.item(a.item_id).correct, "probability": 0.9})
    for out in ("j.csv", "j.jsonl"):
        r = runner.invoke(app, ["study", "export", "--db", db, str(tmp_path / out)])
        assert r.exit_code == 0 and "wrote 1 judgments" in r.output
        (row,) = read_export(tmp_path / out)
        assert row["rater_external_id"] == "prolific:cli" and row["correct"] == 1.0
    r = runner.invoke(app, ["study", "stats", "--db", db, "--json"])
    assert r.exit_code == 0, r.output
    stats = json.loads(r.output)
    (cond,) = stats["conditions"].values()
    assert cond["accuracy"]["mean"] == 1.0 and cond["judgments"] == 1
    r = runner.invoke(app, ["study", "stats", "--db", db])
    assert r.exit_code == 0 and "catch trials: 0" in r.output
    r = runner.invoke(app, ["study", "export", "--db", db, str(tmp_path / "j.txt")])
    assert r.exit_code != 0 and "must end in .csv or .jsonl" in str(r.exception)


def test_missing_study_database(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["study", "stats", "--db", str(tmp_path / "none.sqlite")])
    assert r.exit_code != 0 and "does not exist" in str(r.exception)
    assert not (tmp_path / "none.sqlite").exists()
