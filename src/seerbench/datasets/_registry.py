"""The dataset registry: every loader and bundled generator under one name."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from seerbench.datasets._arithmetic import generate_arithmetic, iter_arithmetic
from seerbench.datasets._common import Questions
from seerbench.datasets._generic import load_generic
from seerbench.datasets._gpqa import load_gpqa
from seerbench.datasets._gsm8k import load_gsm8k
from seerbench.datasets._medqa import load_medqa
from seerbench.datasets._mmlu import load_mmlu
from seerbench.datasets._mmlu_pro import load_mmlu_pro
from seerbench.datasets._native import read_questions_jsonl
from seerbench.datasets._quality import load_quality
from seerbench.datasets._reading import generate_reading
from seerbench.datasets._single_turn_debate import load_single_turn_debate
from seerbench.datasets._truthfulqa import load_truthfulqa
from seerbench.errors import ConfigError, unknown_options
from seerbench.plugins import Registry, definition_key
from seerbench.types import Question


@dataclass(frozen=True)
class DatasetInfo:
    """A registered dataset: its name, kind ('generated', 'format' or 'native'), a one-line
    description and the loader called with the user's options."""

    name: str
    kind: str
    description: str
    loader: Callable[..., Questions]
    #: The same questions one at a time, for a dataset that can make them so (see iter_dataset).
    stream: Callable[..., Iterable[Question]] | None = None

    @property
    def options(self) -> list[str]:
        """The option names the loader accepts (``path`` first where there is one)."""
        return list(inspect.signature(self.loader).parameters)


#: Every dataset by name: the bundled ones, then those plugins register.
DATASETS: Registry[DatasetInfo] = Registry(
    "dataset",
    {
        d.name: d
        for d in [
            DatasetInfo(
                "arithmetic",
                "generated",
                "multi-step word problems; the distractor is a classic slip (reasoning gap)",
                generate_arithmetic,
                iter_arithmetic,
            ),
            DatasetInfo(
                "reading",
                "generated",
                "questions on a generated passage only agents see, needing 1 or 2 facts (information gap)",
                generate_reading,
            ),
            DatasetInfo(
                "quality",
                "format",
                "QuALITY long-article reading comprehension; article is the hidden source text",
                load_quality,
            ),
            DatasetInfo(
                "single_turn_debate",
                "format",
                "single_turn_debate human arguments + snippets for both options (seed 004)",
                load_single_turn_debate,
            ),
            DatasetInfo("gpqa", "format", "GPQA graduate-level science, 4 options (CSV or hub)", load_gpqa),
            DatasetInfo(
                "mmlu", "format", "MMLU, 4 options in 57 subjects (original CSV, JSONL or hub)", load_mmlu
            ),
            DatasetInfo(
                "mmlu_pro", "format", "MMLU-Pro, up to 10 options (JSON/JSONL or hub)", load_mmlu_pro
            ),
            DatasetInfo(
                "gsm8k",
                "format",
                "GSM8K maths with numeric answers; wrong answers supplied or generated (JSONL or hub)",
                load_gsm8k,
            ),
            DatasetInfo(
                "truthfulqa",
                "format",
                "TruthfulQA multiple choice, MC1 targets (mc_task.json, JSONL or hub)",
                load_truthfulqa,
            ),
            DatasetInfo("medqa", "format", "MedQA USMLE questions (JSONL or hub)", load_medqa),
            DatasetInfo(
                "generic",
                "format",
                "your own multiple-choice data in the documented JSONL or CSV schema",
                load_generic,
            ),
            DatasetInfo(
                "seerbench",
                "native",
                "seerbench's own format: one JSON Question per line",
                read_questions_jsonl,
            ),
        ]
    },
    definition=lambda d: definition_key(getattr(d.loader, "__wrapped__", d.loader)),
)


#: A dataset loader, returned by :func:`register_dataset` as it was given (its own type kept).
_Loader = TypeVar("_Loader", bound=Callable[..., Iterable[Question]])


def register_dataset(
    name: str, *, kind: str = "user", description: str | None = None, replace: bool = False
) -> Callable[[_Loader], _Loader]:
    """Decorator: make a loader usable as ``dataset: {name: <name>, <its keyword options>}`` in
    configs and by :func:`load_dataset`. The loader returns a list of :class:`Question` (or any
    iterable of them); its keyword parameters are the dataset's options. Example::

        @register_dataset("capitals", description="capital cities, two options each")
        def capitals(n: int = 10) -> list[Question]:
            ...
    """

    def deco(loader: _Loader) -> _Loader:
        doc = description or (inspect.getdoc(loader) or name).splitlines()[0]

        @functools.wraps(loader)
        def load(*args: Any, **kwargs: Any) -> Questions:
            out = loader(*args, **kwargs)
            return out if isinstance(out, Questions) else Questions(out)

        DATASETS.add(name, DatasetInfo(name, kind, doc, load), replace=replace)
        return loader

    return deco


def list_datasets() -> list[DatasetInfo]:
    """Every registered dataset, generated ones first (installed plugins' included)."""
    return [DATASETS[n] for n in DATASETS.names()]


def get_dataset(name: str) -> DatasetInfo:
    """The registered dataset called ``name``; :class:`UnknownNameError` with the closest name
    and the list otherwise."""
    return DATASETS.lookup(name)


def load_dataset(name_or_path: str | Path, **options: Any) -> Questions:
    """Load questions by registered name with its options, e.g.
    ``load_dataset("arithmetic", n=50, seed=1, k=2)`` or
    ``load_dataset("quality", path="QuALITY.v1.0.1.htmlstripped.dev")``; or pass the path of a
    seerbench JSONL file. Unknown names and options raise :class:`ConfigError`; bad data raises
    :class:`DataError` (unless ``lenient=True`` for file formats, which counts skips in
    ``.skipped``)."""
    name = str(name_or_path)
    if name not in DATASETS:
        p = Path(name)
        if p.suffix.lower() == ".jsonl" or p.is_file():
            return read_questions_jsonl(p, **options)
    info = get_dataset(name)
    _check_options(info, options)
    return info.loader(**options)


def iter_dataset(name_or_path: str | Path, **options: Any) -> Iterable[Question]:
    """The questions of :func:`load_dataset` with the same arguments and errors, made one at a
    time where the dataset can (the generated ``arithmetic`` set), else loaded as a list: the
    experiment runner reads datasets through this, so a 10^5-question run does not hold them
    all in memory."""
    info = DATASETS.get(str(name_or_path))
    if info is None or info.stream is None:
        return load_dataset(name_or_path, **options)
    _check_options(info, options)
    return info.stream(**options)


def _check_options(info: DatasetInfo, options: dict[str, Any]) -> None:
    name = info.name
    accepted = info.options
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise unknown_options(f"dataset {name!r}", unknown, accepted)
    sig = inspect.signature(info.loader)
    if (
        "path" in sig.parameters
        and sig.parameters["path"].default is inspect.Parameter.empty
        and "path" not in options
    ):
        raise ConfigError(f"dataset {name!r} reads a local file: pass path=...")
