"""seerbench: measure scalable-oversight protocols (debate, consultancy, judges) by agent score
difference and judge accuracy, with human studies and complementary-label estimators.

What a user composes with is importable from here (loaded on first use, so ``import seerbench``
stays cheap)::

    from seerbench import OversightProtocol, register_protocol, AgentContext, CaseRun, Experiment

See docs/extending.md for complete examples of a new protocol, judge, agent, backend and dataset.
"""

# ruff: noqa: F401  (the TYPE_CHECKING imports below are re-exports; __all__ names them through _LAZY)
from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from seerbench._version import __version__

#: Public name -> the module that defines it.
_LAZY: dict[str, str] = {
    # records (pydantic: not imported by `seerbench --version`)
    "AnswerCase": "seerbench.types",
    "Question": "seerbench.types",
    "Quote": "seerbench.types",
    "Transcript": "seerbench.types",
    "Turn": "seerbench.types",
    "Verdict": "seerbench.types",
    # protocols
    "OversightProtocol": "seerbench.protocols",
    "register_protocol": "seerbench.protocols",
    "get_protocol": "seerbench.protocols",
    "PROTOCOLS": "seerbench.protocols",
    "CaseRun": "seerbench.records",
    "QuestionRun": "seerbench.records",
    "stable_coin": "seerbench.protocols",
    "swap_options": "seerbench.protocols",
    # agents and judges
    "Agent": "seerbench.agents",
    "AgentContext": "seerbench.agents",
    "BeliefAgent": "seerbench.agents",
    "ModelAgent": "seerbench.agents",
    "BestOfNAgent": "seerbench.agents",
    "register_agent": "seerbench.agents",
    "capabilities": "seerbench.agents",
    "check_quotes": "seerbench.agents",
    "Judge": "seerbench.judges",
    "ModelJudge": "seerbench.judges",
    "TrustJudge": "seerbench.judges",
    "QuestioningJudge": "seerbench.judges",
    "register_judge": "seerbench.judges",
    # models
    "Model": "seerbench.models",
    "get_model": "seerbench.models",
    "Backend": "seerbench.models",
    "register_backend": "seerbench.models",
    "register_scripted": "seerbench.models",
    "ChatMessage": "seerbench.models",
    "GenerateConfig": "seerbench.models",
    "Sample": "seerbench.models",
    "Usage": "seerbench.models",
    "ElicitConfig": "seerbench.models",
    "elicit": "seerbench.models",
    # datasets
    "load_dataset": "seerbench.datasets",
    "register_dataset": "seerbench.datasets",
    "binary_view": "seerbench.datasets",
    # experiments and their results
    "Experiment": "seerbench.experiment",
    "ExperimentConfig": "seerbench.experiment",
    "RunFolder": "seerbench.runs",
    "read_results": "seerbench.runs",
    "summarize_run": "seerbench.analysis.run",
    "rescore": "seerbench.results",
    "run_stats": "seerbench.results",
    "ResultLine": "seerbench.schema",
    "iter_result_lines": "seerbench.schema",
    "scores": "seerbench.metrics",
    "question_scores": "seerbench.metrics",
    # plugins
    "load_plugin": "seerbench.plugins",
    "Registry": "seerbench.plugins",
    "UnknownNameError": "seerbench.errors",
    # tools
    "Tool": "seerbench.tools",
    "register_tool": "seerbench.tools",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'seerbench' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


if TYPE_CHECKING:  # what static checkers see for the lazy names (listed in __all__ through _LAZY)
    from seerbench.agents import (
        Agent,
        AgentContext,
        BeliefAgent,
        BestOfNAgent,
        ModelAgent,
        capabilities,
        check_quotes,
        register_agent,
    )
    from seerbench.analysis.run import summarize_run
    from seerbench.datasets import binary_view, load_dataset, register_dataset
    from seerbench.errors import UnknownNameError
    from seerbench.experiment import Experiment, ExperimentConfig
    from seerbench.judges import Judge, ModelJudge, QuestioningJudge, TrustJudge, register_judge
    from seerbench.metrics import question_scores, scores
    from seerbench.models import (
        Backend,
        ChatMessage,
        ElicitConfig,
        GenerateConfig,
        Model,
        Sample,
        Usage,
        elicit,
        get_model,
        register_backend,
        register_scripted,
    )
    from seerbench.plugins import Registry, load_plugin
    from seerbench.protocols import (
        PROTOCOLS,
        OversightProtocol,
        get_protocol,
        register_protocol,
        stable_coin,
        swap_options,
    )
    from seerbench.records import CaseRun, QuestionRun
    from seerbench.results import rescore, run_stats
    from seerbench.runs import RunFolder, read_results
    from seerbench.schema import ResultLine, iter_result_lines
    from seerbench.tools import Tool, register_tool
    from seerbench.types import AnswerCase, Question, Quote, Transcript, Turn, Verdict

__all__ = ["__version__", *sorted(_LAZY)]
