"""An exclusive lock on an output folder for the whole of one run (``seerbench run``, ``rate``,
``critique``): two processes writing one folder would interleave and tear each other's lines.

The lock is ``fcntl.flock`` on ``<folder>/.seerbench.lock``, which holds the holder's PID, host
and command. The kernel releases a flock when its process dies however it dies (SIGKILL
included), so a stale lock file left by a killed run is simply taken over; the PID it names is
only what the refusal of a second process reports. On a system without ``fcntl`` (Windows) the
folder is not locked.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from seerbench.errors import ConfigError

LOCK_NAME = ".seerbench.lock"
#: Tries at the lock, LOCK_RETRY_S apart, before a folder is refused as in use: a reader's probe
#: (:func:`lock_holder`) holds a shared lock for microseconds and must not turn a run away.
LOCK_TRIES = 5
LOCK_RETRY_S = 0.05


def tmp_name(path: Path) -> Path:
    """A temporary file beside ``path`` for an atomic rewrite, named for this process
    (``results.jsonl.tmp.<pid>``), so two writers never share one even without the lock."""
    return path.with_name(f"{path.name}.tmp.{os.getpid()}")


def _holder(path: Path) -> str:
    """Who the lock file says holds the lock: 'PID 123 on host h (seerbench run)'."""
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
        return f"PID {int(rec['pid'])} on host {rec['host']} ({rec['command']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


@contextmanager
def lock_folder(folder: Path, command: str) -> Iterator[Path]:
    """Hold the exclusive lock on ``folder`` (made when missing) while the ``with`` block runs;
    ``command`` ('seerbench run') is recorded for the refusal message. A folder another live
    process holds is refused with :class:`ConfigError` naming that process."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield folder
        return
    made = not folder.exists()
    path = folder / LOCK_NAME
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise ConfigError(
            f"cannot write the output folder {folder}: {e.strerror or e} ({e.filename or folder})"
        ) from None
    try:
        for attempt in range(LOCK_TRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt == LOCK_TRIES - 1:
                    raise ConfigError(
                        f"{folder} is in use by {_holder(path)}: wait for that run to end, "
                        "or give another output folder"
                    ) from None
                time.sleep(LOCK_RETRY_S)
        info = {"pid": os.getpid(), "host": socket.gethostname(), "command": command}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        try:
            yield folder
        except BaseException:
            # a run refused before it wrote anything leaves no folder behind that it made
            if made and folder.is_dir() and os.listdir(folder) == [LOCK_NAME]:
                path.unlink(missing_ok=True)
                folder.rmdir()
            raise
    finally:
        os.close(fd)  # releases the flock (the file stays: unlinking it would race a new holder)


def lock_holder(folder: Path) -> str | None:
    """Who holds ``folder``'s lock now ('PID 123 on host h (seerbench run cfg.yaml)'), or None when
    no live process does (no lock file, a stale one, or no ``fcntl``). Probed with a non-blocking
    shared flock released at once, so a reader never waits and never writes; a run that starts in
    that instant retries (:data:`LOCK_TRIES`)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return None
    path = folder / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder(path)
    except OSError:
        return None
    finally:
        os.close(fd)  # releases the probe's lock
    return None


#: The lock file keeps at most this many characters of the command line.
COMMAND_CHARS = 200


def command_line() -> str:
    """This process's command line, for the lock file: 'seerbench -q run cfg.yaml --limit 5' (the
    whole of it, root options included, so the config is named; cut at :data:`COMMAND_CHARS`)."""
    argv = [os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python", *sys.argv[1:]]
    text = " ".join(argv)
    return text if len(text) <= COMMAND_CHARS else text[: COMMAND_CHARS - 3] + "..."
