"""A cell's identity: everything that decides its results line for a given question. Two runs of a
cell with the same identity may share a results file; ``cell.json`` records it and its hash."""

from __future__ import annotations

from typing import Any

from seerbench.experiment._components import entry_code, init_hints, keyword_code
from seerbench.experiment._config import REPLAY, ExperimentConfig
from seerbench.experiment._grid import RunSpec
from seerbench.prompts import template_hashes
from seerbench.protocols import PROTOCOLS
from seerbench.provenance import code_files


def prompt_hashes(config: ExperimentConfig) -> dict[str, str]:
    """Hash of each prompt template the config's cells read (its ``prompts_dir`` or the defaults)."""
    return template_hashes(config.resolved_prompts_dir())


def cell_identity(
    config: ExperimentConfig, spec: RunSpec, models: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Everything that decides a cell's results line for a given question. (The question itself is
    checked per line.) The one place a cell's identity is computed: what it holds goes into
    ``cell.json`` and decides whether a folder can be resumed. ``models``: model spec ->
    :attr:`~seerbench.models.Model.provenance` of every model the cell is built with (backend,
    version, file hash, code), the values its cache keys hold too."""
    c = config
    cls = PROTOCOLS[spec.protocol]
    base = c._base_dir
    ident: dict[str, Any] = {
        "protocol": spec.protocol,
        # a protocol's own model (e.g. a referee) is here as its spec, its judges as their entries
        "keywords": {"both_orders": c.both_orders, **spec.kwargs},
        "judge": spec.judge_model if spec.judge_entry is None else spec.judge_entry,
        "seed": c.seed,
        "binary_seed": c.binary_seed,
        "eps": c.eps,
        "parse_failures": c.parse_failures,
        "prompts": prompt_hashes(c),
    }
    code = {}
    files = code_files(cls)
    if files:  # a user's protocol: its source (and the user modules it imports) decide the results
        code[f"{cls.__module__}:{cls.__name__}"] = files
    code.update(keyword_code(spec.kwargs, init_hints(cls), base))  # judges/agents among its keywords
    if spec.judge_entry is not None:
        ident["elicitation"] = c.elicitation.model_dump(mode="json")
        code.update(entry_code(spec.judge_entry, "judge", base))
    if cls.needs_agent:
        ident.update(agent=spec.agent_entry, tools=list(spec.tools), best_of_n=spec.best_of_n)
        if spec.agent_entry != REPLAY:
            ident["agent_generation"] = c.agent_generation.model_dump(mode="json")
        if spec.agent_entry is not None:
            code.update(entry_code(spec.agent_entry, "agent", base))
    if spec.adversary is not None:  # cross-play only: self-play cells keep their identity
        ident["adversary"] = spec.adversary.identity()
        code.update(entry_code(spec.adversary.agent, "agent", base))
    if code:
        ident["code"] = code
    ident["models"] = models
    if c.cache_scope:
        ident["cache_scope"] = c.cache_scope
    return ident


__all__ = ["cell_identity", "prompt_hashes"]
