"""The config of ``seerbench critique`` (its own module: the generator and the assessment
both read it)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from seerbench._resume import config_path, content_id
from seerbench.config import explain_validation, read_yaml_mapping
from seerbench.critique._answers import FLAW_KINDS
from seerbench.critique._dedup import DEFAULT_THRESHOLD
from seerbench.errors import ConfigError
from seerbench.models import ElicitationSpec
from seerbench.plugins import load_plugins

__all__ = ["DEFAULT_TEMPERATURES", "CritiqueConfig", "Flaw", "Kind"]

DEFAULT_TEMPERATURES = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 1.0)
Kind = Literal["model", "reference", "misleading"]
Flaw = Literal["number", "entity", "omission"]
_KINDS: tuple[Kind, ...] = ("model", "reference", "misleading")
_FLAWS: tuple[Flaw, ...] = ("number", "entity", "omission")
assert _FLAWS == FLAW_KINDS


class CritiqueConfig(BaseModel):
    """What ``seerbench critique`` reads (see examples/critique.yaml and docs/critique.md)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="critique", min_length=1)
    out: str = Field(
        default="runs/critique", min_length=1, description="Run folder (relative to the config)."
    )
    plugins: list[str] = Field(
        default_factory=list,
        description="Modules or .py files (relative to the config) that register backends or datasets.",
    )
    model: str = Field(default="local", min_length=1, description="The critic (and answerer) model spec.")
    answer_model: str | None = Field(
        default=None, description="Model that writes `model` answers (default: model)."
    )
    helpfulness_model: str | None = Field(
        default=None, description="Model that scores helpfulness (default: model)."
    )
    validate_intended: bool = Field(
        default=True, description="Misleading answers: P(each critique covers the intended flaw)."
    )
    validation_model: str | None = Field(
        default=None, description="Model that checks intended flaws (default: model)."
    )
    refine: bool = Field(
        default=True, description="Critique-conditional vs direct refinement (answers with ground truth)."
    )
    refine_model: str | None = Field(
        default=None, description="Model that rewrites answers (default: model)."
    )
    dataset: dict[str, Any] | None = Field(default=None, description="name + options: questions to answer.")
    answers: str | None = Field(
        default=None, description="JSONL of user-supplied answers (relative to the config)."
    )
    kinds: list[Kind] = Field(default_factory=lambda: list(_KINDS))
    flaws: list[Flaw] = Field(default_factory=lambda: list(_FLAWS))
    temperatures: list[float] = Field(default_factory=lambda: list(DEFAULT_TEMPERATURES))
    dedup_threshold: float = Field(default=DEFAULT_THRESHOLD, gt=0, le=100)
    max_tokens: int = Field(default=160, ge=8)
    elicitation: ElicitationSpec = ElicitationSpec()
    seed: int = 0
    limit: int | None = Field(default=None, ge=1, description="Only the first N questions (or answers).")
    concurrency: int = Field(default=8, ge=1, description="Answers in flight at once.")

    @field_validator("temperatures")
    @classmethod
    def _temps(cls, v: list[float]) -> list[float]:
        if not v:
            raise ValueError("give at least one temperature")
        if any(not 0 <= t <= 2 for t in v):
            raise ValueError("temperatures must lie in [0, 2]")
        if len(set(v)) != len(v):
            raise ValueError("temperatures repeat")
        return v

    @model_validator(mode="after")
    def _source(self) -> CritiqueConfig:
        if (self.dataset is None) == (self.answers is None):
            raise ValueError(
                "give exactly one of `dataset` (questions to answer) and `answers` (a JSONL of answers)"
            )
        if self.dataset is not None and not isinstance(self.dataset.get("name"), str):
            raise ValueError("dataset needs a name (e.g. {name: reading, n: 20})")
        if not self.kinds or len(set(self.kinds)) != len(self.kinds):
            raise ValueError("kinds must be a non-empty list of model, reference, misleading without repeats")
        if not self.flaws:
            raise ValueError("flaws must name at least one of number, entity, omission")
        return self

    @classmethod
    def from_yaml(cls, path: str | Path) -> CritiqueConfig:
        p = Path(path)
        data = read_yaml_mapping(p, "critique config")
        load_plugins(data.get("plugins"), p.parent)  # first: they register what the config names
        cfg = cls.parse(data, str(p))
        # paths in the config are read from its folder: out, answers, a dataset file
        updates: dict[str, Any] = {"out": config_path(p.parent, cfg.out)}
        if cfg.answers is not None:
            updates["answers"] = config_path(p.parent, cfg.answers)
        if cfg.dataset is not None and isinstance(cfg.dataset.get("path"), str):
            updates["dataset"] = {**cfg.dataset, "path": config_path(p.parent, cfg.dataset["path"])}
        return cfg.model_copy(update=updates)

    @classmethod
    def parse(
        cls, data: dict[str, Any], where: str = "(dict)", *, flags: Mapping[str, str] | None = None
    ) -> CritiqueConfig:
        """``data`` validated (one line); ``flags``: the command-line flag that set each of these
        keys, named in place of the config file where its value is refused."""
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise ConfigError(
                explain_validation(
                    e, f"critique config {where}", model=cls, docs="docs/critique.md", flags=flags
                )
            ) from None

    def fingerprint(self) -> str:
        """What decides the critiques (not where they go, how many, or how many at once; input
        files by their content, not their path)."""
        keep = self.model_dump(exclude={"out", "concurrency", "limit", "name", "plugins"})
        if keep.get("answers") is not None:
            keep["answers"] = content_id(keep["answers"])
        if isinstance((keep.get("dataset") or {}).get("path"), str):
            keep["dataset"] = {**keep["dataset"], "path": content_id(keep["dataset"]["path"])}
        return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]
