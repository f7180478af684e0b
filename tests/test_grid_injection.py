"""Issue 24 (grid without half-built objects, constructor injection of lists, a protocol's own
judges) and issue 22 (a protocol's own model comes from the factory): each hazard reproduced.

- a protocol whose constructor touches its judge crashed ``--dry-run`` (the grid built every
  protocol with ``judge=None, agent=object()`` to learn its folder name);
- a judge panel (``judges: list[Judge]``) received raw strings and crashed mid-run;
- a referee model opened inside a protocol escaped ``--dry-run`` (real calls, not counted) and
  ``show --prompts`` (requests missing), and a typo in its spec was found after the folder existed.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from seerbench.cli import app, main
from seerbench.errors import ConfigError
from seerbench.experiment import Experiment, ExperimentConfig

runner = CliRunner()

PLUGIN = '''
from seerbench import AgentContext, CaseRun, Judge, Model, OversightProtocol, Turn, Verdict
from seerbench import register_judge, register_protocol
from seerbench.models import register_scripted

CALLS = {{"n": 0}}


def _counted(messages, config, seed):
    CALLS["n"] += 1
    return "A: 90%, B: 10%"


def _doubtful(messages, config, seed):
    CALLS["n"] += 1
    return "A: 30%, B: 70%"


register_scripted("counted{tag}", _counted)
register_scripted("doubtful{tag}", _doubtful)


class Plain:
    """An agent without a model: one fixed turn."""
    name = "plain"

    async def __call__(self, question, answer_case, visible, context=None):
        return Turn(role="agent", speaker="plain", content=f"It is {{answer_case}}.", answer_case=answer_case)


@register_protocol("Touchy{tag}")
class Touchy(OversightProtocol):
    """Reads its judge's and agent's names in the constructor."""
    def __init__(self, judge, agent=None, **kw):
        super().__init__(judge, agent, **kw)
        self.label = f"{{judge.name}} vs {{agent.name}}"

    async def run(self, question, answer_case):
        turn = await self.argue(self.agent, question, answer_case, [], AgentContext("consultancy", 1, 1, speaker="c"))
        verdict = await self.judge.judge(question, [turn], argued=answer_case)
        return CaseRun(answer_case, self.transcript(question, [turn]), verdict)


@register_protocol("Refereed{tag}")
class Refereed(OversightProtocol):
    """A consultancy whose referee model comments on the turn before the judge decides."""
    keywords = ("referee",)

    def __init__(self, judge, agent=None, *, referee: Model, **kw):
        super().__init__(judge, agent, **kw)
        self.referee = referee

    async def run(self, question, answer_case):
        turn = await self.argue(self.agent, question, answer_case, [], AgentContext("consultancy", 1, 1, speaker="c"))
        note = await self.referee.generate(f"Referee: {{question.text}} Is this fair? {{turn.content}}")
        turns = [turn, Turn(role="note", speaker="referee", content=note.text)]
        verdict = await self.judge.judge(question, turns, argued=answer_case)
        return CaseRun(answer_case, self.transcript(question, turns), verdict)


@register_judge("Panel{tag}")
class Panel:
    """The mean of its judges' probabilities."""
    def __init__(self, judges: list[Judge]) -> None:
        self.judges = judges
        self.name = "panel(" + ",".join(j.name for j in judges) + ")"

    async def judge(self, question, visible, *, with_source=False, argued=None):
        vs = [await j.judge(question, visible, with_source=with_source) for j in self.judges]
        probs = {{s: sum(v.probabilities[s] for v in vs) / len(vs) for s in question.shorts}}
        return Verdict(probabilities=probs, method="verbalized", raw="panel")
'''  # noqa: E501


def _setup(tmp_path: Path, tag: str, **cfg: Any) -> Path:
    (tmp_path / f"plug_{tag}.py").write_text(textwrap.dedent(PLUGIN.format(tag=tag)))
    raw = {
        "name": "inj",
        "plugins": [f"plug_{tag}.py"],
        "dataset": {"name": "arithmetic", "n": 3, "seed": 0},
        "judge_models": [f"scripted:counted{tag}"],
        "agent_models": [{"class": f"plug_{tag}.py:Plain"}],
        "elicitation": {"order": ["verbalized"]},
        "n_boot": 100,
        "out": str(tmp_path / "out"),
        **cfg,
    }
    p = tmp_path / "xp.yaml"
    p.write_text(yaml.safe_dump(raw))
    return p


def _calls(tag: str) -> int:
    """Calls the plugin's scripted models answered (the plugin module's counter)."""
    from seerbench.models import RESPONDERS

    return int(RESPONDERS.lookup(f"counted{tag}").__globals__["CALLS"]["n"])


def test_a_constructor_that_touches_its_judge_runs_under_dry_run(tmp_path: Path) -> None:
    cfg = _setup(tmp_path, "t", protocols=["Touchyt"])
    r = runner.invoke(app, ["run", str(cfg), "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    cells = json.loads(r.stdout)["cells"]
    # 3 questions x 2 answer cases x 1 judge call (verbalized); the agent has no model
    assert [(c["cell"], c["calls"]) for c in cells] == [("Touchyt/A_Plain_J_scripted-countedt", 6)]
    assert _calls("t") == 0 and not (tmp_path / "out").exists()


def test_a_judge_panel_gets_built_judges(tmp_path: Path) -> None:
    panel = {"class": "Panelp", "judges": ["scripted:countedp", "scripted:doubtfulp"]}
    cfg = _setup(tmp_path, "p", judge_models=[panel], protocols=["NaiveJudge"])
    r = runner.invoke(app, ["run", str(cfg), "--json"])
    assert r.exit_code == 0, r.output
    lines = [
        json.loads(ln)
        for ln in (tmp_path / "out" / "NaiveJudge" / "J_Panelp-judges-scripted-countedp-scripted-doubtfulp")
        .joinpath("results.jsonl")
        .read_text()
        .splitlines()
    ]
    assert len(lines) == 3
    # (0.9 + 0.3) / 2 = 0.6 for A and (0.1 + 0.7) / 2 = 0.4 for B, on every question
    for ln in lines:
        probs = ln["answer_cases"][0]["case_probs"]["probabilities"]
        assert probs == pytest.approx({"A": 0.6, "B": 0.4})
    # 3 questions, NaiveJudge is symmetric (one judgment per question), two judges in the panel
    assert _calls("p") == 6


def test_a_protocol_list_keyword_is_one_value_and_a_list_of_lists_an_axis(tmp_path: Path) -> None:
    panel = {"class": "Panelq", "judges": ["scripted:countedq", "scripted:doubtfulq"]}
    cfg = ExperimentConfig.from_yaml(_setup(tmp_path, "q", judge_models=[panel], protocols=["NaiveJudge"]))
    (spec,) = Experiment(cfg).grid()
    assert spec.judge_entry == panel  # the list inside a class entry is the argument, not an axis
    with pytest.raises(ConfigError, match=r"judge Panelq: argument judges is a list of judges: give a list"):
        Experiment(
            cfg.with_updates(judge_models=[{"class": "Panelq", "judges": "scripted:countedq"}])
        ).check()


def test_a_referee_model_is_counted_by_dry_run_and_replayed_by_show(tmp_path: Path) -> None:
    cfg = _setup(tmp_path, "r", protocols=[{"name": "Refereedr", "referee": "scripted:doubtfulr"}])
    r = runner.invoke(app, ["run", str(cfg), "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    (cell,) = json.loads(r.stdout)["cells"]
    # per question: 2 answer cases x (1 referee call + 1 judge call) = 4; 3 questions: 12
    assert cell["calls"] == 12
    assert _calls("r") == 0 and not (tmp_path / "out").exists()

    r = runner.invoke(app, ["run", str(cfg), "--json"])
    assert r.exit_code == 0, r.output
    assert _calls("r") == 12
    key = cell["cell"]
    qid = json.loads((tmp_path / "out" / key / "results.jsonl").read_text().splitlines()[0])["question_id"]
    r = runner.invoke(app, ["show", str(tmp_path / "out"), qid, "--cell", key, "--json"])
    assert r.exit_code == 0, r.output
    (rec,) = json.loads(r.stdout)
    prompts = rec["prompts"]
    assert sorted(p["role"] for p in prompts) == ["judge", "judge", "referee", "referee"]
    assert _calls("r") == 12  # from the cache: no call
    # the referee is part of the cell's identity
    ident = json.loads((tmp_path / "out" / key / "cell.json").read_text())["identity"]
    assert ident["keywords"]["referee"] == "scripted:doubtfulr"


def test_a_misspelt_referee_spec_is_refused_when_the_config_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _setup(tmp_path, "s", protocols=[{"name": "Refereeds", "referee": "scripted:doubtfl"}])
    monkeypatch.setattr(sys, "argv", ["seerbench", "run", str(cfg)])
    with pytest.raises(SystemExit) as e:
        main()
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(  # the file and the key, as a misspelt protocol is named
        f"error: invalid {cfg}: protocols.0: referee of protocol Refereeds: "
        "unknown scripted responder 'doubtfl'"
    )
    assert not (tmp_path / "out").exists() and _calls("s") == 0


def test_a_protocol_entry_pairs_with_its_own_judges(tmp_path: Path) -> None:
    cfg = ExperimentConfig.parse(
        {
            "dataset": "arithmetic",
            "judge_models": ["scripted:coin"],
            "agent_models": ["scripted:coin"],
            "protocols": ["NaiveJudge", {"name": "Consultancy", "judge_models": ["scripted:echo"]}],
        }
    )
    assert [s.key for s in Experiment(cfg).grid()] == [
        "NaiveJudge/J_scripted-coin",
        "Consultancy_t1/A_scripted-coin_J_scripted-echo",
    ]
    with pytest.raises(ConfigError, match="judge_models of protocol Consultancy: give a non-empty list"):
        ExperimentConfig.parse(
            {"dataset": "arithmetic", "protocols": [{"name": "Consultancy", "judge_models": []}]}
        )


OLDER = """
from seerbench import AgentContext, CaseRun, OversightProtocol, register_protocol


@register_protocol("OldStyle{tag}")
class OldStyle(OversightProtocol):
    keywords = ("style",)

    def __init__(self, judge, agent=None, *, style="plain", **kw):
        super().__init__(judge, agent, **kw)
        self.style = style
        self.label = judge.name  # touches its judge

    def _name_parts(self):
        return [self.style.upper()]

    async def run(self, question, answer_case):
        raise NotImplementedError


class Exploding:
    def __init__(self) -> None:
        raise RuntimeError("built")
"""


def test_the_grid_builds_nothing_and_an_older_name_hook_still_names_the_folder(tmp_path: Path) -> None:
    (tmp_path / "old_o.py").write_text(textwrap.dedent(OLDER.format(tag="o")))
    base = {"plugins": ["old_o.py"], "dataset": "arithmetic", "agent_models": ["scripted:coin"]}
    # a judge whose constructor raises: naming the cells builds no judge
    cfg = ExperimentConfig.parse(
        {**base, "judge_models": [{"class": "old_o.py:Exploding"}], "protocols": ["Consultancy"]},
        base_dir=tmp_path,
    )
    assert [s.key for s in Experiment(cfg).grid()] == ["Consultancy_t1/A_scripted-coin_J_Exploding"]
    # an instance _name_parts (before name_parts): built whole on stand-in models to read it
    cfg = ExperimentConfig.parse(
        {
            **base,
            "judge_models": ["scripted:coin"],
            "protocols": [{"name": "OldStyleo", "style": ["a", "b"]}],
        },
        base_dir=tmp_path,
    )
    assert [s.key for s in Experiment(cfg).grid()] == [
        "OldStyleo_A/A_scripted-coin_J_scripted-coin",
        "OldStyleo_B/A_scripted-coin_J_scripted-coin",
    ]
