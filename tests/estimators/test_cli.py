"""``seerbench estimate``, ``plan`` and ``partition`` through Typer's CliRunner."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seerbench.cli import app
from seerbench.errors import DataError
from seerbench.estimators import read_labels_csv

runner = CliRunner()

# K = 4: 10 ordinary labels (7 correct), 20 complementary labels (17 avoided): A_ord = 0.7,
# q = 0.85, A_comp = 3 * 0.85 - 2 = 0.55, IVW = 137.9/209 (see test_core.py).
ROWS = [("1", "1", "")] * 7 + [("2", "1", "")] * 3 + [("1", "", "2")] * 17 + [("3", "", "3")] * 3


def _labels(tmp_path: Path) -> Path:
    p = tmp_path / "labels.csv"
    with p.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item", "prediction", "ordinary_label", "complementary_label"])
        for i, r in enumerate(ROWS):
            w.writerow([f"q{i}", *r])
    return p


def test_estimate_table(tmp_path: Path) -> None:
    r = runner.invoke(app, ["estimate", str(_labels(tmp_path)), "--k", "4"])
    assert r.exit_code == 0, r.output
    for word in (
        "Ord",
        "Comp",
        "IVW",
        "IVW w=0.5",
        "ML",
        "0.7000",
        "0.5500",
        "0.6598",
        "thm2_comp",
        "prop3_union",
    ):
        assert word in r.output


def test_estimate_json(tmp_path: Path) -> None:
    r = runner.invoke(app, ["estimate", str(_labels(tmp_path)), "--k", "4", "--json", "--weight", "0.25"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["counts"] == {"k": 4, "n_o": 10, "s_o": 7, "n_c": 20, "s_c": 17, "n_converted": 0}
    est = {row["name"]: row["estimate"]["estimate"] for row in d["estimators"]}
    assert est["ord"] == pytest.approx(0.7)
    assert est["comp"] == pytest.approx(0.55)
    assert est["ivw"] == pytest.approx(137.9 / 209)
    assert est["mix"] == pytest.approx(0.25 * 0.7 + 0.75 * 0.55)
    by_method = {b["method"]: b for b in d["bounds"]}
    assert by_method["eq16_bernstein_ivw"]["holds_for_data_dependent_weight"] is False
    assert by_method["thm2_comp"]["half_width"] == pytest.approx(0.9929529, abs=1e-6)


def test_estimate_k2_reports_comp_unavailable(tmp_path: Path) -> None:
    p = tmp_path / "k2.csv"
    p.write_text("prediction,ordinary_label,complementary_label,k\n1,1,,2\n2,,1,2\n1,,1,2\n")
    d = json.loads(runner.invoke(app, ["estimate", str(p), "--json"]).output)
    rows = {row["name"]: row for row in d["estimators"]}
    assert rows["comp"]["estimate"] is None and "K=2" in rows["comp"]["unavailable"]
    # 3 labels all ordinary after conversion; hits: row 1 yes, row 2 (true 2, pred 2) yes, row 3 no
    assert rows["ord"]["estimate"]["estimate"] == pytest.approx(2 / 3)


def test_estimate_bad_file(tmp_path: Path) -> None:
    p = tmp_path / "bad.csv"
    p.write_text("prediction,ordinary_label,complementary_label\n1,x,\n")
    r = runner.invoke(app, ["estimate", str(p), "--k", "4"])
    assert r.exit_code != 0
    assert isinstance(r.exception, DataError) and "row 2" in str(r.exception)


def test_plan_json_and_table() -> None:
    r = runner.invoke(app, ["plan", "--k", "4", "--accuracy", "0.7", "--n-ordinary", "300", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["n_complementary_to_match"] == 1158  # (1 + 2/0.7) * 300 = 1157.1
    assert d["variance_ratio_equal_n"] == pytest.approx(2.7 / 0.7)
    t = runner.invoke(
        app, ["plan", "--k", "4", "--accuracy", "0.5", "--n-ordinary", "100", "--half-width", "0.05"]
    )
    assert t.exit_code == 0 and "1421" in t.output and "500" in t.output


def _dataset(tmp_path: Path, n: int = 60) -> Path:
    p = tmp_path / "questions.jsonl"
    lines = []
    for i in range(n):
        cases = [
            {"short": s, "long": f"option {s}", "value": 1.0 if s == "ABCD"[i % 4] else 0.0} for s in "ABCD"
        ]
        pred = "ABCD"[i % 4] if i % 3 else "ABCD"[(i + 1) % 4]  # right on 2/3 of the items
        if i % 2:
            pred = str("ABCD".index(pred) + 1)  # a 1-based index works too
        lines.append(
            json.dumps({"id": f"q{i}", "text": "?", "answer_cases": cases, "metadata": {"prediction": pred}})
        )
    p.write_text("\n".join(lines) + "\n")
    return p


def test_partition_roundtrip_and_seed(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    out1, out2, out3 = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "c.csv"
    r = runner.invoke(app, ["partition", str(ds), "--seed", "0", "--out", str(out1), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["items"] == 60 and d["labels"] == 60 and d["n_ordinary"] + d["n_complementary"] == 60
    assert d["true_accuracy"] == pytest.approx(40 / 60)
    runner.invoke(app, ["partition", str(ds), "--seed", "0", "--out", str(out2)])
    runner.invoke(app, ["partition", str(ds), "--seed", "1", "--out", str(out3)])
    assert out1.read_text() == out2.read_text()
    assert out1.read_text() != out3.read_text()
    ls = read_labels_csv(out1)
    assert ls.extra["id"][0] == "q0" and len(ls.extra["option_order"][0].split()) == 4
    r = runner.invoke(app, ["estimate", str(out1), "--json"])
    assert r.exit_code == 0, r.output


def test_partition_all_complementary_and_predictions_csv(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, n=8)
    preds = tmp_path / "preds.csv"
    preds.write_text("id,prediction\n" + "".join(f"q{i},A\n" for i in range(8)))
    out = tmp_path / "all.csv"
    r = runner.invoke(
        app,
        [
            "partition",
            str(ds),
            "--out",
            str(out),
            "--predictions",
            str(preds),
            "--all-complementary",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    # always "A"; A is true on items 0 and 4 -> accuracy 2/8; 8 items * 3 complementary labels
    assert d["labels"] == 24 and d["n_ordinary"] == 0 and d["true_accuracy"] == pytest.approx(0.25)
    est = json.loads(runner.invoke(app, ["estimate", str(out), "--json"]).output)
    comp = {row["name"]: row for row in est["estimators"]}["comp"]["estimate"]["estimate"]
    assert comp == pytest.approx(0.25)  # exactly the items' accuracy, as expand_complementary documents


@pytest.mark.parametrize(
    ("line", "match"),
    [
        (
            '{"id": "x", "text": "?", "answer_cases": [{"short": "A", "long": "", "value": 1}, '
            '{"short": "B", "long": "", "value": 0}], "metadata": {"prediction": "C"}}',
            "neither an option label",
        ),
        (
            '{"id": "x", "text": "?", "answer_cases": [{"short": "A", "long": "", "value": 1}, '
            '{"short": "B", "long": "", "value": 0}]}',
            "has no prediction",
        ),
        (
            '{"id": "x", "text": "?", "answer_cases": [{"short": "A", "long": "", "value": 1}, '
            '{"short": "B", "long": "", "value": 1}], "metadata": {"prediction": "A"}}',
            "2 true options",
        ),
        ("{not json", "bad.jsonl:2: invalid JSON"),
        ('{"id": "x"}', "bad.jsonl:2: "),
    ],
)
def test_partition_bad_input(tmp_path: Path, line: str, match: str) -> None:
    ds = tmp_path / "bad.jsonl"
    ds.write_text("\n" + line + "\n")
    r = runner.invoke(app, ["partition", str(ds), "--out", str(tmp_path / "o.csv")])
    assert r.exit_code != 0
    assert isinstance(r.exception, DataError)
    # the one question reader names file and line; the partition names the question
    assert "bad.jsonl" in str(r.exception) and match in str(r.exception)
    assert ":2:" in str(r.exception) or "question 'x'" in str(r.exception)


def test_estimate_interval_and_cluster_options(tmp_path: Path) -> None:
    p = _labels(tmp_path)
    d = json.loads(runner.invoke(app, ["estimate", str(p), "--k", "4", "--json"]).output)
    ords = {row["name"]: row["estimate"] for row in d["estimators"]}["ord"]
    # default: Wilson for 7/10 (see test_core.py)
    assert ords["interval"] == "score"
    assert (ords["ci_low"], ords["ci_high"]) == pytest.approx((0.3967781, 0.8922087), abs=1e-6)
    w = json.loads(
        runner.invoke(app, ["estimate", str(p), "--k", "4", "--json", "--interval", "wald"]).output
    )
    ordw = {row["name"]: row["estimate"] for row in w["estimators"]}["ord"]
    assert (ordw["ci_low"], ordw["ci_high"]) == pytest.approx((0.4159741, 0.9840259), abs=1e-6)
    # one label per item: 30 clusters of one, so the cluster-robust variance is the independent one
    # times G/(G-1) = 30/29 for every estimator
    c = json.loads(runner.invoke(app, ["estimate", str(p), "--k", "4", "--json", "--cluster", "item"]).output)
    for row in c["estimators"]:
        assert row["estimate"]["design_effect"] == pytest.approx(30 / 29), row["name"]
    table = runner.invoke(app, ["estimate", str(p), "--k", "4"])
    assert "(score)" in table.output
    bad = runner.invoke(app, ["estimate", str(p), "--k", "4", "--interval", "exact"])
    assert bad.exit_code != 0 and "--interval" in str(bad.exception)
    nocol = runner.invoke(app, ["estimate", str(p), "--k", "4", "--cluster", "rater"])
    assert isinstance(nocol.exception, DataError) and "rater" in str(nocol.exception)
