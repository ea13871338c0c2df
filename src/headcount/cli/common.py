"""What every command module shares: the --json and --progress options, printing, and token parsing."""

from __future__ import annotations

import json
from typing import Any, NoReturn

import numpy as np
import typer

from headcount.core.errors import InputError


def fail(message: str) -> NoReturn:
    """Bad input the user can fix: main() prints it on one line and exits 2."""
    raise InputError(message)


def emit(result: dict[str, Any], as_json: bool, human: str | None = None) -> None:
    if as_json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(human if human is not None else json.dumps(result, indent=2))


def parse_tokens(text: str) -> np.ndarray:
    parts = text.replace(",", " ").split()
    if not parts:
        fail('--input is empty: give tokens as integers separated by spaces, e.g. --input "3 0 2 3"')
    try:
        tokens = np.array([int(p) for p in parts], dtype=np.int64)
    except ValueError:
        fail(f"--input {text!r} has a non-integer token: tokens are integers 0..S-1 separated by spaces")
    if tokens.min() < 0:
        fail("--input has a negative token: tokens are integers 0..S-1")
    return tokens


JsonOpt = typer.Option(False, "--json", help="Print one JSON object on stdout.")
ProgressOpt = typer.Option(False, "--progress", help="Progress bar on stderr.")
