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


_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
# json.dumps(obj, **those options) makes a new encoder, and the encoder a new C encoder, for every
# call: made once here (the same C encoder; without the check for circular references, which a tree
# read from JSON cannot have), a row of the transcript browser is turned into text in half the time
_make_c_encoder = getattr(json.encoder, "c_make_encoder", None)  # what JSONEncoder.iterencode uses
_C_ENCODER = (
    None
    if _make_c_encoder is None
    else _make_c_encoder(
        None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
)


def _dumps(obj: Any) -> str:
    """``json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))``."""
    if _C_ENCODER is None:  # no C accelerator (not CPython)
        return _ENCODER.encode(obj)
    return "".join(_C_ENCODER(obj, 0))


def script_json(obj: Any) -> str:
    """JSON safe inside a ``<script>`` element: ``<``, ``>`` and ``&`` (so ``</script>`` and
    ``<!--``) written as ``\\u`` escapes, which JSON.parse reads back as the same characters."""
    try:  # results are finite almost always: json_safe's walk over 60,000 rows only when needed
        text = _dumps(obj)
    except ValueError:
        text = _dumps(json_safe(obj))
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
