"""The runners a sweep may name: a registry inside the package. Sweep files are data: `[sweep]
runner` is a name looked up here, never a "module:function" to import, so a shared sweep file cannot
run code of its choosing (issue 13).

Built in: DEFAULT_RUNNER, `headcount.learn.train:run_config` (the tasks induction, khop, minmax,
boolean), and KHOP_RUNNER, `headcount.learn.certified_runs:run_khop_certified` (k-hop runs with
certificates). Other runners (tests, research code) are registered from Python — never from a file —
with `register_runner(fn)`: the name is "module:function" of `fn` unless given. A runner is a
module-level function (config dict → metrics) sent to the workers by reference (pickle names its
module and function), so spawned workers and Ray tasks import its module as the parent did.

Keeping models: `keeping_models(runner, folder)` is the same runner with each run's exported model
written to folder/<run id>.safetensors (the config's `out`, which a sweep file itself may never
set), for callers that name the folder in code (learn.experiments: beside the results database). The
runners that take `out` can keep their models (KEEPING_RUNNERS): the default runner and KHOP_RUNNER
(which otherwise deletes its file).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headcount.learn.store import run_id_for
from headcount.learn.sweep.errors import SweepError

RunnerFn = Callable[[dict[str, Any]], Any]

DEFAULT_RUNNER = "headcount.learn.train:run_config"
KHOP_RUNNER = "headcount.learn.certified_runs:run_khop_certified"  # k-hop runs with certificates
KEEPING_RUNNERS = (
    DEFAULT_RUNNER,
    KHOP_RUNNER,
)  # the runners whose configs take `out` (keeping_models)


def _train_run_config() -> RunnerFn:
    from headcount.learn.train import run_config

    return run_config


def _khop_certified() -> RunnerFn:
    from headcount.learn.certified_runs import run_khop_certified

    return run_khop_certified


# name → loader: imported only where a run executes (torch takes seconds to import, and a sweep
# whose runs are all done needs none); the names are fixed here, in code
_BUILTIN: dict[str, Callable[[], RunnerFn]] = {
    DEFAULT_RUNNER: _train_run_config,
    KHOP_RUNNER: _khop_certified,
}
_REGISTERED: dict[str, RunnerFn] = {}


@dataclass(frozen=True)
class _Deferred:
    """A built-in runner that imports its module when first called, in the worker: the parent never
    pays for torch. Sent to workers by value (its name)."""

    name: str

    def __call__(self, config: dict[str, Any]) -> Any:
        return _BUILTIN[self.name]()(config)


@dataclass(frozen=True)
class Runner:
    """A resolved runner: its registry name (stored with every row) and the function (sent to
    workers by reference)."""

    name: str
    fn: RunnerFn


def runner_names() -> tuple[str, ...]:
    """The runners a sweep may name: the built-in ones, then the registered ones."""
    return (*_BUILTIN, *_REGISTERED)


def unknown_runner_message(name: Any) -> str:
    """One line: `name` is not a runner here, and which runners are."""
    shown = repr(name) if len(repr(name)) <= 80 else repr(name)[:79] + "…"
    names = ", ".join(runner_names())
    return (
        f"{shown} is not a registered runner (a sweep file names one, never code); runners: {names}"
    )


def check_runner_name(name: Any) -> str:
    """`name` if it is a registered runner; SweepError naming the runners otherwise. Imports
    nothing."""
    if not isinstance(name, str) or name not in runner_names():
        raise SweepError(f"runner {unknown_runner_message(name)}")
    return name


def register_runner(fn: RunnerFn, name: str | None = None) -> str:
    """Register `fn` (a module-level function: config dict → metrics) under `name` (default
    "module:qualname" of `fn`) so that sweeps may name it; returns the name. Registering the same
    function again is a no-op.

    From Python only: a sweep file can name a registered runner, never register one. ValueError for
    a built-in name, a name taken by another function, or a function that workers cannot receive (a
    lambda, a local function)."""
    if not callable(fn):
        raise TypeError(f"a runner must be callable, got {type(fn).__name__}")
    name = f"{fn.__module__}:{fn.__qualname__}" if name is None else name
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a runner name must be a non-empty string, got {name!r}")
    if name in _BUILTIN:
        raise ValueError(f"runner name {name!r} is built in; register under another name")
    if _REGISTERED.get(name, fn) is not fn:
        raise ValueError(
            f"runner name {name!r} is taken by another function; unregister_runner it first"
        )
    try:
        pickle.dumps(fn)
    except Exception as err:
        raise ValueError(
            f"runner {name!r} cannot be sent to worker processes ({err}): use a module-level "
            "function"
        ) from None
    _REGISTERED[name] = fn
    return name


def unregister_runner(name: str) -> None:
    """Forget a registered runner (built-in runners stay)."""
    _REGISTERED.pop(name, None)


def resolve_runner(name: str) -> Runner:
    """The runner registered as `name` (a built-in one is imported by the worker that first calls
    it); SweepError for an unknown name."""
    check_runner_name(name)
    return Runner(name, _Deferred(name) if name in _BUILTIN else _REGISTERED[name])


MODEL_SUFFIX = ".safetensors"


def kept_model_path(folder: str | os.PathLike, run_id: str) -> Path:
    """Where a sweep that keeps its models writes run `run_id`'s model: folder/<run
    id>.safetensors."""
    return Path(folder) / f"{run_id}{MODEL_SUFFIX}"


@dataclass(frozen=True)
class _KeepModel:
    """`fn` with the run's exported model written to kept_model_path(folder, run id of the config):
    the config's `out`, added here (the run id is the config's, so the stored row is the run's as
    ever). Sent to workers by value (fn by reference, folder as text)."""

    fn: RunnerFn
    folder: str

    def __call__(self, config: dict[str, Any]) -> Any:
        return self.fn({**config, "out": str(kept_model_path(self.folder, run_id_for(config)))})


def keeping_models(runner: Runner, folder: str | os.PathLike) -> Runner:
    """`runner` (one of KEEPING_RUNNERS: their configs take `out`) writing each run's model into
    `folder` (module docstring); the registry name stays the runner's own. SweepError for another
    runner."""
    if runner.name not in KEEPING_RUNNERS:
        names = ", ".join(map(repr, KEEPING_RUNNERS))
        raise SweepError(f"only the runners {names} can keep their models, not {runner.name!r}")
    return Runner(runner.name, _KeepModel(runner.fn, os.fspath(folder)))
