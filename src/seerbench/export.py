"""A flat table of an experiment's per-question results, for pandas and spreadsheets.

One row per question per grid cell, with the same numbers ``seerbench stats`` averages: the
lines are rescored with the run's own ``eps`` and parse-failure policy. Columns (:data:`COLUMNS`,
in this order, stable across versions; new columns are only ever appended):

- the cell: ``cell``, ``protocol``, ``agent``, ``judge``, ``tools`` (joined by ``+``),
  ``best_of_n``;
- the question: ``question_id``, ``true_option`` (its letter), ``true_answer`` (its text),
  ``chosen_case`` (the case a protocol ran alone: OpenConsultancy, RandomConsultancy);
- per answer case, ``t_`` for the case where the agent argued the true option and ``f_`` for the
  false one: ``p_true`` (the judge's probability of the true option), ``choice`` (the option the
  judge rated highest; empty on a tie, as the accuracy score counts ties, or a failed verdict), ``judge_log/brier/accuracy`` (judge
  score JS), ``agent_log/brier/accuracy`` (agent score AS), ``method`` (how the probabilities were
  elicited), ``parse_status``; empty when that case was not run or could not be scored;
- the question's metrics: ``asd_log/logodds/brier/accuracy``, ``jse_b0/b1/binf_log``,
  ``ase_b0/b1/binf_log``, ``judge_accuracy``, ``excluded``, ``parse_failures``, ``eps``,
  ``parse_failure_policy``.

A missing value is None (an empty CSV field, a parquet null).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from seerbench.errors import ConfigError
from seerbench.metrics import DEFAULT_EPS, TIE_TOL
from seerbench.results import rescore
from seerbench.runs import RunFolder, check_eps, check_policy

Format = Literal["csv", "parquet"]
FORMATS: tuple[Format, ...] = ("csv", "parquet")

_CASE_FIELDS: tuple[tuple[str, str], ...] = (
    ("p_true", "float"),
    ("choice", "str"),
    ("judge_log", "float"),
    ("judge_brier", "float"),
    ("judge_accuracy", "float"),
    ("agent_log", "float"),
    ("agent_brier", "float"),
    ("agent_accuracy", "float"),
    ("method", "str"),
    ("parse_status", "str"),
)

#: (column, type) of every exported column, in order; type is one of str, int, float, bool.
SCHEMA: tuple[tuple[str, str], ...] = (
    ("cell", "str"),
    ("protocol", "str"),
    ("agent", "str"),
    ("judge", "str"),
    ("tools", "str"),
    ("best_of_n", "int"),
    ("question_id", "str"),
    ("true_option", "str"),
    ("true_answer", "str"),
    ("chosen_case", "str"),
    *((f"{role}_{name}", kind) for role in ("t", "f") for name, kind in _CASE_FIELDS),
    ("asd_log", "float"),
    ("asd_logodds", "float"),
    ("asd_brier", "float"),
    ("asd_accuracy", "float"),
    ("jse_b0_log", "float"),
    ("jse_b1_log", "float"),
    ("jse_binf_log", "float"),
    ("ase_b0_log", "float"),
    ("ase_b1_log", "float"),
    ("ase_binf_log", "float"),
    ("judge_accuracy", "float"),
    ("excluded", "bool"),
    ("parse_failures", "int"),
    ("eps", "float"),
    ("parse_failure_policy", "str"),
)
COLUMNS: tuple[str, ...] = tuple(c for c, _ in SCHEMA)

PARQUET_HINT = "pip install 'seerbench[parquet]'"


@dataclass
class Export:
    """The rows of a run folder and what was left out on the way."""

    run_dir: Path
    rows: list[dict[str, Any]] = field(default_factory=list)
    n_cells: int = 0
    skipped_lines: dict[str, int] = field(default_factory=dict)  # cell key -> lines skipped (torn or corrupt)

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped_lines.values())


def export_rows(run_dir: str | Path, *, eps: float | None = None, parse_failures: str | None = None) -> Export:
    """Every results line of every cell of ``run_dir`` as a flat row (see the module docstring),
    rescored with ``eps`` and ``parse_failures`` (default: the run's own). A torn or corrupt line
    is skipped and counted in :attr:`Export.skipped_lines`; the folder is not changed."""
    folder = RunFolder(run_dir)
    cfg = folder.config
    eps_v = check_eps(cfg.get("eps", DEFAULT_EPS) if eps is None else eps)
    policy = check_policy(parse_failures or cfg.get("parse_failures", "exclude"))
    out = Export(folder.path)
    for cell in folder.cells():
        lines, skipped = cell.read()
        out.n_cells += 1
        if skipped:
            out.skipped_lines[cell.key] = skipped
        for line in lines:
            out.rows.append(flat_row(rescore(line, eps=eps_v, policy=policy), cell.key))
    return out


def flat_row(line: dict[str, Any], cell: str) -> dict[str, Any]:
    """One scored results line as a row of :data:`COLUMNS`."""
    q_cases = line["question"]["answer_cases"]
    true = next((c for c in q_cases if c["value"] > 0.5), None)
    true_short = true["short"] if true else None
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    tools = line.get("tools") or []
    row.update(
        cell=cell,
        protocol=line.get("protocol"),
        agent=line.get("agent"),
        judge=line.get("judge"),
        tools="+".join(str(t) for t in tools) if isinstance(tools, list) else str(tools),
        best_of_n=line.get("best_of_n"),
        question_id=line["question_id"],
        true_option=true_short,
        true_answer=true["long"] if true else None,
        chosen_case=line.get("chosen_case"),
    )
    by_role: dict[str, dict[str, Any]] = {}
    for c in line["answer_cases"]:
        role = "t" if c["short"] == true_short else "f"
        by_role.setdefault(role, c)  # with more than two options, f_ is the first false case
    for role, c in by_role.items():
        row.update({f"{role}_{k}": v for k, v in _case_fields(c, true_short).items()})
    for st in ("log", "logodds", "brier", "accuracy"):
        row[f"asd_{st}"] = _get(line.get("asd"), st)
    for kind in ("jse", "ase"):
        for b in ("b0", "b1", "binf"):
            row[f"{kind}_{b}_log"] = _get(line.get(f"{kind}_{b}"), "log")
    row.update(
        judge_accuracy=line.get("judge_accuracy"),
        excluded=bool(line.get("excluded")),
        parse_failures=line.get("parse_failures"),
        eps=line.get("eps"),
        parse_failure_policy=line.get("parse_failure_policy"),
    )
    return row


def _case_fields(case: dict[str, Any], true_short: str | None) -> dict[str, Any]:
    cp = case["case_probs"]
    probs = cp.get("probabilities") if cp.get("parse_status") != "failed" else None
    js, ag = cp.get("judge_score"), case.get("agent_score")
    return {
        "p_true": float(probs[true_short]) if probs and true_short in probs else None,
        "choice": _choice(probs) if probs else None,
        "judge_log": _get(js, "log"),
        "judge_brier": _get(js, "brier"),
        "judge_accuracy": _get(js, "accuracy"),
        "agent_log": _get(ag, "log"),
        "agent_brier": _get(ag, "brier"),
        "agent_accuracy": _get(ag, "accuracy"),
        "method": cp.get("method"),
        "parse_status": cp.get("parse_status"),
    }


def _choice(probs: dict[str, float]) -> str | None:
    """The option rated highest; None on a tie (within TIE_TOL, as the accuracy score counts ties)."""
    top = max(probs.values())
    best = [o for o, p in probs.items() if p >= top - TIE_TOL]
    return best[0] if len(best) == 1 else None


def _get(d: Any, key: str) -> float | None:
    if not isinstance(d, dict):
        return None
    v = d.get(key)
    # + 0.0 turns -0.0 (a perfect Brier score) into 0.0
    return float(v) + 0.0 if isinstance(v, int | float) and math.isfinite(v) else None


# ---- writers ------------------------------------------------------------------------------------


def _csv_value(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def write_csv(rows: list[dict[str, Any]], f: IO[str]) -> None:
    """Rows as CSV (header first; empty field = missing; booleans as true/false; floats in full
    precision) to an open text file."""
    w = csv.writer(f, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow([_csv_value(r.get(c)) for c in COLUMNS])


def to_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    write_csv(rows, buf)
    return buf.getvalue()


def parquet_available() -> bool:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def write_parquet(rows: list[dict[str, Any]], path: str | Path) -> None:
    """Rows as a parquet file with a fixed schema (strings, int64, float64, bool; nulls where
    missing). Needs pyarrow (``pip install 'seerbench[parquet]'``)."""
    if not parquet_available():
        raise ConfigError(f"parquet export needs pyarrow, which is not installed: {PARQUET_HINT} (or use --format csv)")
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    schema = pa.schema([(c, types[k]) for c, k in SCHEMA])
    table = pa.Table.from_pylist([{c: r.get(c) for c in COLUMNS} for r in rows], schema=schema)
    pq.write_table(table, str(path))


__all__ = [
    "COLUMNS",
    "FORMATS",
    "PARQUET_HINT",
    "SCHEMA",
    "Export",
    "export_rows",
    "flat_row",
    "parquet_available",
    "to_csv",
    "write_csv",
    "write_parquet",
]
