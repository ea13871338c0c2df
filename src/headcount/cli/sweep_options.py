"""`headcount sweep run`'s options → a sweep spec: a sweep file, or the sweep given as flags
(--task, --fixed, --grid, --seeds, --name), never both. The flags are parsed here, into the dict
form of a spec that headcount.learn.sweep.spec_from_dict validates like a file (SpecError, exit
2)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from headcount.learn.sweep import SpecError, SweepSpec, spec_from_dict, spec_from_toml


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
    (repeatable), --seeds 0,1,2 (None: the spec's default; a value naming no seed, '' or ',', is an
    error), --name (default "<task>-flags"). Validate it with spec_from_dict."""
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
    if seeds is not None:
        spec["sweep"]["seeds"] = _seed_list(seeds)
    return spec


def _seed_list(seeds: str) -> list[int]:
    """The --seeds value as integers (their bounds are the spec's); SpecError when it names no seed
    (an empty list would silently run the default seed) or is not integers separated by commas."""
    if not seeds.replace(",", "").strip():
        raise SpecError(
            f"--seeds {seeds!r} names no seed: give one or more seeds 0 … 2⁶³−1, e.g. 0,1,2"
        )
    try:
        return [int(v) for v in seeds.split(",")]
    except ValueError:
        raise SpecError(
            f"--seeds {seeds!r}: give integers separated by commas, e.g. --seeds 0,1,2"
        ) from None


def spec_from_options(
    path: str | os.PathLike | None,
    *,
    name: str | None = None,
    task: str | None = None,
    fixed: Sequence[str] = (),
    grid: Sequence[str] = (),
    seeds: str | None = None,
) -> SweepSpec:
    """The spec of `headcount sweep run`: a TOML file, or the flags (spec_from_flags) — never
    both."""
    if path is None:
        return spec_from_dict(spec_from_flags(name, task, fixed, grid, seeds))
    if task or fixed or grid or seeds is not None or name:
        raise SpecError(
            "give either a sweep file or --task/--fixed/--grid/--seeds/--name, not both"
        )
    return spec_from_toml(path)
