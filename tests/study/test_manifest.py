"""Manifest validation, item loading (questions, inline, results.jsonl) and seed-004 catch trials."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seerbench.errors import ConfigError, DataError
from seerbench.study import build_catch_trials, create_study, load_items, load_manifest

from .conftest import base_manifest, question


def test_shorthand_conditions_expand_to_seed_letters() -> None:
    m = load_manifest(
        base_manifest(conditions=["P", "PS", "psa", "transcript", {"name": "custom", "show": ["snippets"]}])
    )
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
        # a URL holding the code itself would be linked from /full for raters who did not earn it
        ({"completion_url": "https://app.prolific.com/submissions/complete?cc=FASTCODE9"}, "has no {code}"),
        # 90 + 30 + 3 = 123 s is one timed task: a session of 100 s ends inside the first one
        ({"max_duration_s": 100}, "max_duration_s (100.0) is shorter than one timed task"),
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
    tr: dict[str, Any] = {
        "question_id": "r1",
        "protocol": "consultancy",
        "turns": [{"role": "agent", "speaker": "consultant", "content": "Pick A", "answer_case": "A"}],
    }
    results = [
        # list form, with extra keys a results line also carries
        {
            "question": question("r1"),
            "answer_cases": [
                {"short": "A", "transcript": tr, "probabilities": {"A": 0.8, "B": 0.2}},
                {"short": "B", "transcript": {**tr, "turns": [{**tr["turns"][0], "answer_case": "B"}]}},
            ],
            "asd": {},
        },
        # mapping form; a case without a transcript, or with no turns, is skipped
        {
            "question": question("r2", "B"),
            "answer_cases": {
                "A": {"transcript": {**tr, "question_id": "r2"}},
                "B": {"transcript": {**tr, "turns": []}},
            },
        },
    ]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    m = load_manifest(
        base_manifest(
            items=[{"questions": "q.jsonl"}, {"question": question("inline")}, {"results": "results.jsonl"}]
        )
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
    # the one question-JSONL reader (seerbench.datasets.read_questions_jsonl) and its messages
    with pytest.raises(DataError, match=r"^q\.jsonl:2: invalid JSON$"):
        load_items(m, tmp_path)
    q = question("q1")
    q["answer_cases"][1]["value"] = 1.0  # two true options
    (tmp_path / "q.jsonl").write_text(json.dumps(q) + "\n")
    with pytest.raises(DataError, match="needs exactly two options, one of them true"):
        load_items(m, tmp_path)
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "x", "text": "t", "answer_cases": []}) + "\n")
    with pytest.raises(DataError, match=r"^q\.jsonl:1: answer_cases: List should have at least 2 items"):
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
    assert str(c1.case("A").argument).endswith("on q0 (#1).")


def _write(tmp_path: Path, name: str, rows: list[dict]) -> None:
    (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_duplicate_questions_are_merged_and_reported(tmp_path: Path) -> None:
    # issue 14.4: the same question under two ids (as 20006_10 / 20006_12 in the real data), with
    # other white space and case and another writer's arguments, is judged once
    dup = question("q0dup", "A", text="  question q0: HOW many ships did she record? ")
    dup["answer_cases"][0]["argument"] = "Another writer's argument."
    _write(
        tmp_path,
        "items.jsonl",
        [question("q0", "A", text="Question q0: how many ships did she record?"), question("q1", "B"), dup],
    )
    store = create_study(
        load_manifest(base_manifest(conditions=["PSA"], ratings_per_item=1, tasks_per_rater=2)),
        tmp_path / "s.sqlite",
        base_dir=tmp_path,
    )
    try:
        assert store.notes() == ["merged duplicate question q0dup into q0 (same text, options and passage)"]
        rid = str(store.rater_for("prolific:r", "prolific")["id"])
        seen = []
        while (a := store.next_assignment(rid)[0]) is not None:
            store.start_timer(a.id, rid)
            store.submit(a.id, rid, {"answer": "A"})
            seen.append(a.question_id)
        assert sorted(seen) == ["q0", "q1"]  # the old code also served q0dup: the same question twice
        assert sum(c["total"] for c in store.progress()["conditions"].values()) == 2
    finally:
        store.close()


def test_duplicates_that_disagree_about_the_answer_are_refused(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "items.jsonl",
        [question("q0", "A"), question("q1", "B", text="Question q0: how many ships did she record?")],
    )
    with pytest.raises(
        DataError, match="questions 'q0' and 'q1' have the same text and options but different true answers"
    ):
        create_study(load_manifest(base_manifest()), tmp_path / "s.sqlite", base_dir=tmp_path)


def test_passage_conditions_need_a_passage(tmp_path: Path) -> None:
    # issue 14.9: P/PS/PSA on items without source_text are refused, naming conditions and items
    bare = [{**question(f"n{i}"), "source_text": None} for i in range(7)]
    _write(tmp_path, "items.jsonl", [question("ok"), *bare])
    m = base_manifest(conditions=["PS", "PSA", {"name": "args", "show": ["snippets", "arguments"]}])
    with pytest.raises(ConfigError) as e:
        create_study(load_manifest(m), tmp_path / "a.sqlite", base_dir=tmp_path)
    msg = str(e.value)
    assert "PS: 7 items (n0, n1, n2, n3, n4, ...); PSA: 7 items (n0, n1, n2, n3, n4, ...)" in msg
    assert "args" not in msg and "allow_missing_passage: true" in msg and "\n" not in msg
    assert not (tmp_path / "a.sqlite").exists()  # refused before the database is made
    # without the passage conditions the same items are fine; with the override, noted
    create_study(
        load_manifest({**m, "conditions": ["Q", {"name": "args", "show": ["snippets", "arguments"]}]}),
        tmp_path / "b.sqlite",
        base_dir=tmp_path,
    ).close()
    store = create_study(
        load_manifest({**m, "allow_missing_passage": True}), tmp_path / "c.sqlite", base_dir=tmp_path
    )
    assert "shown without a passage (allow_missing_passage): PS: 7 items" in store.notes()[0]
    store.close()


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        # defaults of the example: 4 tasks over P and PSA; P takes no seed-004 catch trial
        (
            {"conditions": ["P", "PSA"], "tasks_per_rater": 4, "catch_rate": 0.1},
            [
                "catch rule off in condition P: no catch trial fits it",
                "catch rule unreachable in condition PSA: a rater does at most 2 tasks there "
                "(tasks_per_rater 4 over 2 conditions), fewer than catch_min 5; raise tasks_per_rater to 10",
            ],
        ),
        # 20 tasks in PSA at 10%: about 2 catch trials, 5 needed
        (
            {"conditions": ["PSA"], "tasks_per_rater": 20, "catch_rate": 0.1},
            [
                "catch rule fires only by chance in condition PSA: raters get about 2.0 "
                "catch trials there, fewer than catch_min 5; set catch_per_condition: 5"
            ],
        ),
        # guaranteed: nothing to say
        ({"conditions": ["PSA"], "tasks_per_rater": 20, "catch_rate": 0.1, "catch_per_condition": 5}, []),
    ],
)
def test_create_says_when_the_catch_rule_cannot_fire(tmp_path: Path, over: dict, expected: list[str]) -> None:
    # issue 14.3
    _write(tmp_path, "items.jsonl", [question(f"q{i}", "AB"[i % 2]) for i in range(20)])
    store = create_study(load_manifest(base_manifest(**over)), tmp_path / "s.sqlite", base_dir=tmp_path)
    notes = store.notes()
    store.close()
    assert len(notes) == len(expected)
    for note, start in zip(notes, expected, strict=True):
        assert note.startswith(start), note


def test_min_tasks_for_code_cannot_exceed_the_quota() -> None:
    with pytest.raises(ConfigError, match=r"min_tasks_for_code \(5\) cannot exceed tasks_per_rater \(4\)"):
        load_manifest(base_manifest(min_tasks_for_code=5))


def test_whole_manifest_rules_read_without_a_location_prefix() -> None:
    with pytest.raises(ConfigError) as e:
        load_manifest(base_manifest(max_duration_s=100))
    assert ": max_duration_s (100.0)" in str(e.value) and "(top level)" not in str(e.value)
    # untimed tasks have no per-task length to compare with: any session length is accepted
    assert load_manifest(base_manifest(max_duration_s=100, time_limit_s=None)).max_duration_s == 100
    assert load_manifest(base_manifest(max_duration_s=123)).max_duration_s == 123
