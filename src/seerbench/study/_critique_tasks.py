"""Task pages of critique studies (seed 002, sections 3.2 and 3.3.1).

``critique``: the rater sees the question and the answer (the passage on demand), writes as many
critiques as they find, each with a severity and a category, and rates the answer's quality on a
1-7 Likert scale. In an assisted condition the model's critiques are listed with their helpfulness
scores, each with a "use" button that pre-fills an editable critique; whether a critique was used
and whether its text was then edited are recorded (the server compares the text with the model
critique, so the page need not report it). Every button posts the form: without JavaScript "use"
and "add another critique" reload the page with the entries kept; with it, "use" fills the empty
critique in place.

``validation``: the rater (or the answer's author) marks each critique of one critique task valid
or invalid and, for answers with an intended flaw, whether it covers that flaw.
"""

from __future__ import annotations

from typing import Any

from seerbench.study._critique_items import answer_of
from seerbench.study._critique_results import SEVERITIES
from seerbench.study._items import StudyItem
from seerbench.study._manifest import Condition
from seerbench.study._schema import Assignment
from seerbench.study._tasks import MAX_COMMENT, TASK_PAGES, TaskPage, comment_field

__all__ = ["LIKERT", "CritiquePage", "ValidationPage"]

#: The answer-quality scale (seed 002: 1-7, 7 a perfect answer).
LIKERT: tuple[int, ...] = tuple(range(1, 8))
MAX_CRITIQUES = 60
MAX_TEXT = MAX_COMMENT


def _norm(s: str) -> str:
    return " ".join(s.split())


class CritiquePage(TaskPage):
    """Write critiques of an answer (see the module docstring)."""

    task = "critique"
    template = "task_critique.html"

    def _model_critiques(self, it: StudyItem, cond: Condition) -> list[dict[str, Any]]:
        if "critiques" not in cond.assistance:
            return []
        return list(answer_of(it).get("critiques") or [])

    def rows(self, form: dict[str, Any], it: StudyItem, a: Assignment) -> list[dict[str, str]]:
        """The critiques on the form as the rater left them (blank ones dropped), with one blank
        critique appended per "add", and a pre-filled one for a "use"."""
        try:
            n = min(int(str(form.get("n_rows") or 0)), MAX_CRITIQUES)
        except ValueError:
            n = 0
        rows = []
        for i in range(n):
            row = {
                k: str(form.get(f"c{i}_{k}") or "")[:MAX_TEXT]
                for k in ("text", "severity", "category", "source")
            }
            if row["text"].strip() or row["severity"] or row["category"]:
                rows.append(row)
        if form.get("action") == "add" and len(rows) < MAX_CRITIQUES:
            rows.append({"text": "", "severity": "", "category": "", "source": ""})
        used = str(form.get("use") or "")
        model = {str(c["id"]): c for c in self._model_critiques(it, self.m.condition(a.condition))}
        if used in model and len(rows) < MAX_CRITIQUES:
            rows.append({"text": str(model[used]["text"]), "severity": "", "category": "", "source": used})
        return rows

    def context(self, it: StudyItem, a: Assignment, cond: Condition, phase: str) -> dict[str, Any]:
        ans = answer_of(it)
        return {
            "q": it.question,
            "answer": ans,
            "model_critiques": self._model_critiques(it, cond),
            "rows": [],
            "likert": None,
            "comment": "",
            "severities": SEVERITIES,
            "categories": self.m.categories,
            "likert_scale": LIKERT,
        }

    def form_state(self, form: dict[str, Any], it: StudyItem, a: Assignment) -> dict[str, Any]:
        return {
            "rows": self.rows(form, it, a),
            "likert": str(form.get("likert") or ""),
            "comment": comment_field(form)["comment"] or "",
        }

    def redisplay(self, form: dict[str, Any]) -> bool:
        return form.get("action") == "add" or bool(form.get("use"))

    def parse(self, form: dict[str, Any], it: StudyItem, a: Assignment) -> tuple[dict[str, Any], str | None]:
        out: dict[str, Any] = comment_field(form)
        model = {
            str(c["id"]): str(c["text"]) for c in self._model_critiques(it, self.m.condition(a.condition))
        }
        critiques = []
        for n, row in enumerate(self.rows(form, it, a), 1):
            text = row["text"].strip()
            if not text:
                return out, f"Critique {n} has no text: write it or clear its severity and category."
            if row["severity"] not in SEVERITIES:
                return out, f"Critique {n}: choose a severity."
            if row["category"] not in self.m.categories:
                return out, f"Critique {n}: choose a category."
            source = row["source"] if row["source"] in model else None
            critiques.append(
                {
                    "text": text,
                    "severity": row["severity"],
                    "category": row["category"],
                    "model_critique_id": source,
                    "used": source is not None,
                    "edited": source is not None and _norm(text) != _norm(model[source]),
                }
            )
        raw = str(form.get("likert") or "")
        if not raw.isdigit() or int(raw) not in LIKERT:
            return out, "Please rate the answer's quality from 1 to 7."
        out["rating"] = raw
        out["critiques"] = critiques
        return out, None


class ValidationPage(TaskPage):
    """Mark each critique of one critique task valid or not (and whether it covers the intended
    flaw, for answers that have one)."""

    task = "validation"
    template = "task_validation.html"

    def context(self, it: StudyItem, a: Assignment, cond: Condition, phase: str) -> dict[str, Any]:
        ans = answer_of(it)
        return {
            "q": it.question,
            "answer": ans,
            "intended": bool(ans.get("intended_flaw") or ans.get("intended_critique")),
            "critiques": it.question.metadata["judgment"]["critiques"],
            "marks": {},
            "comment": "",
        }

    def form_state(self, form: dict[str, Any], it: StudyItem, a: Assignment) -> dict[str, Any]:
        return {
            "marks": {k: str(v) for k, v in form.items() if k.startswith("v")},
            "comment": comment_field(form)["comment"] or "",
        }

    def parse(self, form: dict[str, Any], it: StudyItem, a: Assignment) -> tuple[dict[str, Any], str | None]:
        out: dict[str, Any] = comment_field(form)
        ans = answer_of(it)
        intended = bool(ans.get("intended_flaw") or ans.get("intended_critique"))
        marks = []
        for n, c in enumerate(it.question.metadata["judgment"]["critiques"]):
            valid = form.get(f"v{n}_valid")
            if valid not in ("yes", "no"):
                return out, f"Critique {n + 1}: say whether it is valid."
            covers = form.get(f"v{n}_covers")
            if intended and covers not in ("yes", "no"):
                return out, f"Critique {n + 1}: say whether it covers the intended flaw."
            marks.append(
                {
                    "critique_id": str(c["critique_id"]),
                    "valid": valid == "yes",
                    "covers_intended": (covers == "yes") if intended else None,
                }
            )
        out["validations"] = marks
        return out, None


for _page in (CritiquePage, ValidationPage):
    TASK_PAGES.add(_page.task, _page)
