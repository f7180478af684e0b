"""The factcheck sets (seed 000) in the dataset registry, as binary questions (the corpus and
the rater live in :mod:`seerbench.factcheck`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from seerbench.datasets._registry import register_dataset
from seerbench.types import Question

if TYPE_CHECKING:
    from seerbench.factcheck import Page


@register_dataset(
    "factcheck",
    kind="generated",
    description=(
        "fictional-entity sentences to fact-check (accurate / inaccurate "
        "/ unsupported / disputed) with an offline FTS5 corpus (seed 000)"
    ),
)
def factcheck(
    entities: int = 300, per_entity: int = 8, seed: int = 0, n: int | None = None
) -> list[Question]:
    from seerbench.factcheck import generate_factcheck, item_question

    fc = generate_factcheck(entities, per_entity, seed, n)
    by_entity: dict[str, list[Page]] = {}
    for p in fc.pages:
        by_entity.setdefault(p.entity_id, []).append(p)
    return [item_question(it, by_entity.get(it.entity_id or "", [])) for it in fc.items]


@register_dataset(
    "factcheck_files",
    kind="format",
    description=(
        "your sentences (id, sentence, label) and corpus (id, "
        "text, title, url, updated) for the AI rater, JSONL or CSV"
    ),
)
def factcheck_files(path: str, corpus: str, n: int | None = None) -> list[Question]:
    from seerbench.factcheck import item_question, load_factcheck_files

    return [item_question(it) for it in load_factcheck_files(path, corpus, n).items]
