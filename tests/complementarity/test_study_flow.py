"""From a real study to the complementarity figures: a factuality study is created with the study
API, raters submit through the app's HTTP interface, the study is exported with the study's own
writer, and the analysis reads the database and the export. Every expected value below is worked
out by hand from the plan of ratings.

Items (truth; AI rating, confidence -> AI right?):
  f0 accurate;   accurate 0.90     -> right
  f1 inaccurate; accurate 0.55     -> wrong
  f2 inaccurate; unsupported 0.70  -> right (binarised: inaccurate)
  f3 accurate;   no verified sample -> wrong, confidence taken as 0
Ratings per (item, condition), the first and second submission:
  baseline: f0 accurate/inaccurate, f1 unsupported/disputed, f2 no_claim/cant_assess, f3 accurate/accurate
  trace:    f0 accurate/accurate,   f1 accurate/accurate,   f2 inaccurate/skip,     f3 inaccurate/accurate
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from seerbench.cli._common import NORMAL, configure_logging
from seerbench.complementarity import (
    analyze,
    gpboost_available,
    read_ai_ratings,
    simulate_ai_ratings,
    simulate_judgments,
    write_ai_ratings,
)
from seerbench.study import (
    EXPORT_FIELDS,
    create_app,
    create_study,
    export_rows,
    load_human_rows,
    read_export,
    write_export,
)
from tests.test_cli_global import run_main

AI_LINES: list[dict[str, Any]] = [
    {
        "item_id": "f0",
        "sentence": "Sentence f0.",
        "label": "accurate",
        "rating": "accurate",
        "confidence": 0.9,
        "n_samples": 10,
        "n_verified": 10,
        "votes": {"accurate": 9, "inaccurate": 1},
        "trace": {},
    },
    {
        "item_id": "f1",
        "sentence": "Sentence f1.",
        "label": "inaccurate",
        "rating": "accurate",
        "confidence": 0.55,
        "n_samples": 20,
        "n_verified": 20,
        "votes": {"accurate": 11, "inaccurate": 9},
        "trace": {},
    },
    {
        "item_id": "f2",
        "sentence": "Sentence f2.",
        "label": "inaccurate",
        "rating": "unsupported",
        "confidence": 0.7,
        "n_samples": 10,
        "n_verified": 10,
        "votes": {"unsupported": 7, "accurate": 3},
        "trace": {},
    },
    {
        "item_id": "f3",
        "sentence": "Sentence f3.",
        "label": "accurate",
        "rating": None,
        "confidence": None,
        "n_samples": 10,
        "n_verified": 0,
        "votes": {},
        "trace": {},
    },
]
PLAN = {
    ("baseline", "f0"): ["accurate", "inaccurate"],
    ("baseline", "f1"): ["unsupported", "disputed"],
    ("baseline", "f2"): ["no_claim", "cant_assess"],
    ("baseline", "f3"): ["accurate", "accurate"],
    ("trace", "f0"): ["accurate", "accurate"],
    ("trace", "f1"): ["accurate", "accurate"],
    ("trace", "f2"): ["inaccurate", "skip"],
    ("trace", "f3"): ["inaccurate", "accurate"],
}


def _write_ratings(path: Path) -> None:
    # the AI rater's output, as its writer lays it out (one JSON object per line)
    path.write_text("".join(json.dumps(x) + "\n" for x in AI_LINES))


def _items(path: Path) -> None:
    qs = []
    for x in AI_LINES:
        truth = x["label"]
        right = x["rating"] is not None and (x["rating"] == "accurate") == (truth == "accurate")
        qs.append(
            {
                "id": x["item_id"],
                "text": f"{x['sentence']} ({x['item_id']})",
                "answer_cases": [
                    {"short": "accurate", "long": "Accurate", "value": 1.0 if truth == "accurate" else 0.0},
                    {
                        "short": "inaccurate",
                        "long": "Not accurate",
                        "value": 0.0 if truth == "accurate" else 1.0,
                    },
                ],
                "metadata": {
                    "ai_correct": right,
                    "assistance": {"judgments": str(x["rating"]), "confidence": str(x["confidence"])},
                },
            }
        )
    path.write_text("".join(json.dumps(q) + "\n" for q in qs))


@pytest.fixture
def study(tmp_path: Path) -> tuple[Path, Path, Path]:
    run = tmp_path / "runs" / "fc"
    run.mkdir(parents=True)
    _write_ratings(run / "ratings.jsonl")
    _items(tmp_path / "items.jsonl")
    manifest = {
        "name": "fc-test",
        "task": "factuality",
        "items": [{"questions": "items.jsonl"}],
        "conditions": ["baseline", {"name": "trace", "assistance": ["judgments", "confidence"]}],
        "ratings_per_item": 2,
        "tasks_per_rater": 4,
        "time_limit_s": None,
        "catch_rate": 0.0,
        "completion_code": "DONE",
        "allow_anonymous": False,
        "tutorial": {
            "text": "Rate the sentence.",
            "quiz": [{"question": "Ready?", "options": ["yes", "no"], "answer": 0}],
        },
        "seed": 1,
    }
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(manifest))
    db = tmp_path / "fc.sqlite"
    store = create_study(tmp_path / "study.yaml", db)
    client = TestClient(create_app(store))
    given: dict[tuple[str, str], int] = {}
    for p in range(12):
        client.cookies.clear()
        r = client.get(f"/start?PROLIFIC_PID=p{p}")
        m = re.search(r'name="csrf" value="([^"]+)"', r.text)
        if m is None:
            continue
        csrf = m.group(1)
        r = client.post("/tutorial", data={"csrf": csrf, "q0": "0"})
        while "/task/" in str(r.url) and r.status_code == 200:
            aid = str(r.url).rsplit("/", 1)[-1]
            a = next(x for x, _ in store.assignments(submitted_only=False) if x.id == aid)
            qid = store.item(a.item_id).question.id
            k = given.get((a.condition, qid), 0)
            given[(a.condition, qid)] = k + 1
            rating = PLAN[(a.condition, qid)][k]
            data = (
                {"csrf": csrf, "action": "skip"}
                if rating == "skip"
                else {"csrf": csrf, "rating": rating, "confidence": str(1 + k * 3)}
            )
            assert client.post(f"/task/{aid}/submit", data=data).status_code == 200
            r = client.get("/next")
    assert sum(given.values()) == 16, given  # every slot was judged
    write_export(export_rows(store), tmp_path / "judgments.csv")
    store.close()
    return run, db, tmp_path / "judgments.csv"


def _check(report: Any) -> None:
    sw = {(s.condition, s.aggregate): s for s in report.hybrid}
    base_m = sw[("baseline", "majority")]
    assert base_m.ai_alone.estimate == pytest.approx(0.5)
    rows = {r.threshold: r for r in base_m.rows}
    assert rows[0.5].hybrid.estimate == pytest.approx(0.75)  # f3 to humans (majority right)
    assert rows[0.6].hybrid.estimate == pytest.approx(1.0)  # + f1 (majority unsupported/disputed: right)
    assert rows[0.8].hybrid.estimate == pytest.approx(
        1.0
    )  # + f2 (no_claim vs can't assess: tie -> inaccurate, right)
    assert rows[1.0].hybrid.estimate == pytest.approx(
        0.75
    )  # + f0 (accurate vs inaccurate: tie -> inaccurate, wrong)
    assert rows[0.6].routed_to_humans == pytest.approx(0.5) and rows[
        0.6
    ].human_ratings_per_item == pytest.approx(1.0)
    assert rows[0.6].human_cost_per_item == pytest.approx(0.25)  # 4 ratings over 4 items at 0.25
    assert base_m.best_threshold == 0.6 and base_m.humans_alone.estimate == pytest.approx(0.75)
    base_i = {r.threshold: r.hybrid.estimate for r in sw[("baseline", "individual")].rows}
    assert base_i == pytest.approx({0.5: 0.75, 0.6: 1.0, 0.8: 0.875, 1.0: 0.75})
    trace_m = {r.threshold: r.hybrid.estimate for r in sw[("trace", "majority")].rows}
    # trace majority: f0 right, f1 wrong, f2 right (one judgment, the skip is not counted), f3 tie -> wrong
    assert trace_m == pytest.approx({0.5: 0.5, 0.6: 0.5, 0.8: 0.5, 1.0: 0.5})
    rel = report.reliance
    assert rel is not None and rel.unassisted == "baseline"
    by = {c.condition: c for c in rel.conditions}
    assert by["baseline"].ai_wrong.accuracy.estimate == pytest.approx(1.0)
    assert by["baseline"].ai_right.accuracy.estimate == pytest.approx(0.5)
    assert by["trace"].ai_wrong.accuracy.estimate == pytest.approx(0.25)
    assert (
        by["trace"].ai_right.accuracy.estimate == pytest.approx(1.0) and by["trace"].ai_right.judgments == 3
    )
    # the seed's rates: the assisted error rate where the AI is wrong (1 - 0.25) and right (1 - 1)
    assert by["trace"].over_reliance.estimate == pytest.approx(0.75)
    assert by["trace"].under_reliance.estimate == pytest.approx(0.0)
    assert by["trace"].under_reliance.ci_low == 0.0 < by["trace"].under_reliance.ci_high
    assert by["baseline"].over_reliance is None
    # and the accuracy changes against unassisted
    assert by["trace"].accuracy_change_ai_wrong.estimate == pytest.approx(0.25 - 1.0)
    assert by["trace"].accuracy_change_ai_right.estimate == pytest.approx(1.0 - 0.5)
    cal = {c.source: c for c in report.calibration}
    # AI rater, items with a rating: f0 (0.9, right), f1 (0.55, wrong), f2 (0.7, right)
    assert cal["AI rater"].n == 3
    assert cal["AI rater"].brier == pytest.approx((0.1**2 + 0.55**2 + 0.3**2) / 3)
    assert cal["AI rater"].ece == pytest.approx((abs(1 - 0.9) + abs(0 - 0.55) + abs(1 - 0.7)) / 3)


def test_analysis_of_a_real_study_database_and_its_export(study: tuple[Path, Path, Path]) -> None:
    run, db, csv_path = study
    ai = read_ai_ratings(run)
    rows_db, bare = load_human_rows(db)
    assert bare == "baseline"
    kw: dict[str, Any] = {
        "thresholds": [0.5, 0.6, 0.8, 1.0],
        "cost_per_rating": 0.25,
        "n_boot": 50,
        "mixed": False,
    }
    rep = analyze(ai, rows_db, unassisted=bare, **kw)
    _check(rep)
    # the export read back gives the same report
    rows_csv, bare_csv = load_human_rows(csv_path)
    assert bare_csv is None  # an export does not say which condition is bare; the name does
    rep2 = analyze(ai, rows_csv, **kw)
    assert rep2.model_dump() == rep.model_dump()
    # one definition (issue 28.3): the export's `correct` is seed 000's score, which binarises
    # "doesn't require assessment" to inaccurate and counts "can't confidently assess" wrong
    exported = read_export(csv_path)
    row = next(r for r in exported if r["rating"] == "no_claim")
    assert row["correct"] == (1.0 if row["true_answer"] == "inaccurate" else 0.0)
    assert [r["correct"] for r in exported if r["rating"] == "cant_assess"] == [0.0]
    assert all(r["correct"] is None for r in exported if r["rating"] in (None, "", "skip"))


def _run(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    code, out, err = run_main(argv, capsys, monkeypatch)
    configure_logging(NORMAL)
    return code, out, err


def test_cli_json_table_and_errors(
    study: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run, db, csv_path = study
    base = [
        "complementarity",
        "--ai",
        str(run),
        "--thresholds",
        "0.5,0.6,0.8,1.0",
        "--cost-per-rating",
        "0.25",
        "--n-boot",
        "50",
        "--no-mixed",
    ]
    code, out, _ = _run([*base, "--humans", str(db), "--json"], capsys, monkeypatch)
    assert code == 0
    data = json.loads(out)
    from seerbench.complementarity import ComplementarityReport

    _check(ComplementarityReport.model_validate(data))
    code, out, _ = _run([*base, "--humans", str(csv_path)], capsys, monkeypatch)
    assert code == 0
    assert "over-reliance" in out and "-0.750" in out and "calibration" in out and "cross-validated" in out
    for argv, needle in (
        ([*base, "--humans", str(csv_path), "--thresholds", "0.5,x"], "--thresholds"),
        ([*base, "--humans", str(csv_path), "--thresholds", "1.5"], "thresholds must lie in [0, 1]"),
        ([*base, "--humans", str(csv_path), "--unassisted", "nope"], "unassisted condition 'nope'"),
        ([*base, "--humans", str(csv_path.parent / "missing.sqlite")], "does not exist"),
        ([*base, "--humans", str(csv_path.parent / "missing.csv")], "does not exist"),
        (
            ["complementarity", "--ai", str(csv_path.parent / "nowhere"), "--humans", str(db), "--no-mixed"],
            "does not exist",
        ),
        ([*base, "--humans", str(db), "--condition", "nope"], "--condition 'nope'"),
    ):
        code, _, err = _run(argv, capsys, monkeypatch)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], (
            argv,
            err,
        )


def test_cli_names_the_extra_when_gpboost_is_missing(
    study: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run, db, _ = study
    # the command asks the package's public name; the analysis its own module's
    monkeypatch.setattr("seerbench.complementarity.gpboost_available", lambda: False)
    monkeypatch.setattr("seerbench.complementarity._mixed.gpboost_available", lambda: False)
    code, _, err = _run(["complementarity", "--ai", str(run), "--humans", str(db)], capsys, monkeypatch)
    assert code == 2 and "seerbench[mixed]" in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(not gpboost_available(), reason="needs the 'mixed' extra (gpboost)")
def test_cli_with_mixed_effects_keeps_stdout_json(tmp_path: Path) -> None:
    import subprocess
    import sys

    ai = simulate_ai_ratings(80, seed=1)
    rows = simulate_judgments(ai, {"none": 0.0, "trace": 0.5}, n_raters=12, ratings_per_item=2, seed=2)
    write_ai_ratings(ai, tmp_path / "sim")
    write_export(rows, tmp_path / "sim.jsonl")
    out = subprocess.run(
        [
            str(Path(sys.executable).parent / "seerbench"),
            "complementarity",
            "--ai",
            str(tmp_path / "sim"),
            "--humans",
            str(tmp_path / "sim.jsonl"),
            "--json",
            "--n-boot",
            "50",
            "--repeats",
            "2",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    me = json.loads(out)["mixed_effects"]
    assert [c["term"] for c in me["coefficients"]] == [
        "(Intercept)",
        "condition[trace]",
        "ai_correct",
        "condition[trace]:ai_correct",
    ]


def test_simulated_rows_have_the_exports_columns_and_types(
    study: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _, _db, csv_path = study
    real = read_export(csv_path)
    ai = simulate_ai_ratings(5, seed=0)
    sim = simulate_judgments(ai, {"baseline": 0.0, "trace": 0.3}, n_raters=6, ratings_per_item=1, seed=0)
    assert all(list(r) == list(EXPORT_FIELDS) for r in sim)
    # written and read back by the study's own CSV code, the simulated rows type like real ones
    write_export(sim, tmp_path / "sim.csv")
    back = read_export(tmp_path / "sim.csv")
    for k in EXPORT_FIELDS:
        types_real = {type(r[k]) for r in real} - {type(None)}
        types_sim = {type(r[k]) for r in back} - {type(None)}
        assert not types_sim or not types_real or types_sim == types_real, (k, types_real, types_sim)
