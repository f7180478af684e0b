"""Raters and their sessions: created on first sight through a link, a new session per entry,
the tutorial quiz, and the completion code."""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from seerbench.study._base import StoreBase
from seerbench.study._schema import _RATER, _new_id, assignment_t, rater_t

__all__ = ["RatersMixin"]


class RatersMixin(StoreBase):
    """Rater accounts and sessions of a :class:`~seerbench.study.StudyStore`."""

    def rater_for(
        self,
        external_id: str,
        source: str,
        study_param: str | None = None,
        session_param: str | None = None,
        *,
        new_session: bool = False,
    ) -> dict[str, Any]:
        """The rater with ``external_id`` (e.g. a Prolific PID), created on first sight.

        ``new_session`` (an entry through a link) gives the rater a fresh session id, which ends
        every earlier session of theirs, and records the link's Prolific STUDY_ID / SESSION_ID.
        """
        with self._tx() as c:
            row = c.execute(select(rater_t).where(rater_t.c.external_id == external_id)).first()
            if row is None:
                try:
                    with c.begin_nested():
                        c.execute(
                            insert(rater_t).values(
                                id=_new_id(),
                                external_id=external_id,
                                source=source,
                                study_param=study_param,
                                session_param=session_param,
                                created_at=self.clock(),
                                tutorial_passed=not self.manifest.tutorial.quiz
                                and not self.manifest.tutorial.text,
                                quiz_attempts=0,
                                stopped=False,
                            )
                        )
                except IntegrityError:
                    pass  # created concurrently by a second request of the same person
                row = c.execute(select(rater_t).where(rater_t.c.external_id == external_id)).one()
            if new_session:
                values: dict[str, Any] = {"session": secrets.token_urlsafe(16)}
                if study_param is not None:
                    values["study_param"] = study_param
                if session_param is not None:
                    values["session_param"] = session_param
                c.execute(update(rater_t).where(rater_t.c.id == row.id).values(**values))
                row = c.execute(select(rater_t).where(rater_t.c.id == row.id)).one()
            return dict(row._mapping)

    def rater(self, rater_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as c:
            row = c.execute(_RATER, {"rid": rater_id}).first()
        return dict(row._mapping) if row else None

    def has_tasks(self, rater_id: str) -> bool:
        """Whether the rater was given any task (active or submitted)."""
        with self.engine.connect() as c:
            row = c.execute(
                select(assignment_t.c.id)
                .where(assignment_t.c.rater_id == rater_id, assignment_t.c.status != "abandoned")
                .limit(1)
            ).first()
        return row is not None

    def removed_from(self, rater_id: str) -> set[str]:
        """The conditions the catch rule removed the rater from (seed 004, counted per condition)."""
        with self.engine.connect() as c:
            return self._removed(self._counts(c, rater_id))

    def submitted(self, rater_id: str) -> int:
        """How many tasks (catch trials included) the rater has submitted."""
        with self.engine.connect() as c:
            return self._counts(c, rater_id).done

    def record_quiz(self, rater_id: str, passed: bool) -> None:
        values: dict[str, Any] = {"quiz_attempts": rater_t.c.quiz_attempts + 1}
        if passed:
            values["tutorial_passed"] = True
        with self._tx() as c:
            c.execute(update(rater_t).where(rater_t.c.id == rater_id).values(**values))

    def finish(self, rater_id: str) -> bool:
        """Mark the rater finished if they earned the completion code: ``tasks_per_rater`` tasks
        submitted, or (when no more tasks are left for them) ``min_tasks_for_code`` judged tasks,
        catch trials not counted. Returns whether they earned it."""
        m = self.manifest
        with self._tx() as c:
            k = self._counts(c, rater_id)
            # a rater the catch rule stopped earns no code, whatever they submitted before
            earned = not self._is_stopped_by_catch_rule(k) and (
                k.done >= m.tasks_per_rater
                or (m.min_tasks_for_code is not None and k.scored >= m.min_tasks_for_code)
            )
            if earned:
                c.execute(
                    update(rater_t)
                    .where(rater_t.c.id == rater_id, rater_t.c.finished_at.is_(None))
                    .values(finished_at=self.clock())
                )
        return earned
