"""From questions with known answers and a system's predictions to a labels file: the
expert-routing protocol of seed 001 (Appendix B, Algorithm 1) run as a simulation.

``seerbench partition`` is this module plus argument parsing; from Python::

    from seerbench.datasets import read_questions_jsonl
    from seerbench.estimators import partition_questions, write_labels_csv
    part = partition_questions(read_questions_jsonl("questions.jsonl"), seed=0)
    write_labels_csv("labels.csv", part.labels)
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seerbench.errors import ConfigError, DataError
from seerbench.estimators._labels import LabelSet
from seerbench.estimators._protocol import expand_complementary, simulate_protocol
from seerbench.types import Question


@dataclass(frozen=True)
class Partition:
    """Labels from one simulated run of the protocol, and what they came from."""

    labels: LabelSet  # with extra columns id and option_order (option labels in shown order)
    mode: str  # "expert-routing", "fixed-split" or "all-complementary"
    seed: int
    items: int
    true_accuracy: float  # the predictions' accuracy against the known answers

    def summary(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "seed": self.seed,
            "items": self.items,
            "labels": len(self.labels),
            "n_ordinary": self.labels.n_ordinary,
            "n_complementary": self.labels.n_complementary,
            "true_accuracy": self.true_accuracy,
        }


def read_predictions_csv(path: str | Path) -> dict[str, str]:
    """``id -> prediction`` from a CSV with columns ``id`` and ``prediction``."""
    p = Path(path)
    try:
        fh = p.open(newline="", encoding="utf-8-sig")
    except OSError as e:
        raise DataError(f"cannot read {p}: {e.strerror or e}") from None
    with fh:
        reader = csv.DictReader(fh)
        fields = [f.strip() for f in reader.fieldnames or []]
        if "id" not in fields or "prediction" not in fields:
            raise DataError(f"{p}: needs columns id and prediction, got {fields}")
        reader.fieldnames = fields
        out: dict[str, str] = {}
        for record in reader:
            qid = (record.get("id") or "").strip()
            if not qid:
                raise DataError(f"{p}, row {reader.line_num}: empty id")
            if qid in out:
                raise DataError(f"{p}, row {reader.line_num}: duplicate id {qid!r}")
            out[qid] = (record.get("prediction") or "").strip()
    return out


def option_index(q: Question, prediction: Any) -> int:
    """1-based index of the predicted option: an option's short label, or a 1-based index."""
    if isinstance(prediction, bool) or prediction is None or prediction == "":
        raise DataError(f"question {q.id!r} has no prediction (metadata.prediction or --predictions)")
    if isinstance(prediction, str) and prediction in q.shorts:
        return q.shorts.index(prediction) + 1
    try:
        idx = int(prediction)
    except (TypeError, ValueError):
        raise DataError(
            f"prediction {prediction!r} of question {q.id!r} is neither an option label {q.shorts} "
            f"nor an index 1..{q.k}"
        ) from None
    if isinstance(prediction, float) and prediction != idx:
        raise DataError(f"prediction {prediction!r} of question {q.id!r} is not a whole number")
    if not 1 <= idx <= q.k:
        raise DataError(f"prediction {idx} of question {q.id!r} is outside 1..{q.k}")
    return idx


def partition_questions(
    questions: Sequence[Question],
    predictions: Mapping[str, Any] | None = None,
    *,
    seed: int = 0,
    n_ordinary: int | None = None,
    all_complementary: bool = False,
    shuffle: bool = True,
) -> Partition:
    """Simulate the protocol on ``questions`` (each with exactly one true option).

    A question's prediction is ``predictions[id]`` when given, else its ``metadata.prediction``:
    an option's label or a 1-based index. Default: expert routing (each item goes to the expert of
    a uniformly chosen option; "yes" is an ordinary label, "no" a complementary one);
    ``n_ordinary``: a fixed split; ``all_complementary``: K-1 complementary labels per item."""
    if n_ordinary is not None and all_complementary:
        raise ConfigError(
            "n_ordinary (--n-ordinary) and all_complementary (--all-complementary) exclude each other"
        )
    if not questions:
        raise DataError("no questions to partition")
    preds = dict(predictions or {})
    unknown = sorted(set(preds) - {q.id for q in questions})
    if unknown:
        raise DataError(f"predictions for ids that are not questions: {unknown[:5]}")
    truth: list[int] = []
    guess: list[int] = []
    for q in questions:
        true = [i for i, a in enumerate(q.answer_cases) if a.is_true]
        if len(true) != 1:
            raise DataError(f"question {q.id!r} has {len(true)} true options; expected exactly 1")
        truth.append(true[0] + 1)
        guess.append(option_index(q, preds[q.id] if q.id in preds else q.metadata.get("prediction")))
    ks = np.array([q.k for q in questions], dtype=np.int64)
    ids = [q.id for q in questions]
    if all_complementary:
        labels = expand_complementary(truth, guess, ks)
        shown = [" ".join(q.shorts) for q in questions]
        extra = {"id": [ids[i] for i in labels.rows], "option_order": [shown[i] for i in labels.rows]}
        mode = "all-complementary"
    else:
        sim = simulate_protocol(truth, guess, ks, seed=seed, n_ordinary=n_ordinary, shuffle_options=shuffle)
        labels = sim.labels
        orders = sim.order.tolist()
        extra = {
            "id": ids,
            "option_order": [
                " ".join(q.shorts[j] for j in row[: q.k]) for q, row in zip(questions, orders, strict=True)
            ],
        }
        mode = sim.mode
    labels = LabelSet.from_arrays(
        labels.prediction, labels.label, labels.is_complementary, labels.k, rows=labels.rows, extra=extra
    )
    accuracy = float(np.mean(np.array(truth) == np.array(guess)))
    return Partition(labels=labels, mode=mode, seed=seed, items=len(questions), true_accuracy=accuracy)
