"""Results lines (one per question and protocol configuration) and the statistics over them.

A line holds the question, per answer case the judge's probabilities, verdict and transcript with
judge and agent scores, then ``asd``, ``jse_b0``, ``jse_b1``, ``jse_binf``, ``ase_b0``, ``ase_b1``,
``ase_binf`` (each with log, logodds, brier, accuracy) as in seed 003. Scores are always
recomputed from the stored probabilities, so statistics for another beta or eps need no rerun.
"""

from __future__ import annotations

import functools
import hashlib
import math
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from seerbench.metrics import (
    BETAS,
    SCORE_TYPES,
    FailurePolicy,
    ScoreRow,
    beta_key,
    question_scores,
    question_values,
    resolve_stored,
    scores,
)
from seerbench.records import AGENT_CHOICE_FAILED, QuestionRun
from seerbench.stats import (
    Summary,
    accuracy_summary,
    clustered_summary,
    paired_difference,
    paired_proportion_difference,
    summarize,
    summarize_many,
)

# Per-run facts that must not enter results lines (they differ between a fresh and a resumed run).
_VOLATILE = {"cached"}


def _clean(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if k not in _VOLATILE}


def result_line(
    qr: QuestionRun, meta: dict[str, Any], *, eps: float, policy: FailurePolicy
) -> dict[str, Any]:
    """The results.jsonl line of one question."""
    q = qr.question
    cases: list[dict[str, Any]] = []
    seen_runs: set[int] = set()
    failures = 0
    for a in q.answer_cases:
        run = qr.cases.get(a.short)
        if run is None:
            continue
        v = run.verdict
        if id(run) not in seen_runs:
            seen_runs.add(id(run))
            failures += 0 if v.ok else 1
        cases.append(
            {
                "short": a.short,
                "long": a.long,
                "value": a.value,
                "case_probs": {
                    "probabilities": v.probabilities,
                    "method": v.method,
                    "parse_status": v.parse_status,
                    "error": v.error,
                    "raw": v.raw,
                    "n_samples": v.n_samples,
                    "metadata": _clean(v.metadata),
                    "transcript": [t.model_dump(mode="json") for t in run.transcript.turns],
                },
            }
        )
    line: dict[str, Any] = {
        "question_id": q.id,
        **meta,
        "question": q.model_dump(mode="json"),
        "symmetric": qr.symmetric,
        "chosen_case": qr.chosen_case,
        "notes": qr.notes,
        "parse_failures": failures,
        "answer_cases": cases,
    }
    return rescore(line, eps=eps, policy=policy)


def rescore(
    line: dict[str, Any], *, eps: float, policy: FailurePolicy, betas: Iterable[float] = BETAS
) -> dict[str, Any]:
    """(Re)compute judge/agent scores, ASD, JSE/ASE and judge accuracy of a line from its stored
    probabilities. ``excluded`` is True when a parse failure leaves a needed case unscored.

    Pure: returns a new line and never changes ``line`` or the dicts nested in it (the new line
    shares only values it does not modify, such as transcripts and the question)."""
    betas = tuple(betas)
    # a copy without the metric fields (recomputed below); the other keys keep their places
    line = {k: v for k, v in line.items() if not k.startswith(("asd", "jse_", "ase_"))}
    line["answer_cases"] = [{**c, "case_probs": dict(c["case_probs"])} for c in line["answer_cases"]]
    qcases = line["question"]["answer_cases"]
    shorts = [c["short"] for c in qcases]
    true = next(c["short"] for c in qcases if c["value"] > 0.5)
    cases = line["answer_cases"]
    probs_by_case: dict[str, dict[str, float]] = {}
    resolved: list[dict[str, float] | None] = []
    for c in cases:
        probs = resolve_stored(c["case_probs"], shorts, policy)
        resolved.append(probs)
        if probs:
            probs_by_case[c["short"]] = probs
    n_scored = sum(1 for p in resolved if p)
    line["excluded"] = n_scored < len(cases) or not n_scored
    qs = None
    if len(cases) == 2 and not line["excluded"]:
        false = next(s for s in shorts if s != true)
        qs = question_scores(probs_by_case, true, false, eps=eps, betas=betas)
    for c, probs in zip(cases, resolved, strict=True):
        if qs is not None:  # both cases scored: question_scores has their scores already
            c["case_probs"]["judge_score"] = qs.judge_score[c["short"]]
            c["agent_score"] = qs.agent_score[c["short"]]
        else:
            c["case_probs"]["judge_score"] = scores(probs, true, eps) if probs else None
            c["agent_score"] = scores(probs, c["short"], eps) if probs else None
    accs = [c["case_probs"]["judge_score"]["accuracy"] for c in cases if c["agent_score"] is not None]
    line["judge_accuracy"] = None if line["excluded"] else sum(accs) / len(accs)
    if qs is not None:
        line.update(qs.flat())
    else:
        line["asd"] = None
    line["eps"] = eps
    line["parse_failure_policy"] = policy
    return line


#: The per-question metric fields of a results line at the default betas.
METRIC_KEYS = ("asd", *(f"{p}_{beta_key(b)}" for p in ("jse", "ase") for b in BETAS))


def run_stats(
    lines: Iterable[dict[str, Any]],
    meta: dict[str, Any],
    *,
    eps: float,
    policy: FailurePolicy,
    n_boot: int = 2000,
    seed: int = 0,
    betas: Iterable[float] = BETAS,
    scored: bool = False,
) -> dict[str, Any]:
    """Statistics of one grid cell: mean, std, SE and bootstrap 95% CI of every metric.

    Lines are rescored with ``eps``, ``policy`` and ``betas`` first, unless ``scored`` says the
    caller already did exactly that. ``lines`` may be any iterable (a results file read line by
    line): it is consumed once, and only the per-question values the statistics need are kept."""
    betas = tuple(betas)
    acc = CellStats(betas=betas)
    for ln in lines:
        if scored:
            acc.add(ln)
        else:
            acc.add_stored(ln, eps=eps, policy=policy)
    return acc.stats(meta, eps=eps, policy=policy, n_boot=n_boot, seed=seed)


def question_cluster(question: dict[str, Any]) -> str | None:
    """The cluster a question's values are resampled with in ``seerbench stats``: a dataset's own
    ``metadata['cluster']``, else its passage (``metadata['passage_id']``, else the passage text);
    None (its own cluster) without any of them."""
    meta = question.get("metadata") or {}
    for key in ("cluster", "passage_id"):
        v = meta.get(key)
        if v is not None and str(v) != "":
            return f"{key}:{v}"
    return _text_cluster(question.get("source_text") or "")


@functools.lru_cache(maxsize=1024)
def _text_cluster(source_text: str) -> str | None:
    """A passage's cluster label (its text with whitespace folded, hashed); cached, as the
    questions of one passage come one after another and each cell reads them again."""
    text = " ".join(source_text.split())
    return "text:" + hashlib.sha256(text.encode()).hexdigest() if text else None


def _own(codes: list[int]) -> list[int | None]:
    """Cluster labels for the stats package: code -1 (no passage) is the value's own cluster."""
    return [None if c < 0 else c for c in codes]


#: Where the accuracy score sits in a :data:`~seerbench.metrics.ScoreRow`.
ACCURACY = SCORE_TYPES.index("accuracy")

#: Grid axes a cell is described by, in the order tables show them.
CELL_AXES = ("protocol", "agent", "judge", "tools", "best_of_n")


class CellStats:
    """What one cell's statistics need, gathered from its (scored) results lines one at a time:
    per line a few floats in arrays of doubles, never the line itself, so a 10^5-line file is
    summarised in flat memory.

    With ``paired_score`` it also keeps, per line, the question id and the values
    :func:`paired_values` reads (``asd`` under that score and ``judge_accuracy``), for paired
    differences between cells."""

    def __init__(self, *, betas: Iterable[float] = BETAS, paired_score: str | None = None) -> None:
        self.betas = tuple(betas)
        self.keys = ["asd", *(f"{p}_{beta_key(b)}" for p in ("jse", "ase") for b in self.betas)]
        self._values: dict[str, dict[str, array[float]]] = {
            k: {st: array("d") for st in SCORE_TYPES} for k in self.keys
        }
        self._accuracy: array[float] = array("d")
        # cluster code of every kept line (-1: its own cluster), kept only once a line has one; and
        # per metric whether each kept line has a value (one byte a line)
        self._cluster_ids: dict[str, int] = {}
        self._line_codes: array[int] | None = None
        self._present: dict[str, array[int]] = {k: array("b") for k in self.keys}
        # per metric key: its presence's and its score columns' append, bound once (a line adds to
        # 7 keys x 4 columns); and the keys of each beta's JSE and ASE
        self._appends = [
            (k, self._present[k].append, tuple(self._values[k][st].append for st in SCORE_TYPES))
            for k in self.keys
        ]
        self._mixed_keys = [(f"jse_{beta_key(b)}", f"ase_{beta_key(b)}") for b in self.betas]
        self.n_lines = 0
        self.n_kept = 0
        self.parse_failures = 0
        self.failure_example: str | None = None  # the first parse failure's error, for the warning
        self.axes: dict[str, Any] | None = None  # the grid coordinates of the first line
        self.diagnostics = JudgeDiagnostics()
        self.paired_score = paired_score
        self._paired_at = SCORE_TYPES.index(paired_score) if paired_score in SCORE_TYPES else None
        self.ids: list[str] = []
        self.paired: dict[str, array[float]] = {"asd": array("d"), "judge_accuracy": array("d")}
        self._done = False  # keep_paired_only has freed the per-line scores

    def add(self, ln: dict[str, Any]) -> None:
        """Take one scored line (as :func:`rescore` returns it)."""
        rows = {k: tuple(v[st] for st in SCORE_TYPES) if (v := ln.get(k)) else None for k in self.keys}
        self._take(ln, ln["excluded"], ln["judge_accuracy"], rows)

    def add_stored(self, ln: dict[str, Any], *, eps: float, policy: FailurePolicy) -> None:
        """Take one line as stored, scored with ``eps`` and ``policy`` at this cell's betas: the
        same values ``add(rescore(ln, ...))`` takes, computed without building the scored line
        (:func:`seerbench.metrics.question_values` into the arrays) where both answer cases of a
        two-option question have a verdict to score; any other line goes through :func:`rescore`."""
        cases = ln["answer_cases"]
        qcases = ln["question"]["answer_cases"]
        if len(cases) == 2 and len(qcases) == 2:
            shorts = [c["short"] for c in qcases]
            probs = [resolve_stored(c["case_probs"], shorts, policy) for c in cases]
            true = next(c["short"] for c in qcases if c["value"] > 0.5)
            by_case = {c["short"]: p for c, p in zip(cases, probs, strict=True)}
            false = next(x for x in shorts if x != true)
            p_true, p_false = by_case.get(true), by_case.get(false)
            if p_true and p_false and len(by_case) == 2:  # the two cases, each with a verdict
                js_t, js_f, _, asd, mixed = question_values(
                    p_true, p_false, true, false, eps=eps, betas=self.betas
                )
                rows: dict[str, ScoreRow | None] = {"asd": asd}
                for (jse_key, ase_key), (jse, ase) in zip(self._mixed_keys, mixed, strict=True):
                    rows[jse_key], rows[ase_key] = jse, ase
                # rescore's judge accuracy: the mean over the line's cases, in their order
                accs = [(js_t if c["short"] == true else js_f)[ACCURACY] for c in cases]
                self._take(ln, False, sum(accs) / len(accs), rows)
                return
        self.add(rescore(ln, eps=eps, policy=policy, betas=self.betas))

    def _take(
        self, ln: dict[str, Any], excluded: bool, accuracy: float | None, rows: dict[str, ScoreRow | None]
    ) -> None:
        """Keep one line's values: its scores by metric key (``None``: the line has no value of it)."""
        if self.axes is None:
            self.axes = {k: ln.get(k) for k in CELL_AXES}
            if ln.get("adversary") is not None:  # a cross-play cell: the other side's debater
                self.axes["adversary"] = ln["adversary"]
        self.n_lines += 1
        self.parse_failures += ln["parse_failures"]
        if ln["parse_failures"] and self.failure_example is None:
            self.failure_example = next(
                (
                    c["case_probs"].get("error")
                    for c in ln.get("answer_cases") or ()
                    if (c.get("case_probs") or {}).get("error")
                ),
                None,
            )
        self.diagnostics.add(ln)
        if self.paired_score is not None:
            self.ids.append(ln["question_id"])
            asd, at = rows["asd"], self._paired_at
            asd_v = asd[at] if asd and at is not None else None
            for key, v in (("asd", asd_v), ("judge_accuracy", accuracy)):
                x = _finite(None if excluded else v)
                self.paired[key].append(math.nan if x is None else x)
        if excluded:
            return
        self.n_kept += 1
        label = question_cluster(ln.get("question") or {})
        if label is not None and self._line_codes is None:
            self._line_codes = array("q", [-1]) * (self.n_kept - 1)
        if self._line_codes is not None:
            code = -1 if label is None else self._cluster_ids.setdefault(label, len(self._cluster_ids))
            self._line_codes.append(code)
        for k, present, columns in self._appends:
            row = rows[k]
            present(1 if row else 0)
            if row:
                for append, x in zip(columns, row, strict=True):
                    append(x)
        self._accuracy.append(math.nan if accuracy is None else accuracy)

    def _clusters(self, key: str) -> list[int] | None:
        """Cluster codes of ``key``'s values where two of them share a cluster, else None."""
        if self._line_codes is None:
            return None
        lines = self._line_codes
        codes = (
            list(lines)
            if key == "judge_accuracy"
            else [c for c, p in zip(lines, self._present[key], strict=True) if p]
        )
        labelled = [c for c in codes if c >= 0]
        return codes if len(set(labelled)) < len(labelled) else None

    def shares_clusters(self) -> bool:
        """Whether two of the cell's scored questions share a passage (or a dataset's cluster)."""
        return self._clusters("judge_accuracy") is not None

    def stats(
        self, meta: dict[str, Any], *, eps: float, policy: FailurePolicy, n_boot: int = 2000, seed: int = 0
    ) -> dict[str, Any]:
        """The cell's stats record (what ``stats.json`` holds)."""
        if self._done:
            raise ValueError("CellStats.stats after keep_paired_only: its per-line scores are gone")
        columns: dict[str, array[float]] = {}
        clustered: dict[str, Summary] = {}
        for k, cols in self._values.items():
            if not len(cols[SCORE_TYPES[0]]):
                continue
            cl = self._clusters(k)
            if cl is None:  # no shared cluster: the i.i.d. bootstrap, draws shared across columns
                columns.update({f"{k}\t{st}": col for st, col in cols.items()})
            else:
                for st, col in cols.items():
                    clustered[f"{k}\t{st}"] = clustered_summary(col, _own(cl), n_boot=n_boot, seed=seed)
        summaries = {**summarize_many(columns, n_boot=n_boot, seed=seed), **clustered}
        acc = np.frombuffer(self._accuracy, dtype=float) if len(self._accuracy) else np.zeros(0)
        acc_cl = self._clusters("judge_accuracy")
        summaries["judge_accuracy"] = (
            accuracy_summary(acc, None if acc_cl is None else _own(acc_cl), n_boot=n_boot, seed=seed)
            if np.all(np.isfinite(acc))
            else summarize(acc, n_boot=n_boot, seed=seed)  # a verdict-less line: NaN, as it was
        )
        n_clusters = {s.clusters for s in summaries.values() if s.clusters is not None and s.n == self.n_kept}
        metrics: dict[str, Any] = {}
        for name, summary in summaries.items():
            k, _, st = name.partition("\t")
            if st:
                metrics.setdefault(k, {})[st] = summary.as_dict()
            else:
                metrics[k] = summary.as_dict()
        for k in self.keys:  # a protocol without agent scores (one answer case a question): null, same shape
            metrics.setdefault(k, dict.fromkeys(SCORE_TYPES))
        metrics = {k: metrics[k] for k in [*self.keys, "judge_accuracy"]}  # one key order for every cell
        return {
            **meta,
            "n_questions": self.n_lines,
            "n_scored": self.n_kept,
            "n_excluded": self.n_lines - self.n_kept,
            "parse_failures": self.parse_failures,
            "parse_failure_policy": policy,
            "eps": eps,
            "bootstrap": {"n_boot": n_boot, "seed": seed, "confidence": 0.95},
            # questions sharing a passage (or a dataset's cluster) are resampled together
            "clusters": max(n_clusters) if n_clusters else None,
            "metrics": metrics,
            "diagnostics": self._diagnostics(policy),
        }

    def _diagnostics(self, policy: FailurePolicy) -> dict[str, Any]:
        """The judge diagnostics, with a warning where parse failures decide what the cell shows."""
        out = self.diagnostics.result()
        n, failed = self.n_lines, self.n_lines - self.n_kept
        example = f" (e.g. {self.failure_example!r})" if self.failure_example else ""
        fix = (
            "the agent could not say which answer it believes with the methods in `elicitation.order` "
            "(an open protocol asks it before any judge): give it a method it can answer (logprobs, "
            "verbalized or vote; logprobs needs a backend that returns log probabilities), or a "
            "stronger agent model"
            if (self.failure_example or "").startswith(AGENT_CHOICE_FAILED)
            else "the judge's answers fit none of the methods in `elicitation.order`: give it a method "
            "it can answer (the methods are logprobs, verbalized and vote; logprobs needs a backend "
            "that returns log probabilities), or a stronger judge"
        )
        if n and not self.n_kept:
            out["warnings"].insert(
                0, f"{NONE_SCORED}all {n} had a verdict that failed to parse{example}; {fix}"
            )
        elif n and failed / n > FAILURE_SHARE:
            out["warnings"].insert(
                0,
                f"{failed} of {n} questions ({failed / n:.0%}) left out for verdicts that failed to "
                f"parse{example}, so the numbers are over the rest; {fix}",
            )
        elif policy == "half" and self.parse_failures and self.parse_failures / max(n, 1) > FAILURE_SHARE:
            out["warnings"].insert(
                0,
                f"{self.parse_failures} verdicts failed to parse in {n} questions and count as 1/2 "
                f"(parse_failures: half){example}; {fix}",
            )
        return out

    def keep_paired_only(self) -> CellStats:
        """Free the per-line scores once :meth:`stats` has read them, keeping what paired
        differences (:meth:`paired_values`) and :meth:`shares_clusters` read: a cell that goes
        back from a worker process to be paired is then its ids and two values a line."""
        self._values, self._present, self._accuracy, self._appends = {}, {}, array("d"), []
        self._done = True
        return self

    def paired_values(self, key: str) -> dict[str, float]:
        """Question id -> the value of ``key`` (``asd`` or ``judge_accuracy``), for the lines
        :func:`paired_values` would keep (a later line of the same id wins, as there)."""
        if self.paired_score is None:
            raise ValueError(
                "CellStats(paired_score=...) keeps the values "
                "of paired differences; this one was made without"
            )
        return {q: x for q, x in zip(self.ids, self.paired[key], strict=True) if not math.isnan(x)}


#: A judge that picks the same position in more than this share of verdicts is flagged.
POSITION_BIAS_SHARE = 0.9
#: A judge whose P(first option) never leaves a band this narrow is flagged.
NARROW_BAND = 0.1
#: A cell where more than this share of questions has a parse failure is flagged.
FAILURE_SHARE = 0.1
#: The start of a cell's first warning when it scored no question (every verdict failed to parse);
#: ``seerbench run`` fails on such a cell and quotes the rest of the warning.
NONE_SCORED = "no question scored: "
_MIN_VERDICTS = 5


def judge_diagnostics(lines: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Signs of a degenerate judge in one cell's lines: the share of verdicts that pick each
    position (the option shown first or second) and the range of P(first option). With
    ``both_orders`` each order's verdict counts separately, as the judge saw it."""
    d = JudgeDiagnostics()
    for ln in lines:
        d.add(ln)
    return d.result()


class JudgeDiagnostics:
    """:func:`judge_diagnostics` gathered one line at a time (a pick and P(first option) per verdict)."""

    def __init__(self) -> None:
        self.picks: array[int] = array("b")
        self.p_first: array[float] = array("d")
        self.swapped_any = False

    def add(self, ln: dict[str, Any]) -> None:
        shorts = [c["short"] for c in ln["question"]["answer_cases"]]
        if len(shorts) != 2:
            return
        seen: list[tuple[Any, Any]] = []
        for c in ln["answer_cases"]:
            cp = c["case_probs"]
            if cp.get("method") == "trust" or not cp.get("probabilities"):
                continue
            if ln.get("symmetric"):  # one run served every case: count its verdict once
                run = (cp["probabilities"], cp.get("transcript"))  # the same run: equal values
                if run in seen:
                    continue
                seen.append(run)
            meta = cp.get("metadata") or {}
            views = [cp["probabilities"]]
            if meta.get("both_orders") and meta.get("original") and meta.get("swapped"):
                self.swapped_any = True
                # the swapped run showed the options in reverse: its first position is shorts[1]
                views = [
                    meta["original"],
                    {shorts[0]: meta["swapped"][shorts[1]], shorts[1]: meta["swapped"][shorts[0]]},
                ]
            for v in views:
                p0, p1 = float(v.get(shorts[0], 0.0)), float(v.get(shorts[1], 0.0))
                self.p_first.append(p0 / (p0 + p1) if p0 + p1 > 0 else 0.5)
                if abs(p0 - p1) > 1e-9:
                    self.picks.append(0 if p0 > p1 else 1)

    def result(self) -> dict[str, Any]:
        picks, p_first = self.picks, self.p_first
        out: dict[str, Any] = {"n_verdicts": len(p_first), "warnings": []}
        if not p_first:
            return out
        share_first = sum(1 for x in picks if x == 0) / len(picks) if picks else None
        out.update(first_position_share=share_first, p_first_min=min(p_first), p_first_max=max(p_first))
        if len(p_first) < _MIN_VERDICTS:
            return out
        fix = (
            "both_orders is on, so the bias is averaged out, but the judge carries little signal"
            if self.swapped_any
            else "set `both_orders: true` to control position bias"
        )
        if share_first is not None and max(share_first, 1 - share_first) > POSITION_BIAS_SHARE:
            pos = "first" if share_first >= 0.5 else "second"
            out["warnings"].append(
                f"judge picked the {pos} option in {max(share_first, 1 - share_first):.0%} of {len(picks)} "
                f"verdicts (position bias); {fix}"
            )
        elif max(p_first) - min(p_first) < NARROW_BAND:
            out["warnings"].append(
                f"judge's P(first option) never left [{min(p_first):.2f}, {max(p_first):.2f}]: it barely "
                f"discriminates; {fix}"
            )
        return out


def _paired_value(ln: dict[str, Any], key: str, score: str) -> float | None:
    """The value of ``key`` a paired difference uses for one line (None: the line does not count)."""
    v = ln.get(key)
    return _finite(None if ln.get("excluded") else (v.get(score) if isinstance(v, dict) else v))


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def paired_values(lines: Iterable[dict[str, Any]], key: str, score: str = "log") -> dict[str, float]:
    """Question id -> the value of a per-question metric, over the lines that scored it."""
    out = {}
    for ln in lines:
        x = _paired_value(ln, key, score)
        if x is not None:
            out[ln["question_id"]] = x
    return out


def paired(
    a: Sequence[dict[str, Any]] | CellStats,
    b: Sequence[dict[str, Any]] | CellStats,
    key: str,
    score: str = "log",
    **kw: Any,
) -> dict[str, Any] | None:
    """Paired difference a - b of a per-question metric over the questions both scored. ``a`` and
    ``b`` are lines, or :class:`CellStats` made with ``paired_score=score``."""

    def values(src: Sequence[dict[str, Any]] | CellStats) -> dict[str, float]:
        return src.paired_values(key) if isinstance(src, CellStats) else paired_values(src, key, score)

    va, vb = values(a), values(b)
    common = sorted(set(va) & set(vb))
    if not common:
        return None
    xa, xb = [va[q] for q in common], [vb[q] for q in common]
    if key == "judge_accuracy":  # a percentile interval is [0, 0] when both are all correct
        return paired_proportion_difference(xa, xb, **kw).as_dict()
    return paired_difference(xa, xb, **kw).as_dict()
