"""What a report shows, gathered from a run folder or a study database.

The statistics are those of ``seerbench stats --json`` (:func:`seerbench.analysis.run.summarize_run`, with
its paired differences and optimization-pressure section) and ``seerbench study stats --json``
(:func:`seerbench.study.study_stats`): the report computes none of its own. What it adds is read
from the results lines in one pass per cell: the rows of the transcript browser (compact, for the
page's JSON), the judges' calibration (:mod:`seerbench.complementarity._calibration`) and which
elicitation methods gave the verdicts.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seerbench.analysis.run import summarize_run
from seerbench.complementarity import Calibration, calibration, judge_forecasts
from seerbench.errors import ConfigError
from seerbench.runs import CELL_AXES, RunFolder

#: The protocol whose cells paired differences compare against when none is given.
DEFAULT_BASELINE = "NaiveJudge"


@dataclass
class RunData:
    """One run folder's report material."""

    label: str
    path: Path
    config: dict[str, Any]
    meta: dict[str, Any]
    summary: dict[str, Any]  # summarize_run's output, exactly what `stats --json` prints
    baseline: str | None
    labels: dict[str, str]  # cell key -> short label (protocol plus the axes that vary)
    methods: dict[str, dict[str, int]]  # cell key -> elicitation method -> verdicts
    calibrations: list[Calibration]  # model judges only (BlindTrust's "trust" is no judge)
    usage: dict[str, Any] | None = None  # the folder's usage.json (RunFolder.usage)
    cells: list[dict[str, Any]] = field(default_factory=list)  # browser: one entry per cell
    rows: list[list[Any]] = field(default_factory=list)  # browser: one row per (cell, question)
    questions: dict[str, int] = field(default_factory=dict)  # browser: question (as JSON) -> index


def _axis_text(s: dict[str, Any], axis: str) -> str:
    v = s.get(axis)
    if axis == "tools":
        return "+".join(v) if v else ""
    if axis == "best_of_n":
        return f"bo{v or 1}"
    if axis == "judge" and v == "trust":  # BlindTrust's placeholder, not a judge model
        return ""
    if axis == "adversary":
        return f"vs {v}" if v else ""
    return f"{axis[0].upper()} {v}" if v else ""


def cell_labels(cells: list[dict[str, Any]]) -> dict[str, str]:
    """A short label per cell: its protocol folder, plus agent, judge, tools and best-of-N where
    they vary between the run's cells (so no two labels are alike)."""
    axes = [*CELL_AXES[1:], "adversary"]  # the adversary: cross-play cells only
    varying = [a for a in axes if len({_axis_text(s, a) for s in cells} - {""}) > 1]
    out = {}
    for s in cells:
        parts = [str(s["protocol"]), *(_axis_text(s, a) for a in varying if _axis_text(s, a))]
        out[str(s["cell"])] = " ".join(parts)
    if len(set(out.values())) < len(out):  # still ambiguous: the full cell key
        return {str(s["cell"]): str(s["cell"]) for s in cells}
    return out


def pick_baseline(run: RunFolder, baseline: str | None) -> str | None:
    """``baseline`` as given; else the run's NaiveJudge folder when there is exactly one; else None
    (the paired-differences section then says how to ask for one)."""
    if baseline is not None:
        return baseline
    folders = {c.key.split("/")[0] for c in run.cells()}
    named = [f for f in folders if f.split("_")[0] == DEFAULT_BASELINE]
    return named[0] if len(named) == 1 and len(folders) > 1 else None


def _mark(score: Any) -> str:
    """A case's verdict against the truth: r(ight), w(rong), t(ie) or u(nscored)."""
    acc = (score or {}).get("accuracy")
    if acc is None:
        return "u"
    return "r" if acc >= 1.0 else "w" if acc <= 0.0 else "t"


def _turn(t: dict[str, Any]) -> list[Any]:
    quotes = [
        [str(q.get("text", "")), q.get("verified")] for q in t.get("quotes") or [] if isinstance(q, dict)
    ]
    return [
        str(t.get("speaker") or t.get("role") or ""),
        t.get("answer_case"),
        str(t.get("content") or ""),
        quotes,
    ]


def browser_row(cell_index: int, q_index: int, ln: dict[str, Any]) -> list[Any]:
    """One line of a results file as the transcript browser's row:
    ``[cell, question, excluded, parse_failures, judge_accuracy, asd(log), chosen_case, cases]``,
    each case ``[short, method, probabilities, parse_status, error, mark, transcript, orders]`` (``orders``:
    with both option orders, the probabilities of the order as asked and of the swapped one) and each
    turn ``[speaker, answer_case, text, [[quote, verified], ...]]``. A symmetric line (a debate,
    NaiveJudge) has one protocol run: its transcript is given once, on the first case."""
    cases = []
    seen_transcript = False
    for c in ln.get("answer_cases") or []:
        cp = c.get("case_probs") or {}
        tr: list[Any] = []
        if not (ln.get("symmetric") and seen_transcript):
            tr = [_turn(t) for t in cp.get("transcript") or []]
            seen_transcript = True
        meta = cp.get("metadata") or {}
        orders = [meta.get("original"), meta.get("swapped")] if meta.get("both_orders") else None
        cases.append(
            [
                c.get("short"),
                cp.get("method"),
                cp.get("probabilities"),
                cp.get("parse_status"),
                cp.get("error"),
                _mark(cp.get("judge_score")),
                tr,
                orders,
            ]
        )
    asd = (ln.get("asd") or {}).get("log")
    return [
        cell_index,
        q_index,
        bool(ln.get("excluded")),
        int(ln.get("parse_failures") or 0),
        ln.get("judge_accuracy"),
        asd,
        ln.get("chosen_case"),
        cases,
    ]


def question_entry(q: dict[str, Any]) -> list[Any]:
    """``[id, text, [[short, long, is_true], ...]]``."""
    return [
        str(q.get("id")),
        str(q.get("text") or ""),
        [
            [str(a.get("short")), str(a.get("long")), float(a.get("value") or 0.0) > 0.5]
            for a in q.get("answer_cases") or []
        ],
    ]


def load_run(
    path: str | Path,
    *,
    baseline: str | None = None,
    label: str | None = None,
    questions: list[list[Any]] | None = None,
    question_index: dict[str, int] | None = None,
    cell_offset: int = 0,
) -> RunData:
    """Read a run folder for the report. ``questions``/``question_index`` collect the browser's
    question table across runs (one entry per distinct question); ``cell_offset`` numbers this run's
    cells after those of earlier runs."""
    folder = RunFolder(path)
    base = pick_baseline(folder, baseline)
    try:
        summary = summarize_run(folder.path, baseline=base, anytime=True)
    except ConfigError as e:  # e.g. a --baseline this run has no folder of: say which run
        if str(folder.path) in str(e):
            raise
        raise ConfigError(f"{folder.path}: {e}") from None
    stats_by_cell = {s["cell"]: s for s in summary["cells"]}
    labels = cell_labels(summary["cells"])
    questions = [] if questions is None else questions
    question_index = {} if question_index is None else question_index
    data = RunData(
        label=label or folder.path.name,
        path=folder.path,
        config=folder.config,
        meta=folder.meta,
        summary=summary,
        baseline=base,
        labels=labels,
        methods={},
        calibrations=[],
        usage=folder.usage(),
    )
    for i, cell in enumerate(folder.cells()):
        s = stats_by_cell.get(cell.key)
        if s is None:
            continue
        methods: Counter[str] = Counter()
        conf: list[float] = []
        right: list[float] = []
        judge = str(s.get("judge"))
        model_judge = judge != "trust"
        for ln in cell.results():
            entry = question_entry({"id": ln.get("question_id"), **(ln.get("question") or {})})
            key = json.dumps(entry)  # one id may name different questions in two runs: keyed by content
            if key not in question_index:
                question_index[key] = len(questions)
                questions.append(entry)
            data.rows.append(browser_row(cell_offset + i, question_index[key], ln))
            for c in ln.get("answer_cases") or []:
                methods[str((c.get("case_probs") or {}).get("method"))] += 1
            if model_judge:
                c_, y_ = judge_forecasts([ln])
                conf += c_
                right += y_
        data.methods[cell.key] = dict(methods)
        if model_judge:
            data.calibrations.append(calibration(conf, right, source=cell.key, note=f"judge {judge}"))
        data.cells.append(
            {
                "run": data.label,
                "cell": cell.key,
                "label": labels[cell.key],
                "protocol": s["protocol"],
                "judge": judge,
                "agent": s.get("agent"),
            }
        )
    data.questions = question_index
    return data


@dataclass
class StudyData:
    """A study database's report material: ``study_stats`` and the export rows' times."""

    label: str
    path: Path
    manifest: dict[str, Any]
    stats: dict[str, Any]  # study_stats(export_rows(store)), what `study stats --json` prints
    seconds: dict[str, list[float]]  # condition -> seconds per judgment (catch trials left out)


def load_study(db: str | Path) -> StudyData:
    from seerbench.study import StudyStore, export_rows, study_stats

    p = Path(db)
    if "://" not in str(db) and not p.is_file():
        raise ConfigError(
            f"{db}: no such study database; give the file `seerbench study create` wrote (--db)"
        )
    store = StudyStore(str(db))
    try:
        if store.manifest.task in ("critique", "validation"):
            raise ConfigError(
                f"{db}: the report covers judging studies; for a {store.manifest.task} study use "
                f"`seerbench study stats --db {db}`"
            )
        rows = export_rows(store)
        if not rows:
            raise ConfigError(f"{db}: the study has no judgments yet; a report needs at least one")
        stats = study_stats(rows, seed=store.manifest.seed)
        seconds: dict[str, list[float]] = {}
        for r in rows:
            if not r.get("is_catch") and r.get("seconds") is not None:
                seconds.setdefault(str(r["condition"]), []).append(float(r["seconds"]))
        manifest = store.manifest.public_dump()
        return StudyData(label=store.manifest.name, path=p, manifest=manifest, stats=stats, seconds=seconds)
    finally:
        store.close()
