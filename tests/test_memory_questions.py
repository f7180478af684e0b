"""Flat memory in the runner (issue 15.6): a run's questions are read one at a time from the
dataset (arithmetic is generated lazily) and kept on disk (QuestionStore), in memory only their
ids: the same questions, order, limit and errors as the list they replace."""

from __future__ import annotations

import tracemalloc

import pytest

from seerbench.datasets import binary_view, load_dataset
from seerbench.datasets._registry import iter_dataset
from seerbench.errors import ConfigError, DataError
from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.experiment._questions import QuestionStore
from seerbench.types import AnswerCase, Question


def _q(qid: str, n_true: int = 1, source: str | None = None) -> Question:
    cases = [
        AnswerCase(short=s, long=f"option {s}", value=1.0 if i < n_true else 0.0) for i, s in enumerate("ABC")
    ]
    return Question(id=qid, text=f"question {qid}?", answer_cases=cases, source_text=source)


def test_store_holds_the_binary_views_in_order() -> None:
    qs = list(load_dataset("arithmetic", n=30, seed=4, k=4))
    want = binary_view(qs, seed=9)
    store = QuestionStore.build(iter_dataset("arithmetic", n=30, seed=4, k=4), binary_seed=9)
    assert len(store) == 30
    assert store.ids == [q.id for q in want]
    assert list(store) == want
    assert store[-1] == want[-1] and store[3:6] == want[3:6]
    assert [store.as_json(i) for i in range(30)] == [q.model_dump(mode="json") for q in want]
    assert store.get(want[7].id) == want[7] and store.get("nope") is None
    assert store.position[want[7].id] == 7
    view = store.subset([5, 2, 29])
    assert len(view) == 3 and list(view) == [want[5], want[2], want[29]] and view[1:] == [want[2], want[29]]
    assert view[0] == want[5]
    with pytest.raises(IndexError):
        store[30]
    assert store.n_no_source == 30 and store.no_source == [q.id for q in want[:3]]


def test_store_limit_skips_and_errors() -> None:
    qs = [_q("q0"), _q("q1", n_true=2), _q("q2", source="a passage"), _q("q3")]
    store = QuestionStore.build(qs, binary_seed=0, limit=2)
    assert store.ids == ["q0", "q2"]  # q1 has two true options: left out and counted
    assert store.n_skipped == 1
    assert store.n_no_source == 1 and store.no_source == ["q0"]
    # a duplicate past the limit is still an error: the dataset is wrong, whatever part runs
    with pytest.raises(DataError, match=r"duplicate question ids in the dataset: \['q3'\]"):
        QuestionStore.build([*qs, _q("q3")], binary_seed=0, limit=1)
    with pytest.raises(DataError, match="the dataset is empty"):
        QuestionStore.build([], binary_seed=0)
    with pytest.raises(DataError, match="no binary-compatible questions"):
        QuestionStore.build([_q("x", n_true=2)], binary_seed=0)


def test_iter_dataset_checks_like_load_dataset() -> None:
    assert list(iter_dataset("arithmetic", n=5, seed=1)) == list(load_dataset("arithmetic", n=5, seed=1))
    for bad, message in (
        ({"n": -1}, "n must be >= 0"),
        ({"k": 11}, "k must be between 2 and 10"),
        ({"size": 3}, "has no option"),
    ):
        with pytest.raises(ConfigError, match=message):
            iter_dataset("arithmetic", **bad)  # raised at the call, not at the first question
        with pytest.raises(ConfigError, match=message):
            load_dataset("arithmetic", **bad)
    # a dataset without a lazy form is loaded as before
    assert [q.id for q in iter_dataset("reading", n=3, seed=0)] == [
        q.id for q in load_dataset("reading", n=3, seed=0)
    ]


@pytest.mark.slow
def test_experiment_questions_do_not_hold_the_dataset() -> None:
    """5,000 arithmetic questions take ~17 MB as a list of objects; the run's store keeps their
    ids and offsets (~100 bytes each) and reads the JSON back from disk."""
    cfg = ExperimentConfig.parse(
        {
            "dataset": {"name": "arithmetic", "n": 5_000, "seed": 0},
            "judge_models": ["scripted:coin"],
            "protocols": ["NaiveJudge"],
        }
    )
    tracemalloc.start()
    try:
        as_list = list(load_dataset("arithmetic", n=5_000, seed=0))
        _, list_peak = tracemalloc.get_traced_memory()
        del as_list
        tracemalloc.reset_peak()
        store = Experiment(cfg).questions()
        _, store_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(store) == 5_000
    assert list_peak > 10_000_000
    assert store_peak < list_peak / 5, (store_peak, list_peak)
