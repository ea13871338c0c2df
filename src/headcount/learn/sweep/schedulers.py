"""Where a sweep's runs execute, behind one small interface: ``Scheduler.run(runner, jobs, admit,
steps)`` yields (run, outcome) pairs as runs finish. Closing the iterator early (an error in the
parent) stops the workers; only the parent — the caller of `run` — writes the database. `admit(run)`
(when given) is asked, in the parent, just before a run is handed to a worker: False skips the run
(the sweep uses it to lease the run in the database, so that concurrent sweeps never train the same
run twice). `steps(run, text)` (when given) gets the training-step texts of the runs in flight
("step 400/2000"), for a progress bar: the local scheduler forwards them from its workers (a
queue per pool, polled every STEP_POLL seconds while runs are in flight); Ray does not.

- "local" (`LocalScheduler`): a ProcessPoolExecutor with the "spawn" start method (fork is unsafe
  with torch threads), `workers` processes, at most one run in flight per worker. With more than one
  worker each runs with one torch/BLAS thread (OMP/MKL/OPENBLAS_NUM_THREADS default to 1 in the
  workers' environment, and torch.set_num_threads(1)). A worker whose parent dies exits within a
  second. A run whose worker dies (crash, out of memory) is re-run alone, and reported failed if it
  kills its worker again. Because workers are spawned, a script that runs a sweep must do so under
  ``if __name__ == "__main__":`` (the workers import the script's main module).
- "ray" (`RayScheduler`): ``ray.init(address=address)`` (None: a local instance with
  num_cpus=workers; an already initialised Ray is used as is), one Ray task per run (num_cpus=1),
  collected with ray.wait as they finish. A task whose worker dies (killed, out of memory) is
  retried once by Ray (max_retries=1) and its run recorded once, from the attempt that returned (or
  'failed' if the retry died too). Ray is the optional extra ``pip install 'headcount[ray]'``; the
  worker nodes need headcount and the runner's module importable (same environment, or a
  runtime_env). Every run is admitted before Ray connects.

The Ray address (the parameter `address`), its checks before the database is touched, and ray.init's
bounded connection are ray_connect.py's: every failure there is a RayAddressError, one line naming
`address`. Once connected, Python logging is at ERROR and worker output is not forwarded.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Protocol

from headcount.common.errors import InputError, param
from headcount.common.ray_connect import (
    ADDRESS,
    check_ray_address,
    connect_ray,
    import_ray,
    raylet_messages_dropped,
)
from headcount.common.validate import check_choice, check_int
from headcount.learn.sweep.runners import Runner
from headcount.learn.sweep.spec import RunSpec
from headcount.learn.sweep.worker import (
    WORKER_DIED,
    RunOutcome,
    execute,
    lost_outcome,
    one_line,
    worker_init,
)

_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
# Workers per sweep: each local worker is a process that imports torch (a few hundred MB); a
# thousand of them exhaust any single machine's memory or process slots long before, so more is a
# typo.
MAX_WORKERS = 1024

Finished = tuple[RunSpec, RunOutcome]
Admit = Callable[[RunSpec], bool]
Steps = Callable[[RunSpec, str], None]
# Seconds between two reads of the workers' training steps while runs are in flight (steps given).
STEP_POLL = 0.2


class Scheduler(Protocol):
    """Runs the jobs `admit` accepts (all when None) with `runner` on `workers` workers and yields
    each (run, outcome) as it finishes, in any order."""

    workers: int

    def run(
        self,
        runner: Runner,
        jobs: Sequence[RunSpec],
        admit: Admit | None = None,
        steps: Steps | None = None,
    ) -> Iterator[Finished]: ...


# --------------------------------------------------------------------------------------------------
# Local worker processes


@contextlib.contextmanager
def _thread_env(limit: bool) -> Iterator[None]:
    """Environment the spawned workers inherit: one BLAS/OpenMP thread each (unless the user set
    one)."""
    added = [v for v in _THREAD_VARS if limit and v not in os.environ]
    for v in added:
        os.environ[v] = "1"
    try:
        yield
    finally:
        for v in added:
            os.environ.pop(v, None)


@dataclass
class _Queue:
    """The local scheduler's state: the runner, runs not yet submitted (admitted when submitted),
    runs suspected of killing their worker (re-run one at a time), runs in flight; the receiver of
    training steps and the current pool's steps queue (a multiprocessing Queue, or None)."""

    runner: Runner
    waiting: deque[RunSpec]
    admit: Admit | None = None
    suspects: deque[RunSpec] = field(default_factory=deque)
    in_flight: dict[Future, RunSpec] = field(default_factory=dict)
    steps: Steps | None = None
    messages: Any = None

    def busy(self) -> bool:
        return bool(self.waiting or self.suspects or self.in_flight)


class LocalScheduler:
    """Spawned worker processes on this machine (see the module docstring)."""

    def __init__(self, workers: int):
        self.workers = workers

    def run(
        self,
        runner: Runner,
        jobs: Sequence[RunSpec],
        admit: Admit | None = None,
        steps: Steps | None = None,
    ) -> Iterator[Finished]:
        n = min(self.workers, len(jobs))
        limit = n > 1
        queue = _Queue(runner, deque(jobs), admit, steps=steps)
        with _thread_env(limit):
            pool = self._pool(n, limit, queue)
            try:
                while queue.busy():
                    finished, broken = self._step(pool, queue, n, limit)
                    yield from finished
                    if broken is None:
                        continue
                    pool.shutdown(wait=True, cancel_futures=True)
                    if len(broken) == 1:  # it was alone: it killed its worker
                        yield broken[0], lost_outcome(WORKER_DIED)
                    else:
                        queue.suspects.extend(broken)
                    pool = self._pool(n, limit, queue)
            except BaseException:  # including the caller closing the iterator early
                pool.shutdown(wait=False, cancel_futures=True)
                _close_messages(queue)
                raise
            pool.shutdown(wait=True)
            _close_messages(queue)

    def _pool(self, n: int, limit: bool, queue: _Queue) -> ProcessPoolExecutor:
        """A new pool, with a new steps queue when steps are wanted (a worker that died may have
        left the old one unusable)."""
        context = multiprocessing.get_context("spawn")
        _close_messages(queue)
        queue.messages = None if queue.steps is None else context.Queue()
        return ProcessPoolExecutor(
            max_workers=n,
            mp_context=context,
            initializer=worker_init,
            initargs=(limit, os.getpid(), queue.messages),
        )

    def _submit(self, pool: ProcessPoolExecutor, queue: _Queue, n: int, limit: bool) -> None:
        """Fill the free workers: one suspect alone, or waiting runs (each admitted first: a run not
        admitted is dropped). A run leaves its deque only once submitted."""
        if not queue.in_flight and queue.suspects:
            source, capacity = queue.suspects, 1
        elif not queue.suspects:
            source, capacity = queue.waiting, n
        else:
            return
        while source and len(queue.in_flight) < capacity:
            run = source[0]
            if source is queue.waiting and queue.admit is not None and not queue.admit(run):
                source.popleft()
                continue
            future = pool.submit(execute, queue.runner, run.config, limit, run.run_id)
            queue.in_flight[future] = run
            source.popleft()

    def _step(
        self, pool: ProcessPoolExecutor, queue: _Queue, n: int, limit: bool
    ) -> tuple[list[Finished], list[RunSpec] | None]:
        """Submit, wait for the first run to finish: (finished runs, None), or when a worker died
        (finished runs, the runs that died with the pool)."""
        finished: list[Finished] = []
        broken: list[RunSpec] = []
        try:
            self._submit(pool, queue, n, limit)
        except BrokenProcessPool:  # a worker died between runs: rebuild the pool
            return finished, self._drain(queue, finished, broken)
        done = _wait(queue)
        for future in done:
            _collect(future, queue.in_flight.pop(future), finished, broken)
        return finished, (self._drain(queue, finished, broken) if broken else None)

    @staticmethod
    def _drain(queue: _Queue, finished: list[Finished], broken: list[RunSpec]) -> list[RunSpec]:
        """A worker died: every run still in the pool fails with it. Collect them all."""
        for future, run in queue.in_flight.items():
            _collect(future, run, finished, broken)
        queue.in_flight.clear()
        return broken


def _wait(queue: _Queue) -> set[Future]:
    """The runs in flight that have finished (at least one, unless none is in flight: every run
    offered was leased elsewhere), forwarding training steps meanwhile."""
    timeout = None if queue.steps is None else STEP_POLL
    while queue.in_flight:
        done, _ = wait(list(queue.in_flight), timeout=timeout, return_when=FIRST_COMPLETED)
        _forward_steps(queue)
        if done:
            return done
    return set()


def _forward_steps(queue: _Queue, most: int = 10_000) -> None:
    """Hand the steps queue's messages to queue.steps — only those of runs still in flight: a run's
    last texts may arrive after its outcome."""
    if queue.messages is None or queue.steps is None:
        return
    runs = {run.run_id: run for run in queue.in_flight.values()}
    for _ in range(most):
        try:
            tag, text = queue.messages.get_nowait()
        except Exception:  # Empty, or a queue a dead worker left unusable: progress only
            return
        if tag in runs:
            queue.steps(runs[tag], text)


def _close_messages(queue: _Queue) -> None:
    if queue.messages is not None:
        with contextlib.suppress(Exception):
            queue.messages.close()
        queue.messages = None


def _collect(future: Future, run: RunSpec, finished: list[Finished], broken: list[RunSpec]) -> None:
    try:
        outcome = future.result()
    except BrokenProcessPool:
        broken.append(run)
        return
    except Exception as err:  # e.g. a config that cannot be sent to the worker
        outcome = lost_outcome(one_line(err))
    finished.append((run, outcome))


# --------------------------------------------------------------------------------------------------
# Ray


class RayScheduler:
    """One Ray task per run (see the module docstring). Ray is imported when the scheduler is made,
    so a missing extra is an error before anything runs."""

    def __init__(self, workers: int, address: str | None = None, name: str = ADDRESS):
        self.workers, self.address, self.name = workers, address, name
        self.ray = import_ray()

    def _init(self) -> bool:
        """Start Ray unless it runs already; True when this call started it (and must shut it
        down)."""
        if self.ray.is_initialized():
            return False
        kwargs: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
        if self.address is None:
            self.ray.init(num_cpus=self.workers, include_dashboard=False, **kwargs)
            return True
        connect_ray(self.ray, self.address, self.name, **kwargs)
        return True

    def _ready(self, refs: list[Any]) -> list[Any]:
        """At least one finished task, and every other already finished one."""
        ready, rest = self.ray.wait(refs, num_returns=1)
        if rest:
            more, _ = self.ray.wait(rest, num_returns=len(rest), timeout=0)
            ready = ready + more
        return ready

    def _outcome(self, ref: Any) -> RunOutcome:
        try:
            return self.ray.get(ref)
        except Exception as err:  # the task or its worker died (twice: the retry too)
            return lost_outcome(one_line(err))

    def run(
        self,
        runner: Runner,
        jobs: Sequence[RunSpec],
        admit: Admit | None = None,
        steps: Steps | None = None,
    ) -> Iterator[Finished]:
        """As Scheduler.run; `steps` is not called (Ray tasks do not forward training steps)."""
        jobs = [run for run in jobs if admit is None or admit(run)]
        if not jobs:
            return
        started = self._init()  # on failure the caller releases the leases (run.py)
        refs: dict[Any, RunSpec] = {}
        try:
            with raylet_messages_dropped():
                task = self.ray.remote(num_cpus=1, max_retries=1)(execute)
                refs = {task.remote(runner, run.config, True): run for run in jobs}
                while refs:
                    for ref in self._ready(list(refs)):
                        run = refs.pop(ref)
                        yield run, self._outcome(ref)
        finally:
            if started:
                self.ray.shutdown()
            else:
                for ref in refs:
                    with contextlib.suppress(Exception):
                        self.ray.cancel(ref, force=True)


# --------------------------------------------------------------------------------------------------
# Choosing one

SCHEDULERS = {"local": LocalScheduler, "ray": RayScheduler}
BACKENDS = tuple(SCHEDULERS)


def make_scheduler(backend: str, workers: int | None, address: str | None = None) -> Scheduler:
    """The scheduler of `backend` with `workers` workers (None: one per CPU, at most MAX_WORKERS)
    and, for Ray, the cluster `address`: InputError for an unknown backend, an address without
    backend "ray" (it would be ignored) or a worker count outside 1..MAX_WORKERS,
    BackendUnavailableError when Ray is not installed, RayAddressError for an address (`address`,
    else a RAY_ADDRESS in the environment other than "local") that is not a Ray address or where
    nothing answers (module docstring)."""
    check_choice("backend", backend, BACKENDS)
    if address is not None and backend != "ray":
        raise InputError(f"{ADDRESS} is the Ray cluster's address: it needs {param('backend')} ray")
    workers = check_int(
        "workers", min(os.cpu_count() or 1, MAX_WORKERS) if workers is None else workers, low=1
    )
    if workers > MAX_WORKERS:
        raise InputError(
            f"workers = {workers if workers < 10**20 else 'a huge number'} is more than "
            f"MAX_WORKERS = {MAX_WORKERS} ({param('workers')}: one process each)"
        )
    if backend == "ray":
        name = ADDRESS
        if address is None and os.environ.get("RAY_ADDRESS", "local") not in ("", "local"):
            address, name = os.environ["RAY_ADDRESS"], "RAY_ADDRESS"  # what ray.init would use
        scheduler = RayScheduler(workers, address, name)
        if address is not None:
            check_ray_address(address, name)
        return scheduler
    return LocalScheduler(workers)
