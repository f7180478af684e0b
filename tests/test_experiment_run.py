"""Experiments end to end with scripted models: files, results lines, stats, reruns, the out-folder
guard and `seerbench stats`. Expected values are worked out by hand from the scripted judge."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import seerbench
from seerbench.cli import app
from seerbench.errors import ConfigError
from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.models import ChatMessage, GenerateConfig, get_model, register_scripted
from seerbench.protocols import CaseRun, QuestionRun
from seerbench.provenance import environment_lines
from seerbench.results import METRIC_KEYS, paired, rescore, result_line, run_stats
from seerbench.types import AnswerCase, Question, Transcript, Verdict

JUDGE, AGENT = "scripted:xp-judge", "scripted:xp-agent"
FAIL_TEXT = "question number 3"


def _judge(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    """P(A) = 0.7 after hearing A argued, 0.4 after B, 0.55 with no argument; fails on question 3."""
    text = messages[-1].content
    if FAIL_TEXT in text:
        return "I cannot say."
    if "How likely" not in text:
        return "A"
    a, b = "(arguing for A)" in text, "(arguing for B)" in text
    return "0.7" if a and not b else "0.4" if b and not a else "0.55"


def _agent(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    return "My side is right."


register_scripted("xp-judge", _judge, replace=True)
register_scripted("xp-agent", _agent, replace=True)

QUESTIONS = [
    Question(
        id=f"q{i}",
        text=f"This is question number {i}. Which is right?",
        answer_cases=[
            AnswerCase(short="A", long=f"yes {i}", value=1.0),
            AnswerCase(short="B", long=f"no {i}", value=0.0),
        ],
    )
    for i in range(6)
]
PROTOCOLS = ["NaiveJudge", "BlindTrust", "Consultancy", "SimultaneousDebate", "RandomConsultancy"]


def _cfg(**kw: Any) -> ExperimentConfig:
    return ExperimentConfig.parse(
        {
            "name": "xp",
            "dataset": "arithmetic",
            "judge_models": [JUDGE],
            "agent_models": [AGENT],
            "protocols": PROTOCOLS,
            "elicitation": {"order": ["verbalized"]},
            "n_boot": 200,
            **kw,
        }
    )


def _calls() -> int:
    return get_model(JUDGE).backend.calls + get_model(AGENT).backend.calls  # type: ignore[attr-defined]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _true(line: dict[str, Any]) -> str:
    return next(c["short"] for c in line["question"]["answer_cases"] if c["value"] == 1.0)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("xp") / "out"
    Experiment(_cfg(), questions=QUESTIONS, out=out).run()
    return out


CONS = "Consultancy_t1/A_scripted-xp-agent_J_scripted-xp-judge"


def test_layout_and_experiment_json(finished: Path) -> None:
    cells = {
        "NaiveJudge/J_scripted-xp-judge",
        "BlindTrust/J_trust",
        CONS,
        "SimultaneousDebate_t1/A_scripted-xp-agent_J_scripted-xp-judge",
        "RandomConsultancy_t1/A_scripted-xp-agent_J_scripted-xp-judge",
    }
    for c in cells:
        assert (finished / c / "results.jsonl").is_file() and (finished / c / "stats.json").is_file()
    assert set(json.loads((finished / "all_stats.json").read_text())) == cells
    meta = json.loads((finished / "experiment.json").read_text())
    assert meta["seerbench_version"] == seerbench.__version__
    assert meta["fingerprint"] == _cfg().fingerprint()
    assert meta["config"]["judge_models"] == [JUDGE]
    assert (finished / "config.yaml").is_file()


def test_consultancy_lines_by_hand(finished: Path) -> None:
    lines = _lines(finished / CONS / "results.jsonl")
    assert [ln["question_id"] for ln in lines] == [f"q{i}" for i in range(6)]  # dataset order
    for ln in lines:
        assert {"asd", "jse_b0", "jse_b1", "jse_binf", "ase_b0", "ase_b1", "ase_binf"} <= set(ln) or ln[
            "excluded"
        ]
        assert ln["protocol"] == "Consultancy_t1" and ln["agent"] == AGENT and ln["judge"] == JUDGE
        assert ln["eps"] == 1e-6 and ln["parse_failure_policy"] == "exclude"
        assert [c["short"] for c in ln["answer_cases"]] == ["A", "B"]
        if ln["question_id"] == "q3":
            assert ln["excluded"] and ln["asd"] is None and ln["parse_failures"] == 2
            assert all(
                c["case_probs"]["parse_status"] == "failed" and c["agent_score"] is None
                for c in ln["answer_cases"]
            )
            continue
        t = _true(ln)
        f = "B" if t == "A" else "A"
        # arguing A: q = (0.7, 0.3); arguing B: q = (0.4, 0.6)
        case = {c["short"]: c for c in ln["answer_cases"]}
        assert case["A"]["case_probs"]["probabilities"] == {"A": pytest.approx(0.7), "B": pytest.approx(0.3)}
        assert case["B"]["case_probs"]["probabilities"] == {"A": pytest.approx(0.4), "B": pytest.approx(0.6)}
        assert case["A"]["case_probs"]["transcript"][0]["content"] == "My side is right."
        as_ = {"A": math.log(0.7), "B": math.log(0.6)}
        js = {"A": math.log(0.7 if t == "A" else 0.3), "B": math.log(0.4 if t == "A" else 0.6)}
        assert case["A"]["agent_score"]["log"] == pytest.approx(as_["A"])
        assert case["B"]["case_probs"]["judge_score"]["log"] == pytest.approx(js["B"])
        # ASD(log) = AS_T - AS_F: +log(7/6) when A is true, -log(7/6) when B is
        assert ln["asd"]["log"] == pytest.approx(as_[t] - as_[f])
        # logodds: AS_A = log(0.7/0.3), AS_B = log(0.6/0.4)
        lo = {"A": math.log(0.7 / 0.3), "B": math.log(0.6 / 0.4)}
        assert ln["asd"]["logodds"] == pytest.approx(lo[t] - lo[f])
        # brier: AS_A = -(0.09 + 0.09) = -0.18, AS_B = -(0.16 + 0.16) = -0.32
        br = {"A": -0.18, "B": -0.32}
        assert ln["asd"]["brier"] == pytest.approx(br[t] - br[f])
        assert ln["asd"]["accuracy"] == 0.0
        # beta = 0: the agent argues the side with the higher agent score (A, log 0.7 > log 0.6)
        assert ln["jse_b0"]["log"] == pytest.approx(js["A"])
        assert ln["ase_b0"]["log"] == pytest.approx(as_["A"])
        # beta = inf: the mean of both cases
        assert ln["jse_binf"]["log"] == pytest.approx((js["A"] + js["B"]) / 2)
        # beta = 1: p_T = sigmoid(ASD)
        p_t = 1 / (1 + math.exp(-(as_[t] - as_[f])))
        assert ln["ase_b1"]["log"] == pytest.approx(p_t * as_[t] + (1 - p_t) * as_[f])
        # judge accuracy: right in the true case, wrong in the false one -> 0.5
        assert ln["judge_accuracy"] == 0.5


def test_stats_files(finished: Path) -> None:
    s = json.loads((finished / CONS / "stats.json").read_text())
    lines = _lines(finished / CONS / "results.jsonl")
    assert (s["n_questions"], s["n_scored"], s["n_excluded"], s["parse_failures"]) == (6, 5, 1, 2)
    assert s["parse_failure_policy"] == "exclude" and s["eps"] == 1e-6
    assert s["bootstrap"] == {"n_boot": 200, "seed": 0, "confidence": 0.95}
    k = math.log(7 / 6)
    asds = [k if _true(ln) == "A" else -k for ln in lines if ln["question_id"] != "q3"]
    assert s["metrics"]["asd"]["log"]["mean"] == pytest.approx(sum(asds) / 5)
    assert s["metrics"]["asd"]["log"]["n"] == 5
    assert s["metrics"]["judge_accuracy"]["mean"] == pytest.approx(0.5)
    assert set(s["metrics"]) == {*METRIC_KEYS, "judge_accuracy"}
    # NaiveJudge: one verdict per question, one parse failure for q3
    n = json.loads((finished / "NaiveJudge/J_scripted-xp-judge/stats.json").read_text())
    assert (n["n_scored"], n["parse_failures"]) == (5, 1)
    # BlindTrust: ASD 0 everywhere, nothing fails
    b = json.loads((finished / "BlindTrust/J_trust/stats.json").read_text())
    assert b["metrics"]["asd"]["log"]["mean"] == 0.0 and b["n_scored"] == 6 and b["agent"] is None
    # RandomConsultancy: one case per question, so no ASD; accuracy only
    r = json.loads(
        (finished / "RandomConsultancy_t1/A_scripted-xp-agent_J_scripted-xp-judge/stats.json").read_text()
    )
    assert r["metrics"]["asd"] == {"log": None, "logodds": None, "brier": None, "accuracy": None}
    assert r["metrics"]["judge_accuracy"]["n"] == 5
    # symmetric debate: one run, stored under both cases, counted once
    d = _lines(finished / "SimultaneousDebate_t1/A_scripted-xp-agent_J_scripted-xp-judge/results.jsonl")
    assert all(ln["symmetric"] for ln in d)
    assert sum(ln["parse_failures"] for ln in d) == 1


def test_second_run_makes_no_model_calls_and_changes_nothing(finished: Path) -> None:
    before = {p: p.read_text() for p in finished.glob("*/*/results.jsonl")}
    calls = _calls()
    Experiment(_cfg(), questions=QUESTIONS, out=finished).run()
    assert _calls() == calls
    assert {p: p.read_text() for p in finished.glob("*/*/results.jsonl")} == before


def test_config_change_refused_unless_new(finished: Path) -> None:
    with pytest.raises(
        ConfigError,
        match=(
            r"holds results this config would change: 5 cells \(differs "
            r"in: eps, parse_failures; e\.g\. NaiveJudge/.*--new"
        ),
    ):
        Experiment(_cfg(eps=1e-3, parse_failures="half"), questions=QUESTIONS, out=finished).run()
    with pytest.raises(ConfigError) as e:
        Experiment(_cfg(eps=1e-3, parse_failures="half"), questions=QUESTIONS, out=finished).run()
    assert f"`seerbench stats {finished} --eps X --parse-failures half|exclude` rescores" in str(e.value)
    with pytest.raises(ConfigError) as e:  # a change past scoring: no rescoring hint
        Experiment(
            _cfg(eps=1e-3, elicitation={"order": ["verbalized"], "vote_samples": 3}),
            questions=QUESTIONS,
            out=finished,
        ).run()
    assert "rescores" not in str(e.value)
    # limit and concurrency do not change results: allowed
    Experiment(_cfg(limit=2, concurrency=1), questions=QUESTIONS, out=finished).prepare_out()
    exp = Experiment(_cfg(eps=1e-3), questions=QUESTIONS[:2], out=finished)
    exp.run(new=True)
    assert exp.out == Path(f"{finished}_2")
    assert json.loads((exp.out / "experiment.json").read_text())["config"]["eps"] == 1e-3
    assert json.loads((finished / "experiment.json").read_text())["config"]["eps"] == 1e-6


def test_half_policy_scores_failures_as_half(tmp_path: Path) -> None:
    out = tmp_path / "half"
    Experiment(_cfg(parse_failures="half", protocols=["Consultancy"]), questions=QUESTIONS, out=out).run()
    s = json.loads((out / CONS / "stats.json").read_text())
    assert (s["n_scored"], s["n_excluded"], s["parse_failures"], s["parse_failure_policy"]) == (
        6,
        0,
        2,
        "half",
    )
    q3 = _lines(out / CONS / "results.jsonl")[3]
    # q = (0.5, 0.5) in both cases: ASD = 0, judge accuracy 0.5 (a tie)
    assert q3["asd"]["log"] == 0.0 and q3["judge_accuracy"] == 0.5
    assert q3["answer_cases"][0]["agent_score"]["log"] == pytest.approx(math.log(0.5))


# --------------------------------------------------------------------------------------------------
# results functions directly


def _qr(probs: dict[str, dict[str, float] | None], *, symmetric: bool = False) -> QuestionRun:
    q = QUESTIONS[0]
    runs = {}
    for a, p in probs.items():
        v = (
            Verdict(probabilities=p)
            if p is not None
            else Verdict.failure(raw="?", error="no probability found")
        )
        runs[a] = CaseRun(a, Transcript(question_id=q.id, protocol="P"), v)
    if symmetric:
        runs = {a: runs["A"] for a in "AB"}
    return QuestionRun(q, "P", runs, symmetric=symmetric)


def test_result_line_and_rescore() -> None:
    ln = result_line(
        _qr({"A": {"A": 0.8, "B": 0.2}, "B": {"A": 0.4, "B": 0.6}}),
        {"protocol": "P"},
        eps=1e-6,
        policy="exclude",
    )
    assert ln["asd"]["log"] == pytest.approx(math.log(0.8 / 0.6))  # the seed's example
    assert ln["protocol"] == "P" and ln["question_id"] == "q0" and not ln["excluded"]
    # rescoring with another eps/beta changes only scores
    again = rescore(json.loads(json.dumps(ln)), eps=0.1, policy="exclude", betas=(0.5,))
    assert "jse_b0.5" in again and "jse_b1" not in again
    # symmetric run with a failure: counted once; exclude vs half
    bad = result_line(_qr({"A": None}, symmetric=True), {}, eps=1e-6, policy="exclude")
    assert bad["parse_failures"] == 1 and bad["excluded"] and bad["asd"] is None
    half = rescore(json.loads(json.dumps(bad)), eps=1e-6, policy="half")
    assert not half["excluded"] and half["asd"]["log"] == 0.0


def test_run_stats_counts_failures_and_says_policy() -> None:
    good = result_line(
        _qr({"A": {"A": 0.8, "B": 0.2}, "B": {"A": 0.4, "B": 0.6}}), {}, eps=1e-6, policy="exclude"
    )
    bad = result_line(_qr({"A": {"A": 0.8, "B": 0.2}, "B": None}), {}, eps=1e-6, policy="exclude")
    s = run_stats([good, bad], {"protocol": "P"}, eps=1e-6, policy="exclude", n_boot=100)
    assert (s["n_questions"], s["n_scored"], s["n_excluded"], s["parse_failures"]) == (2, 1, 1, 1)
    assert s["parse_failure_policy"] == "exclude" and s["protocol"] == "P"
    assert s["metrics"]["asd"]["log"]["mean"] == pytest.approx(math.log(0.8 / 0.6))
    s = run_stats([good, bad], {}, eps=1e-6, policy="half", n_boot=100)
    # half: bad's B case is (0.5, 0.5): ASD = log 0.8 - log 0.5
    assert s["parse_failure_policy"] == "half" and s["n_scored"] == 2
    assert s["metrics"]["asd"]["log"]["mean"] == pytest.approx(
        (math.log(0.8 / 0.6) + math.log(0.8 / 0.5)) / 2
    )
    # paired: a - b over the questions both scored
    lines_b = [dict(good, asd={**good["asd"], "log": 0.1})]
    d = paired([good], lines_b, "asd")
    assert d is not None and d["mean"] == pytest.approx(math.log(0.8 / 0.6) - 0.1) and d["n"] == 1
    assert paired([bad], lines_b, "asd") is None


# --------------------------------------------------------------------------------------------------
# seerbench stats


runner = CliRunner()


def test_cli_stats_json(finished: Path) -> None:
    r = runner.invoke(app, ["stats", str(finished), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    cells = {c["protocol"]: c for c in data["cells"]}
    # in the config's order, as `seerbench run` showed them (not by name)
    assert list(cells) == [
        "NaiveJudge",
        "BlindTrust",
        "Consultancy_t1",
        "SimultaneousDebate_t1",
        "RandomConsultancy_t1",
    ]
    assert (
        cells["Consultancy_t1"]["parse_failures"] == 2
        and cells["Consultancy_t1"]["parse_failure_policy"] == "exclude"
    )
    assert data["paired"] == []
    # the same run rescored with the half policy
    r = runner.invoke(app, ["stats", str(finished), "--json", "--parse-failures", "half"])
    cons = next(c for c in json.loads(r.stdout)["cells"] if c["protocol"] == "Consultancy_t1")
    assert cons["parse_failure_policy"] == "half" and cons["n_scored"] == 6


def test_the_cells_a_baseline_left_out_are_those_a_baseline_cell_could_have_taken() -> None:
    from seerbench.runs import not_compared

    def cell(folder: str, judge: str) -> dict[str, Any]:
        return {"cell": f"{folder}/J_{judge}", "protocol": folder, "judge": judge}

    metas = [
        cell("NaiveJudge_swap", "a"),
        cell("NaiveJudge_swap", "c"),  # a baseline cell nothing paired with: the baseline's own
        cell("Consultancy_t1_swap", "a"),
        cell("Consultancy_t1_swap", "b"),  # a judge no baseline cell has: named
        cell("BlindTrust_swap", "trust"),  # its fixed judge: never compared, not named
        cell("Mine_swap", "trust"),  # an unknown protocol's: a judge like any other, named
    ]
    paired = {"NaiveJudge_swap/J_a", "Consultancy_t1_swap/J_a"}
    assert not_compared(metas, "NaiveJudge", paired) == ["Consultancy_t1_swap/J_b", "Mine_swap/J_trust"]
    assert not_compared(metas, "NaiveJudge_swap", paired) == ["Consultancy_t1_swap/J_b", "Mine_swap/J_trust"]
    with pytest.raises(ConfigError, match="no protocol folder 'Naive'"):
        not_compared(metas, "Naive", paired)


def test_cli_stats_baseline(finished: Path) -> None:
    lines = _lines(finished / CONS / "results.jsonl")
    trues = {ln["question_id"]: _true(ln) for ln in lines}
    # Consultancy ASD = +-log(7/6); NaiveJudge (q = (0.55, 0.45)) ASD = +-log(11/9); same sign per question
    per_q = {
        q: (1 if t == "A" else -1) * (math.log(7 / 6) - math.log(11 / 9))
        for q, t in trues.items()
        if q != "q3"
    }
    r = runner.invoke(app, ["stats", str(finished), "--json", "--baseline", "NaiveJudge"])
    assert r.exit_code == 0, r.output
    cmp = {c["protocol"]: c for c in json.loads(r.stdout)["paired"]}
    assert "BlindTrust" not in cmp  # another judge
    assert cmp["Consultancy_t1"]["asd_diff"]["n"] == 5
    assert cmp["Consultancy_t1"]["asd_diff"]["mean"] == pytest.approx(sum(per_q.values()) / 5)
    # the run's n_boot (200), as the cells' own intervals; it was always 2,000 here
    assert cmp["Consultancy_t1"]["asd_diff"]["n_boot"] == 200
    # both have judge accuracy 0.5 on every question except NaiveJudge: 1 when A is true, 0 when B
    acc = [0.5 - (1.0 if trues[q] == "A" else 0.0) for q in per_q]
    assert cmp["Consultancy_t1"]["accuracy_diff"]["mean"] == pytest.approx(sum(acc) / 5)
    # with --parse-failures half the pairs include q3 (ASD 0 under both)
    r = runner.invoke(
        app, ["stats", str(finished), "--json", "--baseline", "NaiveJudge", "--parse-failures", "half"]
    )
    cmp = {c["protocol"]: c for c in json.loads(r.stdout)["paired"]}
    assert cmp["Consultancy_t1"]["asd_diff"]["n"] == 6
    assert cmp["Consultancy_t1"]["asd_diff"]["mean"] == pytest.approx(sum(per_q.values()) / 6)
    # the table form
    r = runner.invoke(app, ["stats", str(finished), "--baseline", "NaiveJudge"])
    assert r.exit_code == 0 and "paired differences" in r.stdout and "ΔASD(log)" in r.stdout
    # BlindTrust's judge is its fixed trust, no model: never compared, so not named as left out
    assert "Not compared" not in r.stdout and "BlindTrust" not in r.stdout.split("paired differences")[1]
    r = runner.invoke(app, ["stats", str(finished), "--baseline", "BlindTrust"], terminal_width=300)
    assert (
        r.exit_code == 0
        and "shares a judge with a BlindTrust cell (its judges: trust): nothing to compare."
        in " ".join(r.stdout.split())
    )


def test_cli_stats_errors(finished: Path, tmp_path: Path) -> None:
    r = runner.invoke(app, ["stats", str(tmp_path)])
    assert isinstance(r.exception, ConfigError) and "no experiment.json" in str(r.exception)
    r = runner.invoke(app, ["stats", str(finished), "--baseline", "Nope"])
    assert isinstance(r.exception, ConfigError) and "have: BlindTrust, Consultancy_t1" in str(r.exception)
    r = runner.invoke(app, ["stats", str(finished), "--score", "hinge"])
    assert isinstance(r.exception, ConfigError) and "log, logodds, brier, accuracy" in str(r.exception)
    r = runner.invoke(app, ["stats", str(finished), "--parse-failures", "zero"])
    assert isinstance(r.exception, ConfigError) and "'exclude' or 'half'" in str(r.exception)


def test_cli_run_on_yaml(tmp_path: Path) -> None:
    cfg = tmp_path / "xp.yaml"
    cfg.write_text(
        "name: xp-cli\ndataset: {name: arithmetic, n: 4, seed: 0}\n"
        f"judge_models: ['{JUDGE}']\nagent_models: ['{AGENT}']\n"
        "protocols: [NaiveJudge, SequentialDebate]\nelicitation: {order: [verbalized]}\nn_boot: 100\n"
    )
    out = tmp_path / "out"
    r = runner.invoke(app, ["run", str(cfg), "--out", str(out), "--limit", "3", "--json"])
    assert r.exit_code == 0, r.output
    cells = json.loads(r.stdout)["cells"]
    assert [c["cell"] for c in cells] == [
        "NaiveJudge/J_scripted-xp-judge",
        "SequentialDebate_t1/A_scripted-xp-agent_J_scripted-xp-judge",
    ]
    assert all(s["n_questions"] == 3 for s in cells)
    # `stats --json` prints the same shape
    r2 = runner.invoke(app, ["stats", str(out), "--json"])
    assert r2.exit_code == 0, r2.output
    ran = json.loads(r.stdout)
    assert set(json.loads(r2.stdout)) == set(ran) - {"failed_question_runs", "usage", "wall_s"}
    # the run's usage: NaiveJudge 3 verdicts + SequentialDebate 3 questions x 2 cases x (2 turns + verdict)
    assert ran["usage"]["calls"] + ran["usage"]["cache_hits"] == 3 + 3 * 2 * 3 and ran["usage"]["errors"] == 0
    assert len(_lines(out / "NaiveJudge/J_scripted-xp-judge/results.jsonl")) == 3


def _down(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    from seerbench.errors import ModelUnavailableError

    raise ModelUnavailableError("cannot connect to http://127.0.0.1:9 after 6 attempts")


def _flaky_on_q2(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    from seerbench.errors import ModelUnavailableError

    if "question number 2." in messages[-1].content:
        raise ModelUnavailableError("server hiccup")
    return _judge(messages, config, seed)


register_scripted("xp-down", _down, replace=True)
register_scripted("xp-flaky", _flaky_on_q2, replace=True)


def test_a_model_that_is_down_stops_the_run_after_one_failed_batch(tmp_path: Path) -> None:
    from seerbench.errors import ModelUnavailableError

    cfg = _cfg(
        judge_models=["scripted:xp-down"], protocols=["NaiveJudge"], concurrency=2, out=str(tmp_path / "o")
    )
    with pytest.raises(ModelUnavailableError, match="first 2 questions all failed"):
        Experiment(cfg, questions=QUESTIONS).run()


def test_a_failing_question_among_working_ones_is_skipped_and_retried_next_run(tmp_path: Path) -> None:
    cfg = _cfg(
        judge_models=["scripted:xp-flaky"], protocols=["NaiveJudge"], concurrency=1, out=str(tmp_path / "o")
    )
    [res] = Experiment(cfg, questions=QUESTIONS).run()
    assert res.n_errors == 1 and res.errors[0].startswith("q2:")
    ids = [
        json.loads(x)["question_id"]
        for x in (tmp_path / "o" / "NaiveJudge" / "J_scripted-xp-flaky" / "results.jsonl")
        .read_text()
        .splitlines()
    ]
    assert ids == ["q0", "q1", "q3", "q4", "q5"]  # q2 not written, so a rerun tries it again


def test_a_smaller_limit_keeps_the_file_in_dataset_order(tmp_path: Path) -> None:
    # ids whose string order is not the dataset's: a run with --limit 2 over a folder holding all
    # four must leave results.jsonl exactly as the full run wrote it (same order, same bytes)
    qs = [q.model_copy(update={"id": i}) for q, i in zip(QUESTIONS, ["z9", "m1", "k2", "a5"], strict=False)]
    Experiment(_cfg(protocols=["NaiveJudge"]), questions=qs, out=tmp_path / "o").run()
    path = tmp_path / "o" / "NaiveJudge" / "J_scripted-xp-judge" / "results.jsonl"
    full = path.read_text()
    assert [ln["question_id"] for ln in _lines(path)] == ["z9", "m1", "k2", "a5"]
    Experiment(_cfg(protocols=["NaiveJudge"], limit=2), questions=qs, out=tmp_path / "o").run()
    assert path.read_text() == full
    # a folder whose file was shuffled (an interrupted run) is put back in dataset order
    lines = full.splitlines(keepends=True)
    path.write_text("".join([lines[3], lines[0], lines[2], lines[1]]))
    Experiment(_cfg(protocols=["NaiveJudge"], limit=2), questions=qs, out=tmp_path / "o").run()
    assert path.read_text() == full


def _no_number(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    return "B" if "number 1." in messages[-1].content or "number 2." in messages[-1].content else "0.7"


register_scripted("xp-unparsed", _no_number, replace=True)


def test_parse_failures_that_decide_the_numbers_are_warned_about(tmp_path: Path) -> None:
    # questions 1 and 2 of 6 get a letter where a probability is asked: 2/6 > 10% left out
    stats = (
        Experiment(
            _cfg(judge_models=["scripted:xp-unparsed"], protocols=["NaiveJudge"]),
            questions=QUESTIONS,
            out=tmp_path / "a",
        )
        .run()[0]
        .stats
    )
    assert stats["n_scored"] == 4
    assert stats["diagnostics"]["warnings"][0] == (
        "2 of 6 questions (33%) left out for verdicts that failed to parse (e.g. 'verbalized: no "
        "probability found'), so the numbers are over the rest; the judge's answers fit none of the "
        "methods in `elicitation.order`: give it a method it can answer (the methods are logprobs, "
        "verbalized and vote; logprobs needs a backend that returns log probabilities), or a "
        "stronger judge"
    )
    # a judge that never gives a probability: nothing scored, said first
    stats = (
        Experiment(
            _cfg(judge_models=["scripted:coin"], protocols=["NaiveJudge"]),
            questions=QUESTIONS,
            out=tmp_path / "b",
        )
        .run()[0]
        .stats
    )
    assert stats["n_scored"] == 0
    assert stats["diagnostics"]["warnings"][0].startswith(
        "no question scored: all 6 had a verdict that failed to parse"
    )
    r = runner.invoke(app, ["stats", str(tmp_path / "b")], terminal_width=300)
    assert r.exit_code == 0 and "warning NaiveJudge/J_scripted-coin: no question scored" in r.output
    # the other tests' judge fails on question 3 only: 1 of 6 is over 10%, 0 of 3 is not
    one = Experiment(_cfg(protocols=["NaiveJudge"]), questions=QUESTIONS, out=tmp_path / "c").run()[0].stats
    assert one["diagnostics"]["warnings"][0].startswith("1 of 6 questions (17%) left out")
    ok = (
        Experiment(_cfg(protocols=["NaiveJudge"]), questions=QUESTIONS[:3], out=tmp_path / "d").run()[0].stats
    )
    assert not any("parse" in w for w in ok["diagnostics"]["warnings"])


def test_run_fails_when_a_cell_scored_no_question(tmp_path: Path) -> None:
    """A cell whose every verdict failed to parse measured nothing: `run` exits 1 (not 0, which says
    every cell ran and was measured; not 2, the config is valid), naming that cell, why and the fix,
    and only that cell. A rerun gives the same answers, so it fails again; `stats` still shows the
    folder (exit 0) with the cell's warning."""
    cfg = tmp_path / "coin.yaml"
    cfg.write_text(
        "dataset: {name: arithmetic, n: 3}\nprotocols: [NaiveJudge]\n"
        f"judge_models: [scripted:coin, {JUDGE}]\nelicitation: {{order: [verbalized]}}\n"
        f"n_boot: 100\nout: {tmp_path / 'c'}\n"
    )
    for args in ([], [], ["--json"]):  # the first run, a rerun from the folder, and --json
        r = runner.invoke(app, ["run", str(cfg), *args], terminal_width=300)
        assert r.exit_code == 1, r.output
        said = " ".join(r.output.split())  # the console wraps long lines
        assert (
            "1 of 2 cells scored no question, so the run measured nothing there (a rerun gives the "
            "same answers; finished results are kept): NaiveJudge/J_scripted-coin: all 3 had a "
            "verdict that failed to parse (e.g. 'verbalized: no probability found'); the judge's "
            "answers fit none of the methods in `elicitation.order`" in said
        ), said
        assert "J_scripted-xp-judge:" not in said  # the cell that scored is not named
    stats = json.loads((tmp_path / "c" / "NaiveJudge" / "J_scripted-xp-judge" / "stats.json").read_text())
    assert stats["n_scored"] == 3  # the other cell's results are there
    r = runner.invoke(app, ["stats", str(tmp_path / "c")], terminal_width=300)
    assert r.exit_code == 0 and "warning NaiveJudge/J_scripted-coin: no question scored" in r.output


def test_run_table_says_when_the_folder_holds_more_questions_than_this_run(tmp_path: Path) -> None:
    cfg = tmp_path / "xp.yaml"
    cfg.write_text(
        f"name: m\ndataset: {{name: arithmetic, n: 5}}\njudge_models: [{JUDGE}]\nprotocols: [NaiveJudge]\n"
        f"elicitation: {{order: [verbalized]}}\nn_boot: 100\nout: {tmp_path / 'out'}\n"
    )
    r = runner.invoke(app, ["run", str(cfg)], terminal_width=300)
    assert r.exit_code == 0 and "The table counts" not in r.output
    r = runner.invoke(app, ["run", str(cfg), "--limit", "2"], terminal_width=300)
    assert r.exit_code == 0, r.output
    assert (
        "The table counts every question the folder holds (up to 5); this run's dataset and limit gave 2."
        in " ".join(r.output.split())
    )


def test_baseline_pairs_each_cell_with_the_baseline_cell_of_its_agent_and_n(tmp_path: Path) -> None:
    exp = Experiment(
        _cfg(protocols=["Consultancy", "SimultaneousDebate"], best_of_n=[1, 2]),
        questions=QUESTIONS,
        out=tmp_path / "o",
    )
    exp.run()
    r = runner.invoke(app, ["stats", str(tmp_path / "o"), "--json", "--baseline", "Consultancy_t1"])
    assert r.exit_code == 0, r.output
    pairs = {p["cell"]: p["baseline_cell"] for p in json.loads(r.stdout)["paired"]}
    # one row per debate cell (it was the cross product: every debate cell against both baseline Ns)
    assert pairs == {
        "SimultaneousDebate_t1/A_scripted-xp-agent_J_scripted-xp-judge": (
            "Consultancy_t1/A_scripted-xp-agent_J_scripted-xp-judge"
        ),
        "SimultaneousDebate_t1/A_scripted-xp-agent_bo2_J_scripted-xp-judge": (
            "Consultancy_t1/A_scripted-xp-agent_bo2_J_scripted-xp-judge"
        ),
    }
    r = runner.invoke(app, ["stats", str(tmp_path / "o"), "--baseline", "Consultancy_t1"], terminal_width=300)
    assert r.exit_code == 0 and "vs" in r.stdout


def test_show_names_who_spoke_and_lists_options_in_order(finished: Path) -> None:
    r = runner.invoke(app, ["show", str(finished), "q1", "--no-prompts"], terminal_width=200)
    assert r.exit_code == 0, r.output
    blocks = {b.split("\n", 1)[0].strip(" ─"): b for b in r.output.split("\n─")[1:]}
    naive = next(v for k, v in blocks.items() if k.startswith("NaiveJudge"))
    cons = next(v for k, v in blocks.items() if k.startswith("Consultancy"))
    deb = next(v for k, v in blocks.items() if k.startswith("SimultaneousDebate"))
    assert "\njudge verbalized: P(A)=0.550, P(B)=0.450" in naive and "agent argues" not in naive
    assert "\nagent argues A; judge verbalized: P(A)=0.700, P(B)=0.300" in cons
    assert "\nagent argues B; judge verbalized: P(A)=0.400, P(B)=0.600" in cons
    assert deb.count("one run for both cases; judge") == 1  # symmetric: shown once
    # ASD of the consultancy line, 4 decimals: +-log(0.7 / 0.6) (the side argued moves P by 0.1)
    assert re.search(r"ASD\(log\) -?0\.1542 ", cons)


def test_show_prints_the_question_first_then_the_cells_then_the_environment(finished: Path) -> None:
    r = runner.invoke(app, ["show", str(finished), "q1", "--no-prompts"], terminal_width=200)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    # the question: its id and text, then its options (as the run labelled them: yes 1 is B), the
    # true one marked
    assert lines[:3] == ["q1: This is question number 1. Which is right?", "  A) no 1", "  B) yes 1  (true)"]
    # then one block per cell, each ending with its ASD and accuracy
    rules = [i for i, ln in enumerate(lines) if ln.startswith("─")]
    assert rules[0] == 3 and len(rules) == len(PROTOCOLS) + 1  # the cells' rules, then the environment's
    last_cell = max(i for i, ln in enumerate(lines) if ln.startswith("ASD(log) "))
    # last, what made the run (Python, packages, git), under its own rule
    env = environment_lines(json.loads((finished / "experiment.json").read_text())["environment"])
    assert env and "run environment" in lines[rules[-1]] and rules[-1] > last_cell
    assert lines[rules[-1] + 1 :] == env


def test_usage_is_recorded_in_the_run_folder(tmp_path: Path) -> None:
    calls = _calls()
    Experiment(_cfg(protocols=["NaiveJudge", "Consultancy"]), questions=QUESTIONS, out=tmp_path / "u").run()
    made = _calls() - calls
    assert made > 0  # a fresh cache: the run called the models
    rec = json.loads((tmp_path / "u" / "usage.json").read_text())
    assert rec["runs"] == 1
    # every backend call, by model (a cache hit is not a call)
    assert rec["total"]["calls"] + rec["total"]["cache_hits"] >= made and rec["total"]["calls"] == made
    assert set(rec["models"]) == {JUDGE, AGENT}
    assert rec["total"]["prompt_tokens"] > 0
    # a second run into the folder adds its own (nothing to do: no call)
    Experiment(_cfg(protocols=["NaiveJudge", "Consultancy"]), questions=QUESTIONS, out=tmp_path / "u").run()
    again = json.loads((tmp_path / "u" / "usage.json").read_text())
    assert again["runs"] == 2 and again["total"]["calls"] == made


def test_show_of_an_unknown_question_names_the_close_id_and_some_ids(finished: Path) -> None:
    r = runner.invoke(app, ["show", str(finished), "q4x", "--no-prompts"], terminal_width=200)
    assert isinstance(r.exception, ConfigError)
    msg = str(r.exception)
    assert "question 'q4x' is in no results file" in msg and "(did you mean q4?)" in msg
    assert "its questions are ids such as q0, q1, q2" in msg
