"""The one number and interval formatter, in the core so that every face uses it: the command line
(``show`` included) and the HTML report print an estimate with its interval as
``0.620 [0.550, 0.690]``, a missing value as ``n/a`` (not ``-``, which reads as a minus sign beside
differences) and a value that rounds to zero without a sign (``0.000``, never ``-0.000``). The
report's transcript browser formats in JavaScript by the same rules (``fmt`` in
``report/_assets.py``).

An interval is given as the shared :class:`seerbench.stats.Interval` (or anything with
``estimate``, ``ci_low``, ``ci_high``, such as a complementarity estimate), a
:class:`seerbench.stats.Summary` (``mean``) or their JSON dicts (``estimate`` or ``mean``). An
estimate without bounds (an interval that could not be made) prints as the number alone when
``bare`` is True, else ``0.62 [n/a, n/a]``.

Text from here holds square brackets: print it with ``markup=False`` / :class:`rich.text.Text`,
or escape it (:func:`rich.markup.escape`), or Rich may read ``[0.55, 0.69]`` as markup.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: What a missing number prints as.
MISSING = "n/a"


def _value(x: Any) -> float | None:
    if x is None or isinstance(x, bool) or not isinstance(x, int | float):
        return None
    v = float(x)
    return None if math.isnan(v) else v


def num(x: Any, digits: int = 3) -> str:
    """``x`` to ``digits`` decimals; ``n/a`` for None or NaN; ``inf`` / ``-inf`` as such; a value
    that is not a number (a count given as a string, a label) as ``str(x)``."""
    if x is not None and (isinstance(x, bool) or not isinstance(x, int | float)):
        return str(x)
    v = _value(x)
    if v is None:
        return MISSING
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x)
    out = f"{v:.{digits}f}"
    # a value that rounds to zero prints without a sign ("-0.000" reads as a negative difference)
    return out[1:] if out.startswith("-") and float(out) == 0.0 else out


def count(x: Any) -> str:
    """A count with thousands separators, ``264,000`` (a fractional estimate rounded to the
    whole number); ``n/a`` for None or NaN; a value that is not a number as ``str(x)``."""
    if x is not None and (isinstance(x, bool) or not isinstance(x, int | float)):
        return str(x)
    v = _value(x)
    if v is None:
        return MISSING
    return f"{round(v):,}" if math.isfinite(v) else num(v)


def parts(x: Any) -> tuple[Any, Any, Any]:
    """(estimate, ci_low, ci_high) of an interval object, a summary or their dicts (None where
    absent)."""
    if x is None:
        return (None, None, None)
    if isinstance(x, Mapping):
        est = x.get("estimate", x.get("mean"))
        return (est, x.get("ci_low"), x.get("ci_high"))
    est = getattr(x, "estimate", getattr(x, "mean", None))
    return (est, getattr(x, "ci_low", None), getattr(x, "ci_high", None))


def bounds(x: Any, digits: int = 3) -> str:
    """``[0.550, 0.690]``: the interval alone (``n/a`` when there is none)."""
    _, lo, hi = parts(x)
    if _value(lo) is None and _value(hi) is None:
        return MISSING
    return f"[{num(lo, digits)}, {num(hi, digits)}]"


def ci(x: Any, digits: int = 3, *, bare: bool = True) -> str:
    """``0.620 [0.550, 0.690]``: the estimate and its interval; ``n/a`` without an estimate; the
    estimate alone when there are no bounds and ``bare`` (else ``0.620 [n/a, n/a]``). A dict with
    ``n`` 0 (nothing measured) is ``n/a``."""
    est, lo, hi = parts(x)
    if _value(est) is None or (isinstance(x, Mapping) and x.get("n") == 0):
        return MISSING
    if _value(lo) is None and _value(hi) is None and bare:
        return num(est, digits)
    return f"{num(est, digits)} [{num(lo, digits)}, {num(hi, digits)}]"
