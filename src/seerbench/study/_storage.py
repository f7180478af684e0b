"""Storage and assignment: SQLAlchemy 2 Core over SQLite (WAL, the default) or PostgreSQL.

Concurrency safety lives in the database, not in process locks, so that several server workers
(or processes) can share one study:

- a slot (item x condition x replicate) is claimed with a guarded ``UPDATE ... WHERE status is
  open or expired``; only the transaction whose update changed the row owns it, so two raters never
  both get the last slot;
- ``UNIQUE(rater_id, question_id)`` means a rater never sees a question twice (in any condition,
  catch trials included: a catch trial would give away its question's answer);
- ``UNIQUE(rater_id, seq)`` stops two concurrent "next task" requests of one rater from opening two
  tasks;
- a submission is an ``UPDATE ... WHERE status = 'active'``: a double-clicked submit changes the row
  once and the second request sees the stored answer.

On SQLite every transaction starts with ``BEGIN IMMEDIATE``: a deferred transaction that reads and
then writes fails at once with "database is locked" when another writer got in between, whereas an
immediate one waits on the busy timeout.
"""

from __future__ import annotations

import json
import random
import secrets
import statistics
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.exc import DatabaseError

from seerbench.errors import ConfigError
from seerbench.study._items import StudyItem, build_catch_trials, dedupe_items, missing_passages
from seerbench.study._manifest import CRITIQUE_TASKS, StudyManifest
from seerbench.study._raters import RatersMixin
from seerbench.study._schema import (
    Assignment,
    SubmitResult,
    _make_engine,
    check_connection,
    database_url,
    item_t,
    meta_t,
    metadata,
)
from seerbench.study._schema import assignment_t as assignment_t  # old module path of the tables
from seerbench.study._schema import rater_t as rater_t
from seerbench.study._schema import slot_t as slot_t
from seerbench.study._slots import SlotsMixin, catch_rule_notes, plan_slots

__all__ = ["Assignment", "StudyStore", "SubmitResult", "catch_rule_notes", "database_url", "metadata"]


class StudyStore(SlotsMixin, RatersMixin):
    """A study in a database: its manifest, items, slots, raters and their assignments."""

    def __init__(self, db: str | Path, *, clock: Callable[[], float] = time.time) -> None:
        if "://" not in str(db) and not Path(db).is_file():
            # opening a missing SQLite file would create an empty one
            raise ConfigError(
                f"{db} does not exist; create a study with `seerbench study create MANIFEST --db {db}`"
            )
        if "://" not in str(db):
            with open(db, "rb") as f:
                header = f.read(16)
            if header != b"SQLite format 3\x00":  # checked before opening: SQLite would write to the file
                raise ConfigError(
                    f"{db} is not a study database "
                    f"({'an empty file' if not header else 'not an SQLite file'}); "
                    "give the --db that `seerbench study create` wrote"
                )
        self.url = database_url(db)
        self.engine = _make_engine(self.url)
        check_connection(self.engine, db)
        self.clock = clock
        self._write_lock: AbstractContextManager[Any] = (
            threading.Lock() if self.url.startswith("sqlite") else nullcontext()
        )
        try:
            with self.engine.connect() as c:
                rows = dict(c.execute(select(meta_t.c.key, meta_t.c.value)).all())
        except DatabaseError:  # no such table, or (PostgreSQL) not a database seerbench made
            raise ConfigError(
                f"{db} holds no study; create one with `seerbench study create MANIFEST --db {db}`"
            ) from None
        if "manifest" not in rows:
            raise ConfigError(f"{db} holds no study; create one with `seerbench study create`")
        _add_missing_columns(self.engine)
        self.manifest = StudyManifest.model_validate_json(rows["manifest"])
        self.secret: str = rows["secret"]
        self.admin_token: str = rows["admin_token"]
        # Items never change after creation; keeping them in memory also means no read needs a
        # second connection while a write transaction is open.
        with self.engine.connect() as c:
            self._items: dict[int, StudyItem] = {
                row.id: StudyItem.from_row(row.key, row.data, row.answer_case, row.catch)
                for row in c.execute(select(item_t))
            }
        self._catch_fit: dict[str, list[int]] = {}

    # ------------------------------------------------------------------ creation
    @classmethod
    def create(
        cls,
        manifest: StudyManifest,
        items: list[StudyItem],
        db: str | Path,
        *,
        clock: Callable[[], float] = time.time,
    ) -> StudyStore:
        """Create the study's tables, items and slots in an empty database.

        Questions repeated under another id are merged, conditions that show the passage are
        refused on items without one (unless ``allow_missing_passage``), and what was merged or
        cannot work (e.g. a catch rule that can never fire) is kept as notes (:meth:`notes`).
        """
        # critique items are answers keyed by answer id: two answers may share a question and text
        items, merged = (items, []) if manifest.task in CRITIQUE_TASKS else dedupe_items(items)
        notes = [
            f"merged duplicate question {gone} into {kept} (same text, options and passage)"
            for gone, kept in merged
        ]
        missing = missing_passages(items, manifest)
        if missing:
            desc = "; ".join(
                f"{cond}: {len(keys)} items ({', '.join(keys[:5])}{', ...' if len(keys) > 5 else ''})"
                for cond, keys in missing.items()
            )
            if not manifest.allow_missing_passage:
                raise ConfigError(
                    f"conditions that show the passage have items without one (no source_text): {desc}; add "
                    "the passages (for single_turn_debate: `seerbench datasets convert ... -o "
                    "quality_path=FILE`), use conditions without 'passage' (Q, or {name: ..., show: "
                    "[snippets, arguments]}), or set allow_missing_passage: true to show them without"
                )
            notes.append(f"shown without a passage (allow_missing_passage): {desc}")
        # every item should fit a rater's quota: a rater never sees a question twice
        distinct = len({it.question.id for it in items})
        least = (
            manifest.tasks_per_rater if manifest.min_tasks_for_code is None else manifest.min_tasks_for_code
        )
        if least > distinct:
            what = "tasks_per_rater" if manifest.min_tasks_for_code is None else "min_tasks_for_code"
            raise ConfigError(
                f"{what} {least} exceeds the {distinct} distinct questions"
                f"{f' ({len(merged)} merged as duplicates)' if merged else ''}: a rater never sees a "
                f"question twice, so no rater could earn the completion code; set {what} to at most "
                f"{distinct} or add items"
            )
        url = database_url(db)
        new_file = "://" not in str(db) and not Path(db).exists()
        engine = _make_engine(url)
        created = False
        try:
            check_connection(engine, db)
            with engine.connect() as c:
                if c.dialect.has_table(c, "study_meta"):
                    raise ConfigError(f"{db} already holds a study; use a new database file or URL")
            metadata.create_all(engine)
            created = True
            rng = random.Random(manifest.seed)
            uses_catch = manifest.catch_rate > 0 or manifest.catch_per_condition > 0
            catch = build_catch_trials(items, manifest.seed) if uses_catch else []
            all_items = items + [c for c in catch if not any(i.key == c.key for i in items)]
            if uses_catch:
                notes.extend(catch_rule_notes(manifest, all_items))
            with engine.connect() as c, c.execution_options(seerbench_write=True).begin():
                secret = secrets.token_urlsafe(32)
                token = manifest.admin_token or secrets.token_urlsafe(24)
                c.execute(
                    insert(meta_t),
                    [
                        {"key": "manifest", "value": manifest.model_dump_json()},
                        {"key": "secret", "value": secret},
                        {"key": "admin_token", "value": token},
                        {"key": "created_at", "value": repr(clock())},
                        {"key": "notes", "value": json.dumps(notes)},
                    ],
                )
                ids = []
                for it in all_items:
                    pk = c.execute(
                        insert(item_t).values(
                            key=it.key,
                            question_id=it.question.id,
                            answer_case=it.answer_case,
                            catch=it.catch,
                            correct=it.correct,
                            data=it.to_json(),
                        )
                    ).inserted_primary_key
                    assert pk is not None
                    ids.append(pk[0])
                slots = plan_slots(manifest, list(zip(ids, all_items, strict=True)), rng)
                empty = [
                    cond.name
                    for cond in manifest.conditions
                    if not any(s["condition"] == cond.name for s in slots)
                ]
                if empty and manifest.task == "critique":
                    raise ConfigError(
                        f"conditions {empty} have no items to show: the critiques file holds no answers of "
                        "their answer kinds (answer_kind model, reference or misleading)"
                    )
                if empty:
                    raise ConfigError(
                        f"conditions {empty} have no items to show: transcript conditions need items from "
                        "a results file, the others need question items"
                    )
                if slots:
                    c.execute(insert(slot_t), slots)
        except BaseException:
            # a failed create leaves nothing behind, so the same command can be run again
            if created:
                metadata.drop_all(engine)
            engine.dispose()
            if new_file:
                for suffix in ("", "-wal", "-shm", "-journal"):
                    Path(f"{db}{suffix}").unlink(missing_ok=True)
            raise
        engine.dispose()
        return cls(db, clock=clock)

    def close(self) -> None:
        self.engine.dispose()

    def progress(self) -> dict[str, Any]:
        """Progress per condition and per rater, catch-trial accuracy and median time per task."""
        now = self.clock()
        with self.engine.connect() as c:
            slots = c.execute(
                select(slot_t.c.condition, slot_t.c.status, slot_t.c.expires_at, func.count()).group_by(
                    slot_t.c.condition, slot_t.c.status, slot_t.c.expires_at
                )
            ).all()
            raters = c.execute(select(rater_t).order_by(rater_t.c.created_at)).all()
            subs = c.execute(
                select(
                    assignment_t.c.rater_id,
                    assignment_t.c.condition,
                    assignment_t.c.is_catch,
                    assignment_t.c.correct,
                    assignment_t.c.seconds,
                    assignment_t.c.timed_out,
                ).where(assignment_t.c.status == "submitted")
            ).all()
        conds: dict[str, dict[str, Any]] = {
            cd.name: {"total": 0, "done": 0, "in_progress": 0, "open": 0} for cd in self.manifest.conditions
        }
        for cond, st, exp, n in slots:
            d = conds.setdefault(cond, {"total": 0, "done": 0, "in_progress": 0, "open": 0})
            d["total"] += n
            if st == "done":
                d["done"] += n
            elif st == "taken" and exp is not None and exp >= now:
                d["in_progress"] += n
            else:
                d["open"] += n
        per_rater: dict[str, dict[str, Any]] = {}
        for r in raters:
            per_rater[r.id] = {
                "rater_id": r.id,
                "external_id": r.external_id,
                "source": r.source,
                "tutorial_passed": bool(r.tutorial_passed),
                "quiz_attempts": r.quiz_attempts,
                "stopped": bool(r.stopped),
                "finished": r.finished_at is not None,
                "tasks": 0,
                "scored": 0,
                "scored_correct": 0.0,
                "catch": 0,
                "catch_correct": 0.0,
                "_secs": [],
                "_catch_by_cond": {},
            }
        catch_n, catch_ok, secs = 0, 0.0, []
        for rid, cond, is_catch, correct, s, _to in subs:
            pr = per_rater[rid]
            pr["tasks"] += 1
            if s is not None:
                pr["_secs"].append(s)
                secs.append(s)
            if is_catch:
                pr["catch"] += 1
                pr["catch_correct"] += correct or 0.0
                n_c, ok_c = pr["_catch_by_cond"].get(cond, (0, 0.0))
                pr["_catch_by_cond"][cond] = (n_c + 1, ok_c + (correct or 0.0))
                catch_n += 1
                catch_ok += correct or 0.0
            else:
                if correct is not None:  # skips are not scored (seed 000: "can't assess" is wrong)
                    pr["scored"] += 1
                    pr["scored_correct"] += correct
                if cond in conds:
                    conds[cond]["judgments"] = conds[cond].get("judgments", 0) + 1
        m = self.manifest
        for pr in per_rater.values():
            s = pr.pop("_secs")
            pr["median_seconds"] = statistics.median(s) if s else None
            pr["total_seconds"] = sum(s)
            pr["accuracy"] = pr["scored_correct"] / pr["scored"] if pr["scored"] else None
            pr["catch_accuracy"] = pr["catch_correct"] / pr["catch"] if pr["catch"] else None
            pr["removed_from"] = sorted(
                cd
                for cd, (n_c, ok_c) in pr.pop("_catch_by_cond").items()
                if n_c >= m.catch_min and ok_c / n_c < m.catch_threshold
            )
        return {
            "conditions": conds,
            "raters": list(per_rater.values()),
            "catch_trials": catch_n,
            "catch_accuracy": catch_ok / catch_n if catch_n else None,
            "median_seconds": statistics.median(secs) if secs else None,
            "judgments": len(subs),
        }

    def notes(self) -> list[str]:
        """What ``create`` merged, or found that cannot work as configured (e.g. an unreachable
        catch rule), one sentence each."""
        return list(json.loads(self.meta().get("notes") or "[]"))

    def meta(self) -> dict[str, Any]:
        with self.engine.connect() as c:
            return {k: v for k, v in c.execute(select(meta_t.c.key, meta_t.c.value)).all() if k != "secret"}


def _add_missing_columns(engine: Any) -> None:
    """Columns later versions added to tables of a study made before them (nullable ones only,
    so that rows already there stay valid): ``assignment.study_param`` / ``session_param``."""
    from sqlalchemy import inspect, text

    have = {col["name"] for col in inspect(engine).get_columns("assignment")}
    missing = [col for col in assignment_t.columns if col.name not in have]
    if not missing:
        return
    for col in missing:
        assert col.nullable, col.name
        try:
            with engine.begin() as c:
                c.execute(
                    text(f"ALTER TABLE assignment ADD COLUMN {col.name} {col.type.compile(engine.dialect)}")
                )
        except DatabaseError:  # another worker opening the same study added it first
            if col.name not in {x["name"] for x in inspect(engine).get_columns("assignment")}:
                raise
