"""Datasets: loaders for the field's published formats, bundled generated datasets, the binary
view for two-answer protocols, the judging conditions of seed 004, and a replay agent for
human-written arguments.

>>> from seerbench.datasets import load_dataset, binary_view
>>> qs = binary_view(load_dataset("arithmetic", n=3, seed=0, k=4), seed=0)
>>> [q.k for q in qs]
[2, 2, 2]
"""

# register the critiques, factcheck and factcheck_files datasets
from seerbench.datasets import _critiques, _factcheck  # noqa: F401
from seerbench.datasets._arithmetic import generate_arithmetic
from seerbench.datasets._binary import binary_view
from seerbench.datasets._common import DuplicateQuestions, Questions, question_content_key
from seerbench.datasets._conditions import (
    CONDITIONS,
    JudgeMaterial,
    OptionMaterial,
    canonical_condition,
    judge_material,
    make_catch_trials,
)
from seerbench.datasets._generic import load_generic
from seerbench.datasets._gpqa import load_gpqa
from seerbench.datasets._gsm8k import load_gsm8k
from seerbench.datasets._medqa import load_medqa
from seerbench.datasets._mmlu import load_mmlu
from seerbench.datasets._mmlu_pro import load_mmlu_pro
from seerbench.datasets._native import read_questions_jsonl, write_questions_jsonl
from seerbench.datasets._quality import load_quality, quality_articles, strip_html
from seerbench.datasets._reading import generate_reading
from seerbench.datasets._registry import (
    DATASETS,
    DatasetInfo,
    get_dataset,
    iter_dataset,
    list_datasets,
    load_dataset,
    register_dataset,
)
from seerbench.datasets._replay import ReplayAgent
from seerbench.datasets._single_turn_debate import load_single_turn_debate
from seerbench.datasets._truthfulqa import load_truthfulqa
from seerbench.quotes import verify_quote

__all__ = [
    "CONDITIONS",
    "DATASETS",
    "DatasetInfo",
    "DuplicateQuestions",
    "JudgeMaterial",
    "OptionMaterial",
    "Questions",
    "ReplayAgent",
    "binary_view",
    "canonical_condition",
    "generate_arithmetic",
    "generate_reading",
    "get_dataset",
    "iter_dataset",
    "judge_material",
    "list_datasets",
    "load_dataset",
    "load_generic",
    "load_gpqa",
    "load_gsm8k",
    "load_medqa",
    "load_mmlu",
    "load_mmlu_pro",
    "load_quality",
    "load_single_turn_debate",
    "load_truthfulqa",
    "make_catch_trials",
    "quality_articles",
    "question_content_key",
    "read_questions_jsonl",
    "register_dataset",
    "strip_html",
    "verify_quote",
    "write_questions_jsonl",
]
