"""Evidence debate (seed 004), best-of-N agents, the calculator tool loop, and replayed human
arguments through the real protocols."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from seerbench.agents import AgentContext, BestOfNAgent, check_quotes, parse_evidence
from seerbench.datasets import ReplayAgent, binary_view, load_single_turn_debate
from seerbench.errors import ConfigError
from seerbench.models import ChatMessage, GenerateConfig
from seerbench.protocols import Consultancy, EvidenceDebate, SequentialDebate, SimultaneousDebate
from seerbench.tools import calculate, get_tools
from seerbench.types import Question

from .scripts import ASSIGNED, SECRET, Recorder, judge_reply, model_agent, model_judge, question, run

FIXTURES = Path(__file__).parent.parent / "datasets" / "fixtures"


def evidence_reply(messages: Sequence[ChatMessage], seed: int | None) -> str:
    side = ASSIGNED.search(messages[0].content).group(1)  # type: ignore[union-attr]
    return (
        f"ARGUMENT: Side {side} is right, read the passage.\n"
        "QUOTE: The vault code is   4417\n"  # verbatim up to whitespace
        f'QUOTE: "The code was changed by {side}."'  # not in the passage
    )


# --------------------------------------------------------------------------------------------------
# evidence debate


def test_check_quotes_and_parse_evidence() -> None:
    qs = check_quotes(["vault code is 4417", "vault\ncode", "code is 9"], SECRET)
    assert [q.verified for q in qs] == [True, True, False]
    assert [q.verified for q in check_quotes(["x"], None)] == [None]
    arg, quotes, truncated = parse_evidence('ARGUMENT: It is A.\nQuote 1: "first"\nQUOTE: second\nmore words')
    assert (arg, quotes, truncated) == ("It is A. more words", ["first", "second"], False)
    long = "ARGUMENT: " + "x" * 600 + "\n" + "\n".join(f"QUOTE: {'q' * 300}" for _ in range(4))
    arg, quotes, truncated = parse_evidence(long)
    # arguments are cut to 500 characters, quotes to 250, at most 3 quotes
    assert truncated and len(arg) == 500 and len(quotes) == 3 and all(len(q) == 250 for q in quotes)


@pytest.mark.parametrize(
    ("condition", "sees_arguments", "sees_passage"),
    [("S", False, False), ("SA", True, False), ("PS", False, True), ("PSA", True, True)],
)
def test_evidence_debate_conditions(condition: str, sees_arguments: bool, sees_passage: bool) -> None:
    judge = Recorder(f"ev-judge-{condition}", judge_reply(0.5))
    agent = Recorder(f"ev-agent-{condition}", evidence_reply)
    p = EvidenceDebate(model_judge(judge), model_agent(agent), condition=condition)
    assert p.config_name() == f"EvidenceDebate_{condition}"
    qr = run(p.run_question(question()))
    assert qr.symmetric and agent.calls == 2 and judge.calls == 1
    turns = qr.cases["A"].transcript.turns
    assert [t.speaker for t in turns] == ["debater_A", "debater_B"]
    # the transcript keeps the arguments and the quotes, checked against the passage
    for t, side in zip(turns, "AB", strict=True):
        assert t.content == f"Side {side} is right, read the passage."
        assert [(q.text, q.verified) for q in t.quotes] == [
            ("The vault code is   4417", True),
            (f"The code was changed by {side}.", False),
        ]
    # debaters see the passage whatever the condition
    assert all(SECRET in u for u in agent.users())
    [shown] = judge.users()
    assert ("Side A is right" in shown) is sees_arguments
    assert ("(argument hidden)" in shown) is (not sees_arguments)
    assert (SECRET in shown) is sees_passage
    # quotes always reach the judge, with their verification marks
    assert 'Quote 1 [verified in the passage]: "The vault code is   4417"' in shown
    assert 'Quote 2 [NOT found in the passage]: "The code was changed by B."' in shown


def test_evidence_debate_bad_condition() -> None:
    judge = Recorder("ev-bad", judge_reply())
    with pytest.raises(ConfigError, match=r"condition 'X' is not one of \['S', 'SA', 'PS', 'PSA'\]"):
        EvidenceDebate(model_judge(judge), model_agent(judge), condition="X")


# --------------------------------------------------------------------------------------------------
# best-of-N


def test_best_of_n_keeps_the_candidate_the_preference_judge_likes_most() -> None:
    base_cfg = GenerateConfig(max_tokens=50, temperature=0.8, seed=0)
    seeds = {base_cfg.sample_seed(i): i for i in range(3)}
    agent = Recorder("bon-agent", lambda m, s: f"candidate {seeds[s]}" if s in seeds else "??")
    # the preference judge's P(A) after reading candidate i
    p_a = {0: 0.3, 1: 0.9, 2: 0.5}

    def pref(prompt: str) -> float:
        return next(p for i, p in p_a.items() if f"candidate {i}" in prompt)

    pjudge = Recorder("bon-judge", judge_reply(pref))
    bon = BestOfNAgent(
        model_agent(agent, generation=GenerateConfig(max_tokens=50, seed=0)),
        3,
        model_judge(pjudge),
        temperature=0.8,
    )
    assert bon.name == "scripted:bon-agent-bo3"
    t = run(bon(question(), "A", [], AgentContext("consultancy", 1, 1, "consultant")))
    # arguing for A, the best is candidate 1 (P(A) = 0.9)
    assert t.content == "candidate 1"
    assert t.metadata["best_of_n"] == 3
    assert t.metadata["preference_scores"] == [pytest.approx(0.3), pytest.approx(0.9), pytest.approx(0.5)]
    assert agent.calls == 3 and pjudge.calls == 3
    # arguing for B the score is P(B) = 1 - P(A): 0.7, 0.1, 0.5 -> candidate 0
    t = run(bon(question(), "B", [], AgentContext("consultancy", 1, 1, "consultant")))
    assert t.content == "candidate 0"
    assert t.metadata["preference_scores"] == [pytest.approx(0.7), pytest.approx(0.1), pytest.approx(0.5)]
    with pytest.raises(ValueError, match="n >= 1"):
        BestOfNAgent(model_agent(agent), 0, model_judge(pjudge))


def test_best_of_n_inside_a_protocol() -> None:
    agent = Recorder("bon-p-agent", lambda m, s: f"cand-{s}")
    pjudge = Recorder("bon-p-pref", judge_reply(0.6))
    judge = Recorder("bon-p-judge", judge_reply(0.5))
    bon = BestOfNAgent(model_agent(agent), 2, model_judge(pjudge))
    qr = run(Consultancy(model_judge(judge), bon).run_question(question()))
    # 2 cases x 2 candidates; 2 cases x 2 preference verdicts; 2 verdicts of the real judge
    assert agent.calls == 4 and pjudge.calls == 4 and judge.calls == 2
    assert qr.cases["A"].transcript.turns[0].metadata["best_of_n"] == 2


# --------------------------------------------------------------------------------------------------
# calculator


def test_calculator() -> None:
    assert calculate("17 * 23") == "391"
    assert calculate("6 / 2") == "3"
    assert calculate("7 / 2") == "3.5"
    assert calculate("(2 + 3) ** 2 - -1") == "26"
    assert calculate("1 / 0").startswith("error")
    assert calculate("2 ** 100").startswith("error: exponent too large")
    assert calculate("__import__('os').system('true')").startswith("error")
    assert calculate("True + 1").startswith("error")
    assert calculate("1 +").startswith("error")
    with pytest.raises(ConfigError, match=r"unknown tool 'abacus'; known tools: calculator"):
        get_tools(["abacus"])


def test_agent_calculator_tool_loop() -> None:
    def reply(messages: Sequence[ChatMessage], seed: int | None) -> str:
        last = messages[-1].content
        if last.startswith("Tool results:"):
            return "17 times 23 is 391, so A."
        return "Let me check.\nCALC(17 * 23)"

    agent = Recorder("calc-agent", reply)
    a = model_agent(agent, tools=["calculator"])
    assert a.name == "scripted:calc-agent+calc"
    t = run(a(question(), "A", [], AgentContext()))
    assert t.content == "17 times 23 is 391, so A."
    assert t.metadata["tool_calls"] == [{"call": "CALC(17 * 23)", "result": "391"}]
    assert agent.calls == 2
    first, second = agent.prompts
    assert "Tools: CALC(<arithmetic expression>) computes the expression exactly" in first[-1].content
    # the follow-up shows the model its own call and the result
    assert [m.role for m in second] == ["system", "user", "assistant", "user"]
    assert second[2].content == "Let me check.\nCALC(17 * 23)"
    assert second[3].content == "Tool results:\nCALC(17 * 23) = 391\nNow write your final argument."


def test_tool_loop_is_bounded_and_off_without_tools() -> None:
    agent = Recorder("calc-loop", lambda m, s: "CALC(1 + 1)")
    t = run(model_agent(agent, tools=["calculator"], max_tool_rounds=2)(question(), "A", []))
    assert agent.calls == 3  # first reply + 2 tool rounds
    assert len(t.metadata["tool_calls"]) == 2
    plain = Recorder("calc-none", lambda m, s: "CALC(1 + 1)")
    t = run(model_agent(plain)(question(), "A", []))
    assert plain.calls == 1 and t.content == "CALC(1 + 1)" and "tool_calls" not in t.metadata


# --------------------------------------------------------------------------------------------------
# replayed human arguments through the real protocols


def _std() -> list[Question]:
    qs = load_single_turn_debate(
        FIXTURES / "single_turn_debate.jsonl", quality_path=FIXTURES / "QuALITY.v1.0.1.dev"
    )
    return [q for q in binary_view(qs, seed=0) if all(a.argument for a in q.answer_cases)]


def test_replay_consultancy_transcripts_carry_human_text() -> None:
    qs = _std()
    assert qs
    judge = Recorder("replay-cons-judge", judge_reply(0.5))
    p = Consultancy(model_judge(judge), ReplayAgent(show_snippets=False))
    for q in qs:
        qr = run(p.run_question(q))
        for case in q.answer_cases:
            [turn] = [t for t in qr.cases[case.short].transcript.turns if t.role == "agent"]
            assert turn.content == case.argument
            assert [x.text for x in turn.quotes] == case.quotes
    # the judge read the human arguments, not the passage
    assert all(q.source_text and q.source_text.strip() not in u for u in judge.users() for q in qs)
    for q in qs:
        for case in q.answer_cases:
            assert any(f"consultant (arguing for {case.short}): {case.argument}" in u for u in judge.users())


@pytest.mark.parametrize("proto", [SimultaneousDebate, SequentialDebate, EvidenceDebate])
def test_replay_debates_carry_both_human_arguments(proto: type) -> None:
    qs = _std()
    judge = Recorder(f"replay-{proto.__name__}", judge_reply(0.5))
    p = proto(model_judge(judge), ReplayAgent(show_snippets=False))
    for q in qs:
        qr = run(p.run_question(q))
        turns = qr.cases[q.shorts[0]].transcript.turns
        for case in q.answer_cases:
            mine = [t for t in turns if t.answer_case == case.short]
            assert mine and all(t.content == case.argument for t in mine)
            assert all(t.speaker == f"debater_{case.short}" for t in mine)
    assert judge.calls == len(qs) * (1 if p.symmetric else 2)


def test_replay_marks_repeated_turns_inside_a_protocol() -> None:
    q = _std()[0]
    judge = Recorder("replay-repeat", lambda m, s: "0.5" if "How likely" in m[-1].content else "Why?")
    qr = run(Consultancy(model_judge(judge), ReplayAgent(show_snippets=False), num_turns=2).run_question(q))
    agent_turns = [t for t in qr.cases["A"].transcript.turns if t.role == "agent"]
    # one human argument per option: the second turn repeats it, and says so
    assert [t.metadata["repeat"] for t in agent_turns] == [False, True]
    assert agent_turns[0].content == agent_turns[1].content == q.case("A").argument


def test_best_of_n_candidates_keep_their_own_tool_calls() -> None:
    cfg = GenerateConfig(max_tokens=50, temperature=0.8, seed=0)
    seeds = {cfg.sample_seed(i): i for i in range(2)}

    def reply(messages: Sequence[ChatMessage], seed: int | None) -> str:
        if messages[-1].content.startswith("Tool results:"):
            return "final " + messages[-1].content.split(" = ")[1].split("\n")[0]
        return f"CALC({seeds[seed] + 1} * 10)"  # candidate 0 computes 1 * 10, candidate 1 2 * 10

    agent = Recorder("bon-tools", reply)
    cands = run(
        model_agent(agent, tools=["calculator"], generation=GenerateConfig(seed=0)).candidates(
            question(), "A", [], AgentContext(), 2, 0.8
        )
    )
    assert [c.content for c in cands] == ["final 10", "final 20"]
    assert [c.metadata["tool_calls"] for c in cands] == [
        [{"call": "CALC(1 * 10)", "result": "10"}],
        [{"call": "CALC(2 * 10)", "result": "20"}],
    ]
