"""Critique generation: helpfulness from the elicitation chain, stable sorting, the CLI end to end
with a scripted model (resume costs no calls), refusals and failures."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from seerbench.critique import (
    Critique,
    CritiqueConfig,
    generate_critiques,
    read_critiques,
    sort_by_helpfulness,
)
from seerbench.models import (
    ChatMessage,
    GenerateConfig,
    Model,
    ScriptedBackend,
    read_usage,
    register_scripted,
)
from tests.test_cli_global import one_line_error, run_main


def test_sort_is_stable_and_by_helpfulness() -> None:
    cs = [
        Critique(id=f"c{i}", text=str(i), temperature=i / 10, helpfulness=h)
        for i, h in enumerate([0.2, 0.7, 0.2, 0.9, 0.7])
    ]
    assert [c.id for c in sort_by_helpfulness(cs)] == ["c3", "c1", "c4", "c0", "c2"]


def _by_temperature(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    """Critique i (temperature i/10) is 'Point i'; its helpfulness is fixed below; two share 0.5."""
    text = messages[-1].content
    if "Is this critique helpful" in text:
        i = int(re.search(r"Critique: Point (\d+) number", text).group(1))  # type: ignore[union-attr]
        return {0: "0.1", 1: "0.5", 2: "0.8", 3: "0.5", 4: "0.95"}[i]
    words = ["zero", "one", "two", "three", "four"]
    i = round(config.temperature * 10)
    return f"Point {i} number {words[i]}: a flaw about {words[i]} {i * 11}."


register_scripted("crit-by-temp", _by_temperature, replace=True)


def test_helpfulness_is_the_elicited_probability_and_orders_the_critiques(tmp_path: Path) -> None:
    cfg = CritiqueConfig.parse(
        {
            "model": "scripted:crit-by-temp",
            "dataset": {"name": "arithmetic", "n": 1},
            "kinds": ["reference"],
            "temperatures": [0.0, 0.1, 0.2, 0.3, 0.4],
            "elicitation": {"order": ["verbalized"]},
            "out": str(tmp_path / "r"),
        }
    )
    res = asyncio.run(generate_critiques(cfg))
    # the folder's usage log: 5 critiques (one per temperature), 5 helpfulness elicitations, and the
    # answer revised twice (with the most helpful critique, and with none)
    used = read_usage(tmp_path / "r")
    assert used is not None and used["runs"] == 1
    assert used["models"]["scripted:crit-by-temp"]["calls"] + used["total"]["cache_hits"] == 5 + 5 + 2
    (a,) = res.answers
    assert [(c.temperature, c.helpfulness) for c in a.critiques] == [
        (0.4, 0.95),
        (0.2, 0.8),
        (0.1, 0.5),
        (0.3, 0.5),
        (0.0, 0.1),
    ]


def _write(tmp_path: Path, **kw: object) -> Path:
    data = {
        "model": "scripted:critic",
        "dataset": {"name": "arithmetic", "n": 4, "seed": 2},
        "elicitation": {"order": ["verbalized"]},
        "out": "runs/c",
        **kw,
    }
    p = tmp_path / "critique.yaml"
    p.write_text(json.dumps(data))
    return p


def test_cli_end_to_end_and_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _write(tmp_path)
    code, out, _ = run_main(["critique", str(cfg), "--json"], capsys, monkeypatch)
    assert code == 0, out
    s = json.loads(out)
    answers = read_critiques(tmp_path / "runs/c/critiques.jsonl")
    assert s["answers"] == len(answers) == 12 and s["failed"] == 0
    assert [a.answer_kind for a in answers[:3]] == ["model", "reference", "misleading"]
    for a in answers:
        assert 1 <= len(a.critiques) <= 8
        hs = [c.helpfulness for c in a.critiques]
        assert hs == sorted(hs, reverse=True)
        for c in a.critiques:  # every quote is the answer's own words
            assert c.quote is not None and c.quote_verified is (c.quote in a.answer)
        kept = [c.text for c in a.critiques]
        assert len(kept) + sum(len(c.merged) for c in a.critiques) == 8  # one per temperature
    mis = [a for a in answers if a.answer_kind == "misleading" and a.metadata["flaw_kind"] == "number"]
    assert mis
    for a in mis:  # the scripted critic finds the false step, scored 0.9 and on top
        top = a.critiques[0]
        assert top.helpfulness == 0.9 and "is wrong" in top.text and a.metadata["original"] in top.text
    # a rerun resumes: every answer from before, no model call
    code, out, _ = run_main(["critique", str(cfg), "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out)["resumed"] == 12
    assert read_critiques(tmp_path / "runs/c/critiques.jsonl") == answers
    # a torn last line is redone
    p = tmp_path / "runs/c/critiques.jsonl"
    lines = p.read_text().splitlines()
    p.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:40])
    code, out, _ = run_main(["critique", str(cfg), "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out)["resumed"] == 11
    assert read_critiques(p) == answers
    # a smaller limit keeps every answer critiqued before (it deleted them), in the same order
    code, out, _ = run_main(["critique", str(cfg), "--limit", "1", "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out)["resumed"] == 3
    assert read_critiques(p) == answers


def test_cache_hit_rerun_makes_no_backend_call(tmp_path: Path) -> None:
    cfg = CritiqueConfig.parse(
        {
            "model": "scripted:critic",
            "dataset": {"name": "arithmetic", "n": 3},
            "elicitation": {"order": ["verbalized"]},
            "out": str(tmp_path / "a"),
        }
    )
    backend = ScriptedBackend("critic")
    m = Model("scripted:critic", backend)
    asyncio.run(generate_critiques(cfg, critic=m))
    first = backend.calls
    assert first >= 3 * 3 * 8
    asyncio.run(generate_critiques(cfg.model_copy(update={"out": str(tmp_path / "b")}), critic=m))
    assert backend.calls == first


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"temperatures": []}, "temperatures: give at least one temperature"),
        ({"dedup_threshold": 0}, "dedup_threshold"),
        ({"kinds": ["human"]}, "kinds.0"),
        ({"colour": 1}, "colour: unknown key"),
        ({"answers": "a.jsonl"}, "exactly one of `dataset`"),
    ],
)
def test_bad_config_is_one_line_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    kw: dict[str, object],
    msg: str,
) -> None:
    code, _, err = run_main(["critique", str(_write(tmp_path, **kw))], capsys, monkeypatch)
    assert code == 2 and msg in one_line_error(err)


def test_refusals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run_main(["critique", str(tmp_path / "none.yaml")], capsys, monkeypatch)
    assert code == 2 and "does not exist" in one_line_error(err)
    cfg = _write(tmp_path, dataset={"name": "reading", "n": 2}, kinds=["misleading"], flaws=["number"])
    code, _, err = run_main(["critique", str(cfg)], capsys, monkeypatch)
    assert code == 2 and "none of the flaws ['number'] can be planted" in one_line_error(err)
    assert run_main(["critique", str(_write(tmp_path))], capsys, monkeypatch)[0] == 0
    code, _, err = run_main(["critique", str(_write(tmp_path, temperatures=[0.0]))], capsys, monkeypatch)
    assert code == 2 and "another critique config" in one_line_error(err)


def _fails_on_helpfulness(messages: Sequence[ChatMessage], config: GenerateConfig, seed: int | None) -> str:
    return "no idea" if "Is this critique helpful" in messages[-1].content else "The step is wrong."


register_scripted("crit-no-help", _fails_on_helpfulness, replace=True)


def test_failed_answers_exit_1_and_write_no_made_up_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _write(tmp_path, model="scripted:crit-no-help", kinds=["reference"])
    code, _, err = run_main(["critique", str(cfg)], capsys, monkeypatch)
    err = " ".join(err.split())
    assert code == 1 and "4 answers failed" in err and "no helpfulness probability" in err
    assert read_critiques(tmp_path / "runs/c/critiques.jsonl") == []


def test_user_answers_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        {
            "question_id": "q1",
            "question": "A box holds 4 rows of 6 eggs. How many eggs?",
            "answer_kind": "reference",
            "answer": "4 x 6 = 24. The answer is 24.",
            "correct": True,
        },
        {
            "question_id": "q1",
            "question": "A box holds 4 rows of 6 eggs. How many eggs?",
            "answer_kind": "misleading",
            "answer": "4 x 6 = 26. The answer is 26.",
            "correct": False,
            "intended_flaw": "changed number: 24 -> 26",
            "intended_critique": "4 x 6 is 24, not 26.",
        },
    ]
    (tmp_path / "mine.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = _write(tmp_path, answers="mine.jsonl")
    data = json.loads(cfg.read_text())
    del data["dataset"]
    cfg.write_text(json.dumps(data))
    code, out, err = run_main(["critique", str(cfg), "--json"], capsys, monkeypatch)
    assert code == 0, err
    ref, mis = read_critiques(tmp_path / "runs/c/critiques.jsonl")
    assert (ref.answer_id, mis.answer_id) == ("q1:reference", "q1:misleading")
    assert mis.intended_critique == "4 x 6 is 24, not 26." and mis.correct is False
    top = mis.critiques[0]  # the scripted critic names the false step; the validator sees it covers the flaw
    assert top.text == "The step 4 x 6 = 26 is wrong: it should give 24." and top.quote_verified is True
    assert top.covers_intended == 0.95 and top.helpfulness == 0.9
    # user answers carry no ground truth beyond `correct`: no refinement is scored
    assert ref.refinement is None and mis.refinement is None
    m = json.loads(out)["measures"]
    assert m["intended_flaw_found"]["n"] == 1 and m["intended_flaw_found"]["estimate"] == 1.0
    assert m["refinement_win_rate"]["n"] == 0
    # the same config run from another working directory is the same config (the answers file
    # is identified by its content, not by the path it was reached by)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(["critique", cfg.name, "--json"], capsys, monkeypatch)
    assert code == 0, err
    assert json.loads(out)["resumed"] == 2
    # an edited answers file is another config
    (tmp_path / "mine.jsonl").write_text(
        "".join(json.dumps({**r, "answer": f"{r['answer']} "}) + "\n" for r in rows)
    )
    code, _, err = run_main(["critique", cfg.name, "--json"], capsys, monkeypatch)
    assert code == 2 and "another critique config" in err


def test_question_without_one_true_option_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    qs = tmp_path / "qs.jsonl"
    q = {
        "id": "x1",
        "text": "Pick one.",
        "answer_cases": [
            {"short": "A", "long": "red", "value": 1.0},
            {"short": "B", "long": "blue", "value": 1.0},
        ],
    }
    qs.write_text(json.dumps(q) + "\n")
    code, _, err = run_main(
        ["critique", str(_write(tmp_path, dataset={"name": str(qs)}))], capsys, monkeypatch
    )
    assert code == 2 and "question 'x1' has 2 true options" in one_line_error(err)
