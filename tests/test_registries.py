"""Issue 24, one registry: every pluggable kind (protocols, judges, agents, model backends,
scripted responders, datasets, factcheck datasets, tools, study task types) is a
``plugins.Registry``, with one did-you-mean and one error type; ``--plugin`` makes a plugin's
dataset, backend, judge and tool known to every command."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from seerbench.agents import AGENTS, register_agent
from seerbench.cli import main
from seerbench.datasets import DATASETS, get_dataset, register_dataset
from seerbench.errors import ConfigError, UnknownModelError, UnknownNameError, did_you_mean
from seerbench.factcheck import FACTCHECK_DATASETS, load_factcheck
from seerbench.judges import JUDGES, register_judge
from seerbench.models import (
    BACKENDS,
    RESPONDERS,
    ScriptedBackend,
    make_backend,
    register_backend,
    register_scripted,
)
from seerbench.plugins import Registry
from seerbench.protocols import PROTOCOLS, OversightProtocol, get_protocol, register_protocol
from seerbench.study._critique_tasks import TASK_PAGES
from seerbench.tools import TOOLS, get_tools, register_tool

PLUGIN = '''
"""The outsider's plugin: a dataset, a backend, a judge and a tool."""
from seerbench import (AnswerCase, Backend, Question, Sample, Usage, Verdict, register_backend,
                       register_dataset, register_judge, register_tool)


@register_dataset("reg_parity", description="is i even? two options each (registry tests)")
def reg_parity(n: int = 3) -> list[Question]:
    return [
        Question(id=f"parity-{i}", text=f"Is {i} an even number?", answer_cases=[
            AnswerCase(short="A", long="yes" if i % 2 == 0 else "no", value=1.0),
            AnswerCase(short="B", long="no" if i % 2 == 0 else "yes", value=0.0),
        ])
        for i in range(n)
    ]


class ConstBackend(Backend):
    name = "regconst"

    def __init__(self, text: str) -> None:
        self.text = text

    @property
    def model_id(self) -> str:
        return self.text

    async def complete(self, messages, config, seed):
        return Sample(text=self.text, usage=Usage(prompt_tokens=1, completion_tokens=1), finish_reason="stop")


@register_backend("regconst")
def make_const(rest, *, base_url=None, api_key=None):
    """answers every request with <rest> (registry tests)"""
    return ConstBackend(rest or "A")


@register_judge("RegThirdJudge")
class RegThirdJudge:
    """P(A) = 1/3 whatever it is shown: a judge without a model."""

    def __init__(self, label: str = "third") -> None:
        self.name = label

    async def judge(self, question, visible, *, with_source=False, argued=None):
        return Verdict(probabilities={"A": 1 / 3, "B": 2 / 3}, method="verbalized", raw="")


@register_tool("regrev", description="REGREV(<text>) gives the text backwards")
def regrev(text: str) -> str:
    return text[::-1]
'''


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the plugin file (one path for the module: it is imported once per process)."""
    d = tmp_path_factory.mktemp("outsider")
    (d / "outsider.py").write_text(PLUGIN)
    return d


def run_main(
    argv: Sequence[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    cwd: Path,
) -> tuple[int, str, str]:
    """`seerbench ARGV` through the console script's entry point, in ``cwd``: (status, out, err)."""
    monkeypatch.chdir(cwd)
    monkeypatch.setattr("sys.argv", ["seerbench", *argv])
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main()
    out, err = capsys.readouterr()
    code = e.value.code
    return (code if isinstance(code, int) else 0 if code is None else 1), out, err


def one_line_error(code: int, err: str) -> str:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, err)
    return lines[0]


# -- one mechanism, one did-you-mean, one error type ---------------------------------------------


def _scripted(name: str) -> Any:
    return ScriptedBackend(name)


def _model(spec: str) -> Any:
    return make_backend(spec)


def _tool(name: str) -> Any:
    return get_tools([name])


def _task(name: str) -> Any:
    return TASK_PAGES.lookup(name)


#: (registry, how a name is looked up where users meet it, a typo, the closest registered name)
TYPOS: list[tuple[Registry[Any], Callable[[str], Any], str, str]] = [
    (PROTOCOLS, get_protocol, "Consultncy", "Consultancy"),
    (JUDGES, JUDGES.lookup, "ModelJudg", "ModelJudge"),
    (AGENTS, AGENTS.lookup, "ModelAgnt", "ModelAgent"),
    (BACKENDS, _model, "opnai/gpt-4o-mini", "openai"),
    (RESPONDERS, _scripted, "ech", "echo"),
    (DATASETS, get_dataset, "arithmetc", "arithmetic"),
    (FACTCHECK_DATASETS, load_factcheck, "factchek", "factcheck"),
    (TOOLS, _tool, "calculater", "calculator"),
    (TASK_PAGES, _task, "critiqe", "critique"),
]


@pytest.mark.parametrize(("registry", "lookup", "typo", "closest"), TYPOS, ids=[t[2] for t in TYPOS])
def test_every_registry_answers_a_typo_with_the_closest_name(
    registry: Registry[Any], lookup: Callable[[str], Any], typo: str, closest: str
) -> None:
    assert isinstance(registry, Registry) and closest in registry
    with pytest.raises(UnknownNameError) as e:
        lookup(typo)
    assert f"(did you mean {closest}?)" in str(e.value)
    assert isinstance(e.value, ConfigError)  # the CLI prints one line and exits 2


def test_unknown_models_stay_model_errors() -> None:
    """A misspelt backend or responder is still an UnknownModelError (callers catch that)."""
    with pytest.raises(UnknownModelError, match=r"did you mean openai\?"):
        make_backend("opnai/gpt-4o-mini")
    with pytest.raises(UnknownModelError, match=r"unknown scripted responder 'ech' \(did you mean echo\?\)"):
        make_backend("scripted:ech")


def test_a_name_close_to_nothing_gets_the_list_only() -> None:
    reg: Registry[int] = Registry("widget", {"alpha": 1, "beta": 2})
    with pytest.raises(UnknownNameError) as e:
        reg.lookup("zzzzzz")
    assert str(e.value) == (
        "unknown widget 'zzzzzz'; known widgets: alpha, beta "
        "(a plugin's? import it with the config's plugins: or seerbench --plugin)"
    )
    with pytest.raises(UnknownNameError) as e:
        reg.lookup("alpah")
    assert str(e.value) == "unknown widget 'alpah' (did you mean alpha?); known widgets: alpha, beta"
    assert did_you_mean("bta", ["alpha", "beta"]) == " (did you mean beta?)"
    assert did_you_mean("q", ["alpha", "beta"]) == ""


def test_duplicate_registration_is_refused_unless_replaced() -> None:
    reg: Registry[Callable[[], int]] = Registry("widget")

    def one() -> int:
        return 1

    def two() -> int:
        return 2

    reg.register("w")(one)
    reg.register("w")(one)  # the same definition again (a re-imported module): no clash
    with pytest.raises(ConfigError, match=r"a widget named 'w' is already registered .*replace=True"):
        reg.register("w")(two)
    assert reg.lookup("w") is one
    reg.register("w", replace=True)(two)
    assert reg.lookup("w") is two
    # two lambdas in one module are two definitions
    reg.add("lam", lambda: 1)
    with pytest.raises(ConfigError, match="already registered"):
        reg.add("lam", lambda: 2)


def _fn(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("never called")


class _Cls:
    name = "x"


#: The public way to register each kind, and a name the built-ins already hold.
TAKEN: list[tuple[str, Callable[[], Any]]] = [
    ("protocol", lambda: register_protocol("Consultancy")(type("P", (OversightProtocol,), {}))),
    ("judge", lambda: register_judge("ModelJudge")(_Cls)),
    ("agent", lambda: register_agent("ModelAgent")(_Cls)),
    ("model backend", lambda: register_backend("openai")(_fn)),
    ("scripted responder", lambda: register_scripted("echo", _fn)),
    ("dataset", lambda: register_dataset("arithmetic")(_fn)),
    ("factcheck dataset", lambda: FACTCHECK_DATASETS.register("factcheck")(_fn)),
    ("tool", lambda: register_tool("calculator")(_fn)),
    ("study task type", lambda: TASK_PAGES.register("critique")(_Cls)),  # type: ignore[arg-type]
]


def test_a_refused_protocol_keeps_its_name() -> None:
    cls: type[OversightProtocol] = type("Mine", (OversightProtocol,), {"name": "Mine"})
    with pytest.raises(ConfigError, match="a protocol named 'Consultancy' is already registered"):
        register_protocol("Consultancy")(cls)
    assert cls.name == "Mine" and get_protocol("Consultancy").__name__ == "Consultancy"


@pytest.mark.parametrize(("kind", "register"), TAKEN, ids=[t[0] for t in TAKEN])
def test_a_taken_name_is_refused(kind: str, register: Callable[[], Any]) -> None:
    with pytest.raises(ConfigError, match=rf"^a {kind} named '\w+' is already registered"):
        register()


# -- --plugin: every command that resolves a name sees the plugin's registrations -------------------


def test_plugin_is_seen_by_datasets_list_and_show(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_main(
        ["--plugin", "outsider.py", "datasets", "list", "--json"], capsys, monkeypatch, plugin_dir
    )
    assert code == 0, err
    rows = {d["name"]: d for d in json.loads(out)}
    assert rows["reg_parity"] == {
        "name": "reg_parity",
        "kind": "user",
        "description": "is i even? two options each (registry tests)",
        "options": ["n"],
    }
    code, out, err = run_main(
        ["--plugin", "outsider.py", "datasets", "show", "reg_parity", "-n", "2", "--json"],
        capsys,
        monkeypatch,
        plugin_dir,
    )
    assert code == 0, err
    shown = json.loads(out)
    assert "Is 0 an even number?" in json.dumps(shown) and "Is 1 an even number?" in json.dumps(shown)
    assert "Is 2 an even number?" not in json.dumps(shown)  # -n 2


def test_plugin_backend_is_seen_by_models_and_ask(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_main(
        ["--plugin", "outsider.py", "models", "--json"], capsys, monkeypatch, plugin_dir
    )
    assert code == 0, err
    forms = {i["form"]: i for i in json.loads(out)}
    assert forms["regconst[/<rest>]"] == {
        "form": "regconst[/<rest>]",
        "description": "answers every request with <rest> (registry tests)",
        "usable": True,
        "note": "plugin: outsider.py",
    }
    code, out, err = run_main(
        [
            "--plugin",
            "outsider.py",
            "ask",
            "Is 4 even? A) yes B) no",
            "-m",
            "regconst/B",
            "--methods",
            "vote",
            "--json",
        ],
        capsys,
        monkeypatch,
        plugin_dir,
    )
    assert code == 0, err
    answer = json.loads(out)
    assert answer["model"] == "regconst/B" and answer["text"] == "B"
    assert answer["probabilities"] == {"A": 0.0, "B": 1.0}  # every vote says B


def test_plugin_dataset_judge_backend_and_tool_run(
    plugin_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run` with --plugin and a config without `plugins:`: the dataset, the judge, the backend
    and the tool all come from the plugin file."""
    cfg = {
        "name": "outsider",
        "dataset": {"name": "reg_parity", "n": 3},
        "judge_models": [{"class": "RegThirdJudge"}],
        "agent_models": ["regconst/A"],
        "agent_tools": [["regrev"]],
        "protocols": ["Consultancy"],
        "elicitation": {"order": ["verbalized"]},
        "n_boot": 100,
        "out": str(tmp_path / "out"),
    }
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(cfg))
    code, _, err = run_main(
        ["-q", "--plugin", str(plugin_dir / "outsider.py"), "run", str(tmp_path / "run.yaml")],
        capsys,
        monkeypatch,
        tmp_path,
    )
    assert code == 0, err
    [results] = list((tmp_path / "out").rglob("results.jsonl"))
    lines = [json.loads(x) for x in results.read_text().splitlines()]
    assert sorted(x["question_id"] for x in lines) == ["parity-0", "parity-1", "parity-2"]
    for line in lines:
        assert (line["judge"], line["agent"], line["tools"]) == ("RegThirdJudge", "regconst/A", ["regrev"])
        for case in line["answer_cases"]:
            # A is the right answer of every question; the judge gives it 1/3 whatever it is shown
            assert case["case_probs"]["probabilities"] == pytest.approx({"A": 1 / 3, "B": 2 / 3})
            assert case["case_probs"]["judge_score"]["log"] == pytest.approx(math.log(1 / 3))
    tool = get_tools(["regrev"])[0]
    assert (tool.name, tool.fn("abc")) == ("REGREV", "cba")


@pytest.mark.parametrize("kind", ["critique", "rater"])
def test_critique_and_rater_configs_import_their_plugins(kind: str, tmp_path: Path) -> None:
    from seerbench.critique import CritiqueConfig
    from seerbench.factcheck import RaterConfig

    name = f"regplug-{kind}"
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "mine.py").write_text(
        f"from seerbench.models import register_scripted\nregister_scripted({name!r}, lambda m, c, s: 'A')\n"
    )
    data: dict[str, Any] = {"plugins": ["lib/mine.py"], "model": f"scripted:{name}"}
    if kind == "critique":
        data["dataset"] = {"name": "arithmetic", "n": 2}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(data))
    assert name not in RESPONDERS
    cls: Any = CritiqueConfig if kind == "critique" else RaterConfig
    cfg = cls.from_yaml(tmp_path / "c.yaml")
    assert name in RESPONDERS and cfg.plugins == ["lib/mine.py"]
    plain = cls.parse({k: v for k, v in data.items() if k != "plugins"})
    assert cfg.fingerprint() == plain.fingerprint()  # where code lives decides nothing


# -- failure paths: one line, exit 2 -------------------------------------------------------------


def test_unknown_names_through_the_cli(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run_main(
        ["--plugin", "outsider.py", "datasets", "show", "reg_party"], capsys, monkeypatch, plugin_dir
    )
    assert "unknown dataset 'reg_party' (did you mean reg_parity?)" in one_line_error(code, err)
    code, _, err = run_main(
        ["--plugin", "outsider.py", "ask", "Q? A) x B) y", "-m", "regconts/A"],
        capsys,
        monkeypatch,
        plugin_dir,
    )
    line = one_line_error(code, err)
    assert "unknown model spec 'regconts/A' (did you mean regconst?)" in line
    assert line.endswith("; regconst[/<rest>]")  # the valid forms, the plugin's included


def test_ray_workers_do_not_get_cli_plugins(
    plugin_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ray worker imports the config's plugins only: --plugin with --executor ray is refused
    before anything runs (not a run whose every shard fails on an unknown name)."""
    cfg = {"dataset": {"name": "reg_parity"}, "judge_models": ["regconst/A"], "agent_models": ["regconst/A"]}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump({**cfg, "protocols": ["NaiveJudge"], "out": "out"}))
    code, _, err = run_main(
        ["--plugin", str(plugin_dir / "outsider.py"), "run", "run.yaml", "--executor", "ray"],
        capsys,
        monkeypatch,
        tmp_path,
    )
    assert "list the plugin in the config's plugins: instead" in one_line_error(code, err)
    assert not (tmp_path / "out").exists()


def test_broken_plugins_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run_main(["--plugin", "missing.py", "models"], capsys, monkeypatch, tmp_path)
    assert f"plugin file {tmp_path / 'missing.py'} does not exist" in one_line_error(code, err)
    (tmp_path / "clash.py").write_text(
        "from seerbench import register_dataset\n\n"
        "@register_dataset('arithmetic')\ndef mine():\n    return []\n"
    )
    code, _, err = run_main(["--plugin", "clash.py", "datasets", "list"], capsys, monkeypatch, tmp_path)
    line = one_line_error(code, err)
    assert (
        "clash.py failed to import" in line and "a dataset named 'arithmetic' is already registered" in line
    )
    code, _, err = run_main(["--plugin", "no_such_module", "models"], capsys, monkeypatch, tmp_path)
    assert "plugin module 'no_such_module' not found" in one_line_error(code, err)


def test_a_misspelt_plugin_names_the_file_it_was_probably_meant_to_be(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_protocols.py").write_text("X = 1\n")
    code, _, err = run_main(["--plugin", "my_protocol.py", "models"], capsys, monkeypatch, tmp_path)
    assert f"does not exist (did you mean {tmp_path / 'my_protocols.py'}?)" in one_line_error(code, err)
    code, _, err = run_main(["--plugin", "my_protocol", "models"], capsys, monkeypatch, tmp_path)
    assert "not found (did you mean my_protocols.py?)" in one_line_error(code, err)
    code, _, err = run_main(["--plugin", "zzz.py", "models"], capsys, monkeypatch, tmp_path)
    assert "did you mean" not in one_line_error(code, err)
    (tmp_path / "cost.py").write_text("X = 1\n")  # a dotted name is a package's module, not a file here
    code, _, err = run_main(["--plugin", "os.pathx", "models"], capsys, monkeypatch, tmp_path)
    assert "did you mean" not in one_line_error(code, err)
