"""What every command module shares: the --json, --progress/--no-progress (progress_on: on by
default when stderr is a terminal) and --require-certified options, printing a result, exit 3 for a
verdict that is not certified, and the hidden deprecated spellings of renamed options."""

from __future__ import annotations

import codecs
import json
import sys
from typing import Any

import typer

from headcount.common.errors import InputError

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
FLAGS: dict[str, str] = {
    "random_seed": "--random-model",  # a seeded random model; --seed seeds a command's inputs
    "summands": "--degree",  # D of `boolean stamps`, as in `boolean basis`
}

# Exit codes: 0 ran and answered (whatever the verdict), 1 a bug, 2 bad input, 3 ran and answered
# but the verdict is not certified — only with --require-certified (require_certified).
NOT_CERTIFIED = 3


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


def require_certified(certified: bool, required: bool) -> None:
    """After the result is printed: exit 3 (NOT_CERTIFIED) when --require-certified was given and
    the verdict is not certified; else return (exit 0: ran and answered)."""
    if required and not certified:
        raise typer.Exit(NOT_CERTIFIED)


# Deprecation notes of this run ("headcount: --old is deprecated; use --new"): main() prints each on
# one line of stderr once the command has answered, or adds them to its one-line error.
NOTES: list[str] = []


def renamed(new_flag: str, new: Any, old_flag: str, old: Any, required: bool = False) -> Any:
    """The value of option `new_flag`, given as itself or as its hidden deprecated spelling
    `old_flag` (then noted, NOTES). Both at once is bad input; so is neither when `required`."""
    if old is None:
        if new is None and required:
            raise InputError(f"Missing option '{new_flag}'. (see --help)")
        return new
    if new is not None:
        raise InputError(
            f"{old_flag} is the deprecated spelling of {new_flag}: give only {new_flag}"
        )
    NOTES.append(f"headcount: {old_flag} is deprecated; use {new_flag}")
    return old


def old_spelling(old_flag: str, new_flag: str) -> Any:
    """A hidden option: the deprecated spelling `old_flag` of `new_flag` (renamed)."""
    return typer.Option(None, old_flag, hidden=True, help=f"Deprecated: use {new_flag}.")


# The task options `evaluate`, `analyze heads` and `analyze patterns` share, one default each: the
# induction task (hop count 1, the plain layout: what `induction construct` and `train induction`
# build by default; khop with --task khop) at `train induction`'s default size, n = 16 characters
# over S = 4 symbols.
TASK_DEFAULT = "induction"
N_DEFAULT = 16
ALPHABET_DEFAULT = 4

JsonOpt = typer.Option(False, "--json", help="Print one JSON object on stdout.")
ProgressOpt = typer.Option(
    None,
    "--progress/--no-progress",
    help="A progress bar on stderr (default: on when stderr is a terminal).",
    show_default=False,
)


def progress_on(asked: bool | None) -> bool:
    """Whether a command shows its progress bar: as --progress/--no-progress say, else when stderr
    is a terminal (so piped runs and tests stay quiet)."""
    return sys.stderr.isatty() if asked is None else asked


RequireCertifiedOpt = typer.Option(
    False,
    "--require-certified",
    help="Exit 3 when the verdict is not certified (the result is printed all the same); without "
    "it, exit 0 means ran and answered, whatever the verdict.",
)
