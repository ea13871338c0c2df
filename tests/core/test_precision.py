"""Tests for headcount.core.numbers.precision: parsing modes, fixed:p rounding, bfloat16
rounding."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from headcount.core.numbers.precision import (
    EXACT,
    FLOAT64,
    IEEE_DTYPES,
    Precision,
    fixed,
    parse_precision,
    round_bfloat16,
    round_fixed,
)

# --------------------------------------------------------------------------------------------------
# parse_precision


@pytest.mark.parametrize(
    ("text", "kind", "bits", "name", "dtype"),
    [
        ("exact", "exact", None, "exact", np.float64),
        ("float64", "float64", None, "float64", np.float64),
        ("float32", "float32", None, "float32", np.float32),
        ("float16", "float16", None, "float16", np.float32),  # accumulates in float32
        ("bfloat16", "bfloat16", None, "bfloat16", np.float32),
        ("fixed:1", "fixed", 1, "fixed:1", np.float64),
        ("fixed:8", "fixed", 8, "fixed:8", np.float64),
        ("fixed:60", "fixed", 60, "fixed:60", np.float64),
        ("  fixed:12\n", "fixed", 12, "fixed:12", np.float64),  # surrounding whitespace is ignored
        (" exact ", "exact", None, "exact", np.float64),
    ],
)
def test_parse_precision_valid(text, kind, bits, name, dtype):
    prec = parse_precision(text)
    assert prec == Precision(kind, bits)
    assert prec.kind == kind and prec.bits == bits
    assert prec.name == name
    assert prec.compute_dtype is dtype
    assert parse_precision(prec.name) == prec  # the name round-trips


def test_parse_precision_every_ieee_dtype_and_every_bit_count():
    for dtype in IEEE_DTYPES:
        assert parse_precision(dtype) == Precision(dtype)
    for p in range(1, 61):
        assert parse_precision(f"fixed:{p}") == fixed(p)
    assert parse_precision("exact") == EXACT
    assert parse_precision("float64") == FLOAT64


ALL_FORMS = ("fixed:p", "exact", "float16", "bfloat16", "float32", "float64")


@pytest.mark.parametrize(
    "text", ["float8", "", "   ", "fixed", "FIXED:3", "Exact", "fp32", "int8", "float", "fixed3"]
)
def test_parse_precision_unknown_lists_every_allowed_form(text):
    with pytest.raises(ValueError) as info:
        parse_precision(text)
    message = str(info.value)
    assert "\n" not in message
    for form in ALL_FORMS:
        assert form in message, (form, message)
    assert "60" in message  # the allowed range of p


@pytest.mark.parametrize(
    "text", ["fixed:0", "fixed:61", "fixed:-3", "fixed:x", "fixed:", "fixed:2.5", "fixed:1e3"]
)
def test_parse_precision_bad_bits_says_what_p_may_be(text):
    with pytest.raises(ValueError) as info:
        parse_precision(text)
    message = str(info.value)
    assert "\n" not in message
    assert repr(text.strip()) in message  # names the offending text
    assert "fixed:p" in message and "1..60" in message  # and says what is allowed


# --------------------------------------------------------------------------------------------------
# round_fixed


@pytest.mark.parametrize(
    ("x", "bits", "expected"),
    [
        (0.125, 2, 0.0),  # tie: 0.5 units -> 0 (even)
        (0.375, 2, 0.5),  # tie: 1.5 units -> 2
        (0.625, 2, 0.5),  # tie: 2.5 units -> 2
        (0.875, 2, 1.0),  # tie: 3.5 units -> 4
        (-0.125, 2, 0.0),
        (-0.375, 2, -0.5),
        (-0.625, 2, -0.5),
        (0.126, 2, 0.25),
        (0.124, 2, 0.0),
        (0.3, 2, 0.25),
        (100.0, 2, 4.0),  # clipped at 2^p
        (-100.0, 2, -4.0),
        (4.0, 2, 4.0),
        (3.9, 2, 4.0),
        (4.1, 2, 4.0),
        (-4.2, 2, -4.0),
        (1e300, 2, 4.0),
        (-1e300, 3, -8.0),
        (np.inf, 4, 16.0),
        (-np.inf, 4, -16.0),
        (0.25, 1, 0.0),  # p=1: grid 0.5, tie at 0.25 -> 0
        (0.75, 1, 1.0),  # tie at 1.5 units -> 2 units
        (1.25, 1, 1.0),  # 2.5 units -> 2 units
        (2.5, 1, 2.0),  # clipped at 2
        (1.0 + 2.0**-52, 52, 1.0 + 2.0**-52),  # exact values stay put
        (1.0 + 2.0**-52, 51, 1.0),  # tie to even
        (1.0 + 3 * 2.0**-52, 51, 1.0 + 2.0**-50),  # 1.5 units of 2^-51 -> 2 units
        (2.0**-61, 60, 0.0),  # tie at half a unit -> 0
        (3 * 2.0**-61, 60, 2.0**-59),  # 1.5 units -> 2 units
        (2.0**59 + 0.25, 60, 2.0**59),  # not representable: x is already 2^59 in float64
    ],
)
def test_round_fixed_examples(x, bits, expected):
    got = round_fixed(np.float64(x), bits)
    assert float(got) == expected
    assert math.copysign(1, float(got)) == math.copysign(1, expected) or expected == 0.0


def test_round_fixed_array_shape_and_dtype():
    x = np.array([[0.1, -0.2, 0.3], [10.0, -10.0, 0.0]], dtype=np.float32)
    got = round_fixed(x, 3)
    assert got.shape == x.shape and got.dtype == np.float64
    expected = np.array([[0.125, -0.25, 0.25], [8.0, -8.0, 0.0]])
    np.testing.assert_array_equal(got, expected)
    # lists are accepted as well
    np.testing.assert_array_equal(round_fixed([0.375, 0.625], 2), [0.5, 0.5])


def _reference_round_fixed(x: float, bits: int) -> Fraction:
    """Exact rational reference: round half to even (Python's round on Fraction), clip to
    ±2^bits."""
    limit = Fraction(2) ** bits
    if math.isinf(x):
        return limit if x > 0 else -limit
    units = round(Fraction(x) * 2**bits)  # Fraction.__round__ rounds half to even
    return max(-limit, min(limit, Fraction(units, 2**bits)))


@settings(max_examples=400, deadline=None)
@given(
    x=st.one_of(
        st.floats(allow_nan=False, allow_infinity=True, width=64),
        st.floats(min_value=-64, max_value=64, allow_nan=False),
        # exact ties and near-ties on fine grids
        st.builds(lambda k, e: k * 2.0**-e, st.integers(-(2**20), 2**20), st.integers(0, 62)),
    ),
    bits=st.integers(1, 60),
)
def test_round_fixed_matches_exact_rational_reference(x, bits):
    with np.errstate(over="ignore"):  # |x|·2^p may overflow to inf, which then clips correctly
        got = float(round_fixed(np.float64(x), bits))
    assert Fraction(got) == _reference_round_fixed(x, bits)


def test_round_fixed_results_are_on_the_grid_and_idempotent():
    rng = np.random.default_rng(0)
    x = rng.normal(scale=20, size=5000)
    for bits in (1, 3, 6, 10, 30):
        r = round_fixed(x, bits)
        units = r * 2.0**bits
        np.testing.assert_array_equal(units, np.round(units))
        assert np.all(np.abs(r) <= 2.0**bits)
        np.testing.assert_array_equal(round_fixed(r, bits), r)
        inside = np.abs(x) <= 2.0**bits
        assert np.all(np.abs(r[inside] - x[inside]) <= 2.0 ** -(bits + 1))
        assert np.all(np.diff(r[np.argsort(x)]) >= 0)  # monotone


# --------------------------------------------------------------------------------------------------
# round_bfloat16 vs torch


def _torch_bfloat16(x32: np.ndarray) -> np.ndarray:
    return torch.from_numpy(x32.copy()).to(torch.bfloat16).to(torch.float32).numpy()


def _assert_same_bits(x32: np.ndarray) -> None:
    x32 = np.ascontiguousarray(x32, dtype=np.float32)
    got = round_bfloat16(x32)
    want = _torch_bfloat16(x32)
    assert got.dtype == np.float32 and got.shape == x32.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    bad = np.flatnonzero(got.view(np.uint32)[~nan] != want.view(np.uint32)[~nan])
    assert bad.size == 0, [
        (hex(int(b)), float(g), float(w))
        for b, g, w in zip(
            x32.view(np.uint32)[~nan][bad[:5]], got[~nan][bad[:5]], want[~nan][bad[:5]]
        )
    ]


def test_round_bfloat16_random_bit_patterns_match_torch():
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    _assert_same_bits(bits.view(np.float32))


def test_round_bfloat16_random_normal_values_match_torch():
    rng = np.random.default_rng(2)
    for scale in (1e-40, 1e-30, 1e-3, 1.0, 1e5, 1e30, 3e38):
        with np.errstate(over="ignore"):  # the largest scale overflows float32 on purpose
            _assert_same_bits((rng.standard_normal(20_000) * scale).astype(np.float32))


def test_round_bfloat16_special_values_match_torch():
    f32 = np.finfo(np.float32)
    special = np.array(
        [
            0.0,
            -0.0,
            np.inf,
            -np.inf,
            f32.max,
            -f32.max,
            f32.tiny,
            -f32.tiny,
            f32.smallest_subnormal,
            -f32.smallest_subnormal,
            1.0,
            -1.0,
            1.0 + 2.0**-8,
            1.0 + 2.0**-9,
            1.0 + 3 * 2.0**-9,
            65504.0,
            3.3895314e38,
            3.3961776e38,
            3.40e38,
        ],
        dtype=np.float32,
    )
    _assert_same_bits(special)
    got = round_bfloat16(special)
    assert got[2] == np.inf and got[3] == -np.inf
    assert got[4] == np.inf and got[5] == -np.inf  # float32 max rounds up past the largest bfloat16
    # bfloat16 keeps 7 fraction bits: spacing 2^-7 at 1
    assert got[12] == 1.0  # 1 + 2^-8 is a tie -> even (1.0)
    assert got[13] == 1.0
    assert got[14] == np.float32(1.0 + 2.0**-7)
    assert np.signbit(got[1])


def test_round_bfloat16_exact_halfway_points_match_torch():
    """Low 16 bits exactly 0x8000 (halfway between bfloat16 neighbours), with even and odd upper
    halves, plus one ulp either side, across normal, subnormal and near-overflow exponents."""
    rng = np.random.default_rng(3)
    upper = rng.integers(0, 2**16, size=20_000, dtype=np.uint64)
    upper = np.concatenate(
        [
            upper,
            np.arange(0, 0x100, dtype=np.uint64),
            np.arange(0x7F00, 0x7F80, dtype=np.uint64),
            np.arange(0xFF00, 0xFF80, dtype=np.uint64),
        ]
    )
    upper = upper[((upper >> 7) & 0xFF) != 0xFF]  # skip inf/NaN exponents
    for low in (0x8000, 0x7FFF, 0x8001, 0x0000, 0xFFFF, 0x0001):
        bits = ((upper << 16) | low).astype(np.uint32)
        _assert_same_bits(bits.view(np.float32))
    # halfway points go to the neighbour with an even last bit
    halfway = ((upper << 16) | 0x8000).astype(np.uint32).view(np.float32)
    rounded = round_bfloat16(halfway)
    finite = np.isfinite(rounded)
    assert np.all((rounded[finite].view(np.uint32) >> 16) & 1 == 0)


def test_round_bfloat16_subnormals_match_torch():
    rng = np.random.default_rng(4)
    bits = rng.integers(1, 0x007FFFFF, size=50_000, dtype=np.uint64).astype(np.uint32)
    bits[::2] |= np.uint32(0x80000000)
    _assert_same_bits(bits.view(np.float32))


def test_round_bfloat16_is_idempotent_and_accepts_float64():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(1000) * 1e3
    once = round_bfloat16(x)
    np.testing.assert_array_equal(round_bfloat16(once), once)
    np.testing.assert_array_equal(once.view(np.uint32) & 0xFFFF, 0)
    np.testing.assert_array_equal(once, _torch_bfloat16(x.astype(np.float32)))


def test_round_bfloat16_passes_nan_through():
    x = np.array([np.nan, 1.0, -np.nan], dtype=np.float32)
    out = round_bfloat16(x)
    assert np.isnan(out[0]) and np.isnan(out[2]) and out[1] == 1.0


# --------------------------------------------------------------------------------------------------
# Precision.at_rounding_point / after_op


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_at_rounding_point_and_after_op_per_mode():
    x = np.array([0.1, 1.0 / 3.0, 1e5 + 0.3, -2.7e-8, 70000.0])
    np.testing.assert_array_equal(fixed(3).at_rounding_point(x), round_fixed(x, 3))
    np.testing.assert_array_equal(
        fixed(3).after_op(x), x
    )  # between rounding points: real arithmetic
    np.testing.assert_array_equal(EXACT.at_rounding_point(x), x)
    np.testing.assert_array_equal(FLOAT64.after_op(x), x)
    np.testing.assert_array_equal(
        Precision("float16").after_op(x), x.astype(np.float16).astype(np.float32)
    )
    assert Precision("float16").after_op(x)[-1] == np.inf  # 70000 overflows float16
    np.testing.assert_array_equal(
        Precision("bfloat16").at_rounding_point(x), _torch_bfloat16(x.astype(np.float32))
    )
    x32 = x.astype(np.float32)
    assert Precision("float32").after_op(x32) is x32
