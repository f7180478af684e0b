"""Accuracy estimators from partitioned human supervision (seed 001: ordinary and complementary labels).

A system's top-1 accuracy A is estimated from ordinary labels ("the answer is k"), complementary
labels ("the answer is not k", k uniform over the wrong options), or both:

>>> from seerbench.estimators import LabelCounts, ivw_accuracy
>>> counts = LabelCounts(k=4, n_o=100, s_o=70, n_c=300, s_c=270)
>>> round(ivw_accuracy(counts).estimate, 4)
0.7

Every estimate carries a confidence interval: by default a score (Wilson-type) interval that keeps
its coverage near A = 0 and A = 1; ``interval="wald"`` gives the paper's plug-in interval.
:func:`clustered_accuracy` widens the variances for labels clustered by rater or item.

Functions are pure and take :class:`LabelCounts`; :func:`read_labels_csv` and
:meth:`LabelSet.counts` get counts from a ``labels.csv``. Bounds say whether they hold for a weight
estimated from the data (:class:`DeviationBound`).
"""

from seerbench.estimators._bounds import (
    DeviationBound,
    bernstein_ivw_bound,
    bernstein_mixture_bound,
    complementary_bound,
    union_mixture_bound,
)
from seerbench.estimators._clusters import cluster_design_effect, clustered_accuracy
from seerbench.estimators._core import (
    INTERVALS,
    AccuracyEstimate,
    IntervalKind,
    LabelCounts,
    complementary_accuracy,
    complementary_variance,
    ivw_accuracy,
    ivw_weight,
    log_likelihood,
    mixture_accuracy,
    ml_accuracy,
    ordinary_accuracy,
    raw_complementary_accuracy,
    z_value,
)
from seerbench.estimators._fitness import (
    ESTIMATORS,
    RankedSystem,
    Ranking,
    estimate_by_name,
    fitness,
    rank_systems,
)
from seerbench.estimators._labels import LabelSet, read_labels_csv, write_labels_csv
from seerbench.estimators._partition import Partition, option_index, partition_questions, read_predictions_csv
from seerbench.estimators._planning import (
    HalfWidthPlan,
    SamplePlan,
    complementary_labels_to_match,
    labels_for_half_width,
    plan_labels,
    variance_ratio,
)
from seerbench.estimators._power import (
    design_effect,
    power_at,
    questions_for_half_width,
    questions_for_power,
)
from seerbench.estimators._protocol import SimulatedPartition, expand_complementary, simulate_protocol
from seerbench.estimators._sequential import (
    ConfidenceSequence,
    confidence_sequence,
    hedged_log_capital,
    paired_sequence,
)
from seerbench.estimators._summary import EstimateReport, EstimatorRow, estimate_all

__all__ = [
    "ESTIMATORS",
    "INTERVALS",
    "AccuracyEstimate",
    "ConfidenceSequence",
    "DeviationBound",
    "EstimateReport",
    "EstimatorRow",
    "HalfWidthPlan",
    "IntervalKind",
    "LabelCounts",
    "LabelSet",
    "Partition",
    "RankedSystem",
    "Ranking",
    "SamplePlan",
    "SimulatedPartition",
    "bernstein_ivw_bound",
    "bernstein_mixture_bound",
    "cluster_design_effect",
    "clustered_accuracy",
    "complementary_accuracy",
    "complementary_bound",
    "complementary_labels_to_match",
    "complementary_variance",
    "confidence_sequence",
    "design_effect",
    "estimate_all",
    "estimate_by_name",
    "expand_complementary",
    "fitness",
    "hedged_log_capital",
    "ivw_accuracy",
    "ivw_weight",
    "labels_for_half_width",
    "log_likelihood",
    "mixture_accuracy",
    "ml_accuracy",
    "option_index",
    "ordinary_accuracy",
    "paired_sequence",
    "partition_questions",
    "plan_labels",
    "power_at",
    "questions_for_half_width",
    "questions_for_power",
    "rank_systems",
    "raw_complementary_accuracy",
    "read_labels_csv",
    "read_predictions_csv",
    "simulate_protocol",
    "union_mixture_bound",
    "variance_ratio",
    "write_labels_csv",
    "z_value",
]
