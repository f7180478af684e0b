"""Verbatim quote checks (seed 004's snippets, EvidenceDebate's quotes): the one rule every agent uses.

A quote is **verified** when, after folding every run of white space (spaces, tabs, line breaks,
non-breaking spaces) into one space and trimming both ends, it occurs in the passage folded the same
way. Nothing else is normalised: case, punctuation and quotation marks must match, because a quote
is evidence only if the words are the passage's own. White space is folded because HTML stripping
and line wrapping change spacing but not the words a writer selected.

- no passage (``None``, or only white space): ``None``, the quote cannot be checked;
- a quote that is empty after folding: ``False``, an empty quote is no evidence.

>>> verify_quote("the  vault\\ncode", "The vault code is 4417; the vault code changed.")
True
>>> verify_quote("The Vault code", "The vault code is 4417.")
False
>>> [q.verified for q in check_quotes(["4417", "9"], "The vault code is 4417.")]
[True, False]
"""

from __future__ import annotations

from collections.abc import Sequence

from seerbench.types import Quote

__all__ = ["check_quotes", "fold_whitespace", "verify_quote"]


def fold_whitespace(text: str) -> str:
    """``text`` with every run of white space folded into one space and both ends trimmed."""
    return " ".join(text.split())


def _verified(quote: str, folded_source: str | None) -> bool | None:
    if folded_source is None:
        return None
    q = fold_whitespace(quote)
    return bool(q) and q in folded_source


def _fold_source(source_text: str | None) -> str | None:
    folded = fold_whitespace(source_text or "")
    return folded or None


def verify_quote(quote: str, source_text: str | None) -> bool | None:
    """Whether ``quote`` occurs verbatim in ``source_text`` (see the module for the rule); None
    when there is no passage to check against."""
    return _verified(quote, _fold_source(source_text))


def check_quotes(quotes: Sequence[str], source_text: str | None) -> list[Quote]:
    """Each quote as a :class:`~seerbench.types.Quote` marked with :func:`verify_quote`'s result
    (the passage is folded once for all quotes)."""
    src = _fold_source(source_text)
    return [Quote(text=q, verified=_verified(q, src)) for q in quotes]
