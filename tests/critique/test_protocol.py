"""CritiqueJudge in a `seerbench run` grid next to NaiveJudge, on critiques that `seerbench
critique` wrote: the judge sees the top-k critiques, stats pair the two protocols."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from seerbench.models import ChatMessage, GenerateConfig, register_scripted
from tests.test_cli_global import one_line_error, run_main


def _critique_aware(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    """A judge that gives P(correct) = 0.1 exactly when it is shown a critique naming a false
    step, and 0.5 otherwise."""
    text = "\n".join(m.content for m in messages)
    return "0.1" if "is wrong: it should give" in text else "0.5"


register_scripted("critique-aware", _critique_aware, replace=True)


def _critiques(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    model: str,
    n: int = 6,
) -> Path:
    cfg = tmp_path / "critique.yaml"
    cfg.write_text(
        json.dumps(
            {
                "model": model,
                "dataset": {"name": "arithmetic", "n": n, "seed": 4},
                "kinds": ["reference", "misleading"],
                "flaws": ["number"],
                "out": "crit",
                "temperatures": [0.0, 0.5, 1.0],
            }
        )
    )
    code, _, err = run_main(["critique", str(cfg), "--json"], capsys, monkeypatch)
    assert code == 0, err
    return tmp_path / "crit" / "critiques.jsonl"


def _grid(tmp_path: Path, judge: str, top_k: int = 2, **extra: object) -> Path:
    cfg = tmp_path / "grid.yaml"
    cfg.write_text(
        json.dumps(
            {
                "name": "crit-grid",
                "dataset": {"name": "critiques", "path": "crit/critiques.jsonl", **extra},
                "judge_models": [judge],
                "protocols": ["NaiveJudge", {"name": "CritiqueJudge", "top_k": top_k}],
                "elicitation": {"order": ["verbalized"]},
                "n_boot": 200,
                "out": str(tmp_path / "runs"),
            }
        )
    )
    return cfg


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_judge_with_critiques_vs_without_in_a_grid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _critiques(tmp_path, capsys, monkeypatch, "scripted:critic")
    code, _, err = run_main(["run", str(_grid(tmp_path, "scripted:critique-aware"))], capsys, monkeypatch)
    assert code == 0, err
    runs = tmp_path / "runs"
    naive = _lines(runs / "NaiveJudge/J_scripted-critique-aware/results.jsonl")
    crit = _lines(runs / "CritiqueJudge_k2/J_scripted-critique-aware/results.jsonl")
    assert len(naive) == len(crit) == 12
    # worked by hand: without critiques every verdict is 0.5 (accuracy counts a tie as 0.5); with
    # them, a misleading answer's top critique names its false step, so P(correct) = 0.1 and the
    # judge is right; a reference answer's critiques name none, so it stays at 0.5
    for line in naive:
        assert line["judge_accuracy"] == 0.5
    for line in crit:
        kind = "misleading" if str(line["question_id"]).endswith(":misleading") else "reference"
        case: dict[str, object] = line["answer_cases"][0]  # type: ignore[index]
        turns = case["case_probs"]["transcript"]  # type: ignore[index]
        assert 1 <= len(turns) <= 2 and all(t["speaker"].startswith("critique ") for t in turns)
        assert line["judge_accuracy"] == (1.0 if kind == "misleading" else 0.5)
    code, out, err = run_main(["stats", str(runs), "--baseline", "NaiveJudge", "--json"], capsys, monkeypatch)
    assert code == 0, err
    assert "CritiqueJudge_k2" in out


def test_refusals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _critiques(tmp_path, capsys, monkeypatch, "scripted:critic", n=2)
    code, _, err = run_main(["run", str(_grid(tmp_path, "scripted:coin", top_k=0))], capsys, monkeypatch)
    assert code == 2 and "top_k must be an integer >= 1" in one_line_error(err)
    # model answers have correct: null unless the text names an option; refused unless skipped
    cfg = tmp_path / "critique.yaml"
    cfg.write_text(
        json.dumps(
            {
                "model": "scripted:critic",
                "dataset": {"name": "reading", "n": 2},
                "kinds": ["model"],
                "out": "crit2",
                "temperatures": [0.0],
            }
        )
    )
    assert run_main(["critique", str(cfg)], capsys, monkeypatch)[0] == 0
    g = _grid(tmp_path, "scripted:coin")
    g.write_text(g.read_text().replace("crit/critiques.jsonl", "crit2/critiques.jsonl"))
    code, _, err = run_main(["run", str(g)], capsys, monkeypatch)
    assert code == 2 and "has correct: null" in one_line_error(err) and "unknown: skip" in err
    # with unknown: skip the null answers are left out and counted (skipped was 0)
    from seerbench.datasets._critiques import critique_questions

    both = tmp_path / "both.jsonl"
    known, unknown = (
        (tmp_path / "crit" / "critiques.jsonl").read_text(),
        (tmp_path / "crit2" / "critiques.jsonl").read_text(),
    )
    both.write_text(known + unknown)
    qs = critique_questions(str(both), unknown="skip")
    n_null = sum(1 for ln in unknown.splitlines() if json.loads(ln)["correct"] is None)
    assert n_null > 0 and qs.skipped == n_null and len(qs) == len(known.splitlines())
    assert "has correct: null (left out: unknown: skip)" in qs.problems[0]


@pytest.mark.model
@pytest.mark.slow
def test_embedded_model_critiques_and_judges(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from seerbench.critique import read_critiques

    answers = read_critiques(_critiques(tmp_path, capsys, monkeypatch, "local", n=1))
    assert [a.answer_kind for a in answers] == ["reference", "misleading"]
    for a in answers:
        assert all(0 <= c.helpfulness <= 1 for c in a.critiques)
        assert len(a.critiques) + sum(len(c.merged) for c in a.critiques) <= 3
    code, _, err = run_main(["run", str(_grid(tmp_path, "local"))], capsys, monkeypatch)
    assert code == 0, err
    assert len(_lines(tmp_path / "runs/CritiqueJudge_k2/J_local/results.jsonl")) == 2


def test_a_critique_quote_is_said_to_be_checked_against_the_answer() -> None:
    # the judge read "verified in the passage" for a quote `seerbench critique` found in the answer
    from seerbench.protocols._critique import critique_turns
    from seerbench.render import turn_text
    from seerbench.types import AnswerCase, Question

    q = Question(
        id="q",
        text="Is it right?",
        answer_cases=[
            AnswerCase(short="A", long="flawed", value=1.0),
            AnswerCase(short="B", long="correct", value=0.0),
        ],
        metadata={
            "critiques": [
                {
                    "id": "c1",
                    "text": "The step 2 + 2 = 5 is wrong.",
                    "helpfulness": 0.9,
                    "quote": "2 + 2 = 5",
                    "quote_verified": True,
                }
            ]
        },
    )
    (turn,) = critique_turns(q, top_k=3)
    assert turn_text(turn) == (
        "critique 1 (helpfulness 0.90): The step 2 + 2 = 5 is wrong.\n"
        '  Quote 1 [verified in the answer or the passage]: "2 + 2 = 5"'
    )
