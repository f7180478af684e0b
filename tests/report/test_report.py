"""`seerbench report`: the numbers in the page are those of `seerbench stats --json` for the same
run, the calibration table is worked out by hand, run text stays text, several runs sit side by
side, a study database gets its own report, and user errors are one line with exit 2."""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from seerbench.report import script_json
from seerbench.runs import RunFolder, json_safe, read_results
from tests.test_cli_global import one_line_error, run_main

from ._html import read_report
from .conftest import XSS, quickstart_config

CONS = "Consultancy_t1/A_scripted-report-agent_J_scripted-report-judge"


def _stats(
    run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *extra: str
) -> dict[str, Any]:
    code, out, err = run_main(["stats", str(run), "--json", *extra], capsys, monkeypatch)
    assert code == 0, err
    return json.loads(out)


def _report(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, _out, err = run_main(["report", *args], capsys, monkeypatch)
    assert code == 0, err


def _same(shown: dict[str, Any], s: dict[str, Any] | None) -> None:
    s = s or {}
    for k in ("n", "mean", "ci_low", "ci_high"):
        assert shown[k] == s.get(k), (k, shown, s)


@pytest.fixture(scope="module")
def evidence_report(evidence_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("html") / "evidence.html"
    from seerbench.report import build_report

    build_report([evidence_run], out)
    return out


def test_numbers_equal_stats_json(
    evidence_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "r.html"
    _report([str(evidence_run), "--out", str(out)], capsys, monkeypatch)
    stats = _stats(evidence_run, capsys, monkeypatch, "--baseline", "NaiveJudge")
    cells = {s["cell"]: s for s in stats["cells"]}
    t = read_report(out)
    for key in ("asd", "judge_accuracy"):
        rows = t.tables[f"stats-{key}"]
        assert {a["data-cell"] for _, a, _ in rows} == set(cells)
        for _, a, shown in rows:
            m = cells[a["data-cell"]]["metrics"].get(key)
            _same(shown, None if m is None else m if key == "judge_accuracy" else m["log"])
    betas = t.tables["stats-betas"]
    assert len(betas) == 6 * sum(1 for s in cells.values() if (s["metrics"]["jse_b1"]["log"] or {}).get("n"))
    for _, a, shown in betas:
        _same(shown, cells[a["data-cell"]]["metrics"][a["data-metric"]]["log"])
    paired = t.tables["stats-paired"]
    assert len(paired) == 2 * len(stats["paired"]) > 0
    by_cell = {p["cell"]: p for p in stats["paired"]}
    for _, a, shown in paired:
        _same(shown, by_cell[a["data-cell"]][a["data-metric"]])
    for _, a, shown in t.tables["cells"]:
        s = cells[a["data-cell"]]
        assert (shown["n_questions"], shown["n_scored"], shown["parse_failures"], shown["n_excluded"]) == (
            s["n_questions"],
            s["n_scored"],
            s["parse_failures"],
            s["n_excluded"],
        )
    # the scripted judge fails on question e2: every cell with a judge model shows a parse failure
    assert all(
        shown["parse_failures"] >= 1 for _, a, shown in t.tables["cells"] if "J_trust" not in a["data-cell"]
    )
    # the page shows three decimals of the same numbers
    html = out.read_text()
    asd = cells[CONS]["metrics"]["asd"]["log"]
    assert f'data-v="{asd["mean"]!r}">{asd["mean"]:.3f}</td>' in html


def test_calibration_by_hand(evidence_run: Path, evidence_report: Path) -> None:
    """Consultancy: per question the judge holds 0.8 on A after A was argued and 0.7 on B after B
    (q = (0.3, 0.7)); e2 fails to parse. The 0.8 verdicts are right where A is true, the 0.7 ones
    where B is: buckets [0.7, 0.8) and [0.8, 0.9), ECE = (|fA - 0.8| + |(1 - fA) - 0.7|) / 2."""
    lines, _ = read_results(RunFolder(evidence_run).cell(CONS).results_path)
    scored = [ln for ln in lines if not ln["excluded"]]
    assert len(scored) == 4
    f_a = sum(1 for ln in scored if ln["question"]["answer_cases"][0]["value"] == 1.0) / len(scored)
    ece = (abs(f_a - 0.8) + abs((1 - f_a) - 0.7)) / 2
    right = [1.0 if ln["question"]["answer_cases"][0]["value"] == 1.0 else 0.0 for ln in scored]
    brier = sum((0.8 - y) ** 2 + (0.7 - (1 - y)) ** 2 for y in right) / (2 * len(right))
    rows = {a["data-cell"]: shown for _, a, shown in read_report(evidence_report).tables["stats-calibration"]}
    assert "BlindTrust/J_trust" not in rows  # no judge to calibrate
    assert rows[CONS]["n"] == 8
    assert rows[CONS]["ece"] == pytest.approx(ece) and rows[CONS]["brier"] == pytest.approx(brier)


def test_run_text_is_escaped_and_json_is_safe(evidence_report: Path) -> None:
    html = evidence_report.read_text()
    assert XSS not in html and "<img src=x" not in html and "<script>window" not in html
    assert html.count("</script>") == html.count("<script")  # no payload closes a script element
    t = read_report(evidence_report)
    data = json.loads(t.json["browser-data"])
    texts = [turn[2] for row in data["rows"] for case in row[7] for turn in case[6]]
    assert any(XSS in x for x in texts)  # the payload is there, as data
    tricky = {"a": "</script><!-- & -->", "b": "\u2028"}
    s = script_json(tricky)
    assert "</" not in s and "<!--" not in s and json.loads(s) == tricky
    assert json.loads(script_json({"x": [math.nan, math.inf, 1.5]})) == {
        "x": [None, None, 1.5]
    }  # JSON.parse reads no NaN


def test_script_json_is_json_dumps_made_safe() -> None:
    """script_json is json.dumps (no ASCII escapes, no spaces, no NaN) with <, > and & escaped."""
    values: list[Any] = [
        {"a": [1, -0.0, 1e-05, 1e16, 1.5e300, 2**70, 0.30000000000000004], "é\u2028": "\x00\x1f\x7f\ud7ff€"},
        [True, False, None, "", {}, [], {"1": {"2": [3, "x"]}}],
        "top-level <string> & text",
        0.1,
        7,
        None,
        {"nan": [math.nan], "deep": [{"inf": -math.inf}]},
    ]
    for v in values:
        want = json.dumps(json_safe(v), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        want = want.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        assert script_json(v) == want


def test_figures_present_and_browser_rows_complete(evidence_run: Path, evidence_report: Path) -> None:
    t = read_report(evidence_report)
    assert {"asd", "judge_accuracy", "betas", "calibration", "paired-asd", "paired-accuracy"} <= set(
        t.figures
    )
    data = json.loads(t.json["browser-data"])
    n_lines = sum(len(read_results(c.results_path)[0]) for c in RunFolder(evidence_run).cells())
    assert len(data["rows"]) == n_lines == 8 * 5
    assert len(data["questions"]) == 5 and not data["multi"]


def test_several_runs_side_by_side(
    quickstart_run: Path,
    evidence_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "both.html"
    _report([str(quickstart_run), str(evidence_run), "--out", str(out)], capsys, monkeypatch)
    t = read_report(out)
    asd_rows = t.tables["stats-asd"]
    for run in (quickstart_run, evidence_run):
        cells = {s["cell"]: s for s in _stats(run, capsys, monkeypatch)["cells"]}
        mine = [(a, shown) for r, a, shown in asd_rows if r == run.name]
        assert {a["data-cell"] for a, _ in mine} == set(cells)
        for a, shown in mine:
            _same(
                shown, cells[a["data-cell"]]["metrics"].get("asd", {}).get("log")
            )  # OpenConsultancy: no ASD
    data = json.loads(t.json["browser-data"])
    assert data["multi"] and {c["run"] for c in data["cells"]} == {"quickstart", "evidence"}
    assert len(data["questions"]) == 4 + 5  # arithmetic and hand-written questions, once each


def test_default_out_is_in_the_run_folder(
    quickstart_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "qs"
    shutil.copytree(quickstart_run, run)
    _report([str(run)], capsys, monkeypatch)
    assert (run / "report.html").stat().st_size > 0
    assert (
        _stats(run, capsys, monkeypatch)["cells"] == _stats(quickstart_run, capsys, monkeypatch)["cells"]
    )  # still a run


def test_what_the_report_and_stats_import(quickstart_run: Path, tmp_path: Path) -> None:
    """Start-up: `report --help` imports no scientific library and no model, `stats` no
    matplotlib, and neither report nor stats scipy.stats (its quantiles come from scipy.special:
    0.7 s less to import)."""
    from seerbench._forked import can_fork
    from seerbench.config import available_cpus
    from tests.test_cli_startup import _imported_after

    text, mods = _imported_after(["report", "--help"])
    assert "Usage: seerbench report" in text and not mods & {
        "numpy",
        "scipy",
        "matplotlib",
        "seerbench.models",
    }
    _, mods = _imported_after(["stats", str(quickstart_run), "--json", "--anytime"])
    assert "numpy" in mods and not mods & {"matplotlib", "scipy.stats"}
    _, mods = _imported_after(["report", str(quickstart_run), "--out", str(tmp_path / "r.html")])
    assert "scipy.stats" not in mods and (tmp_path / "r.html").is_file()
    # the figures are drawn in worker processes where there is more than one core: only they import
    # matplotlib; with one core, the report's own process draws them
    assert ("matplotlib" in mods) == (available_cpus() == 1 or not can_fork())


def test_pressure_section_when_stats_have_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from seerbench.experiment import Experiment, ExperimentConfig

    cfg = ExperimentConfig.from_yaml(Path(__file__).resolve().parents[2] / "examples" / "best_of_n.yaml")
    run = tmp_path / "bon"
    Experiment(cfg.with_updates(limit=6, n_boot=200), out=run).run()
    out = tmp_path / "bon.html"
    _report([str(run), "--out", str(out)], capsys, monkeypatch)
    stats = _stats(run, capsys, monkeypatch)
    t = read_report(out)
    groups = stats["pressure"]["groups"]
    assert t.figures.count("pressure") == len(groups) == 2
    rows = t.tables["stats-pressure"]
    for shown_rows, g in zip([rows[i * 13 : (i + 1) * 13] for i in range(len(groups))], groups, strict=True):
        for _, a, shown in shown_rows[:-1]:
            p = next(p for p in g["points"] if str(p["best_of_n"]) == a["data-n"])
            _same(shown, p[a["data-metric"]])
        slope = shown_rows[-1][2]
        assert (slope["mean"], slope["ci_low"], slope["ci_high"]) == (
            g["slope"]["estimate"],
            g["slope"]["ci_low"],
            g["slope"]["ci_high"],
        )


def test_no_pressure_section_without_best_of_n(evidence_report: Path) -> None:
    html = evidence_report.read_text()
    assert 'id="pressure"' not in html and "stats-pressure" not in html


# ---- the study report ---------------------------------------------------------------------------


def test_study_report_equals_study_stats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from seerbench.study import create_study, load_manifest
    from tests.study.conftest import FakeClock, base_manifest, question

    qs = [question(f"q{i}", "AB"[i % 2]) for i in range(6)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    db = tmp_path / "study.sqlite"
    store = create_study(
        load_manifest(base_manifest(catch_rate=0.3, catch_min=1, tasks_per_rater=3)), db, base_dir=tmp_path
    )
    clock = FakeClock()
    store.clock = clock
    for n in range(12):  # raters answer A with 70% until the plan is done (about half right)
        rid = str(store.rater_for(f"prolific:r{n}", "prolific")["id"])
        task, _ = store.next_assignment(rid)
        while task is not None:
            store.start_timer(task.id, rid)
            clock.advance(10 + n)
            store.submit(task.id, rid, {"answer": "A", "probability": 0.7})
            task, _ = store.next_assignment(rid)
    store.close()
    out = tmp_path / "study.html"
    _report(["--study", str(db), "--out", str(out)], capsys, monkeypatch)
    code, sout, err = run_main(["study", "stats", "--db", str(db), "--json"], capsys, monkeypatch)
    assert code == 0, err
    stats = json.loads(sout)
    t = read_report(out)
    acc = t.tables["stats-study-accuracy"]
    assert {a["data-condition"] for _, a, _ in acc} == set(stats["conditions"]) == {"P", "PSA"}
    for _, a, shown in acc:
        _same(shown, stats["conditions"][a["data-condition"]]["accuracy"])
    for _, a, shown in t.tables["stats-study-time"]:
        c = stats["conditions"][a["data-condition"]]
        assert (shown["judgments"], shown["median_seconds"], shown["timed_out"]) == (
            c["judgments"],
            c["median_seconds"],
            c["timed_out"],
        )
    assert {"study-accuracy", "study-time"} <= set(t.figures)
    assert stats["catch"]["judgments"] > 0
    [(_, _, shown)] = t.tables["stats-study-catch"]
    _same(shown, stats["catch"]["accuracy"])
    assert "study-catch" in t.figures
    # the manifest is shown without the completion code (the report may be shared)
    html = out.read_text()
    assert 'id="study-manifest"' in html and "DONE123" not in html and "(hidden)" in html
    # default output: beside the database
    _report(["--study", str(db)], capsys, monkeypatch)
    assert (tmp_path / "study.report.html").is_file()
    # a database URL has no folder to write beside
    assert "give the file to write with --out" in _error(
        ["--study", "postgresql://u@h/db"], capsys, monkeypatch
    )


def test_out_may_name_a_folder(
    tmp_path: Path, quickstart_run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--out naming a folder that exists, or any path written with a trailing slash, writes
    report.html inside it (it wrote a file named like the folder, or failed on a temporary
    file's name); a slash-ended path under a missing folder is the usual one-line error."""
    existing = tmp_path / "reports"
    existing.mkdir()
    _report([str(quickstart_run), "--out", str(existing)], capsys, monkeypatch)
    assert (existing / "report.html").is_file()
    _report([str(quickstart_run), "--out", str(tmp_path / "new") + "/"], capsys, monkeypatch)
    assert (tmp_path / "new" / "report.html").is_file()
    assert "does not exist" in _error(
        [str(quickstart_run), "--out", str(tmp_path / "no" / "such") + "/"], capsys, monkeypatch
    )


# ---- user errors ----------------------------------------------------------------------------------


def _error(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    code, _out, err = run_main(["report", *args], capsys, monkeypatch)
    assert code == 2, err
    return one_line_error(err)


def test_user_errors(
    tmp_path: Path, quickstart_run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "is not a folder" in _error([str(tmp_path / "nope")], capsys, monkeypatch)
    assert "no experiment.json" in _error([str(tmp_path)], capsys, monkeypatch)
    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(quickstart_run / "experiment.json", empty / "experiment.json")
    assert "no results.jsonl" in _error([str(empty)], capsys, monkeypatch)
    assert "not both" in _error([str(quickstart_run), "--study", "x.sqlite"], capsys, monkeypatch)
    assert "give one or more run folders" in _error([], capsys, monkeypatch)
    assert "no such study database" in _error(["--study", str(tmp_path / "none.sqlite")], capsys, monkeypatch)
    assert _error(
        [str(quickstart_run), "--baseline", "Nope", "--out", str(tmp_path / "x.html")], capsys, monkeypatch
    ).startswith(
        f"error: {quickstart_run}: no protocol folder 'Nope'"
    )  # names the run (several may be given)
    assert "is a file, not a folder" in _error(
        [str(quickstart_run), "--out", str(quickstart_run / "experiment.json" / "r.html")],
        capsys,
        monkeypatch,
    )


def test_missing_matplotlib_is_one_line(
    quickstart_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    line = _error([str(quickstart_run), "--out", str(tmp_path / "r.html")], capsys, monkeypatch)
    assert "pip install matplotlib" in line
    assert not (tmp_path / "r.html").exists()
    assert "pip install matplotlib" in _error(
        ["--study", str(tmp_path / "s.sqlite")], capsys, monkeypatch
    )  # before the db


def test_quickstart_config_is_the_example() -> None:
    cfg = quickstart_config()
    assert cfg.name == "quickstart" and math.isfinite(cfg.eps)


def test_one_id_two_questions_side_by_side(tmp_path: Path) -> None:
    """Two runs whose question 'x' differs: each run's rows show its own question."""
    from seerbench.experiment import Experiment
    from seerbench.report import build_report
    from seerbench.types import AnswerCase, Question

    runs = []
    for name in ("first", "second"):
        q = Question(
            id="x",
            text=f"The {name} question?",
            answer_cases=[
                AnswerCase(short="A", long="yes", value=1.0),
                AnswerCase(short="B", long="no", value=0.0),
            ],
        )
        cfg = quickstart_config(
            protocols=["NaiveJudge"], both_orders=False, elicitation={"order": ["vote"], "vote_samples": 3}
        )
        Experiment(cfg, questions=[q], out=tmp_path / name).run()
        runs.append(tmp_path / name)
    data = json.loads(read_report(build_report(runs, tmp_path / "r.html")).json["browser-data"])
    shown = {data["cells"][row[0]]["run"]: data["questions"][row[1]][1] for row in data["rows"]}
    assert shown == {"first": "The first question?", "second": "The second question?"}


def test_judge_by_agent_heat_map(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two agent models: one heat map per protocol, each square annotated with stats' mean and CI."""
    from seerbench.experiment import Experiment

    cfg = quickstart_config(
        agent_models=["scripted:coin", "scripted:echo"], protocols=["NaiveJudge", "Consultancy"], limit=4
    )
    run = tmp_path / "agents"
    Experiment(cfg, out=run).run()
    out = tmp_path / "r.html"
    _report([str(run), "--out", str(out)], capsys, monkeypatch)
    assert read_report(out).figures.count("asd-judge-agent") == 1  # NaiveJudge has no agent
    html = out.read_text()
    svg = html[html.index('data-figure="asd-judge-agent"') :]
    svg = svg[: svg.index("</svg>")]
    for s in _stats(run, capsys, monkeypatch)["cells"]:
        if s["agent"]:
            asd = s["metrics"]["asd"]["log"]
            assert f"{asd['mean']:.2f}" in svg and f"[{asd['ci_low']:.2f}, {asd['ci_high']:.2f}]" in svg


def test_study_report_reliance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A factuality study whose items record whether the AI was right: the reliance figure and
    table show study stats' split."""
    from seerbench.study import create_study, load_manifest
    from tests.study.conftest import FakeClock, base_manifest

    def fq(i: int) -> dict[str, Any]:
        true = "accurate" if i % 2 else "inaccurate"
        return {
            "id": f"f{i}",
            "text": f"Claim {i}.",
            "metadata": {"ai_correct": i % 3 != 0},
            "answer_cases": [
                {"short": "accurate", "long": "Accurate", "value": float(true == "accurate")},
                {"short": "inaccurate", "long": "Not accurate", "value": float(true == "inaccurate")},
            ],
        }

    (tmp_path / "items.jsonl").write_text("".join(json.dumps(fq(i)) + "\n" for i in range(8)))
    db = tmp_path / "f.sqlite"
    store = create_study(
        load_manifest(
            base_manifest(
                task="factuality",
                time_limit_s=None,
                conditions=["none"],
                ratings_per_item=1,
                tasks_per_rater=4,
            )
        ),
        db,
        base_dir=tmp_path,
    )
    store.clock = FakeClock()
    for n in range(2):
        rid = str(store.rater_for(f"prolific:r{n}", "prolific")["id"])
        task, _ = store.next_assignment(rid)
        while task is not None:
            store.start_timer(task.id, rid)
            store.submit(task.id, rid, {"answer": "accurate"})
            task, _ = store.next_assignment(rid)
    store.close()
    out = tmp_path / "f.html"
    _report(["--study", str(db), "--out", str(out)], capsys, monkeypatch)
    code, sout, err = run_main(["study", "stats", "--db", str(db), "--json"], capsys, monkeypatch)
    assert code == 0, err
    rel = json.loads(sout)["conditions"]["none"]["reliance"]
    t = read_report(out)
    assert "study-reliance" in t.figures
    shown = {a["data-metric"]: v for _, a, v in t.tables["stats-study-reliance"]}
    for k in ("ai_right", "ai_wrong"):
        _same(shown[k], rel[k])
    assert rel["ai_right"]["n"] + rel["ai_wrong"]["n"] == 8


def test_usage_and_cost_come_from_the_run_folder(evidence_run: Path, evidence_report: Path) -> None:
    rec = json.loads((evidence_run / "usage.json").read_text())  # what the runs into the folder recorded
    rows = {a["data-usage"]: shown for _, a, shown in read_report(evidence_report).tables["usage"]}
    assert set(rows) == {*rec["models"], "total"}
    for key, m in [*rec["models"].items(), ("total", rec["total"])]:
        for k in ("calls", "cache_hits", "retries", "errors", "prompt_tokens", "completion_tokens"):
            assert rows[key][k] == m[k], (key, k)
    assert rec["total"]["calls"] + rec["total"]["cache_hits"] > 0


def _chunks(folder: Path) -> dict[str, Any]:
    """The transcript files of a report folder: name -> the JSON list each hands to the page."""
    out = {}
    for f in (folder / "transcripts").glob("*.js"):
        text = f.read_text(encoding="utf-8")
        head = f'seerbenchChunk("{f.stem}",'
        assert text.startswith(head) and text.endswith(");\n"), f
        out[f.stem] = json.loads(text[len(head) : -3])
    return out


def test_folder_layout_has_the_same_numbers_and_rows(
    evidence_run: Path,
    evidence_report: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the one-file limit the report is a folder: index.html shows stats' numbers, and its
    index rows with the transcript files hold exactly the one-file page's rows and questions."""
    from seerbench.report import build_report

    monkeypatch.setattr("seerbench.report._browser.CHUNK_ROWS", 2)
    monkeypatch.setattr("seerbench.report._browser.CHUNK_QUESTIONS", 3)
    index = build_report([evidence_run], tmp_path / "big.html", one_file_limit=0)
    assert index == tmp_path / "big" / "index.html" and not (tmp_path / "big.html").exists()
    split, one = read_report(index), read_report(evidence_report)
    cells = {s["cell"]: s for s in _stats(evidence_run, capsys, monkeypatch)["cells"]}
    for key in ("asd", "judge_accuracy"):
        for _, a, shown in split.tables[f"stats-{key}"]:
            m = cells[a["data-cell"]]["metrics"][key]
            _same(shown, m if key == "judge_accuracy" else m["log"])
    assert split.tables == one.tables and split.figures == one.figures
    data, idx = json.loads(one.json["browser-data"]), json.loads(split.json["browser-data"])
    chunks = _chunks(index.parent)
    assert len(chunks) == 8 * 3 + 2  # 8 cells of 5 rows in files of 2; 5 questions in files of 3
    seen: dict[int, int] = {}
    rows = []
    for k in range(0, len(idx["rows"]), 3):
        c, q, flags = idx["rows"][k : k + 3]
        r = seen[c] = seen.get(c, -1) + 1
        row = chunks[f"c{c}-{r // 2}"][r % 2]
        assert (row[0], row[1]) == (c, q)
        wrong = any(case[5] in ("w", "t") for case in row[7])
        failed = row[3] > 0 or any(case[3] != "ok" for case in row[7])
        assert flags == (1 if wrong else 0) + (2 if failed else 0)
        rows.append(row)
    assert rows == data["rows"] and idx["cells"] == data["cells"]
    assert [chunks[f"q{i // 3}"][i % 3] for i in range(idx["n_questions"])] == data["questions"]
    # the scripted judge fails to parse on question e2 in each of the 7 cells with a model judge
    flagged = {idx["rows"][k] for k in range(0, len(idx["rows"]), 3) if idx["rows"][k + 2] & 2}
    assert flagged == {i for i, c in enumerate(idx["cells"]) if c["judge"] != "trust"}


def test_a_report_that_changes_layout_leaves_no_stale_copy(evidence_run: Path, tmp_path: Path) -> None:
    """A run that grows past the one-file limit: the old one-file report's path now sends the
    reader to the folder (it no longer shows old numbers); back under the limit, the folder's
    report files go and anything else a user put in the folder stays."""
    from seerbench.report import build_report

    path = tmp_path / "r.html"
    assert build_report([evidence_run], path) == path
    index = build_report([evidence_run], path, one_file_limit=0)
    assert index == tmp_path / "r" / "index.html" and index.is_file()
    moved = path.read_text()
    assert 'url=r/index.html"' in moved and 'href="r/index.html"' in moved
    assert "browser-data" not in moved  # none of the old report's rows
    (tmp_path / "r" / "notes.txt").write_text("mine")
    assert build_report([evidence_run], path) == path
    assert "browser-data" in path.read_text()
    assert not index.exists() and not (tmp_path / "r" / "transcripts").exists()
    assert (tmp_path / "r" / "notes.txt").read_text() == "mine"
    (tmp_path / "r" / "notes.txt").unlink()
    build_report([evidence_run], path, one_file_limit=0)
    build_report([evidence_run], path)
    assert not (tmp_path / "r").exists()  # only the report's own files were there: all gone


@pytest.mark.parametrize("limit", [10**9, 0])
def test_line_separators_in_run_text_stay_in_their_row(tmp_path: Path, limit: int) -> None:
    """Run text with U+2028, U+2029, U+0085 and a form feed (characters some readers split lines
    at) comes back whole, in its own row, in both layouts."""
    from seerbench.report._browser import Browser

    odd = "a\u2028b\u2029c\x85d\x0ce\r\nf"
    ln: dict[str, Any] = {
        "question_id": "q1",
        "question": {"id": "q1", "text": odd, "answer_cases": [{"short": "A", "long": odd, "value": 1.0}]},
        "answer_cases": [
            {
                "short": "A",
                "case_probs": {
                    "probabilities": {"A": 1.0},
                    "parse_status": "ok",
                    "transcript": [{"speaker": "agent", "content": odd}],
                },
            }
        ],
    }
    with Browser() as b:
        reader = b.rows()
        reader.add(ln)
        reader.add({**ln, "question_id": "q2", "question": {**ln["question"], "id": "q2"}})
        b.add_cell({"run": "r", "cell": "c"}, reader.result())
        if limit:
            data = json.loads(b.inline_json(False))
            rows, questions = data["rows"], data["questions"]
        else:
            b.write_chunks(tmp_path, False)
            chunks = _chunks(tmp_path)
            rows, questions = chunks["c0-0"], chunks["q0"]
    assert [r[1] for r in rows] == [0, 1] and all(r[7][0][6][0][2] == odd for r in rows)
    assert [q[1] for q in questions] == [odd, odd] and questions[0][2] == [["A", odd, True]]
