"""What a report shows, gathered from a run folder or a study database.

The statistics are those of ``seerbench stats --json`` (:func:`seerbench.analysis.run.summarize_run`, with
its paired differences and optimization-pressure section) and ``seerbench study stats --json``
(:func:`seerbench.study.study_stats`): the report computes none of its own. What it adds is read
from the results lines in one pass per cell: the rows of the transcript browser (compact, for the
page's JSON), the judges' calibration (:mod:`seerbench.complementarity._calibration`) and which
elicitation methods gave the verdicts.
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seerbench.analysis.run import summarize_run
from seerbench.complementarity import Calibration, add_judge_forecasts, calibration, judged_cases
from seerbench.errors import ConfigError
from seerbench.report._browser import Browser, CellRows, Rows
from seerbench.runs import CELL_AXES, Cell, RunFolder

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


class _LinesRead:
    """What the report reads from each line of a cell besides its statistics, in the same pass
    (:class:`seerbench.analysis.run.LinePass`, in a worker process for a large run): the transcript
    browser's rows, which elicitation methods gave the verdicts, and the judge's forecasts for its
    calibration, as (confidence, correct) doubles (10^5 questions x 6 cells are 1.2 million)."""

    def __init__(self, rows: Rows) -> None:
        self.rows = rows()
        self.methods: Counter[str] = Counter()
        self.conf, self.right = array("d"), array("d")

    def add(self, ln: dict[str, Any]) -> None:
        self.rows.add(ln)
        self.methods.update([str((a.get("case_probs") or {}).get("method")) for a in judged_cases(ln)])
        add_judge_forecasts(ln, self.conf, self.right)

    def result(self) -> tuple[CellRows, dict[str, int], array[float], array[float]]:
        return self.rows.result(), dict(self.methods), self.conf, self.right


@dataclass(frozen=True)
class _ReadLines:
    """Makes a cell's :class:`_LinesRead`, in the process that reads the cell."""

    rows: Rows

    def __call__(self) -> _LinesRead:
        return _LinesRead(self.rows)


def load_run(
    path: str | Path, browser: Browser, *, baseline: str | None = None, label: str | None = None
) -> RunData:
    """Read a run folder for the report: its statistics (:func:`summarize_run`, in worker processes
    for a large run) and, in the same pass over each cell's lines, its rows for the transcript
    browser (``browser``, shared by the runs of one report) and the calibration of its judge."""
    folder = RunFolder(path)
    base = pick_baseline(folder, baseline)
    label = label or folder.path.name
    cell_index: dict[str, int] = {}
    methods: dict[str, dict[str, int]] = {}
    forecasts: dict[str, tuple[array[float], array[float]]] = {}

    def done(cell: Cell, read: tuple[CellRows, dict[str, int], array[float], array[float]]) -> None:
        rows, methods[cell.key], conf, right = read  # cell by cell, in stats' order
        cell_index[cell.key] = browser.add_cell({"run": label, "cell": cell.key}, rows)
        forecasts[cell.key] = (conf, right)

    try:
        summary = summarize_run(
            folder.path,
            baseline=base,
            anytime=True,
            workers=None,
            per_line=_ReadLines(browser.rows),
            done=done,
        )
    except ConfigError as e:  # e.g. a --baseline this run has no folder of: say which run
        if str(folder.path) in str(e):
            raise
        raise ConfigError(f"{folder.path}: {e}") from None
    labels = cell_labels(summary["cells"])
    stats_by_cell = {s["cell"]: s for s in summary["cells"]}
    for key, i in cell_index.items():
        s = stats_by_cell[key]
        browser.cells[i].update(
            label=labels[key], protocol=s["protocol"], judge=str(s.get("judge")), agent=s.get("agent")
        )
    return RunData(
        label=label,
        path=folder.path,
        config=folder.config,
        meta=folder.meta,
        summary=summary,
        baseline=base,
        labels=labels,
        methods={s["cell"]: methods.get(s["cell"], {}) for s in summary["cells"]},
        calibrations=[
            calibration(*forecasts[s["cell"]], source=s["cell"], note=f"judge {s.get('judge')}")
            for s in summary["cells"]
            if str(s.get("judge")) != "trust"  # BlindTrust's "trust" is no judge
        ],
        usage=folder.usage(),
    )


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
