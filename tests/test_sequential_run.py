"""Sequential runs (issue 26, the config's ``sequential:`` section) on scripted models: a run
stopped by its budget and resumed with a larger one is, line for line, a prefix of the unstopped
run; the decisions in ``sequential.json`` are the confidence sequences of the results lines as
written; config refusals are one line, exit 2. (Coverage of the sequences under continuous
monitoring is tested in tests/estimators/test_sequential.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from seerbench.cli import app
from seerbench.errors import ConfigError, SeerbenchError
from seerbench.estimators import confidence_sequence, paired_sequence
from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.models import Model, get_model
from seerbench.types import AnswerCase, Question

runner = CliRunner()

N = 60
QUESTIONS = [
    Question(
        id=f"q{i}",
        text=f"Is statement number {i} true?",
        answer_cases=[
            AnswerCase(short="A", long=f"yes {i}", value=1.0),
            AnswerCase(short="B", long=f"no {i}", value=0.0),
        ],
    )
    for i in range(N)
]
BASE: dict[str, Any] = {
    "name": "seq",
    "dataset": "arithmetic",  # a registered name (checked when read); the Experiment is given its questions
    "judge_models": ["scripted:coin"],
    "agent_models": ["scripted:coin"],
    "protocols": ["NaiveJudge", "Consultancy"],
    "elicitation": {"order": ["vote"]},
    "n_boot": 100,
}


def _uncached(spec: str, role: str) -> Model:
    """Every call made (no cache hit), so the usage log counts each and a budget binds."""
    return get_model(spec, cache=False)


def _run(out: Path, sequential: dict[str, Any]) -> dict[str, Any]:
    cfg = ExperimentConfig.parse({**BASE, "sequential": sequential, "out": str(out)})
    Experiment(cfg, QUESTIONS, model_factory=_uncached).run()
    rec: dict[str, Any] = json.loads((out / "sequential.json").read_text())
    return rec


def _lines(out: Path) -> dict[str, list[str]]:
    return {
        str(p.parent.relative_to(out)): p.read_text().splitlines()
        for p in sorted(out.glob("*/*/results.jsonl"))
    }


def _values(lines: list[str], key: str = "judge_accuracy") -> list[float]:
    return [float(json.loads(s)[key]) for s in lines]


NEVER = {"half_width": 0.001}  # narrower than any 60 questions give: the run goes to the end


def test_a_stopped_and_resumed_run_is_a_prefix_of_the_unstopped_one(tmp_path: Path) -> None:
    full = _run(tmp_path / "full", {"batch": 10, "seed": 7, "stop_when": NEVER})
    ref = _lines(tmp_path / "full")
    assert full["finished"] and full["added"] == N
    assert {c["reason"] for c in full["cells"].values()} == {"dataset exhausted"}
    assert all(len(v) == N for v in ref.values())
    per_batch = full["spent"]["calls"] / (N // 10)  # calls of one batch of every cell

    out = tmp_path / "stopped"
    budget = int(2.5 * per_batch)
    stopped = _run(out, {"batch": 10, "seed": 7, "stop_when": NEVER, "budget": {"calls": budget}})
    assert stopped["stopped_by_budget"].startswith("calls ") and not stopped["finished"]
    assert {c["reason"] for c in stopped["cells"].values()} == {"budget spent"}
    assert budget <= stopped["spent"]["calls"] < budget + per_batch  # at most one cell's batch past it
    first = _lines(out)
    for cell, lines in first.items():
        assert 0 < len(lines) < N
        assert lines == ref[cell][: len(lines)]  # the same lines for the same questions, in order
        assert stopped["cells"][cell]["n"] == len(lines)
    # a batch of 10 costs NaiveJudge 50 calls and Consultancy 120 (per_batch 170, budget 425): steps
    # 1-3 run (spent 170, 340, then 390 < 425 before Consultancy's third batch, 510 after it); step 4
    # stops before any cell runs it, so 30 questions were run, not the 40 of four steps
    assert per_batch == 170 and budget == 425 and stopped["spent"]["calls"] == 510
    assert stopped["step"] == 4 and stopped["added"] == 30
    assert {c["n"] for c in stopped["cells"].values()} == {30}
    r = runner.invoke(app, ["stats", str(out)])
    assert r.exit_code == 0 and "30 of 60 questions run (the most any cell ran)" in " ".join(r.output.split())

    # a larger budget: the run continues from where it stopped, nothing run twice
    calls_before = stopped["spent"]["calls"]
    more = _run(out, {"batch": 10, "seed": 7, "stop_when": NEVER, "budget": {"calls": 2 * budget}})
    second = _lines(out)
    for cell, lines in second.items():
        assert len(first[cell]) < len(lines) < N
        assert lines == ref[cell][: len(lines)]
    assert more["spent"]["calls"] < 2 * budget + per_batch
    assert more["spent"]["calls"] - calls_before < budget + per_batch

    # no budget: the end of the unstopped run, byte for byte
    last = _run(out, {"batch": 10, "seed": 7, "stop_when": NEVER})
    assert _lines(out) == ref
    assert last["spent"]["calls"] == full["spent"]["calls"]  # each question's calls made once
    assert last["cells"] == full["cells"]


def test_the_order_is_the_seeds_and_the_file_follows_it(tmp_path: Path) -> None:
    from seerbench.experiment._stopping import question_order

    _run(tmp_path / "a", {"batch": 20, "seed": 3, "stop_when": NEVER})
    lines = next(iter(_lines(tmp_path / "a").values()))
    assert [json.loads(s)["question_id"] for s in lines] == [f"q{i}" for i in question_order(N, 3)]


def test_half_width_decisions_are_the_sequences_of_the_written_lines(tmp_path: Path) -> None:
    out = tmp_path / "hw"
    rec = _run(out, {"batch": 10, "seed": 1, "stop_when": {"half_width": 0.2}})
    lines = _lines(out)
    assert rec["settings"]["stop_when"]["half_width"] == 0.2
    assert rec["warnings"] == []  # no passages: independent questions
    for cell, c in rec["cells"].items():
        vals = _values(lines[cell])
        assert c["n"] == len(vals) and c["n"] % 10 == 0
        cs = confidence_sequence(vals)
        iv = c["interval"]
        assert iv["ci_low"] == pytest.approx(cs.interval[0])
        assert iv["ci_high"] == pytest.approx(cs.interval[1])
        # the rule's half-width: the interval within mean +- W, the longer side (not (hi - lo) / 2)
        assert iv["half_width"] == pytest.approx(max(iv["mean"] - iv["ci_low"], iv["ci_high"] - iv["mean"]))
        if c["reason"] == "target met":
            assert cs.half_width <= 0.2
            # not met one batch earlier: the cell stopped at the first look that met it
            assert confidence_sequence(vals[:-10]).half_width > 0.2
        else:
            assert c["reason"] == "dataset exhausted" and c["n"] == N and cs.half_width > 0.2
    assert any(c["reason"] == "target met" and c["n"] < N for c in rec["cells"].values())
    # `seerbench stats` shows the decisions; its --anytime interval is the same sequence
    r = runner.invoke(app, ["stats", str(out), "--anytime", "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["sequential"]["cells"] == rec["cells"]
    assert s["anytime_warnings"] == []  # independent questions: nothing to warn of
    for cell in s["cells"]:
        assert cell["anytime"]["judge_accuracy"]["ci_low"] == rec["cells"][cell["cell"]]["interval"]["ci_low"]
    r = runner.invoke(app, ["stats", str(out)])
    assert r.exit_code == 0 and "sequential run" in r.output and "target met" in r.output
    # the report: the anytime interval beside the fixed-n one, and the decisions
    html = tmp_path / "report.html"
    r = runner.invoke(app, ["report", str(out), "--out", str(html)])
    assert r.exit_code == 0, r.output
    text = html.read_text()
    anytime = text[text.index('<table class="stats-anytime">') :]
    anytime, decisions = anytime.split('<table class="stats-sequential">')
    for cell, c in rec["cells"].items():
        fixed = next(x for x in s["cells"] if x["cell"] == cell)["metrics"]["judge_accuracy"]
        row = re.search(rf'<tr data-cell="{re.escape(cell)}"><td>.*?</tr>', anytime)
        assert row is not None
        assert f'data-k="ci_low" data-v="{fixed["ci_low"]}"' in row.group(0)
        assert f'data-k="anytime_low" data-v="{c["interval"]["ci_low"]}"' in row.group(0)
        decision = re.search(rf'<tr data-cell="{re.escape(cell)}" data-status="stopped">.*?</tr>', decisions)
        assert decision is not None and c["reason"] in decision.group(0)


def test_sign_decisions_are_paired_sequences(tmp_path: Path) -> None:
    out = tmp_path / "sign"
    rec = _run(out, {"batch": 20, "seed": 2, "stop_when": {"sign": True, "baseline": "NaiveJudge"}})
    lines = _lines(out)
    ((cons, base),) = [(c["cell"], c["baseline_cell"]) for c in rec["comparisons"]]
    assert base.startswith("NaiveJudge/") and cons.startswith("Consultancy")
    (comp,) = rec["comparisons"]
    n = comp["n"]
    a, b = _values(lines[cons])[:n], _values(lines[base])[:n]
    cs = paired_sequence(a, b)
    assert comp["interval"]["ci_low"] == pytest.approx(cs.interval[0])
    assert comp["reason"] in ("target met", "dataset exhausted")
    assert cs.excludes(0.0) == (comp["reason"] == "target met")
    for cell in (cons, base):  # each stops with its only comparison, at the same n
        assert rec["cells"][cell]["status"] == "stopped"
        assert rec["cells"][cell]["reason"] == comp["reason"]
        assert len(lines[cell]) == n
        # and records its own accuracy's sequence there, as a half_width run does
        iv, cs = rec["cells"][cell]["interval"], confidence_sequence(_values(lines[cell]))
        assert rec["cells"][cell]["n_scored"] == n and iv["n"] == n
        assert (iv["ci_low"], iv["ci_high"]) == pytest.approx(cs.interval)
        assert iv["half_width"] == pytest.approx(cs.half_width)
    r = runner.invoke(app, ["stats", str(out)])
    assert r.exit_code == 0 and "n/a" not in r.output, r.output


@pytest.mark.parametrize(
    ("sequential", "message"),
    [
        (
            {"batch": 0, "budget": {"calls": 5}},
            "sequential.batch: Input should be greater than or equal to 1",
        ),
        ({"batch": 5, "stop_when": {"half_width": 0.1, "metric": "asd"}}, "sequential.stop_when.metric: asd"),
        ({"batch": 5}, "give stop_when and/or budget"),
        ({"batch": 5, "stop_when": {"sign": True}}, "sign: true needs baseline"),
        ({"batch": 5, "stop_when": {"sign": True, "baseline": "Debate"}}, "is not a protocol of this config"),
        (
            {"batch": 5, "stop_when": {"half_width": 0.1, "sign": True, "baseline": "NaiveJudge"}},
            "give one rule",
        ),
        ({"batch": 5, "budget": {"callz": 5}}, "sequential.budget.callz: unknown key (did you mean calls?)"),
        ({"batch": 5, "budget": {}}, "give calls, tokens and/or dollars"),
        ({"batch": 5, "stop_when": {"half_width": 0.6}}, "sequential.stop_when.half_width"),
        ({"batch": 5, "budget": {"calls": 9}, "oops": 1}, "sequential.oops: unknown key"),
    ],
)
def test_refusals_are_one_line_exit_2(tmp_path: Path, sequential: dict[str, Any], message: str) -> None:
    qs = tmp_path / "q.jsonl"
    qs.write_text("".join(q.model_dump_json() + "\n" for q in QUESTIONS[:5]))
    cfg = {**BASE, "dataset": str(qs), "sequential": sequential, "out": str(tmp_path / "out")}
    (tmp_path / "xp.yaml").write_text(yaml.safe_dump(cfg))
    r = runner.invoke(app, ["run", str(tmp_path / "xp.yaml")])
    # a SeerbenchError: `seerbench` prints its one line and exits 2 (EXIT_USER)
    assert isinstance(r.exception, SeerbenchError), r.output
    assert message in str(r.exception) and "\n" not in str(r.exception)
    assert not (tmp_path / "out").exists()


def test_a_sign_rule_refuses_a_cell_with_no_baseline_partner(tmp_path: Path) -> None:
    cfg = ExperimentConfig.parse(
        {
            **BASE,
            "protocols": [
                {"name": "NaiveJudge"},
                {"name": "Consultancy", "judge_models": ["scripted:echo"]},
            ],
            "sequential": {"batch": 5, "stop_when": {"sign": True, "baseline": "NaiveJudge"}},
        }
    )
    with pytest.raises(ConfigError, match="no NaiveJudge cell with the same judge to compare"):
        Experiment(cfg, QUESTIONS[:5]).check()


def test_a_dollar_budget_refuses_a_model_without_a_price() -> None:
    unpriced = "openai/m@http://127.0.0.1:9/v1"  # a server's model: resolved, never called here
    cfg = ExperimentConfig.parse(
        {**BASE, "judge_models": [unpriced], "sequential": {"batch": 5, "budget": {"dollars": 1.0}}}
    )
    with pytest.raises(ConfigError, match=f"sequential.budget.dollars: model {unpriced} has no price"):
        Experiment(cfg, QUESTIONS[:5]).check()


def test_questions_sharing_passages_are_flagged(tmp_path: Path) -> None:
    from seerbench.experiment._stopping import SHARED_PASSAGES

    qs = [q.model_copy(update={"source_text": f"Passage {i // 2}."}) for i, q in enumerate(QUESTIONS[:20])]
    cfg = ExperimentConfig.parse(
        {**BASE, "sequential": {"batch": 10, "stop_when": NEVER}, "out": str(tmp_path / "p")}
    )
    Experiment(cfg, qs).run()
    rec = json.loads((tmp_path / "p" / "sequential.json").read_text())
    assert rec["warnings"] == [SHARED_PASSAGES]
    r = runner.invoke(app, ["stats", str(tmp_path / "p")])
    assert r.exit_code == 0 and "questions share passages" in " ".join(r.output.split())


def test_a_folder_keeps_its_order_and_level(tmp_path: Path) -> None:
    out = tmp_path / "o"
    _run(out, {"batch": 10, "seed": 1, "stop_when": {"half_width": 0.2}})
    for change in ({"seed": 2}, {"alpha": 0.1}):
        seq = {"batch": 10, "seed": 1, "stop_when": {"half_width": 0.1}, **change}
        cfg = ExperimentConfig.parse({**BASE, "sequential": seq, "out": str(out)})
        with pytest.raises(ConfigError, match=f"sequential.{next(iter(change))}: .* holds a sequential run"):
            Experiment(cfg, QUESTIONS).check()
    # a narrower target (or another batch, or budget) resumes: the sequences hold at any stopping time
    rec = _run(out, {"batch": 20, "seed": 1, "stop_when": {"half_width": 0.15}})
    assert all(c["interval"]["half_width"] <= 0.15 or c["n"] == N for c in rec["cells"].values())


def test_the_command_line_stops_on_budget_exits_0_and_resumes(tmp_path: Path) -> None:
    qs = tmp_path / "q.jsonl"
    qs.write_text("".join(q.model_dump_json() + "\n" for q in QUESTIONS[:30]))
    seq = {"batch": 10, "stop_when": NEVER, "budget": {"calls": 50}}
    cfg = {**BASE, "dataset": str(qs), "sequential": seq, "out": str(tmp_path / "out")}
    (tmp_path / "xp.yaml").write_text(yaml.safe_dump(cfg))
    r = runner.invoke(app, ["run", str(tmp_path / "xp.yaml")])
    assert r.exit_code == 0, r.output  # a budget stop is what was asked for, not a failure
    assert "budget spent" in " ".join(r.output.split())
    r = runner.invoke(app, ["run", str(tmp_path / "xp.yaml"), "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["sequential"]["stopped_by_budget"]
    (tmp_path / "xp.yaml").write_text(
        yaml.safe_dump({**cfg, "sequential": {**seq, "budget": {"calls": 10**6}}})
    )
    r = runner.invoke(app, ["run", str(tmp_path / "xp.yaml"), "--json"])
    assert r.exit_code == 0, r.output
    rec = json.loads(r.stdout)["sequential"]
    assert rec["finished"] and {c["n"] for c in rec["cells"].values()} == {30}
