"""Errors that say what to do. Every error seerbench raises on purpose derives from SeerbenchError;
the CLI prints its message (no traceback) and exits with status 2."""

from __future__ import annotations


class SeerbenchError(Exception):
    """Base class for errors meant for the user."""


class ConfigError(SeerbenchError, ValueError):
    """A configuration, argument or manifest is invalid."""


class DataError(SeerbenchError, ValueError):
    """Input data is malformed (names the file, line or row)."""


class ModelError(SeerbenchError):
    """A model backend failed in a way retries cannot fix."""


class UnknownModelError(ModelError, ValueError):
    """A model spec string does not match any backend."""


class AuthenticationError(ModelError):
    """The backend refused the credentials (not retried)."""


class ModelUnavailableError(ModelError):
    """The backend stayed unreachable or failing after all retries."""
