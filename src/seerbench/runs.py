"""Reading an experiment output folder: its metadata, its grid cells and their results files, and
the statistics over them (what ``seerbench stats``, ``export`` and ``show`` print).

A folder written by :class:`seerbench.experiment.Experiment` looks like::

    out/experiment.json                           config, per-cell fingerprints, prompt hashes
    out/<protocol config>/<agent-judge config>/results.jsonl
    out/<protocol config>/<agent-judge config>/cell.json
    out/<protocol config>/<agent-judge config>/stats.json

Readers here never change a file: a torn last line (what a crash leaves) or a corrupt line is
skipped and counted, never fatal.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from seerbench.errors import ConfigError, close_sibling, did_you_mean
from seerbench.metrics import SCORE_TYPES, FailurePolicy
from seerbench.results import CELL_AXES, CellStats, paired
from seerbench.schema import check_line
from seerbench.store import RecordReader, sibling_fingerprint


def check_eps(eps: float) -> float:
    if not (isinstance(eps, int | float) and 0.0 < eps < 0.5):
        raise ConfigError(
            "eps must lie strictly between 0 and 0.5 (log scores "
            f"clip probabilities to [eps, 1-eps]); got {eps}"
        )
    return float(eps)


def check_beta(beta: float) -> float:
    if math.isnan(beta) or beta < 0:
        raise ConfigError(f"beta must be >= 0 (0 = argmax, inf = uniform); got {beta}")
    return beta


def check_score(score: str) -> str:
    if score not in SCORE_TYPES:
        raise ConfigError(f"score must be one of {', '.join(SCORE_TYPES)}; got {score!r}")
    return score


def check_policy(policy: str) -> FailurePolicy:
    if policy not in ("exclude", "half"):
        raise ConfigError(f"parse failures must be 'exclude' or 'half'; got {policy!r}")
    return policy  # type: ignore[return-value]


class ResultsFile(RecordReader):
    """The usable lines of one results file, read one line at a time through the record store
    (:class:`seerbench.store.RecordReader`; a 10^5-line file is never held whole): iterate it for
    the lines as dicts. Afterwards ``skipped`` counts the lines left out as unusable (a torn last
    line left by a crash, or a line that does not fit the results schema, :mod:`seerbench.schema`),
    ``foreign`` the lines of another cell config (their ``fingerprint`` is not ``fingerprint``),
    ``duplicates`` a question's lines after its first; why each was is appended to ``reasons``
    (``FILE:LINE: reason``) when given. A file written by a newer schema version raises
    :class:`DataError` (upgrade)."""

    def __init__(
        self,
        path: Path,
        *,
        reasons: list[str] | None = None,
        fingerprint: str | None = None,
        upto: int | None = None,
    ) -> None:
        super().__init__(
            path,
            "question_id",
            fingerprint=fingerprint,
            check=check_line,
            reasons=reasons,
            warn=False,
            upto=upto,
        )


def read_results(path: Path, *, reasons: list[str] | None = None) -> tuple[list[dict[str, Any]], int]:
    """The usable lines of a results file and how many lines were skipped (see :class:`ResultsFile`,
    which reads them one at a time)."""
    f = ResultsFile(path, reasons=reasons)
    lines = list(f)
    return lines, f.skipped


def cell_fingerprint(results_path: Path) -> str | None:
    """The fingerprint in the ``cell.json`` beside a results file (None without one): a line
    carrying another is foreign."""
    return sibling_fingerprint(results_path, "cell.json")


@dataclass
class Cell:
    """One grid cell's folder."""

    folder: Path
    key: str  # "<protocol config>/<agent-judge config>"
    info: dict[str, Any] = field(default_factory=dict)  # cell.json, when present
    #: read the results file's first ``upto`` bytes only (:meth:`snapshot`); None: all of it
    upto: int | None = None

    @property
    def results_path(self) -> Path:
        return self.folder / "results.jsonl"

    @property
    def fingerprint(self) -> str | None:
        """The cell's fingerprint (``cell.json``): a line carrying another is foreign."""
        fp = self.info.get("fingerprint")
        return fp if isinstance(fp, str) else None

    def results(self, reasons: list[str] | None = None) -> ResultsFile:
        """The cell's results file, read against its fingerprint (up to ``upto`` bytes)."""
        return ResultsFile(self.results_path, reasons=reasons, fingerprint=self.fingerprint, upto=self.upto)

    def snapshot(self) -> Cell:
        """This cell, reading its results file as it is now: every reader of the snapshot sees the
        same lines, whatever a live run appends after (its size is taken once, here)."""
        try:
            size = self.results_path.stat().st_size
        except OSError:
            size = 0
        return replace(self, upto=size)

    def read(self, reasons: list[str] | None = None) -> tuple[list[dict[str, Any]], int]:
        f = self.results(reasons)
        lines = list(f)
        return lines, f.skipped


#: A sequential run's decisions in its folder (docs/budget.md).
DECISIONS = "sequential.json"


def stop_target(settings: dict[str, Any]) -> str:
    """A sequential run's target in words (its ``sequential.json`` settings)."""
    rule = settings.get("stop_when") or {}
    if rule.get("half_width") is not None:
        return f"half-width <= {rule['half_width']:g} ({rule.get('metric', 'accuracy')})"
    if rule.get("sign"):
        return f"sign vs {rule['baseline']} settled ({rule.get('metric', 'accuracy')})"
    return "none (budget only)"


def stop_reason(entry: dict[str, Any]) -> str:
    """Why a cell or comparison of a sequential run stopped, with the budget that was spent."""
    return str(entry.get("reason", "")) + (f" ({entry['budget']})" if entry.get("budget") else "")


#: How many run folders the error for a folder of runs names.
MAX_RUNS_NAMED = 4


def _run_folders_in(path: Path) -> list[str]:
    """The experiment output folders directly inside ``path`` (``runs/big``...), sorted."""
    try:
        subs = sorted(p for p in path.iterdir() if (p / "experiment.json").is_file())
    except OSError:
        return []
    return [str(p) for p in subs]


class RunFolder:
    """An experiment output folder. Raises :class:`ConfigError` naming the problem when ``path``
    is not one, or its ``experiment.json`` is unreadable."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        meta_path = self.path / "experiment.json"
        if not self.path.is_dir():
            raise ConfigError(
                f"{self.path} is not a folder{close_sibling(self.path, folders=True)}; give an "
                "experiment output folder (the `out` of a run)"
            )
        if not meta_path.is_file():
            runs = _run_folders_in(self.path)
            # a cell's folder, or its protocol's: the run is one or two folders up
            inside = next((p for p in self.path.parents[:2] if (p / "experiment.json").is_file()), None)
            raise ConfigError(
                f"{self.path} is not an experiment output folder (no experiment.json); "
                + (
                    f"it holds runs: {', '.join(runs[:MAX_RUNS_NAMED])}"
                    + (f" and {len(runs) - MAX_RUNS_NAMED} more" if len(runs) > MAX_RUNS_NAMED else "")
                    + "; give one of them"
                    if runs
                    else f"it is inside the run {inside}: give that folder"
                    if inside is not None
                    else "run `seerbench run` first"
                )
            )
        self.meta = read_experiment_json(meta_path)
        self.config: dict[str, Any] = self.meta.get("config") or {}

    def usage(self) -> dict[str, Any] | None:
        """The model usage every run into the folder added (``usage.json`` and the events of
        ``usage.jsonl`` past it, so the calls of a killed run count: runs, per model spec and in
        total calls, cache hits, retries, errors, tokens and cost, None where a price was
        missing); None for a folder written before seerbench recorded it."""
        from seerbench.models import read_usage

        return read_usage(self.path)

    def decisions(self) -> dict[str, Any] | None:
        """A sequential run's record (``sequential.json``, written by
        :mod:`seerbench.experiment._stopping`): per cell and comparison, running or stopped, why
        and at how many questions, with the anytime-valid interval then; None for a fixed run (or
        an unreadable record)."""
        try:
            rec = json.loads((self.path / DECISIONS).read_text())
        except (OSError, ValueError):
            return None
        return rec if isinstance(rec, dict) and isinstance(rec.get("cells"), dict) else None

    def cells(self) -> list[Cell]:
        """The folder's cells, in the order of the grid that made them (as ``seerbench run`` shows them)."""
        out = []
        for res in sorted(self.path.glob("*/*/results.jsonl")):
            folder = res.parent
            info: dict[str, Any] = {}
            cj = folder / "cell.json"
            if cj.is_file():
                try:
                    info = json.loads(cj.read_text())
                except (OSError, json.JSONDecodeError):
                    info = {}
            out.append(Cell(folder, f"{folder.parent.name}/{folder.name}", info))
        # in the grid's order (experiment.json lists the cells as the configs gave them), the rest by name
        order = {k: i for i, k in enumerate(self.meta.get("cells") or {})}
        out.sort(key=lambda c: (order.get(c.key, len(order)), c.key))
        return out

    def cell(self, key: str) -> Cell:
        cells = self.cells()
        exact = [c for c in cells if c.key == key.strip("/")]
        match = exact or [c for c in cells if c.key.startswith(key)]
        if len(match) == 1:
            return match[0]
        raise ConfigError(
            f"{'no' if not match else 'more than one'} cell {key!r} in "
            f"{self.path}; cells: {', '.join(c.key for c in self.cells()) or 'none'}"
        )


def read_experiment_json(path: Path) -> dict[str, Any]:
    try:
        meta = json.loads(path.read_text())
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"{path} is corrupt ({e.msg} at line {e.lineno}); the results files beside it are intact: "
            "restore it, or delete it and rerun the same config to rewrite it"
        ) from None
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
        raise ConfigError(f"{path} is not a seerbench experiment record (no 'config' mapping)")
    return meta


def cell_meta(lines: list[dict[str, Any]] | CellStats, cell: Cell) -> dict[str, Any]:
    """The grid coordinates of a cell, from its lines (or its folder names when it has none)."""
    first = (
        lines.axes
        if isinstance(lines, CellStats)
        else ({k: lines[0].get(k) for k in CELL_AXES} if lines else None)
    )
    if first is not None and not isinstance(lines, CellStats) and lines[0].get("adversary") is not None:
        first["adversary"] = lines[0]["adversary"]
    if first is not None:
        meta = first
    else:
        meta = {
            "protocol": cell.folder.parent.name,
            "agent": None,
            "judge": cell.folder.name,
            "tools": [],
            "best_of_n": 1,
        }
    return {"cell": cell.key, **meta}


UNFINISHED = (
    "unfinished: the run stopped before this cell ended (interrupted, killed, or its model failed), so n "
    "counts the questions it finished; run the config again to finish it"
)

#: A cell of a folder another live process is writing (it holds the folder's lock): not stopped, so
#: "run the config again" would be refused; ``{holder}`` names the process.
IN_PROGRESS = (
    "in progress: {holder} is writing this folder, so n counts the questions finished so far; run "
    "stats again when it ends"
)

#: ``run --dry-run`` on a folder another live process is writing: its plan is a snapshot.
PLAN_IN_PROGRESS = (
    "in progress: {holder} is writing this folder, so 'to run' counts what it has not finished yet "
    "and shrinks as it goes; `seerbench run` on this folder is refused until it ends"
)

#: ``stats --anytime`` where a cell's questions share passages (the confidence sequences assume
#: independent questions).
ANYTIME_SHARED = (
    "questions share passages in {cells}: the anytime-valid intervals treat them as independent, so "
    "their coverage (and that of the Δ rows of those cells) is not guaranteed (a passage's questions "
    "are correlated); the fixed-n intervals resample whole passages"
)


FAILED = (
    "{n} question(s) failed (their model calls failed after retries, see the run's output), so n leaves "
    "them out; run the config again to retry them"
)
#: A finished cell's questions whose lines are in its results file but damaged (not torn: a line in
#: the middle, or a whole last line), so n leaves them out.
UNREADABLE = (
    "{n} question(s) unreadable: {at} (a damaged line, not a stopped run), so n leaves them out; run "
    "the config again to redo them (first delete a damaged line that still names its question)"
)
#: A results file whose last line was cut off without its newline.
TORN = "a torn last line (what a crash leaves) in {cells} was skipped; rerunning the config repairs it"
LEFT_OUT = {
    "foreign": (
        "{n} line(s) were written by another config (their fingerprint is not this cell's) and are not "
        "counted; run this config again to redo those questions"
    ),
    "duplicate": "{n} duplicate line(s) of a question already read are not counted (the first line counts)",
}


def _stats_json(cell: Cell) -> dict[str, Any] | None:
    try:
        rec = json.loads((cell.folder / "stats.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return rec if isinstance(rec, dict) else None


def cell_counts(cell: Cell, f: ResultsFile, n_read: int) -> dict[str, Any]:
    """What a cell's numbers leave out, after ``f`` (its results, read to the end, ``n_read``
    usable lines): ``failed`` questions (of the last run to finish the cell), ``unreadable`` ones
    (the run's questions without a usable line or a failure, as many as there are unusable whole
    lines), ``damaged_lines_at`` (``FILE:LINE`` of the first few of those unusable whole lines),
    ``unstarted`` ones (the rest of
    those; None when the folder does not say how many the run had), ``torn_last_line`` (the file
    ends in a line cut off by a crash), ``skipped_lines`` (torn or unusable), ``foreign_lines``
    (another config's), ``duplicate_lines``, and ``unfinished``: true while the cell has no
    ``stats.json`` (the run stopped before it ended) or has failed or unstarted questions."""
    done = _stats_json(cell)
    failed = int((done or {}).get("n_errors") or 0)
    planned = (done or {}).get("n_planned", cell.info.get("n_planned"))
    missing = max(0, int(planned) - n_read - failed) if isinstance(planned, int) else None
    # a missing question whose line is there but damaged was not left undone by the run
    unreadable = min(missing, f.skipped - int(f.torn)) if missing is not None else 0
    return {
        "failed": failed,
        "unstarted": None if missing is None else missing - unreadable,
        "unreadable": unreadable,
        "damaged_lines_at": [f"{f.path}:{n}" for n in f.unusable_lines],
        "torn_last_line": f.torn,
        "skipped_lines": f.skipped,
        "foreign_lines": f.foreign,
        "duplicate_lines": f.duplicates,
        "unfinished": done is None or failed > 0 or bool(missing and missing > unreadable),
    }


def unreadable_note(s: dict[str, Any]) -> str | None:
    """The warning for a cell's questions whose results lines are damaged (:func:`cell_counts`'s
    ``unreadable``: missing questions that coincide with unreadable whole lines), or None."""
    n = s.get("unreadable") or 0
    if not n:
        return None
    at = list(s.get("damaged_lines_at") or [])[:n]
    more = n - len(at)
    return UNREADABLE.format(n=n, at=", ".join(at) + (f" and {more} more" if more > 0 else ""))


def _baseline_folder(metas: Sequence[dict[str, Any]], baseline: str) -> str:
    """The protocol folder ``baseline`` names (a folder, or a protocol with one folder in the run)."""
    folders = sorted({m["protocol"] for m in metas})
    if baseline in folders:
        return baseline
    named = [f for f in folders if f.split("_")[0] == baseline]
    if len(named) > 1:
        raise ConfigError(
            f"{baseline!r} names several protocol folders ({', '.join(named)}); give one of them"
        )
    if not named:
        protocols = sorted({f.split("_")[0] for f in folders})
        raise ConfigError(
            f"no protocol folder {baseline!r}{did_you_mean(baseline, [*protocols, *folders])}; "
            f"have: {', '.join(folders)} (a protocol's name names its one folder)"
        )
    return named[0]


def why_no_comparison(metas: Iterable[dict[str, Any]], baseline: str) -> str:
    """Why :func:`baseline_partners` pairs no cell with a ``baseline`` cell, in one line: every
    cell is a baseline cell (a run of that protocol alone, e.g. a tournament), or no other cell
    has a judge of the baseline's."""
    metas = list(metas)
    folder = _baseline_folder(metas, baseline)
    others = sorted({m["protocol"] for m in metas} - {folder})
    if not others:
        return (
            f"every cell of this run is a {folder} cell, so there is no other cell to compare with one "
            "(a cross-play tournament compares its debaters in the Elo table of seerbench stats); "
            "run other protocols beside it to compare protocols"
        )
    judges = sorted({str(m["judge"]) for m in metas if m["protocol"] == folder})
    return (
        f"no cell of {', '.join(others)} shares a judge with a {folder} cell (its judges: "
        f"{', '.join(judges)}): nothing to compare"
    )


def not_compared(metas: Iterable[dict[str, Any]], baseline: str, compared: Iterable[str]) -> list[str]:
    """The cells (keys) a comparison with ``baseline`` left out that a baseline cell with their
    judge would have taken (:func:`why_no_comparison` is why none was taken): not among
    ``compared`` (the cells paired, either side), not the baseline's own, and not a cell whose
    judge is its protocol's fixed one, no model (BlindTrust's ``trust``), which no baseline of
    model judges shares."""
    from seerbench.protocols import PROTOCOLS

    metas = list(metas)
    folder, done = _baseline_folder(metas, baseline), set(compared)

    def fixed(m: dict[str, Any]) -> bool:
        cls = PROTOCOLS.get(str(m.get("protocol")).split("_")[0])
        return cls is not None and cls.fixed_judge is not None and m.get("judge") == cls.fixed_judge

    return [
        str(m.get("cell"))
        for m in metas
        if m.get("cell") not in done and m.get("protocol") != folder and not fixed(m)
    ]


def baseline_partners(metas: Iterable[dict[str, Any]], baseline: str) -> list[tuple[int, int]]:
    """Which cell each cell is compared with: ``(i, j)`` for each cell ``metas[i]`` (its grid axes,
    ``protocol`` the folder) and the ``baseline`` protocol's cell ``metas[j]`` with the same judge.
    Where the baseline has several cells with that judge (other agents, tools or best-of-N), the
    one that also matches the cell on those axes, each axis in turn where one matches.
    ``baseline`` is a protocol folder (``NaiveJudge_swap``) or a protocol name (``NaiveJudge``)
    when exactly one folder of that protocol is in the run."""
    metas = list(metas)
    baseline = _baseline_folder(metas, baseline)
    base = [j for j, m in enumerate(metas) if m["protocol"] == baseline]
    out: list[tuple[int, int]] = []
    for i, s in enumerate(metas):
        if s["protocol"] == baseline:
            continue
        partners = [j for j in base if metas[j]["judge"] == s["judge"]]
        for axis in ("agent", "tools", "best_of_n"):
            same = [j for j in partners if metas[j].get(axis) == s.get(axis)]
            if same:
                partners = same
        out.extend((i, j) for j in partners)
    return out


def paired_comparisons(
    cells: Iterable[tuple[list[dict[str, Any]] | CellStats, dict[str, Any]]],
    baseline: str,
    score: str,
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Each cell minus the ``baseline`` protocol's cell with the same judge
    (:func:`baseline_partners`), on shared questions, with the run's ``n_boot`` and ``seed`` (as
    the cells' own intervals)."""
    cells = list(cells)
    out = []
    for i, j in baseline_partners([s for _, s in cells], baseline):
        (lines, s), (blines, bs) = cells[i], cells[j]
        out.append(
            {
                **{k: s.get(k) for k in ("cell", *CELL_AXES)},
                "baseline": bs["protocol"],
                "baseline_cell": bs.get("cell"),
                "asd_diff": paired(lines, blines, "asd", score, n_boot=n_boot, seed=seed),
                "accuracy_diff": paired(lines, blines, "judge_accuracy", n_boot=n_boot, seed=seed),
            }
        )
    return out


def json_safe(obj: Any) -> Any:
    """``obj`` with every non-finite float replaced by None, so ``json.dumps`` gives valid JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj


__all__ = [
    "CELL_AXES",
    "DECISIONS",
    "FAILED",
    "LEFT_OUT",
    "TORN",
    "UNREADABLE",
    "Cell",
    "ResultsFile",
    "RunFolder",
    "baseline_partners",
    "cell_counts",
    "cell_fingerprint",
    "check_beta",
    "check_eps",
    "check_policy",
    "check_score",
    "json_safe",
    "not_compared",
    "paired_comparisons",
    "read_experiment_json",
    "read_results",
    "stop_reason",
    "stop_target",
    "unreadable_note",
    "why_no_comparison",
]
