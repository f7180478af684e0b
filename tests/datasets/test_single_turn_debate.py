"""single_turn_debate: pairing, correct option, empty snippets, passages, judging conditions,
catch trials, and the replay agent in consultancy- and debate-shaped runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seerbench.datasets import (
    ReplayAgent,
    binary_view,
    canonical_condition,
    generate_arithmetic,
    judge_material,
    load_single_turn_debate,
    make_catch_trials,
)
from seerbench.errors import ConfigError, DataError
from seerbench.types import AnswerCase, Question, Transcript, Turn


@pytest.fixture
def std(fx: Path) -> list[Question]:
    return load_single_turn_debate(fx / "single_turn_debate.jsonl")


@pytest.fixture
def std_with_passages(fx: Path) -> list[Question]:
    return load_single_turn_debate(fx / "single_turn_debate.jsonl", quality_path=fx / "QuALITY.v1.0.1.dev")


def test_pairs_arguments_across_lines_and_marks_correct_option(std: list[Question]) -> None:
    assert [q.id for q in std] == ["901_1", "901_2", "902_1"]
    q = std[0]
    assert q.text == "Why did Ana leave the harbour?"
    # argue_for_id 0 -> A: "To find her brother." (argue_for_correct true, from line 1)
    assert [(c.short, c.long, c.value) for c in q.answer_cases] == [
        ("A", "To find her brother.", 1.0),
        ("B", "To sell her boat.", 0.0),
    ]
    assert q.case("A").argument == "Ana's only worry was Tomas, missing since the storm (#1)."
    assert q.case("A").metadata["worker_id"] == "w1" and q.case("B").metadata["worker_id"] == "w2"
    # 901_2: "Red" (id 0, line 2) is correct; "Green" (id 1, line 1) is not
    assert [(c.long, c.is_true) for c in std[1].answer_cases] == [("Red", True), ("Green", False)]
    assert std[2].true_case.long == "The baker"


def test_empty_snippets_are_dropped(std: list[Question]) -> None:
    assert std[0].case("A").quotes == ["Ana had not seen Tomas since the storm."]
    assert std[0].case("B").quotes == ["She counted the coins the buyer might offer.", "The boat was old."]
    assert std[2].case("A").quotes == []  # all three slots were empty
    assert all(s.strip() for q in std for c in q.answer_cases for s in c.quotes)


def test_passages_attached_from_quality(std: list[Question], std_with_passages: list[Question]) -> None:
    assert all(q.source_text is None for q in std)
    assert std_with_passages[0].source_text is not None
    assert std_with_passages[0].source_text.startswith("Ana had not seen Tomas since the storm.")
    assert "<p>" not in (std_with_passages[2].source_text or "")


def _dump(p: Path, assignments: list[list[dict[str, object]]]) -> Path:
    p.write_text(
        "".join(json.dumps({"hit_id": f"h{i}", "output_data": a}) + "\n" for i, a in enumerate(assignments))
    )
    return p


def _arg(qid: str, fid: int, correct: object, **kw: object) -> dict[str, object]:
    opts = ["yes", "no"]
    return {
        "passage_id": "1",
        "question_id": qid,
        "question_text": "Q?",
        "argue_for": opts[fid],
        "argue_against": opts[1 - fid],
        "argue_for_id": fid,
        "argue_against_id": 1 - fid,
        "selected_snippets": ["s"],
        "argue_for_correct": correct,
        "argument": f"arg {qid} {fid}",
        **kw,
    }


def test_unpaired_and_inconsistent_questions_fail_or_are_skipped(tmp_path: Path) -> None:
    p = _dump(
        tmp_path / "args.jsonl",
        [
            [_arg("1", 0, True), _arg("2", 0, True)],
            [_arg("1", 1, False), _arg("2", 1, True)],
            [_arg("3", 0, True)],
        ],
    )
    with pytest.raises(
        DataError,
        match=(
            r"args\.jsonl:1 output_data\[1\] and args\.jsonl:2 output_data\[1\]: "
            r"question 1_2: both arguments have argue_for_correct=True"
        ),
    ):
        load_single_turn_debate(p)
    qs = load_single_turn_debate(p, lenient=True)
    assert [q.id for q in qs] == ["1_1"] and qs.skipped == 2
    assert any("question 1_3: expected 2 arguments (one per option), found 1" in m for m in qs.problems)


def test_bad_argument_field_names_line_and_index(tmp_path: Path) -> None:
    p = _dump(tmp_path / "a.jsonl", [[_arg("1", 0, True), _arg("1", 1, "no")]])
    with pytest.raises(
        DataError, match=r"a\.jsonl:1 output_data\[1\]: field 'argue_for_correct' should be bool"
    ):
        load_single_turn_debate(p)


def test_conditions_show_only_what_they_name(std: list[Question], std_with_passages: list[Question]) -> None:
    q = std[0]
    arg = q.case("A").argument or ""
    snippet = q.case("A").quotes[0]
    qonly = judge_material(q, "question").render()
    assert q.text in qonly and "To sell her boat." in qonly
    assert arg not in qonly and snippet not in qonly
    s = judge_material(q, "S").render()
    assert snippet in s and arg not in s
    sa = judge_material(q, "snippets+arguments")
    assert sa.condition == "SA" and arg in sa.render() and sa.passage is None
    assert judge_material(std[2], "S").options[0].snippets == []
    with pytest.raises(DataError, match="use condition SA"):
        judge_material(q, "PSA")
    psa = judge_material(std_with_passages[0], "PSA")
    assert psa.passage == std_with_passages[0].source_text and arg in psa.render()
    p_only = judge_material(std_with_passages[0], "P").render()
    assert "Ana had not seen Tomas" in p_only and arg not in p_only
    # the judge material never carries ground truth
    assert "value" not in psa.model_dump_json()


def test_condition_names_and_missing_material() -> None:
    assert [canonical_condition(c) for c in ("q", "none", "ps", "passage+snippets+arguments")] == [
        "Q",
        "Q",
        "PS",
        "PSA",
    ]
    with pytest.raises(ConfigError, match="unknown judging condition"):
        canonical_condition("PA")
    arithmetic = generate_arithmetic(1, seed=0)[0]
    with pytest.raises(DataError, match="has none"):
        judge_material(arithmetic, "S")
    with pytest.raises(DataError, match="no human-written arguments"):
        judge_material(
            arithmetic.model_copy(
                update={
                    "answer_cases": [c.model_copy(update={"quotes": ["x"]}) for c in arithmetic.answer_cases]
                }
            ),
            "SA",
        )


def test_catch_trials_move_another_questions_material_onto_the_wrong_option(std: list[Question]) -> None:
    cts = make_catch_trials(std, fraction=1.0, seed=0)
    assert sorted(c.id for c in cts) == ["ct_901_1", "ct_901_2", "ct_902_1"]
    by_id = {q.id: q for q in std}
    for ct in cts:
        orig = by_id[ct.metadata["catch_of"]]
        assert ct.metadata["catch_trial"] is True
        assert ct.true_case == orig.true_case  # the true option is untouched
        donor = by_id[ct.metadata["catch_donor"]]
        assert donor.id != orig.id
        wrong = ct.other(ct.true_case.short)
        assert (wrong.argument, wrong.quotes) in [(c.argument, c.quotes) for c in donor.answer_cases]
        if orig.metadata["passage_id"] == "901":  # a same-passage donor exists
            assert donor.metadata["passage_id"] == "901"
    assert len(make_catch_trials(std, fraction=0.34, seed=1)) == 1
    with pytest.raises(ConfigError):
        make_catch_trials(std, fraction=1.5, seed=0)


async def test_replay_returns_human_text_verbatim_and_verifies_quotes(
    std_with_passages: list[Question],
) -> None:
    agent = ReplayAgent()
    q = std_with_passages[1]  # "Red": snippet 2 has a line break the article does not
    turn = await agent(q, "A", [])
    assert turn.answer_case == "A" and turn.role == "agent"
    human = q.case("A").argument
    assert human is not None and human in turn.content
    assert [x.text for x in turn.quotes] == [
        "The red tower stood over the bay.",
        "Its red paint\nflaked in the wind.",
    ]
    assert [x.verified for x in turn.quotes] == [True, True]
    assert turn.metadata["repeat"] is False
    again = await agent(q, "A", [turn])
    assert again.content == turn.content and again.metadata["repeat"] is True


async def test_replay_unverifiable_and_fabricated_quotes(std: list[Question]) -> None:
    turn = await ReplayAgent()(std[0], "B", [])
    assert [x.verified for x in turn.quotes] == [None, None]  # no passage to check against
    fake = Question(
        id="f",
        text="?",
        source_text="the real passage",
        answer_cases=[
            AnswerCase(short="A", long="a", value=1.0, argument="x", quotes=["not in it"]),
            AnswerCase(short="B", long="b", value=0.0),
        ],
    )
    t = await ReplayAgent(show_snippets=False)(fake, "A", [])
    assert t.content == "x" and t.quotes[0].verified is False
    with pytest.raises(DataError, match="no human-written argument for option 'B'"):
        await ReplayAgent()(fake, "B", [])
    with pytest.raises(DataError, match="no option 'C'"):
        await ReplayAgent()(fake, "C", [])


async def test_consultancy_and_debate_runs_carry_human_text(std: list[Question]) -> None:
    """Consultancy: one run per answer case with a replayed consultant; debate: both sides in one
    transcript. Each transcript contains the human arguments verbatim."""
    agent = ReplayAgent(speaker="consultant")
    for q in binary_view(std, seed=0):
        for case in q.answer_cases:
            t = Transcript(question_id=q.id, protocol="consultancy")
            t.add(Turn(role="question", speaker="system", content=judge_material(q, "Q").render()))
            t.add(await agent(q, case.short, t.turns))
            assert case.argument is not None and case.argument in t.turns[-1].content
        debate = Transcript(question_id=q.id, protocol="single_turn_debate")
        for case in q.answer_cases:
            debate.add(await ReplayAgent(speaker=f"debater_{case.short}")(q, case.short, debate.turns))
        text = "\n".join(turn.content for turn in debate.turns)
        assert all(c.argument is not None and c.argument in text for c in q.answer_cases)
