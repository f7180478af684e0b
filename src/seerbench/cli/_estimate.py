"""``seerbench estimate``, ``plan`` and ``partition``: partitioned-supervision accuracy estimation
(seed 001)."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.table import Table

from seerbench.cli._app import app
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


def _fmt(x: float | None, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}f}"


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
        "score", help="Confidence interval: score (Wilson-type, the default) or wald."
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
        est_txt = _fmt(e.estimate) + (" (clipped)" if e.clipped else "")
        table.add_row(
            row.label,
            est_txt,
            _fmt(e.se),
            "empty: no accuracy in [0, 1] fits (impossible under Eq. 1)"
            if math.isnan(e.ci_low)
            else f"[{e.ci_low:.4f}, {e.ci_high:.4f}]",
            _fmt(e.weight, 3),
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
            _fmt(b.weight, 3),
            f"{b.half_width:.4f}",
            f"[{b.lower:.4f}, {b.upper:.4f}]",
            "yes" if b.holds_for_data_dependent_weight else "no (fixed w)",
            "rigorous" if b.rigorous else "approximate",
        )
    console.print(bt)
    for why in report.bound_errors:
        console.print(f"[dim]bound unavailable: {why}[/dim]")


@app.command()
def plan(
    k: int = typer.Option(..., "--k", help="Number of options K."),
    accuracy: float = typer.Option(..., help="Planning accuracy A in (0, 1], e.g. a pilot A_ord."),
    n_ordinary: int = typer.Option(..., help="Number of ordinary labels n_o."),
    half_width: float | None = typer.Option(
        None, help="Target CI half-width: also report the n that reaches it."
    ),
    alpha: float = typer.Option(0.05, help="1 - confidence level of the intervals."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Plan label counts: complementary labels matching n_o ordinary ones (Eq. 5), the variance ratio
    (Eq. 4), interval half-widths, and the labels a target half-width needs."""
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
