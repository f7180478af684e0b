"""Task pages, one class per task type: what a task page shows (:meth:`TaskPage.context`) and how
its form is read (:meth:`TaskPage.parse`). A new task type subclasses :class:`TaskPage` and
registers itself in :data:`TASK_PAGES` under its manifest ``task`` name.

Two-option judging (seed 004) shows the judging condition's material (passage, snippets,
arguments) or a transcript; expert routing (seed 001) asks yes/no about one option; factuality
rating (seed 000) shows the assistance parts of its condition.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from seerbench.conditions import has_passage
from seerbench.plugins import Registry
from seerbench.study._items import StudyItem
from seerbench.study._manifest import Condition, StudyManifest
from seerbench.study._schema import Assignment

__all__ = [
    "CONFIDENCE_LEVELS",
    "FACTUALITY_RATINGS",
    "HELPFULNESS_LEVELS",
    "TASK_PAGES",
    "TaskPage",
    "segment_passage",
]

FACTUALITY_RATINGS: tuple[tuple[str, str], ...] = (
    ("accurate", "Accurate"),
    ("inaccurate", "Inaccurate"),
    ("unsupported", "Unsupported"),
    ("disputed", "Disputed"),
    ("no_claim", "Doesn't require assessment"),
    ("cant_assess", "Can't confidently assess"),
)
#: What each factuality rating means, shown beside it on the task page (the tutorial defines
#: only some; a rater meets all six on every task).
FACTUALITY_DEFINITIONS: dict[str, str] = {
    "accurate": "every factual claim in the sentence is backed by reliable sources",
    "inaccurate": "reliable sources contradict at least one claim in the sentence",
    "unsupported": "you found no reliable source that confirms or contradicts a claim",
    "disputed": "reliable sources disagree about a claim",
    "no_claim": "the sentence makes no factual claim (an opinion, a question, a greeting)",
    "cant_assess": "you could not reach a rating you are confident in",
}
CONFIDENCE_LEVELS = ("Not at all confident", "Slightly confident", "Fairly confident", "Very confident")
HELPFULNESS_LEVELS = ("Not helpful", "Somewhat helpful", "Very helpful")


def segment_passage(
    passage: str, quotes: list[list[str]]
) -> tuple[list[dict[str, Any]], dict[tuple[int, int], str]]:
    """Mark the snippets in ``passage``, overlapping ones included.

    ``quotes[i]`` are option i's snippets. Each snippet found verbatim (its first occurrence)
    becomes a ``<span>`` with an anchor id; returns the passage as a flat list of tokens to render
    in order (``{"text": ...}``, ``{"open": {...}}`` for a ``<span>``, ``{"close": True}`` for its
    ``</span>``) and a map (option, quote index) -> anchor id. Snippets not in the passage stay
    unlinked.

    Snippets may overlap (in the single_turn_debate data one option's snippet often lies inside
    the other's): a snippet inside another is a ``<span>`` inside its ``<span>``, and one that
    crosses another's end is split into pieces, the first carrying the anchor id, every piece the
    snippet's ``data-snip``. A piece inside another option's snippet is ``shared`` (shown in both
    colours).
    """
    found: list[tuple[int, int, int, int]] = []
    for oi, qs in enumerate(quotes):
        for qi, q in enumerate(qs):
            text = q.strip().strip("\"'“”").strip()
            if not text:
                continue
            start = passage.find(text)
            if start >= 0:
                found.append((start, start + len(text), oi, qi))
    # outer before inner: earlier start first, then the longer one
    found.sort(key=lambda f: (f[0], -f[1], f[2], f[3]))
    anchors = {(oi, qi): f"snip-{oi}-{qi}" for _, _, oi, qi in found}
    tokens: list[dict[str, Any]] = []
    stack: list[tuple[int, int, int, int]] = []  # open spans, outermost first
    opened: set[tuple[int, int]] = set()  # snippets whose first piece (with the id) was opened

    def open_span(f: tuple[int, int, int, int]) -> None:
        _, _, oi, qi = f
        sid = anchors[(oi, qi)]
        first = (oi, qi) not in opened
        opened.add((oi, qi))
        shared = any(o[2] != oi for o in stack)
        tokens.append({"open": {"id": sid if first else None, "snip": sid, "option": oi, "shared": shared}})
        stack.append(f)

    bounds = sorted({b for f in found for b in f[:2]} | {0, len(passage)})
    starts = iter(found)
    nxt = next(starts, None)
    for pos, stop in zip(bounds, [*bounds[1:], None], strict=True):
        ending = [i for i, f in enumerate(stack) if f[1] == pos]
        if ending:
            # close down to the outermost span that ends here; reopen those that go on
            cut = ending[0]
            going_on = [f for f in stack[cut:] if f[1] > pos]
            tokens.extend({"close": True} for _ in stack[cut:])
            del stack[cut:]
            for f in going_on:
                open_span(f)
        while nxt is not None and nxt[0] == pos:
            open_span(nxt)
            nxt = next(starts, None)
        if stop is not None and stop > pos:
            tokens.append({"text": passage[pos:stop]})
    tokens.extend({"close": True} for _ in stack)
    return tokens, anchors


class TaskPage:
    """The page of one task type. ``context`` gets the phase already worked out (``question``
    before a timer starts, ``reading``, ``finalise``, or ``untimed``) and returns the template's
    variables; ``parse`` returns the answer's fields (stored by
    :meth:`~seerbench.study.StudyStore.submit`) or an error message for the rater."""

    task: ClassVar[str]
    template: ClassVar[str] = "task.html"

    def __init__(self, manifest: StudyManifest) -> None:
        self.m = manifest

    def context(self, it: StudyItem, a: Assignment, cond: Condition, phase: str) -> dict[str, Any]:
        """Template variables for task ``a`` on item ``it``; the base gives the question, its
        options and the judging condition's material (the other pages' templates ignore what
        they do not use)."""
        show_material = phase in ("reading", "untimed")
        q = it.question
        options = [{"short": c.short, "long": c.long, "index": i} for i, c in enumerate(q.answer_cases)]
        passage_segments: list[dict[str, Any]] = []
        anchors: dict[tuple[int, int], str] = {}
        shows = cond.judging
        if show_material and shows.passage and has_passage(q):
            quotes = [list(c.quotes) if shows.snippets else [] for c in q.answer_cases]
            passage_segments, anchors = segment_passage(q.source_text or "", quotes)
        per_option = [
            {
                "short": c.short,
                "long": c.long,
                "index": i,
                "argument": c.argument if shows.arguments else None,
                "snippets": [{"text": s, "anchor": anchors.get((i, j))} for j, s in enumerate(c.quotes)]
                if shows.snippets
                else [],
            }
            for i, c in enumerate(q.answer_cases)
        ]
        transcript = it.transcript.turns if (it.transcript is not None and "transcript" in cond.show) else []
        return {
            "q": q,
            "show_material": show_material,
            "options": options,
            "per_option": per_option,
            "passage_segments": passage_segments,
            "transcript": transcript,
            "assistance": {},
            "expert_case": None,
            "ratings": FACTUALITY_RATINGS,
            "rating_definitions": FACTUALITY_DEFINITIONS,
            "confidence_levels": CONFIDENCE_LEVELS,
            "helpfulness_levels": HELPFULNESS_LEVELS,
        }

    def parse(self, form: dict[str, Any], it: StudyItem, a: Assignment) -> tuple[dict[str, Any], str | None]:
        raise NotImplementedError

    def form_state(self, form: dict[str, Any], it: StudyItem, a: Assignment) -> dict[str, Any]:
        """Template variables that put back what the rater entered when the page is shown again
        (after an error, or for :meth:`redisplay`); none by default."""
        return {}

    def redisplay(self, form: dict[str, Any]) -> bool:
        """Whether a posted form asks for the page again (e.g. "add another critique") rather
        than submitting it."""
        return False


#: Longest free text kept from a form field (a comment, a critique).
MAX_COMMENT = 5000


def comment_field(form: dict[str, Any]) -> dict[str, Any]:
    """The free-text comment every task form has (kept also when the page's timer submits it)."""
    comment = str(form.get("comment") or "").strip()
    return {"comment": comment[:MAX_COMMENT] or None}


class TwoOptionPage(TaskPage):
    """Seed 004: choose one of two options, optionally with a probability (50 to 100)."""

    task = "two_option"

    def parse(self, form: dict[str, Any], it: StudyItem, a: Assignment) -> tuple[dict[str, Any], str | None]:
        out = comment_field(form)
        ans = form.get("answer")
        if ans not in it.question.shorts:
            return out, "Please choose one of the answers."
        out["answer"] = ans
        raw = str(form.get("probability") or "").strip()
        if self.m.probability != "off" and raw:
            try:
                p = float(raw)
            except ValueError:
                return out, "The probability must be a number between 50 and 100."
            if not 50 <= p <= 100 or math.isnan(p):
                return out, "The probability must be a number between 50 and 100."
            out["probability"] = p / 100.0
        elif self.m.probability == "required":
            return out, "Please say how sure you are (50 to 100)."
        return out, None


class ExpertRoutingPage(TaskPage):
    """Seed 001: "is the correct answer k?" answered yes or no."""

    task = "expert_routing"

    def context(self, it: StudyItem, a: Assignment, cond: Condition, phase: str) -> dict[str, Any]:
        ctx = super().context(it, a, cond, phase)
        if a.expert_option is not None:
            ctx["expert_case"] = it.question.case(a.expert_option)
        return ctx

    def parse(self, form: dict[str, Any], it: StudyItem, a: Assignment) -> tuple[dict[str, Any], str | None]:
        out = comment_field(form)
        ans = form.get("answer")
        if ans not in ("yes", "no"):
            return out, "Please answer yes or no."
        out["answer"] = ans
        return out, None


class FactualityPage(TaskPage):
    """Seed 000: rate a sentence's factual accuracy, with the condition's AI assistance, a
    confidence and a helpfulness rating; or skip."""

    task = "factuality"

    def context(self, it: StudyItem, a: Assignment, cond: Condition, phase: str) -> dict[str, Any]:
        ctx = super().context(it, a, cond, phase)
        data = it.question.metadata.get("assistance") or {}
        ctx["assistance"] = {k: data[k] for k in cond.assistance if k in data}
        return ctx

    def parse(self, form: dict[str, Any], it: StudyItem, a: Assignment) -> tuple[dict[str, Any], str | None]:
        out = comment_field(form)
        if form.get("action") == "skip":
            out["answer"] = out["rating"] = "skip"
            return out, None
        rating = form.get("rating")
        labels = dict(FACTUALITY_RATINGS)
        if rating not in labels:
            return out, "Please choose a rating (or skip)."
        out["rating"] = rating
        binary = {
            "accurate": "accurate",
            "inaccurate": "inaccurate",
            "unsupported": "inaccurate",
            "disputed": "inaccurate",
        }
        out["answer"] = binary.get(str(rating), str(rating))
        for key, n in (("confidence", len(CONFIDENCE_LEVELS)), ("helpfulness", len(HELPFULNESS_LEVELS))):
            v = str(form.get(key) or "")
            if v:
                if not v.isdigit() or not 1 <= int(v) <= n:
                    return out, f"The {key} must be between 1 and {n}."
                out[key] = int(v)
        return out, None


#: Task pages by the manifest's ``task``.
TASK_PAGES: Registry[type[TaskPage]] = Registry(
    "study task type", {p.task: p for p in (TwoOptionPage, ExpertRoutingPage, FactualityPage)}
)
