"""The report's figures, drawn with matplotlib and written as inline SVG (no pyplot, no global
backend: each figure is a :class:`matplotlib.figure.Figure` saved with the SVG writer).

Every function takes numbers already computed by the statistics code (``stats --json`` records,
calibration buckets, study stats) and draws them; none computes a statistic.
"""

from __future__ import annotations

import functools
import io
import math
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ParamSpec

from seerbench._format import MISSING, bounds, num
from seerbench.errors import ConfigError

INSTALL_HINT = (
    "the report draws its figures with matplotlib, a dependency of seerbench that is missing here "
    "(installed with --no-deps?): pip install matplotlib"
)

P = ParamSpec("P")

BETAS = (("b0", "β=0"), ("b1", "β=1"), ("binf", "β=∞"))
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


class Later:
    """Figures asked for while a page is written (:func:`drawn_later`), drawn together afterwards:
    each figure function returns a placeholder, and :meth:`fill` draws them all, in forked worker
    processes, one per core (matplotlib is imported there, not here), and puts each figure's SVG
    in its place. The same SVG, byte for byte, as drawing each where it was asked for."""

    def __init__(self) -> None:
        self.jobs: list[tuple[Callable[..., str], tuple[Any, ...], dict[str, Any]]] = []

    def ask(self, draw: Callable[..., str], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        self.jobs.append((draw, args, kwargs))
        return f"\x00seerbench-figure-{len(self.jobs) - 1}\x00"

    def fill(self, html: str, *, workers: int | None = None) -> str:
        from seerbench._forked import forked_map

        svgs = list(
            forked_map(_draw, self.jobs, workers=workers, describe=lambda j: f"drawing {j[0].__name__}")
        )
        return re.sub("\x00seerbench-figure-(\\d+)\x00", lambda m: svgs[int(m.group(1))], html)


def _draw(job: tuple[Callable[..., str], tuple[Any, ...], dict[str, Any]]) -> str:
    draw, args, kwargs = job
    return draw(*args, **kwargs)


#: The figures being asked for now (:func:`drawn_later`), else None: each is drawn when asked.
_later: Later | None = None


@contextmanager
def drawn_later() -> Iterator[Later]:
    """While the block runs, each figure function returns a placeholder; fill the page with
    :meth:`Later.fill` after it."""
    global _later
    if _later is not None:
        raise RuntimeError("drawn_later is not reentrant")
    _later = Later()
    try:
        yield _later
    finally:
        _later = None


def _figure_function(draw: Callable[P, str]) -> Callable[P, str]:
    """A figure function that returns a placeholder inside :func:`drawn_later` (the figure itself
    is drawn by :meth:`Later.fill`) and draws at once outside it."""

    @functools.wraps(draw)
    def asked(*args: P.args, **kwargs: P.kwargs) -> str:
        if _later is None:
            return draw(*args, **kwargs)
        return _later.ask(draw, args, kwargs)

    return asked


def require_matplotlib() -> None:
    """Refuse at once, before any file is read, when matplotlib is not installed. Only looks: the
    import itself (a second or two, some 40 MB) waits for the first figure, after the results are
    read, so that the two never add up in the peak memory."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise ConfigError(INSTALL_HINT)


def _figure(width: float, height: float) -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ConfigError(INSTALL_HINT) from None
    return Figure(figsize=(width, height), layout="constrained")


def to_svg(fig: Any, name: str) -> str:
    """The figure as an ``<svg>`` element for inline use: text kept as text (small files), no
    date, every id prefixed with ``name`` so several figures on one page never share an id."""
    from matplotlib import rc_context
    from matplotlib.text import Text

    for t in fig.findobj(
        Text
    ):  # labels are run text (model specs, protocol folders): a "$" is a dollar, not math
        t.set_parse_math(False)
    buf = io.StringIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": name, "font.size": 9}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    # every id (groups, clip paths, markers) and every reference to one gets the figure's prefix:
    # ids stay unique on a page of many figures
    prefix = re.sub(r"[^A-Za-z0-9_-]", "-", name) + "-"
    svg = re.sub(r'(\bid="|url\(#|href="#)', lambda m: m.group(1) + prefix, svg)
    return re.sub(r"^<svg ", f'<svg role="img" aria-label="{name}" ', svg, count=1)


def _ok(s: dict[str, Any] | None) -> bool:
    m = None if s is None else s.get("mean")
    return isinstance(m, int | float) and math.isfinite(m)


def _err(s: dict[str, Any]) -> tuple[float, float]:
    lo, hi, m = s.get("ci_low"), s.get("ci_high"), s["mean"]
    lo = m if lo is None or not math.isfinite(lo) else lo
    hi = m if hi is None or not math.isfinite(hi) else hi
    return max(m - lo, 0.0), max(hi - m, 0.0)


@_figure_function
def interval_plot(
    rows: Sequence[tuple[str, dict[str, Any] | None]],
    *,
    title: str,
    xlabel: str,
    name: str,
    ref: float | None = 0.0,
    xlim: tuple[float, float] | None = None,
) -> str:
    """One horizontal bar per row: the mean with its 95% CI; rows without a value are listed as n/a.
    The figure widens with its longest label (about 0.07 inch a character at 9 pt), so the bars keep
    their room: at a fixed 6.4 inches, 60-character cell labels left the axes no width at all and
    matplotlib drew the figure without its layout."""
    longest = max((len(label) for label, _ in rows), default=0)
    fig = _figure(max(6.4, 3.0 + 0.07 * longest), 0.8 + 0.32 * max(len(rows), 1))
    ax = fig.add_subplot()
    ys = list(range(len(rows)))[::-1]
    for y, (_label, s) in zip(ys, rows, strict=True):
        if s is not None and _ok(s):
            lo, hi = _err(s)
            ax.errorbar([s["mean"]], [y], xerr=[[lo], [hi]], fmt="o", color=COLORS[0], capsize=3, ms=4)
        else:
            ax.text(0.01, y, "n/a", transform=ax.get_yaxis_transform(), va="center", color="#888")
    ax.set_yticks(ys, [label for label, _ in rows])
    ax.set_ylim(-0.7, len(rows) - 0.3)
    if ref is not None:
        ax.axvline(ref, color="#999", lw=0.8, ls="--")
    if xlim is not None:
        ax.set_xlim(*xlim)
    ax.set_xlabel(xlabel)
    ax.set_title(title, loc="left")
    ax.grid(axis="x", alpha=0.3)
    return to_svg(fig, name)


@_figure_function
def heatmap(
    matrix: Sequence[Sequence[dict[str, Any] | None]],
    rows: Sequence[str],
    cols: Sequence[str],
    *,
    title: str,
    name: str,
) -> str:
    """Means in colour, each cell annotated ``mean [low, high]``; empty cells grey."""
    import numpy as np

    fig = _figure(1.6 + 1.5 * len(cols), 1.0 + 0.55 * len(rows))
    ax = fig.add_subplot()
    values = np.array(
        [[s["mean"] if s is not None and _ok(s) else np.nan for s in r] for r in matrix], dtype=float
    )
    lim = float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 1.0
    im = ax.imshow(np.ma.masked_invalid(values), cmap="RdBu", vmin=-lim or -1, vmax=lim or 1, aspect="auto")
    for i, r in enumerate(matrix):
        for j, s in enumerate(r):
            text = MISSING if s is None or not _ok(s) else _mean_over_bounds(s)
            dark = s is not None and _ok(s) and abs(s["mean"]) > 0.6 * lim
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
    ax.set_xticks(range(len(cols)), cols, rotation=20, ha="right")
    ax.set_yticks(range(len(rows)), rows)
    ax.set_title(title, loc="left")
    fig.colorbar(im, ax=ax, shrink=0.8)
    return to_svg(fig, name)


@_figure_function
def beta_plot(
    labels: Sequence[str],
    jse: Sequence[dict[str, dict[str, Any] | None]],
    ase: Sequence[dict[str, dict[str, Any] | None]],
    *,
    score: str,
    name: str,
) -> str:
    """Two panels (JSE, ASE): per cell, the mean and 95% CI at beta = 0, 1 and inf."""
    fig = _figure(7.2, 1.0 + 0.36 * max(len(labels), 1))
    axes = fig.subplots(1, 2, sharey=True)
    ys = list(range(len(labels)))[::-1]
    for ax, data, what in ((axes[0], jse, "JSE"), (axes[1], ase, "ASE")):
        for k, (key, text) in enumerate(BETAS):
            off = (k - 1) * 0.22
            for y, d in zip(ys, data, strict=True):
                s = d.get(key)
                if s is not None and _ok(s):
                    lo, hi = _err(s)
                    ax.errorbar(
                        [s["mean"]],
                        [y + off],
                        xerr=[[lo], [hi]],
                        fmt="os^"[k],
                        color=COLORS[k],
                        capsize=2,
                        ms=3.5,
                        label=text if y == ys[0] else None,
                    )
        ax.set_title(f"{what}({score})", loc="left")
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(ys, list(labels))
    axes[0].set_ylim(-0.7, len(labels) - 0.3)
    handles, names = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, names, loc="outside lower center", ncols=3, frameon=False)
    return to_svg(fig, name)


@_figure_function
def reliability(cals: Sequence[tuple[str, Any]], *, name: str) -> str:
    """Reliability diagrams, one panel per judge cell: accuracy against mean confidence per bucket
    (marker area ~ bucket size) and the diagonal of perfect calibration; ECE in the panel title."""
    ncol = min(3, len(cals))
    nrow = math.ceil(len(cals) / ncol)
    fig = _figure(2.5 * ncol + 0.4, 2.5 * nrow + 0.3)
    axes = fig.subplots(nrow, ncol, squeeze=False, sharex=True, sharey=True)
    for k, ax in enumerate(axes.flat):
        if k >= len(cals):
            ax.set_visible(False)
            continue
        label, cal = cals[k]
        ax.plot([0, 1], [0, 1], color="#999", lw=0.8, ls="--")
        xs = [b.mean_confidence for b in cal.buckets]
        ys = [b.accuracy for b in cal.buckets]
        ax.plot(xs, ys, color=COLORS[0], lw=1)
        ax.scatter(xs, ys, s=[12 + 80 * b.n / cal.n for b in cal.buckets], color=COLORS[0], zorder=3)
        ax.set_title(f"{label}\nECE {num(cal.ece)}, n {cal.n}", fontsize=7, loc="left")
        ax.set_xlim(0, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    fig.supxlabel("judge's confidence (largest probability)", fontsize=8)
    fig.supylabel("accuracy", fontsize=8)
    return to_svg(fig, name)


def _labelled_point(
    ax: Any, x: float, y: float, xerr: tuple[float, float], yerr: tuple[float, float], label: str
) -> None:
    """One point with its two intervals as error bars, and its label beside it."""
    ax.errorbar(
        [x],
        [y],
        xerr=[[xerr[0]], [xerr[1]]],
        yerr=[[yerr[0]], [yerr[1]]],
        fmt="o",
        color=COLORS[0],
        capsize=3,
        ms=4,
    )
    ax.annotate(label, (x, y), textcoords="offset points", xytext=(5, 5), fontsize=8)


def _slope_line(ax: Any, xs: Sequence[float], ys: Sequence[float], slope: float, label: str | None) -> None:
    """The line of slope ``slope`` through the means of the points (a least-squares fit's line)."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    a = my - slope * mx
    ax.plot(
        [min(xs), max(xs)], [a + slope * min(xs), a + slope * max(xs)], color=COLORS[1], lw=1, label=label
    )


def _mean_over_bounds(s: dict[str, Any]) -> str:
    """``0.62`` over ``[0.55, 0.69]`` (the mean alone where there is no interval)."""
    b = bounds(s, 2)
    return num(s["mean"], 2) + ("" if b == MISSING else "\n" + b)


def _bound(v: Any, unbounded: str) -> str:
    return unbounded if v is None or not math.isfinite(v) else num(v, 2)


@_figure_function
def pressure_plot(group: dict[str, Any], *, score: str, beta: str, name: str) -> str:
    """ASD against ASE across best-of-N: one point per N with both CIs, and the fitted line with
    the slope's CI in the title."""
    fig = _figure(5.2, 4.0)
    ax = fig.add_subplot()
    pts = [p for p in group["points"] if _ok(p["asd"]) and _ok(p["ase"])]
    for p in pts:
        _labelled_point(
            ax, p["ase"]["mean"], p["asd"]["mean"], _err(p["ase"]), _err(p["asd"]), f"N={p['best_of_n']}"
        )
    sl = group.get("slope")
    title = "slope n/a"
    if sl is not None and pts and sl.get("estimate") is not None and math.isfinite(sl["estimate"]):
        xs = [p["ase"]["mean"] for p in pts]
        ys = [p["asd"]["mean"] for p in pts]
        _slope_line(ax, xs, ys, sl["estimate"], "least-squares line")
        lo, hi = _bound(sl.get("ci_low"), "-∞"), _bound(sl.get("ci_high"), "∞")
        title = f"slope {num(sl['estimate'], 2)} [{lo}, {hi}]"
        ax.legend(fontsize=7)
    who = " ".join(
        f"{k} {group[k]}" if k != "protocol" else str(group[k])
        for k in ("protocol", "agent", "judge")
        if group.get(k)
    )
    ax.set_title(f"{who}\n{title}", loc="left", fontsize=9)
    ax.set_xlabel(f"ASE_{beta}({score})")
    ax.set_ylabel(f"ASD({score})")
    ax.grid(alpha=0.3)
    return to_svg(fig, name)


@_figure_function
def grouped_intervals(
    groups: Sequence[str],
    series: Sequence[tuple[str, Sequence[dict[str, Any] | None]]],
    *,
    title: str,
    ylabel: str,
    name: str,
    ylim: tuple[float, float] | None = (0.0, 1.0),
) -> str:
    """Vertical intervals: per group (a condition), one point with its CI per series."""
    fig = _figure(1.8 + 1.1 * max(len(groups), 1), 3.4)
    ax = fig.add_subplot()
    width = 0.6 / max(len(series), 1)
    for k, (sname, values) in enumerate(series):
        for i, s in enumerate(values):
            if s is not None and _ok(s):
                lo, hi = _err(s)
                ax.errorbar(
                    [i + (k - (len(series) - 1) / 2) * width],
                    [s["mean"]],
                    yerr=[[lo], [hi]],
                    fmt="o",
                    color=COLORS[k % len(COLORS)],
                    capsize=3,
                    ms=4,
                    label=sname if sname and i == 0 else None,
                )
    ax.set_xticks(range(len(groups)), list(groups))
    ax.set_xlim(-0.6, len(groups) - 0.4)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_ylabel(ylabel)
    ax.set_title(title, loc="left")
    ax.grid(axis="y", alpha=0.3)
    if any(s for s, _ in series):
        ax.legend(fontsize=7)
    return to_svg(fig, name)


@_figure_function
def box_plot(
    groups: Sequence[str], values: Sequence[Sequence[float]], *, title: str, ylabel: str, name: str
) -> str:
    """Distribution per group (box: quartiles, line: median, whiskers: 1.5 IQR, points beyond)."""
    fig = _figure(1.8 + 1.1 * max(len(groups), 1), 3.4)
    ax = fig.add_subplot()
    ax.boxplot([list(v) for v in values], tick_labels=list(groups))
    ax.set_ylabel(ylabel)
    ax.set_title(title, loc="left")
    ax.grid(axis="y", alpha=0.3)
    return to_svg(fig, name)


@_figure_function
def hybrid_plot(sweep: dict[str, Any], *, name: str) -> str:
    """Seed 000's hybridization curve: hybrid accuracy (with its 95% CI as a band) against the
    threshold T, AI alone and humans alone as horizontal lines, the share routed to humans on a
    second axis."""
    rows = [r for r in sweep["rows"] if r["hybrid"]["estimate"] is not None]
    fig = _figure(6.4, 3.2)
    ax = fig.add_subplot()
    if rows:
        ts = [r["threshold"] for r in rows]
        est = [r["hybrid"]["estimate"] for r in rows]
        lo = [
            r["hybrid"]["ci_low"] if r["hybrid"]["ci_low"] is not None else e
            for r, e in zip(rows, est, strict=True)
        ]
        hi = [
            r["hybrid"]["ci_high"] if r["hybrid"]["ci_high"] is not None else e
            for r, e in zip(rows, est, strict=True)
        ]
        ax.fill_between(ts, lo, hi, color=COLORS[0], alpha=0.2, lw=0)
        ax.plot(ts, est, "o-", color=COLORS[0], ms=3, label="hybrid")
        share = ax.twinx()
        share.plot(
            [r["threshold"] for r in sweep["rows"]],
            [r["routed_to_humans"] for r in sweep["rows"]],
            ":",
            color="#888",
            label="share routed to humans",
        )
        share.set_ylim(0, 1)
        share.set_ylabel("share routed to humans")
    for key, label, color in (
        ("ai_alone", "AI alone", COLORS[1]),
        ("humans_alone", "humans alone", COLORS[2]),
    ):
        e = sweep[key]["estimate"]
        if e is not None:
            ax.axhline(e, color=color, lw=1, ls="--", label=label)
    ax.set_xlabel("threshold T (AI rating used where its confidence > T)")
    ax.set_ylabel("accuracy")
    ax.set_title(f"{sweep['condition']} ({sweep['aggregate']})", loc="left")
    ax.legend(loc="lower left", fontsize=8)
    ax.grid(alpha=0.3)
    return to_svg(fig, name)


def _iv_err(d: dict[str, Any]) -> tuple[float, float]:
    """(below, above) error bar lengths of an ``{estimate, ci_low, ci_high}`` record (0 where a
    bound is missing)."""
    return _err({"mean": d["estimate"], "ci_low": d.get("ci_low"), "ci_high": d.get("ci_high")})


@_figure_function
def elo_plot(t: dict[str, Any], *, name: str) -> str:
    """The seed's comparison for one tournament (an ``elo`` record of ``stats --json``), two panels
    over the same strength axis, the debater's aggregate Elo (its one-rating-per-debater fit, with
    its interval): on the left Khan et al.'s measure, correct-minus-incorrect Elo (with its
    interval) and the least-squares line whose slope (with its interval) is ``trend``; on the right
    the seed's, the debater's ASD and ASE as the cells' agent (means over its cells; no interval:
    each cell's is in the table)."""
    fig = _figure(8.4, 3.8)
    left, right = fig.subplots(1, 2, sharex=True)
    pts = [
        r
        for r in t["ratings"]
        if _ok({"mean": r["aggregate"]["estimate"]}) and _ok({"mean": r["difference"]["estimate"]})
    ]
    xs = [r["aggregate"]["estimate"] for r in pts]
    for k, r in enumerate(pts):
        (xl, xh) = _iv_err(r["aggregate"])
        y = r["difference"]["estimate"]
        _labelled_point(left, xs[k], y, (xl, xh), _iv_err(r["difference"]), str(r["debater"]))
        for j, (key, label) in enumerate((("asd", f"ASD({t.get('score', 'log')})"), ("ase", "ASE"))):
            v = r.get(key)
            if v is None or not math.isfinite(v):
                continue
            right.errorbar(
                [xs[k]],
                [v],
                xerr=[[xl], [xh]],
                fmt="os"[j],
                color=COLORS[1 + j],
                capsize=3,
                ms=4,
                label=label if k == 0 else None,
            )
            if j == 0:
                right.annotate(
                    str(r["debater"]), (xs[k], v), textcoords="offset points", xytext=(5, 5), fontsize=8
                )
    tr = t.get("trend") or {}
    est = tr.get("estimate")
    title = "slope n/a (fewer than three debaters)"
    if est is not None and math.isfinite(est) and xs:
        _slope_line(left, xs, [r["difference"]["estimate"] for r in pts], est, None)
        title = f"slope {num(est, 2)} [{_bound(tr.get('ci_low'), 'n/a')}, {_bound(tr.get('ci_high'), 'n/a')}]"
    left.axhline(0.0, color="#999", lw=0.8, ls="--")
    left.set_title(f"Elo (Khan et al. 2024)\n{title}", loc="left", fontsize=9)
    left.set_xlabel("aggregate Elo")
    left.set_ylabel("correct − incorrect Elo")
    left.grid(alpha=0.3)
    right.axhline(0.0, color="#999", lw=0.8, ls="--")
    right.set_title("ASD and ASE (seed 003) as the agent", loc="left", fontsize=9)
    right.set_xlabel("aggregate Elo")
    right.set_ylabel(f"agent score ({t.get('score', 'log')})")
    right.grid(alpha=0.3)
    if right.get_legend_handles_labels()[0]:
        right.legend(fontsize=7)
    fig.suptitle(f"{t['protocol']}, judge {t['judge']}", fontsize=9, x=0.01, ha="left")
    return to_svg(fig, name)
