"""Errors that say what to do. Every error seerbench raises on purpose derives from SeerbenchError;
the CLI prints its message (no traceback) and exits with status 2."""

from __future__ import annotations

from collections.abc import Iterable


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
    import difflib

    close = difflib.get_close_matches(name, list(names), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


class DataError(SeerbenchError, ValueError):
    """Input data is malformed (names the file, line or row)."""


class ModelError(SeerbenchError):
    """A model backend failed in a way retries cannot fix."""


class UnknownModelError(ModelError, UnknownNameError):
    """A model spec string does not match any backend."""


class AuthenticationError(ModelError):
    """The backend refused the credentials (not retried)."""


class ModelUnavailableError(ModelError):
    """The backend stayed unreachable or failing after all retries."""
