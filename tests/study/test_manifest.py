"""Manifest validation, item loading (questions, inline, results.jsonl) and seed-004 catch trials."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seerbench.errors import ConfigError, DataError
from seerbench.study import build_catch_trials, load_items, load_manifest

from .conftest import base_manifest, question


def test_shorthand_conditions_expand_to_seed_letters() -> None:
    m = load_manifest(base_manifest(conditions=["P", "PS", "psa", "transcript", {"name": "custom", "show": ["snippets"]}]))
    assert [c.show for c in m.conditions] == [
        ["passage"],
        ["passage", "snippets"],
        ["passage", "snippets", "arguments"],
        ["transcript"],
        ["snippets"],
    ]


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ({"ratings_per_itme": 3}, "ratings_per_itme: unknown key"),
        ({"ratings_per_item": 0}, "ratings_per_item"),
        ({"conditions": ["P", "P"]}, "condition names must be unique"),
        ({"conditions": ["XYZ"]}, "conditions.0"),
        ({"items": [{"questions": "a.jsonl", "results": "b.jsonl"}]}, "items.0"),
        ({"catch_rate": 1.5}, "catch_rate"),
        ({"assignment_timeout_s": 100}, "assignment_timeout_s"),
        ({"task": "factuality", "conditions": ["PSA"]}, "factuality conditions use 'assistance'"),
        ({"tutorial": {"quiz": [{"question": "q", "options": ["a", "b"], "answer": 2}]}}, "tutorial.quiz.0"),
    ],
)
def test_invalid_manifest_names_the_key(override: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_manifest(base_manifest(**override))
    assert needle in str(e.value)


def test_missing_and_malformed_manifest_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_manifest(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_manifest(bad)
    no_code = tmp_path / "nocode.yaml"
    no_code.write_text("name: x\nitems: [{questions: a.jsonl}]\nconditions: [P]\n")
    with pytest.raises(ConfigError, match="completion_code: Field required"):
        load_manifest(no_code)


def test_items_from_questions_inline_and_results(tmp_path: Path) -> None:
    (tmp_path / "q.jsonl").write_text(json.dumps(question("q1")) + "\n\n")
    tr = {"question_id": "r1", "protocol": "consultancy", "turns": [{"role": "agent", "speaker": "consultant", "content": "Pick A", "answer_case": "A"}]}
    results = [
        # list form, with extra keys a results line also carries
        {"question": question("r1"), "answer_cases": [{"short": "A", "transcript": tr, "probabilities": {"A": 0.8, "B": 0.2}}, {"short": "B", "transcript": {**tr, "turns": []}}], "asd": {}},
        # mapping form; a case without a transcript is skipped
        {"question": question("r2", "B"), "answer_cases": {"A": {"transcript": {**tr, "question_id": "r2"}}, "B": {}}},
    ]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    m = load_manifest(
        base_manifest(items=[{"questions": "q.jsonl"}, {"question": question("inline")}, {"results": "results.jsonl"}])
    )
    items = load_items(m, tmp_path)
    assert [(i.key, i.answer_case) for i in items] == [
        ("q1", None),
        ("inline", None),
        ("r1#A", "A"),
        ("r1#B", "B"),
        ("r2#A", "A"),
    ]
    assert items[2].transcript is not None and items[2].transcript.turns[0].content == "Pick A"
    assert items[4].correct == "B"


def test_bad_item_files_name_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "q.jsonl").write_text(json.dumps(question("q1")) + "\n{not json\n")
    m = load_manifest(base_manifest(items=[{"questions": "q.jsonl"}]))
    with pytest.raises(DataError, match=r"q.jsonl:2: not valid JSON"):
        load_items(m, tmp_path)
    q = question("q1")
    q["answer_cases"][1]["value"] = 1.0  # two true options
    (tmp_path / "q.jsonl").write_text(json.dumps(q) + "\n")
    with pytest.raises(DataError, match="needs exactly two options, one of them true"):
        load_items(m, tmp_path)
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "x", "text": "t", "answer_cases": []}) + "\n")
    with pytest.raises(DataError, match=r"q.jsonl:1: not a valid question \(answer_cases"):
        load_items(m, tmp_path)
    with pytest.raises(ConfigError, match="does not exist"):
        load_items(load_manifest(base_manifest(items=[{"results": "missing.jsonl"}])), tmp_path)


def test_catch_trials_put_another_questions_material_on_the_wrong_option(tmp_path: Path) -> None:
    other = "A different passage entirely."
    qs = [question("q0", "A"), question("q1", "B"), question("far", "A", passage=other)]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    items = load_items(load_manifest(base_manifest(items=[{"questions": "q.jsonl"}])), tmp_path)
    catch = {c.key: c for c in build_catch_trials(items, seed=1)}
    assert set(catch) == {"catch:q0", "catch:q1", "catch:far"}
    c0 = catch["catch:q0"].question
    # q0's true option A keeps its own material; the false option B now carries q1's (same passage)
    assert c0.case("A").argument == "Argument for A on q0 (#1)."
    assert c0.case("B").argument in ("Argument for A on q1 (#1).", "Argument for B on q1 (#1).")
    assert c0.metadata["catch_donor"] == "q1"
    assert catch["catch:q0"].correct == "A" and catch["catch:q0"].catch == "mismatch"
    c1 = catch["catch:q1"].question
    assert c1.case("B").argument == "Argument for B on q1 (#1)."  # q1's true option untouched
    assert c1.case("A").argument.endswith("on q0 (#1).")
