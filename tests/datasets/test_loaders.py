"""Each published-format loader on its fixture; expected values worked out from the fixture files."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from seerbench.datasets import (
    load_dataset,
    load_generic,
    load_gpqa,
    load_gsm8k,
    load_medqa,
    load_mmlu,
    load_mmlu_pro,
    load_quality,
    load_truthfulqa,
    strip_html,
)
from seerbench.errors import ConfigError, DataError


def test_quality_article_is_hidden_source_and_difficulty_kept(fx: Path) -> None:
    qs = load_quality(fx / "QuALITY.v1.0.1.dev")
    assert [q.id for q in qs] == ["901_AAA_1", "901_AAA_2", "902_BBB_1"]
    q = qs[0]
    assert q.true_case.long == "To find her brother." and q.true_case.short == "B"
    assert q.source_text is not None and q.source_text.startswith("Ana had not seen Tomas")
    # untimed best distractors [1, 1, 3] -> option 1 -> label A
    assert q.metadata["best_distractor"] == "A"
    assert q.metadata["difficult"] == 1
    assert q.metadata["speed_validation_accuracy"] == pytest.approx(2 / 4)
    assert q.metadata["untimed_validation_accuracy"] == pytest.approx(2 / 3)
    assert "best_distractor" not in qs[1].metadata  # no validators
    assert q.judge_view().source_text is None


def test_quality_html_article_is_stripped(fx: Path) -> None:
    text = load_quality(fx / "QuALITY.v1.0.1.dev")[2].source_text
    assert text is not None
    assert "<" not in text and "The baker signed it with flour on his thumb." in text
    assert "Fish & chips." in text


def test_strip_html_leaves_plain_text_alone() -> None:
    assert strip_html("a < b and c > d\n\nnext") == "a < b and c > d\n\nnext"
    assert strip_html("<p>one</p><p>two &amp; three</p>") == "one\n\ntwo & three"


def test_quality_test_split_without_gold_label_fails_clearly(tmp_path: Path) -> None:
    p = tmp_path / "QuALITY.test"
    p.write_text(
        '{"article_id": "1", "article": "x", "questions": [{"question": "q", "options": ["a", "b"]}]}\n'
    )
    with pytest.raises(DataError, match=r"QuALITY.test:1: questions\[0\]: no 'gold_label'"):
        load_quality(p)


def test_gpqa_shuffles_true_option_reproducibly(fx: Path) -> None:
    a = load_gpqa(fx / "gpqa_main.csv", seed=3)
    b = load_gpqa(fx / "gpqa_main.csv", seed=3)
    assert a == b
    assert [q.id for q in a] == ["recA1", "recB2"]
    assert a[0].true_case.long == "Photon" and a[0].true_case.metadata["original_index"] == 0
    assert sorted(c.long for c in a[1].answer_cases) == ["+2", "+4", "+6", "+7"]
    assert a[1].metadata["domain"] == "Chemistry"
    assert a[1].metadata["Writer's Difficulty Estimate"] == "Hard undergraduate"


def test_mmlu_original_csv_and_hub_rows(fx: Path) -> None:
    qs = load_mmlu(fx / "abstract_algebra_test.csv")
    assert [q.true_case.long for q in qs] == ["6", "Yes"]
    assert [q.true_case.short for q in qs] == ["C", "A"]
    assert qs[0].metadata["subject"] == "abstract_algebra"
    rows = load_mmlu(fx / "mmlu_rows.jsonl")
    assert rows[0].true_case.long == "4" and rows[0].metadata["subject"] == "elementary_mathematics"


def test_mmlu_pro(fx: Path) -> None:
    (q,) = load_mmlu_pro(fx / "mmlu_pro.jsonl")
    assert q.id == "mmlupro-70" and q.k == 5
    assert q.true_case.short == "B" and q.true_case.long == "cause unnecessary offence"


def test_mmlu_pro_answer_letter_must_match_index(tmp_path: Path) -> None:
    p = tmp_path / "pro.jsonl"
    p.write_text(
        '{"question_id": 1, "question": "q", "options": ["a", "b"], "answer": "A", "answer_index": 1}\n'
    )
    with pytest.raises(DataError, match=r"pro\.jsonl:1: answer 'A' disagrees with answer_index 1"):
        load_mmlu_pro(p)


def test_gsm8k_generated_wrong_answer_is_intermediate_step(fx: Path) -> None:
    q1, q2 = load_gsm8k(fx / "gsm8k_test.jsonl", k=2, seed=0)
    assert q1.true_case.long == "72"
    # 48/2 = 24 is the solution's earlier step: stopping there is the slip
    assert q1.other(q1.true_case.short).long == "24"
    assert q2.true_case.long == "2400"  # "2,400" parsed


def test_gsm8k_k_options_distinct_and_supplied_wrong_answers(fx: Path) -> None:
    for q in load_gsm8k(fx / "gsm8k_test.jsonl", k=4, seed=5):
        values = [c.long for c in q.answer_cases]
        assert len(set(values)) == 4 and len(q.true_cases) == 1
    q1 = load_gsm8k(fx / "gsm8k_test.jsonl", wrong_answers={"gsm8k-1": [70]})[0]
    assert sorted(c.long for c in q1.answer_cases) == ["70", "72"]
    with pytest.raises(DataError, match="equals the true answer 72"):
        load_gsm8k(fx / "gsm8k_test.jsonl", wrong_answers={"gsm8k-1": ["72"]})
    with pytest.raises(ConfigError):
        load_gsm8k(fx / "gsm8k_test.jsonl", k=1)


def test_gsm8k_missing_final_answer(tmp_path: Path) -> None:
    p = tmp_path / "g.jsonl"
    p.write_text('{"question": "q", "answer": "no marker"}\n')
    with pytest.raises(DataError, match=r"g.jsonl:1: answer has no final '####"):
        load_gsm8k(p)


def test_truthfulqa_mc_task_json_and_hub_rows(fx: Path) -> None:
    qs = load_truthfulqa(fx / "mc_task.json", seed=1)
    assert [q.id for q in qs] == ["truthfulqa-0", "truthfulqa-1"]
    assert [q.k for q in qs] == [2, 3]
    assert qs[0].true_case.long.startswith("Nothing in particular")
    assert qs[1].true_case.long.startswith("Nauru")
    (row,) = load_truthfulqa(fx / "truthfulqa_rows.jsonl")
    assert row.true_case.long == "No, pigs cannot fly."


def test_medqa(fx: Path) -> None:
    (q,) = load_medqa(fx / "medqa_us_test.jsonl")
    assert q.shorts == ["A", "B", "C", "D"]
    assert q.true_case.short == "D" and q.true_case.long == "Nitrofurantoin"


def test_generic_jsonl_and_csv(fx: Path) -> None:
    g1, g2 = load_generic(fx / "generic.jsonl")
    assert g1.true_case.long == "Paris" and g1.metadata["best_distractor"] == "A"
    assert g2.shorts == ["X", "Y"] and g2.true_case.short == "Y"
    assert g2.source_text == "9 > 7" and g2.metadata == {"topic": "numbers"}
    c1, c2 = load_generic(fx / "generic.csv")
    assert c1.true_case.long == "Rome" and c1.metadata["best_distractor"] == "B"
    assert c1.source_text is None and c1.metadata["difficulty"] == "easy"
    assert c2.k == 2 and c2.true_case.long == "100" and c2.source_text == "Water boils at 100 C."


def test_registry_by_name_with_options(fx: Path) -> None:
    qs = load_dataset("medqa", path=str(fx / "medqa_us_test.jsonl"))
    assert len(qs) == 1
    with pytest.raises(ConfigError, match="no option"):
        load_dataset("arithmetic", bogus=1)
    with pytest.raises(ConfigError, match="unknown dataset 'nope'"):
        load_dataset("nope")
    with pytest.raises(ConfigError, match="pass path="):
        load_dataset("quality")


def test_hub_without_datasets_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ConfigError, match=r"seerbench\[hub\]"):
        load_mmlu(None)


def test_hub_rows_go_through_the_same_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[object, ...]] = []

    def fake_load_dataset(name: str, config: str | None, split: str) -> list[dict[str, object]]:
        calls.append((name, config, split))
        return [{"question": "What is 2+2?", "subject": "m", "choices": ["3", "4"], "answer": 1}]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=fake_load_dataset))
    (q,) = load_mmlu(None, subject="all", split="test")
    assert calls == [("cais/mmlu", "all", "test")]
    assert q.true_case.long == "4"
