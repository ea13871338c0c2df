"""Rotary position tables (core.numbers.rotary): every entry encloses the true cos and sin of
p·θ^(−2i/dims), checked against an independent Arb evaluation at 300 bits by another formula
(exp(−(2i/dims)·log θ)) on hostile θ, widths and large angles; radius 0 exactly where the value is
exact; the midpoint is the true value rounded to within one ulp; bad arguments refused."""

from __future__ import annotations

import math

import flint
import numpy as np
import pytest

from headcount.core.numbers import FLINT_LOCK, rotary_table
from headcount.core.numbers.rotary import MAX_ENTRIES

CASES = [  # θ, dims, n: large angles (θ = 1 keeps frequency 1 for every i), huge and tiny θ
    (1.0, 2, 65536),
    (10000.0, 64, 512),
    (500000.0, 6, 4096),
    (1e12, 8, 2048),
    (3.0, 4, 8192),
]


def _reference(theta: float, dims: int, p: int, i: int) -> tuple[flint.arb, flint.arb]:
    frequency = (-(flint.arb(2 * i) / dims) * flint.arb(theta).log()).exp()
    angle = frequency * p
    return angle.cos(), angle.sin()


def _encloses(mid: float, rad: float, value: flint.arb) -> bool:
    return bool(abs(value - flint.arb(mid)) <= flint.arb(rad))


@pytest.mark.parametrize(("theta", "dims", "n"), CASES)
def test_every_entry_encloses_the_true_value(theta, dims, n):
    table = rotary_table(theta, dims, n)
    assert table.cos.mid.shape == table.sin.rad.shape == (n, dims // 2)
    rng = np.random.default_rng(dims)
    positions = sorted({0, 1, n - 1, *rng.integers(0, n, 300).tolist()})
    with FLINT_LOCK:
        saved, flint.ctx.prec = flint.ctx.prec, 300
        try:
            for p in positions:
                for i in range(dims // 2):
                    cos, sin = _reference(theta, dims, p, i)
                    for box, value in ((table.cos, cos), (table.sin, sin)):
                        mid, rad = box.mid[p, i], box.rad[p, i]
                        assert _encloses(mid, rad, value), (p, i, mid, rad, value)
                        # the midpoint is the true value to within one ulp
                        assert abs(value - flint.arb(mid)) <= flint.arb(
                            math.ulp(float(value.mid()))
                        )
        finally:
            flint.ctx.prec = saved


@pytest.mark.parametrize(("theta", "dims", "n"), CASES[1:3])
def test_radius_zero_exactly_where_the_value_is_exact(theta, dims, n):
    table = rotary_table(theta, dims, n)
    assert (table.cos.mid[0] == 1).all() and (table.sin.mid[0] == 0).all()
    assert (table.cos.rad[0] == 0).all() and (table.sin.rad[0] == 0).all()
    # p ≥ 1: p·θ^(−2i/dims) is a non-zero algebraic number, whose cos and sin are transcendental
    assert (table.cos.rad[1:] > 0).all() and (table.sin.rad[1:] > 0).all()
    assert table.cos.rad.max() < 1e-16 and table.sin.rad.max() < 1e-16


def test_tables_are_cached_and_read_only():
    table = rotary_table(10000.0, 8, 16)
    assert rotary_table(10000, 8, 16) is table  # an integer θ is the same float θ
    with pytest.raises(ValueError):
        table.cos.mid[0, 0] = 2.0


@pytest.mark.parametrize(
    ("theta", "dims", "n", "message"),
    [
        (0.0, 8, 4, "positive finite"),
        (-10000.0, 8, 4, "positive finite"),
        (math.nan, 8, 4, "positive finite"),
        (math.inf, 8, 4, "positive finite"),
        ("10000", 8, 4, "positive finite"),
        (10000.0, 7, 4, "even number"),
        (10000.0, 0, 4, "even number"),
        (10000.0, 8.0, 4, "even number"),
        (10000.0, 8, 0, "n ≥ 1"),
        (10000.0, 2, MAX_ENTRIES + 1, "entries"),
    ],
)
def test_bad_arguments_are_refused(theta, dims, n, message):
    with pytest.raises(ValueError, match=message):
        rotary_table(theta, dims, n)
