"""Fact verification (seed 000): the generated ``factcheck`` set (a fictional knowledge base, a
corpus written from it, sentences labelled by construction), user files, offline FTS5 search, and
the AI rater (claims, searches, verbatim evidence, per-claim judgments; N samples, format verifier,
majority rating and confidence).

>>> from seerbench.factcheck import generate_factcheck, CorpusIndex
>>> fc = generate_factcheck(entities=30, seed=0)
>>> hits = CorpusIndex(fc.pages).search(fc.items[0].sentence, k=3)
>>> len(hits)
3
"""

from seerbench.factcheck import _scripted  # noqa: F401  (registers the model spec scripted:factcheck)
from seerbench.factcheck._files import load_factcheck_files, read_corpus, read_sentences
from seerbench.factcheck._generate import (
    LABELS,
    STATUSES,
    TEMPLATES,
    Attribute,
    Claim,
    Entity,
    FactcheckSet,
    FactItem,
    Page,
    claim_label,
    fact_sentence,
    generate_factcheck,
    generate_kb,
    sentence_label,
)
from seerbench.factcheck._load import FACTCHECK_DATASETS, item_question, load_factcheck
from seerbench.factcheck._rater import (
    REJECTIONS,
    TIE_ORDER,
    RaterConfig,
    RateResult,
    SampleCheck,
    aggregate,
    build_trace,
    confidence_level,
    rate,
    rate_item,
    verify_sample,
)
from seerbench.factcheck._search import CorpusIndex, SearchResult, format_results, fts_query, search_tool
from seerbench.factcheck._study import (
    assistance_condition,
    assistance_parts,
    rating_question,
    rating_questions,
)

__all__ = [
    "FACTCHECK_DATASETS",
    "LABELS",
    "REJECTIONS",
    "STATUSES",
    "TEMPLATES",
    "TIE_ORDER",
    "Attribute",
    "Claim",
    "CorpusIndex",
    "Entity",
    "FactItem",
    "FactcheckSet",
    "Page",
    "RateResult",
    "RaterConfig",
    "SampleCheck",
    "SearchResult",
    "aggregate",
    "assistance_condition",
    "assistance_parts",
    "build_trace",
    "claim_label",
    "confidence_level",
    "fact_sentence",
    "format_results",
    "fts_query",
    "generate_factcheck",
    "generate_kb",
    "item_question",
    "load_factcheck",
    "load_factcheck_files",
    "rate",
    "rate_item",
    "rating_question",
    "rating_questions",
    "read_corpus",
    "read_sentences",
    "search_tool",
    "sentence_label",
    "verify_sample",
]
