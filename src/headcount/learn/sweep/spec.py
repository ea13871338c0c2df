"""Sweep specs: a TOML file or the same structure as a dict → a validated SweepSpec (the command
line builds such a dict from its flags: headcount.cli.sweep_options).

Sweep file (TOML)::

    [sweep]
    name = "xor-phase-quick"          # required: names the sweep in the database
    experiment = "xor-phase"          # optional (default: name): the label tables and plots select
    task = "boolean"                  # required: induction | khop | minmax | boolean (any runner's)
    seeds = [0, 1, 2]                 # optional (default [0]): distinct integers ≥ 0, or a count N
    runner = "headcount.learn.train:run_config"   # optional (this default): a registered runner
    description = "…"                 # optional free text

    [fixed]                           # optional: keys passed unchanged to every run
    function = "xor"
    n = 8

    [grid]                            # optional: each key a non-empty list; runs = their product
    degree = [1, 2, 4]
    heads = [1, 2, 4, 8]

    [[include]]                       # optional, repeatable: one extra config (over [fixed]) each
    degree = 8
    heads = 1

The runner maps a config dict to its metrics. It is a name in the registry of runners.py — the
built-in one above, or one registered from Python — never something to import: a sweep file is data.
Values are strings, numbers, booleans, or lists/tables of those (nested at most MAX_VALUE_DEPTH
deep). "task" and "seed" are reserved (set them with [sweep] task / seeds); a key may not be both
fixed and a grid axis. The [sweep] keys are checked from one table (SWEEP_KEYS: each key's check,
whether it is required, its default).

Expansion (`SweepSpec.runs`) is deterministic: grid points in the order of the product of the axes
as written (last axis fastest), then the [[include]] configs, each with every seed in turn (seed
fastest). Every run's config is ``{"task": task, **fixed, **point, "seed": seed}`` and its id is
`run_id_for(config)` (sha256 of the canonical JSON, 16 hex digits), so ids do not depend on key
order, sweep name or runner: a config that is already done in the database — from this sweep or any
other — is not run again. Duplicate configs (an include equal to a grid point) run once.

Bounds (hostile or careless files must not hang or exhaust memory): the file is read by
spec_file.py (a regular file of at most MAX_SPEC_BYTES, nesting the TOML reader cannot manage
refused in one line); at most MAX_RUNS runs (grid points + includes, times seeds), counted before
anything is expanded; seeds in 0..MAX_SEED. The sizes inside each config (steps, n, …) are bounded
by the runner (learn/train.py).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from headcount.common.errors import param
from headcount.learn.constants import TASKS
from headcount.learn.store import canonical_json, run_id_for
from headcount.learn.sweep.errors import SpecError
from headcount.learn.sweep.runners import DEFAULT_RUNNER, runner_names, unknown_runner_message
from headcount.learn.sweep.spec_file import read_sweep_file

# Runs per sweep (grid points + includes, times seeds): the largest experiment has 144 runs; 10,000
# runs of the default training (~10 s each on one core) are more than a day of CPU; a larger sweep
# is a typo (seeds = 1000000000) or an attack, and expanding it would exhaust memory. Split real
# giants into sweeps.
MAX_RUNS = 10_000
# Nesting of a config value (lists/tables inside lists/tables): configs are flat in practice.
MAX_VALUE_DEPTH = 32
# Seeds are stored in an SQLite INTEGER column (64-bit) and seed numpy/torch generators
# (non-negative).
MAX_SEED = 2**63 - 1

_SECTIONS = ("sweep", "fixed", "grid", "include")
_RESERVED = {
    "task": "[sweep] task",
    "seed": "[sweep] seeds",
}  # reserved config key → where it is set
# Keys of the built-in runner that a sweep may not set: "out" writes a model file at the path given,
# and a shared sweep file must not choose paths to overwrite (export one run with `headcount train`,
# given an out path).
_NOT_IN_SWEEPS = ("out",)


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

    def run_count(self) -> int:
        """How many runs the sweep expands to before duplicates are merged, capped at MAX_RUNS + 1
        (computed from the lengths alone: a huge grid is never multiplied out)."""
        points = 1
        for values in self.grid.values():
            points = min(points * len(values), MAX_RUNS + 1)
        return min((points + len(self.include)) * len(self.seeds), MAX_RUNS + 1)

    def check_size(self) -> None:
        """SpecError when the sweep has more than MAX_RUNS runs."""
        if self.run_count() > MAX_RUNS:
            raise SpecError(
                f"{self.source or 'sweep spec'}: the sweep has more than MAX_RUNS = {MAX_RUNS:,} "
                "runs "
                "((grid points + includes) × seeds); split it into smaller sweeps"
            )

    def runs(self) -> list[RunSpec]:
        """Every run of the sweep, in the deterministic order described in the module docstring
        (SpecError beyond MAX_RUNS runs, before expanding)."""
        self.check_size()
        axes = list(self.grid)
        points = [
            dict(zip(axes, values)) for values in itertools.product(*(self.grid[a] for a in axes))
        ]
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


# --------------------------------------------------------------------------------------------------
# Values


def _where(source: str | None, section: str, key: str | None = None) -> str:
    place = f"[{section}]" if key is None else f"[{section}] {key}"
    return f"{source}: {place}" if source else place


def _short(value: Any, limit: int = 80) -> str:
    """repr(value) of at most `limit` characters (a value from a file can be anything)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _number(value)
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _number(n: int) -> str:
    """An integer for a message: in full when short, its size when huge (str() refuses > 4300
    digits)."""
    if abs(n) < 10**20:
        return str(n)
    return f"{'-' if n < 0 else ''}about 10^{round(math.log10(abs(n)))}"


def _type_name(value: Any) -> str:
    return {
        str: "string",
        int: "integer",
        float: "float",
        bool: "boolean",
        list: "list",
        dict: "table",
    }.get(type(value), type(value).__name__)


def _check_value(value: Any, where: str, depth: int = 0) -> None:
    """A config value: a string, bool, int, finite float, or a list/table of those, at most
    MAX_VALUE_DEPTH deep."""
    if depth > MAX_VALUE_DEPTH:
        raise SpecError(
            f"{where}: values are nested more than MAX_VALUE_DEPTH = {MAX_VALUE_DEPTH} deep"
        )
    if isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SpecError(f"{where}: {value} is not allowed (values must be finite)")
        return
    if isinstance(value, list):
        for item in value:
            _check_value(item, where, depth + 1)
        return
    if isinstance(value, dict):
        for k, item in value.items():
            if not isinstance(k, str):
                raise SpecError(f"{where}: table keys must be strings, got {k!r}")
            _check_value(item, where, depth + 1)
        return
    raise SpecError(
        f"{where}: {_type_name(value)} values are not allowed "
        "(use strings, numbers, booleans, or lists/tables of those)"
    )


# --------------------------------------------------------------------------------------------------
# [sweep]: one table of keys, each with its check


def _nonempty_string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{where}: must be a non-empty string, got {value!r}")
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise SpecError(f"{where}: must be a string, got {_type_name(value)}")
    return value


def _runner(value: Any, where: str) -> str:
    """The name of a registered runner (runners.py): looked up, never imported."""
    if not isinstance(value, str) or value not in runner_names():
        raise SpecError(f"{where}: {unknown_runner_message(value)}")
    return value


def _seeds(value: Any, where: str) -> tuple[int, ...]:
    """A count N in 1..MAX_RUNS (seeds 0..N-1) or a non-empty list of distinct integers in
    0..MAX_SEED."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise SpecError(f"{where}: a seed count must be ≥ 1, got {_number(value)}")
        if value > MAX_RUNS:
            raise SpecError(
                f"{where}: a seed count must be ≤ MAX_RUNS = {MAX_RUNS:,} (runs per sweep), "
                f"got {_number(value)}"
            )
        return tuple(range(value))
    if not isinstance(value, list):
        raise SpecError(f"{where}: must be a list of integers or a count, got {_type_name(value)}")
    if not value:
        raise SpecError(f"{where}: the list is empty; give at least one seed")
    if len(value) > MAX_RUNS:
        raise SpecError(f"{where}: more than MAX_RUNS = {MAX_RUNS:,} seeds (runs per sweep)")
    bad = [s for s in value if not isinstance(s, int) or isinstance(s, bool)]
    if bad:
        raise SpecError(f"{where}: seeds must be integers, got {_short(bad[0])}")
    bad = [s for s in value if not 0 <= s <= MAX_SEED]
    if bad:
        raise SpecError(
            f"{where}: seeds must be integers from 0 to MAX_SEED = 2**63 - 1, got {_number(bad[0])}"
        )
    if len(set(value)) != len(value):
        raise SpecError(f"{where}: seeds repeat in {value}")
    return tuple(value)


@dataclass(frozen=True)
class SweepKey:
    """One [sweep] key: its check (value, where → the value kept), whether it is required, its
    default."""

    check: Callable[[Any, str], Any]
    required: bool = False
    default: Any = None


SWEEP_KEYS: dict[str, SweepKey] = {
    "name": SweepKey(_nonempty_string, required=True),
    "experiment": SweepKey(_nonempty_string),  # default: the name
    "task": SweepKey(_nonempty_string, required=True),
    "seeds": SweepKey(_seeds, default=(0,)),
    "runner": SweepKey(_runner, default=DEFAULT_RUNNER),
    "description": SweepKey(_text),
}


def _sweep_table(data: Mapping[str, Any], source: str | None) -> Mapping[str, Any]:
    """The [sweep] table, with no key outside SWEEP_KEYS."""
    head = data.get("sweep")
    if head is None:
        raise SpecError(f"{source or 'sweep spec'}: missing section [sweep] (with name and task)")
    if not isinstance(head, Mapping):
        raise SpecError(f"{_where(source, 'sweep')} must be a table, got {_type_name(head)}")
    for key in head:
        if key not in SWEEP_KEYS:
            raise SpecError(
                f"{_where(source, 'sweep', key)}: unknown key; allowed keys: "
                f"{', '.join(SWEEP_KEYS)}"
            )
    return head


def _sweep_section(data: Mapping[str, Any], source: str | None) -> dict[str, Any]:
    """The [sweep] table checked key by key against SWEEP_KEYS; the defaults filled in."""
    head = _sweep_table(data, source)
    values = {}
    for key, spec in SWEEP_KEYS.items():
        value = head.get(key)
        if value is None and spec.required:
            raise SpecError(f"{_where(source, 'sweep')}: missing required key {key!r} (a string)")
        values[key] = (
            spec.default if value is None else spec.check(value, _where(source, "sweep", key))
        )
    values["experiment"] = values["experiment"] or values["name"]
    if values["runner"] == DEFAULT_RUNNER and values["task"] not in TASKS:
        raise SpecError(
            f"{_where(source, 'sweep', 'task')}: unknown task {values['task']!r}; tasks: "
            f"{', '.join(TASKS)}"
        )
    return values


# --------------------------------------------------------------------------------------------------
# [fixed], [grid], [[include]]


def _config_table(table: Any, section: str, source: str | None) -> dict[str, Any]:
    """A table of config keys (not reserved) with valid values."""
    if not isinstance(table, dict):
        raise SpecError(
            f"{_where(source, section)} must be a table of key = value, got {_type_name(table)}"
        )
    for key in table:
        if not isinstance(key, str) or not key:
            raise SpecError(
                f"{_where(source, section)}: keys must be non-empty strings, got {key!r}"
            )
        if key in _RESERVED:
            raise SpecError(
                f"{_where(source, section, key)}: {key!r} is reserved; set it with {_RESERVED[key]}"
            )
    return dict(table)


def _fixed_section(data: Mapping[str, Any], source: str | None) -> dict[str, Any]:
    fixed = _config_table(data.get("fixed", {}), "fixed", source)
    for key, value in fixed.items():
        _check_value(value, _where(source, "fixed", key))
    return fixed


def _grid_axis(key: str, values: Any, where: str, fixed: Mapping[str, Any]) -> None:
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
        raise SpecError(
            f"{where}: {key!r} is also in [fixed]; a key is either fixed or a grid axis"
        )


def _grid_section(
    data: Mapping[str, Any], source: str | None, fixed: Mapping[str, Any]
) -> dict[str, Any]:
    grid = _config_table(data.get("grid", {}), "grid", source)
    for key, values in grid.items():
        _grid_axis(key, values, _where(source, "grid", key), fixed)
    return grid


def _include_section(data: Mapping[str, Any], source: str | None) -> list[dict[str, Any]]:
    tables = data.get("include", [])
    if isinstance(tables, Mapping):
        tables = [tables]
    if not isinstance(tables, list):
        raise SpecError(f"{_where(source, 'include')}: must be an array of tables ([[include]])")
    include = []
    for i, table in enumerate(tables):
        section = f"include {i + 1}"
        table = _config_table(table, section, source)
        if not table:
            raise SpecError(
                f"{_where(source, section)}: is empty; an [[include]] needs at least one key"
            )
        for key, value in table.items():
            _check_value(value, _where(source, section, key))
        include.append(table)
    return include


# --------------------------------------------------------------------------------------------------
# Entry points


def spec_from_dict(data: Mapping[str, Any], source: str | None = None) -> SweepSpec:
    """Validate a spec given as {"sweep": {...}, "fixed": {...}, "grid": {...}, "include":
    [...]}."""
    if not isinstance(data, Mapping):
        raise SpecError(
            f"{source or 'sweep spec'}: must be a table with sections {', '.join(_SECTIONS)}"
        )
    unknown = [k for k in data if k not in _SECTIONS]
    if unknown:
        raise SpecError(
            f"{source or 'sweep spec'}: unknown section [{unknown[0]}]; "
            f"allowed sections: {', '.join('[' + s + ']' for s in _SECTIONS)} ([[include]] repeats)"
        )
    head = _sweep_section(data, source)
    fixed = _fixed_section(data, source)
    spec = SweepSpec(
        **head,
        fixed=fixed,
        grid=_grid_section(data, source, fixed),
        include=_include_section(data, source),
        source=source,
    )
    _check_built_in_keys(spec)
    spec.check_size()
    return spec


def _check_built_in_keys(spec: SweepSpec) -> None:
    """SpecError for a key of _NOT_IN_SWEEPS in any config of a sweep with the built-in runner."""
    if spec.runner != DEFAULT_RUNNER:
        return
    tables = [("fixed", spec.fixed), ("grid", spec.grid)]
    tables += [(f"include {i + 1}", table) for i, table in enumerate(spec.include)]
    for section, table in tables:
        for key in _NOT_IN_SWEEPS:
            if key in table:
                raise SpecError(
                    f"{_where(spec.source, section, key)}: a sweep file may not choose a path to "
                    "write; "
                    f"export one run's model with `headcount train … {param('out')}`"
                )


def spec_from_toml(path: str | os.PathLike) -> SweepSpec:
    """Read and validate a sweep TOML file (bounded: spec_file.py)."""
    data, label = read_sweep_file(path)
    return spec_from_dict(data, source=label)


def load_spec(spec: SweepSpec | Mapping[str, Any] | str | os.PathLike) -> SweepSpec:
    """A SweepSpec from a SweepSpec, a dict, or the path of a TOML file."""
    if isinstance(spec, SweepSpec):
        return spec
    if isinstance(spec, Mapping):
        return spec_from_dict(spec)
    return spec_from_toml(spec)
