"""``seerbench complementarity``: hybridization, reliance, calibration and mixed effects (seed 000)."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from seerbench._format import ci, num
from seerbench.cli._app import app
from seerbench.cli._common import console, print_json, quiet
from seerbench.errors import ConfigError


def _row(t: Table, *cells: str) -> None:
    """A table row printed as plain text (bracketed CIs and condition names are not markup)."""
    t.add_row(*(Text(c) for c in cells))


def parse_thresholds(text: str) -> list[float]:
    """``0.5,0.6,0.7`` or ``start:stop:step`` (stop included)."""
    try:
        if ":" in text:
            start, stop, step = (float(x) for x in text.split(":"))
            if step <= 0:
                raise ValueError
            n = math.floor((stop - start) / step + 1e-9) + 1
            return [round(start + k * step, 10) for k in range(max(n, 0))]
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(
            f"--thresholds: give numbers like 0.5,0.6,0.7 or start:stop:step (e.g. 0:1:0.05), got {text!r}"
        ) from None


@app.command("complementarity")
def complementarity(
    ai: Path = typer.Option(
        ..., "--ai", help="The AI rater's run folder (with ratings.jsonl) or the ratings.jsonl file."
    ),
    humans: str = typer.Option(
        ..., "--humans", help="The study database (SQLite path or URL) or its export (.csv / .jsonl)."
    ),
    unassisted: str | None = typer.Option(
        None,
        help=(
            "The unassisted condition (default: the study's condition "
            "without assistance, or one named none/baseline/unassisted)."
        ),
    ),
    condition: str | None = typer.Option(
        None,
        help="The human condition whose full threshold sweep the table shows (default: the unassisted one).",
    ),
    thresholds: str = typer.Option(
        "0:1:0.05",
        help=(
            "Thresholds T: AI where its confidence > T, humans "
            "where <= T. A list (0.5,0.6) or start:stop:step."
        ),
    ),
    cost_per_rating: float | None = typer.Option(
        None, "--cost-per-rating", help="Cost of one human rating, for the human cost per item."
    ),
    judges: list[Path] = typer.Option(
        [],
        "--judges",
        help="A `seerbench run` folder whose model judges to add to the calibration table (repeatable).",
    ),
    n_boot: int = typer.Option(
        1000, "--n-boot", help="Bootstrap replicates per resampling (items, raters, judgments)."
    ),
    seed: int = typer.Option(0, help="Seed of the bootstrap and the cross-validation folds."),
    folds: int = typer.Option(5, help="Folds of the cross-validated threshold choice."),
    repeats: int = typer.Option(20, help="Repeats of the cross-validation (fresh random folds each)."),
    no_mixed: bool = typer.Option(False, "--no-mixed", help="Leave out the mixed-effects model."),
    no_interaction: bool = typer.Option(
        False, "--no-interaction", help="Mixed effects without the condition x ai_correct interaction."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
) -> None:
    """Hybridization of the AI rater with human raters (seed 000), reliance on AI assistance,
    calibration and the mixed-effects model, with cluster-bootstrap 95% intervals."""
    from seerbench.complementarity import EXTRA_HINT, analyze, gpboost_available, read_ai_ratings
    from seerbench.study import load_human_rows

    if n_boot < 2:
        raise ConfigError(f"--n-boot must be at least 2, got {n_boot}")
    if repeats < 1:
        raise ConfigError(f"--repeats must be at least 1, got {repeats}")
    if cost_per_rating is not None and (math.isnan(cost_per_rating) or cost_per_rating < 0):
        raise ConfigError(f"--cost-per-rating must be >= 0, got {cost_per_rating}")
    if not no_mixed and not gpboost_available():
        raise ConfigError(EXTRA_HINT)
    ts = parse_thresholds(thresholds)
    ratings = read_ai_ratings(ai)
    rows, bare = load_human_rows(humans)
    report = analyze(
        ratings,
        rows,
        unassisted=unassisted or bare,
        thresholds=ts,
        cost_per_rating=cost_per_rating,
        n_boot=n_boot,
        seed=seed,
        folds=folds,
        repeats=repeats,
        mixed=not no_mixed,
        interaction=not no_interaction,
        judge_runs=judges,
    )
    if condition is not None and condition not in report.conditions:
        raise ConfigError(
            f"--condition {condition!r} is not in the study; conditions: {', '.join(report.conditions)}"
        )
    if as_json:
        print_json(report)
        return
    if quiet():
        return
    _print(report, condition or report.unassisted or report.conditions[0])


def _print(report: object, shown: str) -> None:
    from seerbench.complementarity import ComplementarityReport

    assert isinstance(report, ComplementarityReport)
    r = report
    console.print(
        f"{r.items} AI-rated items; {r.judgments} human judgments by {r.raters} raters in "
        f"{len(r.conditions)} conditions ({', '.join(r.conditions)}); unassisted: {r.unassisted or '-'}",
        markup=False,
    )
    for note in r.notes:
        console.print(f"note: {note}", markup=False, soft_wrap=True)

    for sw in r.hybrid:
        if sw.condition != shown:
            continue
        t = Table(
            title=Text(f"hybrid: AI where confidence > T, humans ({sw.condition}, {sw.aggregate}) where <= T")
        )
        for col in (
            "T",
            "to humans",
            "hybrid accuracy [95% CI]",
            "minus AI alone [95% CI]",
            "ratings/item",
            "cost/item",
        ):
            t.add_column(col, justify="right")
        for row in sw.rows:
            _row(
                t,
                num(row.threshold, 2),
                num(row.routed_to_humans, 2),
                ci(row.hybrid)
                if row.missing_human_items == 0
                else f"- ({row.missing_human_items} routed items unrated)",
                ci(row.gain_over_ai),
                num(row.human_ratings_per_item, 2),
                num(row.human_cost_per_item, 2),
            )
        console.print(t)
        cv = sw.cross_validated
        console.print(
            f"  AI alone {ci(sw.ai_alone)}; humans alone {ci(sw.humans_alone)} on {sw.items_with_humans} "
            f"items (AI there {num(sw.ai_on_human_items.estimate)}); in-sample best T = "
            f"{num(sw.best_threshold, 2)} ({num(sw.best_accuracy)}); cross-validated "
            f"{num(cv.estimate)} (sd {num(cv.spread)}, {cv.folds} folds x {cv.repeats})",
            markup=False,
        )
    if sw_majority_tie := next((s.tie_rule for s in r.hybrid if s.aggregate == "majority"), None):
        console.print(f"  majority vote: {sw_majority_tie}", markup=False, soft_wrap=True)

    t = Table(title="hybridization per human condition (T chosen in-sample; cross-validated estimate beside)")
    for col in (
        "condition",
        "aggregate",
        "humans alone [95% CI]",
        "best T",
        "hybrid at best T",
        "cross-validated",
    ):
        t.add_column(col, justify="right")
    for sw in r.hybrid:
        _row(
            t,
            sw.condition,
            sw.aggregate,
            ci(sw.humans_alone),
            num(sw.best_threshold, 2),
            num(sw.best_accuracy),
            num(sw.cross_validated.estimate),
        )
    console.print(t)

    if r.reliance is not None:
        t = Table(
            title=Text(f"reliance (seed 000 2.4.3), against unassisted '{r.reliance.unassisted}'"),
            caption="over-reliance / under-reliance: the assisted error rate where the AI is wrong / right; "
            "change: assisted minus unassisted accuracy",
        )
        for col in (
            "condition",
            "acc. AI wrong",
            "acc. AI right",
            "over-rel.",
            "under-rel.",
            "change AI wrong",
            "change AI right",
        ):
            t.add_column(col, justify="right")
        for c in r.reliance.conditions:
            _row(
                t,
                c.condition,
                ci(c.ai_wrong.accuracy),
                ci(c.ai_right.accuracy),
                ci(c.over_reliance),
                ci(c.under_reliance),
                ci(c.accuracy_change_ai_wrong),
                ci(c.accuracy_change_ai_right),
            )
        console.print(t)

    t = Table(title="calibration (accuracy by confidence bucket)")
    for col in ("source", "n", "ECE", "Brier", "buckets: confidence -> accuracy (n)"):
        t.add_column(col)
    for cal in r.calibration:
        b = "; ".join(f"{x.mean_confidence:.2f}->{x.accuracy:.2f} ({x.n})" for x in cal.buckets)
        _row(t, cal.source, str(cal.n), num(cal.ece), num(cal.brier), b)
    console.print(t)

    me = r.mixed_effects
    if me is not None:
        t = Table(title=Text(f"mixed effects: {me.formula} (reference {me.reference_condition}, AI wrong)"))
        for col in ("term", "estimate", "SE", "z", "p"):
            t.add_column(col, justify="right")
        for coef in me.coefficients:
            _row(
                t,
                coef.term,
                num(coef.estimate),
                num(coef.se),
                num(coef.z, 2),
                "-" if coef.p is None else f"{coef.p:.3g}",
            )
        console.print(t)
        sd = me.random_effect_sd
        console.print(
            f"  random-intercept SD: item {num(sd['item'])}, rater {num(sd['rater'])}; {me.estimator}",
            markup=False,
        )
        if me.note:
            console.print(f"  note: {me.note}", markup=False, soft_wrap=True)
