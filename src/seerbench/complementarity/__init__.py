"""Human-AI complementarity (seed 000): confidence-based hybridization of an AI rater with human
raters, reliance on AI assistance, calibration and the seed's mixed-effects model, with cluster
bootstrap intervals over human judgments, and simulated raters for planning.

Typical use::

    from seerbench.complementarity import analyze, read_ai_ratings
    from seerbench.study import load_human_rows              # the study app's rows
    rows, unassisted = load_human_rows("fc.sqlite")          # or an export .csv / .jsonl
    report = analyze(read_ai_ratings("runs/factcheck"), rows, unassisted=unassisted)

Pure functions returning pydantic result objects; see ``docs/complementarity.md``.
"""

from seerbench.complementarity._calibration import (
    HUMAN_CONFIDENCE_PROBABILITY,
    Calibration,
    add_judge_forecasts,
    calibration,
    human_calibration,
    judge_calibration,
    judge_forecasts,
    judged_cases,
)
from seerbench.complementarity._data import AIItems, HumanData, ai_items, human_data
from seerbench.complementarity._hybrid import (
    DEFAULT_THRESHOLDS,
    CrossValidated,
    Estimate,
    HybridSweep,
    ThresholdRow,
    cross_validate_threshold,
    hybrid_sweep,
)
from seerbench.complementarity._mixed import (
    EXTRA_HINT,
    Coefficient,
    MixedEffects,
    gpboost_available,
    mixed_effects,
)
from seerbench.complementarity._reliance import ConditionReliance, Reliance, reliance
from seerbench.complementarity._report import ComplementarityReport, analyze
from seerbench.complementarity._simulate import (
    expected_unassisted_accuracy,
    simulate_ai_ratings,
    simulate_judgments,
)
from seerbench.records import AIRating, binarize, rating_correct, read_ai_ratings, write_ai_ratings
from seerbench.stats import (
    ClusterBootstrap,
    Interval,
    cluster_group_means,
    cluster_mean_interval,
    difference_interval,
    proportion_interval,
    wilson,
)

__all__ = [
    "DEFAULT_THRESHOLDS",
    "EXTRA_HINT",
    "HUMAN_CONFIDENCE_PROBABILITY",
    "AIItems",
    "AIRating",
    "Calibration",
    "ClusterBootstrap",
    "Coefficient",
    "ComplementarityReport",
    "ConditionReliance",
    "CrossValidated",
    "Estimate",
    "HumanData",
    "HybridSweep",
    "Interval",
    "MixedEffects",
    "Reliance",
    "ThresholdRow",
    "add_judge_forecasts",
    "ai_items",
    "analyze",
    "binarize",
    "calibration",
    "cluster_group_means",
    "cluster_mean_interval",
    "cross_validate_threshold",
    "difference_interval",
    "expected_unassisted_accuracy",
    "gpboost_available",
    "human_calibration",
    "human_data",
    "hybrid_sweep",
    "judge_calibration",
    "judge_forecasts",
    "judged_cases",
    "mixed_effects",
    "proportion_interval",
    "rating_correct",
    "read_ai_ratings",
    "reliance",
    "simulate_ai_ratings",
    "simulate_judgments",
    "wilson",
    "write_ai_ratings",
]
