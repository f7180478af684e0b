"""The study's database schema: tables, the engine (SQLite WAL with ``BEGIN IMMEDIATE`` writes, or
PostgreSQL), the statements on the request path, and the row types read from them.

The concurrency guarantees that live in the schema (unique constraints, the partial index of one
active task per rater) are described in :mod:`seerbench.study._storage`.
"""

from __future__ import annotations

import secrets
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
    or_,
    select,
)
from sqlalchemy.engine import Engine

from seerbench.errors import ConfigError

__all__ = [
    "Assignment",
    "SubmitResult",
    "assignment_t",
    "critique_t",
    "database_url",
    "item_t",
    "meta_t",
    "metadata",
    "rater_t",
    "slot_t",
    "validation_t",
]

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
    # the rater's Prolific STUDY_ID / SESSION_ID when the task was submitted (a re-entry through
    # another link changes the rater's, not those of the tasks done before it)
    Column("study_param", String(255)),
    Column("session_param", String(255)),
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

# Critique tasks (seed 002): the critiques a rater wrote in one task, in order. ``model_critique_id``
# is the model critique the rater "used" (pre-filled from), ``edited`` whether the text was changed.
critique_t = Table(
    "critique",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("assignment_id", String(32), ForeignKey("assignment.id"), nullable=False),
    Column("n", Integer, nullable=False),
    Column("text", Text, nullable=False),
    Column("severity", String(16), nullable=False),
    Column("category", String(64), nullable=False),
    Column("model_critique_id", String(255)),
    Column("used", Boolean, nullable=False),
    Column("edited", Boolean, nullable=False),
    UniqueConstraint("assignment_id", "n"),
)

# Validation tasks: one mark per critique of the judged critique task (``critique_id`` is the
# critique study's export id); ``covers_intended`` only for misleading answers.
validation_t = Table(
    "validation",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("assignment_id", String(32), ForeignKey("assignment.id"), nullable=False),
    Column("critique_id", String(255), nullable=False),
    Column("valid", Boolean, nullable=False),
    Column("covers_intended", Boolean),
    UniqueConstraint("assignment_id", "critique_id"),
)


def database_url(db: str | Path) -> str:
    """A SQLAlchemy URL from a path (SQLite) or a URL; ``postgresql://`` uses psycopg 3."""
    s = str(db)
    if "://" not in s:
        return f"sqlite:///{Path(s).resolve()}"
    if s.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + s.split("://", 1)[1]
    return s


def check_connection(engine: Engine, db: str | Path) -> None:
    """Connect once, so that a database that cannot be reached (a server down, a wrong password,
    a folder that does not exist) is one line naming it, not a driver's traceback or a misleading
    'holds no study'."""
    from sqlalchemy.exc import DBAPIError

    from seerbench.errors import ConfigError

    s = str(db)
    if "://" not in s and not Path(s).resolve().parent.is_dir():
        raise ConfigError(
            f"cannot make {s}: the folder {Path(s).resolve().parent} does not exist; create it first"
        )
    try:
        engine.connect().close()
    except DBAPIError as e:
        shown = engine.url.render_as_string(hide_password=True)
        why = " ".join(str(e.orig if e.orig is not None else e).split()) or type(e.orig).__name__
        raise ConfigError(f"cannot connect to the database {shown}: {why}") from None


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
_A_ACTIVE = select(assignment_t).where(
    assignment_t.c.rater_id == bindparam("rid"), assignment_t.c.status == "active"
)
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
# A claim reads the first candidate slot of two scans in index order (open slots; taken slots whose
# time ran out) and takes the earlier: one query with an OR of both sorted every slot of the
# condition on each claim.
_PICK = select(
    slot_t.c.id,
    slot_t.c.item_id,
    slot_t.c.expert_option,
    slot_t.c.assignment_id,
    slot_t.c.replicate,
    slot_t.c.order_key,
).where(
    slot_t.c.condition == bindparam("cond"),
    ~exists().where(
        assignment_t.c.rater_id == bindparam("rid"), assignment_t.c.question_id == slot_t.c.question_id
    ),
)
# Slots a rater may claim, read without locks: what a claim must find before it may say "exhausted"
# (a slot another claimer has locked but not yet taken counts: it may yet be left open).
_CLAIMABLE = select(slot_t.c.id).where(
    slot_t.c.condition.in_(bindparam("conds", expanding=True)),
    or_(
        slot_t.c.status == "open",
        and_(slot_t.c.status == "taken", slot_t.c.expires_at < bindparam("now")),
    ),
    ~exists().where(
        assignment_t.c.rater_id == bindparam("rid"), assignment_t.c.question_id == slot_t.c.question_id
    ),
)
_CLAIMABLE_ANY = _CLAIMABLE.limit(1)
_CLAIMABLE_COUNT = select(func.count()).select_from(_CLAIMABLE.subquery())
# On PostgreSQL the candidates are locked as they are read and rows another claimer holds are
# skipped (FOR UPDATE SKIP LOCKED): under READ COMMITTED, concurrent claimers otherwise all read the
# same first rows and all but one lose every race. One row a scan: a claim holds every row it read
# until it commits, so with 8 a launch's claimers held 8 slots each and near the end of a study
# the others found every open slot held and reported "exhausted" (issue 28). SQLite ignores the
# clause (its writers queue, so nothing changes between read and update).
_PICK_OPEN = (
    _PICK.where(slot_t.c.status == "open")
    .order_by(slot_t.c.replicate, slot_t.c.order_key)
    .limit(1)
    .with_for_update(skip_locked=True, of=slot_t)
)
_PICK_EXPIRED = (
    _PICK.where(slot_t.c.status == "taken", slot_t.c.expires_at < bindparam("now"))
    .order_by(slot_t.c.replicate, slot_t.c.order_key)
    .limit(1)
    .with_for_update(skip_locked=True, of=slot_t)
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
class SubmitResult:
    """What happened to a submission: ``stored`` (first time), ``duplicate`` (already stored, e.g.
    a double click) or ``reclaimed`` (the task was given to someone else after it expired)."""

    outcome: str
    assignment: Assignment


def _new_id() -> str:
    """A random id of 24 hex digits: never starts with a character that a spreadsheet takes for a
    formula (``-``, ``=``, ``+``, ``@``; 1 in 64 URL-safe ids began with ``-`` and the CSV
    formula guard rewrote them, so CSV ids did not join with the JSONL or the database)."""
    return secrets.token_hex(12)
