"""The one error boundary (cli.main) and the one resource guard (common.resources)."""

from __future__ import annotations

import sqlite3

import pytest
import typer

import headcount.cli as cli
from headcount.cli.common import flag
from headcount.common.errors import InputError, param
from headcount.common.resources import (
    check_memory,
    check_work,
    human_bytes,
    memory_limit,
    memory_limit_of,
    parse_size,
    physical_memory,
)


def _run(capsys, monkeypatch, error: BaseException | None, *argv: str) -> tuple[int, str, str]:
    """main() on a stand-in app that raises `error` (or runs the real one when None)."""
    if error is not None:

        def boom(args, standalone_mode):
            raise error

        monkeypatch.setattr(cli, "app", boom)
    with pytest.raises(SystemExit) as info:
        cli.main(list(argv))
    out, err = capsys.readouterr()
    return info.value.code, out, err


@pytest.mark.parametrize(
    ("error", "code", "needle"),
    [
        (InputError("n must be ≥ 1, got 0"), 2, "error: n must be ≥ 1, got 0"),
        (
            PermissionError(13, "Permission denied", "/root/x.safetensors"),
            2,
            "Permission denied: '/root/x",
        ),
        (OSError(36, "File name too long", "a" * 5000), 2, "File name too long"),
        (sqlite3.OperationalError("attempt to write a readonly database"), 2, "readonly database"),
        (RecursionError("maximum recursion depth exceeded"), 2, "nested too deeply"),
        (OverflowError("int too large to convert to float"), 2, "too large"),
        (MemoryError(), 2, "out of memory"),
        (KeyError("surprise"), 1, "internal error (a bug in headcount"),
        (ZeroDivisionError("division by zero"), 1, "ZeroDivisionError: division by zero"),
    ],
)
def test_every_failure_is_one_line_with_the_right_exit_code(
    capsys, monkeypatch, error, code, needle
):
    got, out, err = _run(capsys, monkeypatch, error, "induction", "solve", "--input", "1")
    assert (got, out) == (code, "") and needle in err
    assert len(err.strip().splitlines()) == 1 and len(err) < 500 and "Traceback" not in err


def test_debug_shows_the_traceback_of_an_internal_error(capsys, monkeypatch):
    monkeypatch.setenv(cli.DEBUG, "1")
    code, _, err = _run(
        capsys, monkeypatch, KeyError("surprise"), "induction", "solve", "--input", "1"
    )
    assert (
        code == 1
        and "Traceback" in err
        and err.strip().splitlines()[-1].startswith("internal error")
    )


def test_usage_errors_still_exit_2(capsys, monkeypatch):
    code, _, err = _run(capsys, monkeypatch, None, "induction", "solve")
    assert code == 2 and err.startswith("error: Missing option '--input'")
    code, _, err = _run(capsys, monkeypatch, typer.Abort(), "induction", "solve", "--input", "1")
    assert code == 130


@pytest.mark.parametrize("argv", [["--max-memory", "8G"], ["--max-memory=8G"]])
def test_max_memory_is_taken_from_anywhere_in_argv(argv):
    rest, size = cli.take_max_memory(["induction", "solve", *argv, "--input", "1"])
    assert rest == ["induction", "solve", "--input", "1"] and size == 8 * 2**30


def test_max_memory_holds_for_one_run_only(capsys, monkeypatch):
    seen = []
    monkeypatch.setattr(cli, "app", lambda args, standalone_mode: seen.append(memory_limit()))
    cli.main(["induction", "solve", "--input", "1", "--max-memory", "3G"])
    assert seen == [3 * 2**30] and memory_limit() != 3 * 2**30


@pytest.mark.parametrize("bad", ["lots", "8X", "-1G", "0", "1K", "9" * 30])
def test_a_bad_max_memory_is_refused(capsys, monkeypatch, bad):
    code, out, err = _run(
        capsys, monkeypatch, None, "induction", "solve", "--input", "1", "--max-memory", bad
    )
    assert (
        code == 2
        and out == ""
        and err.startswith("error: --max-memory")
        and len(err.splitlines()) == 1
    )


def test_parse_size_units():
    assert (
        parse_size("512M") == 512 * 2**20
        and parse_size("1.5G") == 3 * 2**29
        and parse_size("2TiB") == 2**41
    )
    assert parse_size(" 4096K ") == 4 * 2**20 and parse_size("1048576") == 2**20


def test_default_limit_is_half_the_machine_and_the_environment_overrides_it(monkeypatch):
    monkeypatch.delenv("HEADCOUNT_MAX_MEMORY", raising=False)
    with memory_limit_of(None):
        assert memory_limit() == physical_memory() // 2
        monkeypatch.setenv("HEADCOUNT_MAX_MEMORY", "3G")
        assert memory_limit() == 3 * 2**30
        with memory_limit_of("1G"):
            assert memory_limit() == 2**30  # the flag wins over the environment


def test_check_memory_names_the_estimate_the_limit_and_the_flag():
    with memory_limit_of("1G"):
        check_memory(2**29, "half a GiB")
        with pytest.raises(InputError) as info:
            check_memory(1.58 * 2**50, "minmax certify at M=10^12")
    message = str(info.value)
    assert "minmax certify at M=10^12 needs about 1.58 PiB" in message
    assert "the limit is 1 GiB" in message and "raise it with max_memory SIZE" in message
    assert info.value.param == "max_memory"
    assert "raise it with --max-memory SIZE" in info.value.render(
        flag
    )  # what the command line prints


def test_check_work_names_the_option():
    check_work(10, 10, "x", "steps", param("steps"))
    with pytest.raises(
        InputError, match=r"about 1e\+09 steps; allowed up to 1e\+07 \(lower steps\)"
    ) as info:
        check_work(1e9, 1e7, "train induction", "steps", param("steps"))
    assert info.value.param == "steps" and info.value.render(flag).endswith("(lower --steps)")


def test_human_bytes_never_prints_an_unreadable_number():
    assert human_bytes(1536) == "1.5 KiB" and human_bytes(3 * 2**30) == "3 GiB"
    assert human_bytes(1e30).endswith("EiB") and human_bytes(12) == "12 B"


def test_a_search_past_its_time_limit_is_one_line_exit_2(capsys, monkeypatch):
    from headcount.boolean.search import SearchTimeout

    code, out, err = _run(
        capsys, monkeypatch, SearchTimeout("the exact search ran past 10 s"), "boolean"
    )
    assert (code, out) == (2, "") and err == "error: the exact search ran past 10 s\n"
