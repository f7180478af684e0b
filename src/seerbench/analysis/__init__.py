"""Statistics over per-question values: means, standard errors, seeded bootstrap CIs, paired
differences, the optimization-pressure analysis across best-of-N cells, and Elo ratings of
debaters from cross-play tournaments (:func:`fit_elo`). The statistics are
pure functions; :func:`optimization_pressure` reads a run folder, and so does
:func:`seerbench.analysis.run.summarize_run` (its own module: ``seerbench.results`` still takes
its intervals from this package until they move to ``seerbench.stats``)."""

from seerbench.analysis._elo import DebaterRating, EloResult, Match, fit_elo, win_rates
from seerbench.analysis._pressure import (
    PressureGroup,
    PressurePoint,
    PressureResult,
    PressureStep,
    Slope,
    optimization_pressure,
    pressure_from_values,
    pressure_section,
)
from seerbench.stats import Summary, paired_difference, summarize, summarize_many

__all__ = [
    "DebaterRating",
    "EloResult",
    "Match",
    "PressureGroup",
    "PressurePoint",
    "PressureResult",
    "PressureStep",
    "Slope",
    "Summary",
    "fit_elo",
    "optimization_pressure",
    "paired_difference",
    "pressure_from_values",
    "pressure_section",
    "summarize",
    "summarize_many",
    "win_rates",
]
