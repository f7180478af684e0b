"""The HTML building blocks of the report (escaping, numbers, tables, sections, figures), shared by
the run report and the analyses' sections."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from seerbench._format import num as fmt
from seerbench.runs import json_safe

__all__ = ["esc", "fig", "num", "script_json", "section", "table"]


def esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def script_json(obj: Any) -> str:
    """JSON safe inside a ``<script>`` element: ``<``, ``>`` and ``&`` (so ``</script>`` and
    ``<!--``) written as ``\\u`` escapes, which JSON.parse reads back as the same characters."""
    try:  # results are finite almost always: json_safe's walk over 60,000 rows only when needed
        text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError:
        text = json.dumps(json_safe(obj), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def num(x: Any, key: str = "") -> str:
    """A numeric table cell: the number as the shared formatter shows it (three decimals, ``n/a``
    when missing, never ``-0.000``), the exact value in ``data-v`` (null where JSON has none)."""
    exact = repr(x) if isinstance(x, int) else repr(float(x)) if _finite(x) else "null"
    return f'<td class="n" data-k="{esc(key)}" data-v="{exact}">{esc(fmt(x))}</td>'


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def table(head: Sequence[str], rows: Iterable[str], *, cls: str = "") -> str:
    return (
        f'<table class="{cls}"><thead><tr>'
        + "".join(f"<th>{esc(h)}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def section(sid: str, title: str, how: str, body: str) -> str:
    return f'<section id="{esc(sid)}"><h2>{esc(title)}</h2><p class="how">{how}</p>{body}</section>'


def fig(svg: str, name: str) -> str:
    return f'<div class="fig" data-figure="{esc(name)}">{svg}</div>'
