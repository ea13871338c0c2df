"""A claim's measured values as small tables, for report.md and report.html alike.

`measured` is whatever plain JSON a claim returned. It is laid out by shape, not by claim, so a new
claim gets tables without code here:

- the top level's scalars and short lists of scalars: one two-column table (name, value);
- a list of records (dicts): a table with a column per key, one row per record;
- a matrix (a list of equal-length lists): a table whose rows and columns are labelled
  by the sibling lists of the same lengths (e.g. `layers` × `hops` for an error table);
- a dict of such things: the same, one table per entry, its caption the path of keys.

Tables are cut at MAX_ROWS rows and MAX_COLUMNS columns (the rest is in summary.json, which the
report says); a cell holding a nested value shows it as compact JSON, cut at MAX_CELL characters.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MAX_ROWS = 24
MAX_COLUMNS = 12
MAX_CELL = 48  # characters of one cell
MAX_INLINE = 8  # a list of at most this many scalars is one cell
MAX_DEPTH = 3  # dicts nested deeper are shown as cells
MAX_TABLES = 6  # tables shown per claim; the rest are in summary.json


@dataclass(frozen=True)
class Table:
    caption: str  # the path of keys this table shows ("" for the top-level values)
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    rows_left_out: int = 0
    columns_left_out: int = 0


def cell(value: Any) -> str:
    """One value as table text: numbers at four significant digits (also inside a flat list or
    dict), deeper values as compact JSON, None as a dash."""
    if value is None:
        text = "—"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, float):
        text = f"{value:.4g}"
    elif isinstance(value, int):
        text = f"{value:,}" if abs(value) >= 10_000 else str(value)
    elif isinstance(value, str):
        text = value
    elif isinstance(value, list) and all(map(_scalar, value)):
        text = "[" + ", ".join(cell(v) for v in value) + "]"
    elif isinstance(value, dict) and all(map(_scalar, value.values())):
        text = ", ".join(f"{k}: {cell(v)}" for k, v in value.items())
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _inline(value: Any) -> bool:
    """Shown as one cell of the values table."""
    if _scalar(value):
        return True
    if isinstance(value, list):
        return len(value) <= MAX_INLINE and all(map(_scalar, value))
    return False  # a dict gets a table of its own


def _records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _matrix(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(row, list) and len(row) == len(value[0]) for row in value)
        and len(value[0]) > 0
    )


def _cut(rows: list[tuple[str, ...]], header: tuple[str, ...], caption: str) -> Table:
    columns_left_out = max(0, len(header) - MAX_COLUMNS)
    header = header[:MAX_COLUMNS]
    rows = [row[:MAX_COLUMNS] for row in rows]
    rows_left_out = max(0, len(rows) - MAX_ROWS)
    return Table(caption, header, tuple(rows[:MAX_ROWS]), rows_left_out, columns_left_out)


def records_table(caption: str, records: list[dict[str, Any]]) -> Table:
    header: list[str] = []
    for record in records:
        header += [k for k in record if k not in header]
    rows = [tuple(cell(record.get(k)) for k in header) for record in records]
    return _cut(rows, tuple(header), caption)


def matrix_table(caption: str, matrix: list[list[Any]], siblings: dict[str, Any]) -> Table:
    """Rows and columns labelled by the sibling lists of matching length (the first found)."""
    labels = {k: v for k, v in siblings.items() if isinstance(v, list) and _flat(v)}
    row_name, row_labels = _labels(labels, len(matrix), "row")
    col_name, col_labels = _labels(labels, len(matrix[0]), "column", exclude=row_name)
    header = (f"{row_name} \\ {col_name}", *(f"{col_name} = {cell(c)}" for c in col_labels))
    rows = [(cell(r), *(cell(v) for v in row)) for r, row in zip(row_labels, matrix)]
    return _cut(rows, header, caption)


def _flat(value: list[Any]) -> bool:
    return all(map(_scalar, value))


def _labels(
    lists: dict[str, list[Any]], length: int, fallback: str, exclude: str = ""
) -> tuple[str, list[Any]]:
    for name, values in lists.items():
        if name != exclude and len(values) == length:
            return name, list(values)
    return fallback, list(range(length))


def measured_tables(measured: dict[str, Any]) -> list[Table]:
    """Every table of `measured`, the top-level values first."""
    return _tables("", measured, 0)


def _tables(path: str, data: dict[str, Any], depth: int) -> list[Table]:
    values = [(k, v) for k, v in data.items() if _inline(v)]
    out = []
    if values:
        out.append(Table(path, ("name", "value"), tuple((k, cell(v)) for k, v in values)))
    for key, value in data.items():
        if _inline(value):
            continue
        where = f"{path} · {key}" if path else key
        if _records(value):
            out.append(records_table(where, value))
        elif _matrix(value):
            out.append(matrix_table(where, value, data))
        elif isinstance(value, dict) and depth < MAX_DEPTH:
            out += _tables(where, value, depth + 1)
        else:
            out.append(Table(where, ("name", "value"), ((key, cell(value)),)))
    return out
