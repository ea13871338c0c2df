"""What every command module shares: the --json and --progress options, and printing a result."""

from __future__ import annotations

import codecs
import json
import sys
from typing import Any

import typer

# Text the terminal cannot encode (PYTHONIOENCODING=ascii, a Latin-1 locale): ⊥ and the other
# symbols headcount prints get ASCII spellings, anything else a \N{…} escape — never a
# UnicodeEncodeError.
ASCII_SPELLINGS = {
    "⊥": "_|_",
    "×": "x",
    "≤": "<=",
    "≥": ">=",
    "→": "->",
    "·": "*",
    "…": "...",
    "−": "-",
}


# The flag of each library parameter an InputError names (common.errors.param): "--" and the name
# with hyphens for underscores, except where a command spells it otherwise (listed here).
FLAGS: dict[str, str] = {}


def flag(name: str) -> str:
    """The command-line spelling of the library parameter `name`: n → --n, max_memory →
    --max-memory."""
    return FLAGS.get(name, "--" + name.replace("_", "-"))


def _plain(err: UnicodeError) -> tuple[str, int]:
    if not isinstance(err, UnicodeEncodeError):
        raise err
    bad = err.object[err.start : err.end]
    return "".join(
        ASCII_SPELLINGS.get(c) or c.encode("ascii", "namereplace").decode() for c in bad
    ), err.end


codecs.register_error("headcount-plain", _plain)


def plain_output() -> None:
    """stdout and stderr keep their encoding but spell what it cannot hold in ASCII
    (ASCII_SPELLINGS)."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure") and not _unicode(stream):
            stream.reconfigure(errors="headcount-plain")


def _unicode(stream: Any) -> bool:
    return (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "") in (
        "utf8",
    )


def emit(result: dict[str, Any], as_json: bool, human: str | None = None) -> None:
    """Print a result: its JSON as one object on stdout with --json (\\u escapes where stdout is not
    UTF-8: "\\u22a5" for ⊥), else the human line (or the JSON indented when a command has no human
    form)."""
    if as_json:
        print(json.dumps(result, ensure_ascii=not _unicode(sys.stdout)))
    else:
        print(human if human is not None else json.dumps(result, indent=2))


JsonOpt = typer.Option(False, "--json", help="Print one JSON object on stdout.")
ProgressOpt = typer.Option(False, "--progress", help="Progress bar on stderr.")
