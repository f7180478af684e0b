"""Issue 12.5: each seed-004 concept has one home, and every old entry point answers from it.

Homes: judging conditions and catch trials in ``seerbench.conditions``, verbatim quote checks in
``seerbench.quotes``, question-JSONL reading in ``seerbench.datasets.read_questions_jsonl``. The
first tests pin the unified rules on inputs worked out by hand; the last ones check that the old
entry points (datasets, protocols, study, agents) are the home or give its answer.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

import seerbench.agents
import seerbench.datasets
import seerbench.datasets._conditions
import seerbench.datasets._replay
import seerbench.protocols
from seerbench import conditions, quotes
from seerbench.conditions import EVIDENCE_CONDITIONS, JUDGING_CONDITIONS, JudgingCondition, make_catch_trials
from seerbench.errors import ConfigError, DataError
from seerbench.protocols import EvidenceDebate
from seerbench.study import build_catch_trials, load_items, load_manifest
from seerbench.study._items import eligible, missing_passages
from seerbench.types import AnswerCase, Question

from .protocols.scripts import Recorder, judge_reply, model_agent, model_judge
from .study.conftest import base_manifest

# --------------------------------------------------------------------------------------------------
# quotes: one rule (white space folded, nothing else), worked out by hand

SOURCE = "The red tower\nstood  over the bay. Its paint flaked."


@pytest.mark.parametrize(
    ("quote", "source", "verified"),
    [
        ("red tower stood over", SOURCE, True),  # line break and double space fold to one space
        ("  tower\tstood over the bay.  ", SOURCE, True),  # ends trimmed, tab folded
        ("bay. Its", SOURCE, True),
        ("The Red tower", SOURCE, False),  # case is not folded: the words must be the passage's
        ("paint flaked!", SOURCE, False),  # nor punctuation
        ("", SOURCE, False),  # an empty quote is no evidence (the replay agent used to say True)
        (" \n ", SOURCE, False),
        ("anything", None, None),  # no passage: cannot be checked
        ("anything", " \n ", None),  # a blank passage is no passage (used to be False)
        ("", "", None),  # (the replay agent used to say True)
    ],
)
def test_quote_rule(quote: str, source: str | None, verified: bool | None) -> None:
    assert quotes.verify_quote(quote, source) is verified
    assert quotes.check_quotes([quote], source)[0].verified is verified


def test_quote_checks_have_one_home() -> None:
    assert seerbench.agents.check_quotes is quotes.check_quotes
    assert seerbench.check_quotes is quotes.check_quotes
    assert seerbench.datasets.verify_quote is quotes.verify_quote
    assert seerbench.datasets._replay.verify_quote is quotes.verify_quote


async def test_replay_agent_marks_quotes_with_the_one_rule() -> None:
    q = _q(
        "r1",
        source="Ships: three.\nNo ship was lost.",
        a=("arg", ["Ships:  three. No ship", "ships: three", ""]),
    )
    turn = await seerbench.datasets.ReplayAgent()(q, "A", [])
    assert [x.verified for x in turn.quotes] == [True, False, False]
    assert turn.quotes == quotes.check_quotes(q.case("A").quotes, q.source_text)


# --------------------------------------------------------------------------------------------------
# judging conditions: one table


def test_condition_table() -> None:
    assert {n: c.show for n, c in JUDGING_CONDITIONS.items()} == {
        "Q": (),
        "S": ("snippets",),
        "SA": ("snippets", "arguments"),
        "P": ("passage",),
        "PS": ("passage", "snippets"),
        "PSA": ("passage", "snippets", "arguments"),
    }
    assert [n for n, c in JUDGING_CONDITIONS.items() if c.needs_source_text] == ["P", "PS", "PSA"]
    assert [n for n, c in JUDGING_CONDITIONS.items() if c.fits_mismatch_catch] == ["S", "SA", "PS", "PSA"]
    assert EVIDENCE_CONDITIONS == ("S", "SA", "PS", "PSA")
    # any shown parts map onto the table; transcript is not a seed part
    assert (
        JudgingCondition.from_show(["arguments", "transcript", "passage", "snippets"])
        is JUDGING_CONDITIONS["PSA"]
    )
    assert JudgingCondition.from_show(["transcript"]) is JUDGING_CONDITIONS["Q"]
    custom = JudgingCondition.from_show(["arguments"])
    assert (custom.name, custom.fits_mismatch_catch, custom.needs_source_text) == ("A", True, False)


def test_a_blank_passage_is_no_passage() -> None:
    q = _q("b1", source=" \n ", a=("arg", ["s"]), b=("arg", ["s"]))
    with pytest.raises(
        DataError, match="condition PS shows the passage, but question 'b1' has no source_text"
    ):
        conditions.judge_material(q, "PS")  # used to render an empty passage
    assert conditions.judge_material(q, "S").passage is None


def test_condition_entry_points_answer_from_the_table() -> None:
    d = seerbench.datasets
    assert d.judge_material is conditions.judge_material
    assert d.canonical_condition is conditions.canonical_condition
    assert d.make_catch_trials is conditions.make_catch_trials
    assert d.JudgeMaterial is conditions.JudgeMaterial and d.OptionMaterial is conditions.OptionMaterial
    assert {n: c.description for n, c in JUDGING_CONDITIONS.items()} == d.CONDITIONS
    assert seerbench.datasets._conditions.CONDITIONS is d.CONDITIONS
    assert seerbench.protocols.CONDITIONS == EVIDENCE_CONDITIONS
    # the study's shorthands are the table's names and aliases, and say the same
    names = [a for c in JUDGING_CONDITIONS.values() for a in (c.name, c.name.lower(), *c.aliases)]
    m = load_manifest(base_manifest(conditions=names))
    for name, cond in zip(names, m.conditions, strict=True):
        assert tuple(cond.show) == conditions.get_condition(name).show
        assert cond.judging is conditions.get_condition(name)
    # letter strings outside the table are no condition anywhere (the study used to take "AP")
    for bad in ("AP", "PA", "A", "SP"):
        with pytest.raises(ConfigError, match="unknown judging condition"):
            conditions.canonical_condition(bad)
        with pytest.raises(ConfigError, match=f"conditions.0: .*unknown condition shorthand '{bad}'"):
            load_manifest(base_manifest(conditions=[bad]))


@pytest.mark.parametrize("name", ["S", "SA", "PS", "PSA"])
def test_evidence_debate_reads_the_table(name: str) -> None:
    rec = Recorder(f"one-home-{name}", judge_reply(0.5))
    p = EvidenceDebate(model_judge(rec), model_agent(rec), condition=name)
    assert p.judge_sees_source is JUDGING_CONDITIONS[name].passage


# --------------------------------------------------------------------------------------------------
# catch trials: one rule, worked out by hand


def _q(
    qid: str,
    *,
    text: str | None = None,
    true: str = "A",
    a: tuple[str | None, list[str]] = (None, []),
    b: tuple[str | None, list[str]] = (None, []),
    passage_id: str | None = None,
    source: str | None = None,
    **meta: Any,
) -> Question:
    cases = [
        AnswerCase(
            short=s, long=f"{qid} option {s}", value=1.0 if s == true else 0.0, argument=arg, quotes=qs
        )
        for s, (arg, qs) in (("A", a), ("B", b))
    ]
    md = {**meta, **({"passage_id": passage_id} if passage_id else {})}
    return Question(
        id=qid, text=text or f"Question {qid}?", answer_cases=cases, source_text=source, metadata=md
    )


def _catch_pool() -> list[Question]:
    return [
        _q("t1", text="Who rang the bell?", passage_id="p1", a=("t1 A", ["t1a"]), b=("t1 B", ["t1b"])),
        # true option A has nothing to show: not a target; its only material (B) makes it a donor
        _q("t2", passage_id="p1", b=("t2 B", ["s2"])),
        _q("t3", passage_id="p2", a=("t3 A", []), b=("t3 B", ["t3b"])),
        # on p2 the only other question with material; its only material is on A
        _q("t4", passage_id="p2", true="B", a=("t4 A", ["s4"])),
        # t1 again under another id (white space and case differ): never t1's donor
        _q("dup", text="  who rang THE bell? ", passage_id="p1", a=("dup A", []), b=("dup B", [])),
        # already a catch trial: neither target nor donor
        _q("old", passage_id="p1", a=("old A", ["o"]), b=("old B", ["o"]), catch_trial=True),
    ]


def test_catch_trial_rule_by_hand() -> None:
    cts = make_catch_trials(_catch_pool(), fraction=1.0, seed=0)
    # targets: t1, t3, dup (t2 and t4 have no material on their true option, old is a catch trial)
    assert [c.id for c in cts] == ["ct_t1", "ct_t3", "ct_dup"]
    t1, t3, dup = cts
    # t1 on p1: t2 is the only same-passage donor (dup has t1's text, old is a catch trial); t2's
    # only option with material is B
    assert (t1.case("A").argument, t1.case("A").quotes) == ("t1 A", ["t1a"])  # the true option keeps its own
    assert (t1.case("B").argument, t1.case("B").quotes) == ("t2 B", ["s2"])
    assert t1.case("B").metadata["catch_donor"] == "t2/B"
    assert {
        k: t1.metadata[k] for k in ("catch_trial", "catch_of", "catch_donor", "catch_seed", "passage_id")
    } == {
        "catch_trial": True,
        "catch_of": "t1",
        "catch_donor": "t2",
        "catch_seed": 0,
        "passage_id": "p1",
    }
    # t3 on p2: the donor is t4, whose material is on A (an argument with no snippets stays so)
    assert (t3.case("B").argument, t3.case("B").quotes, t3.metadata["catch_donor"]) == ("t4 A", ["s4"], "t4")
    # dup on p1: t1 has its text, so t2 again
    assert (dup.case("B").argument, dup.metadata["catch_donor"]) == ("t2 B", "t2")
    assert all(c.true_case.short == "A" for c in cts)


def test_catch_trials_fall_back_to_any_donor_and_skip_without_one() -> None:
    # no passage (a blank source_text is none): any other question with material is a donor
    solo = [_q("x", source="  ", a=("x A", []), b=("x B", [])), _q("y", b=("y B", ["y"]))]
    (ct,) = make_catch_trials(solo, fraction=1.0, seed=3)
    assert (ct.id, ct.case("B").argument, ct.case("B").quotes) == ("ct_x", "y B", ["y"])
    assert make_catch_trials(solo[:1], fraction=1.0, seed=3) == []  # no donor, no catch trial
    with pytest.raises(ConfigError, match=r"fraction must lie in \[0, 1\], got 1.5"):
        make_catch_trials(solo, fraction=1.5, seed=0)


def test_catch_trials_do_not_depend_on_order_and_fraction_is_a_prefix() -> None:
    pool = _catch_pool() + [
        _q(f"n{i}", passage_id="p3", a=(f"n{i} A", []), b=(f"n{i} B", [])) for i in range(9)
    ]
    full = make_catch_trials(pool, fraction=1.0, seed=5)
    assert len(full) == 12  # t1, t3, dup and the nine n*
    shuffled = pool[:]
    random.Random(1).shuffle(shuffled)
    assert sorted(make_catch_trials(shuffled, fraction=1.0, seed=5), key=lambda q: q.id) == sorted(
        full, key=lambda q: q.id
    )
    some = make_catch_trials(pool, fraction=0.25, seed=5)
    assert len(some) == 3  # round(0.25 * 12)
    more = make_catch_trials(pool, fraction=0.5, seed=5)
    assert len(more) == 6 and {q.id for q in some} <= {q.id for q in more}
    assert all(q in full for q in more)  # a chosen question's catch trial is the same in any fraction


def test_study_catch_trials_are_the_one_rule_with_the_questions_ids(tmp_path: Path) -> None:
    pool = _catch_pool()[:5]  # the study takes no ready-made catch trial as a question item
    (tmp_path / "items.jsonl").write_text("".join(q.model_dump_json() + "\n" for q in pool))
    m = load_manifest(base_manifest(conditions=["P", "PS", "SA", {"name": "args", "show": ["arguments"]}]))
    items = load_items(m, tmp_path)
    catch = build_catch_trials(items, seed=9)
    home = make_catch_trials(pool, fraction=1.0, seed=9)
    assert [c.key for c in catch] == ["catch:t1", "catch:t3", "catch:dup"]
    # the same questions, with the original id back (a rater never sees a question twice)
    assert [c.question for c in catch] == [h.model_copy(update={"id": h.metadata["catch_of"]}) for h in home]
    assert all(c.catch == "mismatch" and c.correct == "A" for c in catch)
    # they fit where snippets or arguments are shown, the passage rule is the table's too
    assert [eligible(catch[0], c, "two_option") for c in m.conditions] == [False, True, True, True]
    assert missing_passages(items, m) == {
        "P": ["t1", "t2", "t3", "t4", "dup"],
        "PS": ["t1", "t2", "t3", "t4", "dup"],
    }


# --------------------------------------------------------------------------------------------------
# question JSONL: one reader


def test_study_reads_question_files_with_the_one_reader(tmp_path: Path) -> None:
    qs = _catch_pool()[:2]
    lines = [qs[0].model_dump_json(), "", qs[1].model_dump_json()]
    (tmp_path / "items.jsonl").write_text("\n".join(lines) + "\n")
    m = load_manifest(base_manifest())
    assert [it.question for it in load_items(m, tmp_path)] == list(
        seerbench.datasets.read_questions_jsonl(tmp_path / "items.jsonl")
    )
    # the same errors, line-numbered, for every bad line the reader knows
    bad = json.loads(lines[0])
    bad["answer_cases"] = bad["answer_cases"][:1]
    for content, message in [
        ("{not json", "items.jsonl:3: invalid JSON"),
        (
            json.dumps(bad),
            "items.jsonl:3: answer_cases: List should have at least 2 items after validation, not 1",
        ),
        (lines[2], "items.jsonl:3: duplicate question id 't2' (first seen at items.jsonl:1)"),
    ]:
        (tmp_path / "items.jsonl").write_text(lines[2] + "\n\n" + content + "\n")
        with pytest.raises(DataError) as direct:
            seerbench.datasets.read_questions_jsonl(tmp_path / "items.jsonl")
        with pytest.raises(DataError) as study:
            load_items(m, tmp_path)
        assert str(direct.value) == str(study.value) == message
