"""Optimization pressure (seed 003, "Persuasiveness experiments"): how ASD moves as the agents get
stronger under best-of-N selection.

Cells that differ only in ``best_of_n`` (same protocol folder, agent, judge and tools) form a
*group*. For each group and each N it reports, over the questions every N of the group scored:

- ASD (the run's score type), ASE = expected agent score at temperature ``beta``
  (``(AS_T, AS_F) . p``, the seed's EAS) and judge accuracy, each a mean with a CI;
- paired differences between successive N (N_{j+1} - N_j), question by question, with CIs;
- the slope of ASD against ASE across N: the least-squares line through the points
  (mean ASE_N, mean ASD_N), one point per N, unweighted. A negative slope means that as best-of-N
  makes the agents more persuasive, the truth's advantage shrinks.

How the CIs are made: one seeded percentile bootstrap over questions that resamples every N
*jointly* (a replicate draws one set of questions and takes all N's values of each drawn question),
so the differences and the slope carry the pairing of the questions across N. Questions that share
a source passage (``cluster="source"``, the default) are resampled as one cluster, since their
values are correlated; a replicate's mean is then sum of cluster sums / sum of cluster sizes. With
every question its own cluster the draws are exactly those of :func:`seerbench.analysis.summarize`
(same seed, same indices), so a per-N CI of ASD or ASE equals ``summarize`` of its values (the
cell's own stats CI when no question was dropped) and a difference CI equals
:func:`seerbench.analysis.paired_difference`. The slope's CI is the percentile interval of the
replicates' slopes. Every percentile interval of a mean or difference is widened where needed to
the t interval on (clusters - 1) df with the cluster-robust SE, as summarize's is.

Judge accuracy is a mean of values in [0, 1], often near 1, where a percentile interval collapses
onto an all-correct sample. Its per-N interval is Wilson's at the effective sample size the
bootstrap variance implies (the number of clusters when that variance is 0; at most the number of
verdicts the accuracies average), and a successive-N
difference takes the wider of the percentile interval and the MOVER combination of the two Wilson
intervals with the replicates' correlation (each alone undercovers somewhere; tests/test_pressure.py
measures both).

Groups of a protocol without an agent score difference (one answer case a question, e.g.
RandomConsultancy and OpenConsultancy) are not listed: pressure is read in ASD; their accuracy
per N is in the cells' own stats.

The point estimates use the questions common to all N of a group (the pairing needs them); a cell's
own stats use all its scored questions, so the two means can differ when some N excluded a
question. ``dropped`` counts, per N, the scored questions left out that way.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from seerbench.errors import ConfigError
from seerbench.stats import DEFAULT_N_BOOT, Summary, widen_to_t
from seerbench.stats import bootstrap_means as _bootstrap_means

__all__ = [
    "PRESSURE_METRICS",
    "PressureGroup",
    "PressurePoint",
    "PressureResult",
    "PressureStep",
    "Slope",
    "optimization_pressure",
    "pressure_from_values",
    "pressure_section",
]

#: The per-question metrics compared across N, in table order.
PRESSURE_METRICS = ("asd", "ase", "accuracy")
#: Fewer independent clusters (questions, or passages) than this get a note: the bootstrap needs more.
MIN_CLUSTERS = 10
#: An ASE spread across N (max - min of the means) below this leaves the slope undefined.
FLAT_ASE = 1e-12


@dataclass(frozen=True)
class Slope:
    """Least-squares slope of mean ASD on mean ASE across N, with its bootstrap percentile CI.

    ``se`` is the standard deviation of the bootstrap slopes. ``n_flat`` counts replicates in which
    ASE did not vary across N (slope undefined there); when more than 1% of them are flat the CI is
    unbounded (-inf, inf): ASE barely moves and the data cannot pin the slope down."""

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    intercept: float
    n_flat: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PressurePoint:
    """One N of a group: the cell and the metrics' summaries over the group's common questions."""

    best_of_n: int
    cell: str
    asd: Summary
    ase: Summary
    accuracy: Summary
    dropped: int  # questions this cell scored that another N of the group did not

    def to_dict(self) -> dict[str, Any]:
        return {
            "best_of_n": self.best_of_n,
            "cell": self.cell,
            "dropped": self.dropped,
            **{m: getattr(self, m).as_dict() for m in PRESSURE_METRICS},
        }


@dataclass(frozen=True)
class PressureStep:
    """Paired differences ``to_n - from_n`` over the group's common questions."""

    from_n: int
    to_n: int
    asd: Summary
    ase: Summary
    accuracy: Summary

    def to_dict(self) -> dict[str, Any]:
        return {
            "from_n": self.from_n,
            "to_n": self.to_n,
            **{m: getattr(self, m).as_dict() for m in PRESSURE_METRICS},
        }


@dataclass(frozen=True)
class PressureGroup:
    """Cells that differ only in best-of-N, and what changes along N."""

    axes: dict[str, Any]  # protocol, agent, judge, tools
    n_questions: int
    n_clusters: int
    points: list[PressurePoint]
    steps: list[PressureStep]
    slope: Slope | None  # None: ASE is the same at every N (or fewer than 2 questions)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.axes,
            "n_questions": self.n_questions,
            "n_clusters": self.n_clusters,
            "points": [p.to_dict() for p in self.points],
            "steps": [s.to_dict() for s in self.steps],
            "slope": None if self.slope is None else self.slope.to_dict(),
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class PressureResult:
    """The optimization-pressure analysis of a run: one :class:`PressureGroup` per set of cells
    that differ only in best-of-N (groups with a single N are not listed)."""

    score: str
    beta: float
    cluster: str
    confidence: float
    n_boot: int
    seed: int
    groups: list[PressureGroup]

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "beta": self.beta,
            "cluster": self.cluster,
            "confidence": self.confidence,
            "n_boot": self.n_boot,
            "seed": self.seed,
            "groups": [g.to_dict() for g in self.groups],
        }


# ---- the statistics (pure) ----------------------------------------------------------------------


def _cluster_codes(clusters: Sequence[Any] | None, n: int) -> tuple[np.ndarray, int]:
    if clusters is None:
        return np.arange(n), n
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster labels for {n} questions")
    first: dict[str, int] = {}  # codes in order of first appearance: singletons give 0..n-1
    codes = np.array([first.setdefault(str(c), len(first)) for c in clusters], dtype=np.int64)
    return codes, len(first)


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Slope and intercept of y on x along the last axis (NaN slope where x does not vary)."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    sxx = (xc * xc).sum(axis=-1)
    flat = (x.max(axis=-1) - x.min(axis=-1)) < FLAT_ASE
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(flat, np.nan, (xc * yc).sum(axis=-1) / np.where(flat, 1.0, sxx))
    return slope, y.mean(axis=-1) - slope * x.mean(axis=-1)


def _accuracy_intervals(
    means: np.ndarray,
    boot: np.ndarray | None,
    k: int,
    n: int,
    g: int,
    confidence: float,
    n_max: Sequence[float],
) -> dict[tuple[str, int], tuple[float, float]]:
    """Intervals of judge accuracy (a mean of values in [0, 1]) that keep their coverage near 0 and
    1, where a percentile interval collapses onto the estimate: Wilson's at the effective sample
    size the bootstrap variance implies (the number of clusters when that variance says nothing,
    at 0 or 1; at most ``n_max[j]``, the verdicts behind the accuracies at step j), and for a
    difference between successive N the MOVER combination of the two with the replicates'
    correlation (:mod:`seerbench.stats`)."""
    from seerbench.stats import Interval, difference_interval, proportion_interval

    if n == 0:
        return {(m, j): (math.nan, math.nan) for m in ("accuracy", "d_accuracy") for j in range(k)}
    # rows of boot: asd (k), ase (k), accuracy (k), then differences
    reps = boot[2 * k : 3 * k] if boot is not None else None
    cov = np.cov(reps) if reps is not None else np.zeros((k, k))
    ivs: list[Interval] = [
        proportion_interval(
            float(means[j]),
            float(cov[j, j]),
            n_max=float(n_max[j]),
            n_boundary=float(g),
            confidence=confidence,
        )
        for j in range(k)
    ]
    out = {("accuracy", j): (iv.ci_low, iv.ci_high) for j, iv in enumerate(ivs)}
    for j in range(k - 1):
        d = cov[j, j] * cov[j + 1, j + 1]
        rho = float(np.clip(cov[j, j + 1] / math.sqrt(d), -1.0, 1.0)) if d > 0 else 0.0
        iv = difference_interval(ivs[j + 1], ivs[j], rho)
        out[("d_accuracy", j)] = (iv.ci_low, iv.ci_high)
    return out


def pressure_from_values(
    ns: Sequence[int],
    values: Mapping[str, np.ndarray | Sequence[Sequence[float]]],
    *,
    clusters: Sequence[Any] | None = None,
    confidence: float = 0.95,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    verdicts: Sequence[float] | None = None,
) -> tuple[list[dict[str, Summary]], list[dict[str, Summary]], Slope | None]:
    """The statistics of one group from its per-question values.

        ``values[m]`` for m in :data:`PRESSURE_METRICS` is a ``len(ns) x n`` array: row j holds the
        values at N = ``ns[j]``, column i question i (the same question in every row). ``clusters``
        labels each question's cluster (None: every question its own). ``verdicts[j]`` is the number
    of judge verdicts the accuracies at N = ``ns[j]`` average (a consultancy question's accuracy is the
    mean of 2 verdicts; default: one per question): it caps the effective sample size of the accuracy
        interval. Returns per-N summaries, the summaries of successive differences (row j+1 - row j),
        and the slope of mean ASD on mean ASE (None when ASE is the same at every N). With all questions
        in one cluster nothing measures the spread: SEs and the CIs of ASD and ASE are NaN."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    k = len(ns)
    arrays = {m: np.asarray(values[m], dtype=float).reshape(k, -1) for m in PRESSURE_METRICS}
    n = arrays["asd"].shape[1]
    if any(a.shape != (k, n) for a in arrays.values()):
        raise ValueError(f"every metric needs a {k} x {n} array")
    if not all(np.all(np.isfinite(a)) for a in arrays.values()):
        raise ValueError("per-question values must be finite")
    codes, g = _cluster_codes(clusters, n)
    sizes = np.bincount(codes, minlength=g).astype(float)

    def csum(x: np.ndarray) -> np.ndarray:
        return np.bincount(codes, weights=x, minlength=g)

    # rows: per-N values of every metric, then successive differences
    rows: list[tuple[str, int, np.ndarray]] = []
    for m in PRESSURE_METRICS:
        rows += [(m, j, arrays[m][j]) for j in range(k)]
    for m in PRESSURE_METRICS:
        rows += [(f"d_{m}", j, arrays[m][j + 1] - arrays[m][j]) for j in range(k - 1)]
    alpha = (1 - confidence) / 2
    if n >= 2 and g >= 2:
        reps = _bootstrap_means([*(csum(x) for _, _, x in rows), sizes], n_boot, seed)
        boot = np.stack(reps[:-1]) / reps[-1]  # (rows x n_boot) replicate means
    else:
        boot = None
    summaries: dict[tuple[str, int], Summary] = {}
    n_max = [float(n)] * k if verdicts is None else [float(v) for v in verdicts]
    if len(n_max) != k or any(v < n for v in n_max):
        raise ValueError(
            f"verdicts must give, per N, at least one verdict per question ({n}); got {verdicts}"
        )
    acc_means = arrays["accuracy"].mean(axis=1) if n else np.full(k, math.nan)  # no question: no warning
    acc_iv = _accuracy_intervals(acc_means, boot, k, n, g, confidence, n_max)
    for r, (m, j, x) in enumerate(rows):
        mean = float(x.mean()) if n else math.nan
        std = float(x.std(ddof=1)) if n > 1 else 0.0
        if g > 1:  # cluster-robust (sandwich) SE; equals std / sqrt(n) with one question per cluster
            t = csum(x - mean)
            se = math.sqrt(g / (g - 1) * float((t * t).sum())) / n
        else:  # one question: as summarize; one cluster of several: not estimable
            se = 0.0 if n <= 1 else math.nan
        if boot is None:
            lo = hi = mean if n <= 1 else math.nan
        else:
            lo, hi = (float(v) for v in np.quantile(boot[r], [alpha, 1 - alpha]))
            # as summarize: widened to t on (clusters - 1) df; with one question a cluster exactly
            # summarize's (its SE is std / sqrt(n), bit for bit)
            lo, hi = widen_to_t(mean, std / math.sqrt(n) if g == n else se, lo, hi, g - 1, confidence)
        if m == "accuracy":
            lo, hi = acc_iv[(m, j)]
        elif m == "d_accuracy":  # the wider of the two: each undercovers where the other holds
            lo, hi = min(lo, acc_iv[(m, j)][0]), max(hi, acc_iv[(m, j)][1])
        summaries[(m, j)] = Summary(n, mean, std, se, lo, hi, confidence, n_boot, seed)
    per_n = [{m: summaries[(m, j)] for m in PRESSURE_METRICS} for j in range(k)]
    steps = [{m: summaries[(f"d_{m}", j)] for m in PRESSURE_METRICS} for j in range(k - 1)]
    x = np.array([p["ase"].mean for p in per_n])
    y = np.array([p["asd"].mean for p in per_n])
    slope_v, icpt = _ols(x, y)
    if n == 0 or k < 2 or math.isnan(float(slope_v)):
        return per_n, steps, None
    if boot is None:
        one = n <= 1
        return (
            per_n,
            steps,
            Slope(
                float(slope_v),
                0.0 if one else math.nan,
                float(slope_v) if one else math.nan,
                float(slope_v) if one else math.nan,
                float(icpt),
                0,
            ),
        )
    ase_b = boot[[r for r, (m, _, _) in enumerate(rows) if m == "ase"]].T  # (n_boot x k)
    asd_b = boot[[r for r, (m, _, _) in enumerate(rows) if m == "asd"]].T
    slopes, _ = _ols(ase_b, asd_b)
    flat = int(np.isnan(slopes).sum())
    finite = slopes[~np.isnan(slopes)]
    if flat > 0.01 * n_boot or finite.size < 2:
        lo, hi = -math.inf, math.inf
    else:
        lo, hi = (float(v) for v in np.quantile(finite, [alpha, 1 - alpha]))
    se = float(finite.std(ddof=1)) if finite.size > 1 else math.nan
    return per_n, steps, Slope(float(slope_v), se, lo, hi, float(icpt), flat)


# ---- reading a run folder -----------------------------------------------------------------------


def _cluster_label(line: dict[str, Any], cluster: str) -> str:
    q = line["question"]
    if cluster == "none":
        return "q:" + line["question_id"]
    if cluster == "source":
        src = q.get("source_text")
        return "q:" + line["question_id"] if not src else "s:" + hashlib.sha256(src.encode()).hexdigest()
    key = cluster.removeprefix("metadata:")
    meta = q.get("metadata") or {}
    if key not in meta:
        raise ConfigError(
            f"question {line['question_id']!r} has no metadata key {key!r} to cluster on; "
            f"cluster on 'source' (questions sharing a passage) or 'none' instead"
        )
    return "m:" + str(meta[key])


def check_cluster(cluster: str) -> str:
    if cluster in ("source", "none") or (cluster.startswith("metadata:") and len(cluster) > len("metadata:")):
        return cluster
    raise ConfigError(f"cluster must be source, none or metadata:KEY; got {cluster!r}")


def optimization_pressure(
    run_dir: str | Path,
    *,
    beta: float = 1.0,
    score: str = "log",
    eps: float | None = None,
    parse_failures: str | None = None,
    cluster: str = "source",
    confidence: float = 0.95,
    n_boot: int | None = None,
    seed: int | None = None,
) -> PressureResult:
    """The optimization-pressure analysis of a run folder (see the module docstring): every group
    of cells that differ only in ``best_of_n``, rescored with ``eps`` and ``parse_failures``
    (default: the run's own), ASE at temperature ``beta``, ASD and ASE under ``score``. ``n_boot``
    and ``seed`` default to the run's. ``cluster``: ``source`` (questions sharing a source passage
    resample together), ``none``, or ``metadata:KEY`` (a question metadata field)."""
    from seerbench.metrics import DEFAULT_EPS, beta_key
    from seerbench.results import CELL_AXES, rescore
    from seerbench.runs import RunFolder, check_beta, check_eps, check_policy, check_score

    folder = RunFolder(run_dir)
    cfg = folder.config
    check_beta(beta)
    check_score(score)
    check_cluster(cluster)
    eps_v = check_eps(cfg.get("eps", DEFAULT_EPS) if eps is None else eps)
    policy = check_policy(parse_failures or cfg.get("parse_failures", "exclude"))
    n_boot_v = int(cfg.get("n_boot", DEFAULT_N_BOOT) if n_boot is None else n_boot)
    seed_v = int(cfg.get("seed", 0) if seed is None else seed)
    ase_key = f"ase_{beta_key(beta)}"
    group_axes = [a for a in CELL_AXES if a != "best_of_n"]

    # which cells share everything but best_of_n: the first line of each says
    groups: dict[str, dict[int, Any]] = {}
    axes_of: dict[str, dict[str, Any]] = {}
    for cell in folder.cells():
        first = next(iter(cell.results()), None)
        if first is None or first.get("adversary") is not None:
            continue  # cross-play cells are rated by Elo (analysis/_elo.py), not by best-of-N here
        axes = {a: first.get(a) for a in group_axes}
        gkey = repr(sorted(axes.items()))
        axes_of[gkey] = axes
        nv = int(first.get("best_of_n") or 1)
        group = groups.setdefault(gkey, {})
        if nv in group:  # two cells at one point of the grid: which to compare would be a guess
            raise ConfigError(
                f"cells {group[nv].key} and {cell.key} have the same protocol, agent, judge, tools and "
                f"best_of_n ({nv}); move one of them out of {folder.path}"
            )
        group[nv] = cell

    out: list[PressureGroup] = []
    for gkey, by_n in groups.items():
        if len(by_n) < 2:
            continue
        ns = sorted(by_n)
        per_cell: list[dict[str, tuple[float, float, float]]] = []
        no_asd = False  # a scored question without an agent score (the protocol has no ASD)
        labels: dict[str, str] = {}
        n_verdicts: dict[int, dict[str, int]] = {nv: {} for nv in ns}
        for nv in ns:
            vals: dict[str, tuple[float, float, float]] = {}
            for ln in by_n[nv].results():
                s = rescore(ln, eps=eps_v, policy=policy, betas=(beta,))
                asd, ase, acc = (
                    (s.get("asd") or {}).get(score),
                    (s.get(ase_key) or {}).get(score),
                    s.get("judge_accuracy"),
                )
                if not s["excluded"] and acc is not None and asd is None:
                    no_asd = True
                if s["excluded"] or asd is None or ase is None or acc is None:
                    continue
                if not (math.isfinite(asd) and math.isfinite(ase)):
                    continue
                vals[s["question_id"]] = (float(asd), float(ase), float(acc))
                # distinct verdicts behind the accuracy: one run serves every case of a symmetric line
                n_verdicts[nv][s["question_id"]] = (
                    1
                    if s.get("symmetric")
                    else sum(1 for c in s["answer_cases"] if c.get("agent_score") is not None)
                )
                labels.setdefault(s["question_id"], _cluster_label(s, cluster))
            per_cell.append(vals)
        # in the first N's file order (dataset order), so that without clusters or dropped
        # questions a per-N CI is the cell's own stats CI (the same bootstrap draws)
        if no_asd and not any(per_cell):
            # RandomConsultancy, OpenConsultancy: one case per question, no agent score difference;
            # their accuracy per N is in the cells' own stats
            continue
        shared = set.intersection(*(set(v) for v in per_cell))
        common = [q for q in per_cell[0] if q in shared]
        arrays = {
            m: np.array([[v[q][i] for q in common] for v in per_cell]).reshape(len(ns), len(common))
            for i, m in enumerate(PRESSURE_METRICS)
        }
        clusters = [labels[q] for q in common]
        verdicts = [sum(max(n_verdicts[nv][q], 1) for q in common) for nv in ns]
        per_n, steps, slope = pressure_from_values(
            ns,
            arrays,
            clusters=clusters,
            confidence=confidence,
            n_boot=n_boot_v,
            seed=seed_v,
            verdicts=verdicts,
        )
        notes = []
        n_clusters = len(set(clusters))
        if 0 < n_clusters < MIN_CLUSTERS:
            notes.append(
                f"only {n_clusters} independent question cluster(s): "
                "bootstrap CIs this small are not to be trusted"
            )
        if not common:
            notes.append("no question was scored at every N: nothing to compare")
        elif slope is None:
            notes.append("mean ASE is the same at every N: the slope of ASD on ASE is undefined")
        elif math.isinf(slope.ci_high):
            notes.append(
                f"ASE did not vary across N in {slope.n_flat} of {n_boot_v} bootstrap replicates: "
                "the slope's CI is unbounded"
            )
        points = [
            PressurePoint(nv, by_n[nv].key, p["asd"], p["ase"], p["accuracy"], len(v) - len(common))
            for nv, p, v in zip(ns, per_n, per_cell, strict=True)
        ]
        stp = [PressureStep(ns[j], ns[j + 1], s["asd"], s["ase"], s["accuracy"]) for j, s in enumerate(steps)]
        out.append(PressureGroup(axes_of[gkey], len(common), n_clusters, points, stp, slope, notes))
    return PressureResult(score, beta, cluster, confidence, n_boot_v, seed_v, out)


def pressure_section(run_dir: str | Path, cells: Sequence[Mapping[str, Any]], **kw: Any) -> dict[str, Any]:
    """``{"pressure": ...}`` (:meth:`PressureResult.to_dict`) when the cells' stats records
    ``cells`` hold several best-of-N values and some cells differ only in N, else ``{}``: the
    key ``seerbench stats --json`` and ``run --json`` add. ``kw`` goes to :func:`optimization_pressure`."""
    if len({c.get("best_of_n") or 1 for c in cells}) < 2:
        return {}
    result = optimization_pressure(run_dir, **kw)
    return {"pressure": result.to_dict()} if result.groups else {}
