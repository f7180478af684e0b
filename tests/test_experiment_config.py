"""Experiment configs: bad input names the key and the allowed values; the grid; the dataset view."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from seerbench.errors import ConfigError, DataError
from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.types import AnswerCase, Question

BASE: dict[str, Any] = {"dataset": "arithmetic", "protocols": ["NaiveJudge"]}


def _parse(**kw: Any) -> ExperimentConfig:
    return ExperimentConfig.parse({**BASE, **kw})


def _err(**kw: Any) -> str:
    with pytest.raises(ConfigError) as e:
        _parse(**kw)
    return str(e.value)


def test_unknown_top_level_key_lists_allowed_keys() -> None:
    msg = _err(judges=["local"])
    assert "judges: unknown key" in msg
    assert "allowed keys:" in msg and "judge_models" in msg and "protocols" in msg and "parse_failures" in msg


def test_unknown_nested_key_lists_that_sections_keys() -> None:
    msg = _err(elicitation={"orders": ["vote"]})
    assert (
        "elicitation.orders: unknown key (did you mean order?); "
        "allowed keys: order, vote_samples, vote_temperature" in msg
    )
    msg = _err(agent_generation={"temp": 0.3})
    assert "agent_generation.temp: unknown key; allowed keys: max_tokens, max_words, temperature" in msg


def test_unknown_protocol_lists_known_ones() -> None:
    msg = _err(protocols=["NaiveJudge", "Debate"])
    assert "protocols.1.name" in msg and "unknown protocol 'Debate'" in msg
    assert (
        "known protocols: NaiveJudge, BlindTrust, Consultancy, RandomConsultancy, OpenConsultancy, "
        "SimultaneousDebate, SequentialDebate, EvidenceDebate" in msg
    )


def test_bad_values_name_key_and_allowed_values() -> None:
    msg = _err(parse_failures="zero")
    assert "parse_failures" in msg and "'exclude' or 'half'" in msg and "'zero'" in msg
    msg = _err(elicitation={"order": ["magic"]})
    assert "elicitation.order.0" in msg and "'logprobs', 'verbalized' or 'vote'" in msg
    assert "num_turns" in _err(num_turns=[0])
    assert "num_turns" in _err(num_turns=[])
    assert "eps" in _err(eps=0.7)
    assert "protocols" in _err(protocols=[])
    with pytest.raises(ConfigError, match="dataset: Field required"):
        ExperimentConfig.parse({"protocols": ["NaiveJudge"]})


def test_bad_protocol_keywords() -> None:
    cfg = _parse(protocols=[{"name": "Consultancy", "wibble": 3}])
    with pytest.raises(ConfigError, match=r"protocol Consultancy: bad keyword.*wibble.*keywords: num_turns"):
        Experiment(cfg).grid()
    cfg = _parse(protocols=[{"name": "EvidenceDebate", "condition": ["SA", "Z"]}])
    with pytest.raises(ConfigError, match=r"condition 'Z' is not one of \['S', 'SA', 'PS', 'PSA'\]"):
        Experiment(cfg).grid()


def test_yaml_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        ExperimentConfig.from_yaml(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("protocols: [NaiveJudge\n")
    with pytest.raises(ConfigError) as e:
        ExperimentConfig.from_yaml(bad)
    # the file and the place, not pyyaml's "<unicode string>"
    assert str(e.value) == (
        f"config file {bad} is not valid YAML (line 2, column 1: expected ',' or ']', but got '<stream end>')"
    )
    # a key written twice is refused (pyyaml alone keeps the last one, silently)
    bad.write_text("dataset: arithmetic\nprotocols: [NaiveJudge]\njudges: [scripted]\nprotocols: [Debate]\n")
    with pytest.raises(ConfigError) as e:
        ExperimentConfig.from_yaml(bad)
    assert str(e.value) == (
        f"config file {bad} is not valid YAML (line 4, column 1: key 'protocols' is written twice "
        "(first at line 2))"
    )
    # nested too; a `<<: *anchor` merge that a key overrides is not a repeat
    bad.write_text("dataset: {name: arithmetic, split: a, split: b}\n")
    with pytest.raises(
        ConfigError, match=r"line 1, column 39: key 'split' is written twice \(first at line 1\)"
    ):
        ExperimentConfig.from_yaml(bad)
    from seerbench.config import load_yaml

    assert load_yaml("a: &x {p: 1, q: 2}\nb:\n  <<: *x\n  p: 3\n") == {
        "a": {"p": 1, "q": 2},
        "b": {"p": 3, "q": 2},
    }
    bad.write_text("- a list\n")
    with pytest.raises(ConfigError, match="mapping"):
        ExperimentConfig.from_yaml(bad)
    bad.write_text("dataset: arithmetic\nprotocols: [NaiveJudge]\nparse_failure: half\n")
    with pytest.raises(
        ConfigError, match=rf"invalid {bad}: parse_failure: unknown key \(did you mean parse_failures\?\)"
    ):
        ExperimentConfig.from_yaml(bad)


def test_unknown_model_specs_are_refused_when_the_config_is_read(tmp_path: Path) -> None:
    # each names the file and the key, as a misspelt protocol does; nothing is loaded to say so
    bad = tmp_path / "bad.yaml"
    bad.write_text("dataset: arithmetic\nprotocols: [NaiveJudge]\njudge_models: [scripted:coin, gpt-4o]\n")
    with pytest.raises(ConfigError) as e:
        ExperimentConfig.from_yaml(bad)
    assert re.match(
        rf"invalid {re.escape(str(bad))}: judge_models\.1: unknown model spec 'gpt-4o'\. "
        r"Valid forms: local; .*openai/<model>.*scripted",
        str(e.value),
    ), str(e.value)
    msg = _err(agent_models=["replay", "scripted:ecko"], protocols=["Consultancy"])
    assert msg.startswith(
        "invalid config: agent_models.1: unknown scripted responder 'ecko' (did you mean echo?); "
        "known scripted responders: "
    ), msg
    # a protocol entry's own judges and agents, its debaters, name the protocol and the key
    msg = _err(protocols=[{"name": "Consultancy", "judge_models": ["scripted:coyn"]}])
    assert msg.startswith(
        "invalid config: protocols.0: judge_models of protocol Consultancy: unknown scripted responder "
        "'coyn' (did you mean coin?)"
    ), msg
    msg = _err(protocols=[{"name": "SimultaneousDebate", "debaters": ["scripted:coin", "scriptd:echo"]}])
    assert msg.startswith(
        "invalid config: protocols.0: debaters of protocol SimultaneousDebate: unknown model spec "
        "'scriptd:echo' (did you mean scripted?)"
    ), msg
    # replay is an agent, not a judge; a class entry is checked when its cell is built
    msg = _err(judge_models=["replay"])
    assert msg.startswith("invalid config: judge_models.0: unknown model spec 'replay'"), msg
    _parse(agent_models=["replay"], judge_models=[{"class": "NoSuchJudge"}], protocols=["Consultancy"])


def test_a_run_folders_recorded_config_is_read_back_without_its_names_checked() -> None:
    # what the run used need not be installed to look at the run
    raw = {**BASE, "dataset": {"name": "gone"}, "judge_models": ["scripted:gone"]}
    cfg = ExperimentConfig.parse(raw, recorded=True)
    assert cfg.judge_models == ["scripted:gone"]
    with pytest.raises(ConfigError, match=r"dataset: unknown dataset 'gone'.*judge_models\.0: unknown"):
        ExperimentConfig.parse(raw)


def test_a_value_of_the_wrong_type_is_echoed() -> None:
    msg = _err(elicitation={"vote_samples": "five"})
    assert msg == (
        "invalid config: elicitation.vote_samples: Input should be a valid integer, unable to parse "
        "string as an integer (got 'five')"
    )
    assert _err(concurrency=0) == (
        "invalid config: concurrency: Input should be greater than or equal to 1 (got 0)"
    )
    # a whole mapping is not echoed: the key says where it is
    assert _err(protocols={"name": "NaiveJudge"}).endswith("protocols: Input should be a valid list")


# --------------------------------------------------------------------------------------------------
# grid


def test_grid_cells_and_folder_names() -> None:
    cfg = _parse(
        judge_models=["scripted:coin", "scripted:echo"],  # registered: specs are checked when read
        agent_models=["scripted"],
        agent_tools=[[], ["calculator"]],
        protocols=[
            "NaiveJudge",
            "BlindTrust",
            "Consultancy",
            {"name": "EvidenceDebate", "condition": ["S", "PSA"]},
            {"name": "SequentialDebate", "num_turns": 3},
        ],
        num_turns=[1, 2],
        best_of_n=[1, 4],
    )
    keys = [s.key for s in Experiment(cfg).grid()]
    assert len(keys) == len(set(keys))
    # NaiveJudge: per judge only; BlindTrust: one cell with the trust judge
    assert "NaiveJudge/J_scripted-coin" in keys and "NaiveJudge/J_scripted-echo" in keys
    assert [k for k in keys if k.startswith("BlindTrust")] == ["BlindTrust/J_trust"]
    # Consultancy: 2 turns x 2 judges x 2 tool sets x 2 best-of-n = 16
    cons = [k for k in keys if k.startswith("Consultancy")]
    assert len(cons) == 16
    assert "Consultancy_t2/A_scripted_T_calculator_bo4_J_scripted-echo" in cons
    assert "Consultancy_t1/A_scripted_J_scripted-coin" in cons
    # EvidenceDebate: 2 conditions, no turns; SequentialDebate: its own num_turns overrides the grid's
    assert {k.split("/")[0] for k in keys if k.startswith("Evidence")} == {
        "EvidenceDebate_S",
        "EvidenceDebate_PSA",
    }
    assert {k.split("/")[0] for k in keys if k.startswith("Sequential")} == {"SequentialDebate_t3"}
    assert len(keys) == 2 + 1 + 16 + 16 + 8


# --------------------------------------------------------------------------------------------------
# dataset


def _binary(qid: str, n_true: int = 1, k: int = 2) -> Question:
    return Question(
        id=qid,
        text=f"question {qid}",
        answer_cases=[
            AnswerCase(short="ABCD"[i], long=f"opt{i}", value=1.0 if i < n_true else 0.0) for i in range(k)
        ],
    )


def test_dataset_without_binary_compatible_questions_says_so() -> None:
    qs = [_binary("q0", n_true=2), _binary("q1", n_true=0)]
    with pytest.raises(DataError, match=r"no binary-compatible questions.*exactly one true option"):
        Experiment(_parse(), questions=qs).questions()
    with pytest.raises(DataError, match="empty"):
        Experiment(_parse(), questions=[]).questions()


def test_dataset_view_converts_and_skips() -> None:
    exp = Experiment(
        _parse(limit=2),
        questions=[_binary("q0", k=4), _binary("bad", n_true=2), _binary("q2"), _binary("q3")],
    )
    qs = exp.questions()
    assert [q.id for q in qs] == ["q0", "q2"]  # limit 2 of the 3 usable
    assert all(q.k == 2 and q.is_binary for q in qs)
    assert exp.n_skipped == 1
    with pytest.raises(DataError, match="duplicate question ids"):
        Experiment(_parse(), questions=[_binary("q0"), _binary("q0")]).questions()


def test_fingerprint_ignores_out_limit_concurrency_name() -> None:
    a = _parse()
    assert a.fingerprint() == _parse(out="x", limit=3, concurrency=9, name="other").fingerprint()
    assert a.fingerprint() != _parse(eps=1e-3).fingerprint()
    assert a.fingerprint() != _parse(parse_failures="half").fingerprint()


def test_protocol_entry_overrides_both_orders() -> None:
    cfg = _parse(protocols=["NaiveJudge", {"name": "Consultancy", "both_orders": True}])
    names = sorted(s.protocol_dir for s in Experiment(cfg).grid())
    assert names == ["Consultancy_t1_swap", "NaiveJudge"]


def test_a_misspelt_dataset_name_is_named_as_written(tmp_path: Path) -> None:
    # not taken for a file in the config's folder ('sub/arithmetc'): the name, and the closest one
    (tmp_path / "sub").mkdir()
    cfg = tmp_path / "sub" / "d.yaml"
    cfg.write_text(
        "name: x\ndataset: {name: arithmetc}\njudge_models: [scripted:coin]\nprotocols: [NaiveJudge]\n"
    )
    with pytest.raises(ConfigError) as e:
        ExperimentConfig.from_yaml(cfg)  # refused when read, under its key
    assert str(e.value).startswith(
        f"invalid {cfg}: dataset: unknown dataset 'arithmetc' (did you mean arithmetic?); "
        "known datasets: arithmetic, "
    )
    cfg.write_text("name: x\ndataset: arithmetc\njudge_models: [scripted:coin]\nprotocols: [NaiveJudge]\n")
    with pytest.raises(ConfigError, match=r"^invalid .*d\.yaml: dataset: unknown dataset 'arithmetc' \("):
        ExperimentConfig.from_yaml(cfg)
    cfg.write_text("name: x\ndataset: {n: 3}\njudge_models: [scripted:coin]\nprotocols: [NaiveJudge]\n")
    with pytest.raises(ConfigError) as e:
        ExperimentConfig.from_yaml(cfg)
    assert str(e.value) == f"invalid {cfg}: dataset: give a name (or path), e.g. {{name: arithmetic, n: 20}}"
    # a file name is still read from the config's folder
    cfg.write_text("name: x\ndataset: nope.jsonl\njudge_models: [scripted:coin]\nprotocols: [NaiveJudge]\n")
    with pytest.raises(DataError, match=re.escape(str(tmp_path / "sub" / "nope.jsonl"))):
        Experiment(ExperimentConfig.from_yaml(cfg)).questions()
