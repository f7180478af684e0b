"""Errors that say what to do. Every error seerbench raises on purpose derives from SeerbenchError;
the CLI prints its message (no traceback) and exits with status 2.

The command line's exit statuses, one home (docs/experiments.md documents them): 0 everything
done; 1 some questions (or sentences, answers) failed, their results kept for a rerun to resume;
2 a user, config or environment error (one line); 3 an internal error of seerbench or a plugin
(a traceback, to report); 141 (128 + SIGPIPE, as a shell reports a program killed by it) the
reader of its output went away, as in ``seerbench show RUN Q | head -1``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

#: Exit statuses of the command line (see the module docstring).
EXIT_OK, EXIT_PARTIAL, EXIT_USER, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_BROKEN_PIPE = 141


class SeerbenchError(Exception):
    """Base class for errors meant for the user."""


class ConfigError(SeerbenchError, ValueError):
    """A configuration, argument or manifest is invalid."""


class UnknownNameError(ConfigError):
    """A name (of a protocol, judge, dataset, model backend, tool...) that no registry holds; the
    message names the closest registered name and lists them all."""


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the registered name closest to ``name``, or ``""`` if none is
    close: the one did-you-mean of every registry and config key."""
    close = closest(name, names)
    return f" (did you mean {close}?)" if close else ""


def unknown_options(what: str, unknown: Iterable[str], accepted: Iterable[str]) -> ConfigError:
    """The one-line error for options ``what`` does not take, each with its did-you-mean."""
    ok = list(accepted)
    named = ", ".join(f"{u}{did_you_mean(u, ok)}" for u in unknown)
    return ConfigError(f"{what} has no option(s) {named}; it accepts: {', '.join(ok)}")


def closest(name: str, names: Iterable[str]) -> str | None:
    """The name in ``names`` closest to ``name``, if any is close (difflib's ratio of 0.6)."""
    import difflib

    close = difflib.get_close_matches(name, list(names), n=1)
    return close[0] if close else None


def close_sibling(
    path: str | os.PathLike[str], *, suffixes: Iterable[str] = (), folders: bool = False
) -> str:
    """`` (did you mean P?)`` for a missing ``path``: P is the entry of its folder whose name is
    closest to its name (among the files with one of ``suffixes``, any file without them; or
    among the folders), written as ``path`` was (``examples/quickstart.yaml``); ``""`` if none is
    close or the folder cannot be read."""
    from pathlib import Path

    p = Path(path)
    close = closest(p.name, entry_names(p.parent, suffixes=suffixes, folders=folders))
    return f" (did you mean {p.parent / close}?)" if close else ""


def entry_names(
    folder: str | os.PathLike[str], *, suffixes: Iterable[str] = (), folders: bool = False
) -> list[str]:
    """The names of ``folder``'s files with one of ``suffixes`` (any file without them), or of its
    folders; none when it cannot be read: what a did-you-mean for a path chooses from."""
    from pathlib import Path

    wanted = tuple(suffixes)
    try:
        return [
            e.name
            for e in Path(folder).iterdir()
            if (e.is_dir() if folders else e.is_file() and (not wanted or e.suffix in wanted))
        ]
    except OSError:
        return []


class DataError(SeerbenchError, ValueError):
    """Input data is malformed (names the file, line or row)."""


class CacheError(SeerbenchError):
    """The disk cache of model calls is damaged or cannot be written (names the file and the fix);
    an environment error, so it stops a run rather than failing its questions one by one."""


class FolderError(SeerbenchError, OSError):
    """A file cannot be written: its folder does not exist, or a file stands where a folder of
    its path should be. Built as ``FolderError(errno, why, path)``; its message is ``cannot write
    PATH: WHY``. Also an OSError, so code that handles a failed write still handles it."""

    def __str__(self) -> str:
        return f"cannot write {self.filename}: {self.strerror}"


class ModelError(SeerbenchError):
    """A model backend failed in a way retries cannot fix."""


class RequestError(ModelError):
    """The backend rejected one request that retrying cannot fix and that says nothing about the
    others (HTTP 400 or 413, e.g. a prompt longer than the model's context): the question that
    sent it fails, the run goes on."""


class UnknownModelError(ModelError, UnknownNameError):
    """A model spec string does not match any backend."""


class AuthenticationError(ModelError):
    """The backend refused the credentials (not retried)."""


class ModelUnavailableError(ModelError):
    """The backend stayed unreachable or failing after all retries."""


@contextmanager
def naming(path: str | os.PathLike[str]) -> Iterator[None]:
    """An OSError raised in the block without a file name (a ``write`` on a full disk) gets
    ``path``, so the command line's one line says where."""
    try:
        yield
    except OSError as e:
        if e.filename is not None or e.errno is None:
            raise
        raise OSError(e.errno, e.strerror, os.fspath(path)) from e
