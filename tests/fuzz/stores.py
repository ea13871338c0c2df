"""Broken results databases (`--db` of sweep run, sweep table, experiment) and hostile sweep files
(the SPEC of sweep run), including runner payloads that would run code: a marker file must never
appear.

    db_cases(fixtures)          # [Case]
    sweep_file_cases(fixtures)  # [Case]
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

from tests.fuzz import safetensors_raw as st
from tests.fuzz.files import ZEN, Fixtures
from tests.fuzz.harness import MAX_MEMORY, Case

TINY = [  # one Boolean run of one training step (options.TINY)
    "--task",
    "boolean",
    "--fixed",
    "n=2",
    "--fixed",
    "degree=1",
    "--fixed",
    "heads=1",
    "--fixed",
    "steps=1",
]
DB_COMMANDS = {
    "sweep run": ["sweep", "run", *TINY, "--seeds", "0", "--workers", "1"],
    "sweep table": ["sweep", "table", "--experiment", "e"],
    "experiment": ["experiment", "xor-phase", "--scale", "quick", "--workers", "1"],
}
MEMORY = ("--json", "--max-memory", MAX_MEMORY)


def _sqlite(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for sql in statements:
            conn.execute(sql)
    conn.close()


def _results_copy(fixtures: Fixtures, path: Path, *statements: str) -> None:
    """A copy of the fixture's results database changed by SQL `statements` (or an SQLite file with
    a table `runs` when the fixture has none)."""
    if fixtures.results_db is None:
        _sqlite(path, "CREATE TABLE runs (run_id TEXT)")
        return
    shutil.copy(fixtures.results_db, path)
    for suffix in ("-wal", "-shm"):
        if Path(str(fixtures.results_db) + suffix).exists():
            shutil.copy(str(fixtures.results_db) + suffix, str(path) + suffix)
    if statements:
        _sqlite(path, *statements)


def _truncate(fraction: float) -> Callable[[Fixtures, Path], None]:
    def make(fixtures: Fixtures, path: Path) -> None:
        _results_copy(fixtures, path, "PRAGMA wal_checkpoint(TRUNCATE)")
        size = path.stat().st_size
        with open(path, "r+b") as f:
            f.truncate(max(100, int(size * fraction)))

    return make


def _metrics(text: str) -> Callable[[Fixtures, Path], None]:
    return lambda fx, p: _results_copy(fx, p, f"UPDATE runs SET metrics = '{text}'")


# name → (maker(fixtures, path), must be refused by every command, run as nobody)
DBS: dict[str, tuple[Callable[[Fixtures, Path], None], bool, bool]] = {
    "directory": (lambda fx, p: p.mkdir(), True, False),
    "FIFO": (lambda fx, p: os.mkfifo(p), True, False),
    "symlink to /dev/null": (lambda fx, p: os.symlink("/dev/null", p), True, True),
    "symlink to /dev/zero": (lambda fx, p: os.symlink("/dev/zero", p), True, True),
    "dangling symlink": (lambda fx, p: os.symlink(p.parent / "missing-db", p), True, False),
    "text file": (lambda fx, p: p.write_text("hello\n"), True, False),
    "random bytes": (lambda fx, p: p.write_bytes(os.urandom(8192)), True, False),
    "64 KiB of zeros": (lambda fx, p: p.write_bytes(bytes(65536)), True, False),
    "SQLite magic + zeros": (
        lambda fx, p: p.write_bytes(b"SQLite format 3\x00" + bytes(8192)),
        True,
        False,
    ),
    "truncated to half": (_truncate(0.5), True, False),
    "truncated to 100 bytes": (_truncate(0.0), True, False),
    "SQLite, other schema": (
        lambda fx, p: _sqlite(p, "CREATE TABLE runs (x INTEGER)"),
        True,
        False,
    ),
    "SQLite, another app's meta": (
        lambda fx, p: _sqlite(
            p, "CREATE TABLE meta (key TEXT, value TEXT)", "INSERT INTO meta VALUES ('app', 'x')"
        ),
        True,
        False,
    ),
    "results db, schema_version 99": (
        lambda fx, p: _results_copy(
            fx, p, "UPDATE meta SET value = '99' WHERE key = 'schema_version'"
        ),
        True,
        False,
    ),
    "results db, read-only file": (
        lambda fx, p: (_results_copy(fx, p, "PRAGMA journal_mode = DELETE"), os.chmod(p, 0o444)),
        False,
        True,
    ),
    "new db in a read-only folder": (lambda fx, p: (p.mkdir(), os.chmod(p, 0o555)), True, True),
    "results db, metrics not JSON": (_metrics("{not json"), False, False),
    "results db, metrics 100k-deep": (_metrics(st.deep_list()), False, False),
    "results db, metrics 5000-digit number": (
        _metrics('{"accuracy": ' + st.BIG + "}"),
        False,
        False,
    ),
    "results db, metrics NaN": (_metrics('{"accuracy": NaN}'), False, False),
    "results db, garbage -wal file": (
        lambda fx, p: (
            _results_copy(fx, p, "PRAGMA wal_checkpoint(TRUNCATE)"),
            Path(f"{p}-wal").write_bytes(os.urandom(4096)),
        ),
        False,
        False,
    ),
    "results db, garbage -journal file": (
        lambda fx, p: (
            _results_copy(fx, p, "PRAGMA journal_mode = DELETE"),
            Path(f"{p}-journal").write_bytes(os.urandom(4096)),
        ),
        False,
        False,
    ),
    "empty file": (lambda fx, p: p.write_bytes(b""), False, False),
}


def db_cases(fixtures: Fixtures) -> list[Case]:
    """Every broken database for every command with --db (experiment: only those that must be
    refused, since a usable database starts a real experiment). Each case gets its own copy."""
    folder = fixtures.root / "dbs"
    folder.mkdir(exist_ok=True)
    cases = []
    for i, (name, (make, must_refuse, nobody)) in enumerate(DBS.items()):
        for command, argv in DB_COMMANDS.items():
            if command == "experiment" and not must_refuse:
                continue
            sub = folder / f"{i}-{command.replace(' ', '-')}"
            sub.mkdir()
            os.chmod(sub, 0o777)
            path = sub / ("ro" if name == "new db in a read-only folder" else "results.sqlite")
            make(fixtures, path)
            if name == "new db in a read-only folder":
                path = path / "results.sqlite"
            refuse = must_refuse or (
                name == "results db, read-only file" and command != "sweep table"
            )
            cases.append(
                Case(
                    argv[0],
                    command,
                    "--db",
                    name,
                    (*argv, "--db", str(path), *MEMORY),
                    kind="db",
                    valid_ok=not refuse,
                    as_nobody=nobody,
                )
            )
    return cases


# a valid sweep of one Boolean run of one step: the variants that stay valid train no more than that
BASE_SPEC = """[sweep]
name = "fz"
task = "boolean"
seeds = [0]
{sweep}
[fixed]
n = 2
degree = 1
heads = 1
steps = 1
{fixed}
"""


def _spec(sweep: str = "", fixed: str = "", tail: str = "") -> str:
    return BASE_SPEC.format(sweep=sweep, fixed=fixed) + tail


def _payload(marker: str) -> str:
    """logging.config.dictConfig given a handler factory "()" = "os.system": runs a shell
    command."""
    return _spec(
        'runner = "logging.config:dictConfig"',
        f'version = 1\n[fixed.handlers.h]\n"()" = "os.system"\ncommand = "touch {marker}"',
    )


def _sweep_files(marker: str) -> dict[str, tuple[str | bytes, bool]]:
    """name → (file content, may be valid)."""
    grid10 = "\n".join(f"a{i} = [{', '.join(str(j) for j in range(10))}]" for i in range(10))
    runners = [
        "os:system",
        "this:s",
        "sys:exit",
        "builtins:exec",
        "subprocess:getoutput",
        "os:_exit",
    ]
    runners += [
        "tests.learn.sweep_runners:solve",
        "headcount.core.model.files:save_model",
        "importlib:import_module",
    ]
    files: dict[str, tuple[str | bytes, bool]] = {
        "runner payload: dictConfig → os.system": (_payload(marker), False),
        **{f"runner {r!r}": (_spec(f'runner = "{r}"'), False) for r in runners},
        "runner ''": (_spec('runner = ""'), False),
        "runner 5000 chars": (_spec(f'runner = "{"a" * 5000}:f"'), False),
        "runner a number": (_spec("runner = 123"), False),
        "empty file": ("", False),
        "random bytes": (os.urandom(4096), False),
        "invalid UTF-8": (b'[sweep]\nname = "\xff\xfe"\n', False),
        "NUL bytes": ("[sweep]\x00\nname = 'x'\n", False),
        "not TOML": ('{"sweep": {}}', False),
        "BOM then a valid file": ("\ufeff" + _spec(), True),
        "CRLF line ends": (_spec().replace("\n", "\r\n"), True),
        "no [sweep]": ("[fixed]\nn = 2\n", False),
        "no name": (_spec().replace('name = "fz"\n', ""), False),
        "task unknown": (_spec().replace('"boolean"', '"nope"'), False),
        "task ''": (_spec().replace('"boolean"', '""'), False),
        "name 10 MB": (_spec().replace('"fz"', '"' + "n" * 10_000_000 + '"'), True),
        "5000-deep array": (_spec(fixed="x = " + "[" * 5000 + "]" * 5000), False),
        "100k-deep array": (_spec(fixed="x = " + "[" * 100_000 + "]" * 100_000), False),
        "5000-deep inline table": (_spec(fixed="x = " + "{a = " * 5000 + "1" + "}" * 5000), False),
        "seeds = 10^9": (_spec().replace("seeds = [0]", "seeds = 1000000000"), False),
        "seeds = 2^63-1": (_spec().replace("seeds = [0]", f"seeds = {2**63 - 1}"), False),
        "seeds = [2^63-1]": (_spec().replace("seeds = [0]", f"seeds = [{2**63 - 1}]"), True),
        "seeds = -1": (_spec().replace("seeds = [0]", "seeds = -1"), False),
        "seeds = 0": (_spec().replace("seeds = [0]", "seeds = 0"), False),
        "seeds = 100,000 seeds": (
            _spec().replace("seeds = [0]", f"seeds = {list(range(100_000))}"),
            False,
        ),
        "seeds = 5000 digits": (_spec().replace("seeds = [0]", "seeds = " + st.BIG), False),
        "seeds = [1.5]": (_spec().replace("seeds = [0]", "seeds = [1.5]"), False),
        "seeds = [0, 0]": (_spec().replace("seeds = [0]", "seeds = [0, 0]"), False),
        "seeds = 'abc'": (_spec().replace("seeds = [0]", "seeds = 'abc'"), False),
        "grid 10 axes × 10 values (10^10 runs)": (_spec(tail="[grid]\n" + grid10), False),
        "grid axis of 1,000,000 values": (
            _spec(tail=f"[grid]\nx = [{', '.join(['1'] * 1_000_000)}]"),
            False,
        ),
        "grid axis empty": (_spec(tail="[grid]\nx = []"), False),
        "grid axis not a list": (_spec(tail="[grid]\nx = 3"), False),
        "include 100,000 tables": (_spec() + "\n[[include]]\nn = 2\n" * 100_000, False),
        "fixed n = 10^9": (_spec().replace("n = 2", "n = 1000000000"), False),
        "fixed steps = 10^9": (_spec().replace("steps = 1", "steps = 1000000000"), False),
        "fixed n = inf": (_spec().replace("n = 2", "n = inf"), False),
        "fixed n = nan": (_spec().replace("n = 2", "n = nan"), False),
        "fixed n = 5000 digits": (_spec().replace("n = 2", "n = " + st.BIG), False),
        "fixed key task": (_spec(fixed='task = "induction"'), False),
        "fixed key seed": (_spec(fixed="seed = 3"), False),
        "fixed unknown key": (_spec(fixed="bogus = 1"), False),
        "fixed a date": (_spec(fixed="when = 1979-05-27T07:32:00Z"), False),
        "a key both fixed and grid": (_spec(tail="[grid]\nn = [2, 3]"), False),
        "20 MB of comments": (_spec() + ("# " + "c" * 1000 + "\n") * 20_000, True),
    }
    return files


def sweep_file_cases(fixtures: Fixtures) -> list[Case]:
    folder = fixtures.root / "sweeps"
    folder.mkdir(exist_ok=True)
    cases = []
    for i, (name, (content, may_be_valid)) in enumerate(_sweep_files("@@MARKER@@").items()):
        marker = folder / f"MARKER{i}"
        path = folder / f"s{i}.toml"
        if isinstance(content, str):
            path.write_text(content.replace("@@MARKER@@", str(marker)), encoding="utf-8")
        else:
            path.write_bytes(content)
        argv = ("sweep", "run", str(path), "--db", "r.sqlite", "--workers", "1", *MEMORY)
        cases.append(
            Case(
                "sweep",
                "sweep run",
                "SPEC",
                name,
                argv,
                kind="sweep-file",
                valid_ok=may_be_valid,
                markers=(str(marker),),
                forbidden=(ZEN,),
            )
        )
    return cases
