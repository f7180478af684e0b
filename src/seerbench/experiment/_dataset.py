"""The questions of an experiment: its dataset (a registered name, or a file read from the config's
folder) through the seeded binary view."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from seerbench.errors import ConfigError
from seerbench.experiment._config import _PATH_KEYS, NO_DATASET_NAME, ExperimentConfig, dataset_file
from seerbench.experiment._questions import QuestionStore
from seerbench.types import Question


def dataset_ref(config: ExperimentConfig, ref: str) -> str:
    """A dataset's name as it is; a file relative to the config's folder. A word that is neither
    (a misspelt name) stays as written, to be refused as an unknown dataset."""
    from seerbench.datasets import list_datasets

    if ref in {d.name for d in list_datasets()}:
        return ref
    path = dataset_file(ref, config._base_dir)
    return str(path) if path is not None else ref


def load_dataset(config: ExperimentConfig) -> Iterable[Question]:
    """The config's dataset, one question at a time where the loader can."""
    from seerbench.datasets import iter_dataset

    ds = config.dataset
    if isinstance(ds, str):
        return iter_dataset(dataset_ref(config, ds))
    opts = dict(ds)
    name = opts.pop("name", None) or opts.pop("path", None)
    if name is None:
        raise ConfigError(f"dataset: {NO_DATASET_NAME}")
    for k in _PATH_KEYS:
        if isinstance(opts.get(k), str):
            opts[k] = str(config.resolve(opts[k]))
    return iter_dataset(dataset_ref(config, name), **opts)


def load_questions(config: ExperimentConfig, questions: Sequence[Question] | None = None) -> QuestionStore:
    """The run's questions (``questions`` instead of the config's dataset when given): those with
    exactly one true option, each through the seeded binary view, the first ``limit``."""
    qs = questions if questions is not None else load_dataset(config)
    return QuestionStore.build(qs, binary_seed=config.binary_seed, limit=config.limit)


__all__ = ["dataset_ref", "load_dataset", "load_questions"]
