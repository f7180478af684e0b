"""Assignment: slots (item x condition x replicate) planned at creation and claimed by raters,
catch trials interleaved, and the catch rule's reachability notes."""

from __future__ import annotations

import math
import random
import time
from typing import Any

from sqlalchemy import Connection, and_, insert, or_, update
from sqlalchemy.exc import IntegrityError

from seerbench.study._items import StudyItem, eligible
from seerbench.study._judgments import JudgmentsMixin
from seerbench.study._manifest import StudyManifest
from seerbench.study._schema import (
    _A_ACTIVE,
    _A_BY_ID,
    _CLAIMABLE_ANY,
    _CLAIMABLE_COUNT,
    _PICK_EXPIRED,
    _PICK_OPEN,
    _RATER,
    _SEEN_QUESTIONS,
    Assignment,
    _new_id,
    assignment_t,
    rater_t,
    slot_t,
)

__all__ = ["SlotsMixin", "StudyBusyError", "catch_rule_notes", "plan_slots"]


class _LostRace(Exception):
    """Every candidate slot of a condition was claimed by others between read and update, or the
    locked reads found none while slots are still unclaimed (held by claims in flight)."""


class StudyBusyError(RuntimeError):
    """A claim lost every race it tried: the study is not full, only busy."""


class SlotsMixin(JudgmentsMixin):
    """Claiming a rater's next task in a :class:`~seerbench.study.StudyStore`."""

    def next_assignment(self, rater_id: str) -> tuple[Assignment | None, str]:
        """The rater's open task, or a newly claimed one.

        Returns ``(assignment, reason)`` with reason ``"ok"``, ``"done"`` (quota reached),
        ``"stopped"`` (failed catch trials) or ``"exhausted"`` (nothing left this rater may judge).
        Retries on a lost race (another rater took the slot first).
        """
        for attempt in range(50):
            try:
                return self._next_once(rater_id)
            except IntegrityError:
                continue  # a concurrent request of the same rater: look again
            except _LostRace:
                # open slots are held by claims in flight: give them a moment to finish
                time.sleep(min(0.05, 0.001 * 2 ** (attempt // 2)))
        # never "exhausted" while slots may be open: the caller shows an error and the rater retries
        raise StudyBusyError("too many concurrent claims; try again in a moment")

    def _next_once(self, rater_id: str) -> tuple[Assignment | None, str]:
        m = self.manifest
        now = self.clock()
        with self._tx() as c:
            r = c.execute(_RATER, {"rid": rater_id}).one()
            if r.stopped:
                return None, "stopped"
            row = c.execute(_A_ACTIVE, {"rid": rater_id}).first()
            if row is not None:
                a = self._expire_own(c, Assignment.from_row(row), now)
                if a is not None:
                    return a, "ok"
            k = self._counts(c, rater_id)
            removed = self._removed(k)
            if self._is_stopped_by_catch_rule(k):
                c.execute(update(rater_t).where(rater_t.c.id == rater_id).values(stopped=True))
                return None, "stopped"
            if k.done >= m.tasks_per_rater:
                return None, "done"
            per_cond, seq = k.per_cond, k.seq
            # keyed on the rater's external id (not the random database id), so one study seed and
            # the same raters give the same draws on every run
            rng = random.Random(f"{m.seed}:{r.external_id}:{seq}")
            order = sorted(
                (cd for cd in per_cond if cd not in removed), key=lambda cd: (per_cond[cd], rng.random())
            )
            planned = m.tasks_per_rater // len(m.conditions)  # tasks a rater does in each condition, at least
            for cond_name in order:
                need = m.catch_per_condition - k.catch_given.get(cond_name, 0)
                if need > 0:
                    # the guaranteed catch trials fall at random places among the rater's first
                    # `planned` tasks in the condition (sampling positions without replacement)
                    left = planned - per_cond[cond_name]
                    want_catch = need >= left or rng.random() < need / left
                else:
                    want_catch = rng.random() < m.catch_rate
                if want_catch:
                    seen_q = set(c.execute(_SEEN_QUESTIONS, {"rid": rater_id}).scalars())
                    ok = [i for i in self._catch_items(cond_name) if self.item(i).question.id not in seen_q]
                    if ok:
                        item_id = rng.choice(ok)
                        expert = None
                        if m.task == "expert_routing":
                            expert = random.Random(f"{m.seed}:{r.external_id}:{seq}:x").choice(
                                self.item(item_id).question.shorts
                            )
                        return self._open(c, rater_id, seq, None, item_id, cond_name, True, expert, now), "ok"
                params = {"cond": cond_name, "rid": rater_id, "now": now}
                slot_rows = [*c.execute(_PICK_OPEN, params), *c.execute(_PICK_EXPIRED, params)]
                slot_rows.sort(key=lambda r: (r.replicate, r.order_key))
                for sid, iid, expert, old, _rep, _key in slot_rows:
                    aid = _new_id()
                    got = c.execute(
                        update(slot_t)
                        .where(
                            slot_t.c.id == sid,
                            or_(
                                slot_t.c.status == "open",
                                and_(slot_t.c.status == "taken", slot_t.c.expires_at < now),
                            ),
                        )
                        .values(status="taken", assignment_id=aid, expires_at=now + m.assignment_timeout_s)
                    ).rowcount
                    if got != 1:
                        continue
                    if old is not None:
                        c.execute(
                            update(assignment_t)
                            .where(assignment_t.c.id == old, assignment_t.c.status == "active")
                            .values(status="abandoned")
                        )
                    return self._open(c, rater_id, seq, sid, iid, cond_name, False, expert, now, aid), "ok"
                if slot_rows:
                    # every candidate went to another rater between our read and our update: the
                    # condition is not full, so look again rather than report "exhausted"
                    raise _LostRace
            # the locked reads skip slots that claims in flight hold (and such a claim may yet
            # roll back, or hold a candidate it does not take): "exhausted" only when no slot the
            # rater may claim is left unclaimed
            if self._claimable(c, rater_id, order, now, count=False):
                raise _LostRace
            return None, "exhausted"

    def open_slots_for(self, rater_id: str) -> int:
        """How many slots the rater could claim now: open (or taken and timed out), in a condition
        the catch rule has not removed them from, for a question they have not seen; 0 for a rater
        the catch rule stopped. (Catch trials are not slots.)"""
        with self.engine.connect() as c:
            r = c.execute(_RATER, {"rid": rater_id}).one()
            k = self._counts(c, rater_id)
            if r.stopped or self._is_stopped_by_catch_rule(k):
                return 0
            removed = self._removed(k)
            conds = [cd.name for cd in self.manifest.conditions if cd.name not in removed]
            return self._claimable(c, rater_id, conds, self.clock(), count=True)

    def _claimable(self, c: Connection, rater_id: str, conds: list[str], now: float, *, count: bool) -> int:
        """How many slots the rater may claim in ``conds`` (``count=False``: 1 if any, else 0),
        read without locks."""
        if not conds:
            return 0
        params = {"conds": conds, "rid": rater_id, "now": now}
        if count:
            return int(c.execute(_CLAIMABLE_COUNT, params).scalar_one())
        return 0 if c.execute(_CLAIMABLE_ANY, params).first() is None else 1

    def _catch_items(self, condition: str) -> list[int]:
        """Ids of the catch items that fit ``condition``, in id order (items never change)."""
        cached = self._catch_fit.get(condition)
        if cached is None:
            cond = self.manifest.condition(condition)
            cached = self._catch_fit[condition] = sorted(
                i
                for i, it in self._items.items()
                if it.catch is not None and eligible(it, cond, self.manifest.task)
            )
        return cached

    def _open(
        self,
        c: Connection,
        rater_id: str,
        seq: int,
        slot_id: int | None,
        item_id: int,
        condition: str,
        is_catch: bool,
        expert: str | None,
        now: float,
        aid: str | None = None,
    ) -> Assignment:
        values = {
            "id": aid or _new_id(),
            "rater_id": rater_id,
            "seq": seq,
            "slot_id": slot_id,
            "item_id": item_id,
            "question_id": self.item(item_id).question.id,
            "condition": condition,
            "is_catch": is_catch,
            "expert_option": expert,
            "status": "active",
            "assigned_at": now,
            "expires_at": now + self.manifest.assignment_timeout_s,
            "timed_out": False,
            "auto_submitted": False,
        }
        c.execute(insert(assignment_t).values(**values))
        row = c.execute(_A_BY_ID, {"aid": values["id"]}).one()
        return Assignment.from_row(row)


def catch_rule_notes(m: StudyManifest, items: list[StudyItem]) -> list[str]:
    """Conditions where the catch rule (it fires for a rater after ``catch_min``
    catch trials there with accuracy below ``catch_threshold``) can never fire, or only by chance."""
    n = len(m.conditions)
    most, least = math.ceil(m.tasks_per_rater / n), m.tasks_per_rater // n
    catch_items = [it for it in items if it.catch is not None]
    notes = []
    for cond in m.conditions:
        if not any(eligible(it, cond, m.task) for it in catch_items):
            notes.append(
                f"catch rule off in condition {cond.name}: no catch trial fits it (seed-004 catch trials "
                "need snippets or arguments on screen; add explicit "
                "ones with catch: true), so the rule never fires there"
            )
        elif most < m.catch_min:
            notes.append(
                f"catch rule unreachable in condition {cond.name}: a rater does at most {most} tasks there "
                f"(tasks_per_rater {m.tasks_per_rater} over {n} conditions), fewer than catch_min "
                f"{m.catch_min}; raise tasks_per_rater to {m.catch_min * n} or lower catch_min"
            )
        elif min(m.catch_per_condition, least) < m.catch_min:
            given = min(m.catch_per_condition, least)
            expected = given + m.catch_rate * (least - given)
            notes.append(
                f"catch rule fires only by chance in condition {cond.name}: raters get about {expected:.1f} "
                f"catch trials there, fewer than catch_min {m.catch_min}; set catch_per_condition: "
                f"{m.catch_min} (and tasks_per_rater >= {m.catch_min * n}) to guarantee them"
            )
    return notes


def plan_slots(
    manifest: StudyManifest, items: list[tuple[int, StudyItem]], rng: random.Random
) -> list[dict[str, Any]]:
    """The slots of a new study: ``ratings_per_item`` per (real item, condition it fits), each with
    a random order key (raters claim open slots replicate by replicate, in key order) and, for
    expert routing, the option the expert is asked about. ``items`` are (database id, item)."""
    slots = []
    for iid, it in items:
        if it.catch is not None:
            continue
        for cond in manifest.conditions:
            if not eligible(it, cond, manifest.task):
                continue
            for r in range(manifest.ratings_per_item):
                expert = rng.choice(it.question.shorts) if manifest.task == "expert_routing" else None
                slots.append(
                    {
                        "item_id": iid,
                        "question_id": it.question.id,
                        "condition": cond.name,
                        "replicate": r,
                        "order_key": rng.randrange(1 << 30),
                        "expert_option": expert,
                        "status": "open",
                    }
                )
    return slots
