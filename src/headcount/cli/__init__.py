"""The `headcount` command: one module per command group, each command parse → one library call → print.

Conventions (spec/README.md): `--json` prints exactly one JSON object on stdout; progress goes to stderr;
bad input (an InputError, raised by the library's own checks) exits 2 with a one-line "error: ..." on
stderr — what is wrong, what is allowed — never a traceback.
"""

from __future__ import annotations

import sys

import typer

from headcount.cli import boolean, induction, minmax, sweep, train
from headcount.cli.experiment import experiment
from headcount.cli.reproduce import reproduce
from headcount.core.errors import InputError, InternalError
from headcount.core.expsum import UndecidedError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Executable theory of what attention can and cannot compute.",
)
app.add_typer(induction.app, name="induction")
app.add_typer(minmax.app, name="minmax")
app.add_typer(boolean.app, name="boolean")
app.add_typer(train.app, name="train")
app.add_typer(sweep.app, name="sweep")
app.command("experiment")(experiment)
app.command("reproduce")(reproduce)


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the Typer app, turning usage errors, InputError and UndecidedError (a sign exact
    arithmetic could not settle) into one line and exit 2, and
    an internal inconsistency (InternalError, AssertionError) into one line and exit 1."""
    try:
        app(args=argv, standalone_mode=False)
    except (InputError, UndecidedError) as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except typer.TyperException as err:  # usage errors (exit_code 2) and other click-level errors
        if type(err).__name__ == "NoArgsIsHelpError":
            print(err.format_message(), file=sys.stderr)
            sys.exit(0)
        lines = err.format_message().strip().splitlines() or ["invalid usage"]
        print(f"error: {lines[0]} (see --help)", file=sys.stderr)
        sys.exit(err.exit_code)
    except typer.Exit as err:
        sys.exit(err.exit_code)
    except typer.Abort:
        print("error: aborted", file=sys.stderr)
        sys.exit(130)
    except (InternalError, AssertionError) as err:  # a bug, not bad input: one line, exit 1
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        print(f"internal error (a bug in headcount, please report it): {first}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
