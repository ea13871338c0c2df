"""The Ray backend at its boundary: `sweep run --backend ray --address …` checks the address's form
and that something answers there before Ray is asked to connect, bounds Ray's own connection
attempts, and reports every failure (bad form, missing Ray Client, unreachable, not Ray, a token
refused) as one line naming --address with exit 2. Against a real head started here
(token-authenticated, its own temp dir and process group, always torn down), a sweep whose Ray
worker is SIGKILLed mid-run finishes with every run stored exactly once (Ray retries the task; the
parent records each run once)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from headcount.common import ray_connect
from headcount.common.ray_connect import RayAddressError, parse_ray_address
from headcount.learn.store import ResultsStore
from headcount.learn.sweep import load_spec
from tests.cli_run import refused
from tests.learn import sweep_runners  # noqa: F401  (registers the test runners)
from tests.ray_head import BACKSTOP_S, REPO, driver_env, ray_head_started

pytest.importorskip("ray")

SOLVE = "tests.learn.sweep_runners:solve"
NOT_AN_ADDRESS = "is not a Ray address: give host:port, auto or ray://host:port"
# The test runners registered, then the CLI: what `headcount` does, with tests.learn.sweep_runners
# known.
DRIVER = "import sys, tests.learn.sweep_runners; from headcount.cli import main; main(sys.argv[1:])"


def sweep_argv(db: Path, address: str, *more: str) -> list[str]:
    return [
        "sweep",
        "run",
        "--db",
        str(db),
        "--task",
        "boolean",
        "--fixed",
        "n=2",
        "--backend",
        "ray",
        "--address",
        address,
        *more,
    ]


def run_driver(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """`headcount argv…` in a fresh process (so Ray's C++ output on file descriptor 2 is seen):
    (exit code, stdout, stderr). BACKSTOP_S only stops a hung test; no verdict rests on the clock
    (the connection deadline is held by test_connection_knobs_bound_each_step_and_try_once)."""
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=BACKSTOP_S,
    )
    return done.returncode, done.stdout, done.stderr


def assert_one_line(code: int, out: str, err: str, *needles: str) -> None:
    assert (code, out) == (2, ""), (code, out, err)
    assert err.startswith("error: --address ") and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err


# --------------------------------------------------------------------------------------------------
# The address's form


@pytest.mark.parametrize(
    ("address", "target"),
    [
        ("127.0.0.1:6379", ("127.0.0.1", 6379)),
        ("localhost:1", ("localhost", 1)),
        ("head-0.cluster.example.com:65535", ("head-0.cluster.example.com", 65535)),
        ("ray_head:6379", ("ray_head", 6379)),
        ("[::1]:6379", ("::1", 6379)),
        ("[fe80::1:2]:10001", ("fe80::1:2", 10001)),
        ("auto", None),
    ],
)
def test_ray_address_forms_accepted(address, target):
    assert parse_ray_address(address) == target


BAD_ADDRESSES = [
    "not an address",
    "",
    "6379",
    "host",
    ":6379",
    "host:",
    "host:0",
    "host:65536",
    "host:99999999999999999999",
    "host:abc",
    "host:+1",
    "host:٣",  # a digit, but not ASCII
    "1.2.3:80",
    "999.1.1.1:80",
    "::1:6379",
    "[nothex]:1",
    "[127.0.0.1]:1",
    "-host:1",
    "ho st:1",
    "host:1 ",
    "host\n:1",
    "http://host:1",
    "ray://",
    "ray://host",
    "ray://ray://host:1",
    "AUTO",
    "x" * 300 + ":1",
]


@pytest.mark.parametrize("address", BAD_ADDRESSES)
def test_bad_address_is_one_line_exit_2(address, tmp_path, capsys):
    db = tmp_path / "r.db"
    line = refused(capsys, *sweep_argv(db, address), needles=("--address ", NOT_AN_ADDRESS))
    assert len(line) < 250, line  # a huge address is shown cut short
    assert not db.exists()  # refused before the database is made


def test_ray_client_address_without_the_client_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(ray_connect, "ray_client_installed", lambda: False)
    db = tmp_path / "r.db"
    line = refused(
        capsys, *sweep_argv(db, "ray://127.0.0.1:10001"), needles=("--address 'ray://127",)
    )
    assert "needs pip install 'ray[client]'" in line
    assert not db.exists()


def test_ray_client_address_with_the_client_extra_is_checked_too(capsys, tmp_path, monkeypatch):
    """With the extra, ray://host:port is accepted, and its host:port must answer like any other."""
    monkeypatch.setattr(ray_connect, "ray_client_installed", lambda: True)
    assert parse_ray_address("ray://head:10001") == ("head", 10001)
    refused(
        capsys, *sweep_argv(tmp_path / "r.db", "ray://127.0.0.1:1"), needles=("connection refused",)
    )


def test_unreachable_address_is_one_line_exit_2_at_once(tmp_path, capsys):
    """Nothing listens on port 1: refused by the socket check, before Ray tries (and retries) to
    connect."""
    line = refused(
        capsys, *sweep_argv(tmp_path / "r.db", "127.0.0.1:1"), needles=("--address '127.0.0.1:1'",)
    )
    assert "no Ray cluster answers there (connection refused)" in line
    assert not (tmp_path / "r.db").exists()


def test_ray_address_in_the_environment_is_checked_and_named(tmp_path, capsys, monkeypatch):
    """Without --address, ray.init would connect to RAY_ADDRESS: it is checked the same way."""
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    argv = sweep_argv(tmp_path / "r.db", "x")[:-2]  # no --address
    refused(capsys, *argv, needles=("RAY_ADDRESS '127.0.0.1:1': no Ray cluster answers there",))
    monkeypatch.setenv("RAY_ADDRESS", "nonsense")
    refused(capsys, *argv, needles=("RAY_ADDRESS 'nonsense' " + NOT_AN_ADDRESS,))


def test_unknown_host_is_one_line(tmp_path, capsys):
    line = refused(capsys, *sweep_argv(tmp_path / "r.db", "no-such-host.invalid:6379"))
    assert "--address 'no-such-host.invalid:6379': no Ray cluster answers there" in line


def test_check_reachable_gives_up_at_its_timeout(monkeypatch):
    """A host that never answers (a dropped SYN, a slow name lookup) costs the timeout, not Ray's
    minutes."""
    release = threading.Event()

    def never_answers(*args, **kwargs):
        release.wait(30)
        raise TimeoutError

    monkeypatch.setattr(ray_connect.socket, "create_connection", never_answers)
    try:
        with pytest.raises(
            RayAddressError,
            match=r"^address 'h:1': no Ray cluster answers there \(no answer within 0.5 s",
        ) as err:
            ray_connect.check_reachable("h:1", "h", 1, timeout=0.5)
        assert err.value.param == "address"
    finally:
        release.set()


def test_connection_knobs_bound_each_step_and_try_once(monkeypatch):
    """While ray.init connects, Ray's connection steps are bounded by RAY_CONNECT_S and tried once
    (a value the user set wins), and the environment is restored afterwards: what keeps a wrong
    address from costing Ray's minutes of retries."""
    monkeypatch.delenv("RAY_gcs_rpc_server_connect_timeout_s", raising=False)
    monkeypatch.delenv("RAY_gcs_server_port_wait_time_s", raising=False)
    monkeypatch.setenv("RAY_py_gcs_connect_timeout_s", "7")
    with ray_connect.connect_env():
        assert os.environ["RAY_gcs_rpc_server_connect_timeout_s"] == str(ray_connect.RAY_CONNECT_S)
        assert os.environ["RAY_gcs_server_port_wait_time_s"] == "1"
        assert os.environ["RAY_py_gcs_connect_timeout_s"] == "7"
    assert "RAY_gcs_rpc_server_connect_timeout_s" not in os.environ
    assert os.environ["RAY_py_gcs_connect_timeout_s"] == "7"


# --------------------------------------------------------------------------------------------------
# Something answers, but not as Ray would


@contextlib.contextmanager
def silent_listener() -> Iterator[int]:
    """A TCP port (on every interface: Ray dials this machine's address, not 127.0.0.1) that accepts
    connections and never says a word."""
    server = socket.create_server(("", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        for conn in [*held, server]:
            conn.close()


def test_a_port_that_is_not_ray_fails_in_one_line(tmp_path):
    with silent_listener() as port:
        code, out, err = run_driver(
            sweep_argv(tmp_path / "r.db", f"127.0.0.1:{port}"), driver_env()
        )
    assert_one_line(code, out, err, f"--address '127.0.0.1:{port}': no Ray cluster answered there")


# --------------------------------------------------------------------------------------------------
# A real head


@pytest.fixture(scope="module")
def ray_head() -> Iterator[tuple[str, str]]:
    with ray_head_started() as head:
        yield head


def test_head_without_its_token_is_one_line(ray_head, tmp_path):
    address, _ = ray_head
    code, out, err = run_driver(sweep_argv(tmp_path / "r.db", address), driver_env())
    assert_one_line(code, out, err, f"--address '{address}': the Ray cluster there needs its token")
    env = driver_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="0" * 32)
    code, out, err = run_driver(sweep_argv(tmp_path / "r.db", address), env)
    assert_one_line(code, out, err, "refused this process's token")
    with ResultsStore(tmp_path / "r.db") as store:
        assert store.rows() == []  # nothing ran; the runs leased before Ray connected are released
    with contextlib.closing(sqlite3.connect(tmp_path / "r.db")) as conn:
        assert conn.execute("SELECT count(*) FROM claims").fetchone() == (0,)


def kill_first_worker(log_dir: Path, killed: list, stop: threading.Event) -> None:
    """SIGKILL the Ray worker of the first run that starts (the runner logs its pid before it
    sleeps); `killed` gets [its pid, whether it was a `ray::` process]."""
    while not stop.is_set():
        for path in sorted(log_dir.iterdir()):
            pids = path.read_text().split()
            if pids:
                pid = int(pids[0])
                cmdline = Path(f"/proc/{pid}/cmdline")
                killed[:] = [pid, cmdline.exists() and cmdline.read_bytes().startswith(b"ray::")]
                os.kill(pid, signal.SIGKILL)
                return
        time.sleep(0.05)


def test_sweep_on_a_head_survives_a_killed_worker_storing_each_run_once(ray_head, tmp_path):
    address, token = ray_head
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    spec = tmp_path / "s.toml"
    spec.write_text(
        f'[sweep]\nname = "ray-kill"\nexperiment = "ray"\ntask = "toy"\nrunner = "{SOLVE}"\n'
        f'seeds = [0, 1]\n[fixed]\nn = 8\nsleep = 1.5\nlog_dir = "{log_dir}"\n[grid]\nx = [1, 2, '
        "3]\n"
    )
    expected = {r.run_id for r in load_spec(spec).runs()}
    db = tmp_path / "r.db"
    argv = [
        "sweep",
        "run",
        str(spec),
        "--db",
        str(db),
        "--backend",
        "ray",
        "--address",
        address,
        "--workers",
        "2",
    ]
    killed: list = []
    stop = threading.Event()
    killer = threading.Thread(target=kill_first_worker, args=(log_dir, killed, stop), daemon=True)
    killer.start()
    try:
        code, out, err = run_driver(argv, driver_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token))
    finally:
        stop.set()
        killer.join(5)
    assert (code, out.strip(), err) == (0, "6 runs done now, 0 before, 0 failed, of 6", ""), (
        code,
        out,
        err,
    )
    assert len(killed) == 2 and killed[1] is True, killed  # a `ray::` worker process was killed
    runs_of_killed = [p for p in log_dir.iterdir() if str(killed[0]) == p.read_text().split()[0]]
    assert len(runs_of_killed) == 1
    pids = runs_of_killed[0].read_text().split()
    assert len(pids) == 2 and pids[1] != pids[0], (
        pids
    )  # Ray ran the killed run again, in another worker
    with ResultsStore(db) as store:
        rows = store.rows()
    assert sorted(r["run_id"] for r in rows) == sorted(expected)  # each run once
    assert {(r["status"], r["attempts"]) for r in rows} == {("done", 1)}
