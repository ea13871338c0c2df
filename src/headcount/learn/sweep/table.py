"""Tables over a sweep's runs, in small steps: read → group by config → choose columns → aggregate
over seeds → format (Markdown, CSV or JSON).

`sweep_table`: the runs of one experiment, grouped by config without the seed: one row per group
with the config keys that vary between groups (or "task" if none does), "seeds" (done runs),
"failed" (only when some run failed), then for every numeric metric (nested dicts flattened as
"a.b") "<m>_mean", "<m>_min", "<m>_max" over the seeds — or a single column "<m>" when no group's
seeds differ in it — and "<m>_fraction" (fraction true) for every boolean metric ("solved" →
solved_fraction). Metrics that echo a config key (n, heads, seed, …) are left out, as are non-finite
values (NaN losses) and non-numeric metrics; `metrics=[…]` keeps only the named ones. Rows are
sorted by the config columns.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headcount.common.validate import check_choice
from headcount.learn.store import ResultsStore, canonical_json
from headcount.learn.sweep.errors import SweepError

_MISSING = "\0missing"


@dataclass
class _Group:
    """The runs of one config (seed aside): the flattened metrics of the done ones, and how many
    failed."""

    config: dict[str, Any]
    metrics: list[dict[str, Any]] = field(default_factory=list)
    failed: int = 0

    def finite(self, key: str) -> list[float]:
        """The finite values of numeric or boolean metric `key` over the seeds."""
        values = [float(m[key]) for m in self.metrics if key in m and _is_value(m[key])]
        return [v for v in values if math.isfinite(v)]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_value(value: Any) -> bool:
    return _is_number(value) or isinstance(value, bool)


def _flatten(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


# --------------------------------------------------------------------------------------------------
# Steps


def _read(db_path: str | os.PathLike, experiment: str) -> list[dict[str, Any]]:
    path = Path(db_path)
    if not os.path.lexists(
        path
    ):  # anything else that is not a results database: ResultsStore says what
        raise SweepError(
            f"results database {str(path)!r} does not exist: run a sweep into it first"
        )
    with ResultsStore(path) as store:
        rows = store.rows(experiment=experiment)
        known = store.experiments()
    if not rows:
        listed = ", ".join(repr(e) for e in known) or "none"
        raise SweepError(
            f"no runs of experiment {experiment!r} in {str(path)!r}; experiments there: {listed}"
        )
    return rows


def _group(rows: list[dict[str, Any]]) -> tuple[list[_Group], list[str]]:
    """Groups in order of first appearance, and the config keys in order of first appearance."""
    groups: dict[str, _Group] = {}
    keys: dict[str, None] = {}
    for row in rows:
        config = {k: v for k, v in row["config"].items() if k != "seed"}
        keys.update(dict.fromkeys(config))
        group = groups.setdefault(canonical_json(config), _Group(config))
        if row["status"] == "done":
            group.metrics.append(_flatten(row["metrics"] or {}))
        else:
            group.failed += 1
    return list(groups.values()), list(keys)


def _varying(groups: list[_Group], keys: list[str]) -> list[str]:
    """Config keys whose value differs between groups (or is missing in some); "task" when none
    does."""
    varying = [
        k
        for k in keys
        if len({canonical_json(g.config[k]) if k in g.config else _MISSING for g in groups}) > 1
    ]
    return varying or (["task"] if "task" in keys else [])


def _metric_kinds(groups: list[_Group], keys: list[str]) -> dict[str, set[str]]:
    """Metric name → {"bool", "number"}, in order of first appearance; metrics that echo a config
    key are the config, not results, and are left out."""
    kinds: dict[str, set[str]] = {}
    for group in groups:
        for m in group.metrics:
            for k, v in m.items():
                if k in keys or k == "seed" or not _is_value(v):
                    continue
                kinds.setdefault(k, set()).add("bool" if isinstance(v, bool) else "number")
    return kinds


def _selected(name: str, wanted: Sequence[str]) -> bool:
    return any(name == w or name.startswith(w + ".") for w in wanted)


def _select(
    kinds: dict[str, set[str]], wanted: Sequence[str] | None, experiment: str
) -> dict[str, set[str]]:
    """The metrics named (or prefixed) by `wanted`; SweepError naming the first that matches
    nothing."""
    if wanted is None:
        return kinds
    missing = [w for w in wanted if not any(_selected(k, (w,)) for k in kinds)]
    if missing:
        raise SweepError(
            f"experiment {experiment!r} has no numeric or boolean metric {missing[0]!r}; "
            f"metrics: {', '.join(kinds) or 'none'}"
        )
    return {k: v for k, v in kinds.items() if _selected(k, wanted)}


@dataclass(frozen=True)
class _Layout:
    """Which columns the table has: config keys, a failed column or not, and per metric its shape
    ("fraction" for booleans, "spread" for numbers that differ between seeds, else "single")."""

    varying: list[str]
    any_failed: bool
    shapes: dict[str, str]

    def columns(self) -> list[str]:
        columns = list(self.varying) + ["seeds"] + (["failed"] if self.any_failed else [])
        for k, shape in self.shapes.items():
            if shape == "fraction":
                columns.append(f"{k}_fraction")
            elif shape == "spread":
                columns += [f"{k}_mean", f"{k}_min", f"{k}_max"]
            else:
                columns.append(k)
        return columns


def _shape(groups: list[_Group], k: str, kind: set[str]) -> str:
    if kind == {"bool"}:
        return "fraction"
    return "spread" if any(len(set(g.finite(k))) > 1 for g in groups) else "single"


def _single(group: _Group, k: str) -> int | float | None:
    """The one value of a metric that never differs between seeds: an int when every seed stored
    one."""
    nums = group.finite(k)
    if not nums:
        return None
    value = nums[0]
    whole = value.is_integer() and all(not isinstance(m.get(k), float) for m in group.metrics)
    return int(value) if whole else value


def _aggregate(group: _Group, k: str, shape: str) -> dict[str, Any]:
    if shape == "fraction":
        flags = [m[k] for m in group.metrics if isinstance(m.get(k), bool)]
        return {f"{k}_fraction": sum(flags) / len(flags) if flags else None}
    if shape == "single":
        return {k: _single(group, k)}
    nums = group.finite(k)
    if not nums:
        return {f"{k}_mean": None, f"{k}_min": None, f"{k}_max": None}
    return {f"{k}_mean": sum(nums) / len(nums), f"{k}_min": min(nums), f"{k}_max": max(nums)}


def _row(group: _Group, layout: _Layout) -> dict[str, Any]:
    record: dict[str, Any] = {k: group.config.get(k) for k in layout.varying}
    record["seeds"] = len(group.metrics)
    if layout.any_failed:
        record["failed"] = group.failed
    for k, shape in layout.shapes.items():
        record.update(_aggregate(group, k, shape))
    return record


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


def table_rows(
    db_path: str | os.PathLike, experiment: str, metrics: Sequence[str] | None = None
) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows) of `sweep_table`, as Python values (None where there is nothing)."""
    groups, keys = _group(_read(db_path, experiment))
    kinds = _select(
        _metric_kinds(groups, keys), None if metrics is None else tuple(metrics), experiment
    )
    layout = _Layout(
        varying=_varying(groups, keys),
        any_failed=any(g.failed for g in groups),
        shapes={k: _shape(groups, k, kind) for k, kind in kinds.items()},
    )
    rows = sorted(
        (_row(g, layout) for g in groups), key=lambda r: _sort_key([r[k] for k in layout.varying])
    )
    return layout.columns(), rows


# --------------------------------------------------------------------------------------------------
# Formats


def _text(value: Any, float_format: str | None, escape: bool) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and float_format:
        return format(value, float_format)
    text = (
        json.dumps(value, separators=(",", ":")) if isinstance(value, (list, dict)) else str(value)
    )
    return text.replace("|", "\\|") if escape else text


def format_md(experiment: str, columns: list[str], rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_text(row[c], ".4g", True) for c in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def format_csv(experiment: str, columns: list[str], rows: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_text(row[c], None, False) for c in columns])
    return buffer.getvalue()


def format_json(experiment: str, columns: list[str], rows: list[dict[str, Any]]) -> str:
    return json.dumps(
        {"experiment": experiment, "columns": columns, "rows": rows},
        ensure_ascii=False,
        allow_nan=False,
    )


FORMATS: dict[str, Callable[[str, list[str], list[dict[str, Any]]], str]] = {
    "md": format_md,
    "csv": format_csv,
    "json": format_json,
}
TABLE_FORMATS = tuple(FORMATS)


def sweep_table(
    db_path: str | os.PathLike,
    experiment: str,
    format: str = "md",
    metrics: Sequence[str] | None = None,
) -> str:
    """The experiment's results aggregated over seeds, as a Markdown table, CSV, or one JSON object
    {"experiment", "columns", "rows"}. `metrics` keeps only those metrics (a name, or a prefix of
    flattened names: "eval" keeps "eval.errors"). See the module docstring for the columns."""
    check_choice("format", format, TABLE_FORMATS)
    columns, rows = table_rows(db_path, experiment, metrics)
    return FORMATS[format](experiment, columns, rows)
