"""The report's sections for the analyses that live outside a run folder: seed 000's
complementarity (the JSON of ``seerbench complementarity --json``) and seed 002's critiques (a
``seerbench critique`` folder). Numbers are shown as those outputs hold them (exact values in
``data-v``), never recomputed here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from seerbench._format import num as fmt
from seerbench.errors import ConfigError
from seerbench.report import _figures as F
from seerbench.report._blocks import esc, fig, num, section, table

HOW_HYBRID = (
    "Seed 000: the AI rater's rating where its confidence is above T, the humans' (in this condition and "
    "aggregate) at or below it. The band is the hybrid's 95% CI (cluster bootstrap over items and raters); "
    "dashed lines are AI alone and humans alone; dotted, the share of items routed to humans. The table "
    "also gives T chosen on held-out folds (cross-validated), which is the honest headline."
)
HOW_RELIANCE = (
    "Seed 000 (2.4.3): over-reliance is an assisted condition's error rate on the items the AI got wrong "
    "(raters following its mistakes), under-reliance its error rate on those the AI got right (raters "
    "ignoring a correct assistant; near 0 is good); beside them the accuracy changes against the unassisted "
    "condition on each slice, with 95% CIs."
)
HOW_CRITIQUE = (
    "Seed 002: over misleading answers, the share where a critique covers the planted flaw (any, and the "
    "most helpful one); over refined answers, how often the rewrite given the top critique wins, and the "
    "accuracy of the rewrites. Intervals are clustered by question."
)


def load_complementarity(path: str | Path) -> dict[str, Any]:
    """The JSON ``seerbench complementarity --json`` printed, checked against its model."""
    from seerbench.complementarity import ComplementarityReport

    p = Path(path)
    try:
        return ComplementarityReport.model_validate_json(p.read_bytes()).model_dump(mode="json")
    except FileNotFoundError:
        raise ConfigError(
            f"{p} does not exist; write it with `seerbench complementarity ... --json > {p.name}`"
        ) from None
    except (ValidationError, ValueError, OSError) as e:
        first = str(e).splitlines()[0]
        raise ConfigError(f"{p} is not the output of `seerbench complementarity --json` ({first})") from None


def load_critique(path: str | Path) -> dict[str, Any]:
    """A ``seerbench critique`` folder's ``summary.json``, with the folder's name."""
    p = Path(path)
    if not (p / "critique.json").is_file():
        raise ConfigError(f"{p} is not a `seerbench critique` folder (no critique.json)")
    try:
        summary = json.loads((p / "summary.json").read_text())
    except (OSError, json.JSONDecodeError):
        raise ConfigError(
            f"{p} has no readable summary.json; run `seerbench critique` on its config again"
        ) from None
    return {"label": p.name, "path": str(p), "summary": summary}


def _estimate_row(label: str, e: dict[str, Any] | None, attrs: str, n: Any = None) -> str:
    e = e or {}
    return (
        f"<tr {attrs}><td>{esc(label)}</td>"
        + num(n, "n")
        + num(e.get("estimate"), "estimate")
        + num(e.get("ci_low"), "ci_low")
        + num(e.get("ci_high"), "ci_high")
        + "</tr>"
    )


_HEAD = ("", "n", "estimate", "95% CI low", "95% CI high")


def complementarity_sections(reports: list[tuple[str, dict[str, Any]]]) -> str:
    hybrid, rel = [], []
    for r, (label, rep) in enumerate(reports):
        for k, sw in enumerate(rep["hybrid"]):
            key = f"{sw['condition']}/{sw['aggregate']}"
            rows = [
                _estimate_row("AI alone", sw["ai_alone"], f'data-sweep="{esc(key)}" data-row="ai_alone"'),
                _estimate_row(
                    "humans alone", sw["humans_alone"], f'data-sweep="{esc(key)}" data-row="humans_alone"'
                ),
            ]
            rows += [
                _estimate_row(
                    f"hybrid, T = {t['threshold']:g} ({t['routed_to_humans']:.0%} to humans)",
                    t["hybrid"],
                    f'data-sweep="{esc(key)}" data-row="T{t["threshold"]!r}"',
                    t["routed_items"],
                )
                for t in sw["rows"]
            ]
            cv = sw["cross_validated"]
            rows.append(
                _estimate_row(
                    f"hybrid, T chosen on held-out folds ({cv['folds']} folds x {cv['repeats']})",
                    {"estimate": cv["estimate"]},
                    f'data-sweep="{esc(key)}" data-row="cross_validated"',
                )
            )
            hybrid.append(
                f"<h3>{esc(label)}: {esc(key)}</h3>"
                + fig(F.hybrid_plot(sw, name=f"hybrid-{r}-{k}"), "hybrid")
                + table(_HEAD, rows, cls="analysis-hybrid")
                + f'<p class="note">in-sample best T {esc(sw["best_threshold"])} (accuracy '
                f"{esc(sw['best_accuracy'])}); tie rule: {esc(sw['tie_rule'])}</p>"
            )
        if rep.get("reliance"):
            rows = []
            for c in rep["reliance"]["conditions"]:
                for key in (
                    "over_reliance",
                    "under_reliance",
                    "accuracy_change_ai_wrong",
                    "accuracy_change_ai_right",
                ):
                    if c.get(key) is not None:
                        rows.append(
                            _estimate_row(
                                f"{c['condition']}: {key.replace('_', '-')}",
                                c[key],
                                f'data-condition="{esc(c["condition"])}" data-row="{key}"',
                            )
                        )
            rel.append(
                f"<h3>{esc(label)} (unassisted: {esc(rep['reliance']['unassisted'])})</h3>"
                + table(_HEAD, rows, cls="analysis-reliance")
            )
        rel.extend(f'<p class="note">{esc(n)}</p>' for n in rep.get("notes") or [])
    out = section("hybrid", "Hybridization (complementarity)", HOW_HYBRID, "".join(hybrid))
    if rel:
        out += section("reliance", "Reliance on the assistant", HOW_RELIANCE, "".join(rel))
    return out


_CRITIQUE_ROWS = (
    ("intended_flaw_found", "a critique covers the planted flaw"),
    ("intended_flaw_found_top1", "the most helpful critique covers it"),
    ("refinement_win_rate", "refinement win rate"),
    ("refined_conditional_accuracy", "accuracy of the rewrite given the top critique"),
    ("refined_direct_accuracy", "accuracy of the direct rewrite"),
)


def critique_sections(runs: list[dict[str, Any]]) -> str:
    parts = []
    for r, run in enumerate(runs):
        s = run["summary"]
        rows = [
            _estimate_row(
                label,
                s.get(key),
                f'data-critique="{esc(run["label"])}" data-row="{key}"',
                (s.get(key) or {}).get("n"),
            )
            for key, label in _CRITIQUE_ROWS
        ]
        data = [
            (
                label,
                None
                if not (s.get(key) or {}).get("n")
                else {"mean": s[key]["estimate"], "ci_low": s[key]["ci_low"], "ci_high": s[key]["ci_high"]},
            )
            for key, label in _CRITIQUE_ROWS
        ]
        kinds = ", ".join(
            f"{k}: {v['answers']} answers, {fmt(v['critiques_per_answer'], 2)} critiques each"
            for k, v in (s.get("kinds") or {}).items()
        )
        parts.append(
            f'<h3>{esc(run["label"])}</h3><p class="note">{esc(run["path"])}; {esc(kinds)}</p>'
            + fig(
                F.interval_plot(
                    data,
                    title="seed 002 measures",
                    xlabel="rate",
                    name=f"critique-{r}",
                    ref=None,
                    xlim=(0, 1),
                ),
                "critique",
            )
            + table(_HEAD, rows, cls="analysis-critique")
        )
    return section("critique", "Critiques", HOW_CRITIQUE, "".join(parts))
