"""The `hoststand` command line. Each command's docstring is its help.

Errors leave through `fail`, the one place that maps them to an exit status:
1 for a refusal of the request (a booking that cannot be made), 2 for bad input.
"""

from __future__ import annotations

import json
import sys
from typing import IO, NoReturn

import click

from engine import run as run_operations

EXIT_REFUSED = 1
EXIT_BAD_INPUT = 2


def fail(message: str, status: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print a one-line error on stderr and exit with `status` (no traceback)."""
    click.echo(f"hoststand: {message}", err=True)
    sys.exit(status)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Host Stand: the restaurant's host stand and its partner availability feed."""


@main.command("run")
@click.argument("operations_file", type=click.File("r", encoding="utf-8"))
def run_command(operations_file: IO[str]) -> None:
    """Replay a JSON list of engine operations on a fresh host stand.

    OPERATIONS_FILE holds a JSON list such as [["walk_in", 0, "P1", 2], ["board", 5]]
    ("-" reads standard input). Prints the JSON list of results, one per operation.
    """
    name = getattr(operations_file, "name", "-")
    try:
        operations = json.load(operations_file)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        fail(f"{name}: not valid JSON ({exc})")
    if not isinstance(operations, list):
        fail(f"{name}: expected a JSON list of operations, got {type(operations).__name__}")
    click.echo(json.dumps(run_operations(operations)))
