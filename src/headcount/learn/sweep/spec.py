"""Sweep specs: a TOML file, the same structure as a dict, or command-line flags → a validated SweepSpec.

Sweep file (TOML)::

    [sweep]
    name = "xor-phase-quick"          # required: names the sweep in the database
    experiment = "xor-phase"          # optional (default: name): the label tables and plots select on
    task = "boolean"                  # required: induction | khop | minmax | boolean (any with a runner)
    seeds = [0, 1, 2]                 # optional (default [0]): distinct integers, or a count N: 0..N-1
    runner = "headcount.learn.train:run_config"   # optional (this default): "module:function"
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

The runner maps a config dict to its metrics. Values are strings, numbers, booleans, or lists/tables
of those. "task" and "seed" are reserved (set them with [sweep] task / seeds); a key may not be both fixed
and a grid axis. The [sweep] keys are checked from one table (SWEEP_KEYS: each key's check, whether it is
required, its default).

Expansion (`SweepSpec.runs`) is deterministic: grid points in the order of the product of the axes as
written (last axis fastest), then the [[include]] configs, each with every seed in turn (seed fastest).
Every run's config is ``{"task": task, **fixed, **point, "seed": seed}`` and its id is `run_id_for(config)`
(sha256 of the canonical JSON, 16 hex digits), so ids do not depend on key order, sweep name or runner: a
config that is already done in the database — from this sweep or any other — is not run again. Duplicate
configs (an include equal to a grid point) run once.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headcount.learn.constants import TASKS
from headcount.learn.store import canonical_json, run_id_for
from headcount.learn.sweep.errors import SpecError

DEFAULT_RUNNER = "headcount.learn.train:run_config"

_SECTIONS = ("sweep", "fixed", "grid", "include")
_RESERVED = {"task": "[sweep] task", "seed": "[sweep] seeds"}  # reserved config key → where it is set
_RUNNER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")


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
        axes = list(self.grid)
        points = [dict(zip(axes, values)) for values in itertools.product(*(self.grid[a] for a in axes))]
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


# ---------------------------------------------------------------------------------------------------
# Values


def _where(source: str | None, section: str, key: str | None = None) -> str:
    place = f"[{section}]" if key is None else f"[{section}] {key}"
    return f"{source}: {place}" if source else place


def _type_name(value: Any) -> str:
    return {str: "string", int: "integer", float: "float", bool: "boolean", list: "list", dict: "table"}.get(
        type(value), type(value).__name__
    )


def _check_value(value: Any, where: str) -> None:
    """A config value: a string, bool, int, finite float, or a list/table of those."""
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


# ---------------------------------------------------------------------------------------------------
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
    if not _RUNNER_RE.match(_nonempty_string(value, where)):
        raise SpecError(f"{where}: {value!r} is not of the form 'package.module:function'")
    return value


def _seeds(value: Any, where: str) -> tuple[int, ...]:
    """A count N ≥ 1 (seeds 0..N-1) or a non-empty list of distinct integers."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise SpecError(f"{where}: a seed count must be ≥ 1, got {value}")
        return tuple(range(value))
    if not isinstance(value, list):
        raise SpecError(f"{where}: must be a list of integers or a count, got {_type_name(value)}")
    if not value:
        raise SpecError(f"{where}: the list is empty; give at least one seed")
    bad = [s for s in value if not isinstance(s, int) or isinstance(s, bool)]
    if bad:
        raise SpecError(f"{where}: seeds must be integers, got {bad[0]!r}")
    if len(set(value)) != len(value):
        raise SpecError(f"{where}: seeds repeat in {value}")
    return tuple(value)


@dataclass(frozen=True)
class SweepKey:
    """One [sweep] key: its check (value, where → the value kept), whether it is required, its default."""

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
                f"{_where(source, 'sweep', key)}: unknown key; allowed keys: {', '.join(SWEEP_KEYS)}"
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
        values[key] = spec.default if value is None else spec.check(value, _where(source, "sweep", key))
    values["experiment"] = values["experiment"] or values["name"]
    if values["runner"] == DEFAULT_RUNNER and values["task"] not in TASKS:
        raise SpecError(
            f"{_where(source, 'sweep', 'task')}: unknown task {values['task']!r}; tasks: {', '.join(TASKS)}"
        )
    return values


# ---------------------------------------------------------------------------------------------------
# [fixed], [grid], [[include]]


def _config_table(table: Any, section: str, source: str | None) -> dict[str, Any]:
    """A table of config keys (not reserved) with valid values."""
    if not isinstance(table, dict):
        raise SpecError(f"{_where(source, section)} must be a table of key = value, got {_type_name(table)}")
    for key in table:
        if not isinstance(key, str) or not key:
            raise SpecError(f"{_where(source, section)}: keys must be non-empty strings, got {key!r}")
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
        raise SpecError(f"{where}: {key!r} is also in [fixed]; a key is either fixed or a grid axis")


def _grid_section(data: Mapping[str, Any], source: str | None, fixed: Mapping[str, Any]) -> dict[str, Any]:
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
            raise SpecError(f"{_where(source, section)}: is empty; an [[include]] needs at least one key")
        for key, value in table.items():
            _check_value(value, _where(source, section, key))
        include.append(table)
    return include


# ---------------------------------------------------------------------------------------------------
# Entry points


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
    head = _sweep_section(data, source)
    fixed = _fixed_section(data, source)
    return SweepSpec(
        **head,
        fixed=fixed,
        grid=_grid_section(data, source, fixed),
        include=_include_section(data, source),
        source=source,
    )


def spec_from_toml(path: str | os.PathLike) -> SweepSpec:
    """Read and validate a sweep TOML file."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(
            f"sweep file {str(path)!r} does not exist: "
            "give a TOML file with [sweep], [fixed] and [grid] tables"
        )
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


def flag_value(text: str) -> Any:
    """A --fixed / --grid value: int, float, true/false, else the string itself."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def _flag_pair(item: str, table: str) -> tuple[str, Any]:
    key, eq, value = item.partition("=")
    if not eq or not key.strip() or not value.strip():
        raise SpecError(
            f"--{table} {item!r}: write KEY=VALUE" + (" or KEY=V1,V2,…" if table == "grid" else "")
        )
    if table == "grid":
        return key.strip(), [flag_value(v) for v in value.split(",")]
    return key.strip(), flag_value(value)


def spec_from_flags(
    name: str | None,
    task: str | None,
    fixed: Sequence[str] = (),
    grid: Sequence[str] = (),
    seeds: str | None = None,
) -> dict[str, Any]:
    """The dict form of a sweep given as flags: --task, --fixed KEY=V (repeatable), --grid KEY=V1,V2
    (repeatable), --seeds 0,1,2, --name (default "<task>-flags"). Validate it with spec_from_dict."""
    if not task:
        raise SpecError(
            "give a sweep file, or --task with --grid KEY=V1,V2 "
            "(and optional --fixed KEY=V, --seeds 0,1, --name)"
        )
    spec: dict[str, Any] = {
        "sweep": {"name": name or f"{task}-flags", "task": task},
        "fixed": dict(_flag_pair(item, "fixed") for item in fixed),
        "grid": dict(_flag_pair(item, "grid") for item in grid),
    }
    if seeds:
        try:
            spec["sweep"]["seeds"] = [int(v) for v in seeds.split(",")]
        except ValueError:
            raise SpecError(
                f"--seeds {seeds!r}: give integers separated by commas, e.g. --seeds 0,1,2"
            ) from None
    return spec


def spec_from_options(
    path: str | os.PathLike | None,
    *,
    name: str | None = None,
    task: str | None = None,
    fixed: Sequence[str] = (),
    grid: Sequence[str] = (),
    seeds: str | None = None,
) -> SweepSpec:
    """The spec of `headcount sweep run`: a TOML file, or the flags (spec_from_flags) — never both."""
    if path is None:
        return spec_from_dict(spec_from_flags(name, task, fixed, grid, seeds))
    if task or fixed or grid or seeds or name:
        raise SpecError("give either a sweep file or --task/--fixed/--grid/--seeds/--name, not both")
    return spec_from_toml(path)
