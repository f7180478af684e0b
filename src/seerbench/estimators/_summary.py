"""Every estimator and bound for one label set, as ``seerbench estimate`` reports them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from seerbench.errors import DataError
from seerbench.estimators._bounds import (
    DeviationBound,
    bernstein_ivw_bound,
    bernstein_mixture_bound,
    complementary_bound,
    union_mixture_bound,
)
from seerbench.estimators._core import (
    AccuracyEstimate,
    IntervalKind,
    LabelCounts,
    complementary_accuracy,
    ivw_accuracy,
    mixture_accuracy,
    ml_accuracy,
    ordinary_accuracy,
)

__all__ = ["EstimateReport", "EstimatorRow", "estimate_all"]

T = TypeVar("T")


@dataclass(frozen=True)
class EstimatorRow:
    """One estimator: its estimate (None when unavailable, with ``unavailable`` saying why) and the
    rigorous bound that covers it (None when the paper gives none, as for ML)."""

    name: str
    label: str
    estimate: AccuracyEstimate | None
    bound: DeviationBound | None
    unavailable: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON)."""
        return {
            "name": self.name,
            "label": self.label,
            "estimate": None if self.estimate is None else self.estimate.to_dict(),
            "bound": None if self.bound is None else self.bound.to_dict(),
            "unavailable": self.unavailable,
        }


@dataclass(frozen=True)
class EstimateReport:
    """All estimators (Ord, Comp, IVW, IVW at a fixed weight, ML) and all bounds for one label set."""

    counts: LabelCounts
    alpha: float
    delta: float
    weight: float
    rows: tuple[EstimatorRow, ...]
    bounds: tuple[DeviationBound, ...]
    bound_errors: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON)."""
        return {
            "counts": self.counts.to_dict(),
            "alpha": self.alpha,
            "delta": self.delta,
            "weight": self.weight,
            "estimators": [r.to_dict() for r in self.rows],
            "bounds": [b.to_dict() for b in self.bounds],
            "bounds_unavailable": list(self.bound_errors),
        }


def _try(fn: Callable[[], T]) -> tuple[T | None, str | None]:
    try:
        return fn(), None
    except DataError as e:
        return None, str(e)


def estimate_all(
    counts: LabelCounts,
    *,
    weight: float = 0.5,
    delta: float = 0.05,
    alpha: float = 0.05,
    interval: IntervalKind = "score",
    design_effects: dict[str, float] | None = None,
) -> EstimateReport:
    """Compute every estimator and bound; ones the data cannot support (e.g. A_comp without
    complementary labels) are reported as unavailable with the reason instead of raising.

    ``interval`` picks the confidence interval ("score" or "wald"); ``design_effects`` maps an
    estimator name ("ord", "comp", "ivw", "mix", "ml") to the design effect of clustered labels
    (see :func:`cluster_design_effect`; missing names get 1). The deviation bounds assume
    independent labels and are not adjusted."""
    de = design_effects or {}
    kw: dict[str, Any] = {"alpha": alpha, "interval": interval}
    specs: list[tuple[str, str, Callable[[], AccuracyEstimate], Callable[[], DeviationBound] | None]] = [
        (
            "ord",
            "Ord",
            lambda: ordinary_accuracy(counts, design_effect=de.get("ord", 1.0), **kw),
            lambda: union_mixture_bound(counts, 1.0, delta),
        ),
        (
            "comp",
            "Comp",
            lambda: complementary_accuracy(counts, design_effect=de.get("comp", 1.0), **kw),
            lambda: complementary_bound(counts, delta),
        ),
        (
            "ivw",
            "IVW",
            lambda: ivw_accuracy(counts, design_effect=de.get("ivw", 1.0), **kw),
            lambda: union_mixture_bound(counts, None, delta),
        ),
        (
            "mix",
            f"IVW w={weight:g}",
            lambda: mixture_accuracy(counts, weight, design_effect=de.get("mix", 1.0), **kw),
            lambda: union_mixture_bound(counts, weight, delta),
        ),
        ("ml", "ML", lambda: ml_accuracy(counts, design_effect=de.get("ml", 1.0), **kw), None),
    ]
    rows = []
    for name, label, est_fn, bound_fn in specs:
        est, why = _try(est_fn)
        bound = None
        if est is not None and bound_fn is not None:
            bound, _ = _try(bound_fn)
        rows.append(EstimatorRow(name=name, label=label, estimate=est, bound=bound, unavailable=why))
    bounds: list[DeviationBound] = []
    errors: list[str] = []
    for fn in (
        lambda: complementary_bound(counts, delta),
        lambda: union_mixture_bound(counts, None, delta),
        lambda: union_mixture_bound(counts, weight, delta),
        lambda: bernstein_mixture_bound(counts, weight, delta),
        lambda: bernstein_ivw_bound(counts, delta),
    ):
        b, why = _try(fn)
        if b is not None:
            bounds.append(b)
        elif why is not None:
            errors.append(why)
    return EstimateReport(
        counts=counts,
        alpha=float(alpha),
        delta=float(delta),
        weight=float(weight),
        rows=tuple(rows),
        bounds=tuple(bounds),
        bound_errors=tuple(errors),
    )
