"""The ``seerbench`` command line. Thin: parses arguments, calls the library, prints.

Each command group lives in its own ``_<group>.py`` module and registers itself on :data:`app`.
"""

from __future__ import annotations

import sys

import typer

from seerbench.errors import SeerbenchError

app = typer.Typer(
    name="seerbench",
    help="Measure scalable-oversight protocols: debate, consultancy, judges, agent score difference.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Command modules register themselves on `app` when imported.
from seerbench.cli import (  # noqa: E402
    _datasets,  # noqa: F401
    _estimate,  # noqa: F401
    _models,  # noqa: F401
    _run,  # noqa: F401
    _study,  # noqa: F401
)


def main() -> None:
    """Console-script entry point: user errors print a message, not a traceback."""
    try:
        app()
    except SeerbenchError as e:
        typer.secho(f"error: {e}", fg="red", err=True)
        sys.exit(2)
