"""A real Ray head for the tests that need one (tests/learn/test_sweep_ray.py,
tests/core/test_distributed.py): 2 CPUs, token authentication, its own temp dir and process group,
always torn down; and the environment a driver process runs in."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RAY = Path(sys.executable).with_name("ray")
BACKSTOP_S = 600  # seconds before a hung driver or head is stopped (a backstop, never a verdict)


def driver_env(**extra: str) -> dict[str, str]:
    """This environment for a driver process: the repository importable, no Ray address or token
    mode inherited, usage stats off; plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH"))}
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return {**env, "PYTHONPATH": path, "RAY_USAGE_STATS_ENABLED": "0", **extra}


@contextlib.contextmanager
def ray_head_started() -> Iterator[tuple[str, str]]:
    """A Ray head on this machine with 2 CPUs and token authentication: (its address, its token). It
    has its own temp dir (so `auto` and other tests' clusters never see it) and its own process
    group, which teardown kills whole (not `ray stop`, which would stop every Ray on the
    machine)."""
    if not RAY.exists():
        pytest.skip(f"no ray command beside {sys.executable}")
    temp_dir = Path(tempfile.mkdtemp(prefix="hc-ray-", dir="/tmp"))  # short: Ray puts sockets there
    token = secrets.token_hex(16)
    env = driver_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
    log = (temp_dir / "head.log").open("w")
    head = subprocess.Popen(
        [
            str(RAY),
            "start",
            "--head",
            "--block",
            "--port=0",
            "--num-cpus=2",
            "--include-dashboard=false",
            "--disable-usage-stats",
            f"--temp-dir={temp_dir}",
        ],  # fmt: skip
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=REPO,
        start_new_session=True,
    )
    try:
        address_file = temp_dir / "ray_current_cluster"
        deadline = time.monotonic() + BACKSTOP_S  # a backstop for a head that never starts
        while (
            "Ray runtime started" not in (temp_dir / "head.log").read_text()
            or not address_file.exists()
        ):
            if head.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"ray start --head failed: {(temp_dir / 'head.log').read_text()[-2000:]}"
                )
            time.sleep(0.2)
        port = int(address_file.read_text().strip().rpartition(":")[2])
        yield f"127.0.0.1:{port}", token
    finally:
        head.terminate()  # ray start --block stops what it started
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)  # and anything left in its group (workers, agents)
        head.wait()
        log.close()
        shutil.rmtree(temp_dir, ignore_errors=True)
