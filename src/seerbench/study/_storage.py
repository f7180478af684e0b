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
import math
import random
import secrets
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    and_,
    bindparam,
    create_engine,
    event,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError

from seerbench.errors import ConfigError
from seerbench.study._items import StudyItem, build_catch_trials, dedupe_items, eligible, missing_passages
from seerbench.study._manifest import StudyManifest

__all__ = ["Assignment", "StudyStore", "SubmitResult", "database_url"]

metadata = MetaData()

meta_t = Table("study_meta", metadata, Column("key", String(64), primary_key=True), Column("value", Text))

item_t = Table(
    "item",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("key", String(255), nullable=False, unique=True),
    Column("question_id", String(255), nullable=False),
    Column("answer_case", String(255)),
    Column("catch", String(16)),
    Column("correct", String(255), nullable=False),
    Column("data", Text, nullable=False),
)

slot_t = Table(
    "slot",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("item_id", Integer, ForeignKey("item.id"), nullable=False),
    Column("question_id", String(255), nullable=False),
    Column("condition", String(64), nullable=False),
    Column("replicate", Integer, nullable=False),
    Column("order_key", Integer, nullable=False),
    Column("expert_option", String(255)),
    Column("status", String(8), nullable=False, default="open"),
    Column("assignment_id", String(32)),
    Column("expires_at", Float),
    UniqueConstraint("item_id", "condition", "replicate"),
    Index("ix_slot_pick", "condition", "status", "replicate", "order_key"),
)

rater_t = Table(
    "rater",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("external_id", String(255), nullable=False, unique=True),
    Column("source", String(16), nullable=False),
    Column("study_param", String(255)),
    Column("session_param", String(255)),
    Column("session", String(32)),
    Column("created_at", Float, nullable=False),
    Column("tutorial_passed", Boolean, nullable=False, default=False),
    Column("quiz_attempts", Integer, nullable=False, default=0),
    Column("stopped", Boolean, nullable=False, default=False),
    Column("finished_at", Float),
)

assignment_t = Table(
    "assignment",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("rater_id", String(32), ForeignKey("rater.id"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("slot_id", Integer, ForeignKey("slot.id")),
    Column("item_id", Integer, ForeignKey("item.id"), nullable=False),
    Column("question_id", String(255), nullable=False),
    Column("condition", String(64), nullable=False),
    Column("is_catch", Boolean, nullable=False, default=False),
    Column("expert_option", String(255)),
    Column("status", String(10), nullable=False),
    Column("assigned_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    Column("shown_at", Float),
    Column("timer_started_at", Float),
    Column("read_deadline", Float),
    Column("final_deadline", Float),
    Column("submitted_at", Float),
    Column("seconds", Float),
    Column("timed_out", Boolean, nullable=False, default=False),
    Column("auto_submitted", Boolean, nullable=False, default=False),
    Column("answer", String(255)),
    Column("probability", Float),
    Column("confidence", Integer),
    Column("helpfulness", Integer),
    Column("rating", String(32)),
    Column("comment", Text),
    Column("correct", Float),
    UniqueConstraint("rater_id", "question_id"),
    UniqueConstraint("rater_id", "seq"),
    Index("ix_assignment_rater", "rater_id", "status"),
)

# One open task per rater, enforced by a partial unique index (SQLite and PostgreSQL both have them).
Index(
    "ux_one_active_per_rater",
    assignment_t.c.rater_id,
    unique=True,
    sqlite_where=assignment_t.c.status == "active",
    postgresql_where=assignment_t.c.status == "active",
)


def database_url(db: str | Path) -> str:
    """A SQLAlchemy URL from a path (SQLite) or a URL; ``postgresql://`` uses psycopg 3."""
    s = str(db)
    if "://" not in s:
        return f"sqlite:///{Path(s).resolve()}"
    if s.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + s.split("://", 1)[1]
    return s


def _make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 30},
            pool_size=32,
            max_overflow=32,
        )

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _rec: Any) -> None:
            # Let SQLAlchemy's "begin" event issue the BEGIN, so it can be IMMEDIATE.
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            # Write transactions take the lock up front; plain reads stay deferred (WAL readers
            # never wait on the writer).
            immediate = conn.get_execution_options().get("seerbench_write", False)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

        return engine
    try:
        return create_engine(url, pool_size=32, max_overflow=32, pool_pre_ping=True)
    except ModuleNotFoundError as e:
        raise ConfigError(
            f"cannot open {url.split('://')[0]} database: {e}; for PostgreSQL install seerbench[postgres]"
        ) from None


# Statements on the request path, built once with bound parameters: building a statement and its
# cache key took longer than running it on SQLite (SQLAlchemy memoises the key per statement).
_A_BY_ID = select(assignment_t).where(assignment_t.c.id == bindparam("aid"))
_A_OWN = _A_BY_ID.where(assignment_t.c.rater_id == bindparam("rid"))
_A_OWN_SESSION = _A_OWN.join(rater_t, rater_t.c.id == assignment_t.c.rater_id).where(
    rater_t.c.session == bindparam("sess")
)
_A_ACTIVE = select(assignment_t).where(assignment_t.c.rater_id == bindparam("rid"), assignment_t.c.status == "active")
_RATER = select(rater_t).where(rater_t.c.id == bindparam("rid"))
_SLOT_OWNER = select(slot_t.c.assignment_id).where(slot_t.c.id == bindparam("sid"))
_COUNTS = (
    select(
        assignment_t.c.condition,
        assignment_t.c.status,
        assignment_t.c.is_catch,
        func.count(),
        func.coalesce(func.sum(assignment_t.c.correct), 0.0),
    )
    .where(assignment_t.c.rater_id == bindparam("rid"))
    .group_by(assignment_t.c.condition, assignment_t.c.status, assignment_t.c.is_catch)
)
_NEXT_SEQ = select(func.coalesce(func.max(assignment_t.c.seq), -1) + 1).where(
    assignment_t.c.rater_id == bindparam("rid")
)
_SEEN_QUESTIONS = select(assignment_t.c.question_id).where(assignment_t.c.rater_id == bindparam("rid"))
# A claim reads a few candidate slots, so a lost race can move on without a new query round trip.
# Two scans in index order (open slots; taken slots whose time ran out), merged: one query with an
# OR of both sorted every slot of the condition on each claim.
_PICK = select(
    slot_t.c.id, slot_t.c.item_id, slot_t.c.expert_option, slot_t.c.assignment_id, slot_t.c.replicate, slot_t.c.order_key
).where(
    slot_t.c.condition == bindparam("cond"),
    ~exists().where(assignment_t.c.rater_id == bindparam("rid"), assignment_t.c.question_id == slot_t.c.question_id),
)
_PICK_OPEN = _PICK.where(slot_t.c.status == "open").order_by(slot_t.c.replicate, slot_t.c.order_key).limit(8)
_PICK_EXPIRED = (
    _PICK.where(slot_t.c.status == "taken", slot_t.c.expires_at < bindparam("now"))
    .order_by(slot_t.c.replicate, slot_t.c.order_key)
    .limit(8)
)


@dataclass
class Assignment:
    """One rater's task: an item under a condition, with server-side timestamps and the answer."""

    id: str
    rater_id: str
    seq: int
    slot_id: int | None
    item_id: int
    question_id: str
    condition: str
    is_catch: bool
    expert_option: str | None
    status: str
    assigned_at: float
    expires_at: float
    shown_at: float | None
    timer_started_at: float | None
    read_deadline: float | None
    final_deadline: float | None
    submitted_at: float | None
    seconds: float | None
    timed_out: bool
    auto_submitted: bool
    answer: str | None
    probability: float | None
    confidence: int | None
    helpfulness: int | None
    rating: str | None
    comment: str | None
    correct: float | None

    @classmethod
    def from_row(cls, row: Any) -> Assignment:
        return cls(**{k: row._mapping[k] for k in cls.__dataclass_fields__})


@dataclass
class _Counts:
    """One rater's tasks: per condition (not abandoned), catch trials given and submitted
    ((n, right) per condition), submitted tasks, judged (non-catch) submitted tasks, next seq."""

    per_cond: dict[str, int]
    catch_given: dict[str, int]
    catch_done: dict[str, tuple[int, float]]
    done: int = 0
    scored: int = 0
    seq: int = 0


@dataclass
class SubmitResult:
    """What happened to a submission: ``stored`` (first time), ``duplicate`` (already stored, e.g.
    a double click) or ``reclaimed`` (the task was given to someone else after it expired)."""

    outcome: str
    assignment: Assignment


def _new_id() -> str:
    return secrets.token_urlsafe(12)


class StudyStore:
    """A study in a database: its manifest, items, slots, raters and their assignments."""

    def __init__(self, db: str | Path, *, clock: Callable[[], float] = time.time) -> None:
        if "://" not in str(db) and not Path(db).is_file():
            # opening a missing SQLite file would create an empty one
            raise ConfigError(f"{db} does not exist; create a study with `seerbench study create MANIFEST --db {db}`")
        self.url = database_url(db)
        self.engine = _make_engine(self.url)
        self.clock = clock
        self._write_lock: AbstractContextManager[Any] = (
            threading.Lock() if self.url.startswith("sqlite") else nullcontext()
        )
        try:
            with self.engine.connect() as c:
                rows = dict(c.execute(select(meta_t.c.key, meta_t.c.value)).all())
        except OperationalError:
            raise ConfigError(
                f"{db} holds no study; create one with `seerbench study create MANIFEST --db {db}`"
            ) from None
        if "manifest" not in rows:
            raise ConfigError(f"{db} holds no study; create one with `seerbench study create`")
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
        items, merged = dedupe_items(items)
        notes = [f"merged duplicate question {gone} into {kept} (same text, options and passage)" for gone, kept in merged]
        missing = missing_passages(items, manifest)
        if missing:
            desc = "; ".join(
                f"{cond}: {len(keys)} items ({', '.join(keys[:5])}{', ...' if len(keys) > 5 else ''})"
                for cond, keys in missing.items()
            )
            if not manifest.allow_missing_passage:
                raise ConfigError(
                    f"conditions that show the passage have items without one (no source_text): {desc}; add "
                    "the passages (for single_turn_debate: `seerbench datasets convert ... -o quality_path=FILE`), "
                    "use conditions without 'passage' (Q, or {name: ..., show: [snippets, arguments]}), or set "
                    "allow_missing_passage: true to show them without"
                )
            notes.append(f"shown without a passage (allow_missing_passage): {desc}")
        url = database_url(db)
        engine = _make_engine(url)
        try:
            with engine.connect() as c:
                if c.dialect.has_table(c, "study_meta"):
                    raise ConfigError(f"{db} already holds a study; use a new database file or URL")
            metadata.create_all(engine)
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
                slots = []
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
                    iid = pk[0]
                    if it.catch is not None:
                        continue
                    for cond in manifest.conditions:
                        if not eligible(it, cond, manifest.task):
                            continue
                        for r in range(manifest.ratings_per_item):
                            expert = (
                                rng.choice(it.question.shorts) if manifest.task == "expert_routing" else None
                            )
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
                empty = [
                    cond.name
                    for cond in manifest.conditions
                    if not any(s["condition"] == cond.name for s in slots)
                ]
                if empty:
                    raise ConfigError(
                        f"conditions {empty} have no items to show: transcript conditions need items from "
                        "a results file, the others need question items"
                    )
                if slots:
                    c.execute(insert(slot_t), slots)
        finally:
            engine.dispose()
        return cls(db, clock=clock)

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` on SQLite).

        On SQLite, writers of this process also queue on a lock first: SQLite's own busy handler
        waits by sleeping with growing back-off (up to 100 ms a try), which under many threads
        costs far more than waiting in line. Correctness never rests on this lock; the database
        constraints and guarded updates hold across processes.
        """
        with self._write_lock, self.engine.connect() as c:
            c.execution_options(seerbench_write=True)
            with c.begin():
                yield c

    # ------------------------------------------------------------------ items
    def item(self, item_id: int) -> StudyItem:
        """The item with database id ``item_id`` (cached: items never change after creation)."""
        return self._items[item_id]

    # ------------------------------------------------------------------ raters
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

    def record_quiz(self, rater_id: str, passed: bool) -> None:
        values: dict[str, Any] = {"quiz_attempts": rater_t.c.quiz_attempts + 1}
        if passed:
            values["tutorial_passed"] = True
        with self._tx() as c:
            c.execute(update(rater_t).where(rater_t.c.id == rater_id).values(**values))

    # ------------------------------------------------------------------ assignment
    def _counts(self, c: Connection, rater_id: str) -> _Counts:
        rows = c.execute(_COUNTS, {"rid": rater_id}).all()
        k = _Counts({cond.name: 0 for cond in self.manifest.conditions}, {}, {})
        for cond_name, st, is_catch, n, right in rows:
            if st == "submitted":
                k.done += n
                k.scored += 0 if is_catch else n
                if is_catch:
                    k.catch_done[cond_name] = (int(n), float(right))
            if st != "abandoned":
                k.per_cond[cond_name] = k.per_cond.get(cond_name, 0) + n
                if is_catch:
                    k.catch_given[cond_name] = k.catch_given.get(cond_name, 0) + n
        k.seq = int(c.execute(_NEXT_SEQ, {"rid": rater_id}).scalar_one())
        return k

    def _removed(self, k: _Counts) -> set[str]:
        """Conditions the rater is removed from (seed 004, counted per condition): at least
        ``catch_min`` catch trials submitted there with accuracy below ``catch_threshold``."""
        m = self.manifest
        return {
            cond for cond, (n, right) in k.catch_done.items() if n >= m.catch_min and right / n < m.catch_threshold
        }

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

    def next_assignment(self, rater_id: str) -> tuple[Assignment | None, str]:
        """The rater's open task, or a newly claimed one.

        Returns ``(assignment, reason)`` with reason ``"ok"``, ``"done"`` (quota reached),
        ``"stopped"`` (failed catch trials) or ``"exhausted"`` (nothing left this rater may judge).
        Retries on a lost race (another rater took the slot first).
        """
        for _ in range(20):
            try:
                return self._next_once(rater_id)
            except IntegrityError:
                continue  # a concurrent request of the same rater or a lost slot race: look again
        return None, "exhausted"

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
            if len(removed) == len(m.conditions):
                c.execute(update(rater_t).where(rater_t.c.id == rater_id).values(stopped=True))
                return None, "stopped"
            if k.done >= m.tasks_per_rater:
                return None, "done"
            per_cond, seq = k.per_cond, k.seq
            rng = random.Random(f"{m.seed}:{rater_id}:{seq}")
            order = sorted((cd for cd in per_cond if cd not in removed), key=lambda cd: (per_cond[cd], rng.random()))
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
                        return self._open(c, rater_id, seq, None, rng.choice(ok), cond_name, True, None, now), "ok"
                params = {"cond": cond_name, "rid": rater_id, "now": now}
                slot_rows = [*c.execute(_PICK_OPEN, params), *c.execute(_PICK_EXPIRED, params)]
                slot_rows.sort(key=lambda r: (r.replicate, r.order_key))
                for sid, iid, expert, old, _rep, _key in slot_rows[:8]:
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
            return None, "exhausted"

    def _catch_items(self, condition: str) -> list[int]:
        """Ids of the catch items that fit ``condition``, in id order (items never change)."""
        cached = self._catch_fit.get(condition)
        if cached is None:
            cond = self.manifest.condition(condition)
            cached = self._catch_fit[condition] = sorted(
                i for i, it in self._items.items() if it.catch is not None and eligible(it, cond, self.manifest.task)
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
        if is_catch and self.manifest.task == "expert_routing":
            expert = random.Random(f"{self.manifest.seed}:{rater_id}:{seq}:x").choice(self.item(item_id).question.shorts)
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
            values: dict[str, Any] = {"timer_started_at": now, "shown_at": func.coalesce(assignment_t.c.shown_at, now)}
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

    def submit(self, aid: str, rater_id: str, fields: dict[str, Any], *, auto: bool = False) -> SubmitResult | None:
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
                    c.execute(update(assignment_t).where(assignment_t.c.id == a.id).values(status="abandoned"))
                    a.status = "abandoned"
                    return SubmitResult("reclaimed", a)
            stored = self._store_answer(c, a, now, fields, auto=auto)
            row = c.execute(_A_BY_ID, {"aid": aid}).one()
            return SubmitResult("stored" if stored else "duplicate", Assignment.from_row(row))

    def _store_answer(self, c: Connection, a: Assignment, now: float, fields: dict[str, Any], *, auto: bool) -> bool:
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
                update(slot_t).where(slot_t.c.id == a.slot_id, slot_t.c.assignment_id == a.id).values(status="done")
            )
        if a.is_catch:
            self._stopped(c, a.rater_id)
        return True

    def _stopped(self, c: Connection, rater_id: str) -> bool:
        """Stop a rater who is removed from every condition by the catch rule (see :meth:`_removed`)."""
        if len(self._removed(self._counts(c, rater_id))) < len(self.manifest.conditions):
            return False
        c.execute(update(rater_t).where(rater_t.c.id == rater_id).values(stopped=True))
        return True

    def finish(self, rater_id: str) -> bool:
        """Mark the rater finished if they earned the completion code: ``tasks_per_rater`` tasks
        submitted, or (when no more tasks are left for them) ``min_tasks_for_code`` judged tasks,
        catch trials not counted. Returns whether they earned it."""
        m = self.manifest
        with self._tx() as c:
            k = self._counts(c, rater_id)
            earned = k.done >= m.tasks_per_rater or (
                m.min_tasks_for_code is not None and k.scored >= m.min_tasks_for_code
            )
            if earned:
                c.execute(
                    update(rater_t)
                    .where(rater_t.c.id == rater_id, rater_t.c.finished_at.is_(None))
                    .values(finished_at=self.clock())
                )
        return earned

    # ------------------------------------------------------------------ reading back
    def assignments(self, *, submitted_only: bool = True) -> list[tuple[Assignment, dict[str, Any]]]:
        """Every (submitted) assignment with its rater row, in submission order."""
        q = select(
            assignment_t, rater_t.c.external_id, rater_t.c.source, rater_t.c.study_param, rater_t.c.session_param
        ).join(
            rater_t, rater_t.c.id == assignment_t.c.rater_id
        )
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
                    "study_param": r.study_param,
                    "session_param": r.session_param,
                },
            )
            for r in rows
        ]

    def progress(self) -> dict[str, Any]:
        """Progress per condition and per rater, catch-trial accuracy and median time per task."""
        now = self.clock()
        with self.engine.connect() as c:
            slots = c.execute(
                select(slot_t.c.condition, slot_t.c.status, slot_t.c.expires_at, func.count())
                .group_by(slot_t.c.condition, slot_t.c.status, slot_t.c.expires_at)
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
                if correct is not None:  # skips and "can't assess" are not scored
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


def catch_rule_notes(m: StudyManifest, items: list[StudyItem]) -> list[str]:
    """Conditions where the catch rule (a rater is removed from a condition after ``catch_min``
    catch trials there with accuracy below ``catch_threshold``) can never fire, or only by chance."""
    n = len(m.conditions)
    most, least = math.ceil(m.tasks_per_rater / n), m.tasks_per_rater // n
    catch_items = [it for it in items if it.catch is not None]
    notes = []
    for cond in m.conditions:
        if not any(eligible(it, cond, m.task) for it in catch_items):
            notes.append(
                f"catch rule off in condition {cond.name}: no catch trial fits it (seed-004 catch trials need "
                "snippets or arguments on screen; add explicit ones with catch: true), so no rater is removed from it"
            )
        elif most < m.catch_min:
            notes.append(
                f"catch rule unreachable in condition {cond.name}: a rater does at most {most} tasks there "
                f"(tasks_per_rater {m.tasks_per_rater} over {n} conditions), fewer than catch_min {m.catch_min}; "
                f"raise tasks_per_rater to {m.catch_min * n} or lower catch_min"
            )
        elif min(m.catch_per_condition, least) < m.catch_min:
            given = min(m.catch_per_condition, least)
            expected = given + m.catch_rate * (least - given)
            notes.append(
                f"catch rule fires only by chance in condition {cond.name}: raters get about {expected:.1f} catch "
                f"trials there, fewer than catch_min {m.catch_min}; set catch_per_condition: {m.catch_min} "
                f"(and tasks_per_rater >= {m.catch_min * n}) to guarantee them"
            )
    return notes


def _correctness(task: str, item: StudyItem, expert: str | None, answer: str | None, timed_out: bool) -> float | None:
    """1.0 / 0.0 for a right / wrong answer, None when the answer says nothing (skip, can't assess)."""
    truth = item.correct
    if timed_out:
        return 0.0  # seed 004: an auto-submitted task with no selection counts as wrong
    if task == "two_option":
        return None if answer is None else float(answer == truth)
    if task == "expert_routing":
        if answer not in ("yes", "no") or expert is None:
            return None
        return float((answer == "yes") == (expert == truth))
    # factuality: answer is the binarised label or a marker
    if answer in (None, "skip", "cant_assess"):
        return None
    if answer == "no_claim":
        return 0.0  # seed 000: all items hold claims, so "doesn't require assessment" is wrong
    return float(answer == truth)

