"""The record store: the one reader and writer of the JSON-lines files seerbench writes
(``results.jsonl`` of ``seerbench run``, ``ratings.jsonl``/``samples.jsonl`` of ``rate``,
``critiques.jsonl`` of ``critique``) and of every file it replaces whole (stats, exports, metadata).

The rules, one place for every command:

- **append-only while running**: one complete line per record, written with one ``write`` on a
  file opened for appending (:class:`Appender`), so a process killed at any moment leaves complete
  lines and at most one torn last line;
- **atomic replace**: a file is replaced whole through a temporary file of this process (its PID
  in the name), flushed, fsynced and renamed over the old one (:func:`atomic_write_text`,
  :func:`atomic_write_lines`); a crash leaves the old file or the new one, never half of either;
- **one torn-line policy**: a line that does not parse (a torn last line left by a crash, or junk)
  is skipped and reported, everywhere; only a writer resuming its own file cuts a torn end off
  (:func:`done_keys`), so that the next append starts on a fresh line;
- **dedupe by key**: a record's key (``question_id``, ``item_id``, ``answer_id``) appears once;
  the first usable line of a key wins and later ones are counted as duplicates;
- **fingerprints**: a line that carries a ``fingerprint`` other than its folder's (or cell's) is
  *foreign*: reported and excluded, and a resumed run does that record again, replacing it;
- **finalise** rewrites a file in dataset order (:func:`finalise`, :func:`keep_in_order`),
  dropping torn, foreign and duplicate lines.

Readers stream: a file is read one line at a time and only keys are held.
"""

from __future__ import annotations

import errno
import gc
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from seerbench.errors import DataError, FolderError, SeerbenchError

try:  # a faster JSON parser (a wheel for every common platform); json reads every line without it
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency; kept working without it
    _orjson = None  # type: ignore[assignment]

log = logging.getLogger("seerbench.store")

#: A record check: the record as it is, or ValueError (e.g. schema.LineError) saying why not.
Check = Callable[[dict[str, Any]], dict[str, Any]]


# ---- writing ------------------------------------------------------------------------------------
def _tmp(path: Path) -> Path:
    """This process's temporary name beside ``path`` (two processes never share one)."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _folder_error(path: Path) -> FolderError | None:
    """Why ``path`` cannot be written for its folder (missing, or a file in the way), naming the
    folder rather than the temporary file the write would fail on; ``None`` when it is a folder."""
    folder = path.parent
    if folder.is_dir():
        return None
    for p in (folder, *folder.parents):
        if p.exists():
            if not p.is_dir():
                return FolderError(errno.ENOTDIR, f"{p} is a file, not a folder", os.fspath(path))
            break
    return FolderError(errno.ENOENT, f"the folder {folder} does not exist; create it first", os.fspath(path))


@contextmanager
def atomic_path(path: str | Path, suffix: str = "") -> Iterator[Path]:
    """A temporary path of this process beside ``path`` for a writer (e.g. a library that writes
    a file by name) to fill; when the block ends without an error it is fsynced and renamed over
    ``path``, otherwise removed. ``suffix`` ends the temporary name (a writer that picks its
    format by it). A folder of ``path`` that is missing (or a file) is a :class:`FolderError`
    naming it, raised before anything is written."""
    path = Path(path)
    err = _folder_error(path)
    if err is not None:
        raise err
    tmp = _tmp(path).with_name(_tmp(path).name + suffix)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | Path, data: bytes | Iterable[bytes]) -> Path:
    """Replace ``path`` with ``data`` atomically (temporary file, fsync, rename)."""
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        if isinstance(data, bytes):
            f.write(data)
        else:
            for chunk in data:
                f.write(chunk)
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Replace ``path`` with ``text`` (UTF-8) atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_lines(path: str | Path, lines: Iterable[str]) -> Path:
    """Replace ``path`` with ``lines``, one per line, atomically."""
    return atomic_write_bytes(path, ((ln + "\n").encode("utf-8") for ln in lines))


class Appender:
    """A JSON-lines file open for appending: each :meth:`write` adds one complete line with one
    ``write`` call (``O_APPEND``), so a kill leaves whole lines and at most one torn last line."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, line: str) -> None:
        assert self._fd is not None, f"{self.path} is closed"
        os.write(self._fd, (line + "\n").encode("utf-8"))

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Appender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def append_line(path: str | Path, line: str) -> None:
    """Append one complete line to ``path`` (see :class:`Appender`)."""
    with Appender(path) as a:
        a.write(line)


# ---- reading ------------------------------------------------------------------------------------
#: Every digit as "0", so that one ``find`` spots a run of 19 digits: an integer orjson would read
#: as a float past 64 bits (and any long mantissa) goes to ``json.loads``.
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19


def loads(raw: bytes) -> Any:
    """``json.loads(raw)``, the same value, faster: orjson reads a line unless it refuses it (the
    NaN and Infinity that Python's json writes, lone surrogates, a BOM, invalid UTF-8) or the line
    has a run of 19 digits (an integer past 64 bits, which orjson would turn into a float); those,
    and every error, are json's."""
    if _orjson is not None and raw.translate(_DIGITS).find(_LONG_NUMBER) < 0:
        try:
            return _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(raw)


def _parse(raw: bytes) -> dict[str, Any] | None:
    rec, _ = _parse_why(raw)
    return rec


def _parse_why(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """The line as a dict, or None and why not."""
    try:
        rec = loads(raw)
    except json.JSONDecodeError as e:
        return None, f"not JSON ({e.msg}): a torn line from a crash, or junk"
    except UnicodeDecodeError:
        return None, "not UTF-8 text: junk"
    return (rec, "") if isinstance(rec, dict) else (None, "not a JSON object")


#: What identifies a record: a field's name, or a function of the record (None: it has none).
Key = str | Callable[[dict[str, Any]], Any]


def record_key(rec: dict[str, Any], key: Key) -> str | None:
    """The record's key as text, or None when it has none usable."""
    v = key(rec) if callable(key) else rec.get(key)
    if isinstance(v, bool) or not isinstance(v, str | int):
        return None
    return str(v)


def is_foreign(rec: dict[str, Any], fingerprint: str | None) -> bool:
    """True when the record carries a fingerprint other than ``fingerprint`` (lines without one,
    written before seerbench stamped them, belong to their folder)."""
    fp = rec.get("fingerprint")
    return fingerprint is not None and fp is not None and fp != fingerprint


def sibling_fingerprint(path: str | Path, meta_name: str) -> str | None:
    """The ``fingerprint`` recorded in the JSON file ``meta_name`` beside ``path`` (a run cell's
    ``cell.json``, a rater's ``rater.json``), or None without a readable one."""
    try:
        info = json.loads((Path(path).parent / meta_name).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    fp = info.get("fingerprint") if isinstance(info, dict) else None
    return fp if isinstance(fp, str) else None


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a large file's records are read (on again after, as it
    was): parsed JSON records hold no reference cycles, so reference counting frees each one, and
    the collector's passes over a heap that many new objects keep triggering cost a fifth of a
    60,000-line read (3.2 -> 2.6 s of CPU measured)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def numbered_lines(path: Path, upto: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(line number, raw line) of each non-blank line of a file, read one line at a time;
    :class:`DataError` when the file cannot be read. With ``upto``, the file's first ``upto`` bytes
    only (what it held when its size was taken): a line they cut ends there, as a torn line does."""
    try:
        f = path.open("rb")
    except OSError as e:
        raise DataError(f"cannot read {path}: {e.strerror or e}") from None
    left = upto
    with f:
        for n, raw in enumerate(f, 1):
            if left is not None:
                if left <= 0:
                    return
                raw = raw[:left]
                left -= len(raw)
            if raw.strip():
                yield n, raw


#: How many unusable lines a :class:`RecordReader` names by number.
MAX_LINES_NAMED = 5


class RecordReader:
    """The usable records of one JSON-lines file, read one line at a time: iterate it for the
    records as dicts. Afterwards ``skipped`` counts lines that do not parse or fail ``check`` (a
    torn last line left by a crash, junk, a line of another layout), ``foreign`` lines carrying
    another ``fingerprint``, and ``duplicates`` later lines of a key already read (the first
    wins; with ``key`` None records have no identity and none is a duplicate). Why each line was
    left out is appended to ``reasons`` (``FILE:LINE: reason``) when given. With ``missing_ok``,
    a file that does not exist reads as empty.

    With ``strict`` (files people also write by hand), an unusable line other than a torn last
    line, or a key's second line (unless ``refuse_duplicates`` is False), raises
    :class:`DataError` naming it; a torn last line (no newline, does not parse: what a
    crash leaves) is skipped and reported either way. With ``warn``, what was left out is logged
    as one warning when the file has been read (readers whose callers show the counts turn it
    off). With ``upto``, only the file's first ``upto`` bytes are read (:func:`numbered_lines`):
    two readers given one size read the same lines while a run appends to the file."""

    def __init__(
        self,
        path: str | Path,
        key: Key | None,
        *,
        fingerprint: str | None = None,
        check: Check | None = None,
        reasons: list[str] | None = None,
        missing_ok: bool = False,
        strict: bool = False,
        refuse_duplicates: bool | None = None,
        warn: bool = True,
        upto: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.upto = upto
        self.key = key
        self.fingerprint = fingerprint
        self.check = check
        self.reasons = reasons
        self.missing_ok = missing_ok
        self.strict = strict
        self.refuse_duplicates = strict if refuse_duplicates is None else refuse_duplicates
        self.warn = warn
        self.first_reason: str | None = None
        self.first_unusable: str | None = None  # the first skipped line, and why
        #: the numbers of the first unusable whole lines (ending in a newline: damaged or junk,
        #: not torn), at most :data:`MAX_LINES_NAMED` of them; ``skipped`` counts them all
        self.unusable_lines: list[int] = []
        self.torn = False  # the last line was torn (no newline, unusable): what a crash leaves
        self.skipped = 0
        self.foreign = 0
        self.duplicates = 0

    @property
    def _key_name(self) -> str:
        return self.key if isinstance(self.key, str) else "id"

    def _left_out(self, n: int, why: str) -> None:
        where = f"{self.path}:{n}: {why}"
        if self.first_reason is None:
            self.first_reason = where
        if self.reasons is not None:
            self.reasons.append(where)

    def _unusable(self, n: int, raw: bytes, why: str) -> None:
        torn = not raw.endswith(b"\n")
        if self.strict and not torn:
            raise DataError(f"{self.path}:{n}: {why}")
        self.skipped += 1
        if torn:
            self.torn = True
        elif len(self.unusable_lines) < MAX_LINES_NAMED:
            self.unusable_lines.append(n)
        if self.first_unusable is None:
            self.first_unusable = f"{self.path}:{n}: {why}"
        self._left_out(n, why)

    def numbered(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(line number, record) of each usable record."""
        if self.missing_ok and not self.path.exists():
            return
        seen: set[str] = set()
        for n, raw in numbered_lines(self.path, self.upto):
            rec, why = _parse_why(raw)
            if rec is None:
                self._unusable(n, raw, why)
                continue
            if self.check is not None:
                try:
                    rec = self.check(rec)
                except DataError as e:  # e.g. a newer schema version: for the user, never skipped
                    raise DataError(f"{self.path}:{n}: {e}") from None
                except SeerbenchError:
                    raise
                except ValueError as e:
                    self._unusable(n, raw, str(e))
                    continue
            if self.key is None:  # records without identity (e.g. export rows): nothing to dedupe
                yield n, rec
                continue
            k = record_key(rec, self.key)
            if k is None:
                self._unusable(n, raw, f"no {self._key_name}")
                continue
            if is_foreign(rec, self.fingerprint):
                self.foreign += 1
                self._left_out(
                    n,
                    f"{self._key_name} {k}: written by another config (fingerprint {rec.get('fingerprint')})",
                )
                continue
            if k in seen:
                if self.refuse_duplicates:
                    raise DataError(
                        f"{self.path}:{n}: {self._key_name} {k!r} appears twice; give each line its own"
                    )
                self.duplicates += 1
                self._left_out(n, f"{self._key_name} {k}: a duplicate (its first line is counted)")
                continue
            seen.add(k)
            yield n, rec
        if self.warn and self.first_reason is not None:
            log.warning("%s: %s not read (first: %s)", self.path, self.describe(), self.first_reason)

    def describe(self) -> str:
        """'1 unreadable, 2 duplicate line(s)': what was left out, in words ('' when nothing)."""
        parts = [
            f"{n} {what}"
            for n, what in (
                (self.skipped, "unreadable"),
                (self.foreign, "foreign (another config's)"),
                (self.duplicates, "duplicate"),
            )
            if n
        ]
        return ", ".join(parts) + " line(s)" if parts else ""

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for _, rec in self.numbered():
            yield rec

    def counts(self) -> dict[str, int]:
        """What was left out: skipped, foreign and duplicate lines."""
        return {"skipped": self.skipped, "foreign": self.foreign, "duplicates": self.duplicates}


def _scan(path: Path, key: str, fingerprint: str | None) -> Iterator[tuple[int, bytes, str | None]]:
    """(offset, raw line, key) of every line; the key is None for a torn, junk or foreign line."""
    offset = 0
    with open(path, "rb") as f:
        for raw in f:
            rec = _parse(raw) if raw.endswith(b"\n") else None
            k = None if rec is None or is_foreign(rec, fingerprint) else record_key(rec, key)
            yield offset, raw, k
            offset += len(raw)


def done_keys(path: str | Path, key: str, *, fingerprint: str | None = None, repair: bool = True) -> set[str]:
    """Keys of the complete, own lines of a file a writer resumes (foreign lines are not done:
    the writer does them again). With ``repair``, a torn last line (a kill mid-write) is cut off,
    so that the next append starts on a fresh line."""
    path = Path(path)
    if not path.exists():
        return set()
    done: set[str] = set()
    keep = 0  # bytes up to the end of the last complete line
    torn = False
    for offset, raw, k in _scan(path, key, fingerprint):
        if not raw.endswith(b"\n"):
            torn = True
            break
        keep = offset + len(raw)
        if k is not None:
            done.add(k)
    if torn and repair:
        with open(path, "r+b") as f:
            f.truncate(keep)
    return done


def finalise(
    path: str | Path,
    key: str,
    order: Sequence[str] | Mapping[str, int],
    *,
    fingerprint: str | None = None,
    on_line: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Rewrite a JSON-lines file atomically: one line per key in ``order`` (the keys, or key ->
    position), first own line of a key wins; torn, junk, foreign and duplicate lines dropped;
    keys not in ``order`` last. Then each line, parsed, goes to ``on_line`` in that order.

    Flat in memory: the first pass keeps each key's byte offset, the second copies lines in order
    from those offsets. A file already in order is left as it is."""
    path = Path(path)
    where: dict[str, tuple[int, int]] = {}
    rank = order if isinstance(order, Mapping) else {q: i for i, q in enumerate(order)}
    in_order, last = True, -1
    for offset, raw, k in _scan(path, key, fingerprint):
        if k is None or k in where:
            in_order = False  # junk, torn, foreign or a duplicate: the rewrite drops it
            continue
        where[k] = (offset, len(raw))
        r = rank.get(k, len(rank))
        in_order = in_order and r > last and k in rank
        last = r
    ids = sorted(where, key=lambda q: (rank.get(q, len(rank)), q))
    if not in_order:
        with open(path, "rb") as src:

            def chunks() -> Iterator[bytes]:
                for k in ids:
                    off, n = where[k]
                    src.seek(off)
                    yield src.read(n)

            atomic_write_bytes(path, chunks())
    if on_line is not None:
        with open(path, "rb") as f:
            for raw in f:
                on_line(loads(raw))


def keyed_lines(path: str | Path, key: str, *, fingerprint: str | None = None) -> dict[str, str]:
    """The complete, own lines of a (small) file by key, the first line of a key winning."""
    path = Path(path)
    done: dict[str, str] = {}
    if not path.is_file():
        return done
    for _, raw, k in _scan(path, key, fingerprint):
        if k is not None:
            done.setdefault(k, raw.decode("utf-8").rstrip("\n"))
    return done


def keep_in_order(
    path: str | Path, key: str, order: Iterable[str], *, fingerprint: str | None = None
) -> dict[str, str]:
    """Rewrite a (small) file with its complete, own lines of the keys in ``order``, in that order
    (lines of other keys dropped; an empty file when none). Returns the kept lines by key."""
    done = keyed_lines(path, key, fingerprint=fingerprint)
    kept = {k: done[k] for k in order if k in done}
    atomic_write_lines(path, kept.values())
    return kept


__all__ = [
    "Appender",
    "RecordReader",
    "append_line",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_write_lines",
    "atomic_write_text",
    "done_keys",
    "finalise",
    "is_foreign",
    "keep_in_order",
    "keyed_lines",
    "loads",
    "numbered_lines",
    "record_key",
    "sibling_fingerprint",
]
