"""What every command module shares: the --json and --progress options, and printing a result."""

from __future__ import annotations

import json
from typing import Any

import typer


def emit(result: dict[str, Any], as_json: bool, human: str | None = None) -> None:
    """Print a result: its JSON as one object on stdout with --json, else the human line (or the JSON
    indented when a command has no human form)."""
    if as_json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(human if human is not None else json.dumps(result, indent=2))


JsonOpt = typer.Option(False, "--json", help="Print one JSON object on stdout.")
ProgressOpt = typer.Option(False, "--progress", help="Progress bar on stderr.")
