"""The helpers every layer shares: one JSON sanitiser, one integer/choice validator, one machine
probe."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.common.jsonable import JsonResult, jsonable
from headcount.common.probe import machine_info, package_version
from headcount.common.validate import check_choice, check_int


@dataclass(frozen=True)
class Inner:
    x: float


@dataclass(frozen=True)
class Outer(JsonResult):
    inner: Inner
    values: tuple[int, ...]
    rate: float


def test_jsonable_null_policy_is_strict_json():
    out = jsonable(
        {"a": np.int64(3), "b": (np.float32(0.5), math.inf, -math.inf, math.nan), 1: np.arange(2)}
    )
    assert out == {"a": 3, "b": [0.5, None, None, None], "1": [0, 1]}
    json.dumps(out, allow_nan=False)  # no NaN or infinity left


def test_jsonable_keep_policy_keeps_floats():
    out = jsonable([math.inf, np.float64("nan")], nonfinite="keep")
    assert out[0] == math.inf and math.isnan(out[1])


def test_jsonable_other_values_become_strings_and_sets_sort():
    assert jsonable({"p": Path("/a/b"), "q": Fraction(1, 3), "s": {3, 1, 2}}) == {
        "p": "/a/b",
        "q": "1/3",
        "s": [1, 2, 3],
    }


def test_jsonable_rejects_an_unknown_policy():
    with pytest.raises(ValueError, match="nonfinite"):
        jsonable(1.0, nonfinite="drop")


def test_typed_results_have_one_json_path():
    result = Outer(Inner(np.float64(0.25)), (1, 2), math.nan)
    assert result.to_json() == {"inner": {"x": 0.25}, "values": [1, 2], "rate": None}
    assert jsonable({"r": result}) == {"r": result.to_json()}  # nested results go through to_json


def test_check_int_accepts_integers_in_range():
    assert check_int("n", np.int32(5), 1, 10) == 5 and type(check_int("n", np.int32(5))) is int


@pytest.mark.parametrize(
    ("value", "low", "high", "message"),
    [
        (True, 0, None, "n must be an integer, got True"),
        (2.0, 0, None, "n must be an integer, got 2.0"),
        ("3", 0, None, "n must be an integer, got '3'"),
        (0, 1, None, "n must be ≥ 1, got 0"),
        (11, 1, 10, "n must be ≤ 10, got 11"),
    ],
)
def test_check_int_says_what_is_wrong(value, low, high, message):
    with pytest.raises(InputError) as info:
        check_int("n", value, low, high)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)  # callers catching ValueError keep working


def test_check_choice_lists_what_is_allowed():
    assert check_choice("scale", "full", ("quick", "full")) == "full"
    with pytest.raises(InputError, match=r"^scale 'medium' is not available: use quick or full$"):
        check_choice("scale", "medium", ("quick", "full"))
    with pytest.raises(InputError, match=r"use a, b or c$"):
        check_choice("x", "d", "abc")


def test_machine_info_is_probed_once_and_copied():
    first, second = machine_info(), machine_info(with_date=True)
    assert first["python"] and first["cpu_count"] >= 1 and "date" not in first and "date" in second
    first["python"] = "changed"
    assert machine_info()["python"] != "changed"
    assert (
        package_version("numpy") == np.__version__ and package_version("no-such-dist-xyz") is None
    )
