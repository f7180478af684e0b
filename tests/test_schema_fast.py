"""The pre-check of results lines (:mod:`seerbench._precheck`, run by ``schema.check_line``): every
line the writer writes takes it, and no line gets another verdict than pydantic's: seeded mutations
of real lines (a key gone or added, a value of another type, at every depth) are accepted, or
refused with the same reason, exactly as pydantic alone accepts or refuses them."""

from __future__ import annotations

import copy
import json
import math
import random
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from seerbench import schema
from seerbench._precheck import INT_AS_FLOAT, compile_precheck
from seerbench.errors import DataError
from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.models import register_scripted
from seerbench.models._types import ChatMessage, GenerateConfig
from seerbench.schema import SCHEMA_VERSION, ResultLine, check_line, parse_line
from seerbench.store import loads

MUTANTS = 4000
NO_AGENT = ["NaiveJudge", "BlindTrust"]  # the protocols without agents


def _quoting(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    """An evidence debater: one quote of the prompt's own words (verified when the passage holds
    them) and one made up."""
    words = messages[-1].content.split()
    return f"ARGUMENT: it says so\nQUOTE: {' '.join(words[5:9])}\nQUOTE: nothing of the kind"


register_scripted("schema_fast_quoting", _quoting, replace=True)


def _run(out: Path, **config: Any) -> list[Path]:
    Experiment(
        ExperimentConfig.parse(
            {"name": out.name, "out": str(out), "judge_models": ["scripted:coin"], "n_boot": 100, **config}
        )
    ).run()
    return sorted(out.glob("*/*/results.jsonl"))


@pytest.fixture(scope="module")
def real_lines(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The lines of small runs of every protocol: votes over both orders, verbalized verdicts (the
    coin's letter does not parse: parse failures, excluded lines), cross-play, a tool, quotes."""
    root = tmp_path_factory.mktemp("fast")
    arithmetic = {"name": "arithmetic", "n": 4, "seed": 1}
    files = _run(
        root / "votes",
        dataset=arithmetic,
        agent_models=["scripted:echo"],
        agent_tools=[[], ["calculator"]],
        both_orders=True,
        protocols=[*NO_AGENT, "Consultancy", "OpenConsultancy", "SimultaneousDebate", "SequentialDebate"],
        elicitation={"order": ["vote"], "vote_samples": 3},
    )
    files += _run(
        root / "verbalized",
        dataset=arithmetic,
        agent_models=["scripted:coin"],
        protocols=[*NO_AGENT, "Consultancy"],
        parse_failures="half",
    )
    files += _run(
        root / "cross",
        dataset=arithmetic,
        protocols=[{"name": "SimultaneousDebate", "debaters": ["scripted:coin", "scripted:echo"]}],
    )
    files += _run(
        root / "evidence",
        dataset={"name": "reading", "n": 4, "seed": 0},
        agent_models=["scripted:schema_fast_quoting"],
        protocols=[{"name": "EvidenceDebate", "condition": ["SA", "PSA"]}],
    )
    lines = [loads(raw) for f in files for raw in f.read_bytes().splitlines() if raw.strip()]
    # what the runs were meant to cover is there
    cases = [c for ln in lines for c in ln["answer_cases"]]
    turns = [t for c in cases for t in c["case_probs"]["transcript"]]
    assert any(ln.get("adversary") for ln in lines) and any(ln["tools"] for ln in lines)
    assert any(ln["excluded"] for ln in lines)
    assert any(c["case_probs"]["probabilities"] is None for c in cases)
    assert {q["verified"] for t in turns for q in t["quotes"]} == {True, False}
    return lines


def verdict(check: Callable[[Any], Any], rec: Any) -> tuple[str, str]:
    """What ``check`` makes of ``rec``: ("ok", "") or the error's class and text."""
    try:
        check(rec)
    except Exception as e:  # LineError, DataError, and whatever else pydantic lets through
        return type(e).__name__, str(e)
    return "ok", ""


def test_every_line_the_writer_writes_takes_the_fast_path(real_lines: list[dict[str, Any]]) -> None:
    fits = schema._fits()
    assert len(real_lines) > 50
    for line in real_lines:
        assert fits(line) is True, line
        assert check_line(line) is line
    # as parse_line reads them too, NaN and infinities included (json's NaN, Infinity)
    line = {**real_lines[0], "eps": math.nan, "judge_accuracy": -math.inf}
    assert fits(parse_line(json.dumps(line))) is True


def test_a_config_of_loosely_written_numbers_still_writes_strict_lines(tmp_path: Path) -> None:
    """The layout's numbers and bools are strict (an int field takes no 1.0): the config reads
    ``eps: 0``, ``best_of_n: [1.0, "2"]`` and ``vote_samples: "3"`` laxly, and the writer writes
    JSON's own types from what it read, every line on the fast path."""
    files = _run(
        tmp_path / "loose",
        dataset={"name": "arithmetic", "n": 3, "seed": 2},
        agent_models=["scripted:echo"],
        protocols=["NaiveJudge", "Consultancy"],
        eps=0,
        best_of_n=[1.0, "2"],
        elicitation={"order": ["vote"], "vote_samples": "3"},
    )
    lines = [loads(raw) for f in files for raw in f.read_bytes().splitlines() if raw.strip()]
    assert {ln["best_of_n"] for ln in lines} == {1, 2} and len(lines) == 9
    for line in lines:
        assert type(line["eps"]) is float and line["eps"] == 0.0
        assert {c["case_probs"]["n_samples"] for c in line["answer_cases"]} == {3}
        assert schema._fits()(line) is True
        assert check_line(line) is line


@pytest.mark.parametrize("version", ["1", 1.0, True, None, 0, -7, [1]])
def test_a_schema_version_that_is_no_version_number_is_refused_before_anything(
    real_lines: list[dict[str, Any]], version: Any
) -> None:
    """Not an integer of 1 or more: a DataError (lax pydantic would read "1", 1.0, true as 1)."""
    line = {**real_lines[0], "schema_version": version}
    with pytest.raises(DataError, match=r"^schema_version .* is not a version number"):
        check_line(line)
    assert verdict(check_line, line) == verdict(schema._validate, line)
    if type(version) is not int:  # the model alone refuses it too (strict); 0 is _admit's to refuse
        assert schema._fits()(line) is False
        with pytest.raises(ValidationError, match="schema_version"):
            ResultLine.model_validate(line)


# ---- mutants --------------------------------------------------------------------------------------
Path_ = tuple[Any, ...]


def _places(node: Any, path: Path_ = ()) -> list[Path_]:
    """The path of every value under ``node`` (dict keys and list indices), ``node`` itself first."""
    out = [path]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _places(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _places(v, (*path, i))
    return out


def _at(node: Any, path: Path_) -> Any:
    for p in path:
        node = node[p]
    return node


class _Str(str):
    pass


def _others(rng: random.Random, line: dict[str, Any], old: Any) -> Any:
    """A value to put in place of ``old``: of another type, or a nearby one of the same type."""
    whole = copy.deepcopy(_at(line, rng.choice(_places(line))))  # any part of the line
    choices: list[Any] = [
        0, 1, -7, 2, INT_AS_FLOAT, INT_AS_FLOAT + 1, 2**64, 10**400,
        0.0, 1.0, 0.5, -2.5, math.nan, math.inf, -math.inf,
        True, False, None,
        "", "x", "A", "B", "agent", "judge", "exclude", "half", "ok", "1", "1.0", "\ud800", _Str("x"),
        [], ["x"], [1], [None], ("x",), [{}],
        {}, {"x": 1}, {1: "x"}, {"log": 1.0}, OrderedDict(a=1),
        whole,
    ]  # fmt: skip
    if isinstance(old, float):
        choices += [int(old) if math.isfinite(old) else 3, old * 2, -old]
    if isinstance(old, str):
        choices += [old + "x", old[:-1], old.upper()]
    return rng.choice(choices)


def _mutate(rng: random.Random, line: dict[str, Any]) -> None:
    """One change at a random place of ``line``, in place."""
    path = rng.choice(_places(line)[1:])
    parent, key = _at(line, path[:-1]), path[-1]
    kind = rng.random()
    if kind < 0.2:
        del parent[key]
    elif kind < 0.35:
        # an unknown key in some object of the line (or a known one of another object)
        objects = [p for p in _places(line) if isinstance(_at(line, p), dict)]
        target = _at(line, rng.choice(objects))
        name = rng.choice(["surprise", "short", "log", "role", "question_id", "metadata", "quotes"])
        target[name] = _others(rng, line, None)
    elif kind < 0.45 and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[key]))  # a second item like one there (a label twice)
    elif kind < 0.5 and isinstance(_at(line, path), str):
        # another item's label, e.g. two answer cases of the question with the same short
        parent[key] = _at(line, rng.choice([p for p in _places(line) if p and p[-1] == "short"]))
    else:
        parent[key] = _others(rng, line, parent[key])


def test_mutants_get_exactly_pydantics_verdict(real_lines: list[dict[str, Any]]) -> None:
    rng = random.Random(20240611)
    fits = schema._fits()
    taken = refused = 0
    reasons: set[str] = set()
    for _ in range(MUTANTS):
        line = copy.deepcopy(rng.choice(real_lines))
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            _mutate(rng, line)
        want = verdict(schema._validate, line)  # pydantic alone, as check_line was
        if fits(line):  # certain: the model takes it (check_line may still refuse a newer version)
            taken += 1
            ResultLine.model_validate(line)
        assert verdict(check_line, line) == want, line
        if want[0] != "ok":
            refused += 1
            reasons.add(want[1].split(":")[0])
    # both sides were exercised, refusals at many places (the validator's among them)
    assert taken > MUTANTS // 10 and refused > MUTANTS // 2, (taken, refused)
    assert len(reasons) > 40 and "question.answer_cases" in reasons, sorted(reasons)


@pytest.mark.parametrize(
    "edit, reason",
    [
        (lambda d: d["question"]["answer_cases"][1].update(short="A"), "answer case labels must be unique"),
        (lambda d: d["question"].update(id="\ud800"), "question.id: Input should be a valid string"),
        # the layout's numbers and bools are strict: JSON's own types, as the writer writes them
        (
            lambda d: d["answer_cases"][0]["case_probs"].update(n_samples=1.0),
            "n_samples: Input should be a valid integer",
        ),
        (
            lambda d: d["answer_cases"][0]["case_probs"].update(n_samples="1"),
            "n_samples: Input should be a valid integer",
        ),
        (lambda d: d.update(eps=True), "eps: Input should be a valid number"),
        (lambda d: d.update(eps="0.5"), "eps: Input should be a valid number"),
        (lambda d: d.update(excluded=0), "excluded: Input should be a valid boolean"),
        (lambda d: d.update(best_of_n=1.0), "best_of_n: Input should be a valid integer"),
        (lambda d: d.update(eps=2**60), None),  # a large int: pydantic takes it for a float, strict too
        (lambda d: d.update(eps=10**400), "eps: Input should be a valid number"),
        (lambda d: d.update(notes={1: "x"}), "notes.1.[key]: Input should be a valid string"),
        (lambda d: d.update(tools=("calculator",)), None),  # a tuple for a list
    ],
)
def test_what_the_fast_path_leaves_to_pydantic(
    real_lines: list[dict[str, Any]], edit: Callable[[dict[str, Any]], Any], reason: str | None
) -> None:
    line = copy.deepcopy(real_lines[0])
    edit(line)
    assert schema._fits()(line) is False
    got = verdict(check_line, line)
    assert got == verdict(schema._validate, line)
    assert got == ("ok", "") if reason is None else reason in got[1]


@pytest.mark.parametrize("version", [SCHEMA_VERSION + 1, 10**20])
def test_a_newer_schema_version_is_still_refused_before_anything(
    real_lines: list[dict[str, Any]], version: int
) -> None:
    line = {**real_lines[0], "schema_version": version, "question": None}
    with pytest.raises(DataError, match=f"schema version {version}; this seerbench reads up to"):
        check_line(line)
    assert verdict(check_line, line) == verdict(schema._validate, line)
    assert verdict(check_line, []) == ("LineError", "not a JSON object")


# ---- the compiler on other models ---------------------------------------------------------------
class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: float
    tag: Literal["a", "b"] = "a"


class Plain(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=2, max_length=4)
    n: int
    flag: bool | None = None
    inner: Inner | None
    items: list[Inner] = Field(default_factory=list, max_length=2)
    table: dict[str, list[int]] = {}
    anything: Any = None


class Ignoring(BaseModel):  # extra keys are dropped, not refused
    n: int


class Checked(BaseModel):
    model_config = ConfigDict(extra="forbid")
    shorts: list[str]
    seen: list[list[str]] = []  # what the validator was handed

    @field_validator("shorts")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("twice")
        return v


PLAIN = {"name": "ab", "n": 1, "inner": {"x": 1.5}, "items": [{"x": 2, "tag": "b"}], "table": {"k": [1]}}


class Before(BaseModel):
    n: int

    @field_validator("n", mode="before")
    @classmethod
    def _halve(cls, v: Any) -> Any:
        return v // 2 if isinstance(v, int) else v


class WholeModel(BaseModel):
    n: int

    @model_validator(mode="after")
    def _positive(self) -> WholeModel:
        if self.n <= 0:
            raise ValueError("positive")
        return self


class Aliased(BaseModel):
    n: int = Field(alias="N")


class Patterned(BaseModel):
    s: str = Field(pattern="^a")


class Strict(BaseModel):
    model_config = ConfigDict(strict=True)
    x: float


class StrictFields(BaseModel):  # strict fields (as ResultLine's numbers), not a strict config
    model_config = ConfigDict(extra="forbid")
    n: StrictInt
    x: StrictFloat
    flag: bool = Field(default=False, strict=True)


STRICT = {"n": 1, "x": 0.5, "flag": True}


class Tree(BaseModel):
    kids: list[Tree] = []


@pytest.mark.parametrize(
    "model, good, bad",
    [
        (Plain, PLAIN, [{**PLAIN, "name": "a"}, {**PLAIN, "name": "abcde"}, {**PLAIN, "extra": 1}]),
        (Plain, {**PLAIN, "anything": object(), "flag": False, "inner": None}, [{**PLAIN, "n": True}]),
        (Ignoring, {"n": 1, "other": "kept out"}, [{"other": 1}]),
        (Checked, {"shorts": ["a", "b"]}, [{"shorts": ["a", "a"]}]),
    ],
)
def test_models_it_takes_on(model: type[BaseModel], good: dict[str, Any], bad: list[dict[str, Any]]) -> None:
    fits = compile_precheck(model)
    assert fits(good) is True
    model.model_validate(good)
    for b in bad:
        assert fits(b) is False


def test_strict_fields_are_taken_on() -> None:
    """A strict int, float or bool takes what the pre-check takes as certain (an int for a float
    too); what strictness refuses (1.0 for an int, true for a float, 1 for a bool) pydantic
    refuses, with the pre-check leaving it to pydantic."""
    fits = compile_precheck(StrictFields)
    assert fits({**STRICT, "x": 2}) is True and fits({**STRICT, "flag": False}) is True
    for field, value in [("n", 1.0), ("n", "1"), ("n", True), ("x", True), ("x", "0.5"), ("flag", 1)]:
        assert fits({**STRICT, field: value}) is False
        with pytest.raises(ValidationError, match=field):
            StrictFields.model_validate({**STRICT, field: value})


class WithInfo(BaseModel):
    n: int
    m: int

    @field_validator("m")
    @classmethod
    def _above_n(cls, v: int, info: ValidationInfo) -> int:
        if v <= info.data.get("n", 0):
            raise ValueError("not above n")
        return v


@pytest.mark.parametrize(
    "model, good",
    [
        (Aliased, {"N": 1}),
        (Patterned, {"s": "ab"}),
        (Strict, {"x": 1.0}),
        (Tree, {"kids": [{"kids": []}]}),
        (WithInfo, {"n": 1, "m": 2}),
    ],
)
def test_models_it_leaves_to_pydantic(model: type[BaseModel], good: dict[str, Any]) -> None:
    """What it does not understand (an alias, a pattern, strict mode, a recursive model, a
    validator that reads the other fields) is never taken as certain, even where pydantic
    accepts it."""
    model.model_validate(good)
    assert compile_precheck(model)(good) is False


@pytest.mark.parametrize(
    "model, good, bad",
    [
        (Checked, {"shorts": ["a", "b"]}, {"shorts": ["a", "a"]}),
        (Checked, {"shorts": ("a", "b")}, {"shorts": ("a", "a")}),  # pydantic's lax rules there
        (Before, {"n": 3}, {"n": "x"}),
        (WholeModel, {"n": 1}, {"n": 0}),
    ],
)
def test_validators_run_in_pydantic(
    model: type[BaseModel], good: dict[str, Any], bad: dict[str, Any]
) -> None:
    """The model's validators are pydantic's to run (pydantic-core validates that part, as it
    always does), not rewritten: the same calls, on the same values."""
    fits = compile_precheck(model)
    assert fits(good) is True and fits(bad) is False
    model.model_validate(good)
    with pytest.raises(ValidationError):
        model.model_validate(bad)
    assert not re.search(r"_unique|_halve|_positive", fits.__doc__ or "")


def test_a_lone_surrogate_is_left_to_pydantic_where_the_length_is_checked() -> None:
    """pydantic refuses a lone surrogate in a string with a length bound, takes it in any other."""
    fits = compile_precheck(Plain)
    with pytest.raises(ValidationError, match="unicode"):
        Plain.model_validate({**PLAIN, "name": "a\ud800"})
    assert fits({**PLAIN, "name": "a\ud800"}) is False
    assert fits({**PLAIN, "table": {"\ud800": []}}) is True
    Plain.model_validate({**PLAIN, "table": {"\ud800": []}})


def test_the_generated_check_is_readable() -> None:
    source = compile_precheck(ResultLine).__doc__ or ""
    assert re.search(r"if type\(d\['question_id'\]\) is not str: return False", source)
    assert "return True" in source and "except KeyError" in source
