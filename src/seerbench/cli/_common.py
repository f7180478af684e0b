"""Helpers shared by CLI command modules."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def print_json(obj: Any) -> None:
    """Print ``obj`` as JSON on stdout (pydantic models and nested containers allowed)."""
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    print(json.dumps(obj, indent=2, default=_default, allow_nan=True))


def _default(o: Any) -> Any:
    if isinstance(o, BaseModel):
        return o.model_dump(mode="json")
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "__dict__"):
        return vars(o)
    raise TypeError(f"cannot serialise {type(o).__name__}")
