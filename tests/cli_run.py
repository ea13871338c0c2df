"""Running the `headcount` command in-process, for tests: one helper, so every test reads its
contract the same way (exit code, stdout, stderr)."""

from __future__ import annotations

import pytest

from headcount.cli import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `headcount argv…` run in this process."""
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return exit_info.value.code or 0, out, err


def refused(capsys, *argv: str, needles: tuple[str, ...] = ()) -> str:
    """Exit 2, nothing on stdout, one line on stderr (no traceback) containing every needle: that
    line."""
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, ""), (argv, code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)
    return lines[0]
