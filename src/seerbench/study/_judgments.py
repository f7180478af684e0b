"""Judgments: a rater's own task read back, its timer, and the one-time submission (the server
clock decides lateness; a reclaimed task refuses its submission), and correctness."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Table, func, insert, select, update

from seerbench.records import rating_correct
from seerbench.study._base import StoreBase
from seerbench.study._items import StudyItem
from seerbench.study._manifest import CRITIQUE_TASKS
from seerbench.study._schema import (
    _A_BY_ID,
    _A_OWN,
    _A_OWN_SESSION,
    _SLOT_OWNER,
    Assignment,
    SubmitResult,
    assignment_t,
    critique_t,
    rater_t,
    slot_t,
    validation_t,
)

__all__ = ["JudgmentsMixin"]


class JudgmentsMixin(StoreBase):
    """Reading, timing and submitting a rater's task in a :class:`~seerbench.study.StudyStore`."""

    def get_assignment(self, aid: str, rater_id: str, session: str | None = None) -> Assignment | None:
        """The assignment ``aid`` if it belongs to ``rater_id`` (else ``None``: raters only ever
        reach their own tasks) and, when ``session`` is given, that is the rater's current session."""
        with self.engine.connect() as c:
            if session is None:
                row = c.execute(_A_OWN, {"aid": aid, "rid": rater_id}).first()
            else:
                row = c.execute(_A_OWN_SESSION, {"aid": aid, "rid": rater_id, "sess": session}).first()
        return Assignment.from_row(row) if row else None

    def reclaimed(self, a: Assignment) -> bool:
        """Whether ``a`` expired and its slot went to another rater (then it is closed as
        abandoned and a submission for it is refused). No query while the task has not expired."""
        if a.status == "abandoned":
            return True
        if a.status != "active" or a.slot_id is None or self.clock() <= a.expires_at:
            return False
        with self.engine.connect() as c:
            owner = c.execute(_SLOT_OWNER, {"sid": a.slot_id}).scalar_one()
        if owner == a.id:
            return False
        with self._tx() as c:
            c.execute(
                update(assignment_t)
                .where(assignment_t.c.id == a.id, assignment_t.c.status == "active")
                .values(status="abandoned")
            )
        a.status = "abandoned"
        return True

    def mark_shown(self, aid: str) -> None:
        with self._tx() as c:
            c.execute(
                update(assignment_t)
                .where(assignment_t.c.id == aid, assignment_t.c.shown_at.is_(None))
                .values(shown_at=self.clock())
            )

    def start_timer(self, aid: str, rater_id: str) -> Assignment | None:
        """Start the reading timer (once; a second click keeps the first start time)."""
        m = self.manifest
        now = self.clock()
        with self._tx() as c:
            # a task whose timer starts was shown, even if the page view was not recorded
            values: dict[str, Any] = {
                "timer_started_at": now,
                "shown_at": func.coalesce(assignment_t.c.shown_at, now),
            }
            if m.timed and m.time_limit_s is not None:
                values["read_deadline"] = now + m.time_limit_s
                values["final_deadline"] = now + m.time_limit_s + m.finalise_s
            c.execute(
                update(assignment_t)
                .where(
                    assignment_t.c.id == aid,
                    assignment_t.c.rater_id == rater_id,
                    assignment_t.c.status == "active",
                    assignment_t.c.timer_started_at.is_(None),
                )
                .values(**values)
            )
            row = c.execute(_A_OWN, {"aid": aid, "rid": rater_id}).first()
        return Assignment.from_row(row) if row else None

    def submit(
        self, aid: str, rater_id: str, fields: dict[str, Any], *, auto: bool = False
    ) -> SubmitResult | None:
        """Store a rater's answer once. ``fields`` are already validated (answer, probability, ...).

        The server clock decides lateness: past the final deadline plus the grace the judgment is
        stored as timed out with no answer, whatever the client claims.
        """
        now = self.clock()
        with self._tx() as c:
            row = c.execute(_A_OWN, {"aid": aid, "rid": rater_id}).first()
            if row is None:
                return None
            a = Assignment.from_row(row)
            if a.status == "submitted":
                return SubmitResult("duplicate", a)
            if a.status == "abandoned":
                return SubmitResult("reclaimed", a)
            if a.slot_id is not None:
                owner = c.execute(_SLOT_OWNER, {"sid": a.slot_id}).scalar_one()
                if owner != a.id:
                    c.execute(
                        update(assignment_t).where(assignment_t.c.id == a.id).values(status="abandoned")
                    )
                    a.status = "abandoned"
                    return SubmitResult("reclaimed", a)
            stored = self._store_answer(c, a, now, fields, auto=auto)
            row = c.execute(_A_BY_ID, {"aid": aid}).one()
            return SubmitResult("stored" if stored else "duplicate", Assignment.from_row(row))

    def _store_answer(
        self, c: Connection, a: Assignment, now: float, fields: dict[str, Any], *, auto: bool
    ) -> bool:
        m = self.manifest
        late = a.final_deadline is not None and now > a.final_deadline + m.submit_grace_s
        timed_out = late or (auto and a.final_deadline is not None)
        values: dict[str, Any] = {
            "status": "submitted",
            "submitted_at": now,
            "timed_out": timed_out,
            "auto_submitted": auto,
            "seconds": now - (a.timer_started_at or a.shown_at or a.assigned_at),
            "comment": fields.get("comment"),
            "helpfulness": fields.get("helpfulness"),
            # the Prolific STUDY_ID / SESSION_ID of the link the rater came in through last, as
            # they are now: a later re-entry through another link leaves this row's alone
            "study_param": select(rater_t.c.study_param).where(rater_t.c.id == a.rater_id).scalar_subquery(),
            "session_param": select(rater_t.c.session_param)
            .where(rater_t.c.id == a.rater_id)
            .scalar_subquery(),
        }
        if not timed_out:
            for k in ("answer", "probability", "confidence", "rating"):
                values[k] = fields.get(k)
        item = self.item(a.item_id)
        values["correct"] = _correctness(m.task, item, a.expert_option, values.get("answer"), timed_out)
        got = c.execute(
            update(assignment_t)
            .where(assignment_t.c.id == a.id, assignment_t.c.status == "active")
            .values(**values)
        ).rowcount
        if got != 1:
            return False
        if a.slot_id is not None:
            c.execute(
                update(slot_t)
                .where(slot_t.c.id == a.slot_id, slot_t.c.assignment_id == a.id)
                .values(status="done")
            )
        if not timed_out:
            # critique tasks: the written critiques, and validation tasks: the marks, as rows
            if fields.get("critiques"):
                c.execute(
                    insert(critique_t),
                    [{"assignment_id": a.id, "n": n, **r} for n, r in enumerate(fields["critiques"])],
                )
            if fields.get("validations"):
                c.execute(insert(validation_t), [{"assignment_id": a.id, **r} for r in fields["validations"]])
        if a.is_catch:
            self._stopped(c, a.rater_id)
        return True

    def critiques(self) -> dict[str, list[dict[str, Any]]]:
        """The critiques written in each submitted critique task, by assignment id, in order."""
        return self._rows_by_assignment(critique_t, critique_t.c.n)

    def validations(self) -> dict[str, list[dict[str, Any]]]:
        """The marks given in each submitted validation task, by assignment id."""
        return self._rows_by_assignment(validation_t, validation_t.c.id)

    def _rows_by_assignment(self, table: Table, order: Any) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        with self.engine.connect() as c:
            for row in c.execute(select(table).order_by(table.c.assignment_id, order)):
                out.setdefault(row.assignment_id, []).append(dict(row._mapping))
        return out

    def _stopped(self, c: Connection, rater_id: str) -> bool:
        """Stop a rater whom the catch rule stops (see :meth:`_is_stopped_by_catch_rule`)."""
        if not self._is_stopped_by_catch_rule(self._counts(c, rater_id)):
            return False
        c.execute(update(rater_t).where(rater_t.c.id == rater_id).values(stopped=True))
        return True

    def _expire_own(self, c: Connection, a: Assignment, now: float) -> Assignment | None:
        """Close the rater's own active task if its time is up; return it if still open."""
        m = self.manifest
        if a.final_deadline is not None and now > a.final_deadline + m.submit_grace_s:
            self._store_answer(c, a, now, {}, auto=True)
            return None
        if now > a.expires_at and a.slot_id is not None:
            owner = c.execute(_SLOT_OWNER, {"sid": a.slot_id}).scalar_one()
            if owner != a.id:
                c.execute(update(assignment_t).where(assignment_t.c.id == a.id).values(status="abandoned"))
                return None
        return a

    # ------------------------------------------------------------------ reading back
    def assignments(self, *, submitted_only: bool = True) -> list[tuple[Assignment, dict[str, Any]]]:
        """Every (submitted) assignment with its rater row, in submission order."""
        q = select(
            assignment_t,
            rater_t.c.external_id,
            rater_t.c.source,
            # the ids of the link the task was done under (studies made before these columns: the
            # rater's latest)
            func.coalesce(assignment_t.c.study_param, rater_t.c.study_param).label("link_study"),
            func.coalesce(assignment_t.c.session_param, rater_t.c.session_param).label("link_session"),
        ).join(rater_t, rater_t.c.id == assignment_t.c.rater_id)
        if submitted_only:
            q = q.where(assignment_t.c.status == "submitted")
        q = q.order_by(assignment_t.c.submitted_at, assignment_t.c.id)
        with self.engine.connect() as c:
            rows = c.execute(q).all()
        return [
            (
                Assignment.from_row(r),
                {
                    "external_id": r.external_id,
                    "source": r.source,
                    "study_param": r.link_study,
                    "session_param": r.link_session,
                },
            )
            for r in rows
        ]


def _correctness(
    task: str, item: StudyItem, expert: str | None, answer: str | None, timed_out: bool
) -> float | None:
    """1.0 / 0.0 for a right / wrong answer, None when the answer says nothing (a skip; on
    factuality "can't confidently assess" is wrong, seed 000)."""
    truth = item.correct
    if task in CRITIQUE_TASKS:
        return None  # a critique or a validation has no right answer of its own
    if timed_out:
        return 0.0  # seed 004: an auto-submitted task with no selection counts as wrong
    if task == "two_option":
        return None if answer is None else float(answer == truth)
    if task == "expert_routing":
        if answer not in ("yes", "no") or expert is None:
            return None
        return float((answer == "yes") == (expert == truth))
    # factuality: answer is the binarised label or a marker; seed 000's rule, in its one home
    return rating_correct(answer, truth)
