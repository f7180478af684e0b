"""The export format of a study's judgments: its columns, the columns every task shares, and the
reader of an export file (CSV or JSONL). Below the store and the task-specific results, which
both write exports."""

from __future__ import annotations

import csv
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from seerbench.errors import ConfigError, DataError
from seerbench.store import RecordReader
from seerbench.study._schema import Assignment

__all__ = ["EXPORT_FIELDS", "rater_columns", "read_export"]


#: Columns of an export, in order. Times are ISO 8601 UTC; ``seconds`` runs from the timer start
#: (or from when the task was first shown, for untimed tasks) to the submission.
EXPORT_FIELDS: tuple[str, ...] = (
    "judgment_id",
    "study",
    "task",
    "item",
    "question_id",
    "answer_case",
    "condition",
    "is_catch",
    "catch_kind",
    "rater_id",
    "rater_external_id",
    "rater_source",
    "prolific_study_id",
    "prolific_session_id",
    "seq",
    "options",
    "true_answer",
    "expert_option",
    "assigned_at",
    "started_at",
    "timer_started_at",
    "submitted_at",
    "seconds",
    "timed_out",
    "auto_submitted",
    "answer",
    "probability",
    "confidence",
    "helpfulness",
    "rating",
    "correct",
    "ai_correct",
    "comment",
)


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, tz=UTC).isoformat(timespec="milliseconds")


def rater_columns(a: Assignment, r: dict[str, Any]) -> dict[str, Any]:
    """Who judged and when: the export columns every task type shares."""
    return {
        "rater_id": a.rater_id,
        "rater_external_id": r["external_id"],
        "rater_source": r["source"],
        "prolific_study_id": r["study_param"],
        "prolific_session_id": r["session_param"],
        "seq": a.seq,
        "assigned_at": _iso(a.assigned_at),
        "started_at": _iso(a.shown_at),
        "submitted_at": _iso(a.submitted_at),
        "seconds": None if a.seconds is None else round(a.seconds, 3),
    }


#: A cell starting with one of these is read as a formula by spreadsheets (CSV injection); such
#: cells, and cells starting with the escape itself, get a leading apostrophe, which
#: :func:`read_export` removes again.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")


def _csv_cell(v: Any) -> Any:
    if isinstance(v, list):
        v = "|".join(str(x) for x in v)
    if v is None:
        return ""
    if isinstance(v, str) and v.startswith(_FORMULA_START):
        return "'" + v
    return v


def _csv_unescape(v: str) -> str:
    return v[1:] if v.startswith("'") and v[1:].startswith(_FORMULA_START) else v


_BOOL = {"true": True, "false": False, "1": True, "0": False}


_BOOL_FIELDS = (
    "is_catch",
    "timed_out",
    "auto_submitted",
    "ai_correct",
    "answer_correct",
    "has_intended_flaw",
    "assist",
    "used",
    "edited",
    "novel",
)


# valid / covers_intended are shares of validators in a merged critique export, 0/1 in a validation export
_FLOAT_FIELDS = ("probability", "correct", "seconds", "valid", "covers_intended")


_INT_FIELDS = ("confidence", "helpfulness", "seq", "likert", "model_critiques", "n_critiques", "critique_n")


def read_export(path: str | Path) -> list[dict[str, Any]]:
    """Read an export back (CSV or JSONL) with the types :func:`export_rows` produced."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"export file {p} does not exist")
    if p.suffix == ".jsonl":
        return list(RecordReader(p, None, strict=True))  # a torn last line: skipped with a warning
    if p.suffix != ".csv":
        raise ConfigError(f"export file {p} must end in .csv or .jsonl")
    out = []
    with p.open(encoding="utf-8", newline="") as f:
        for n, raw in enumerate(csv.DictReader(f), 2):
            row: dict[str, Any] = {k: (_csv_unescape(v) if v != "" else None) for k, v in raw.items()}
            try:
                if "options" in row:
                    row["options"] = (row.get("options") or "").split("|")
                for k in _BOOL_FIELDS:
                    if row.get(k) is not None:
                        row[k] = _BOOL[str(row[k]).lower()]
                for k in _FLOAT_FIELDS:
                    if row.get(k) is not None:
                        row[k] = float(row[k])
                for k in _INT_FIELDS:
                    if row.get(k) is not None:
                        row[k] = int(row[k])
            except (KeyError, ValueError) as e:
                raise DataError(f"{p}:{n}: unreadable value ({e})") from None
            out.append(row)
    return out
