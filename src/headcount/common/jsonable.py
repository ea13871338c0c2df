"""One path from results to JSON: typed results are frozen dataclasses; `jsonable` turns them (and
numpy values, tuples, sets, exact rationals) into plain JSON values with an explicit policy for NaN
and ±inf.

Policies: ``nonfinite="null"`` (the default: strict JSON, what the CLI prints and the report stores
— a NaN or infinity there means "no value") and ``nonfinite="keep"`` (floats kept as they are, for
callers that store them with their own encoding). Anything else that is not JSON — a Path, an fmpq,
a Fraction — becomes its string.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal

import numpy as np

NonFinite = Literal["null", "keep"]


def jsonable(value: Any, nonfinite: NonFinite = "null") -> Any:
    """`value` as plain JSON values (dict keys as strings); see the module docstring for the
    policies."""
    if nonfinite not in ("null", "keep"):
        raise ValueError(f"nonfinite={nonfinite!r}: use 'null' or 'keep'")
    return _convert(value, nonfinite)


def _convert(value: Any, nonfinite: NonFinite) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if nonfinite == "keep" or math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _convert(v, nonfinite) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_convert(v, nonfinite) for v in value]
    return _convert(_unwrap(value), nonfinite)


def _unwrap(value: Any) -> Any:
    """A value that is not plain JSON as one that is closer to it (a dict, a list, a number or a
    string)."""
    if callable(getattr(value, "to_json", None)):
        return value.to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "tolist"):  # a numpy array or a torch tensor
        return value.tolist()
    return str(value)


class JsonResult:
    """Mixin for frozen-dataclass results: ``to_json()`` is their fields through `jsonable` (a
    subclass overrides it only to rename or leave out a field, and says why)."""

    def to_json(self) -> dict[str, Any]:
        return {f.name: _convert(getattr(self, f.name), "null") for f in dataclasses.fields(self)}
