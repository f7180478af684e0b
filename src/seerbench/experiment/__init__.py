"""Experiment grids: judge models x agent models x tool sets x protocols x protocol keywords, run
over a dataset, resumable, with results files laid out as in seed 003::

    out/experiment.json                                  config, fingerprint, library version
    out/<protocol config>/<agent-judge config>/results.jsonl
    out/<protocol config>/<agent-judge config>/stats.json
    out/all_stats.json
    out/usage.json                                       model usage and cost, summed over the runs into the folder

``results.jsonl`` is append-only while running (one complete line per question, written with a
single ``write``), so a run killed at any moment loses at most the questions in flight; a rerun
drops a torn last line, skips finished questions and, at the end, rewrites the file in dataset
order, so an interrupted-and-resumed run ends with the same file as an uninterrupted one. The
questions run in this process (:class:`LocalExecutor`) or as Ray tasks on a cluster
(:class:`RayExecutor`); the driver writes the files either way, and they come out the same.
"""

from seerbench.experiment._config import (
    NOT_IN_FINGERPRINT,
    REPLAY,
    ElicitationSpec,
    ExperimentConfig,
    GenerationSpec,
    ProtocolSpec,
    explain,
)
from seerbench.experiment._executor import Executor, LocalExecutor
from seerbench.experiment._ray import RayExecutor
from seerbench.experiment._runner import CellPlan, Experiment, ModelFactory, RunResult, RunSpec

__all__ = [
    "NOT_IN_FINGERPRINT",
    "REPLAY",
    "CellPlan",
    "ElicitationSpec",
    "Executor",
    "Experiment",
    "ExperimentConfig",
    "GenerationSpec",
    "LocalExecutor",
    "ModelFactory",
    "ProtocolSpec",
    "RayExecutor",
    "RunResult",
    "RunSpec",
    "explain",
]
