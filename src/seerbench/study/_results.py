"""Judgments out of a study: export rows (CSV/JSONL), human :class:`Verdict` objects, and metrics.

Human verdicts are verdicts: every statistic here goes through :mod:`seerbench.metrics` and
:func:`seerbench.analysis.summarize`, the code that scores model judges.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, TextIO

from seerbench.errors import ConfigError, DataError
from seerbench.metrics import question_scores, score
from seerbench.records import rating_correct
from seerbench.stats import summarize
from seerbench.store import atomic_path, atomic_write_lines
from seerbench.study._critique_results import (
    CRITIQUE_FIELDS,
    VALIDATION_FIELDS,
    critique_export_rows,
    critique_stats,
    validation_export_rows,
)
from seerbench.study._export import EXPORT_FIELDS, _csv_cell, _iso, rater_columns, read_export
from seerbench.study._storage import StudyStore
from seerbench.types import AnswerCase, Question, Verdict

__all__ = [
    "EXPORT_FIELDS",
    "TimeoutPolicy",
    "export_fields",
    "export_rows",
    "judgment_question",
    "judgment_verdict",
    "load_human_rows",
    "read_export",
    "store_stats",
    "study_stats",
    "write_csv",
    "write_export",
]

TimeoutPolicy = Literal["wrong", "half", "exclude"]


def export_fields(rows: Sequence[dict[str, Any]] | None = None, task: str | None = None) -> tuple[str, ...]:
    """The export columns of a task (by default the task of the first row): :data:`EXPORT_FIELDS`,
    or the critique and validation studies' own (one row per critique)."""

    task = task or (rows[0].get("task") if rows else None)
    return {"critique": CRITIQUE_FIELDS, "validation": VALIDATION_FIELDS}.get(str(task), EXPORT_FIELDS)


def export_rows(store: StudyStore) -> list[dict[str, Any]]:
    """One row per submitted judgment (catch trials included, flagged ``is_catch``); for critique
    and validation studies one row per critique (:mod:`seerbench.study._critique_results`)."""
    m = store.manifest
    if m.task in ("critique", "validation"):
        return critique_export_rows(store) if m.task == "critique" else validation_export_rows(store)
    rows = []
    for a, r in store.assignments():
        it = store.item(a.item_id)
        q = it.question
        ai = q.metadata.get("ai_correct")
        rows.append(
            {
                "judgment_id": a.id,
                "study": m.name,
                "task": m.task,
                "item": it.key,
                "question_id": q.id,
                "answer_case": it.answer_case,
                "condition": a.condition,
                "is_catch": a.is_catch,
                "catch_kind": it.catch,
                **rater_columns(a, r),
                "options": q.shorts,
                "true_answer": it.correct,
                "expert_option": a.expert_option,
                "timer_started_at": _iso(a.timer_started_at),
                "timed_out": a.timed_out,
                "auto_submitted": a.auto_submitted,
                "answer": a.answer,
                "probability": a.probability,
                "confidence": a.confidence,
                "helpfulness": a.helpfulness,
                "rating": a.rating,
                "correct": a.correct,
                "ai_correct": bool(ai) if ai is not None else None,
                "comment": a.comment,
            }
        )
    return rows


def write_export(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Write rows as ``.csv`` (lists joined with ``|``) or ``.jsonl``."""
    p = Path(path)
    if p.suffix == ".jsonl":
        atomic_write_lines(p, (json.dumps(row) for row in rows))
    elif p.suffix == ".csv":
        with atomic_path(p) as tmp, tmp.open("w", encoding="utf-8", newline="") as f:
            write_csv(f, rows)
    else:
        raise ConfigError(f"export file {p} must end in .csv or .jsonl")
    return p


def write_csv(f: TextIO, rows: Sequence[dict[str, Any]], task: str | None = None) -> None:
    """Rows as CSV with the task's columns (:func:`export_fields`), lists joined with ``|``."""
    fields = export_fields(rows, task)
    w = csv.DictWriter(f, fieldnames=list(fields))
    w.writeheader()
    for row in rows:
        w.writerow({k: _csv_cell(row.get(k)) for k in fields})


def load_human_rows(source: str | Path) -> tuple[list[dict[str, Any]], str | None]:
    """Export rows from a study database (SQLite path or URL) or an export file (``.csv`` /
    ``.jsonl``), and the unassisted condition when the study's manifest says which it is (the
    condition with no assistance parts), as :func:`seerbench.complementarity.analyze` takes them.
    It lives with the study app because it reads the app's store; the analysis reads rows only."""
    s = str(source)
    if s.endswith((".csv", ".jsonl")):
        return read_export(s), None
    store = StudyStore(s)
    try:
        rows = export_rows(store)
        m = store.manifest
        if m.task != "factuality":
            raise DataError(
                f"{s} is a {m.task!r} study; the complementarity analysis takes a factuality study"
            )
        bare = [c.name for c in m.conditions if not c.assistance]
        return rows, bare[0] if len(bare) == 1 else None
    finally:
        store.close()


def judgment_question(row: dict[str, Any]) -> Question:
    """A minimal :class:`Question` (options and ground truth) rebuilt from an export row."""
    return Question(
        id=str(row["question_id"]),
        text="",
        answer_cases=[
            AnswerCase(short=o, long=o, value=1.0 if o == row["true_answer"] else 0.0) for o in row["options"]
        ],
    )


def judgment_verdict(row: dict[str, Any], *, vote: bool = False) -> Verdict:
    """The human :class:`Verdict` of one judgment (``method='human'``).

    - two-option: the chosen option gets the rater's probability (1.0 if none was asked or given,
      or with ``vote=True``), the rest is split over the other options. The probability is for log
      and Brier scores and calibration; it never changes which option the rater chose: at
      probability 0.5 the verdict is a tie, so score accuracy with ``vote=True`` (seed 004 scores
      the chosen option; :func:`study_stats` does);
    - expert routing (seed 001): "yes" to "is it k?" puts 1.0 on k; "no" is a complementary label,
      uniform over the other options;
    - factuality (seed 000): the rating binarised to the ``accurate`` / ``inaccurate`` option.
    A timeout, skip, "can't assess" or "doesn't require assessment" is a failed verdict whose
    ``error`` says which; how it is scored is the caller's policy.
    """
    options = list(row["options"])
    meta = {k: row.get(k) for k in ("judgment_id", "rater_id", "condition", "question_id", "is_catch")}
    if row.get("timed_out"):
        return Verdict.failure("", "timed_out", method="human", metadata=meta)
    ans = row.get("answer")
    task = row.get("task", "two_option")
    if task == "expert_routing":
        k = row.get("expert_option")
        if ans not in ("yes", "no") or k not in options:
            return Verdict.failure(str(ans or ""), "no_answer", method="human", metadata=meta)
        if ans == "yes":
            probs = {o: 1.0 if o == k else 0.0 for o in options}
        else:
            probs = {o: 0.0 if o == k else 1.0 / (len(options) - 1) for o in options}
        return Verdict(probabilities=probs, method="human", raw=str(ans), metadata=meta)
    if ans in (None, "skip", "cant_assess", "no_claim") or ans not in options:
        return Verdict.failure(str(ans or ""), str(ans or "no_answer"), method="human", metadata=meta)
    p = row.get("probability")
    p = 1.0 if p is None or vote else float(p)
    rest = (1.0 - p) / (len(options) - 1)
    probs = {o: p if o == ans else rest for o in options}
    return Verdict(probabilities=probs, method="human", raw=str(ans), metadata=meta)


def _accuracy(row: dict[str, Any], verdict: Verdict, policy: TimeoutPolicy) -> float | None:
    """Accuracy of one judgment: 1 if the rater chose the true option, else 0 (the probability
    plays no part: seed 004 scores the chosen option, as the export's ``correct`` does). Failed
    verdicts follow ``policy`` except a skip, which never counts (the rater declined to answer),
    and the factuality markers, scored by seed 000's rule (:func:`rating_correct`)."""
    if verdict.ok and row.get("task") == "expert_routing":
        # an expert answers "is it k?": their accuracy is whether yes/no was right (the verdict of
        # a "no" is a complementary label, which scores 1/(K-1) against the truth)
        return None if row.get("correct") is None else float(row["correct"])
    if verdict.ok:
        return score(judgment_verdict(row, vote=True).probabilities or {}, row["true_answer"], "accuracy")
    if verdict.error in ("skip", "cant_assess", "no_claim"):
        # seed 000's factuality rule in its one home: a skip is no rating, "can't confidently
        # assess" is wrong, "doesn't require assessment" is the label "inaccurate"
        return rating_correct(verdict.error, row.get("true_answer"))
    if policy == "wrong":
        return 0.0
    if policy == "half":
        return 1.0 / len(row["options"])
    return None


def _summary(values: Sequence[float], seed: int) -> dict[str, Any]:
    return summarize(list(values), seed=seed).as_dict()


#: How a judgment accuracy's interval is made (:func:`_judgment_summary`).
JUDGMENT_METHOD = "cluster bootstrap (items and raters), Wilson interval at the effective n"


def _judgment_summary(scored: Sequence[tuple[float, dict[str, Any]]], seed: int) -> dict[str, Any]:
    """Mean accuracy of judgments with a cluster-bootstrap 95% CI (items and raters resampled:
    judgments of one item or by one rater are not independent; see :mod:`seerbench.stats`), as
    the shared :class:`seerbench.stats.Summary` (its dict: ``n``, ``mean``, ``std``, ``se`` (the
    bootstrap's), ``ci_low``, ``ci_high``, ``confidence``, ``n_boot``, ``seed``, ``method``,
    ``n_eff``, ``clusters`` (the fewer of items and raters))."""
    import numpy as np

    from seerbench.stats import CLUSTER_N_BOOT as DEFAULT_N_BOOT
    from seerbench.stats import Summary, cluster_group_means, codes, group_interval

    if not scored:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, 0.95, DEFAULT_N_BOOT, seed, JUDGMENT_METHOD).as_dict()
    values = np.array([a for a, _ in scored], dtype=float)
    items, _ = codes([str(r.get("item")) for _, r in scored])
    raters, _ = codes([str(r.get("rater_id")) for _, r in scored])
    one = np.zeros(values.size, dtype=np.int64)
    means, cov = cluster_group_means(values, items, raters, one, 1, n_boot=DEFAULT_N_BOOT, seed=seed)
    iv = group_interval(means, cov, 0, one == 0, items, raters)
    n = int(values.size)
    return Summary.from_interval(
        iv,
        n=n,
        std=float(values.std(ddof=1)) if n > 1 else 0.0,
        se=math.sqrt(max(float(cov[0, 0]), 0.0)),
        n_boot=DEFAULT_N_BOOT,
        seed=seed,
        method=JUDGMENT_METHOD,
        clusters=int(min(items.max(), raters.max())) + 1,
    ).as_dict()


def study_stats(
    rows: Iterable[dict[str, Any]], *, timeout_policy: TimeoutPolicy = "wrong", seed: int = 0
) -> dict[str, Any]:
    """Accuracy (with cluster-bootstrap CIs over items and raters), vote accuracy, ASD, reliance,
    timeouts and catch-trial accuracy per condition, from export rows or :func:`export_rows`.

    Catch trials are excluded from every result and reported separately under ``catch``.
    ``timeout_policy``: a timed-out judgment counts as wrong (seed 004's rule, the default), as a
    coin flip (``half``) or not at all (``exclude``).
    """
    if timeout_policy not in ("wrong", "half", "exclude"):
        raise ConfigError(f"unknown timeout policy {timeout_policy!r}; use wrong, half or exclude")
    rows = list(rows)
    if rows and rows[0].get("task") == "critique":
        return critique_stats(rows, seed=seed)
    if rows and rows[0].get("task") == "validation":
        raise ConfigError(_VALIDATION_STATS)
    real = [r for r in rows if not r.get("is_catch")]
    catch = [r for r in rows if r.get("is_catch")]
    by_cond: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in real:
        by_cond[str(r["condition"])].append(r)
    out: dict[str, Any] = {"timeout_policy": timeout_policy, "seed": seed, "conditions": {}}
    for cond, rs in sorted(by_cond.items()):
        verdicts = [judgment_verdict(r) for r in rs]
        scored = [
            (a, r)
            for r, v in zip(rs, verdicts, strict=True)
            if (a := _accuracy(r, v, timeout_policy)) is not None
        ]
        secs = [float(r["seconds"]) for r in rs if r.get("seconds") is not None]
        c: dict[str, Any] = {
            "judgments": len(rs),
            "raters": len({r["rater_id"] for r in rs}),
            "accuracy": _judgment_summary(scored, seed),
            "timed_out": sum(1 for r in rs if r.get("timed_out")),
            "median_seconds": statistics.median(secs) if secs else None,
            "vote": _vote_accuracy(rs, verdicts, timeout_policy),
        }
        asd = _asd(rs, verdicts, seed)
        if asd:
            c["asd"] = asd
        rel = _reliance(rs, verdicts, timeout_policy, seed)
        if rel:
            c["reliance"] = rel
        out["conditions"][cond] = c
    cacc = [(a, r) for r in catch if (a := _accuracy(r, judgment_verdict(r), "wrong")) is not None]
    out["catch"] = {"judgments": len(catch), "accuracy": _judgment_summary(cacc, seed)}
    return out


_VALIDATION_STATS = (
    "a validation study has no statistics of its own: merge its export into the critique study's "
    "(seerbench study stats --db CRITIQUE_DB --validation VALIDATION_DB)"
)


def store_stats(
    store: StudyStore,
    rows: Sequence[dict[str, Any]] | None = None,
    *,
    timeout_policy: TimeoutPolicy = "wrong",
    intervals: bool = True,
) -> dict[str, Any]:
    """The statistics of a study's task over ``rows`` (by default its export rows): judging
    measures (:func:`study_stats`), or for a critique study seed 002's measures with the
    manifest's categories (``intervals=False``: means only, for a quick look); a validation study's
    marks are measured in its critique study."""
    m = store.manifest
    if m.task == "validation":
        raise ConfigError(_VALIDATION_STATS)
    rows = export_rows(store) if rows is None else rows
    if m.task == "critique":
        return critique_stats(rows, categories=m.categories, seed=m.seed, intervals=intervals)
    return study_stats(rows, timeout_policy=timeout_policy, seed=m.seed)


def _vote_accuracy(
    rows: list[dict[str, Any]], verdicts: list[Verdict], policy: TimeoutPolicy
) -> dict[str, Any]:
    """Seed 004's aggregates per item over the options the raters chose: majority vote (more than
    half of the item's judgments right = 1, exactly half = 0.5) and unanimous (all right).

    A timed-out judgment is a wrong vote under the default policy, as in accuracy (``half``: half
    a right vote; ``exclude``: no vote); skips and "can't assess" are no vote (seed 000's
    majority rule: "can't assess" votes for neither label), though each counts in accuracy.
    """
    by_item: dict[str, list[float]] = defaultdict(list)
    for r, v in zip(rows, verdicts, strict=True):
        if r.get("task") == "expert_routing" or v.error in ("skip", "cant_assess"):
            continue
        a = _accuracy(r, v, policy)
        if a is not None:
            by_item[str(r["item"])].append(a)
    maj, una = [], []
    for accs in by_item.values():
        right, n = sum(accs), len(accs)
        maj.append(1.0 if right > n / 2 else 0.5 if right == n / 2 else 0.0)
        una.append(1.0 if right == n else 0.0)
    return {
        "items": len(maj),
        "majority": statistics.fmean(maj) if maj else None,
        "unanimous": statistics.fmean(una) if una else None,
    }


def _asd(rows: list[dict[str, Any]], verdicts: list[Verdict], seed: int) -> dict[str, Any] | None:
    """ASD per question when both answer cases of a binary question were judged (transcript items):
    the judge distribution of a case is the mean of its raters' verdicts."""
    acc: dict[str, dict[str, list[dict[str, float]]]] = defaultdict(lambda: defaultdict(list))
    truth: dict[str, tuple[str, str]] = {}
    for r, v in zip(rows, verdicts, strict=True):
        if not r.get("answer_case") or not v.ok or len(r["options"]) != 2:
            continue
        acc[str(r["question_id"])][str(r["answer_case"])].append(v.probabilities or {})
        t = r["true_answer"]
        truth[str(r["question_id"])] = (t, next(o for o in r["options"] if o != t))
    asd_log, asd_acc = [], []
    for qid, cases in acc.items():
        t, f = truth[qid]
        if t not in cases or f not in cases:
            continue
        mean = {a: {o: statistics.fmean(p[o] for p in ps) for o in (t, f)} for a, ps in cases.items()}
        qs = question_scores(mean, t, f)
        asd_log.append(qs.asd["log"])
        asd_acc.append(qs.asd["accuracy"])
    if not asd_log:
        return None
    return {"questions": len(asd_log), "log": _summary(asd_log, seed), "accuracy": _summary(asd_acc, seed)}


def _reliance(
    rows: list[dict[str, Any]], verdicts: list[Verdict], policy: TimeoutPolicy, seed: int
) -> dict[str, Any] | None:
    """Seed 000's reliance split: accuracy on items where the AI was right vs wrong."""
    split: dict[str, list[tuple[float, dict[str, Any]]]] = {"ai_right": [], "ai_wrong": []}
    for r, v in zip(rows, verdicts, strict=True):
        if r.get("ai_correct") is None:
            continue
        a = _accuracy(r, v, policy)
        if a is not None:
            split["ai_right" if r["ai_correct"] else "ai_wrong"].append((a, r))
    if not split["ai_right"] and not split["ai_wrong"]:
        return None
    return {k: _judgment_summary(v, seed) for k, v in split.items()}
