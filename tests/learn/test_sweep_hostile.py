"""Sweeps against hostile or careless input (issue 13): a sweep file never names code to run, its
size and run count are bounded before anything is expanded, a results database that cannot be used
or written is refused before any run trains, and concurrent sweeps on one database train each run
once."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from headcount.cli import main
from headcount.learn import store_schema
from headcount.learn.store import ResultsStore
from headcount.learn.sweep import (
    DEFAULT_RUNNER,
    LEASE_STALE_SECONDS,
    MAX_RUNS,
    MAX_SPEC_BYTES,
    MAX_WORKERS,
    SpecError,
    SweepError,
    SweepSpec,
    load_spec,
    register_runner,
    resolve_runner,
    run_sweep,
    spec_from_dict,
)
from headcount.learn.sweep.leases import holder_alive, this_process
from tests.learn import sweep_runners

SOLVE = "tests.learn.sweep_runners:solve"


def cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """headcount.cli.main in this process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as info:
        main(argv)
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return info.value.code, out, err


def assert_refused(code: int, out: str, err: str, *needles: str) -> None:
    """Exit 2, nothing on stdout, one line "error: …" on stderr containing every needle."""
    assert (code, out) == (2, ""), (code, out, err)
    assert err.startswith("error: ") and err.endswith("\n") and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err


def sweep_toml(runner: str = SOLVE, log_dir: Path | None = None, **sweep) -> str:
    head = "".join(f"{k} = {v}\n" for k, v in sweep.items())
    log = f'log_dir = "{log_dir}"\n' if log_dir else ""
    return (
        f'[sweep]\nname = "h"\ntask = "toy"\nrunner = "{runner}"\n{head}'
        f"[fixed]\nn = 8\n{log}[grid]\nx = [1, 2]\n"
    )


# --------------------------------------------------------------------------------------------------
# A sweep file is data


PAYLOADS = {
    "dictConfig": (
        '[sweep]\nname = "p"\ntask = "induction"\nrunner = "logging.config:dictConfig"\n'
        '[fixed]\nversion = 1\n"()" = "os.system"\ncommand = "touch {marker}"\n'
        '[fixed.handlers.h]\n"()" = "os.system"\ncommand = "touch {marker}"\n'
    ),
    "sys.exit": '[sweep]\nname = "p"\ntask = "induction"\nrunner = "sys:exit"\n',
    "this": '[sweep]\nname = "p"\ntask = "induction"\nrunner = "this:s"\n',
}


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_sweep_file_cannot_name_code(payload, tmp_path, capsys):
    marker = tmp_path / "marker"
    spec = tmp_path / "s.toml"
    spec.write_text(PAYLOADS[payload].format(marker=marker))
    db = tmp_path / "r.db"
    code, out, err = cli(["sweep", "run", str(spec), "--db", str(db)], capsys)
    assert_refused(
        code,
        out,
        err,
        "is not a registered runner (a sweep file names one, never code); runners: ",
        DEFAULT_RUNNER,
    )
    assert not marker.exists() and not db.exists()


def test_runners_are_looked_up_never_imported(tmp_path):
    with pytest.raises(SweepError, match="'json:dumps' is not a registered runner"):
        resolve_runner("json:dumps")
    spec = SweepSpec(
        name="t", task="toy", experiment="t", runner="no_such_module_zz:f"
    )  # made in Python
    with pytest.raises(SweepError, match="'no_such_module_zz:f' is not a registered runner"):
        run_sweep(spec, tmp_path / "r.db")
    assert "no_such_module_zz" not in sys.modules and not (tmp_path / "r.db").exists()
    with pytest.raises(SpecError, match=r"\[sweep\] runner: 3 is not a registered runner"):
        spec_from_dict({"sweep": {"name": "t", "task": "toy", "runner": 3}})
    assert resolve_runner(SOLVE).fn is sweep_runners.solve


def test_register_runner_checks_its_function():
    assert register_runner(sweep_runners.solve) == SOLVE  # again: a no-op
    assert register_runner(sweep_runners.solve, "solve-alias") == "solve-alias"
    with pytest.raises(ValueError, match="is built in"):
        register_runner(sweep_runners.solve, DEFAULT_RUNNER)
    with pytest.raises(ValueError, match="is taken by another function"):
        register_runner(sweep_runners.flaky, SOLVE)
    with pytest.raises(ValueError, match="cannot be sent to worker processes"):
        register_runner(lambda config: {}, "lambda")
    with pytest.raises(TypeError, match="must be callable"):
        register_runner("os:system")  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# Bounded sweep files


def test_deep_toml_array_is_one_line(tmp_path, capsys):
    spec = tmp_path / "deep.toml"
    spec.write_text(sweep_toml() + "[include]\ny = " + "[" * 5000 + "]" * 5000 + "\n")
    code, out, err = cli(["sweep", "run", str(spec), "--db", str(tmp_path / "r.db")], capsys)
    assert_refused(code, out, err, "nested too deeply")


def test_huge_seed_count_is_refused_before_expanding(tmp_path, capsys):
    spec = tmp_path / "seeds.toml"
    spec.write_text(sweep_toml(seeds=1_000_000_000))
    t0 = (
        time.process_time()
    )  # CPU time: expanding 10^9 seeds would take minutes of it, on any machine
    code, out, err = cli(["sweep", "run", str(spec), "--db", str(tmp_path / "r.db")], capsys)
    assert_refused(code, out, err, "[sweep] seeds: a seed count must be ≤ MAX_RUNS = 10,000")
    assert time.process_time() - t0 < 1.0 and not (tmp_path / "r.db").exists()


def test_huge_grid_is_refused_before_expanding():
    grid = {f"a{i}": list(range(10)) for i in range(40)}  # 10⁴⁰ points
    with pytest.raises(SpecError, match=r"more than MAX_RUNS = 10,000 runs \(\(grid points"):
        spec_from_dict({"sweep": {"name": "t", "task": "toy", "runner": SOLVE}, "grid": grid})
    with pytest.raises(SpecError, match="more than MAX_RUNS"):  # grid points × seeds
        spec_from_dict(
            {
                "sweep": {"name": "t", "task": "toy", "runner": SOLVE, "seeds": 1000},
                "grid": {"x": list(range(101))},
            }
        )
    spec = SweepSpec(
        name="t", task="toy", experiment="t", runner=SOLVE, grid=grid
    )  # made in Python
    with pytest.raises(SpecError, match="more than MAX_RUNS"):
        spec.runs()
    at_limit = {
        "sweep": {"name": "t", "task": "toy", "runner": SOLVE, "seeds": 10},
        "grid": {"x": list(range(MAX_RUNS // 10))},
    }
    assert spec_from_dict(at_limit).run_count() == MAX_RUNS  # the limit itself is allowed


@pytest.mark.parametrize(
    "seeds, message",
    [
        ([2**63], "seeds must be integers from 0 to MAX_SEED = 2**63 - 1, got 9223372036854775808"),
        ([0, -1], "seeds must be integers from 0 to MAX_SEED = 2**63 - 1, got -1"),
        (10**100, "a seed count must be ≤ MAX_RUNS = 10,000 (runs per sweep), got about 10^100"),
        (-(10**5000), "a seed count must be ≥ 1, got -about 10^5000"),
        (list(range(MAX_RUNS + 1)), "more than MAX_RUNS = 10,000 seeds"),
    ],
    ids=["2**63", "negative", "count 1e100", "count -1e5000", "long list"],
)
def test_seed_bounds(seeds, message):
    with pytest.raises(SpecError) as info:
        spec_from_dict({"sweep": {"name": "t", "task": "toy", "runner": SOLVE, "seeds": seeds}})
    assert message in str(info.value) and len(str(info.value)) < 300


def test_nested_values_are_bounded():
    value: list = []
    for _ in range(40):
        value = [value]
    with pytest.raises(
        SpecError, match=r"\[fixed\] v: values are nested more than MAX_VALUE_DEPTH = 32"
    ):
        spec_from_dict(
            {"sweep": {"name": "t", "task": "toy", "runner": SOLVE}, "fixed": {"v": value}}
        )


def test_sweep_file_size_and_kind(tmp_path, capsys):
    big = tmp_path / "big.toml"
    big.write_text(sweep_toml() + "#" * MAX_SPEC_BYTES + "\n")
    code, out, err = cli(["sweep", "run", str(big), "--db", str(tmp_path / "r.db")], capsys)
    assert_refused(code, out, err, "larger than MAX_SPEC_BYTES = 1,048,576 bytes")
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)  # reading it would block forever: refused without opening
    code, out, err = cli(["sweep", "run", str(fifo), "--db", str(tmp_path / "r.db")], capsys)
    assert_refused(code, out, err, "is not a regular file")
    code, out, err = cli(["sweep", "run", str(tmp_path), "--db", str(tmp_path / "r.db")], capsys)
    assert_refused(code, out, err, "is not a regular file")
    digits = tmp_path / "digits.toml"
    digits.write_text(sweep_toml() + "[include]\ny = " + "7" * 5000 + "\n")
    code, out, err = cli(["sweep", "run", str(digits), "--db", str(tmp_path / "r.db")], capsys)
    assert_refused(code, out, err, "digits.toml: not readable: Exceeds the limit (4300 digits)")
    long_name = tmp_path / ("x" * 5000 + ".toml")
    code, out, err = cli(["sweep", "run", str(long_name), "--db", str(tmp_path / "r.db")], capsys)
    assert_refused(code, out, err, "cannot be read: File name too long")
    assert not (tmp_path / "r.db").exists()


# --------------------------------------------------------------------------------------------------
# Results databases that cannot be used: refused before any run trains


def damaged(path: Path) -> None:
    """A results database whose middle page is overwritten (the header and schema still read)."""
    with ResultsStore(path) as store:
        for i in range(60):
            config = {"task": "toy", "x": i, "seed": 0, "pad": "y" * 200}
            store.record(run_id=f"r{i}", config=config, status="done", metrics={"a": i})
    data = bytearray(path.read_bytes())
    middle = len(data) // 2 // 4096 * 4096
    data[middle : middle + 4096] = b"\xff" * 4096
    path.write_bytes(bytes(data))


def bad_db(kind: str, tmp_path: Path) -> tuple[Path, str]:
    """A --db path of the given kind, and what the refusal says."""
    path = tmp_path / "r.db"
    if kind == "directory":
        path.mkdir()
        return path, "is a directory, not a file"
    if kind == "devnull":
        return Path("/dev/null"), "is not a regular file (a device, FIFO or socket)"
    if kind == "fifo":
        os.mkfifo(path)
        return path, "is not a regular file (a device, FIFO or socket)"
    if kind == "dangling-symlink":
        path.symlink_to(tmp_path / "missing" / "target.db")
        return path, "is a symbolic link to a missing file"
    if kind == "text":
        path.write_text("not a database\n")
        return path, "(not an SQLite file)"
    if kind == "truncated":
        damaged(path)
        path.write_bytes(path.read_bytes()[:8192])
        return path, "is not a usable headcount results database: database disk image is malformed"
    if kind == "half-corrupt":
        damaged(path)
        return path, "is a damaged results database (SQLite quick_check:"
    if kind == "parent-is-a-file":
        (tmp_path / "file").write_text("x")
        return tmp_path / "file" / "r.db", "cannot be used: Not a directory"
    raise AssertionError(kind)


KINDS = ["directory", "devnull", "fifo", "dangling-symlink", "text", "truncated", "half-corrupt"]


@pytest.mark.parametrize("kind", [*KINDS, "parent-is-a-file"])
def test_unusable_database_is_refused_before_training(kind, tmp_path, capsys):
    db, message = bad_db(kind, tmp_path)
    before = db.read_bytes() if db.is_file() else None
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    spec = tmp_path / "s.toml"
    spec.write_text(sweep_toml(log_dir=log_dir))
    code, out, err = cli(["sweep", "run", str(spec), "--db", str(db)], capsys)
    assert_refused(code, out, err, message)
    assert list(log_dir.iterdir()) == []  # no run was executed
    if before is not None:
        assert db.read_bytes() == before  # left untouched
    if kind in KINDS:  # the table command refuses it the same way
        code, out, err = cli(["sweep", "table", "--db", str(db), "--experiment", "h"], capsys)
        assert_refused(code, out, err, message)


@pytest.fixture
def shared_dir():
    """A folder that a forked, unprivileged child can enter (tmp_path's parents are private to
    root)."""
    path = Path(tempfile.mkdtemp(prefix="headcount-ro-"))
    path.chmod(0o777)
    yield path
    for p in [path, *path.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)
    shutil.rmtree(path)


def cli_unprivileged(argv: list[str]) -> tuple[int, str, str]:
    """headcount.cli.main(argv) in a forked child that cannot write what it does not own (as root,
    the child becomes nobody: root writes anywhere): (exit code, stdout, stderr)."""
    pipes = [os.pipe(), os.pipe()]
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            os.close(pipes[0][0])
            os.close(pipes[1][0])
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            sys.stdout = os.fdopen(pipes[0][1], "w")
            sys.stderr = os.fdopen(pipes[1][1], "w")
            try:
                main(argv)
                code = 0
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 98
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    os.close(pipes[0][1])
    os.close(pipes[1][1])
    with os.fdopen(pipes[0][0]) as out, os.fdopen(pipes[1][0]) as err:
        texts = out.read(), err.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), *texts


@pytest.mark.parametrize("kind", ["read-only database", "new database in a read-only folder"])
def test_database_that_cannot_be_written_is_refused_before_training(kind, shared_dir, capsys):
    log_dir = shared_dir / "log"
    log_dir.mkdir(mode=0o777)
    log_dir.chmod(0o777)
    spec = shared_dir / "s.toml"
    spec.write_text(sweep_toml(log_dir=log_dir))
    spec.chmod(0o644)
    if kind == "read-only database":
        db = shared_dir / "r.db"
        ResultsStore(db).close()
        db.chmod(0o444)
        message = "cannot be written (attempt to write a readonly database)"
    else:
        folder = shared_dir / "ro"
        folder.mkdir()
        folder.chmod(0o555)
        db = folder / "r.db"
        message = "cannot be opened (unable to open database file): check that its folder"
    argv = ["sweep", "run", str(spec), "--db", str(db)]
    cli(
        ["sweep", "run", str(spec), "--db", str(shared_dir)], capsys
    )  # import what the child will use
    code, out, err = cli_unprivileged(argv)
    assert_refused(code, out, err, message)
    assert list(log_dir.iterdir()) == []  # refused before any run was executed


def test_old_database_gains_the_lease_table(tmp_path):
    db = tmp_path / "r.db"
    ResultsStore(db).close()  # as a reader leaves it: no lease table
    with ResultsStore(db) as store:
        assert store.leases() == []
    spec = {
        "sweep": {"name": "t", "task": "toy", "runner": SOLVE, "seeds": [0]},
        "grid": {"x": [1]},
    }
    assert run_sweep(spec, db, workers=1).runs_done_now == 1
    with sqlite3.connect(db) as conn:  # the file keeps the leases in its table `claims`
        assert conn.execute("SELECT count(*) FROM claims").fetchone() == (0,)  # released


# --------------------------------------------------------------------------------------------------
# Leases: concurrent sweeps on one database


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_lease_holders():
    me = this_process()
    now = time.time()
    assert holder_alive({**me, "leased_at": now})
    parent = {**me, "pid": os.getppid(), "started": None, "leased_at": now}
    assert holder_alive(parent)
    assert not holder_alive({**parent, "leased_at": now - LEASE_STALE_SECONDS - 1})  # too old
    assert not holder_alive({**parent, "pid": dead_pid()})
    if me["started"] is not None:  # /proc: a reused pid is told apart by its start time
        assert not holder_alive({**parent, "started": -1})
    assert holder_alive(
        {**parent, "host": "elsewhere.invalid", "pid": dead_pid()}
    )  # cannot tell: held
    assert not holder_alive({**parent, "pid": 0})


def test_store_leases(tmp_path):
    db = tmp_path / "r.db"
    a, b = this_process(), this_process()
    with ResultsStore(db, for_writing=True) as store:
        assert store.lease("r1", a, 0, holder_alive) and store.lease(
            "r1", a, 0, holder_alive
        )  # again: kept
        assert not store.lease("r1", b, 0, holder_alive)  # held by a live sweep (this process)
        assert not store.lease("r2", a, 1, holder_alive)  # someone recorded it since it was seen
        store.record(
            run_id="r1", config={"seed": 0}, status="failed", error="x", lease_token=a["token"]
        )
        assert store.leases() == []  # recorded: released in the same transaction
        assert not store.lease("r1", b, 0, holder_alive)  # recorded by another sweep since b looked
        assert store.lease("r1", b, 1, holder_alive)
        assert store.release_leases(b["token"]) == 1 and store.leases() == []


def test_live_leases_are_skipped_dead_ones_taken_over(tmp_path):
    db = tmp_path / "r.db"
    spec = {
        "sweep": {"name": "t", "task": "toy", "runner": SOLVE, "seeds": [0]},
        "fixed": {"n": 8},
        "grid": {"x": [1, 2, 3]},
    }
    first, second, third = (r.run_id for r in load_spec(spec).runs())
    live = {**this_process(), "pid": os.getppid(), "started": None}
    dead = {**this_process(), "pid": dead_pid()}
    with ResultsStore(db, for_writing=True) as store:
        assert store.lease(first, live, 0, lambda lease: True)
        assert store.lease(second, dead, 0, lambda lease: True)
    summary = run_sweep(spec, db, workers=1)
    assert (summary.runs_total, summary.runs_done_before, summary.runs_done_now) == (3, 0, 2)
    with ResultsStore(db) as store:
        assert store.finished_ids() == {second, third}
        assert [c["run_id"] for c in store.leases()] == [first]  # another sweep's: left alone


def test_two_concurrent_sweeps_train_each_run_once(tmp_path):
    db = tmp_path / "r.db"
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    spec = {
        "sweep": {"name": "c", "task": "toy", "runner": SOLVE, "seeds": [0, 1]},
        "fixed": {"n": 8, "sleep": 0.1, "log_dir": str(log_dir)},
        "grid": {"x": [1, 2, 3, 4, 5, 6]},
    }
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(
            target=sweep_runners.sweep_when_ready, args=(spec, str(db), 1, barrier, results)
        )
        for _ in range(2)
    ]
    for proc in procs:
        proc.start()
    counts = [results.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    assert all("error" not in c for c in counts), counts
    assert sum(c["runs_done_now"] for c in counts) == 12  # each run stored by exactly one of them
    assert all(c["runs_total"] == 12 and c["runs_failed"] == 0 for c in counts)
    executions = {p.name: p.read_text().split() for p in log_dir.iterdir()}
    assert len(executions) == 12 and all(
        len(pids) == 1 for pids in executions.values()
    )  # trained once
    with ResultsStore(db) as store:
        assert store.count("done") == 12 and store.leases() == []


def test_opening_waits_for_a_concurrent_first_open(tmp_path):
    """Switching a new file to WAL fails at once (SQLite does not wait) while another connection
    holds a write lock, as when two sweeps create one database at the same moment: opening retries
    instead."""
    db = tmp_path / "r.db"
    with sqlite3.connect(
        db
    ) as conn:  # a results database still in rollback mode, as its creator leaves it
        conn.executescript(store_schema.SCHEMA)
        conn.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("app", store_schema.APP), ("schema_version", store_schema.SCHEMA_VERSION)],
        )
    reader = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    reader.execute("BEGIN IMMEDIATE")  # another opener, initialising it
    t0 = time.perf_counter()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        sqlite3.connect(db, timeout=60).execute("PRAGMA journal_mode = WAL")
    assert (
        time.perf_counter() - t0 < 30
    )  # SQLite did not wait its 60 s (a wait uses no CPU: the clock tells)
    timer = threading.Timer(0.3, lambda: reader.execute("COMMIT"))
    timer.start()
    try:
        with ResultsStore(db, for_writing=True) as results:
            assert results.count() == 0
    finally:
        timer.join()
        reader.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_help_states_the_bounds(capsys):
    code, out, _ = cli(["sweep", "run", "--help"], capsys)
    text = " ".join(out.replace("│", " ").split())
    assert code == 0 and f"{MAX_RUNS:,} runs" in text and f"≤ {MAX_RUNS:,}" in text
    assert MAX_SPEC_BYTES == 1 << 20 and "at most 1 MiB" in text and f"1 … {MAX_WORKERS}" in text


@pytest.mark.parametrize("workers", ["1025", "1000000000000", "1" + "0" * 100])
def test_worker_count_is_bounded(workers, tmp_path, capsys):
    argv = ["sweep", "run", "--db", str(tmp_path / "r.db"), "--task", "boolean", "--grid", "n=2"]
    code, out, err = cli([*argv, "--workers", workers], capsys)
    assert_refused(code, out, err, f"is more than MAX_WORKERS = {MAX_WORKERS} (--workers")
    assert not (tmp_path / "r.db").exists()


@pytest.mark.parametrize("seeds", ["", ",", " ", " , ,"])
def test_seeds_naming_no_seed_are_refused(seeds, tmp_path, capsys):
    """An empty --seeds is a mistake, not "the default seed" (issue 27)."""
    db = tmp_path / "r.db"
    argv = ["sweep", "run", "--db", str(db), "--task", "boolean", "--fixed", "n=2"]
    code, out, err = cli([*argv, "--seeds", seeds], capsys)
    message = f"--seeds {seeds!r} names no seed: give one or more seeds 0 … 2⁶³−1, e.g. 0,1,2"
    assert_refused(code, out, err, message)
    spec = tmp_path / "s.toml"
    spec.write_text(sweep_toml())
    code, out, err = cli(["sweep", "run", str(spec), "--db", str(db), "--seeds", seeds], capsys)
    assert_refused(
        code, out, err, "give either a sweep file or --task/--fixed/--grid/--seeds/--name"
    )
    assert not db.exists()


@pytest.mark.parametrize("backend", [[], ["--backend", "local"]], ids=["default", "local"])
def test_address_without_the_ray_backend_is_refused(backend, tmp_path, capsys):
    """--address names a Ray cluster: with the local backend it would be ignored (issue 27)."""
    db = tmp_path / "r.db"
    argv = ["sweep", "run", "--db", str(db), "--task", "boolean", "--fixed", "n=2", *backend]
    code, out, err = cli([*argv, "--address", "127.0.0.1:6379"], capsys)
    assert_refused(code, out, err, "--address is the Ray cluster's address: it needs --backend ray")
    code, out, err = cli(
        ["experiment", "xor-phase", "--db", str(db), *backend, "--address", "x"], capsys
    )
    assert_refused(code, out, err, "--address is the Ray cluster's address: it needs --backend ray")
    assert list(tmp_path.iterdir()) == []  # refused before the database (or a model folder) is made


def test_built_in_runner_is_imported_by_the_workers_only():
    runner = resolve_runner(DEFAULT_RUNNER)
    assert (
        runner.name == DEFAULT_RUNNER and pickle.loads(pickle.dumps(runner)) == runner
    )  # sent by name


def test_configs_the_runner_refuses_exit_2_after_the_other_runs(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(
        sweep_toml("tests.learn.sweep_runners:refuse_even").replace("x = [1, 2]", "x = [1, 2, 3]")
    )
    db = tmp_path / "r.db"
    code, out, err = cli(["sweep", "run", str(spec), "--db", str(db), "--workers", "1"], capsys)
    assert_refused(
        code,
        out,
        err,
        "sweep 'h': the runner refused the config of 1 of its 3 runs (stored as failed; 2 done "
        "now): "
        "InputError: x = 2 is even; this runner takes odd x",
    )
    with ResultsStore(db) as results:
        assert (results.count("done"), results.count("failed")) == (2, 1)


@pytest.mark.parametrize("metrics", ["{bad json", '{"a": ' + "7" * 5000 + "}", "[" * 100_000])
def test_unreadable_rows_are_one_line(metrics, tmp_path, capsys):
    db = tmp_path / "r.db"
    with ResultsStore(db) as results:
        results.record(
            run_id="r1",
            config={"task": "toy", "seed": 0},
            status="done",
            metrics={},
            experiment="e",
        )
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET metrics = ?", (metrics,))
    code, out, err = cli(["sweep", "table", "--db", str(db), "--experiment", "e"], capsys)
    assert_refused(code, out, err, "is damaged: run 'r1' has unreadable metrics")


@pytest.mark.parametrize("section", ["fixed", "grid", "include"])
def test_sweep_file_cannot_choose_a_path_to_write(section, tmp_path):
    target = str(tmp_path / "victim")
    tables = {
        "fixed": {"n": 4, "out": target},
        "grid": {"out": [target]},
        "include": [{"out": target}],
    }
    data = {"sweep": {"name": "t", "task": "boolean"}, section: tables[section]}
    with pytest.raises(SpecError, match=r"out: a sweep file may not choose a path to write"):
        spec_from_dict(data)
    assert not os.path.lexists(target)
