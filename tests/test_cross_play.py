"""Cross-play debate grids (issue 25): every ordered pair of different debaters, both answer cases,
results in the ordinary results files, resumable; the Elo section read from the real output."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from seerbench.analysis._elo import Match, elo_section, matches_from_line
from seerbench.analysis.run import summarize_run
from seerbench.errors import ConfigError
from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.experiment._grid import balanced_pairs
from seerbench.models import register_scripted

DEBATERS = ["scripted:coin", "scripted:echo", {"agent": "scripted:coin", "best_of_n": 2}]
N_QUESTIONS = 4


def config(out: Path, **protocol: Any) -> ExperimentConfig:
    return ExperimentConfig.parse(
        {
            "name": "xp",
            "dataset": {"name": "arithmetic", "n": N_QUESTIONS, "seed": 0},
            "out": str(out),
            "judge_models": ["scripted:coin"],
            **({} if "debaters" in protocol else {"agent_models": ["scripted:coin"]}),
            "protocols": [{"name": "SimultaneousDebate", **protocol}],
            "agent_generation": {"temperature": 0.8, "max_tokens": 40, "max_words": 20},
            "n_boot": 100,
        }
    )


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_grid_is_every_ordered_pair(tmp_path: Path) -> None:
    exp = Experiment(config(tmp_path / "r", debaters=DEBATERS))
    specs = exp.grid()
    pairs = [(s.agent_model, s.adversary.label() if s.adversary else None) for s in specs]
    names = ["scripted:coin", "scripted:echo", "scripted:coin_bo2"]
    assert sorted(pairs) == sorted((a, b) for a in names for b in names if a != b)  # 3 * 2 = 6
    keys = {s.key for s in specs}
    assert "SimultaneousDebate_t1/A_scripted-coin_vs_scripted-echo_J_scripted-coin" in keys
    bo2 = [s for s in specs if s.agent_model == "scripted:coin_bo2"]
    assert {s.best_of_n for s in bo2} == {2}
    ident = exp.cell_identity(specs[0])
    assert ident["adversary"] == {"agent": "scripted:echo", "tools": [], "best_of_n": 1}


def test_balanced_pairs_by_hand() -> None:
    # 3 debaters: {0,1} d=1 < 2: 0 first; {0,2} d=2 > 1: 2 first; {1,2} d=1: 1 first
    assert balanced_pairs(3) == [(0, 1), (2, 0), (1, 2)]
    # 4: {0,2} and {1,3} have d = n - d = 2: the one in the first half (0, 1) is the agent;
    # {0,3} d=3 > 1: 3 first. Agent counts 0: 2, 1: 2, 2: 1, 3: 1 (n/2 or n/2 - 1)
    assert balanced_pairs(4) == [(0, 1), (0, 2), (3, 0), (1, 2), (1, 3), (2, 3)]
    assert balanced_pairs(2) == [(0, 1)]
    for n in range(2, 9):
        pairs = balanced_pairs(n)
        assert sorted(tuple(sorted(p)) for p in pairs) == [(i, j) for i in range(n) for j in range(i + 1, n)]
        agents = [sum(a == k for a, _ in pairs) for k in range(n)]
        assert max(agents) - min(agents) == (n + 1) % 2  # equal for odd n, within one for even n


def test_balanced_grid_is_each_pair_once_with_the_agent_role_rotated(tmp_path: Path) -> None:
    exp = Experiment(config(tmp_path / "r", debaters=DEBATERS, schedule="balanced"))
    pairs = [(s.agent_model, s.adversary.label() if s.adversary else None) for s in exp.grid()]
    # 3 debaters: 3 cells (not 6), each debater the agent once: coin-echo, coin_bo2-coin, echo-coin_bo2
    assert pairs == [
        ("scripted:coin", "scripted:echo"),
        ("scripted:coin_bo2", "scripted:coin"),
        ("scripted:echo", "scripted:coin_bo2"),
    ]
    # the all_ordered default: the same cells and the three reversed ones, same folders
    every = Experiment(config(tmp_path / "o", debaters=DEBATERS, schedule="all_ordered")).grid()
    assert len(every) == 6
    assert {s.key for s in exp.grid()} < {s.key for s in every}


def test_balanced_tournament_has_each_debater_on_each_side_equally_often(tmp_path: Path) -> None:
    out = tmp_path / "run"
    Experiment(config(out, debaters=DEBATERS, schedule="balanced")).run()
    sides: dict[tuple[str, str], int] = {}
    pairs: dict[frozenset[str], int] = {}
    for f in sorted(out.glob("*/*/results.jsonl")):
        for ln in lines(f):
            for m in matches_from_line(ln):
                for d, side in ((m.correct, "correct"), (m.incorrect, "incorrect")):
                    sides[(d, side)] = sides.get((d, side), 0) + 1
                key = frozenset((m.correct, m.incorrect))
                pairs[key] = pairs.get(key, 0) + 1
    # 3 cells x 4 questions x 2 answer cases = 24 debates; each debater meets 2 opponents and
    # argues each side once a question against each: 2 * 4 = 8 times correct, 8 times incorrect
    names = ["scripted:coin", "scripted:echo", "scripted:coin_bo2"]
    assert sides == {(d, s): 2 * N_QUESTIONS for d in names for s in ("correct", "incorrect")}
    # each unordered pair once a question on each side: 2 * 4 = 8 debates
    assert sorted(pairs.values()) == [2 * N_QUESTIONS] * 3


def test_self_play_cells_keep_their_identity(tmp_path: Path) -> None:
    # the cross-play keys exist only in cross-play cells: an existing config's cells hash as before
    exp = Experiment(config(tmp_path / "r"))
    (spec,) = exp.grid()
    assert spec.adversary is None
    assert "adversary" not in exp.cell_identity(spec)
    assert spec.pair_dir == "A_scripted-coin_J_scripted-coin"


def test_agent_axes_no_cell_would_use_are_refused(tmp_path: Path) -> None:
    raw = {
        "dataset": {"name": "arithmetic", "n": 2},
        "best_of_n": [1, 4],
        "protocols": [{"name": "SimultaneousDebate", "debaters": ["scripted:coin", "scripted:echo"]}],
    }
    with pytest.raises(ConfigError, match=r"best_of_n would be ignored.*give each debater its own"):
        ExperimentConfig.parse(raw)
    # beside a self-play entry the axis is used, so it is fine
    ExperimentConfig.parse({**raw, "protocols": [*raw["protocols"], "Consultancy"]})


@pytest.mark.parametrize(
    ("protocol", "message"),
    [
        ({"name": "Consultancy", "debaters": ["scripted:coin", "scripted:echo"]}, "no second debater"),
        ({"debaters": ["scripted:coin"]}, "at least two different debaters"),
        ({"debaters": ["scripted:coin", "scripted:coin"]}, "at least two different debaters"),
        ({"debaters": "scripted:coin"}, "give a list"),
        ({"debaters": ["scripted:coin", {"model": "x"}]}, "a debater is a model spec"),
        (
            {"debaters": ["scripted:coin", "scripted:echo"], "schedule": "round_robin"},
            "schedule of protocol SimultaneousDebate: 'round_robin' is not a schedule; give all_ordered",
        ),
        (
            {"debaters": ["scripted:coin", "scripted:echo"], "schedule": ["balanced"]},
            "is not a schedule",
        ),
        ({"schedule": "balanced"}, "only a cross-play entry has a schedule; give it debaters"),
    ],
)
def test_refused_when_read(tmp_path: Path, protocol: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        config(tmp_path / "r", **{"name": "SimultaneousDebate", **protocol})
    assert "\n" not in str(e.value)


def test_misspelt_keys_get_a_did_you_mean_and_the_entry_keys_listed(tmp_path: Path) -> None:
    cfg = config(tmp_path / "r", debaters=DEBATERS[:2], schedules="balanced")
    with pytest.raises(ConfigError) as e:
        Experiment(cfg).grid()
    assert str(e.value) == (
        "protocol SimultaneousDebate: bad keyword (schedules: not a keyword of SimultaneousDebate "
        "(did you mean schedule?)); keywords: num_turns, both_orders, judge_sees_source, "
        "judge_models, agent_models, debaters, schedule"
    )
    with pytest.raises(ConfigError) as e:
        config(tmp_path / "r", debaters=["scripted:coin", {"agent": "scripted:echo", "bestofn": 2}])
    assert str(e.value) == (
        "invalid config: protocols.0: debaters: 'bestofn' is not a key of a debater "
        "(did you mean best_of_n?); keys: agent, tools, best_of_n"
    )


def test_sequential_tournament_is_refused_when_read(tmp_path: Path, finished: Path) -> None:
    seq = {"batch": 2, "stop_when": {"half_width": 0.3}}
    raw = {
        "dataset": {"name": "arithmetic", "n": 4},
        "judge_models": ["scripted:coin"],
        "protocols": [{"name": "SimultaneousDebate", "debaters": ["scripted:coin", "scripted:echo"]}],
        "sequential": seq,
    }
    with pytest.raises(ConfigError) as e:
        ExperimentConfig.parse(raw)
    assert str(e.value) == (
        "invalid config: sequential: SimultaneousDebate is a cross-play tournament (debaters), whose "
        "pairs would stop at different numbers of questions and leave its sides unbalanced; remove "
        "sequential and give the tournament a fixed number of questions (limit: N)"
    )
    # a budget alone stops cells apart too (checked before each cell's batch): refused as well
    with pytest.raises(ConfigError, match="cross-play tournament"):
        ExperimentConfig.parse({**raw, "sequential": {"batch": 2, "budget": {"calls": 100}}})
    # a folder recorded before the refusal still reads back (to look at, not to run)
    copy = tmp_path / "old"
    shutil.copytree(finished, copy)
    meta = json.loads((copy / "experiment.json").read_text())
    meta["config"]["sequential"] = seq
    (copy / "experiment.json").write_text(json.dumps(meta))
    assert ExperimentConfig.from_run(copy).sequential is not None


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("xp") / "run"
    Experiment(config(out, debaters=DEBATERS[:2])).run()
    return out


def test_lines_name_both_debaters_and_both_sides(finished: Path) -> None:
    files = sorted(finished.glob("*/*/results.jsonl"))
    assert len(files) == 2  # coin vs echo and echo vs coin
    seen: dict[tuple[str, str], int] = {}
    for f in files:
        ls = lines(f)
        assert len(ls) == N_QUESTIONS
        for ln in ls:
            assert {ln["agent"], ln["adversary"]} == {"scripted:coin", "scripted:echo"}
            assert len(ln["answer_cases"]) == 2 and not ln["symmetric"]
            for c in ln["answer_cases"]:
                roles = {t["answer_case"]: t["role"] for t in c["case_probs"]["transcript"]}
                assert roles[c["short"]] == "agent"  # the agent argued this case, the adversary the other
            for m in matches_from_line(ln):
                seen[(m.correct, m.incorrect)] = seen.get((m.correct, m.incorrect), 0) + 1
    # each debater argued each side of every question against the other, once from each cell
    assert seen == {
        ("scripted:coin", "scripted:echo"): 2 * N_QUESTIONS,
        ("scripted:echo", "scripted:coin"): 2 * N_QUESTIONS,
    }


def test_second_run_adds_nothing(finished: Path) -> None:
    before = {f: f.read_text() for f in finished.glob("*/*/results.jsonl")}
    Experiment(config(finished, debaters=DEBATERS[:2])).run()
    assert {f: f.read_text() for f in finished.glob("*/*/results.jsonl")} == before


def test_stats_has_the_elo_section(finished: Path) -> None:
    s = summarize_run(finished)
    (t,) = s["elo"]["tournaments"]
    assert t["protocol"] == "SimultaneousDebate_t1" and t["judge"] == "scripted:coin"
    assert sorted(t["debaters"]) == ["scripted:coin", "scripted:echo"]
    assert t["n_questions"] == N_QUESTIONS and t["n_matches"] == 4 * N_QUESTIONS
    agg = [r["aggregate"]["estimate"] for r in t["ratings"]]
    assert agg[0] == pytest.approx(-agg[1])  # two debaters: centred on 0
    assert {c.get("adversary") for c in s["cells"]} == {"scripted:coin", "scripted:echo"}
    for r in t["ratings"]:  # the seed's comparison: ASD/ASE of the debater as agent beside its Elo
        (cell,) = [c for c in s["cells"] if c["agent"] == r["debater"]]  # one opponent: one cell
        assert r["asd"] == pytest.approx(cell["metrics"]["asd"]["log"]["mean"])
        assert r["ase"] == pytest.approx(cell["metrics"]["ase_b1"]["log"]["mean"])
    assert t["trend"]["estimate"] is None or math.isnan(t["trend"]["estimate"])  # two debaters: no slope


def test_stats_prints_the_elo_table_saying_what_the_aggregate_is(
    finished: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_cli_global import run_main

    code, out, err = run_main(["stats", str(finished)], capsys, monkeypatch)
    assert code == 0, err
    flat = " ".join(out.split())
    assert "Elo of the debaters: SimultaneousDebate_t1" in flat
    assert "aggregate: a separate fit with one rating per debater over both sides (Khan et al.'s)" in flat


def test_a_saved_cross_play_config_reads_back(finished: Path) -> None:
    # experiment.json holds every key, the defaulted agent axes too (agent_models: [local]);
    # reading it back must not trip the refusal of agent axes that no cell would use
    saved = json.loads((finished / "experiment.json").read_text())["config"]
    assert saved["agent_models"] == ["local"] and saved["best_of_n"] == [1]
    cfg = ExperimentConfig.from_run(finished)
    assert cfg.fingerprint() == config(finished, debaters=DEBATERS[:2]).fingerprint()
    # what the Ray executor sends its workers: the full dump, parsed again
    ExperimentConfig.parse(cfg.model_dump(mode="json"))
    # a value other than the default is still refused, saved or not
    with pytest.raises(ConfigError, match="agent_models would be ignored"):
        ExperimentConfig.parse({**saved, "agent_models": ["scripted:echo"]})


def test_show_works_on_a_cross_play_run(
    finished: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_cli_global import run_main

    qid = lines(next(finished.glob("*/*/results.jsonl")))[0]["question_id"]
    code, out, err = run_main(["show", str(finished), qid, "--json", "--allow-calls"], capsys, monkeypatch)
    assert code == 0, err
    shown = json.loads(out)
    assert sorted(c["cell"] for c in shown) == [
        "SimultaneousDebate_t1/A_scripted-coin_vs_scripted-echo_J_scripted-coin",
        "SimultaneousDebate_t1/A_scripted-echo_vs_scripted-coin_J_scripted-coin",
    ]
    for c in shown:
        # the prompts, rebuilt (--allow-calls: a scripted model called again answers as in the run):
        # one turn, two answer cases, two debaters: 4 arguments
        agents = sorted(p["model"] for p in c["prompts"] if p["role"] == "agent")
        assert agents == ["scripted:coin", "scripted:coin", "scripted:echo", "scripted:echo"]
    code, out, err = run_main(["show", str(finished), qid, "--no-prompts"], capsys, monkeypatch)
    assert code == 0, err
    assert "A_scripted-echo_vs_scripted-coin_J_scripted-coin" in out


def test_one_question_tournament_prints_no_zero_width_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_cli_global import run_main

    out = tmp_path / "one"
    Experiment(config(out, debaters=DEBATERS, schedule="balanced").with_updates(limit=1)).run()
    code, text, err = run_main(["stats", str(out)], capsys, monkeypatch)
    assert code == 0, err
    flat = " ".join(text.split())
    # neither the cell table's ASD nor an Elo rating nor the slope has a [x, x] interval
    assert not re.search(r"\[(-?[\d.]+), \1\]", flat), flat
    assert "(1 question, 6 debates, no intervals from one question)" in flat
    assert re.search(r"slope -?[\d.]+; one cluster resampled: no interval \(Khan", flat)
    code, text, err = run_main(["stats", str(out), "--json"], capsys, monkeypatch)
    assert code == 0, err
    rec = json.loads(text)
    for c in rec["cells"]:
        asd = c["metrics"]["asd"]["log"]
        assert asd["n"] == 1 and asd["ci_low"] is None and asd["ci_high"] is None
        assert asd["note"] == "one value: no interval"
    (t,) = rec["elo"]["tournaments"]
    for r in t["ratings"]:
        agg = r["aggregate"]
        assert agg["ci_low"] is None and agg["note"] == "one cluster resampled: no interval"
    assert t["trend"]["ci_low"] is None and t["trend"]["ci_high"] is None


def test_plan_with_the_tournament_as_baseline_says_why_and_exits_2(
    finished: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_cli_global import one_line_error, run_main

    why = (
        "every cell of this run is a SimultaneousDebate_t1 cell, so there is no other cell to compare "
        "with one (a cross-play tournament compares its debaters in the Elo table of seerbench stats); "
        "run other protocols beside it to compare protocols"
    )
    args = ["plan", str(finished), "--baseline", "SimultaneousDebate_t1", "--effect", "0.1"]
    code, _, err = run_main(args, capsys, monkeypatch)
    assert code == 2 and one_line_error(err) == f"error: nothing to plan: {why}"
    # with --half-width there is a plan (per cell); the comparison's absence is said, not an error
    code, out, err = run_main([*args, "--half-width", "0.2"], capsys, monkeypatch)
    assert code == 0, err
    assert why in " ".join(out.split())
    args = ["stats", str(finished), "--baseline", "SimultaneousDebate"]
    code, out, err = run_main(args, capsys, monkeypatch)
    assert code == 0 and f"No paired differences: {why}." in " ".join(out.split())


def test_self_play_run_has_no_elo(tmp_path: Path) -> None:
    out = tmp_path / "r"
    Experiment(config(out)).run()
    assert elo_section(out) == {}
    assert "elo" not in summarize_run(out)


def test_matches_from_a_line_by_hand() -> None:
    def case(short: str, value: float, p_a: float | None) -> dict[str, Any]:
        probs = None if p_a is None else {"A": p_a, "B": 1 - p_a}
        return {"short": short, "value": value, "case_probs": {"probabilities": probs}}

    line: dict[str, Any] = {
        "question_id": "q",
        "agent": "x",
        "adversary": "y",
        "excluded": False,
        "answer_cases": [case("A", 0.0, 0.3), case("B", 1.0, 0.25)],  # B is true
    }
    # x argued A (false) against y: y correct, P(B) = 0.7; x argued B (true): P(B) = 0.75
    assert matches_from_line(line) == [Match("q", "y", "x", 0.7), Match("q", "x", "y", 0.75)]
    line["answer_cases"][0] = case("A", 0.0, None)  # a parse failure: that debate is not rated
    assert matches_from_line(line) == [Match("q", "x", "y", 0.75)]
    assert matches_from_line({**line, "adversary": None}) == []
    assert matches_from_line({**line, "excluded": True}) == []


def test_report_has_the_elo_section(
    finished: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_cli_global import run_main

    out = finished.parent / "report.html"
    code, _, err = run_main(["report", str(finished), "--out", str(out)], capsys, monkeypatch)
    assert code == 0, err
    html = out.read_text()
    assert 'id="elo"' in html
    # the seed's comparison figure: Elo on the left, ASD/ASE on the right, one point per debater
    figure = html[html.index('<div class="fig" data-figure="elo">') :]
    figure = figure[: figure.index("</svg>")]
    assert 'aria-label="elo-0-0"' in figure
    assert "correct − incorrect Elo" in figure and "ASD and ASE (seed 003) as the agent" in figure
    assert "slope n/a (fewer than three debaters)" in figure  # two debaters: no line
    assert figure.count(">scripted:coin<") == 2 and figure.count(">scripted:echo<") == 2  # both panels
    (t,) = summarize_run(finished)["elo"]["tournaments"]
    for r in t["ratings"]:
        row = html[html.index(f'data-debater="{r["debater"]}"') :]
        v = float(row.split('data-k="aggregate_estimate" data-v="')[1].split('"')[0])
        assert v == pytest.approx(r["aggregate"]["estimate"])


# ---- a tournament of scripted debaters with known strengths, through the whole grid -------------
POWER = {"strong": 200, "middle": 100, "weak": 0}  # Elo points


def _power_judge(messages: Any, config: Any, seed: int | None) -> str:
    """P(A) from the Elo model on the powers the two debaters state: no side is favoured."""
    text = messages[-1].content
    if "How likely" not in text:
        return "A"
    pw = {m[0]: int(m[1]) for m in re.findall(r"\(arguing for ([A-Z])\): power=(-?\d+)", text)}
    return f"{1 / (1 + 10 ** (-(pw['A'] - pw['B']) / 400)):.6f}"


register_scripted("tour-judge", _power_judge, replace=True)


def _stating(power: int) -> Any:
    def responder(messages: Any, config: Any, seed: int | None) -> str:
        return f"power={power}"

    return responder


for _name, _p in POWER.items():
    register_scripted(f"tour-{_name}", _stating(_p), replace=True)


def test_scripted_tournament_recovers_the_known_strengths(tmp_path: Path) -> None:
    cfg = ExperimentConfig.parse(
        {
            "name": "tour",
            "dataset": {"name": "arithmetic", "n": 5, "seed": 0},
            "out": str(tmp_path / "run"),
            "judge_models": ["scripted:tour-judge"],
            "protocols": [{"name": "SequentialDebate", "debaters": [f"scripted:tour-{n}" for n in POWER]}],
            "n_boot": 100,
        }
    )
    Experiment(cfg).run()
    (t,) = summarize_run(tmp_path / "run")["elo"]["tournaments"]
    got = {r["debater"].removeprefix("scripted:tour-"): r for r in t["ratings"]}
    # powers 200, 100, 0 around their mean 100: no side is favoured, so the one-rating aggregate fit
    # is exact, 100, 0, -100, and the correct-side and incorrect-side ratings agree and their
    # difference is 0 (up to the weak ridge)
    for name, want in (("strong", 100), ("middle", 0), ("weak", -100)):
        assert got[name]["aggregate"]["estimate"] == pytest.approx(want, abs=3)
        assert got[name]["difference"]["estimate"] == pytest.approx(0, abs=3)
    assert t["win_rate"][0][2] == pytest.approx(1 / (1 + 10 ** (-200 / 400)), abs=1e-4)  # strong vs weak


def test_elo_figure_draws_the_trend_from_the_record() -> None:
    pytest.importorskip("matplotlib")
    from seerbench.report._figures import elo_plot

    def iv(e: float, half: float = 30.0) -> dict[str, float]:
        return {"estimate": e, "ci_low": e - half, "ci_high": e + half}

    # a hand record: aggregate (100, 0, -50), difference (400, 200, 100): slope 2
    record = {
        "protocol": "SequentialDebate_t1",
        "judge": "j",
        "score": "log",
        "trend": {"estimate": 2.0, "ci_low": 1.25, "ci_high": 2.75},
        "ratings": [
            {"debater": d, "aggregate": iv(a), "difference": iv(x), "asd": asd, "ase": -0.5}
            for d, a, x, asd in (("A", 100, 400, 0.2), ("B", 0, 200, 0.1), ("C", -50, 100, None))
        ],
    }
    svg = elo_plot(record, name="elo-t")
    assert "slope 2.00 [1.25, 2.75]" in svg
    assert "SequentialDebate_t1, judge j" in svg
    assert svg.count(">A<") == 2 and svg.count(">C<") == 1  # C has no ASD: only its Elo point
