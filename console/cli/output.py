"""What every `lab` command prints goes through `echo`: text shown inert.

Stored text comes from outside (model answers, imported questions, names, server
errors); `core.inert.inert` shows its control characters and escape sequences escaped
(`\\x1b`) instead of letting the terminal run them. Commands call `echo`, never
`click.echo`, so no printer can forget it (`tests/test_inert_output.py` checks).
"""

from __future__ import annotations

from typing import Any

import click

from core.inert import inert


def echo(message: Any = None, nl: bool = True, err: bool = False) -> None:
    """Print `message` (any value, shown by its `str`) with control characters escaped;
    newlines and tabs are kept."""
    click.echo(None if message is None else inert(str(message)), nl=nl, err=err)


def error_line(message: Any) -> str:
    """An error message as one inert line (a newline inside it is shown as `\\n`)."""
    return inert(str(message), keep="")
