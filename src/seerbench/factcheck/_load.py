"""One way in to factcheck data, by dataset name and options, as sets or as seerbench questions."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from seerbench.errors import ConfigError, unknown_options
from seerbench.factcheck._files import load_factcheck_files
from seerbench.factcheck._generate import FactcheckSet, FactItem, Page, generate_factcheck
from seerbench.plugins import Registry
from seerbench.types import AnswerCase, Question

#: Dataset names a factcheck set can be loaded by, and their loaders (register another with
#: ``FACTCHECK_DATASETS.register("name")``).
FACTCHECK_DATASETS: Registry[Callable[..., FactcheckSet]] = Registry(
    "factcheck dataset", {"factcheck": generate_factcheck, "factcheck_files": load_factcheck_files}
)


def load_factcheck(name: str = "factcheck", **options: Any) -> FactcheckSet:
    """The set called ``name`` with its options: ``factcheck`` (generated: entities, per_entity,
    seed, n) or ``factcheck_files`` (your files: path, corpus, n)."""
    loader = FACTCHECK_DATASETS.lookup(name)
    params = inspect.signature(loader).parameters
    unknown = sorted(set(options) - set(params))
    if unknown:
        raise unknown_options(f"dataset {name!r}", unknown, params)
    missing = [k for k, p in params.items() if p.default is inspect.Parameter.empty and k not in options]
    if missing:
        raise ConfigError(f"dataset {name!r} needs {', '.join(missing)}=...")
    return loader(**options)


def item_question(item: FactItem, pages: Sequence[Page] = ()) -> Question:
    """A sentence as a binary seerbench question, as the study's factuality task takes it: options
    ``accurate`` and ``inaccurate`` (seed 000's binarisation: unsupported and disputed count as
    inaccurate); the four-way label and the claims are kept in the metadata. ``pages`` (e.g. the
    entity's pages) become the hidden source text, for protocols whose agents read it."""
    acc = item.label == "accurate"
    meta: dict[str, Any] = {"label": item.label}
    if item.claims:
        meta["claims"] = [{"attribute": c.attribute, "value": c.value, "label": c.label} for c in item.claims]
    if item.entity_id:
        meta["entity_id"] = item.entity_id
    source = "\n\n".join(f"[{p.id}] {p.title} (updated {p.updated})\n{p.text}" for p in pages) or None
    return Question(
        id=item.id,
        text=item.sentence,
        source_text=source,
        answer_cases=[
            AnswerCase(short="accurate", long="Accurate", value=1.0 if acc else 0.0),
            AnswerCase(
                short="inaccurate",
                long="Not accurate (inaccurate, unsupported or disputed)",
                value=0.0 if acc else 1.0,
            ),
        ],
        metadata=meta,
    )
