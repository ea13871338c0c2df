"""Sweeps: a grid of training runs, executed in parallel, resumable, results in a SQLite database.

Sweep file (TOML; `load_spec` also takes the same structure as a dict, which is what CLI flags build)::

    [sweep]
    name = "xor-phase-quick"          # required: names the sweep in the database
    experiment = "xor-phase"          # optional (default: name): the label tables and plots select on
    task = "boolean"                  # required: induction | khop | minmax | boolean (any name with a custom runner)
    seeds = [0, 1, 2]                 # optional (default [0]): distinct integers, or a count N meaning 0..N-1
    runner = "headcount.learn.train:run_config"   # optional (this default): "module:function", config -> metrics
    description = "…"                 # optional free text

    [fixed]                           # optional: keys passed unchanged to every run
    function = "xor"
    n = 8

    [grid]                            # optional: each key a non-empty list; runs = cartesian product
    degree = [1, 2, 4]
    heads = [1, 2, 4, 8]

    [[include]]                       # optional, repeatable: one extra config (over [fixed]) per table
    degree = 8
    heads = 1

Values are strings, numbers, booleans, or lists/tables of those. "task" and "seed" are reserved (set them
with [sweep] task / seeds); a key may not be both fixed and a grid axis. Expansion (`SweepSpec.runs`) is
deterministic: grid points in the order of the product of the axes as written (last axis fastest), then
the [[include]] configs, each with every seed in turn (seed fastest). Every run's config is
``{"task": task, **fixed, **point, "seed": seed}`` and its id is `run_id_for(config)` (sha256 of the
canonical JSON, 16 hex digits), so ids do not depend on key order, sweep name or runner: a config that is
already done in the database — from this sweep or any other — is not run again. Duplicate configs
(an include equal to a grid point) run once.

Execution (`run_sweep`). Runs whose id is stored as 'done' are skipped; failed runs are retried.
- backend "local": a ProcessPoolExecutor with the "spawn" start method (fork is unsafe with torch
  threads), `workers` processes (default os.cpu_count()), at most one run in flight per worker. With
  more than one worker each worker runs with one torch/BLAS thread (OMP/MKL/OPENBLAS_NUM_THREADS default
  to 1 in the workers' environment, and torch.set_num_threads(1)). A worker whose parent dies exits.
- backend "ray": `ray.init(address=address)` (None: a local instance with num_cpus=workers; an already
  initialised Ray is used as is), one Ray task per run (num_cpus=1), collected with ray.wait as they
  finish. Ray is the optional extra ``pip install 'headcount[ray]'``. The worker nodes need headcount
  and the runner's module importable (same environment, or a runtime_env).
Because workers are spawned, a script that calls run_sweep must do so under
``if __name__ == "__main__":`` (the workers import the script's main module).
Only the parent process writes the database: each finished run is recorded in its own transaction as
soon as the parent receives it. A runner that raises is recorded 'failed' with a one-line error and the
sweep goes on; a run whose worker process dies (crash, out of memory) is re-run alone, and recorded
'failed' if it kills its worker again. Killing a sweep — SIGKILL of its process group, or of the parent
alone (workers notice within a second that their parent is gone and exit) — loses only the runs in
flight; re-running it completes the rest, each run stored exactly once. The runner is imported in the
parent first, so a runner that cannot be imported is an error before anything runs or is written.
Nothing but the database (and SQLite's -wal/-shm files beside it) is written.

Tables (`sweep_table`): the runs of one experiment, grouped by config without the seed: one row per
group with the config keys that vary between groups (or "task" if none does), "seeds" (done runs),
"failed" (only when some run failed), then for every numeric metric (nested dicts flattened as "a.b")
"<m>_mean", "<m>_min", "<m>_max" over the seeds — or a single column "<m>" when no group's seeds differ
in it — and "<m>_fraction" (fraction true) for every boolean metric ("solved" → solved_fraction).
Metrics that echo a config key (n, heads, seed, …) are left out, as are non-finite values (NaN losses)
and non-numeric metrics; `metrics=[…]` keeps only the named ones. Rows are sorted by the config columns.
"""

from __future__ import annotations

import contextlib
import csv
import importlib
import io
import itertools
import json
import math
import os
import re
import sys
import time
import tomllib
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from headcount.learn.store import ResultsStore, canonical_json, run_id_for

DEFAULT_RUNNER = "headcount.learn.train:run_config"
TASKS = ("induction", "khop", "minmax", "boolean")
BACKENDS = ("local", "ray")
RAY_MISSING = "backend 'ray' needs the optional extra: pip install 'headcount[ray]'"

_SECTIONS = ("sweep", "fixed", "grid", "include")
_SWEEP_KEYS = ("name", "experiment", "task", "seeds", "runner", "description")
_RESERVED = ("task", "seed")
_RUNNER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")
_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


class SweepError(ValueError):
    """A sweep that cannot run as asked (the message says what is wrong and what is allowed)."""


class SpecError(SweepError):
    """A sweep spec (TOML file or dict) that is not valid."""


class BackendUnavailableError(SweepError):
    """The requested backend is not installed (e.g. Ray without the extra)."""


# ---------------------------------------------------------------------------------------------------
# Spec


@dataclass(frozen=True)
class RunSpec:
    run_id: str
    config: dict[str, Any]


@dataclass(frozen=True)
class SweepSpec:
    name: str
    task: str
    experiment: str
    seeds: tuple[int, ...] = (0,)
    runner: str = DEFAULT_RUNNER
    fixed: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    include: list[dict[str, Any]] = field(default_factory=list)
    description: str | None = None
    source: str | None = None  # where the spec came from, for messages

    def runs(self) -> list[RunSpec]:
        """Every run of the sweep, in the deterministic order described in the module docstring."""
        points: list[dict[str, Any]] = []
        axes = list(self.grid)
        for values in itertools.product(*(self.grid[a] for a in axes)):
            points.append(dict(zip(axes, values)))
        points.extend(self.include)
        out, seen = [], set()
        for point in points:
            for seed in self.seeds:
                config = {"task": self.task, **self.fixed, **point, "seed": seed}
                rid = run_id_for(config)
                if rid not in seen:
                    seen.add(rid)
                    out.append(RunSpec(rid, config))
        return out


def _where(source: str | None, section: str, key: str | None = None) -> str:
    place = f"[{section}]" if key is None else f"[{section}] {key}"
    return f"{source}: {place}" if source else place


def _type_name(value: Any) -> str:
    return {str: "string", int: "integer", float: "float", bool: "boolean", list: "list", dict: "table"}.get(
        type(value), type(value).__name__
    )


def _check_value(value: Any, where: str) -> None:
    if isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SpecError(f"{where}: {value} is not allowed (values must be finite)")
        return
    if isinstance(value, list):
        for item in value:
            _check_value(item, where)
        return
    if isinstance(value, dict):
        for k, item in value.items():
            if not isinstance(k, str):
                raise SpecError(f"{where}: table keys must be strings, got {k!r}")
            _check_value(item, where)
        return
    raise SpecError(
        f"{where}: {_type_name(value)} values are not allowed "
        "(use strings, numbers, booleans, or lists/tables of those)"
    )


def _check_config_keys(table: Any, section: str, source: str | None) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise SpecError(f"{_where(source, section)} must be a table of key = value, got {_type_name(table)}")
    for key in table:
        if not isinstance(key, str) or not key:
            raise SpecError(f"{_where(source, section)}: keys must be non-empty strings, got {key!r}")
        if key in _RESERVED:
            hint = "[sweep] task" if key == "task" else "[sweep] seeds"
            raise SpecError(f"{_where(source, section, key)}: {key!r} is reserved; set it with {hint}")
    return table


def spec_from_dict(data: Mapping[str, Any], source: str | None = None) -> SweepSpec:
    """Validate a spec given as {"sweep": {...}, "fixed": {...}, "grid": {...}, "include": [...]}."""
    if not isinstance(data, Mapping):
        raise SpecError(f"{source or 'sweep spec'}: must be a table with sections {', '.join(_SECTIONS)}")
    unknown = [k for k in data if k not in _SECTIONS]
    if unknown:
        raise SpecError(
            f"{source or 'sweep spec'}: unknown section [{unknown[0]}]; "
            f"allowed sections: {', '.join('[' + s + ']' for s in _SECTIONS)} ([[include]] repeats)"
        )
    head = data.get("sweep")
    if head is None:
        raise SpecError(f"{source or 'sweep spec'}: missing section [sweep] (with name and task)")
    if not isinstance(head, Mapping):
        raise SpecError(f"{_where(source, 'sweep')} must be a table, got {_type_name(head)}")
    for key in head:
        if key not in _SWEEP_KEYS:
            raise SpecError(
                f"{_where(source, 'sweep', key)}: unknown key; allowed keys: {', '.join(_SWEEP_KEYS)}"
            )

    def string(key: str, required: bool, default: str | None = None) -> str | None:
        value = head.get(key)
        if value is None:
            if required:
                raise SpecError(f"{_where(source, 'sweep')}: missing required key {key!r} (a string)")
            return default
        if not isinstance(value, str) or not value.strip():
            raise SpecError(f"{_where(source, 'sweep', key)}: must be a non-empty string, got {value!r}")
        return value

    name = string("name", True)
    task = string("task", True)
    experiment = string("experiment", False, name)
    runner = string("runner", False, DEFAULT_RUNNER)
    description = head.get("description")
    if description is not None and not isinstance(description, str):
        raise SpecError(
            f"{_where(source, 'sweep', 'description')}: must be a string, got {_type_name(description)}"
        )
    if not _RUNNER_RE.match(runner):
        raise SpecError(
            f"{_where(source, 'sweep', 'runner')}: {runner!r} is not of the form 'package.module:function'"
        )
    if runner == DEFAULT_RUNNER and task not in TASKS:
        raise SpecError(
            f"{_where(source, 'sweep', 'task')}: unknown task {task!r}; tasks: {', '.join(TASKS)}"
        )

    seeds_value = head.get("seeds", [0])
    if isinstance(seeds_value, int) and not isinstance(seeds_value, bool):
        if seeds_value < 1:
            raise SpecError(
                f"{_where(source, 'sweep', 'seeds')}: a seed count must be ≥ 1, got {seeds_value}"
            )
        seeds = tuple(range(seeds_value))
    elif isinstance(seeds_value, list):
        if not seeds_value:
            raise SpecError(f"{_where(source, 'sweep', 'seeds')}: the list is empty; give at least one seed")
        bad = [s for s in seeds_value if not isinstance(s, int) or isinstance(s, bool)]
        if bad:
            raise SpecError(f"{_where(source, 'sweep', 'seeds')}: seeds must be integers, got {bad[0]!r}")
        if len(set(seeds_value)) != len(seeds_value):
            raise SpecError(f"{_where(source, 'sweep', 'seeds')}: seeds repeat in {seeds_value}")
        seeds = tuple(seeds_value)
    else:
        raise SpecError(
            f"{_where(source, 'sweep', 'seeds')}: must be a list of integers or a count, "
            f"got {_type_name(seeds_value)}"
        )

    fixed = dict(_check_config_keys(data.get("fixed", {}), "fixed", source))
    for key, value in fixed.items():
        _check_value(value, _where(source, "fixed", key))
    grid = dict(_check_config_keys(data.get("grid", {}), "grid", source))
    for key, values in grid.items():
        where = _where(source, "grid", key)
        if not isinstance(values, list):
            raise SpecError(
                f"{where}: a grid axis must be a list of values, got {_type_name(values)} "
                f"(put single values in [fixed])"
            )
        if not values:
            raise SpecError(f"{where}: the list is empty; a grid axis needs at least one value")
        _check_value(values, where)
        texts = [canonical_json(v) for v in values]
        if len(set(texts)) != len(texts):
            raise SpecError(f"{where}: values repeat in {values}")
        if key in fixed:
            raise SpecError(f"{where}: {key!r} is also in [fixed]; a key is either fixed or a grid axis")
    include_value = data.get("include", [])
    if isinstance(include_value, Mapping):
        include_value = [include_value]
    if not isinstance(include_value, list):
        raise SpecError(f"{_where(source, 'include')}: must be an array of tables ([[include]])")
    include = []
    for i, table in enumerate(include_value):
        section = f"include {i + 1}"
        table = _check_config_keys(table, section, source)
        if not table:
            raise SpecError(f"{_where(source, section)}: is empty; an [[include]] needs at least one key")
        for key, value in table.items():
            _check_value(value, _where(source, section, key))
        include.append(dict(table))
    return SweepSpec(
        name=name,
        task=task,
        experiment=experiment,
        seeds=seeds,
        runner=runner,
        fixed=fixed,
        grid=grid,
        include=include,
        description=description,
        source=source,
    )


def spec_from_toml(path: str | os.PathLike) -> SweepSpec:
    """Read and validate a sweep TOML file."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(f"sweep file {str(path)!r} does not exist")
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as err:
        raise SpecError(f"{path}: not valid TOML: {err}") from None
    except UnicodeDecodeError:
        raise SpecError(f"{path}: not valid TOML: the file is not UTF-8 text") from None
    return spec_from_dict(data, source=str(path))


def load_spec(spec: SweepSpec | Mapping[str, Any] | str | os.PathLike) -> SweepSpec:
    """A SweepSpec from a SweepSpec, a dict, or the path of a TOML file."""
    if isinstance(spec, SweepSpec):
        return spec
    if isinstance(spec, Mapping):
        return spec_from_dict(spec)
    return spec_from_toml(spec)


# ---------------------------------------------------------------------------------------------------
# Worker side (runs in the worker processes, or in Ray tasks)

_RUNNERS: dict[str, Callable[[dict[str, Any]], Any]] = {}
_VERSIONS: dict[str, Any] = {}


def resolve_runner(path: str) -> Callable[[dict[str, Any]], Any]:
    """Import "module:function"; raises SweepError with the reason when that fails."""
    if path in _RUNNERS:
        return _RUNNERS[path]
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # ImportError, or the module raising at import
        raise SweepError(f"runner {path!r} cannot be imported: {_one_line(err)}") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise SweepError(f"runner {path!r}: module {module_name!r} has no function {attr!r}")
    _RUNNERS[path] = fn
    return fn


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _one_line(err: BaseException, limit: int = 1000) -> str:
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
    """python, numpy, torch, headcount versions (from package metadata: nothing is imported) and the
    platform and host of this process."""
    if not _VERSIONS:
        import platform
        from importlib import metadata

        def version(dist: str) -> str | None:
            try:
                return metadata.version(dist)
            except metadata.PackageNotFoundError:
                return None

        _VERSIONS.update(
            python=platform.python_version(),
            numpy=version("numpy"),
            torch=version("torch"),
            headcount=version("headcount"),
            platform=platform.platform(),
            host=platform.node(),
        )
    return dict(_VERSIONS)


def _jsonable(value: Any) -> Any:
    """Numpy scalars and arrays, tuples → plain JSON values (NaN and ±inf kept as floats)."""

    def default(obj: Any) -> Any:
        if hasattr(obj, "tolist"):  # numpy scalar or array, torch tensor
            return obj.tolist()
        if isinstance(obj, (set, frozenset)):
            return sorted(obj)
        raise TypeError(f"metric value of type {type(obj).__name__} is not JSON-able")

    return json.loads(json.dumps(value, default=default))


def _limit_torch_threads() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def _execute(runner: str, config: dict[str, Any], limit_threads: bool) -> dict[str, Any]:
    """Run one config; never raises (a failure is a result with status 'failed')."""
    try:
        fn = resolve_runner(runner)
    except SweepError as err:
        now = _now()
        return {
            "status": "failed",
            "metrics": None,
            "error": str(err),
            "wall_seconds": 0.0,
            "started_at": now,
            "finished_at": now,
            "versions": environment_versions(),
        }
    if limit_threads:
        _limit_torch_threads()
    started_at = _now()
    t0 = time.perf_counter()
    try:
        metrics = fn(dict(config))
        if not isinstance(metrics, Mapping):
            raise TypeError(f"runner {runner!r} returned {type(metrics).__name__}, not a dict of metrics")
        metrics = _jsonable(dict(metrics))
        status, error = "done", None
    except Exception as err:
        status, metrics, error = "failed", None, _one_line(err)
    wall = time.perf_counter() - t0
    return {
        "status": status,
        "metrics": metrics,
        "error": error,
        "wall_seconds": wall,
        "started_at": started_at,
        "finished_at": _now(),
        "versions": environment_versions(),
    }


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:  # the sweep process is gone: stop working for nobody
            os._exit(1)


def _worker_init(limit_threads: bool, parent_pid: int) -> None:
    import threading

    if limit_threads:
        _limit_torch_threads()
    threading.Thread(
        target=_watch_parent, args=(parent_pid,), daemon=True, name="headcount-parent-watch"
    ).start()


def _lost_result(message: str) -> dict[str, Any]:
    now = _now()
    return {
        "status": "failed",
        "metrics": None,
        "error": message,
        "wall_seconds": None,
        "started_at": None,
        "finished_at": now,
        "versions": None,
    }


# ---------------------------------------------------------------------------------------------------
# Parent side


@contextlib.contextmanager
def _thread_env(limit: bool) -> Iterator[None]:
    """Environment the spawned workers inherit: one BLAS/OpenMP thread each (unless the user set one)."""
    added = [v for v in _THREAD_VARS if limit and v not in os.environ]
    for v in added:
        os.environ[v] = "1"
    try:
        yield
    finally:
        for v in added:
            os.environ.pop(v, None)


def _run_local(pending: list[RunSpec], runner: str, workers: int, on_result) -> None:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    n = min(workers, len(pending))
    limit = n > 1
    context = multiprocessing.get_context("spawn")

    def new_pool() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=n, mp_context=context, initializer=_worker_init, initargs=(limit, os.getpid())
        )

    queue: deque[RunSpec] = deque(pending)
    suspects: deque[RunSpec] = deque()  # in flight when a worker died: re-run one at a time
    in_flight: dict[Any, RunSpec] = {}

    def collect(future, run: RunSpec, broken: list[RunSpec]) -> None:
        try:
            result = future.result()
        except BrokenProcessPool:
            broken.append(run)
            return
        except Exception as err:  # e.g. a config that cannot be sent to the worker
            result = _lost_result(_one_line(err))
        on_result(run, result)

    with _thread_env(limit):
        pool = new_pool()
        try:
            while queue or suspects or in_flight:
                broken: list[RunSpec] = []
                pool_broken = False
                try:  # a run leaves its deque only once submitted
                    if not in_flight and suspects:
                        in_flight[pool.submit(_execute, runner, suspects[0].config, limit)] = suspects[0]
                        suspects.popleft()
                    elif not suspects:
                        while queue and len(in_flight) < n:
                            in_flight[pool.submit(_execute, runner, queue[0].config, limit)] = queue[0]
                            queue.popleft()
                except BrokenProcessPool:  # a worker died between runs: rebuild the pool
                    pool_broken = True
                if not pool_broken:
                    done, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
                    for future in done:
                        collect(future, in_flight.pop(future), broken)
                    pool_broken = bool(broken)
                if not pool_broken:
                    continue
                # A worker died: every run still in this pool fails with it. Collect them all.
                for future, run in list(in_flight.items()):
                    collect(future, run, broken)
                in_flight.clear()
                pool.shutdown(wait=True, cancel_futures=True)
                if len(broken) == 1:  # it was alone: it killed its worker
                    on_result(
                        broken[0],
                        _lost_result(
                            "WorkerDied: the worker process died while running this config (a crash, os._exit, "
                            "killed e.g. out of memory; or a script that calls run_sweep outside "
                            "`if __name__ == '__main__':`)"
                        ),
                    )
                else:
                    suspects.extend(broken)
                pool = new_pool()
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)


def _import_ray():
    try:
        import ray  # noqa: F401
    except ImportError:
        raise BackendUnavailableError(RAY_MISSING) from None
    return ray


def _run_ray(pending: list[RunSpec], runner: str, workers: int, address: str | None, on_result) -> None:
    import logging

    ray = _import_ray()
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"address": address, "logging_level": logging.WARNING}
        if address is None:
            kwargs.update(num_cpus=workers, include_dashboard=False)
        ray.init(**kwargs)
        started = True
    task = ray.remote(num_cpus=1)(_execute)
    refs = {task.remote(runner, run.config, True): run for run in pending}
    try:
        while refs:
            waiting = list(refs)
            ready, rest = ray.wait(waiting, num_returns=1)
            if rest:
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                ready = ready + more
            for ref in ready:
                run = refs.pop(ref)
                try:
                    result = ray.get(ref)
                except Exception as err:  # the task or its worker died
                    result = _lost_result(_one_line(err))
                on_result(run, result)
    finally:
        if started:
            ray.shutdown()
        else:
            for ref in refs:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)


class _Progress:
    """A rich progress bar on stderr, or nothing."""

    def __init__(self, enabled: bool, name: str, total: int, done: int):
        self.bar = None
        if enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            self.name = name
            self.task = self.bar.add_task(f"sweep {name}", total=total, completed=done)

    def __enter__(self) -> _Progress:
        if self.bar is not None:
            self.bar.start()
        return self

    def advance(self, failed: int) -> None:
        if self.bar is not None:
            label = f"sweep {self.name}" + (f" ({failed} failed)" if failed else "")
            self.bar.update(self.task, advance=1, description=label)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()


def run_sweep(
    spec: SweepSpec | Mapping[str, Any] | str | os.PathLike,
    db_path: str | os.PathLike,
    workers: int | None = None,
    backend: str = "local",
    address: str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Run every run of `spec` not yet done in the results DB `db_path`; returns
    {runs_total, runs_done_before, runs_done_now, runs_failed, sweep, experiment, backend, workers, db}.

    runs_failed counts the runs that failed in this call (they are stored 'failed' and retried by the
    next call). Raises SpecError/SweepError/BackendUnavailableError (ValueErrors) before running anything
    when the spec, the runner or the backend is unusable."""
    spec = load_spec(spec)
    if backend not in BACKENDS:
        raise SweepError(f"unknown backend {backend!r}; backends: {', '.join(BACKENDS)}")
    if workers is None:
        workers = os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise SweepError(f"workers must be an integer ≥ 1, got {workers!r}")
    if backend == "ray":
        _import_ray()
    runs = spec.runs()
    resolve_runner(spec.runner)  # fail fast, in the parent, before the DB is touched
    with ResultsStore(db_path) as store:
        done_before = store.finished_ids(r.run_id for r in runs)
        pending = [r for r in runs if r.run_id not in done_before]
        counts = {"done": 0, "failed": 0}
        summary = {
            "runs_total": len(runs),
            "runs_done_before": len(done_before),
            "runs_done_now": 0,
            "runs_failed": 0,
            "sweep": spec.name,
            "experiment": spec.experiment,
            "backend": backend,
            "workers": workers,
            "db": str(db_path),
        }
        if not pending:
            return summary

        with _Progress(progress, spec.name, len(runs), len(done_before)) as bar:

            def on_result(run: RunSpec, result: dict[str, Any]) -> None:
                store.record(
                    run_id=run.run_id,
                    config=run.config,
                    status=result["status"],
                    sweep=spec.name,
                    experiment=spec.experiment,
                    metrics=result["metrics"],
                    error=result["error"],
                    wall_seconds=result["wall_seconds"],
                    versions=result["versions"],
                    started_at=result["started_at"],
                    finished_at=result["finished_at"],
                    runner=spec.runner,
                )
                counts[result["status"]] += 1
                bar.advance(counts["failed"])

            if backend == "local":
                _run_local(pending, spec.runner, workers, on_result)
            else:
                _run_ray(pending, spec.runner, workers, address, on_result)
        summary["runs_done_now"] = counts["done"]
        summary["runs_failed"] = counts["failed"]
        return summary


def sweep_plan(
    spec: SweepSpec | Mapping[str, Any] | str | os.PathLike, db_path: str | os.PathLike
) -> dict[str, Any]:
    """What run_sweep would do, without running or creating anything: runs_total, runs_done, runs_failed
    (stored as failed, to be retried), runs_pending (= total − done)."""
    spec = load_spec(spec)
    runs = spec.runs()
    ids = {r.run_id for r in runs}
    statuses: dict[str, str] = {}
    if Path(db_path).is_file() and Path(db_path).stat().st_size > 0:
        with ResultsStore(db_path) as store:
            statuses = store.statuses(ids)
    done = sum(s == "done" for s in statuses.values())
    failed = sum(s == "failed" for s in statuses.values())
    return {
        "runs_total": len(runs),
        "runs_done": done,
        "runs_failed": failed,
        "runs_pending": len(runs) - done,
        "sweep": spec.name,
        "experiment": spec.experiment,
    }


# ---------------------------------------------------------------------------------------------------
# Tables

TABLE_FORMATS = ("md", "csv", "json")


def _flatten(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _sort_key(values: list[Any]) -> tuple:
    key = []
    for v in values:
        if v is None:
            key.append((0, 0, ""))
        elif _is_number(v):
            key.append((1, v, ""))
        elif isinstance(v, str):
            key.append((2, 0, v))
        else:
            key.append((3, 0, canonical_json(v)))
    return tuple(key)


def _cell_md(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":")).replace("|", "\\|")
    return str(value).replace("|", "\\|")


def _cell_csv(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _selected(name: str, wanted: tuple[str, ...] | None) -> bool:
    return wanted is None or any(name == w or name.startswith(w + ".") for w in wanted)


def table_rows(
    db_path: str | os.PathLike, experiment: str, metrics: list[str] | tuple[str, ...] | None = None
) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows) of `sweep_table`, as Python values (None where there is nothing)."""
    path = Path(db_path)
    if not path.is_file():
        raise SweepError(f"results database {str(path)!r} does not exist")
    with ResultsStore(path) as store:
        rows = store.rows(experiment=experiment)
        known = store.experiments()
    if not rows:
        listed = ", ".join(repr(e) for e in known) or "none"
        raise SweepError(
            f"no runs of experiment {experiment!r} in {str(path)!r}; experiments there: {listed}"
        )

    groups: dict[str, dict[str, Any]] = {}
    key_order: dict[str, None] = {}
    for row in rows:
        config = {k: v for k, v in row["config"].items() if k != "seed"}
        for k in config:
            key_order.setdefault(k, None)
        group = groups.setdefault(canonical_json(config), {"config": config, "metrics": [], "failed": 0})
        if row["status"] == "done":
            group["metrics"].append(_flatten(row["metrics"] or {}))
        else:
            group["failed"] += 1
    configs = [g["config"] for g in groups.values()]
    varying = [
        k
        for k in key_order  # keys whose value differs between groups (or is missing in some)
        if len({canonical_json(c[k]) if k in c else "\0missing" for c in configs}) > 1
    ]
    if not varying:
        varying = ["task"] if "task" in key_order else []

    # metric name → {"bool", "number"}, in order of first appearance; metrics that echo a config key are
    # the config, not results, and are left out
    kinds: dict[str, set[str]] = {}
    for group in groups.values():
        for m in group["metrics"]:
            for k, v in m.items():
                if k in key_order or k == "seed":
                    continue
                if isinstance(v, bool):
                    kinds.setdefault(k, set()).add("bool")
                elif _is_number(v):
                    kinds.setdefault(k, set()).add("number")
    if metrics is not None:
        wanted = tuple(metrics)
        missing = [w for w in wanted if not any(_selected(k, (w,)) for k in kinds)]
        if missing:
            raise SweepError(
                f"experiment {experiment!r} has no numeric or boolean metric {missing[0]!r}; "
                f"metrics: {', '.join(kinds) or 'none'}"
            )
        kinds = {k: v for k, v in kinds.items() if _selected(k, wanted)}

    def finite(group: dict[str, Any], k: str) -> list[float]:
        values = [
            float(m[k]) for m in group["metrics"] if k in m and (_is_number(m[k]) or isinstance(m[k], bool))
        ]
        return [v for v in values if math.isfinite(v)]

    # a numeric metric that never differs between the seeds of a group is one column, else mean/min/max
    spread = {
        k: any(len(set(finite(g, k))) > 1 for g in groups.values())
        for k, kind in kinds.items()
        if kind != {"bool"}
    }
    any_failed = any(g["failed"] for g in groups.values())
    columns = list(varying) + ["seeds"] + (["failed"] if any_failed else [])
    for k, kind in kinds.items():
        if kind == {"bool"}:
            columns.append(f"{k}_fraction")
        elif spread[k]:
            columns += [f"{k}_mean", f"{k}_min", f"{k}_max"]
        else:
            columns.append(k)
    out = []
    for group in groups.values():
        record: dict[str, Any] = {k: group["config"].get(k) for k in varying}
        record["seeds"] = len(group["metrics"])
        if any_failed:
            record["failed"] = group["failed"]
        for k, kind in kinds.items():
            if kind == {"bool"}:
                flags = [m[k] for m in group["metrics"] if isinstance(m.get(k), bool)]
                record[f"{k}_fraction"] = sum(flags) / len(flags) if flags else None
                continue
            nums = finite(group, k)
            if not spread[k]:
                value = nums[0] if nums else None
                record[k] = (
                    int(value)
                    if value is not None
                    and value.is_integer()
                    and all(not isinstance(m.get(k), float) for m in group["metrics"])
                    else value
                )
                continue
            record[f"{k}_mean"] = sum(nums) / len(nums) if nums else None
            record[f"{k}_min"] = min(nums) if nums else None
            record[f"{k}_max"] = max(nums) if nums else None
        out.append(record)
    out.sort(key=lambda r: _sort_key([r[k] for k in varying]))
    return columns, out


def sweep_table(
    db_path: str | os.PathLike,
    experiment: str,
    format: str = "md",
    metrics: list[str] | tuple[str, ...] | None = None,
) -> str:
    """The experiment's results aggregated over seeds, as a Markdown table, CSV, or one JSON object
    {"experiment", "columns", "rows"}. `metrics` keeps only those metrics (a name, or a prefix of
    flattened names: "eval" keeps "eval.errors"). See the module docstring for the columns."""
    if format not in TABLE_FORMATS:
        raise SweepError(f"unknown table format {format!r}; formats: {', '.join(TABLE_FORMATS)}")
    columns, rows = table_rows(db_path, experiment, metrics)
    if format == "json":
        return json.dumps(
            {"experiment": experiment, "columns": columns, "rows": rows}, ensure_ascii=False, allow_nan=False
        )
    if format == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell_csv(row[c]) for c in columns])
        return buffer.getvalue()
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(_cell_md(row[c]) for c in columns) + " |")
    return "\n".join(lines) + "\n"


__all__ = [
    "BACKENDS",
    "DEFAULT_RUNNER",
    "TASKS",
    "TABLE_FORMATS",
    "BackendUnavailableError",
    "RunSpec",
    "SpecError",
    "SweepError",
    "SweepSpec",
    "environment_versions",
    "load_spec",
    "resolve_runner",
    "run_id_for",
    "run_sweep",
    "spec_from_dict",
    "spec_from_toml",
    "sweep_plan",
    "sweep_table",
    "table_rows",
]
