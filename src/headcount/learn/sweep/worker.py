"""The worker side of a sweep: what runs in a worker process or a Ray task — call the runner on one
config and return a RunOutcome that never raises (a failure is an outcome with status 'failed').

The runner (runners.Runner: a registry name and a module-level function, received by reference) maps
a config dict to metrics (a mapping, or a typed result with to_json()). Metrics are stored as JSON
with NaN and ±inf kept as floats (common.jsonable, nonfinite="keep"), so a diverged loss stays
visible in the database.

Training steps: a local worker started with a steps queue (worker_init) runs each run inside
common.progress.steps_reported_to, so the trainer's step texts ("step 400/2000", throttled) go on
the queue as (tag, text) for the parent's bar. Progress only: a message that cannot be sent is
dropped, and the worker never waits for the queue (not even at exit).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from headcount.common.errors import InputError
from headcount.common.jsonable import jsonable
from headcount.common.probe import machine_info
from headcount.common.progress import steps_reported_to
from headcount.learn.sweep.runners import Runner

VERSION_KEYS = (
    "python",
    "numpy",
    "torch",
    "headcount",
    "platform",
    "host",
)  # stored with every run
WORKER_DIED = (
    "WorkerDied: the worker process died while running this config (a crash, os._exit, "
    "killed e.g. out of memory; or a script that calls run_sweep outside "
    "`if __name__ == '__main__':`)"
)


@dataclass(frozen=True)
class RunOutcome:
    """One finished (or lost) run as the parent records it (the `runs` columns of the same
    names)."""

    status: str  # 'done' | 'failed'
    metrics: dict[str, Any] | None
    error: str | None
    wall_seconds: float | None
    started_at: str | None
    finished_at: str
    versions: dict[str, Any] | None
    refused: bool = (
        False  # the runner refused the config (an InputError): the sweep's input is at fault
    )
    # the refusal's line with the parameters its message names still marked (common.errors.param),
    # for run_sweep to raise again; `error`, the line stored, shows them plain
    refusal: str | None = None


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def one_line(err: BaseException, limit: int = 1000, marked: bool = False) -> str:
    """Exception type, message and innermost location on one line (at most `limit` characters);
    `marked`: an InputError's message with its parameter marks kept (err.raw, its whitespace runs
    made one space)."""
    if marked and isinstance(err, InputError):
        text = " ".join(err.raw.split())
    else:
        text = " ".join(str(err).split())
    line = f"{type(err).__name__}: {text}" if text else type(err).__name__
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        code = tb.tb_frame.f_code
        line += f" [at {Path(code.co_filename).name}:{tb.tb_lineno} in {code.co_name}]"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def environment_versions() -> dict[str, Any]:
    """python, numpy, torch, headcount versions and the platform and host of this process
    (common.probe)."""
    info = machine_info()
    return {key: info[key] for key in VERSION_KEYS}


def lost_outcome(message: str) -> RunOutcome:
    """A run whose worker died or whose result never came back."""
    return RunOutcome("failed", None, message, None, None, now(), None)


def limit_torch_threads() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def _metrics(result: Any, runner: str) -> dict[str, Any]:
    if hasattr(result, "to_json"):
        result = result.to_json()
    if not isinstance(result, Mapping):
        raise TypeError(
            f"runner {runner!r} returned {type(result).__name__}, not a dict of metrics"
        )
    return jsonable(dict(result), nonfinite="keep")


# This worker process's steps queue (worker_init), or None: training steps are not forwarded.
_STEPS: Any = None


def _forward(tag: str) -> Callable[[str], None]:
    def send(text: str) -> None:
        with contextlib.suppress(Exception):  # progress only: never fail or block a run
            _STEPS.put_nowait((tag, text))

    return send


@contextlib.contextmanager
def _steps_forwarded(tag: str | None) -> Iterator[None]:
    if _STEPS is None or tag is None:
        yield
        return
    with steps_reported_to(_forward(tag)):
        yield


def execute(
    runner: Runner, config: dict[str, Any], limit_threads: bool, tag: str | None = None
) -> RunOutcome:
    """Run one config; never raises (a failure is an outcome with status 'failed'). `tag` names the
    run on the steps queue (module docstring)."""
    if limit_threads:
        limit_torch_threads()
    started_at = now()
    t0 = time.perf_counter()
    refusal = None
    try:
        with _steps_forwarded(tag):
            metrics, status, error = _metrics(runner.fn(dict(config)), runner.name), "done", None
    except Exception as err:
        metrics, status, error = None, "failed", one_line(err)
        refusal = one_line(err, marked=True) if isinstance(err, InputError) else None
    wall = time.perf_counter() - t0
    versions = environment_versions()
    return RunOutcome(
        status, metrics, error, wall, started_at, now(), versions, refusal is not None, refusal
    )


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:  # the sweep process is gone: stop working for nobody
            os._exit(1)


def worker_init(limit_threads: bool, parent_pid: int, steps: Any = None) -> None:
    """Initializer of a local worker process: one torch thread (when asked), exit when the parent
    dies, training steps to the `steps` queue (a multiprocessing Queue; None: not forwarded)."""
    global _STEPS
    if limit_threads:
        limit_torch_threads()
    if steps is not None:
        steps.cancel_join_thread()  # exiting never waits for the parent to read progress
        _STEPS = steps
    threading.Thread(
        target=_watch_parent, args=(parent_pid,), daemon=True, name="headcount-parent-watch"
    ).start()
