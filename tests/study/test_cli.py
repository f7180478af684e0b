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
    assert f"http://127.0.0.1:8123/admin  (token: {store.admin_token})" in r.output
    assert "?token=" not in r.output  # a token in a URL lands in access logs
    assert "http://127.0.0.1:8123/invite/" in r.output
    assert served["port"] == 8123 and served["host"] == "127.0.0.1"

    # correct judgments until one is not a catch trial (the example's catch trial lands at random),
    # then export and stats
    rid = str(store.rater_for("prolific:cli", "prolific")["id"])
    catches = 0
    while True:
        a, _ = store.next_assignment(rid)
        assert a is not None
        store.start_timer(a.id, rid)
        store.submit(a.id, rid, {"answer": store.item(a.item_id).correct, "probability": 0.9})
        if not a.is_catch:
            break
        catches += 1
    assert catches <= 1  # catch_per_condition: 1, and only PSA has catch trials
    for out in ("j.csv", "j.jsonl"):
        r = runner.invoke(app, ["study", "export", "--db", db, str(tmp_path / out)])
        assert r.exit_code == 0 and f"wrote {catches + 1} judgment{'s' if catches else ''} to" in r.output
        rows = read_export(tmp_path / out)
        assert [bool(x["is_catch"]) for x in rows] == [True] * catches + [False]
        assert rows[-1]["rater_external_id"] == "prolific:cli" and rows[-1]["correct"] == 1.0
    r = runner.invoke(app, ["study", "stats", "--db", db, "--json"])
    assert r.exit_code == 0, r.output

    def _refuse(c: str) -> None:
        raise AssertionError(f"{c} is not JSON")

    stats = json.loads(
        r.output, parse_constant=_refuse
    )  # strict JSON: one judgment leaves some statistics undefined
    (cond,) = stats["conditions"].values()
    assert cond["accuracy"]["mean"] == 1.0 and cond["judgments"] == 1
    r = runner.invoke(app, ["study", "stats", "--db", db])
    assert r.exit_code == 0 and f"catch trials: {catches}" in r.output
    r = runner.invoke(app, ["study", "export", "--db", db, str(tmp_path / "j.txt")])
    assert r.exit_code != 0 and "must end in .csv or .jsonl" in str(r.exception)


def test_the_examples_catch_comment_says_what_its_rule_does(tmp_path: Path) -> None:
    # new-user trial: the comment said one wrong catch trial "removes a rater from the
    # condition", but the example keeps the default catch_rule: stop (seed 004), which ends the
    # whole study for the rater
    from seerbench.study import load_manifest

    text = (ROOT / "examples" / "study.yaml").read_text(encoding="utf-8")
    manifest = load_manifest(ROOT / "examples" / "study.yaml")
    assert manifest.catch_rule == "stop" and (manifest.catch_min, manifest.catch_threshold) == (1, 1.0)
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("catch_threshold:"))
    comment = lines[at].split("#", 1)[1]
    for ln in lines[at + 1 :]:  # the comment goes on in lines of only a comment
        if not ln.lstrip().startswith("#"):
            break
        comment += " " + ln.split("#", 1)[1]
    assert "from the condition" not in comment
    assert "stops a rater" in comment and "no more tasks in any condition" in comment
    # and so it does: one wrong catch trial, and the rater gets no task at all
    db = str(tmp_path / "s.sqlite")
    r = CliRunner().invoke(app, ["study", "create", str(ROOT / "examples" / "study.yaml"), "--db", db])
    assert r.exit_code == 0, r.output
    store = StudyStore(db)
    rid = str(store.rater_for("prolific:catch", "prolific")["id"])
    while True:
        a, _ = store.next_assignment(rid)
        assert a is not None  # every rater of the example gets a catch trial in PSA
        store.start_timer(a.id, rid)
        it = store.item(a.item_id)
        wrong = next(x for x in ("A", "B") if x != it.correct)
        store.submit(a.id, rid, {"answer": wrong if a.is_catch else it.correct, "probability": 0.9})
        if a.is_catch:
            break
    assert store.next_assignment(rid) == (None, "stopped")


def test_missing_study_database(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["study", "stats", "--db", str(tmp_path / "none.sqlite")])
    assert r.exit_code != 0 and "does not exist" in str(r.exception)
    assert not (tmp_path / "none.sqlite").exists()
    # an empty file, or a file that is not SQLite: one line, and the file is left as it was
    (tmp_path / "empty.sqlite").write_bytes(b"")
    (tmp_path / "notes.yaml").write_text("name: x\n")
    for name, why in (("empty.sqlite", "an empty file"), ("notes.yaml", "not an SQLite file")):
        before = (tmp_path / name).read_bytes()
        r = CliRunner().invoke(app, ["study", "stats", "--db", str(tmp_path / name)])
        assert r.exit_code != 0 and f"is not a study database ({why})" in str(r.exception)
        assert (tmp_path / name).read_bytes() == before


def _main(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    """`seerbench ARGV` through the console-script entry point: (exit status, stdout, stderr)."""
    from seerbench.cli import main

    monkeypatch.setattr("sys.argv", ["seerbench", *argv])
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main()
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def _example_study(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> str:
    """The README's example study created through the CLI; its database path."""
    db = str(tmp_path / "s.sqlite")
    example = str(ROOT / "examples" / "study.yaml")
    assert _main(["study", "create", example, "--db", db], capsys, monkeypatch)[0] == 0
    return db


def test_serve_on_a_busy_port_fails_before_printing_links(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    db = _example_study(tmp_path, capsys, monkeypatch)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, out, err = _main(["study", "serve", "--db", db, "--port", str(port)], capsys, monkeypatch)
    assert code == 2 and out == ""  # no link printed
    (line,) = err.strip().splitlines()
    assert (
        line.startswith(f"error: cannot listen on 127.0.0.1:{port} (")
        and "choose another with --port" in line
    )


def test_create_prints_notes_and_refuses_missing_passages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from .conftest import question

    qs = [
        question("q0", "A"),
        question("q0dup", "A", text="Question q0: how many ships did she record?"),
        question("q1", "B"),
    ]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    (tmp_path / "m.yaml").write_text(
        "name: t\nitems: [{questions: items.jsonl}]\n"
        "conditions: [P, PSA]\ntasks_per_rater: 2\ncompletion_code: X\n"
    )
    code, out, err = _main(
        ["study", "create", str(tmp_path / "m.yaml"), "--db", str(tmp_path / "a.sqlite")], capsys, monkeypatch
    )
    assert code == 0, err
    assert "note: merged duplicate question q0dup into q0 (same text, options and passage)" in out
    assert (
        "note: catch rule off in condition P" in out
        and "note: catch rule unreachable in condition PSA" in out
    )
    bare = [{**q, "source_text": None} for q in qs]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(q) + "\n" for q in bare))
    code, out, err = _main(
        ["study", "create", str(tmp_path / "m.yaml"), "--db", str(tmp_path / "b.sqlite")], capsys, monkeypatch
    )
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(
        "error: conditions that show the passage have items without one "
        "(no source_text): P: 2 items (q0, q1); PSA: 2 items (q0, q1)"
    )


def test_a_failed_create_leaves_nothing_and_can_be_run_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a manifest asking more tasks of a rater than there are questions (4 > 3) is refused in one
    # line; no database is left behind, so the same command works once the manifest is fixed
    from .conftest import question

    (tmp_path / "items.jsonl").write_text("".join(json.dumps(question(f"q{i}")) + "\n" for i in range(3)))
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        "name: t\nitems: [{questions: items.jsonl}]\n"
        "conditions: [P]\ntasks_per_rater: 4\ncompletion_code: X\n"
    )
    db = tmp_path / "s.sqlite"
    code, out, err = _main(["study", "create", str(manifest), "--db", str(db)], capsys, monkeypatch)
    assert code == 2 and out == ""
    assert err.strip() == (
        "error: tasks_per_rater 4 exceeds the 3 distinct questions: a rater never sees a question twice, "
        "so no rater could earn the completion code; set tasks_per_rater to at most 3 or add items"
    )
    # a failure inside the database writes (a condition with no item to show) removes the file too
    manifest.write_text(
        "name: t\nitems: [{questions: items.jsonl}]\n"
        "conditions: [transcript]\ntasks_per_rater: 3\ncompletion_code: X\n"
    )
    code, out, err = _main(["study", "create", str(manifest), "--db", str(db)], capsys, monkeypatch)
    assert code == 2 and "have no items to show" in err and len(err.strip().splitlines()) == 1
    assert not db.exists() and list(tmp_path.glob("s.sqlite*")) == []
    manifest.write_text(
        "name: t\nitems: [{questions: items.jsonl}]\n"
        "conditions: [P]\ntasks_per_rater: 3\ncompletion_code: X\n"
    )
    code, out, err = _main(["study", "create", str(manifest), "--db", str(db)], capsys, monkeypatch)
    assert code == 0, err
    # nothing submitted yet: one line, not empty tables
    code, out, err = _main(["study", "stats", "--db", str(db)], capsys, monkeypatch)
    assert code == 0 and out.strip().splitlines() == [
        "study t: nothing submitted yet (9 ratings to collect); "
        f"serve it with `seerbench study serve --db {db}`"
    ]
    # invitation links point at the public address given
    code, out, err = _main(
        ["study", "invite", "--db", str(db), "--public-url", "https://rate.example.org/", "ann"],
        capsys,
        monkeypatch,
    )
    assert code == 0 and out.startswith("ann\thttps://rate.example.org/invite/")


@pytest.mark.parametrize("port", ["99999", "0", "-1"])
def test_serve_refuses_a_port_out_of_range_before_printing_links(
    port: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _example_study(tmp_path, capsys, monkeypatch)
    code, out, err = _main(["study", "serve", "--db", db, "--port", port], capsys, monkeypatch)
    assert (code, out) == (2, "")
    assert err.strip() == f"error: --port {port} is not a port; give one from 1 to 65535 (e.g. 8000)"


def test_export_into_a_missing_folder_names_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # new-user trial: the one line named the temporary file (/tmp/nodir/.x.csv.17859.tmp)
    db = _example_study(tmp_path, capsys, monkeypatch)
    for name in ("x.csv", "x.jsonl"):
        target = tmp_path / "nodir" / name
        code, out, err = _main(["study", "export", "--db", db, str(target)], capsys, monkeypatch)
        assert (code, out) == (2, "")
        assert err.strip() == (
            f"error: cannot write {target}: the folder {tmp_path / 'nodir'} does not exist; create it first"
        )
    assert not (tmp_path / "nodir").exists()


def test_a_database_that_cannot_be_reached_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = str(ROOT / "examples" / "study.yaml")
    # a SQLite file in a folder that does not exist
    code, out, err = _main(
        ["study", "create", manifest, "--db", str(tmp_path / "no" / "s.sqlite")], capsys, monkeypatch
    )
    assert (code, out) == (2, "")
    assert err.strip() == (
        f"error: cannot make {tmp_path / 'no' / 's.sqlite'}: the "
        f"folder {tmp_path / 'no'} does not exist; create it first"
    )
    assert not (tmp_path / "no").exists()
    # a PostgreSQL server that is not there (port 1 on this machine: nothing listens), with a password
    url = "postgresql://me:hunter2@127.0.0.1:1/studies"
    for argv in (
        ["study", "create", manifest, "--db", url],
        ["study", "stats", "--db", url],
        ["study", "serve", "--db", url],
    ):
        code, out, err = _main(argv, capsys, monkeypatch)
        assert (code, out) == (2, ""), argv
        (line,) = err.strip().splitlines()
        assert line.startswith(
            "error: cannot connect to the database postgresql+psycopg://me:***@127.0.0.1:1/studies: "
        )
        assert "hunter2" not in line and "holds no study" not in line
        assert "Connection refused" in line and "\t" not in line  # the driver's reason, on one line


def test_invite_without_labels_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = _main(["study", "invite", "--db", str(tmp_path / "s.sqlite")], capsys, monkeypatch)
    assert (code, out) == (2, "")
    assert (
        err.strip()
        == "error: give one LABEL per rater to invite, e.g. `seerbench study invite r01 r02 --db DB`"
    )


def test_manifest_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "m.yaml").write_text(
        "name: t\nitems: [{questions: items.jsonl}]\nconditions: [P]\n"
        "task_per_rater: 4\ncompletion_code: X\nratings_per_item: 0\n"
    )
    code, out, err = _main(
        ["study", "create", str(tmp_path / "m.yaml"), "--db", str(tmp_path / "s.sqlite")], capsys, monkeypatch
    )
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: invalid study manifest {tmp_path / 'm.yaml'}: ")
    assert "ratings_per_item: Input should be greater than or equal to 1" in line
    assert "task_per_rater: unknown key (did you mean tasks_per_rater?); allowed keys: admin_token, " in line
    assert line.endswith("; see docs/study.md")
