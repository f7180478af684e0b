"""Issue 21, the record store: one reader and writer for every JSONL folder. Reproduces the audit's
defects on real run output (scripted models), then edits the files as a crash, a second config or
a copy would: a foreign line is excluded, reported and replaced on resume (2); a duplicate line is
counted once and reported (3); a rating and its samples are never half written (4); failed
questions are shown (5); and any sequence of kills and reruns ends byte-identical (property)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from seerbench import store
from seerbench.analysis.run import summarize_run
from seerbench.cli import app
from seerbench.errors import DataError, ModelUnavailableError, SeerbenchError
from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.factcheck import RaterConfig, rate
from seerbench.models import ChatMessage, GenerateConfig, register_scripted
from seerbench.types import AnswerCase, Question

runner = CliRunner()


def _judge(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    """A verbalised probability that depends on the prompt and the seed (so another seed gives
    another line for the same question)."""
    text = messages[-1].content
    if "How likely" not in text:
        return "A"
    h = hashlib.sha256(f"{seed}|{text}".encode()).digest()
    return f"{0.1 + 0.8 * h[0] / 255:.3f}"


def _flaky(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    if "number 2." in messages[-1].content or "number 5." in messages[-1].content:
        raise ModelUnavailableError("server hiccup")
    return _judge(messages, config, seed)


def _agent(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    return "My side is right."


register_scripted("st-judge", _judge, replace=True)
register_scripted("st-flaky", _flaky, replace=True)
register_scripted("st-agent", _agent, replace=True)

QUESTIONS = [
    Question(
        id=f"q{i}",
        text=f"This is question number {i}. Which is right?",
        answer_cases=[
            AnswerCase(short="A", long=f"yes {i}", value=1.0),
            AnswerCase(short="B", long=f"no {i}", value=0.0),
        ],
    )
    for i in range(8)
]
CELL = "NaiveJudge/J_scripted-st-judge"


def _cfg(out: Path, **kw: Any) -> ExperimentConfig:
    return ExperimentConfig.parse(
        {
            "name": "st",
            "dataset": "arithmetic",
            "judge_models": ["scripted:st-judge"],
            "agent_models": ["scripted:st-agent"],
            "protocols": ["NaiveJudge"],
            "elicitation": {"order": ["verbalized"]},
            "n_boot": 100,
            "concurrency": 1,
            "out": str(out),
            **kw,
        }
    )


def _run(out: Path, **kw: Any) -> None:
    Experiment(_cfg(out, **kw), questions=QUESTIONS).run()


def _stats(out: Path) -> dict[str, Any]:
    r = runner.invoke(app, ["stats", str(out), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _table(out: Path) -> str:
    r = runner.invoke(app, ["stats", str(out)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    return r.stdout


def _cell(summary: dict[str, Any], key: str = CELL) -> dict[str, Any]:
    return next(c for c in summary["cells"] if c["cell"] == key)


def _accuracy(lines: list[str]) -> float:
    """Judge accuracy worked out from the lines themselves: the mean of their judge_accuracy."""
    vals = [json.loads(x)["judge_accuracy"] for x in lines]
    return sum(vals) / len(vals)


# ---- the store on its own ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 0.30000000000000004, "b": [1, -0.0, 1e-07, 5e-324, 1.7976931348623157e+308]}\n',
        b'{"a": NaN, "b": Infinity, "c": -Infinity}\n',  # Python's json writes these; orjson refuses
        b'{"a": 123456789012345678901234567890, "b": -9223372036854775809}\n',  # past 64 bits
        b'{"a": 1e400, "b": 0.1000000000000000055511151231257827}\n',
        b'{"a": "\\ud800 lone surrogate", "b": "caf\xc3\xa9 \xe2\x80\xa8"}\n',
        b'\xef\xbb\xbf{"a": 1}\n',  # a BOM
        b'{"a": 1, "a": 2}\n',
        b"[1, 2]\n",
    ],
)
def test_loads_reads_a_line_as_json_loads_does(raw: bytes) -> None:
    # the same values, types and key order as json.loads (repr tells 1 from 1.0 and -0.0 from 0.0)
    assert repr(store.loads(raw)) == repr(json.loads(raw))


@pytest.mark.parametrize("raw", [b'{"a": 1', b'{"a": "\xff"}\n', b'{"a": 01}\n', b"\n"])
def test_loads_refuses_what_json_loads_refuses_with_its_error(raw: bytes) -> None:
    with pytest.raises(ValueError) as got:
        store.loads(raw)
    with pytest.raises(ValueError) as want:
        json.loads(raw)
    assert (type(got.value), str(got.value)) == (type(want.value), str(want.value))


def test_reader_skips_torn_foreign_and_duplicate_lines_and_says_why(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    rows = [
        {"question_id": "a", "fingerprint": "F", "v": 1},
        {"question_id": "b", "fingerprint": "G", "v": 2},  # another config's
        {"question_id": "a", "fingerprint": "F", "v": 3},  # a duplicate: the first counts
        {"question_id": "c", "v": 4},  # no fingerprint (0.1 lines): its folder's
        {"v": 5},  # no key
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows) + "junk\n\n" + '{"question_id": "d", "v')
    reasons: list[str] = []
    r = store.RecordReader(p, "question_id", fingerprint="F", reasons=reasons, warn=False)
    assert [x["v"] for x in r] == [1, 4]
    assert r.counts() == {"skipped": 3, "foreign": 1, "duplicates": 1}
    assert [x.split(": ", 1)[0] for x in reasons] == [f"{p}:{n}" for n in (2, 3, 5, 6, 8)]
    assert reasons[-1].endswith(
        "not JSON (Unterminated string starting at): a torn line from a crash, or junk"
    )
    # strict (files people write by hand): junk is refused, naming it; a torn last line is not
    with pytest.raises(DataError, match=r"r.jsonl:5: no question_id"):
        list(store.RecordReader(p, "question_id", fingerprint="F", strict=True, refuse_duplicates=False))
    p.write_text(json.dumps(rows[0]) + "\n" + '{"question_id": "d", "v')
    assert [x["v"] for x in store.RecordReader(p, "question_id", strict=True)] == [1]
    p.write_text(json.dumps(rows[0]) + "\n" + json.dumps(rows[2]) + "\n")
    with pytest.raises(DataError, match=r"r.jsonl:2: question_id 'a' appears twice"):
        list(store.RecordReader(p, "question_id", strict=True))
    assert len(list(store.RecordReader(p, "question_id", strict=True, refuse_duplicates=False))) == 1


def test_atomic_write_leaves_the_old_file_when_the_writer_fails(tmp_path: Path) -> None:
    p = tmp_path / "f.jsonl"
    store.atomic_write_lines(p, ["one", "two"])
    assert p.read_text() == "one\ntwo\n"

    def lines() -> Iterator[str]:
        yield "three"
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        store.atomic_write_lines(p, lines())
    assert p.read_text() == "one\ntwo\n" and os.listdir(tmp_path) == ["f.jsonl"]  # no temporary left


def test_an_atomic_write_into_a_missing_folder_names_the_folder(tmp_path: Path) -> None:
    # new-user trial: `study export ... /tmp/nodir/x.csv` said "/tmp/nodir/.x.csv.17859.tmp: No
    # such file or directory", naming the temporary file; every atomic write goes through here
    (tmp_path / "afile").write_text("x")
    cases = [
        (tmp_path / "nodir" / "x.csv", f"the folder {tmp_path / 'nodir'} does not exist; create it first"),
        (tmp_path / "afile" / "sub" / "x.csv", f"{tmp_path / 'afile'} is a file, not a folder"),
    ]
    for target, why in cases:
        for write in (
            partial(store.atomic_write_text, target, "x"),
            partial(store.atomic_write_lines, target, ["x"]),
            partial(store.atomic_write_bytes, target, b"x"),
            partial(store.atomic_path(target).__enter__),
        ):
            with pytest.raises(OSError) as e:  # still an OSError, for code that handles a failed write
                write()
            assert str(e.value) == f"cannot write {target}: {why}" and ".tmp" not in str(e.value)
            assert isinstance(e.value, SeerbenchError) and e.value.filename == str(target)  # one line, exit 2
    assert sorted(os.listdir(tmp_path)) == ["afile"]  # nothing made, nothing left


# ---- 2. a foreign line ------------------------------------------------------------------------------


def test_a_foreign_line_is_excluded_reported_and_replaced_on_resume(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _run(a)
    _run(b, seed=1)
    res_a, res_b = a / CELL / "results.jsonl", b / CELL / "results.jsonl"
    original = res_a.read_text()
    la, lb = original.splitlines(), res_b.read_text().splitlines()
    # the same question, another seed: another fingerprint and another verdict
    i = next(
        i
        for i in range(len(la))
        if json.loads(la[i])["judge_accuracy"] != json.loads(lb[i])["judge_accuracy"]
    )
    assert json.loads(la[i])["fingerprint"] != json.loads(lb[i])["fingerprint"]
    res_a.write_text("\n".join([*la[:i], lb[i], *la[i + 1 :]]) + "\n")

    cell = _cell(_stats(a))
    assert cell["n_questions"] == 7 and cell["foreign_lines"] == 1
    assert cell["unstarted"] == 1 and cell["unfinished"] is True
    assert cell["metrics"]["judge_accuracy"]["mean"] == pytest.approx(_accuracy(la[:i] + la[i + 1 :]))
    assert any("written by another config" in w for w in cell["diagnostics"]["warnings"])
    table = _table(a)
    assert "1 foreign" in table and "1 unstarted" in table

    _run(a)  # resume: the foreign line's question is done again and replaces it
    assert res_a.read_text() == original
    cell = _cell(_stats(a))
    assert (cell["foreign_lines"], cell["unstarted"], cell["unfinished"]) == (0, 0, False)


# ---- 3. a duplicate line ------------------------------------------------------------------------------


def test_a_duplicate_line_is_counted_once_and_reported(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _run(out)
    res = out / CELL / "results.jsonl"
    original = res.read_text()
    lines = original.splitlines()
    res.write_text(original + lines[3] + "\n")  # question q3 twice
    cell = _cell(_stats(out))
    assert cell["n_questions"] == 8 and cell["duplicate_lines"] == 1 and cell["unfinished"] is False
    assert cell["metrics"]["judge_accuracy"]["mean"] == pytest.approx(_accuracy(lines))
    assert "1 duplicate" in _table(out)
    # export and report read the same store: one row per question
    r = runner.invoke(app, ["export", str(out), "--out", str(tmp_path / "x.csv")])
    assert r.exit_code == 0, r.output
    assert len((tmp_path / "x.csv").read_text().splitlines()) == 1 + 8
    _run(out)  # a rerun finalises the file: the copy is dropped
    assert res.read_text() == original


# ---- 5. failed questions --------------------------------------------------------------------------------


def test_failed_questions_are_shown_in_stats_and_the_report(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (res,) = Experiment(_cfg(out, judge_models=["scripted:st-flaky"]), questions=QUESTIONS).run()
    assert res.n_errors == 2
    # what `run` prints (its stats.json) states them as `stats` does
    assert (res.stats["failed"], res.stats["unstarted"], res.stats["unfinished"]) == (2, 0, True)
    c = _cell(_stats(out), "NaiveJudge/J_scripted-st-flaky")
    assert (c["n_questions"], c["failed"], c["unstarted"], c["unfinished"]) == (6, 2, 0, True)
    assert any("2 question(s) failed" in w for w in c["diagnostics"]["warnings"])
    assert "2 failed" in _table(out)
    r = runner.invoke(app, ["report", str(out)])
    assert r.exit_code == 0, r.output
    html = (out / "report.html").read_text()
    assert 'data-k="failed" data-v="2"' in html and 'data-k="unstarted" data-v="0"' in html


# ---- one torn-line policy everywhere ---------------------------------------------------------------------


def test_study_items_from_run_output_skip_a_torn_last_line_as_stats_does(tmp_path: Path) -> None:
    from seerbench.study import load_manifest
    from seerbench.study._items import load_items
    from tests.study.conftest import base_manifest

    out = tmp_path / "out"
    _run(out, protocols=["Consultancy"])
    cell = "Consultancy_t1/A_scripted-st-agent_J_scripted-st-judge"
    res = out / cell / "results.jsonl"
    m = load_manifest(base_manifest(items=[{"results": str(res)}], conditions=["transcript"]))
    before = [i.key for i in load_items(m, tmp_path)]
    assert len(before) == 16  # 8 questions, a transcript per answer case
    with open(res, "a") as f:
        f.write('{"question_id": "q9", "answ')  # what a crash mid-write leaves
    assert [i.key for i in load_items(m, tmp_path)] == before
    assert _cell(_stats(out), cell)["skipped_lines"] == 1
    lines = res.read_text().splitlines(keepends=True)
    res.write_text("".join([*lines[:8], lines[0]]))  # and a duplicate, as stats: counted once
    assert [i.key for i in load_items(m, tmp_path)] == before
    with open(res, "a") as f:
        f.write('{"question_id": "q9", "answ\n')  # a complete line of junk: refused, naming it
    with pytest.raises(DataError, match=r"results.jsonl:10: not JSON"):
        load_items(m, tmp_path)


# ---- 4. a rating and its samples ---------------------------------------------------------------------------


class _Kill(RuntimeError):
    """Stands for a kill: raised between two writes, and not caught as a failed sentence."""


def _rater(out: Path) -> RaterConfig:
    return RaterConfig.parse(
        {
            "model": "scripted:factcheck",
            "out": str(out),
            "samples": 2,
            "limit": 200,
            "concurrency": 8,
            "results_per_query": 3,
            "dataset": {"name": "factcheck", "entities": 120, "seed": 4},
        }
    )


@pytest.mark.slow
def test_rate_killed_between_a_rating_and_its_samples_resumes_to_200_of_200(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = tmp_path / "ref"
    assert len(asyncio.run(rate(_rater(ref))).ratings) == 200
    from seerbench.factcheck import _rater as rater_mod

    real = rater_mod.append_line
    writes = {"n": 0}

    def append(path: str | Path, line: str) -> None:
        if Path(path).name == "samples.jsonl":
            writes["n"] += 1
            if writes["n"] == 57:  # the 57th rating is on disk, its samples never will be
                raise _Kill
        real(path, line)

    out = tmp_path / "out"
    monkeypatch.setattr(rater_mod, "append_line", append)
    with pytest.raises(_Kill):
        asyncio.run(rate(_rater(out)))
    monkeypatch.setattr(rater_mod, "append_line", real)
    n_ratings = len((out / "ratings.jsonl").read_text().splitlines())
    assert n_ratings == len((out / "samples.jsonl").read_text().splitlines()) + 1  # really half written
    res = asyncio.run(rate(_rater(out)))
    assert len(res.ratings) == 200 and not res.failed
    for name in ("ratings.jsonl", "samples.jsonl"):
        assert (out / name).read_bytes() == (ref / name).read_bytes(), name


# ---- property: any kills and reruns end byte-identical ---------------------------------------------


def _tree(out: Path) -> dict[str, bytes]:
    """Every file of a run folder but the usage record (usage.json and its event log usage.jsonl
    count the calls and cache hits of each process) and the folder's lock file."""
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name not in ("usage.json", "usage.jsonl", ".seerbench.lock")
    }


def _xp(out: Path) -> Experiment:
    return Experiment(_cfg(out, protocols=["NaiveJudge", "Consultancy"], concurrency=2), questions=QUESTIONS)


_REFERENCE: dict[str, bytes] = {}
_BASE = Path(tempfile.mkdtemp(prefix="seerbench-store-"))  # one folder path: experiment.json records it


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kills=st.lists(st.tuples(st.integers(1, 40), st.sampled_from(["before", "torn", "after"])), max_size=3)
)
def test_any_kills_and_reruns_end_byte_identical(kills: list[tuple[int, str]], _isolated_cache: Path) -> None:
    out = _BASE / "out"
    shutil.rmtree(out, ignore_errors=True)
    if not _REFERENCE:  # the uninterrupted run
        _xp(out).run()
        _REFERENCE.update(_tree(out))
        shutil.rmtree(out)
    for at, how in kills:
        _run_killed(out, at, how)
    _xp(out).run()
    assert _tree(out) == _REFERENCE


def _run_killed(out: Path, at: int, how: str) -> None:
    """Run, raising _Kill at the ``at``-th write (a results line appended, or a file replaced):
    before it, after it, or (for an appended line) half way through it."""
    count = {"n": 0}
    real_append, real_atomic = store.Appender.write, store.atomic_write_bytes

    def tick() -> bool:
        count["n"] += 1
        return count["n"] == at

    def append(self: store.Appender, line: str) -> None:
        if tick():
            if how == "torn":
                assert self._fd is not None
                data = (line + "\n").encode()
                os.write(self._fd, data[: len(data) // 2])
            elif how == "after":
                real_append(self, line)
            raise _Kill
        real_append(self, line)

    def atomic(path: str | Path, data: Any) -> Path:
        if tick():
            if how != "before":
                real_atomic(path, data)
            raise _Kill
        return real_atomic(path, data)

    mp = pytest.MonkeyPatch()
    mp.setattr(store.Appender, "write", append)
    mp.setattr(store, "atomic_write_bytes", atomic)
    try:
        _xp(out).run()
    except _Kill:
        pass
    finally:
        mp.undo()
    assert not list(out.rglob(".*.tmp")) if out.exists() else True


def test_summarize_run_counts_match_the_table(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _run(out)
    c = _cell(summarize_run(out))
    assert {
        k: c[k] for k in ("failed", "unstarted", "skipped_lines", "foreign_lines", "duplicate_lines")
    } == {
        "failed": 0,
        "unstarted": 0,
        "skipped_lines": 0,
        "foreign_lines": 0,
        "duplicate_lines": 0,
    }
    assert c["unfinished"] is False


# -- a damaged line in the middle of a finished cell's results: its question is unreadable -------


def _damaged(tmp_path: Path) -> tuple[Path, Path]:
    from tests.test_export import make_run

    run = make_run(tmp_path / "run")
    res = run / "NaiveJudge" / "J_scripted-export-judge" / "results.jsonl"
    lines = res.read_text().splitlines(keepends=True)
    assert len(lines) == 5 and (run / "NaiveJudge" / "J_scripted-export-judge" / "stats.json").is_file()
    lines[2] = '{"garbage": 1}\n'  # line 3 of 5: the run finished, one line in the middle is damaged
    res.write_text("".join(lines))
    return run, res


def test_a_damaged_middle_line_is_an_unreadable_question_not_an_unfinished_cell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_cli_global import run_main

    run, res = _damaged(tmp_path)
    code, out, err = run_main(["stats", str(run), "--json"], capsys, monkeypatch)
    c = next(c for c in json.loads(out)["cells"] if c["cell"] == "NaiveJudge/J_scripted-export-judge")
    assert code == 0 and err == ""
    assert (c["n_questions"], c["skipped_lines"], c["unreadable"], c["unstarted"]) == (4, 1, 1, 0)
    assert (c["unfinished"], c["torn_last_line"], c["damaged_lines_at"]) == (False, False, [f"{res}:3"])
    assert not any(w.startswith("unfinished") for w in c["diagnostics"]["warnings"])
    assert c["diagnostics"]["warnings"][0].startswith(f"1 question(s) unreadable: {res}:3 (a damaged line")

    code, out, _ = run_main(["stats", str(run)], capsys, monkeypatch)
    out = " ".join(out.split())  # the notes as one line, however the console wrapped them
    assert code == 0
    assert (
        f"warning NaiveJudge/J_scripted-export-judge: 1 question(s) unreadable: {res}:3 (a damaged line, "
        "not a stopped run), so n leaves them out; run the config again to redo them (first delete a "
        "damaged line that still names its question)"
    ) in out
    assert "unfinished" not in out and "torn" not in out and "hold none of the run's" not in out


def test_a_torn_last_line_and_junk_beside_a_damaged_line_are_told_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_cli_global import run_main

    run, res = _damaged(tmp_path)
    with res.open("a") as f:
        f.write('{"question_id": "q9", "answ')  # what a crash mid-write leaves
    junk = run / "BlindTrust" / "J_trust" / "results.jsonl"
    with junk.open("a") as f:
        f.write("junk\n")  # a sixth line in a cell whose five questions all have theirs
    code, out, _ = run_main(["stats", str(run), "--json"], capsys, monkeypatch)
    assert json.loads(out)["skipped_lines"] == 3  # every unusable line is still counted
    code, out, _ = run_main(["stats", str(run)], capsys, monkeypatch)
    out = " ".join(out.split())
    assert code == 0 and f"1 question(s) unreadable: {res}:3 (" in out
    assert (
        "a torn last line (what a crash leaves) in NaiveJudge/J_scripted-export-judge was skipped; "
        "rerunning the config repairs it"
    ) in out
    assert (
        "1 unreadable results line(s) hold none of the run's missing questions (junk, or a line of "
        f"another layout) and were skipped. First: {junk}:6: not JSON"
    ) in out


def test_the_not_counted_column_counts_each_question_and_line_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cell's n and its "not counted" add up to its questions: a damaged middle line is its
    question (unreadable), a torn last line's question is unstarted (not also an unreadable
    line), and a junk line holding no question is an unreadable line."""
    from seerbench.cli._run import _left_out
    from tests.test_cli_global import run_main
    from tests.test_export import CONS

    run, _ = _damaged(tmp_path)  # NaiveJudge: line 3 of 5 damaged
    torn = run / CONS / "results.jsonl"
    torn.write_bytes(torn.read_bytes()[:-20])  # Consultancy: its last line cut off by a crash
    with (run / "BlindTrust" / "J_trust" / "results.jsonl").open("a") as f:
        f.write("junk\n")  # BlindTrust: a sixth line beside its five questions
    code, out, _ = run_main(["stats", str(run), "--json"], capsys, monkeypatch)
    assert code == 0
    cells = {c["cell"]: c for c in json.loads(out)["cells"]}
    said = {k: _left_out(c) for k, c in cells.items()}
    assert said["NaiveJudge/J_scripted-export-judge"] == "1 unreadable"
    assert said[CONS] == "1 unstarted"
    assert said["BlindTrust/J_trust"] == "1 unreadable line"
    for k in ("NaiveJudge/J_scripted-export-judge", CONS):
        assert cells[k]["n_questions"] + 1 == 5  # n and the one not counted: the five questions
