"""The two quantiles the statistics use, Student's t and the standard normal, with the values
``scipy.stats`` gives, taken from ``scipy.special`` as ``scipy.stats`` takes them: importing
``scipy.stats`` (every distribution it defines) costs about 0.7 s of CPU more than
``scipy.special``, and ``seerbench report``, ``stats`` and the rest ask for nothing else of it.

For ``0 < q < 1`` (and ``df > 0``), ``scipy.stats.t.ppf(q, df)`` is ``special.stdtrit(df, q)`` and
``scipy.stats.norm.ppf(q)`` is ``special.ndtri(q)``, each times the scale 1 plus the location 0
(``rv_continuous.ppf``); any other argument is left to ``scipy.stats`` itself.
"""

from __future__ import annotations

from scipy import special


def t_ppf(q: float, df: float) -> float:
    """``float(scipy.stats.t.ppf(q, df))``."""
    if 0.0 < q < 1.0 and df > 0:
        return float(special.stdtrit(df, q) * 1.0 + 0)
    from scipy.stats import t

    return float(t.ppf(q, df))


def norm_ppf(q: float) -> float:
    """``float(scipy.stats.norm.ppf(q))``."""
    if 0.0 < q < 1.0:
        return float(special.ndtri(q) * 1.0 + 0)
    from scipy.stats import norm

    return float(norm.ppf(q))
