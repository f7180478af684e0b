"""``seerbench plan RUN_DIR`` (issue 26) on a real pilot run of scripted models: questions per
comparison and per cell worked out from the results lines and usage.json by hand; the label plan
(seed 001) still works; misuse is one line, exit 2."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from scipy.stats import norm
from typer.testing import CliRunner

from seerbench.cli import app
from seerbench.errors import SeerbenchError
from seerbench.types import AnswerCase, Question

runner = CliRunner()


@pytest.fixture(scope="module")
def pilot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pilot of 40 questions (passages shared by pairs), NaiveJudge and Consultancy, coin models."""
    root = tmp_path_factory.mktemp("pilot")
    with open(root / "questions.jsonl", "w") as f:
        for i in range(40):
            q = Question(
                id=f"q{i}",
                text=f"This is question number {i}.",
                answer_cases=[
                    AnswerCase(short="A", long=f"yes {i}", value=1.0),
                    AnswerCase(short="B", long=f"no {i}", value=0.0),
                ],
                source_text=f"Passage {i // 2}.",
            )
            f.write(json.dumps(q.model_dump(mode="json")) + "\n")
    cfg = {
        "name": "pilot",
        "dataset": "questions.jsonl",
        "judge_models": ["scripted:coin"],
        "agent_models": ["scripted:coin"],
        "protocols": ["NaiveJudge", "Consultancy"],
        "elicitation": {"order": ["vote"]},
        "n_boot": 100,
        "out": str(root / "out"),
    }
    (root / "xp.yaml").write_text(yaml.safe_dump(cfg))
    r = runner.invoke(app, ["-q", "run", str(root / "xp.yaml")])
    assert r.exit_code == 0, r.output
    return root / "out"


def _lines(cell: Path) -> dict[str, dict[str, Any]]:
    return {
        (ln := json.loads(s))["question_id"]: ln for s in (cell / "results.jsonl").read_text().splitlines()
    }


def _n_for_power(sd: float, d: float, power: float, deff: float = 1.0) -> int:
    z = norm.ppf(0.975)

    def pw(n: int) -> float:
        s = abs(d) * math.sqrt(n / deff) / sd
        return float(norm.cdf(s - z) + norm.cdf(-s - z))

    n = 1
    while pw(n) < power:
        n += 1
    return n


def test_plan_a_comparison_from_the_pilot(pilot: Path) -> None:
    r = runner.invoke(app, ["plan", str(pilot), "--baseline", "NaiveJudge", "--effect", "0.1", "--json"])
    assert r.exit_code == 0, r.output
    p = json.loads(r.stdout)
    (row,) = [c for c in p["comparisons"] if c["metric"] == "accuracy"]
    cons = _lines(next(pilot.glob("Consultancy*/*")))
    naive = _lines(next(pilot.glob("NaiveJudge/*")))
    ids = [f"q{i}" for i in range(40)]
    diffs = [cons[q]["judge_accuracy"] - naive[q]["judge_accuracy"] for q in ids]
    n = len(diffs)
    mean = sum(diffs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in diffs) / (n - 1))
    # passages: questions 2k and 2k+1 share one
    dev = [x - mean for x in diffs]
    deff = max(1.0, sum((dev[2 * k] + dev[2 * k + 1]) ** 2 for k in range(n // 2)) / sum(x * x for x in dev))
    assert row["pilot_n"] == 40 and row["pilot_clusters"] == 20
    assert row["sd"] == pytest.approx(sd) and row["design_effect"] == pytest.approx(deff)
    assert row["questions"] == _n_for_power(sd, 0.1, 0.8, deff)
    usage = json.loads((pilot / "usage.json").read_text())["total"]
    per_q = (usage["calls"] + usage["cache_hits"]) / 80  # 40 questions x 2 cells
    assert row["expected"]["calls"] == round(per_q * row["questions"] * 2)
    # the table says the same
    t = runner.invoke(app, ["plan", str(pilot), "--baseline", "NaiveJudge", "--effect", "0.1"])
    assert t.exit_code == 0 and f"{per_q:.2f} calls" in t.stdout and "with power 0.8" in t.stdout


def test_plan_a_cell_half_width(pilot: Path) -> None:
    r = runner.invoke(app, ["plan", str(pilot), "--half-width", "0.05", "--json"])
    assert r.exit_code == 0, r.output
    p = json.loads(r.stdout)
    naive = _lines(next(pilot.glob("NaiveJudge/*")))
    x = [naive[q]["judge_accuracy"] for q in sorted(naive)]
    m = sum(x) / len(x)
    sd = math.sqrt(sum((v - m) ** 2 for v in x) / (len(x) - 1))
    (row,) = [c for c in p["cells"] if c["cell"].startswith("NaiveJudge") and c["metric"] == "accuracy"]
    assert row["questions"] == math.ceil(row["design_effect"] * (norm.ppf(0.975) * sd / 0.05) ** 2)
    assert p["comparisons"] == []
    # each cell's cost from its own usage: the usage log names the cell of every model event
    cells = json.loads((pilot / "usage.json").read_text())["cells"]
    for r in p["cells"]:
        c = cells[r["cell"]]
        assert r["expected"]["calls"] == round((c["calls"] + c["cache_hits"]) / 40 * r["questions"])
    naive_key = next(k for k in cells if k.startswith("NaiveJudge"))
    cons_key = next(k for k in cells if k.startswith("Consultancy"))
    naive, cons = cells[naive_key], cells[cons_key]
    assert naive["calls"] + naive["cache_hits"] < cons["calls"] + cons["cache_hits"]  # and the agent's


def test_plan_reports_each_cells_pilot_n_when_they_differ(pilot: Path, tmp_path: Path) -> None:
    # a sequential run stops cells at different n: here NaiveJudge's cell keeps its first 30 lines
    copy = tmp_path / "out"
    shutil.copytree(pilot, copy)
    naive = next(copy.glob("NaiveJudge/*"))
    kept = (naive / "results.jsonl").read_text().splitlines()[:30]
    (naive / "results.jsonl").write_text("\n".join(kept) + "\n")
    r = runner.invoke(app, ["plan", str(copy), "--half-width", "0.05", "--json"])
    assert r.exit_code == 0, r.output
    p = json.loads(r.stdout)
    assert sorted(p["pilot_questions"].values()) == [30, 40]
    assert sorted(c["pilot_n"] for c in p["cells"] if c["metric"] == "accuracy") == [30, 40]
    t = runner.invoke(app, ["plan", str(copy), "--half-width", "0.05"])
    flat = " ".join(t.stdout.split())
    assert t.exit_code == 0 and "pilot of 30 to 40 questions per cell (each row's pilot n is its own)" in flat
    t = runner.invoke(app, ["plan", str(pilot), "--half-width", "0.05"])
    assert "pilot of 40 questions per cell;" in " ".join(t.stdout.split())


def test_label_plan_still_works_and_misuse_is_one_line(pilot: Path) -> None:
    r = runner.invoke(app, ["plan", "--k", "4", "--accuracy", "0.7", "--n-ordinary", "100", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["k"] == 4
    for args, msg in [
        ([str(pilot), "--k", "4", "--effect", "0.1"], "--k belong to the label plan"),
        ([], "give RUN_DIR"),
        (["--k", "4", "--accuracy", "0.7", "--n-ordinary", "9", "--effect", "0.1"], "--effect need RUN_DIR"),
        ([str(pilot), "--effect", "0.1"], "--effect needs --baseline"),
        ([str(pilot), "--baseline", "NaiveJudge"], "--baseline needs --effect"),
        ([str(pilot)], "give --effect D"),
        ([str(pilot), "--half-width", "0"], "--half-width must be a positive number"),
        ([str(pilot), "--baseline", "Debate", "--effect", "0.1"], "no protocol folder 'Debate'"),
        ([str(pilot.parent / "nope"), "--half-width", "0.1"], "is not a folder"),
    ]:
        r = runner.invoke(app, ["plan", *args])
        assert isinstance(r.exception, SeerbenchError), (args, r.output)
        assert msg in str(r.exception) and "\n" not in str(r.exception)


def test_stats_shows_the_anytime_interval_beside_the_fixed_n_one(pilot: Path) -> None:
    from seerbench.estimators import confidence_sequence

    r = runner.invoke(app, ["stats", str(pilot), "--baseline", "NaiveJudge", "--anytime", "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    naive_dir = next(pilot.glob("NaiveJudge/*"))
    lines = [json.loads(x) for x in (naive_dir / "results.jsonl").read_text().splitlines()]
    x = [ln["judge_accuracy"] for ln in lines]  # in the file's order, as written
    (cell,) = [c for c in s["cells"] if c["protocol"] == "NaiveJudge"]
    cs = confidence_sequence(x)
    got = cell["anytime"]["judge_accuracy"]
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(cs.interval)
    assert got["mean"] == pytest.approx(sum(x) / len(x)) and got["n"] == 40
    fixed = cell["metrics"]["judge_accuracy"]
    # for 0/1 values wider than the fixed-n (Wilson) interval (the price of free looks), not necessarily
    # around it; for values in {0, 0.5, 1} Wilson overstates the spread and may be the wider (docs/budget.md)
    assert got["ci_high"] - got["ci_low"] > fixed["ci_high"] - fixed["ci_low"]
    cons = _lines(next(pilot.glob("Consultancy*/*")))
    order = [ln["question_id"] for ln in lines]
    d = confidence_sequence(
        [cons[q]["judge_accuracy"] - ln["judge_accuracy"] for q, ln in zip(order, lines, strict=True)], lo=-1
    )
    (p,) = s["paired"]
    assert (p["accuracy_diff_anytime"]["ci_low"], p["accuracy_diff_anytime"]["ci_high"]) == pytest.approx(
        d.interval
    )
    # pairs of questions share a passage: the sequences (which assume independent questions) say so
    from seerbench.runs import ANYTIME_SHARED

    keys = [c["cell"] for c in s["cells"]]
    assert len(keys) == 2
    assert s["anytime_warnings"] == [ANYTIME_SHARED.format(cells=f"2 of 2 cells ({keys[0]}, {keys[1]})")]
    table = runner.invoke(app, ["stats", str(pilot), "--anytime"])
    assert table.exit_code == 0 and "anytime-valid" in table.stdout
    flat = " ".join(table.stdout.split())
    assert "warning anytime-valid intervals: questions share passages in 2 of 2 cells" in flat
    plain = json.loads(runner.invoke(app, ["stats", str(pilot), "--json"]).stdout)
    assert all("anytime" not in c for c in plain["cells"])
