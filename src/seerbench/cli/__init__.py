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
from seerbench.cli import _models  # noqa: E402,F401
from seerbench.cli import _datasets  # noqa: E402,F401
from seerbench.cli import _estimate  # noqa: E402,F401


def main() -> None:
    """Console-script entry point: user errors print a message, not a traceback."""
    try:
        app()
    except SeerbenchError as e:
        typer.secho(f"error: {e}", fg="red", err=True)
        sys.exit(2)
