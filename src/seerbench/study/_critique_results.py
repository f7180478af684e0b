"""Critique studies out of the database (seed 002): export rows with one row per critique, the
validation marks joined onto them, and the seed's section 3.3 / 3.3.1 measures per condition with
cluster-bootstrap intervals and paired assist-minus-no-assist differences.

Units: a *task* is one rater critiquing one answer (the seed's "answer"); a *critique* is one
critique written in a task. Measures per task (critiques per answer, share of answers with a
critique, Likert, time, intended flaw found, valid and valid-novel critiques per answer) are
resampled with their items (answers) and raters; measures per critique (share of used critiques
edited, share valid) likewise, by the item and rater of their task
(:mod:`seerbench.stats`: items + raters - judgments).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from seerbench.errors import DataError
from seerbench.stats import (
    CLUSTER_N_BOOT as DEFAULT_N_BOOT,
)
from seerbench.stats import (
    Interval,
    Summary,
    cluster_group_modes,
    codes,
    combine_modes,
    correlation,
    count_interval,
    crossed_variance,
    difference_interval,
    group_interval,
    t_interval_of,
)
from seerbench.study._critique_items import answer_of
from seerbench.study._export import EXPORT_FIELDS, rater_columns
from seerbench.study._storage import StudyStore

__all__ = [
    "CRITIQUE_FIELDS",
    "SEVERITIES",
    "VALIDATION_FIELDS",
    "critique_export_rows",
    "critique_stats",
    "merge_validations",
    "validation_export_rows",
]

#: Severity levels of a critique, least to most severe (seed 002, section 3.2).
SEVERITIES: tuple[str, ...] = ("minor", "medium", "major", "critical")

# who judged and when: the judging export's columns from rater_id to seq, and the times
_RATER_FIELDS = (
    *EXPORT_FIELDS[EXPORT_FIELDS.index("rater_id") : EXPORT_FIELDS.index("seq") + 1],
    *("assigned_at", "started_at", "submitted_at", "seconds"),
)

#: Columns of a critique study's export: one row per written critique (a task with none gives
#: one row with empty critique columns). ``valid`` / ``covers_intended`` come from a validation
#: study (:func:`merge_validations`): the share of its validators who marked the critique so.
CRITIQUE_FIELDS: tuple[str, ...] = (
    "judgment_id",
    "study",
    "task",
    "item",
    "question_id",
    "answer_id",
    "answer_kind",
    "answer_correct",
    "has_intended_flaw",
    "condition",
    "assist",
    *_RATER_FIELDS,
    "likert",
    "comment",
    "model_critiques",
    "n_critiques",
    "critique_id",
    "critique_n",
    "critique_text",
    "severity",
    "category",
    "used",
    "edited",
    "model_critique_id",
    "novel",
    "valid",
    "covers_intended",
)

#: Columns of a validation study's export: one row per critique marked.
VALIDATION_FIELDS: tuple[str, ...] = (
    "judgment_id",
    "study",
    "task",
    "item",
    "critique_judgment_id",
    "answer_id",
    "answer_kind",
    "condition",
    *_RATER_FIELDS,
    "comment",
    "critique_id",
    "critique_text",
    "valid",
    "covers_intended",
)


def _norm(s: str) -> str:
    return " ".join(s.split()).casefold()


def is_novel(text: str, used: bool, model_texts: Sequence[str]) -> bool:
    """A critique is novel when it was not pre-filled from a model critique and does not repeat
    one of the answer's model critiques, or a near-duplicate folded into one (same text, case and
    white space aside)."""
    return not used and _norm(text) not in {_norm(t) for t in model_texts}


def _base_row(store: StudyStore, a: Any, r: dict[str, Any]) -> dict[str, Any]:
    return {
        "judgment_id": a.id,
        "study": store.manifest.name,
        "task": store.manifest.task,
        "item": store.item(a.item_id).key,
        "condition": a.condition,
        **rater_columns(a, r),
        "comment": a.comment,
    }


def critique_export_rows(store: StudyStore) -> list[dict[str, Any]]:
    """A critique study's export rows (see :data:`CRITIQUE_FIELDS`)."""
    m = store.manifest
    written = store.critiques()
    rows = []
    for a, r in store.assignments():
        ans = answer_of(store.item(a.item_id))
        assist = "critiques" in m.condition(a.condition).assistance
        model_texts = [
            str(t) for c in ans.get("critiques") or [] for t in (c["text"], *(c.get("merged") or []))
        ]
        base = {
            **_base_row(store, a, r),
            "question_id": ans["question_id"],
            "answer_id": ans["answer_id"],
            "answer_kind": ans["answer_kind"],
            "answer_correct": ans.get("correct"),
            "has_intended_flaw": bool(ans.get("intended_flaw") or ans.get("intended_critique")),
            "assist": assist,
            "likert": int(a.rating) if a.rating else None,
            "model_critiques": len(ans.get("critiques") or []) if assist else 0,
        }
        cs = written.get(a.id, [])
        base["n_critiques"] = len(cs)
        empty = dict.fromkeys(CRITIQUE_FIELDS[CRITIQUE_FIELDS.index("critique_id") :])
        if not cs:
            rows.append({**base, **empty})
        for c in cs:
            rows.append(
                {
                    **base,
                    **empty,
                    "critique_id": f"{a.id}-{c['n']}",
                    "critique_n": c["n"],
                    "critique_text": c["text"],
                    "severity": c["severity"],
                    "category": c["category"],
                    "used": c["used"],
                    "edited": c["edited"],
                    "model_critique_id": c["model_critique_id"],
                    "novel": is_novel(c["text"], c["used"], model_texts),
                }
            )
    return rows


def validation_export_rows(store: StudyStore) -> list[dict[str, Any]]:
    """A validation study's export rows (see :data:`VALIDATION_FIELDS`)."""
    marks = store.validations()
    rows = []
    for a, r in store.assignments():
        it = store.item(a.item_id)
        ans = answer_of(it)
        job = it.question.metadata["judgment"]
        texts = {c["critique_id"]: c["critique_text"] for c in job["critiques"]}
        base = {
            **_base_row(store, a, r),
            "critique_judgment_id": job["judgment_id"],
            "answer_id": ans["answer_id"],
            "answer_kind": ans["answer_kind"],
        }
        for v in marks.get(a.id, []):
            rows.append(
                {
                    **base,
                    "critique_id": v["critique_id"],
                    "critique_text": texts.get(v["critique_id"]),
                    "valid": v["valid"],
                    "covers_intended": v["covers_intended"],
                }
            )
    return rows


def merge_validations(
    rows: Iterable[dict[str, Any]], validations: Iterable[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Critique export rows with ``valid`` and ``covers_intended`` filled from validation export
    rows: for each critique the share of its validators who marked it valid (covering the intended
    flaw), so one validator gives 0 or 1. Validation rows naming a critique that is not in
    ``rows`` are refused (the two exports are of different studies)."""
    marks: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for v in validations:
        if v.get("task") != "validation":
            raise DataError(f"not a validation study's export row (task {v.get('task')!r})")
        marks[str(v["critique_id"])].append(v)
    out = []
    known = set()
    for row in rows:
        cid = row.get("critique_id")
        row = dict(row)
        if cid is not None and str(cid) in marks:
            known.add(str(cid))
            ms = marks[str(cid)]
            row["valid"] = sum(bool(v["valid"]) for v in ms) / len(ms)
            cov = [v["covers_intended"] for v in ms if v.get("covers_intended") is not None]
            row["covers_intended"] = sum(bool(c) for c in cov) / len(cov) if cov else None
        out.append(row)
    stray = sorted(set(marks) - known)
    if stray:
        raise DataError(
            f"validations of {len(stray)} critiques not in the critique export (e.g. {stray[0]}); "
            "validate the export of this critique study"
        )
    return out


# ------------------------------------------------------------------ metrics


def _interval_dict(iv: Interval, values: np.ndarray, kind: str, se: float, seed: int) -> dict[str, Any]:
    """A measure's mean and interval over ``values`` as the shared
    :class:`seerbench.stats.Summary`'s dict (``n``, ``mean``, ``std``, ``se``, ``ci_low``,
    ``ci_high``, ``confidence``, ``n_boot``, ``seed``, ``method``, ``n_eff``, ``clusters``)."""
    method = (
        "cluster bootstrap (items and raters), Wilson interval at the effective n"
        if kind == "proportion"
        else (
            "cluster bootstrap (items and raters, small-sample corrected), quasi-Poisson score interval "
            "at the effective n (t, Satterthwaite df)"
        )
        if kind == "count"
        else "cluster bootstrap (items and raters), t interval (clusters - 1 df)"
    )
    n = int(values.size)
    return Summary.from_interval(
        iv,
        n=n,
        std=float(values.std(ddof=1)) if n > 1 else 0.0,
        se=se,
        n_boot=DEFAULT_N_BOOT,
        seed=seed,
        method=method,
    ).as_dict()


def _t_interval(estimate: float, variance: float, df: float, confidence: float = 0.95) -> Interval:
    """:func:`seerbench.stats.t_interval_of`: ``estimate`` +- t * sqrt(``variance``) at ``df``
    degrees of freedom (the number of clusters behind the variance, less one)."""
    return t_interval_of(estimate, variance, df, confidence, "cluster bootstrap, t")


# the range a mean's interval is clipped to: seconds are positive, the Likert scale is 1-7
_RANGE = {"seconds": (0.0, math.inf), "likert": (1.0, 7.0)}


def _measure(
    units: list[tuple[float, str, str, str]],
    conds: list[str],
    pairs: dict[str, tuple[str, str]],
    kind: str,
    seed: int,
    intervals: bool = True,
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Per-condition means of ``units`` ((value, condition, item, rater)) with cluster-bootstrap
    intervals, and the paired differences ``pairs`` (label -> (assist, no_assist)).

    ``kind`` is ``proportion`` (values in [0, 1]: Wilson / MOVER), ``count`` (critiques per
    answer: :func:`seerbench.stats.count_interval`, the quasi-Poisson score interval at the
    effective n, with the small-sample variance and Satterthwaite df of
    :func:`seerbench.stats.crossed_variance`; differences a t interval on the same),
    or ``likert`` / ``seconds`` (t intervals clipped to 1-7 / at least 0). ``intervals=False``:
    means only, no bootstrap."""
    if not units:
        return {}, {}
    values = np.array([u[0] for u in units], dtype=float)
    group_of = {c: g for g, c in enumerate(conds)}
    groups = np.array([group_of[u[1]] for u in units], dtype=np.int64)
    if not intervals:
        plain = {
            c: {"n": int((groups == g).sum()), "mean": float(values[groups == g].mean())}
            for c, g in group_of.items()
            if (groups == g).any()
        }
        return plain, {
            label: {"mean": plain[a]["mean"] - plain[n]["mean"]}
            for label, (a, n) in pairs.items()
            if a in plain and n in plain
        }
    items, _ = codes([u[2] for u in units])
    raters, _ = codes([u[3] for u in units])
    means, modes = cluster_group_modes(
        values, items, raters, groups, len(conds), n_boot=DEFAULT_N_BOOT, seed=seed
    )
    cov = combine_modes(modes)
    ivs: dict[str, Interval] = {}
    out: dict[str, dict[str, Any]] = {}

    def df(sel: np.ndarray) -> float:
        return float(min(np.unique(items[sel]).size, np.unique(raters[sel]).size) - 1)

    for c, g in group_of.items():
        sel = groups == g
        if not sel.any():
            continue
        var = float(cov[g, g])
        if kind == "proportion":
            ivs[c] = group_interval(means, cov, g, sel, items, raters)
        elif kind == "count":
            var, d_f = _crossed(modes, g, None, sel, items, raters)
            ivs[c] = count_interval(float(means[g]), var, d_f, n_max=float(sel.sum()))
        else:
            iv = _t_interval(float(means[g]), float(cov[g, g]), df(sel))
            lo, hi = _RANGE.get(kind, (-math.inf, math.inf))
            ivs[c] = Interval(iv.estimate, max(iv.ci_low, lo), min(iv.ci_high, hi), None)
        out[c] = _interval_dict(ivs[c], values[sel], kind, math.sqrt(max(var, 0.0)), seed)
    diffs: dict[str, dict[str, Any]] = {}
    for label, (ca, cn) in pairs.items():
        if ca not in ivs or cn not in ivs:
            continue
        a, b = group_of[ca], group_of[cn]
        if kind == "proportion":
            d = difference_interval(ivs[ca], ivs[cn], correlation(cov, a, b))
        elif kind == "count":
            both = (groups == a) | (groups == b)
            v, d_f = _crossed(modes, a, b, both, items, raters)
            if not v > 0:  # no count varies in either: the Poisson variances of the two means
                v = sum(max(ivs[x].estimate, 1.0) / (groups == group_of[x]).sum() for x in (ca, cn))
            d = _t_interval(ivs[ca].estimate - ivs[cn].estimate, v, d_f)
        else:
            both = (groups == a) | (groups == b)
            d = _t_interval(
                ivs[ca].estimate - ivs[cn].estimate, float(cov[a, a] + cov[b, b] - 2 * cov[a, b]), df(both)
            )
        diffs[label] = {"mean": d.estimate, "ci_low": d.ci_low, "ci_high": d.ci_high}
    return out, diffs


def _crossed(
    modes: dict[str, np.ndarray],
    a: int,
    b: int | None,
    sel: np.ndarray,
    items: np.ndarray,
    raters: np.ndarray,
) -> tuple[float, float]:
    """:func:`seerbench.stats.crossed_variance` of group ``a``'s mean, or of the difference of
    groups ``a`` and ``b``'s means, on the units ``sel``."""
    if b is None:
        parts = {m: float(c[a, a]) for m, c in modes.items()}
    else:
        parts = {m: float(c[a, a] + c[b, b] - 2 * c[a, b]) for m, c in modes.items()}
    return crossed_variance(
        parts, int(np.unique(items[sel]).size), int(np.unique(raters[sel]).size), int(sel.sum())
    )


def _pairs(tasks: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """Assist / no-assist condition pairs: ``K.assist`` with ``K.no_assist`` (``assist`` with
    ``no_assist``), else the two conditions showing the same answer kinds, one with assistance."""
    assist = {t["condition"] for t in tasks if t["assist"]}
    plain = {t["condition"] for t in tasks if not t["assist"]}
    kinds: dict[str, set[str]] = defaultdict(set)
    for t in tasks:
        kinds[t["condition"]].add(str(t["answer_kind"]))
    out = {}
    for ca in sorted(assist):
        stem = ca[: -len("assist")] if ca.endswith("assist") else None
        if stem is not None and stem + "no_assist" in plain:
            out[stem.rstrip(".") or "all"] = (ca, stem + "no_assist")
            continue
        same = [cn for cn in plain if kinds[cn] == kinds[ca]]
        if len(same) == 1:
            out["+".join(sorted(kinds[ca]))] = (ca, same[0])
    return out


def _tasks(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Export rows (one per critique) grouped back into tasks with their critiques."""
    tasks: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.get("task") != "critique":
            raise DataError(f"not a critique study's export row (task {row.get('task')!r})")
        t = tasks.setdefault(str(row["judgment_id"]), {**row, "critiques": []})
        if row.get("critique_id") is not None:
            t["critiques"].append(row)
    for t in tasks.values():
        if t.get("n_critiques") is not None and int(t["n_critiques"]) != len(t["critiques"]):
            raise DataError(
                f"task {t['judgment_id']}: {len(t['critiques'])} critique rows but n_critiques "
                f"{t['n_critiques']} (a partial export?)"
            )
    return list(tasks.values())


def critique_stats(
    rows: Iterable[dict[str, Any]],
    *,
    categories: Sequence[str] | None = None,
    seed: int = 0,
    intervals: bool = True,
) -> dict[str, Any]:
    """Seed 002's measures (sections 3.3 and 3.3.1) per condition from a critique study's export
    rows (validity merged in with :func:`merge_validations` for the 3.3.1 measures), each with a
    cluster-bootstrap 95% interval, and assist-minus-no-assist differences per answer kind.

    Per task: ``critiques_per_answer`` (and ``by_severity``, ``by_category``), ``any_critique``,
    ``likert``, ``seconds``; per used critique: ``used_edited``. With validations, over the tasks
    whose critiques were all validated: ``intended_flaw_found`` (misleading answers: a critique
    covering the intended flaw; a fractional mark counts its share), ``valid_share`` (per critique),
    ``valid_per_answer`` and ``valid_novel_per_answer`` (novel: not used from and not repeating a
    model critique of the answer). ``intervals=False`` gives the means without the bootstrap
    (the admin page: about 12 s less for 2,000 tasks).
    """
    tasks = _tasks(rows)
    conds = sorted({str(t["condition"]) for t in tasks})
    pairs = _pairs(tasks)
    cats = (
        list(categories)
        if categories is not None
        else sorted({str(c["category"]) for t in tasks for c in t["critiques"]})
    )

    def key(t: dict[str, Any]) -> tuple[str, str, str]:
        return (str(t["condition"]), str(t["item"]), str(t["rater_id"]))

    per_task: dict[str, tuple[str, list[tuple[float, str, str, str]]]] = {
        "critiques_per_answer": ("count", [(float(len(t["critiques"])), *key(t)) for t in tasks]),
        "any_critique": ("proportion", [(float(bool(t["critiques"])), *key(t)) for t in tasks]),
        "likert": ("likert", [(float(t["likert"]), *key(t)) for t in tasks if t.get("likert") is not None]),
        "seconds": (
            "seconds",
            [(float(t["seconds"]), *key(t)) for t in tasks if t.get("seconds") is not None],
        ),
        "used_edited": (
            "proportion",
            [(float(bool(c["edited"])), *key(t)) for t in tasks for c in t["critiques"] if c.get("used")],
        ),
    }
    done = [t for t in tasks if all(c.get("valid") is not None for c in t["critiques"])]
    validated = any(c.get("valid") is not None for t in tasks for c in t["critiques"])
    if validated:
        flawed = [t for t in done if t.get("has_intended_flaw")]
        per_task["intended_flaw_found"] = (
            "proportion",
            [
                (max((float(c.get("covers_intended") or 0.0) for c in t["critiques"]), default=0.0), *key(t))
                for t in flawed
            ],
        )
        per_task["valid_share"] = (
            "proportion",
            [(float(c["valid"]), *key(t)) for t in done for c in t["critiques"]],
        )
        per_task["valid_per_answer"] = (
            "count",
            [(sum(float(c["valid"]) for c in t["critiques"]), *key(t)) for t in done],
        )
        per_task["valid_novel_per_answer"] = (
            "count",
            [(sum(float(c["valid"]) for c in t["critiques"] if c.get("novel")), *key(t)) for t in done],
        )
    out: dict[str, Any] = {"task": "critique", "seed": seed, "pairs": {k: list(v) for k, v in pairs.items()}}
    conditions: dict[str, dict[str, Any]] = {
        c: {
            "tasks": sum(1 for t in tasks if t["condition"] == c),
            "raters": len({t["rater_id"] for t in tasks if t["condition"] == c}),
            "answers": len({t["item"] for t in tasks if t["condition"] == c}),
            "critiques": sum(len(t["critiques"]) for t in tasks if t["condition"] == c),
            "used": sum(1 for t in tasks if t["condition"] == c for x in t["critiques"] if x.get("used")),
            "validated_tasks": sum(1 for t in done if t["condition"] == c) if validated else 0,
            "by_severity": {},
            "by_category": {},
        }
        for c in conds
    }
    diffs: dict[str, dict[str, Any]] = {
        label: {"assist": a, "no_assist": n, "by_severity": {}, "by_category": {}}
        for label, (a, n) in pairs.items()
    }

    def put(name: str, kind: str, units: list[tuple[float, str, str, str]], sub: str | None = None) -> None:
        per, dif = _measure(units, conds, pairs, kind, seed, intervals)
        for c in conds:
            target = conditions[c][sub] if sub else conditions[c]
            target[name] = per.get(c, {"n": 0, "mean": math.nan})
        for label, d in dif.items():
            (diffs[label][sub] if sub else diffs[label])[name] = d

    for name, (kind, units) in per_task.items():
        put(name, kind, units)
    for level in SEVERITIES:
        put(
            level,
            "count",
            [(float(sum(c["severity"] == level for c in t["critiques"])), *key(t)) for t in tasks],
            "by_severity",
        )
    for cat in cats:
        put(
            cat,
            "count",
            [(float(sum(c["category"] == cat for c in t["critiques"])), *key(t)) for t in tasks],
            "by_category",
        )
    out["conditions"] = conditions
    out["differences"] = diffs
    out["validated"] = validated
    return out
