"""Where a certificate's chunks run (core.certify.distributed): "local" is the one streaming pass
of certify_model in this process; "ray" spreads the chunks over a Ray cluster — a local one with
`workers` CPUs, or the cluster at `address` (common.ray_connect checks it and reaches it, every
failure one line) — as tasks of one CPU each.

A task whose worker dies is retried by Ray (RAY_RETRIES), then submitted again here (RESUBMITS);
a task that raises passes its error on (e.g. an InputError, exit 2). Ray's raylet messages ("a
worker died, the task will be retried") are dropped while the tasks run, so JSON output stays
one object.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Any

from headcount.common.errors import InputError, InternalError, param
from headcount.common.ray_connect import (
    ADDRESS,
    check_ray_address,
    connect_ray,
    import_ray,
    raylet_messages_dropped,
)
from headcount.common.validate import check_choice, check_int
from headcount.core.certify.certificate import Certificate
from headcount.core.certify.distributed import ChunkResult, Job, chunk_results

EXECUTORS = ("local", "ray")
RAY_RETRIES = 2  # Ray's own retries of a task whose worker died
RESUBMITS = 3  # then submitted again this many times
MAX_WORKERS = 1024


class RayExecutor:
    """distributed.Executor on Ray (module docstring)."""

    def __init__(self, workers: int | None = None, address: str | None = None):
        self.ray, self.address = import_ray(), address
        if address is not None:
            check_ray_address(address, ADDRESS)
        self.workers, self.tasks, self.started = workers or 1, 0, False
        self._wanted = workers
        self._messages: contextlib.ExitStack | None = None

    def start(self, job: Job) -> None:
        # the errors of tasks cancelled or left behind are not this run's: Ray would print each
        os.environ.setdefault("RAY_IGNORE_UNHANDLED_ERRORS", "1")
        if not self.ray.is_initialized():
            kwargs: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
            if self.address is None:
                self.ray.init(num_cpus=self._wanted, include_dashboard=False, **kwargs)
            else:
                connect_ray(self.ray, self.address, ADDRESS, **kwargs)
            self.started = True
        self.workers = max(1, int(self.ray.cluster_resources().get("CPU", 1)))
        self._messages = contextlib.ExitStack()
        self._messages.enter_context(raylet_messages_dropped())
        self._task = self.ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(chunk_results)
        self._job = self.ray.put(job)

    def submit(self, start: int, stop: int, p: int, counts_from: int) -> list[Any]:
        args = (start, stop, p, counts_from)
        return [self._task.remote(self._job, *args), args, 0]

    def result(self, handle: list[Any]) -> list[ChunkResult]:
        exceptions = self.ray.exceptions
        while True:
            try:
                out = self.ray.get(handle[0])
                self.tasks += 1
                return out
            except exceptions.RayTaskError as err:  # the task raised: its error, not a lost worker
                raise _task_failure(err, exceptions) from None
            except exceptions.RayError as err:  # its worker (or node) died, after Ray's retries
                if handle[2] >= RESUBMITS:
                    raise InputError(
                        f"a certificate task was lost {RESUBMITS + 1} times on the Ray cluster "
                        f"({type(err).__name__}): is the cluster losing workers?"
                    ) from None
                self.tasks += 1
                handle[0], handle[2] = self._task.remote(self._job, *handle[1]), handle[2] + 1

    def cancel(self, handle: list[Any]) -> None:
        with contextlib.suppress(Exception):
            self.ray.cancel(handle[0])

    def close(self) -> None:
        if self._messages is not None:
            self._messages.close()
            self._messages = None
        if self.started:
            self.ray.shutdown()
            self.started = False


def _task_failure(err: Exception, exceptions: Any) -> Exception:
    """What a task's own failure is here: its InputError as it was raised; a job the workers could
    not load (another headcount there) as an InputError; anything else an InternalError, each one
    line."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, InputError):
        return cause
    first = (str(cause or err).strip().splitlines() or [""])[0][:300]
    if isinstance(cause, exceptions.RaySystemError) or "could not be computed" in str(err):
        return InputError(
            f"the Ray workers could not load this certificate's task ({first}): they must run "
            "this headcount version"
        )
    return InternalError(f"a certificate task failed on the Ray cluster: {first}")


def make_executor(executor: str, workers: int | None, address: str | None) -> RayExecutor | None:
    """None for "local" (certify_model's one process), else a RayExecutor: InputError for an unknown
    executor, workers outside 1..MAX_WORKERS, or an address without executor "ray";
    BackendUnavailableError without Ray; RayAddressError for an address nothing answers at."""
    check_choice("executor", executor, EXECUTORS)
    if workers is not None:
        check_int("workers", workers, low=1, high=MAX_WORKERS)
    if executor == "local":
        if address is not None or workers is not None:
            given = param("address") if address is not None else param("workers")
            raise InputError(f"{given} is for the Ray executor: it needs {param('executor')} ray")
        return None
    return RayExecutor(workers, address)


def task_worker_pids() -> list[int]:
    """Local processes running a certificate task now, found by the title Ray gives them
    ("ray::chunk_results", from the task's function name; Linux /proc, an empty list elsewhere):
    what the tests and benchmarks/bench_spread.py SIGKILL to show a lost worker is survived."""
    title = f"ray::{chunk_results.__name__}".encode()
    proc = Path("/proc")
    pids = []
    for entry in proc.iterdir() if proc.is_dir() else ():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().startswith(title):
                    pids.append(int(entry.name))
            except OSError:  # the process ended meanwhile
                continue
    return pids


def same_certificate(a: Certificate, b: Certificate) -> bool:
    """Two certificates equal apart from their seconds."""
    one, two = a.to_json(), b.to_json()
    one.pop("seconds")
    two.pop("seconds")
    return one == two
