"""The report as one self-contained HTML file: inline style, inline script, inline SVG figures and
the transcript browser's data as JSON in a ``<script type="application/json">`` element. A
Content-Security-Policy forbids every fetch, so the page opens with no network and asks for none.

Numbers in tables carry their exact value in ``data-v`` (what ``stats --json`` prints) and show
three decimals."""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seerbench._version import __version__
from seerbench.errors import ConfigError
from seerbench.provenance import environment_lines
from seerbench.report import _figures as F
from seerbench.report._analyses import (
    complementarity_sections,
    critique_sections,
    load_complementarity,
    load_critique,
)
from seerbench.report._assets import CSS, JS
from seerbench.report._blocks import esc, fig, num, section, table
from seerbench.report._browser import CHUNK_DIR, ONE_FILE_LIMIT, Browser, remove_chunks
from seerbench.report._data import RunData, StudyData, load_run, load_study
from seerbench.runs import stop_reason, stop_target, why_no_comparison
from seerbench.store import atomic_write_text

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
#: The folder layout's index may also run scripts of its own folder (its transcript files).
SPLIT_SCRIPTS = "script-src 'unsafe-inline' 'self' file:"
SCORE = "log"  # the score type of `stats --json`'s default, which the report shows


def summary_row(label: str, s: dict[str, Any] | None, *, attrs: str = "", prefix: str = "") -> str:
    s = s or {}
    return (
        f"<tr {attrs}><td>{esc(label)}</td>"
        + num(s.get("n"), prefix + "n")
        + num(s.get("mean"), prefix + "mean")
        + num(s.get("ci_low"), prefix + "ci_low")
        + num(s.get("ci_high"), prefix + "ci_high")
        + "</tr>"
    )


SUMMARY_HEAD = ("cell", "n", "mean", "95% CI low", "95% CI high")


def runs_side_by_side(runs: Sequence[RunData], part: Any) -> str:
    return (
        '<div class="runs">'
        + "".join(
            f'<div class="run" data-run="{esc(r.label)}"><h3>{esc(r.label)}</h3>{part(r, i)}</div>'
            for i, r in enumerate(runs)
        )
        + "</div>"
    )


# ---- run sections -------------------------------------------------------------------------------


def _cells(r: RunData) -> list[dict[str, Any]]:
    return list(r.summary["cells"])


def _metric(s: dict[str, Any], key: str) -> dict[str, Any] | None:
    m = (s.get("metrics") or {}).get(key)
    if m is None:
        return None
    return m if key == "judge_accuracy" else m.get(SCORE)


#: What a cell's numbers leave out (:func:`seerbench.runs.cell_counts`), as the overview names it.
_NOT_COUNTED = {
    "failed": "failed",
    "unstarted": "unstarted",
    "skipped_lines": "unreadable lines",
    "foreign_lines": "foreign lines",
    "duplicate_lines": "duplicate lines",
}


def part_overview(r: RunData, i: int) -> str:
    cfg = r.config
    ds = cfg.get("dataset")
    methods: dict[str, int] = {}
    for counts in r.methods.values():
        for k, v in counts.items():
            methods[k] = methods.get(k, 0) + v
    rows = []
    for s in _cells(r):
        counts = r.methods.get(s["cell"], {})
        rows.append(
            f'<tr data-cell="{esc(s["cell"])}"><td>{esc(s["cell"])}</td>'
            + num(s.get("n_questions"), "n_questions")
            + num(s.get("n_scored"), "n_scored")
            + num(s.get("parse_failures"), "parse_failures")
            + num(s.get("n_excluded"), "n_excluded")
            + "".join(num(s.get(k), k) for k in _NOT_COUNTED)
            + f"<td>{esc(', '.join(f'{k} {v}' for k, v in sorted(counts.items())))}</td></tr>"
        )
    skipped = r.summary.get("skipped_lines") or 0
    return (
        "<table><tbody>"
        f"<tr><th>folder</th><td>{esc(r.path)}</td></tr>"
        f"<tr><th>name</th><td>{esc(cfg.get('name'))}</td></tr>"
        f"<tr><th>seerbench</th><td>{esc(r.meta.get('seerbench_version'))}</td></tr>"
        + "".join(
            f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>"
            for k, _, v in (ln.partition(" ") for ln in environment_lines(r.meta.get("environment")))
        )
        + f"<tr><th>cache scope</th><td>{esc(cfg.get('cache_scope') or 'default')}</td></tr>"
        f"<tr><th>dataset</th><td>{esc(json.dumps(ds))}</td></tr>"
        f"<tr><th>judge models</th><td>{esc(', '.join(map(str, cfg.get('judge_models') or [])))}</td></tr>"
        f"<tr><th>agent models</th><td>{esc(', '.join(map(str, cfg.get('agent_models') or [])))}</td></tr>"
        f"<tr><th>elicitation (configured)</th><td>{esc(json.dumps(cfg.get('elicitation')))}</td></tr>"
        "<tr><th>elicitation (used, verdicts)</th><td>"
        f"{esc(', '.join(f'{k} {v}' for k, v in sorted(methods.items())))}</td></tr>"
        f"<tr><th>parse failures</th><td>{sum(int(s.get('parse_failures') or 0) for s in _cells(r))} "
        f"(policy: {esc(cfg.get('parse_failures', 'exclude'))})</td></tr>"
        f"<tr><th>unreadable lines skipped</th><td>{skipped}</td></tr>"
        + _usage_row(r.usage)
        + "</tbody></table>"
        + table(
            (
                "cell",
                "questions",
                "scored",
                "parse failures",
                "excluded",
                *_NOT_COUNTED.values(),
                "verdicts by method",
            ),
            rows,
            cls="cells",
        )
        + f"<details><summary>config</summary><pre>{esc(json.dumps(cfg, indent=2))}</pre></details>"
    )


def _usage_row(usage: dict[str, Any] | None) -> str:
    """The overview's usage row: per model, what every run into the folder spent (usage.json)."""
    if not usage:
        return (
            '<tr><th>usage and cost</th><td class="note">not recorded: the folder was written before '
            "seerbench kept usage.json (`seerbench run --dry-run` estimates calls and tokens)</td></tr>"
        )
    head = (
        "model",
        "calls",
        "cache hits",
        "retries",
        "errors",
        "prompt tokens",
        "completion tokens",
        "cost ($)",
    )
    keys = ("calls", "cache_hits", "retries", "errors", "prompt_tokens", "completion_tokens")

    def row(name: str, m: dict[str, Any], attr: str) -> str:
        cost = m.get("cost")
        cost_cell = "<td>unknown (no price)</td>" if cost is None else num(float(cost), "cost")
        return (
            f'<tr data-usage="{esc(attr)}"><td>{esc(name)}</td>'
            + "".join(num(m.get(k), k) for k in keys)
            + cost_cell
            + "</tr>"
        )

    rows = [row(spec, m, spec) for spec, m in sorted((usage.get("models") or {}).items())]
    rows.append(row("all models", usage.get("total") or {}, "total"))
    return (
        f"<tr><th>usage and cost</th><td>{int(usage.get('runs') or 0)} run(s) into this folder"
        + table(head, rows, cls="usage")
        + "</td></tr>"
    )


def part_metric(
    key: str, title: str, xlabel: str, *, ref: float | None = 0.0, xlim: tuple[float, float] | None = None
) -> Any:
    def part(r: RunData, i: int) -> str:
        cells = _cells(r)
        data = [(r.labels[s["cell"]], _metric(s, key)) for s in cells]
        svg = F.interval_plot(data, title=title, xlabel=xlabel, name=f"{key}-{i}", ref=ref, xlim=xlim)
        rows = [
            summary_row(r.labels[s["cell"]], _metric(s, key), attrs=f'data-cell="{esc(s["cell"])}"')
            for s in cells
        ]
        return fig(svg, key) + table(SUMMARY_HEAD, rows, cls=f"stats-{key}")

    return part


def part_judge_agent(r: RunData, i: int) -> str:
    cells = [s for s in _cells(r) if s.get("agent")]
    judges = sorted({str(s["judge"]) for s in cells})
    agents = sorted({str(s["agent"]) for s in cells})
    if len(judges) < 2 and len(agents) < 2:
        return (
            '<p class="note">one judge and one agent model in this '
            "run: ASD by protocol above is the whole table.</p>"
        )
    out = []
    for k, prot in enumerate(sorted({str(s["protocol"]) for s in cells})):
        by = {(str(s["judge"]), str(s["agent"])): _metric(s, "asd") for s in cells if s["protocol"] == prot}
        matrix = [[by.get((j, a)) for a in agents] for j in judges]
        svg = F.heatmap(
            matrix,
            [f"judge {j}" for j in judges],
            [f"agent {a}" for a in agents],
            title=f"ASD({SCORE}) {prot}",
            name=f"asd-judge-agent-{i}-{k}",
        )
        out.append(fig(svg, "asd-judge-agent"))
    return "".join(out)


def part_betas(r: RunData, i: int) -> str:
    cells = [s for s in _cells(r) if _metric(s, "jse_b1") is not None or _metric(s, "ase_b1") is not None]
    if not cells:
        return '<p class="note">no cell with two scored answer cases: JSE and ASE are undefined here.</p>'
    drawn = [
        s for s in cells if s.get("judge") != "trust"
    ] or cells  # BlindTrust's log(eps) would flatten the axis
    jse = [{b: _metric(s, f"jse_{b}") for b, _ in F.BETAS} for s in drawn]
    ase = [{b: _metric(s, f"ase_{b}") for b, _ in F.BETAS} for s in drawn]
    svg = F.beta_plot([r.labels[s["cell"]] for s in drawn], jse, ase, score=SCORE, name=f"betas-{i}")
    rows = []
    for s in cells:
        for what in ("jse", "ase"):
            for b, text in F.BETAS:
                rows.append(
                    summary_row(
                        f"{r.labels[s['cell']]} {what.upper()} {text}",
                        _metric(s, f"{what}_{b}"),
                        attrs=f'data-cell="{esc(s["cell"])}" data-metric="{what}_{b}"',
                    )
                )
    return fig(svg, "betas") + table(SUMMARY_HEAD, rows, cls="stats-betas")


def part_calibration(r: RunData, i: int) -> str:
    cals = [(r.labels.get(c.source, c.source), c) for c in r.calibrations if c.n]
    if not cals:
        return '<p class="note">no model judge verdicts to calibrate.</p>'
    svg = F.reliability(cals, name=f"calibration-{i}")
    rows = [
        f'<tr data-cell="{esc(c.source)}"><td>{esc(label)}</td>'
        + num(c.n, "n")
        + num(c.ece, "ece")
        + num(c.brier, "brier")
        + "</tr>"
        for label, c in cals
    ]
    return fig(svg, "calibration") + table(
        ("cell", "verdicts", "ECE", "Brier"), rows, cls="stats-calibration"
    )


def part_paired(r: RunData, i: int) -> str:
    if r.baseline is None:
        return (
            '<p class="note">no baseline: the run has no single NaiveJudge folder; give one with '
            "<code>seerbench report RUN --baseline PROTOCOL_FOLDER</code>.</p>"
        )
    pairs = r.summary.get("paired") or []
    if not pairs:
        return f'<p class="note">{esc(why_no_comparison(r.summary.get("cells") or [], r.baseline))}.</p>'
    label = {p["cell"]: r.labels.get(p["cell"], p["cell"]) for p in pairs}
    asd = F.interval_plot(
        [(label[p["cell"]], p["asd_diff"]) for p in pairs],
        title=f"ΔASD({SCORE}) vs {r.baseline}",
        xlabel="difference (cell − baseline), same questions",
        name=f"paired-asd-{i}",
    )
    acc = F.interval_plot(
        [(label[p["cell"]], p["accuracy_diff"]) for p in pairs],
        title=f"Δ judge accuracy vs {r.baseline}",
        xlabel="difference (cell − baseline), same questions",
        name=f"paired-acc-{i}",
    )
    rows = [
        summary_row(
            label[p["cell"]] + " ΔASD",
            p["asd_diff"],
            attrs=f'data-cell="{esc(p["cell"])}" data-metric="asd_diff"',
        )
        + summary_row(
            label[p["cell"]] + " Δaccuracy",
            p["accuracy_diff"],
            attrs=f'data-cell="{esc(p["cell"])}" data-metric="accuracy_diff"',
        )
        for p in pairs
    ]
    return (
        f"<p>baseline: <code>{esc(r.baseline)}</code></p>"
        + fig(asd, "paired-asd")
        + fig(acc, "paired-accuracy")
        + table(SUMMARY_HEAD, rows, cls="stats-paired")
    )


ANYTIME_HEAD = ("cell", "n", "mean", "fixed-n low", "fixed-n high", "anytime low", "anytime high")


def anytime_row(label: str, fixed: dict[str, Any] | None, seq: dict[str, Any] | None, *, attrs: str) -> str:
    f, a = fixed or {}, seq or {}
    return (
        f"<tr {attrs}><td>{esc(label)}</td>"
        + num(f.get("n"), "n")
        + num(f.get("mean"), "mean")
        + num(f.get("ci_low"), "ci_low")
        + num(f.get("ci_high"), "ci_high")
        + num(a.get("ci_low"), "anytime_low")
        + num(a.get("ci_high"), "anytime_high")
        + "</tr>"
    )


def _diff_label(r: RunData, p: dict[str, Any]) -> str:
    a, b = p["cell"], p["baseline_cell"]
    return f"Δ {r.labels.get(a, a)} − {r.labels.get(b, b)}"


def part_anytime(r: RunData, i: int) -> str:
    """Judge accuracy's fixed-n interval beside its anytime-valid one (the confidence sequence over
    the questions in file order), per cell and per paired comparison; a sequential run's decisions."""
    rows = [
        anytime_row(
            r.labels[s["cell"]],
            _metric(s, "judge_accuracy"),
            (s.get("anytime") or {}).get("judge_accuracy"),
            attrs=f'data-cell="{esc(s["cell"])}"',
        )
        for s in _cells(r)
    ]
    rows += [
        anytime_row(
            _diff_label(r, p),
            p.get("accuracy_diff"),
            p.get("accuracy_diff_anytime"),
            attrs=f'data-cell="{esc(p["cell"])}" data-metric="accuracy_diff"',
        )
        for p in r.summary.get("paired") or []
    ]
    out = table(ANYTIME_HEAD, rows, cls="stats-anytime") + "".join(
        f'<p class="note">warning: {esc(str(w))}</p>' for w in r.summary.get("anytime_warnings") or []
    )
    rec = r.summary.get("sequential")
    if rec:
        seq = rec.get("settings") or {}
        target = stop_target(seq)
        spent = rec.get("spent") or {}
        dollars = spent.get("dollars")
        head = ("cell", "status", "reason", "questions", "anytime low", "anytime high")
        drows = []
        items = [(r.labels.get(k, k), k, c) for k, c in (rec.get("cells") or {}).items()]
        items += [
            (
                _diff_label(r, c),
                c["cell"],
                c,
            )
            for c in rec.get("comparisons") or []
        ]
        for label, key, c in items:
            iv = c.get("interval") or {}
            why = stop_reason(c)
            drows.append(
                f'<tr data-cell="{esc(key)}" data-status="{esc(str(c.get("status")))}"><td>{esc(label)}</td>'
                f"<td>{esc(str(c.get('status')))}</td><td>{esc(why)}</td>"
                + num(c.get("n"), "n")
                + num(iv.get("ci_low"), "anytime_low")
                + num(iv.get("ci_high"), "anytime_high")
                + "</tr>"
            )
        out += (
            f"<p>sequential run: batches of {esc(str(seq.get('batch')))} questions in the order of seed "
            f"{esc(str(seq.get('seed')))}, target {esc(target)}; {esc(str(rec.get('added')))} of "
            f"{esc(str(rec.get('questions')))} questions run (the most any cell ran); "
            f"spent {esc(str(spent.get('calls')))} calls, "
            f"{esc(str(spent.get('tokens')))} tokens, "
            + ("unknown dollars" if dollars is None else f"${dollars:.4f}")
            + ".</p>"
            + "".join(f'<p class="note">warning: {esc(str(w))}</p>' for w in rec.get("warnings") or [])
            + table(head, drows, cls="stats-sequential")
        )
    return out


def part_pressure(r: RunData, i: int) -> str:
    p = r.summary.get("pressure")
    if not p:
        return '<p class="note">no cells that differ only in best-of-N in this run.</p>'
    beta = p.get("beta")
    bkey = "∞" if beta is None or (isinstance(beta, float) and math.isinf(beta)) else f"{beta:g}"
    out = []
    for k, g in enumerate(p["groups"]):
        svg = F.pressure_plot(g, score=p["score"], beta=f"β={bkey}", name=f"pressure-{i}-{k}")
        rows = []
        for pt in g["points"]:
            for m in ("asd", "ase", "accuracy"):
                rows.append(
                    summary_row(
                        f"N={pt['best_of_n']} {m}",
                        pt[m],
                        attrs=f'data-n="{pt["best_of_n"]}" data-metric="{m}"',
                    )
                )
        sl = g.get("slope") or {}
        rows.append(
            "<tr><td>slope dASD/dASE</td>"
            + num(None, "n")
            + num(sl.get("estimate"), "mean")
            + num(sl.get("ci_low"), "ci_low")
            + num(sl.get("ci_high"), "ci_high")
            + "</tr>"
        )
        notes = "".join(f'<p class="note">{esc(n)}</p>' for n in g.get("notes") or [])
        out.append(
            fig(svg, "pressure")
            + table(("", "n", "mean", "95% CI low", "95% CI high"), rows, cls="stats-pressure")
            + notes
        )
    return "".join(out)


def part_elo(r: RunData, i: int) -> str:
    e = r.summary.get("elo")
    if not e:
        return (
            '<p class="note">no cross-play cells (a debate entry with <code>debaters</code>) in this run.</p>'
        )
    out = []
    for n_t, t in enumerate(e["tournaments"]):
        svg = F.elo_plot(t, name=f"elo-{i}-{n_t}")
        rows = []
        for d in sorted(t["ratings"], key=lambda d: -d["aggregate"]["estimate"]):
            cells = "".join(
                num(d[k][part], f"{k}_{part}")
                for k in ("aggregate", "correct", "incorrect", "difference")
                for part in ("estimate", "ci_low", "ci_high")
            )
            rows.append(
                f'<tr data-debater="{esc(d["debater"])}"><td>{esc(d["debater"])}</td>'
                + cells
                + num(d.get("asd"), "asd")
                + num(d.get("ase"), "ase")
                + "</tr>"
            )
        head = ["debater"]
        for k in ("aggregate", "correct", "incorrect", "correct - incorrect"):
            head += [k, "low", "high"]
        tr = t.get("trend") or {}
        slope = (
            "<tr><td>slope of correct - incorrect on aggregate</td>"
            + num(tr.get("estimate"), "trend")
            + num(tr.get("ci_low"), "trend_low")
            + num(tr.get("ci_high"), "trend_high")
            + "</tr>"
        )
        wr = [
            f"<tr><td>{esc(a)}</td>"
            + "".join(num(v, f"win_{esc(b)}") for b, v in zip(t["debaters"], row, strict=True))
            + "</tr>"
            for a, row in zip(t["debaters"], t["win_rate"], strict=True)
        ]
        out.append(
            f"<h3>{esc(t['protocol'])}, judge {esc(t['judge'])}: {t['n_questions']} questions, "
            f"{t['n_matches']} debates</h3>"
            + fig(svg, "elo")
            + table([*head, f"ASD({t.get('score', 'log')})", "ASE"], rows, cls="stats-elo")
            + table(("", "estimate", "low", "high"), [slope], cls="stats-elo-trend")
            + table(("win rate (row vs column)", *t["debaters"]), wr, cls="stats-elo-wins")
        )
    return "".join(out)


HOW = {
    "asd": "Agent score difference: the score of the agent arguing for the truth minus that of the agent "
    "arguing against it (log score; seed 003). Above 0 the protocol favours the truth; a CI that excludes 0 "
    "says so with 95% confidence. Points are means, bars 95% bootstrap CIs over questions (over passages "
    "where questions share one; docs/statistics.md).",
    "judge": "ASD for each judge (rows) and agent (columns) model, per protocol: where oversight holds up "
    "as the agent gets stronger or the judge weaker.",
    "accuracy": "Share of verdicts that put the most probability on the true answer (ties count 1/k). 0.5 "
    "is chance on two options. Bars: Wilson 95% intervals "
    "(at the effective n where questions share a passage).",
    "anytime": "Judge accuracy's fixed-n 95% interval beside its anytime-valid 95% confidence sequence "
    "(betting; docs/budget.md), per cell and per paired difference against the baseline: the anytime one "
    "stays valid however often the run was looked at and whenever it stopped, so it is the one to quote "
    "for a run that was watched or stopped early (a sequential run). ASD is unbounded and not covered. "
    "For a sequential run, each cell's decision: why it stopped and at how many questions.",
    "betas": "JSE: the judge's expected score (BlindTrust, whose judge adopts the argued answer, is in the "
    "table, not the figure); ASE: the expected score of an agent that picks its side with softmax "
    "temperature β over its own probabilities (β=0 always argues its best guess, β=∞ picks at "
    "random).",
    "calibration": "For each model judge: verdicts bucketed by the judge's largest probability; a point's "
    "height is how often that answer was right. On the diagonal the judge is calibrated; ECE is the average "
    "distance from it, weighted by bucket size (marker area). BlindTrust has no judge and is left out.",
    "paired": "Each cell minus the baseline protocol's cell with the same judge, question by question "
    "(paired): a CI that excludes 0 is a difference the questions support.",
    "pressure": "Optimization pressure (seed 003): cells that differ only in best-of-N. Each point is one N "
    "(ASE on the x axis, ASD on the y axis, both with CIs); the line's slope says how the truth's advantage "
    "moves as the agents grow more persuasive (negative: it shrinks).",
    "browser": "Every question of every cell, a page at a time. Marks: right/wrong/tie is the verdict's "
    "most probable answer against the truth; quotes are shown verified (found verbatim in the passage), "
    "unverified or unchecked (no passage). 'wrong verdicts' keeps rows with a wrong or tied verdict; 'parse "
    "failures' rows whose verdict did not parse.",
    "elo": "Persuasion tournament (seed 003; Khan et al. 2024): Elo ratings of the debaters of "
    "cross-play cells, when arguing for the correct and for the incorrect answer and their "
    "difference, and the aggregate rating (a separate fit with one rating per debater over both "
    "sides, as Khan et al.'s), with 95% bootstrap intervals over questions; beside them each "
    "debater's ASD and ASE as the agent. The slope of correct - incorrect on aggregate is the "
    "literature's measure of whether stronger debaters gain more from the truth; win rates are the "
    "judge's mean probability of the row debater's side. The figure puts the two measures on one "
    "strength axis, the debater's aggregate Elo: on the left correct - incorrect Elo with the fitted "
    "line (Khan et al.'s figure), on the right the debater's ASD and ASE as the cells' agent, means "
    "over its cells (their intervals per cell are in the stats table).",
}


def run_sections(runs: Sequence[RunData]) -> str:
    parts = [
        section(
            "overview",
            "Runs",
            "Configuration, dataset, models, the elicitation methods that gave the verdicts, and "
            "parse failures, per run.",
            runs_side_by_side(runs, part_overview),
        ),
        section(
            "asd",
            "ASD by protocol",
            HOW["asd"],
            runs_side_by_side(runs, part_metric("asd", f"ASD({SCORE}) by cell", "ASD")),
        ),
        section(
            "asd-judge-agent", "ASD by judge × agent", HOW["judge"], runs_side_by_side(runs, part_judge_agent)
        ),
        section(
            "accuracy",
            "Judge accuracy by protocol",
            HOW["accuracy"],
            runs_side_by_side(
                runs,
                part_metric("judge_accuracy", "judge accuracy by cell", "accuracy", ref=0.5, xlim=(0, 1)),
            ),
        ),
        section(
            "anytime",
            "Anytime-valid intervals",
            HOW["anytime"],
            runs_side_by_side(runs, part_anytime),
        ),
        section("betas", "JSE and ASE at β = 0, 1, ∞", HOW["betas"], runs_side_by_side(runs, part_betas)),
        section(
            "calibration",
            "Calibration of the judges",
            HOW["calibration"],
            runs_side_by_side(runs, part_calibration),
        ),
        section(
            "paired",
            "Paired differences against a baseline",
            HOW["paired"],
            runs_side_by_side(runs, part_paired),
        ),
    ]
    if any(r.summary.get("pressure") for r in runs):
        parts.append(
            section(
                "pressure",
                "ASD against ASE across best-of-N",
                HOW["pressure"],
                runs_side_by_side(runs, part_pressure),
            )
        )
    if any(r.summary.get("elo") for r in runs):
        parts.append(
            section("elo", "Elo of the debaters (cross-play)", HOW["elo"], runs_side_by_side(runs, part_elo))
        )
    return "".join(parts)


BROWSER = """
<section id="browser"><h2>Transcripts</h2><p class="how">{how}</p>
<div id="tb-controls">
<label>run <select id="tb-run"><option value="">all</option></select></label>
<label>protocol <select id="tb-protocol"><option value="">all</option></select></label>
<label>judge <select id="tb-judge"><option value="">all</option></select></label>
<label><input type="checkbox" id="tb-wrong"> wrong verdicts</label>
<label><input type="checkbox" id="tb-failures"> parse failures</label>
<label>search <input type="search" id="tb-search" placeholder="text in questions and transcripts"></label>
<button id="tb-prev" type="button">previous</button><button id="tb-next" type="button">next</button>
<span id="tb-status"></span></div>
<div id="tb-rows"></div>
<script type="application/json" id="browser-data">{data}</script>
</section>
"""


def page(title: str, body: str, *, script: bool, split: bool = False) -> str:
    """The page around ``body``; ``split``: the folder layout's index, whose script may load the
    transcript files beside it (``<script src>``, from its own folder only)."""
    csp = (
        CSP.replace("script-src 'unsafe-inline'", "script-src 'unsafe-inline' 'self' file:") if split else CSP
    )
    what = f"index of a report folder: open it from beside its {CHUNK_DIR} folder" if split else "one file"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f'<h1>{esc(title)}</h1><p class="note">seerbench '
        f"{esc(__version__)} report; {what}, no network needed.</p>"
        + body
        + (f"<script>{JS}</script>" if script else "")
        + "</body></html>\n"
    )


def render_runs(runs: Sequence[RunData], data: str, extra: str = "", *, split: bool = False) -> str:
    """The run report's page; ``data`` is the transcript browser's JSON (:class:`Browser`)."""
    title = "seerbench report: " + ", ".join(r.label for r in runs)
    body = run_sections(runs) + extra + BROWSER.format(how=HOW["browser"], data=data)
    return page(title, body, script=True, split=split)


def output_file(out: str | Path, name: str) -> Path:
    """The file to write for ``--out``: ``out`` itself, or ``name`` inside it when ``out`` is a
    folder that exists or is written with a trailing slash (``--out reports/``, made if its parent
    exists; else the write names the missing folder)."""
    folder = Path(out)
    if folder.is_dir():
        return folder / name
    if str(out).endswith(("/", os.sep)):
        with contextlib.suppress(FileNotFoundError):
            folder.mkdir()
        return folder / name
    return folder


def report_folder(path: Path) -> Path:
    """Where the folder layout goes for a report asked for at ``path``: ``report.html`` ->
    ``report/``, a path without an ``.html`` suffix as it is."""
    return path.with_suffix("") if path.suffix.lower() in (".html", ".htm") else path


def build_report(
    run_dirs: Sequence[str | Path],
    out: str | Path | None = None,
    *,
    baseline: str | None = None,
    complementarity: Sequence[str | Path] = (),
    critique: Sequence[str | Path] = (),
    one_file_limit: int = ONE_FILE_LIMIT,
) -> Path:
    """Write the report of one or more run folders (side by side), with the complementarity
    analyses (``seerbench complementarity --json`` files) and ``seerbench critique`` folders given,
    to ``out`` (default ``report.html`` in the first run or critique folder, or beside the first
    complementarity file) and return its path.

    When the transcript browser's data is over ``one_file_limit`` bytes the report is a folder
    instead (:func:`report_folder` of ``out``: ``report.html`` -> ``report/``) holding
    ``index.html``, whose path is returned, and the transcript files it loads on demand
    (:mod:`seerbench.report._browser`)."""
    F.require_matplotlib()

    if not (run_dirs or complementarity or critique):
        raise ConfigError("give run folders, --complementarity FILE or --critique DIR")
    comp = [(Path(p).name, load_complementarity(p)) for p in complementarity]
    crit = [load_critique(d) for d in critique]
    extra = (complementarity_sections(comp) if comp else "") + (critique_sections(crit) if crit else "")
    if out is not None:
        path = output_file(out, "report.html")
    elif run_dirs or crit:
        path = Path(run_dirs[0] if run_dirs else crit[0]["path"]) / "report.html"
    else:
        path = Path(complementarity[0]).with_suffix(".html")
    if not run_dirs:
        names = ", ".join([label for label, _ in comp] + [c["label"] for c in crit])
        atomic_write_text(path, page(f"seerbench report: {names}", extra, script=False))
        return path
    runs: list[RunData] = []
    labels = _unique_labels([Path(d) for d in run_dirs])
    with Browser() as browser:
        for d, label in zip(run_dirs, labels, strict=True):
            runs.append(load_run(d, browser, baseline=baseline, label=label))
        multi = len(runs) > 1
        folder = report_folder(path)
        if browser.size <= one_file_limit:
            atomic_write_text(path, _drawn(runs, browser.inline_json(multi), extra))
            _drop_folder_layout(folder)
            return path
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"{folder} is a file: the report is a folder past {one_file_limit / 1e6:g} MB")
        data = browser.write_chunks(folder, multi)
        index = folder / "index.html"
        atomic_write_text(index, _drawn(runs, data, extra, split=True))
        if path != folder and path.is_file():  # an earlier one-file report here: point it at the folder
            atomic_write_text(path, _moved_page(index.relative_to(path.parent), one_file_limit))
        return index


def _drawn(runs: list[RunData], data: str, extra: str, *, split: bool = False) -> str:
    """:func:`render_runs`, its figures drawn together at the end, in worker processes where the
    machine has more than one core (:func:`seerbench.report._figures.drawn_later`)."""
    with F.drawn_later() as later:
        html = render_runs(runs, data, extra, split=split)
    return later.fill(html)


#: What an earlier one-file report's path holds once the report has become a folder.
MOVED = (
    '<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0; url={href}">'
    "<title>seerbench report: moved</title>"
    '<p>This report is now a folder (its transcripts passed {limit:g} MB): <a href="{href}">{href}</a>.</p>'
)


def _moved_page(index: Path, limit: int) -> str:
    return MOVED.format(href=esc(index.as_posix()), limit=limit / 1e6)


def _drop_folder_layout(folder: Path) -> None:
    """Remove an earlier folder-layout report at ``folder`` (its ``index.html`` and transcript
    files, and the folder if that empties it), so that it cannot be opened in place of the new
    one-file report. Anything else in the folder is left alone."""
    index, chunks = folder / "index.html", folder / CHUNK_DIR
    if not (folder.is_dir() and index.is_file() and chunks.is_dir()):
        return
    index.unlink()
    remove_chunks(folder)
    for d in (chunks, folder):
        try:
            d.rmdir()
        except OSError:  # something else is in it: not ours to remove
            return


def _unique_labels(paths: Sequence[Path]) -> list[str]:
    names = [p.resolve().name for p in paths]
    if len(set(names)) == len(names):
        return names
    return [str(p) for p in paths]


# ---- study ------------------------------------------------------------------------------------


def render_study(st: StudyData) -> str:
    conds = list(st.stats["conditions"])
    cs = [st.stats["conditions"][c] for c in conds]
    acc = F.grouped_intervals(
        conds,
        [("", [c["accuracy"] for c in cs])],
        title="accuracy by condition",
        ylabel="accuracy",
        name="study-accuracy",
    )
    rows = [
        summary_row(c, s["accuracy"], attrs=f'data-condition="{esc(c)}"')
        for c, s in zip(conds, cs, strict=True)
    ]
    body = section(
        "study-accuracy",
        "Accuracy by condition",
        "Share of judgments that chose the true answer (catch trials left out; a timed-out judgment counts "
        f"as {esc(st.stats['timeout_policy'])}). Bars: 95% CIs from a bootstrap over items and raters.",
        fig(acc, "study-accuracy")
        + table(("condition", "n", "mean", "95% CI low", "95% CI high"), rows, cls="stats-study-accuracy"),
    )
    rel_conds = [c for c, s in zip(conds, cs, strict=True) if s.get("reliance")]
    if rel_conds:
        rel = [st.stats["conditions"][c]["reliance"] for c in rel_conds]
        svg = F.grouped_intervals(
            rel_conds,
            [("AI right", [r["ai_right"] for r in rel]), ("AI wrong", [r["ai_wrong"] for r in rel])],
            title="reliance: accuracy when the AI was right / wrong",
            ylabel="accuracy",
            name="study-reliance",
        )
        rrows = [
            summary_row(
                f"{c} AI {k.split('_')[1]}", r[k], attrs=f'data-condition="{esc(c)}" data-metric="{k}"'
            )
            for c, r in zip(rel_conds, rel, strict=True)
            for k in ("ai_right", "ai_wrong")
        ]
        body += section(
            "study-reliance",
            "Reliance",
            "Accuracy split by whether the AI's answer was right: a large gap means "
            "the raters followed the AI rather than checked it (seed 000).",
            fig(svg, "study-reliance")
            + table(("", "n", "mean", "95% CI low", "95% CI high"), rrows, cls="stats-study-reliance"),
        )
    else:
        body += section(
            "study-reliance",
            "Reliance",
            "Accuracy split by whether the AI's answer was right.",
            '<p class="note">no item in this study records whether the AI was right.</p>',
        )
    catch = st.stats.get("catch") or {}
    if catch.get("judgments"):
        svg = F.grouped_intervals(
            ["catch trials"],
            [("", [catch["accuracy"]])],
            title="catch-trial accuracy",
            ylabel="accuracy",
            name="study-catch",
        )
        body += section(
            "study-catch",
            "Catch trials",
            "Accuracy on questions with an obvious answer: raters below it were not paying attention.",
            fig(svg, "study-catch")
            + table(
                ("", "n", "mean", "95% CI low", "95% CI high"),
                [summary_row("catch", catch["accuracy"])],
                cls="stats-study-catch",
            ),
        )
    else:
        body += section(
            "study-catch",
            "Catch trials",
            "Accuracy on questions with an obvious answer.",
            '<p class="note">no catch trials were judged.</p>',
        )
    tconds = [c for c in conds if st.seconds.get(c)]
    if tconds:
        svg = F.box_plot(
            tconds,
            [st.seconds[c] for c in tconds],
            title="time per task",
            ylabel="seconds",
            name="study-time",
        )
        trows = [
            f'<tr data-condition="{esc(c)}"><td>{esc(c)}</td>'
            + num(st.stats["conditions"][c]["judgments"], "judgments")
            + num(st.stats["conditions"][c]["median_seconds"], "median_seconds")
            + num(st.stats["conditions"][c]["timed_out"], "timed_out")
            + "</tr>"
            for c in tconds
        ]
        body += section(
            "study-time",
            "Time per task",
            "Seconds from the timer's start to submission, per condition (box: quartiles; line: median).",
            fig(svg, "study-time")
            + table(("condition", "judgments", "median seconds", "timed out"), trows, cls="stats-study-time"),
        )
    body += (
        f'<section id="study-manifest"><h2>Study</h2><details><summary>manifest</summary><pre>'
        f"{esc(json.dumps(st.manifest, indent=2))}</pre></details></section>"
    )
    return page(f"seerbench study report: {st.label}", body, script=False)


def build_study_report(db: str | Path, out: str | Path | None = None) -> Path:
    """Write the report of a study database to ``out`` (default: beside a SQLite file, its name with
    ``.report.html`` in place of its suffix: ``study.sqlite`` -> ``study.report.html``)."""
    if out is None and "://" in str(db):
        raise ConfigError(f"--study {db} is a database URL: give the file to write with --out")
    F.require_matplotlib()
    st = load_study(db)
    beside = Path(db).with_suffix(".report.html")
    if out is None:
        path = beside
    else:
        path = output_file(out, "study.report.html" if "://" in str(db) else beside.name)
    atomic_write_text(path, render_study(st))
    return path
