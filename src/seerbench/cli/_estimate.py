"""``seerbench estimate``, ``plan`` and ``partition``: partitioned-supervision accuracy estimation
(seed 001)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from seerbench._format import bounds, num
from seerbench.cli._app import app, one_of
from seerbench.cli._common import console, print_json
from seerbench.datasets import read_questions_jsonl
from seerbench.errors import ConfigError, DataError
from seerbench.estimators import (
    INTERVALS,
    IntervalKind,
    cluster_design_effect,
    estimate_all,
    partition_questions,
    plan_labels,
    read_labels_csv,
    read_predictions_csv,
    write_labels_csv,
)
from seerbench.metrics import SCORE_TYPES


def _check_unit(name: str, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ConfigError(f"{name} must lie strictly between 0 and 1, got {value}")


@app.command()
def estimate(
    labels: Path = typer.Argument(
        ..., help="labels.csv: prediction, ordinary_label, complementary_label[, k]."
    ),
    k: int | None = typer.Option(
        None, "--k", help="Number of options K for the whole file (else the k column)."
    ),
    delta: float = typer.Option(0.05, help="Failure probability of the deviation bounds."),
    weight: float = typer.Option(0.5, help="Fixed weight on the ordinary estimate for 'IVW w=...'."),
    alpha: float = typer.Option(0.05, help="1 - confidence level of the intervals (0.05 gives 95%)."),
    interval: str = typer.Option(
        "score", metavar=one_of(INTERVALS), help="Confidence interval: score (Wilson-type) or wald."
    ),
    cluster: str | None = typer.Option(
        None, help="Column naming each label's cluster (rater, item): widen intervals by its design effect."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
) -> None:
    """Estimate a system's accuracy from ordinary and complementary labels.

    Prints Ord, Comp (Eq. 2), IVW (Eq. 7), the mixture at a fixed weight, and ML (Eq. 9), each with
    its standard error, normal confidence interval, and the finite-sample bound that covers it at
    --delta; then every bound with whether it holds for a weight estimated from the data.
    """
    _check_unit("--delta", delta)
    _check_unit("--alpha", alpha)
    if not 0.0 <= weight <= 1.0:
        raise ConfigError(f"--weight must lie in [0, 1], got {weight}")
    if interval not in INTERVALS:
        raise ConfigError(f"--interval must be one of {', '.join(INTERVALS)}, got {interval!r}")
    label_set = read_labels_csv(labels, k=k)
    counts = label_set.counts()
    deffs: dict[str, float] = {}
    if cluster is not None:
        deffs = {
            n: cluster_design_effect(label_set, cluster, n, weight=weight)
            for n in ("ord", "comp", "ivw", "mix", "ml")
        }
    kind: IntervalKind = "wald" if interval == "wald" else "score"
    report = estimate_all(
        counts, weight=weight, delta=delta, alpha=alpha, interval=kind, design_effects=deffs
    )
    if as_json:
        print_json({"file": str(labels), **report.to_dict()})
        return
    conf = f"{100 * (1 - alpha):g}% CI ({interval})"
    c = counts
    title = f"{labels}: K={c.k}, n_o={c.n_o} (correct {c.s_o}), n_c={c.n_c} (avoided {c.s_c})"
    if c.n_converted:
        title += f"; {c.n_converted} K=2 complementary labels counted as ordinary"
    table = Table(title=title)
    for col in ("estimator", "estimate", "SE", conf, "w (ord)", f"bound (delta={delta:g})", "bound used"):
        table.add_column(col, justify="left" if col in ("estimator", "bound used") else "right")
    for row in report.rows:
        e, b = row.estimate, row.bound
        if e is None:
            table.add_row(row.label, "-", "-", "-", "-", "-", f"unavailable: {row.unavailable}")
            continue
        bound_txt = f"± {b.half_width:.4f}" if b is not None else "-"
        used = b.method if b is not None else "none in the paper"
        est_txt = num(e.estimate, 4) + (" (clipped)" if e.clipped else "")
        table.add_row(
            row.label,
            est_txt,
            num(e.se, 4),
            "empty: no accuracy in [0, 1] fits (impossible under Eq. 1)"
            if math.isnan(e.ci_low)
            else bounds(e, 4),
            num(e.weight, 3),
            bound_txt,
            used,
        )
    console.print(table)
    bt = Table(title=f"Deviation bounds at delta={delta:g}")
    for col in ("bound", "w (ord)", "± half-width", "interval", "data-dependent w ok", "guarantee"):
        bt.add_column(col)
    for b in report.bounds:
        bt.add_row(
            b.method,
            num(b.weight, 3),
            f"{b.half_width:.4f}",
            bounds({"ci_low": b.lower, "ci_high": b.upper}, 4),
            "yes" if b.holds_for_data_dependent_weight else "no (fixed w)",
            "rigorous" if b.rigorous else "approximate",
        )
    console.print(bt)
    for why in report.bound_errors:
        console.print(f"[dim]bound unavailable: {why}[/dim]")


@app.command()
def plan(
    run_dir: Path | None = typer.Argument(
        None,
        help="A pilot run's output folder: plan questions from its per-question values and usage "
        "(then --baseline/--effect or --half-width; without it, the label plan of --k/--accuracy).",
    ),
    k: int | None = typer.Option(None, "--k", help="Number of options K (label plan)."),
    accuracy: float | None = typer.Option(
        None, help="Planning accuracy A in (0, 1], e.g. a pilot A_ord (label plan)."
    ),
    n_ordinary: int | None = typer.Option(None, help="Number of ordinary labels n_o (label plan)."),
    half_width: float | None = typer.Option(
        None, help="Target CI half-width: also report the n that reaches it (with RUN_DIR: per cell)."
    ),
    alpha: float = typer.Option(0.05, help="1 - confidence level of the intervals (and the test's level)."),
    baseline: str | None = typer.Option(
        None, help="With RUN_DIR: the protocol folder each cell is compared with (as in stats --baseline)."
    ),
    effect: float | None = typer.Option(
        None, help="With RUN_DIR: the smallest paired difference (cell - baseline) worth detecting."
    ),
    power: float = typer.Option(0.8, help="With RUN_DIR and --effect: the power to detect it."),
    score: str = typer.Option("log", metavar=one_of(SCORE_TYPES), help="With RUN_DIR: the score of ASD."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Plan sample sizes. With RUN_DIR (a pilot run): the questions each comparison with --baseline
    needs to detect --effect with --power, or each cell needs for --half-width, with the expected
    model calls, tokens and cost (docs/budget.md). Without: complementary labels matching n_o
    ordinary ones (Eq. 5), the variance ratio (Eq. 4), interval half-widths, and the labels a target
    half-width needs."""
    if run_dir is not None:
        given = [
            f
            for f, v in (("--k", k), ("--accuracy", accuracy), ("--n-ordinary", n_ordinary))
            if v is not None
        ]
        if given:
            raise ConfigError(f"{', '.join(given)} belong to the label plan, not to a run's plan (RUN_DIR)")
        _plan_run(run_dir, baseline, effect, power, half_width, score, alpha, as_json)
        return
    run_only = [f for f, v in (("--baseline", baseline), ("--effect", effect)) if v is not None]
    if run_only:
        raise ConfigError(f"{', '.join(run_only)} need RUN_DIR, a pilot run's output folder")
    missing = [
        f for f, v in (("--k", k), ("--accuracy", accuracy), ("--n-ordinary", n_ordinary)) if v is None
    ]
    if missing:
        raise ConfigError(
            f"give RUN_DIR (a pilot run) or the label plan's {', '.join(missing)}; see seerbench plan --help"
        )
    assert k is not None and accuracy is not None and n_ordinary is not None
    p = plan_labels(accuracy, k, n_ordinary, half_width=half_width, alpha=alpha)
    if as_json:
        print_json(p.to_dict())
        return
    conf = f"{100 * (1 - alpha):g}%"
    t = Table(title=f"Plan: K={p.k}, A={p.accuracy:g}, n_o={p.n_ordinary} ({conf} normal intervals)")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    rows: list[tuple[str, str]] = [
        ("complementary labels matching n_o ordinary (Eq. 5)", str(p.n_complementary_to_match)),
        ("Var(A_comp)/Var(A_ord) at n_c = n_o (Eq. 4)", f"{p.variance_ratio_equal_n:.4f}"),
        ("half-width, ordinary, n_o labels", f"{p.half_width_ordinary:.4f}"),
        ("half-width, complementary, n_c = n_o", f"{p.half_width_complementary_equal_n:.4f}"),
        ("half-width, complementary, n_c matched", f"{p.half_width_complementary_matched:.4f}"),
        (
            f"IVW with n_c = (K-1) n_o = {p.n_complementary_k_minus_1}: weight on ord (Eq. 8)",
            f"{p.ivw_weight_k_minus_1:.4f}",
        ),
        ("IVW with n_c = (K-1) n_o: half-width", f"{p.half_width_ivw_k_minus_1:.4f}"),
    ]
    if p.target is not None:
        h = p.target.half_width
        rows += [
            (f"ordinary labels alone for half-width {h:g}", str(p.target.n_ordinary_alone)),
            (f"complementary labels alone for half-width {h:g}", str(p.target.n_complementary_alone)),
            (
                f"complementary labels besides the n_o ordinary (IVW) for {h:g}",
                str(p.target.n_complementary_alongside),
            ),
        ]
    for name, value in rows:
        t.add_row(name, value)
    console.print(t)


@app.command()
def partition(
    dataset: Path = typer.Argument(
        ..., help="Question JSONL with known answers (one seerbench Question per line)."
    ),
    out: Path = typer.Option(..., "--out", help="Where to write labels.csv."),
    seed: int = typer.Option(0, help="Seed of every random choice (option shuffles, expert routing)."),
    predictions: Path | None = typer.Option(
        None, help="CSV with columns id,prediction (overrides metadata.prediction)."
    ),
    n_ordinary: int | None = typer.Option(
        None,
        help="Fixed-size split: this many ordinary labels, the rest complementary (default: expert routing).",
    ),
    all_complementary: bool = typer.Option(
        False, "--all-complementary", help="Write K-1 complementary labels per item instead (Comp-(K-1))."
    ),
    shuffle: bool = typer.Option(True, "--shuffle/--no-shuffle", help="Shuffle each item's options first."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Simulate the expert-routing protocol (Appendix B, Algorithm 1) on questions with known answers.

    Input: seerbench question JSONL, one `Question` per line with exactly one true answer case
    (value 1.0). Each question's prediction (the system under test's answer) comes from
    `metadata.prediction` (an option's short label such as "B", or a 1-based option index), or from
    --predictions, a CSV `id,prediction` in the same format, which takes precedence.

    Each item's options are shuffled, then the item goes to the expert for a uniformly chosen option:
    "yes" gives an ordinary label, "no" a complementary label. The written labels.csv uses the
    shuffled positions 1..K for prediction and label, and keeps `id` and `option_order` (the option
    labels in shown order) as extra columns; the true answer itself is not written.
    """
    questions = read_questions_jsonl(dataset)
    preds = read_predictions_csv(predictions) if predictions is not None else None
    try:
        part = partition_questions(
            questions,
            preds,
            seed=seed,
            n_ordinary=n_ordinary,
            all_complementary=all_complementary,
            shuffle=shuffle,
        )
    except DataError as e:
        raise DataError(f"{dataset}: {e}") from None
    write_labels_csv(out, part.labels)
    summary = {"out": str(out), **part.summary()}
    mode = part.mode
    if as_json:
        print_json(summary)
    else:
        console.print(
            f"wrote {summary['labels']} labels for {summary['items']} items to {out} "
            f"({summary['n_ordinary']} ordinary, {summary['n_complementary']} complementary; "
            f"mode={mode}, seed={seed}; true accuracy {summary['true_accuracy']:.4f})"
        )


def _plan_run(
    run_dir: Path,
    baseline: str | None,
    effect: float | None,
    power: float,
    half_width: float | None,
    score: str,
    alpha: float,
    as_json: bool,
) -> None:
    from seerbench.analysis.plan import plan_run
    from seerbench.runs import json_safe

    p = plan_run(
        run_dir,
        baseline=baseline,
        effect=effect,
        power=power,
        half_width=half_width,
        score=score,
        alpha=alpha,
    )
    if as_json:
        print_json(json_safe(p))
        return
    per_q = p["usage_per_question"]
    usage = (
        "no usage recorded in the pilot"
        if per_q is None
        else f"pilot usage per question and cell: {per_q['calls']:.2f} calls"
        + ("" if per_q["tokens"] is None else f", {per_q['tokens']:.0f} tokens")
        + ("" if per_q["cost"] is None else f", ${per_q['cost']:.4f}")
    )
    ns = sorted(set(p["pilot_questions"].values()))
    pilot = (
        f"{ns[0]} question{'' if ns[0] == 1 else 's'} per cell"
        if len(ns) == 1
        else f"{ns[0]} to {ns[-1]} questions per cell (each row's pilot n is its own)"
    )
    console.print(f"{run_dir}: pilot of {pilot}; {usage}", highlight=False)
    by_cell = p.get("usage_per_question_by_cell")
    if by_cell:
        console.print(
            "per cell (what the rows' calls and cost use): "
            + "; ".join(f"{escape(k)} {v['calls']:.2f} calls" for k, v in by_cell.items()),
            highlight=False,
        )
    elif per_q is not None:
        console.print("[dim]the pilot's usage log does not name cells: every row uses the average[/]")

    def table(title: str, rows: list[dict[str, Any]], first: list[str]) -> None:
        t = Table(title=title)
        for col in (*first, "metric", "pilot n", "mean", "sd", "deff", "questions", "calls", "cost"):
            t.add_column(col, overflow="fold")
        for r in rows:
            e = r.get("expected") or {}
            t.add_row(
                *[str(r[c]) for c in ("cell", "baseline_cell")[: len(first)]],
                r["metric"],
                str(r["pilot_n"]),
                num(r["pilot_mean"], 3),
                num(r["sd"], 3),
                num(r["design_effect"], 2),
                str(r["questions"]) if r["questions"] is not None else f"- ({r['why']})",
                "-" if e.get("calls") is None else str(e["calls"]),
                "-" if e.get("cost") is None else f"${e['cost']:.2f}",
            )
        console.print(t)

    conf = f"{100 * (1 - alpha):g}%"
    if p["comparisons"]:
        table(
            f"questions to detect a paired difference of {effect:g} vs {baseline} with power {power:g} "
            f"(two-sided, level {alpha:g}); ASD under {score}",
            p["comparisons"],
            ["cell", "vs"],
        )
    elif p.get("no_comparison"):
        console.print(f"[yellow]{escape(p['no_comparison'])}[/]")
    if p["cells"]:
        table(f"questions per cell for a {conf} interval of half-width {half_width:g}", p["cells"], ["cell"])
