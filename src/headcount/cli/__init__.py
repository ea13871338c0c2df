"""The `headcount` command: one module per command group, each command parse → one library call →
print.

Conventions (spec/README.md): `--json` prints exactly one JSON object on stdout; progress goes to
stderr. One error boundary (`main`): input the user can fix — an InputError raised by the library's
own checks, a path or permission problem, a database that cannot be opened or written, input nested
too deeply or with numbers too large — exits 2 with one line "error: ..." on stderr (what is wrong,
what is allowed); anything else is a bug: exit 1 with one line asking for a report (the traceback
only with HEADCOUNT_DEBUG=1). `--max-memory SIZE` is accepted by every command (common.resources:
the one resource guard). Exit 0 means ran and answered, whatever the verdict; a command that
certifies, verifies or checks exits 3 instead when given --require-certified and its verdict is not
certified (common.require_certified). A renamed option keeps its old spelling, hidden, with one line
"headcount: --old is deprecated; use --new" on stderr (common.renamed).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import sys
import traceback
from typing import NoReturn

import typer

from headcount import __version__
from headcount.cli import analyze, boolean, imports, induction, minmax, sweep, train
from headcount.cli import export as export_cli
from headcount.cli import zoo as zoo_cli
from headcount.cli.common import NOTES, flag, plain_output
from headcount.cli.evaluate import evaluate
from headcount.cli.experiment import experiment
from headcount.cli.reproduce import reproduce
from headcount.common.errors import InputError, InternalError, NamesParameters
from headcount.common.resources import memory_limit, memory_limit_of, parse_size
from headcount.core.numbers import UndecidedError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Executable theory of what attention can and cannot compute. Every command accepts "
    "--max-memory SIZE (default: half of this machine's memory) and --json. Exit codes: 0 ran and "
    "answered, 1 a bug, 2 bad input, 3 not certified (with --require-certified).",
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"headcount {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print headcount's version (the package's, as pip knows it) and exit.",
    ),
) -> None:
    """The options before any command: --version."""


app.add_typer(induction.app, name="induction")
app.add_typer(minmax.app, name="minmax")
app.add_typer(boolean.app, name="boolean")
app.add_typer(train.app, name="train")
app.add_typer(sweep.app, name="sweep")
app.add_typer(imports.app, name="import")
app.add_typer(analyze.app, name="analyze")
app.add_typer(zoo_cli.app, name="zoo")
app.add_typer(export_cli.app, name="export")
app.command("evaluate")(evaluate)
app.command("experiment")(experiment)
app.command("reproduce")(reproduce)

MAX_MEMORY = "--max-memory"
DEBUG = "HEADCOUNT_DEBUG"


def take_max_memory(argv: list[str]) -> tuple[list[str], int | None]:
    """(argv without its --max-memory SIZE or --max-memory=SIZE, that size in bytes or None)."""
    rest, size, i = [], None, 0
    while i < len(argv):
        arg = argv[i]
        if arg == MAX_MEMORY:
            if i + 1 >= len(argv):
                raise InputError("--max-memory needs a size, e.g. --max-memory 8G")
            size, i = parse_size(argv[i + 1]), i + 2
            continue
        if arg.startswith(MAX_MEMORY + "="):
            size = parse_size(arg.split("=", 1)[1])
        else:
            rest.append(arg)
        i += 1
    return rest, size


def one_line(text: str, limit: int = 400) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _exit(code: int, message: str) -> NoReturn:
    notes = _take_notes()  # a deprecated spelling used: said on the error's one line
    print(one_line(message + "".join(f" ({note})" for note in notes)), file=sys.stderr)
    sys.exit(code)


def _take_notes() -> list[str]:
    notes = list(dict.fromkeys(NOTES))
    NOTES.clear()
    return notes


def _os_error(err: OSError) -> str:
    """An OSError from a path the user gave: what failed and on which file (a long name is
    shortened)."""
    name = err.filename if err.filename is not None else ""
    where = f" {one_line(repr(str(name)), 120)}" if name != "" else ""
    full = err.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)  # the disk, not the path
    hint = "free some space or write elsewhere" if full else "check the path and its permissions"
    return f"error: {err.strerror or type(err).__name__}:{where} ({hint})"


def _usage_error(err: typer.TyperException) -> NoReturn:
    if type(err).__name__ == "NoArgsIsHelpError":
        print(err.format_message(), file=sys.stderr)
        sys.exit(0)
    lines = err.format_message().strip().splitlines() or ["invalid usage"]
    _exit(err.exit_code, f"error: {lines[0]} (see --help)")


def _answered(code: object) -> None:
    """The command answered: print the deprecation notes this run collected (one line each, on
    stderr), then exit with the command's own code when it is not 0. A command's typer.Exit(code)
    comes back as app's return value (standalone_mode=False): reproduce's 1 (a claim failed),
    require_certified's 3."""
    for note in _take_notes():
        print(note, file=sys.stderr)
    if isinstance(code, int) and not isinstance(code, bool) and code != 0:
        sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the Typer app inside the one error boundary (module docstring)."""
    args = list(sys.argv[1:] if argv is None else argv)
    plain_output()
    NOTES.clear()  # main may run many times in one process
    try:
        rest, max_memory = take_max_memory(args)
        with memory_limit_of(
            max_memory
        ):  # this run's limit only (main may run many times in one process)
            # the limit in force, checked for every command (a bad HEADCOUNT_MAX_MEMORY too)
            memory_limit()
            code = app(args=rest, standalone_mode=False)
        _answered(code)
    except InputError as err:  # the library names parameters; the command line shows their flags
        _exit(2, f"error: {err.render(flag)}")
    except UndecidedError as err:
        _exit(2, f"error: {err}")
    except typer.TyperException as err:  # usage errors (exit_code 2) and other click-level errors
        _usage_error(err)
    except typer.Exit as err:
        _answered(err.exit_code)
        sys.exit(0)
    except (typer.Abort, KeyboardInterrupt):
        _exit(130, "error: interrupted")
    except (
        TimeoutError
    ) as err:  # an exact search past its time limit (an OSError, but not about a path)
        _exit(2, f"error: {err.render(flag) if isinstance(err, NamesParameters) else err}")
    except (
        OSError
    ) as err:  # paths and permissions: a missing folder, a read-only file, a name too long
        _exit(2, _os_error(err))
    except sqlite3.Error as err:  # a results database that cannot be opened, read or written
        full = "disk is full" in str(err) or "disk I/O error" in str(
            err
        )  # the disk, not the database
        hint = "free some space on its disk" if full else "check the --db file and its folder"
        _exit(2, f"error: results database: {err} ({hint})")
    except RecursionError:
        _exit(
            2, "error: the input is nested too deeply to read (files and options must be flat data)"
        )
    except OverflowError as err:
        _exit(2, f"error: a number in the input is too large: {err}")
    except MemoryError:
        _exit(
            2, "error: out of memory: use smaller sizes (the guard's limit is set by --max-memory)"
        )
    except (
        InternalError,
        AssertionError,
        Exception,
    ) as err:  # a bug, not bad input: one line, exit 1
        if os.environ.get(DEBUG) == "1":
            traceback.print_exc()
        first = (str(err).strip().splitlines() or [""])[0]
        _exit(
            1,
            f"internal error (a bug in headcount, please report it; {DEBUG}=1 shows the "
            "traceback): "
            f"{type(err).__name__}: {first}",
        )


if __name__ == "__main__":
    main()
