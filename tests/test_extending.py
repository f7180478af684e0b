"""Issue 12: a library researchers can extend. User protocols, judges, agents, backends and
datasets in plugin modules outside the package, loaded by configs; capabilities declared and
checked when the config is read; the public API. (docs/extending.md's example runs end to end in
tests/test_docs.py.)"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import seerbench
from seerbench.cli import app
from seerbench.errors import ConfigError, SeerbenchError, UnknownModelError
from seerbench.experiment import Experiment, ExperimentConfig

runner = CliRunner()

PLUGIN = '''
from seerbench import AgentContext, CaseRun, OversightProtocol, Turn, register_protocol

@register_protocol("TwoVoices{tag}")
class TwoVoices(OversightProtocol):
    """The agent speaks twice; the judge decides."""
    async def run(self, question, answer_case):
        turns = []
        for r in (1, 2):
            turns.append(await self.argue(self.agent, question, answer_case, turns, AgentContext("consultancy", r, 2, speaker="c")))
        verdict = await self.judge.judge(question, turns, argued=answer_case)
        return CaseRun(answer_case, self.transcript(question, turns), verdict)

@register_protocol("Styled{tag}")
class Styled(TwoVoices):
    """A keyword the protocol's folder name does not show."""
    keywords = ("style",)

    def __init__(self, *args, style="plain", **kwargs):
        super().__init__(*args, **kwargs)
        self.style = style

class HalfJudge:
    """Always 1/2 each: a judge without a model."""
    def __init__(self, label: str = "half") -> None:
        self.name = label

    async def judge(self, question, visible, *, with_source=False, argued=None):
        from seerbench import Verdict
        return Verdict(probabilities={{s: 1 / len(question.shorts) for s in question.shorts}}, method="verbalized", raw="")

class NotAJudge:
    name = "nope"
'''  # noqa: E501


def _setup(tmp_path: Path, tag: str, **cfg: Any) -> Path:
    """A config folder holding a plugin file in a subfolder and a config naming it by path."""
    (tmp_path / "lib").mkdir(parents=True, exist_ok=True)
    (tmp_path / "lib" / f"plug_{tag}.py").write_text(textwrap.dedent(PLUGIN.format(tag=tag)))
    raw = {
        "name": "ext",
        "plugins": [f"lib/plug_{tag}.py"],
        "dataset": {"name": "arithmetic", "n": 3, "seed": 0},
        "judge_models": ["scripted:coin"],
        "agent_models": ["scripted:coin"],
        "protocols": [f"TwoVoices{tag}"],
        "elicitation": {"order": ["vote"], "vote_samples": 1},  # the coin answers a letter: one vote
        "n_boot": 100,
        "out": str(tmp_path / "out"),
        **cfg,
    }
    p = tmp_path / "xp.yaml"
    p.write_text(yaml.safe_dump(raw))
    return p


def test_a_plugin_protocol_and_judge_run_from_the_cli(tmp_path: Path) -> None:
    cfg = _setup(
        tmp_path, "a", judge_models=["scripted:coin", {"class": "lib/plug_a.py:HalfJudge", "label": "h"}]
    )
    r = runner.invoke(app, ["run", str(cfg), "--json"])
    assert r.exit_code == 0, r.output
    cells = {c["cell"]: c for c in json.loads(r.stdout)["cells"]}
    assert set(cells) == {
        "TwoVoicesa/A_scripted-coin_J_scripted-coin",
        "TwoVoicesa/A_scripted-coin_J_HalfJudge-label-h",
    }
    assert cells["TwoVoicesa/A_scripted-coin_J_scripted-coin"]["n_scored"] == 3  # the coin's votes score
    half = cells["TwoVoicesa/A_scripted-coin_J_HalfJudge-label-h"]
    # P = 1/2 for both options whatever was argued: ASD = log(1/2) - log(1/2) = 0, accuracy 1/2 (a tie)
    assert half["metrics"]["asd"]["log"]["mean"] == 0.0 and half["metrics"]["judge_accuracy"]["mean"] == 0.5
    line = json.loads(
        (tmp_path / "out" / "TwoVoicesa" / "A_scripted-coin_J_HalfJudge-label-h" / "results.jsonl")
        .read_text()
        .splitlines()[0]
    )
    assert [t["speaker"] for t in line["answer_cases"][0]["case_probs"]["transcript"]] == ["c", "c"]


def test_a_plugin_keyword_that_the_folder_name_does_not_show_is_added_to_it(tmp_path: Path) -> None:
    cfg = _setup(tmp_path, "k", protocols=[{"name": "Styledk", "style": ["plain", "loud voice"]}, "Styledk"])
    r = runner.invoke(app, ["run", str(cfg), "--json"])
    assert r.exit_code == 0, r.output
    assert {c["cell"] for c in json.loads(r.stdout)["cells"]} == {
        "Styledk_style-loud-voice/A_scripted-coin_J_scripted-coin",  # a grid over style: named by it
        "Styledk_style-plain/A_scripted-coin_J_scripted-coin",
        "Styledk/A_scripted-coin_J_scripted-coin",  # one style in its entry: the name stays short
    }
    # the same protocol twice with the same keywords is still a duplicate
    cfg = _setup(tmp_path, "k", protocols=["Styledk", {"name": "Styledk", "style": "plain"}])
    with pytest.raises(ConfigError, match=r"duplicate cells: \['Styledk/A_scripted-coin_J_scripted-coin'\]"):
        Experiment(ExperimentConfig.from_yaml(cfg)).check()


def test_editing_a_plugin_is_a_config_change(tmp_path: Path) -> None:
    cfg = _setup(tmp_path, "b")
    Experiment(ExperimentConfig.from_yaml(cfg)).run()
    ident = json.loads(
        (tmp_path / "out" / "TwoVoicesb" / "A_scripted-coin_J_scripted-coin" / "cell.json").read_text()
    )["identity"]
    assert list(ident["code"]) == [next(k for k in ident["code"] if k.endswith(":TwoVoices"))]
    plugin = tmp_path / "lib" / "plug_b.py"
    plugin.write_text(plugin.read_text() + "\n# a change to the protocol's module\n")
    with pytest.raises(
        ConfigError, match=r"differs in: plug_b.py \(code of seerbench_plugin_plug_b_\w+:TwoVoices\)"
    ):
        Experiment(ExperimentConfig.from_yaml(cfg)).run()


@pytest.mark.parametrize(
    "tag, entry, needle",
    [
        (
            "c1",
            {"class": "lib/plug_c1.py:HalfJudge", "colour": "red"},
            "unknown argument(s) colour; it takes: label",
        ),
        ("c2", {"class": "lib/plug_c2.py:NotAJudge"}, "is not a judge"),
        ("c3", {"class": "lib/plug_c3.py:Missing"}, "has no 'Missing'"),
        ("c4", {"class": "NoSuchJudge"}, "unknown judge 'NoSuchJudge'; known judges: ModelJudge, TrustJudge"),
    ],
)
def test_bad_class_entries_are_refused_when_the_config_is_read(
    tmp_path: Path, tag: str, entry: dict[str, Any], needle: str
) -> None:
    cfg = _setup(tmp_path, tag, judge_models=[entry])
    r = runner.invoke(app, ["run", str(cfg)])
    assert isinstance(r.exception, SeerbenchError) and needle in str(r.exception), r.output
    assert not (tmp_path / "out").exists()


def test_a_missing_plugin_is_one_line(tmp_path: Path) -> None:
    cfg = _setup(tmp_path, "d", plugins=["no_such_plugin_module"])
    r = runner.invoke(app, ["run", str(cfg)])
    assert isinstance(r.exception, ConfigError) and str(r.exception).startswith(
        "plugin module 'no_such_plugin_module' not found"
    )
    assert "\n" not in str(r.exception)


def test_two_plugin_files_registering_one_name_conflict(tmp_path: Path) -> None:
    _setup(tmp_path / "one", "dup")
    cfg = _setup(tmp_path / "two", "dup")  # another file, the same protocol name
    Experiment(ExperimentConfig.from_yaml(tmp_path / "one" / "xp.yaml")).grid()
    with pytest.raises(ConfigError, match="'TwoVoicesdup' is already registered"):
        ExperimentConfig.from_yaml(cfg)


def test_open_consultancy_runs_with_best_of_n(tmp_path: Path) -> None:
    # 0.1 aborted the whole experiment: "OpenConsultancy needs a model agent..." (BestOfNAgent had no model)
    cfg = ExperimentConfig.parse(
        {
            "name": "oc",
            "dataset": {"name": "arithmetic", "n": 2, "seed": 0},
            "judge_models": ["scripted:coin"],
            "agent_models": ["scripted:coin"],
            "best_of_n": [2],
            "protocols": ["OpenConsultancy"],
            "elicitation": {"order": ["vote"], "vote_samples": 1},
            "n_boot": 100,
            "out": str(tmp_path / "o"),
        }
    )
    [res] = Experiment(cfg).run()
    assert (
        res.spec.key == "OpenConsultancy_t1/A_scripted-coin_bo2_J_scripted-coin"
        and res.n_done == 2
        and res.n_errors == 0
        and res.stats["n_scored"] == 2
    )


def test_open_consultancy_with_an_agent_without_beliefs_is_refused_naming_the_cell(tmp_path: Path) -> None:
    cfg = ExperimentConfig.parse(
        {
            "name": "oc",
            "dataset": {"name": "arithmetic", "n": 2, "seed": 0},
            "judge_models": ["scripted:coin"],
            "agent_models": ["replay"],
            "protocols": ["NaiveJudge", "OpenConsultancy"],
            "out": str(tmp_path / "o"),
        }
    )
    with pytest.raises(
        ConfigError,
        match=r"^cell OpenConsultancy_t1/A_replay_J_scripted-coin: OpenConsultancy needs an agent "
        r"that can state its belief; replay \(ReplayAgent\) cannot$",
    ):
        Experiment(cfg).run()
    assert not (tmp_path / "o").exists()


def test_register_protocol_checks_what_it_registers() -> None:
    from seerbench import OversightProtocol, register_protocol

    with pytest.raises(TypeError, match="not a subclass of OversightProtocol"):
        register_protocol("X")(object)  # type: ignore[type-var]
    with pytest.raises(ConfigError, match="already registered"):

        @register_protocol("NaiveJudge")
        class Impostor(OversightProtocol):
            async def run(self, question: Any, answer_case: str) -> Any:
                raise NotImplementedError


def test_entry_point_plugins_are_imported_on_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import seerbench.plugins as plugins

    mod = tmp_path / "ep_plugin_mod.py"
    mod.write_text(PLUGIN.format(tag="EP"))
    monkeypatch.syspath_prepend(str(tmp_path))

    class FakeEP:
        name, value = "ep", "ep_plugin_mod"

        def load(self) -> Any:
            import importlib

            return importlib.import_module(self.value)

    monkeypatch.setattr(
        plugins, "entry_points", lambda group: [FakeEP()] if group == plugins.ENTRY_POINT_GROUP else []
    )
    monkeypatch.setattr(plugins, "_entry_points_loaded", False)
    from seerbench.protocols import get_protocol

    assert get_protocol("TwoVoicesEP").__name__ == "TwoVoices"


def test_backends_are_a_registry() -> None:
    from seerbench import Backend, register_backend
    from seerbench.models import make_backend

    class Fixed(Backend):
        name = "fixed"

        def __init__(self, rest: str | None) -> None:
            self.rest = rest

        @property
        def model_id(self) -> str:
            return self.rest or ""

        async def complete(self, messages: Any, config: Any, seed: int | None) -> Any:
            raise NotImplementedError

    register_backend("fixedtest", replace=True)(lambda rest, **kw: Fixed(rest))
    assert make_backend("fixedtest/abc").model_id == "abc" and make_backend("fixedtest:x/y").model_id == "x/y"
    assert make_backend("fixedtest").model_id == ""
    with pytest.raises(UnknownModelError, match="unknown model spec 'nosuch/m'"):
        make_backend("nosuch/m")
    with pytest.raises(UnknownModelError, match="names no model"):
        make_backend("openai/")


def test_register_dataset_makes_a_config_name(tmp_path: Path) -> None:
    from seerbench import AnswerCase, Question, register_dataset

    @register_dataset("tiny-test-set", replace=True)
    def tiny(n: int = 2) -> list[Question]:
        """Two tiny questions."""
        return [
            Question(
                id=f"t{i}",
                text=f"Is {i} even?",
                answer_cases=[
                    AnswerCase(short="A", long="yes", value=float(i % 2 == 0)),
                    AnswerCase(short="B", long="no", value=float(i % 2)),
                ],
            )
            for i in range(n)
        ]

    cfg = ExperimentConfig.parse(
        {
            "dataset": {"name": "tiny-test-set", "n": 3},
            "judge_models": ["scripted:coin"],
            "protocols": ["NaiveJudge"],
            "out": str(tmp_path / "o"),
        }
    )
    assert [q.id for q in Experiment(cfg).questions()] == ["t0", "t1", "t2"]
    from seerbench.datasets import get_dataset

    assert get_dataset("tiny-test-set").description == "Two tiny questions."


def test_the_public_api_resolves() -> None:
    for name in seerbench.__all__:
        assert getattr(seerbench, name) is not None, name
    from seerbench import OversightProtocol
    from seerbench.protocols import Protocol

    assert Protocol is OversightProtocol  # the 0.1 name still works
    with pytest.raises(AttributeError):
        _ = seerbench.NoSuchThing


@pytest.mark.parametrize(
    "plugin, judge_ref",
    [("./plug_{tag}.py", "plug_{tag}:HalfJudge"), ("plug_{tag}", "./plug_{tag}.py:HalfJudge")],
)
def test_a_plugin_named_by_path_and_by_module_is_one_module(
    tmp_path: Path, plugin: str, judge_ref: str
) -> None:
    # the file is imported once: a second copy would register its protocols again and clash
    tag = "pm" if plugin.startswith(".") else "mp"
    (tmp_path / f"plug_{tag}.py").write_text(textwrap.dedent(PLUGIN.format(tag=tag)))
    cfg = _setup(
        tmp_path,
        tag,
        plugins=[plugin.format(tag=tag)],
        judge_models=[{"class": judge_ref.format(tag=tag), "label": "h"}],
    )
    r = runner.invoke(app, ["run", str(cfg), "--json"])
    assert r.exit_code == 0, r.output
    (cell,) = json.loads(r.stdout)["cells"]
    assert cell["cell"] == f"TwoVoices{tag}/A_scripted-coin_J_HalfJudge-label-h"
    assert cell["metrics"]["judge_accuracy"]["mean"] == 0.5  # the plugin's judge: 1/2 each, a tie
