"""The optimization-pressure section of `seerbench stats` (and `run`): one short table per group
of cells that differ only in best-of-N, fitting 80 columns."""

from __future__ import annotations

import math
from typing import Any

from rich.markup import escape
from rich.table import Table

from seerbench._format import MISSING, ci, num
from seerbench.cli._common import console
from seerbench.metrics import beta_key


def _est(s: dict[str, Any] | None) -> str:
    return escape(ci(s, 2, bare=False))  # [n/a, n/a] is not markup


def _bound(x: Any, unbounded: str) -> str:
    # json_safe turns an unbounded end into None
    if isinstance(x, float) and math.isnan(x):
        return MISSING
    return unbounded if x is None or (isinstance(x, float) and math.isinf(x)) else num(x, 2)


def pressure_tables(pressure: dict[str, Any]) -> list[Table]:
    """One table per group of a ``pressure`` record (:meth:`PressureResult.to_dict`)."""
    score, b = (
        pressure["score"],
        beta_key(float(pressure["beta"]) if pressure["beta"] is not None else math.inf),
    )
    out = []
    for g in pressure["groups"]:
        who = ", ".join(f"{k} {g[k]}" for k in ("agent", "judge") if g.get(k))
        tools = "+".join(g.get("tools") or [])
        t = Table(
            title=f"optimization pressure: {escape(str(g['protocol']))}\n[dim]{escape(who)}"
            + (f", tools {escape(tools)}" if tools else "")
            + f"; {g['n_questions']} questions in every N, {g['n_clusters']} clusters[/]"
        )
        for col in ("N", f"ASD({score})", f"ASE_{b}({score})", "accuracy"):
            t.add_column(col, overflow="fold")
        for p in g["points"]:
            t.add_row(str(p["best_of_n"]), _est(p["asd"]), _est(p["ase"]), _est(p["accuracy"]))
        for s in g["steps"]:
            t.add_row(f"{s['to_n']}-{s['from_n']}", _est(s["asd"]), _est(s["ase"]), _est(s["accuracy"]))
        sl = g.get("slope")
        slope = (
            f"slope {MISSING}"
            if sl is None or sl.get("estimate") is None
            else (
                f"slope dASD/dASE {num(sl['estimate'], 2)} "
                f"[{_bound(sl['ci_low'], '-inf')}, {_bound(sl['ci_high'], 'inf')}]"
            )
        )
        t.caption = f"rows N-M: paired differences; {escape(slope)}" + "".join(
            f"\n{escape(n)}" for n in g.get("notes", [])
        )
        out.append(t)
    return out


def print_pressure(pressure: dict[str, Any]) -> None:
    for t in pressure_tables(pressure):
        console.print(t)
