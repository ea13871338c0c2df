"""Entrywise products of boxes (core.numbers.mul_bounds, for gated MLPs) against exact products in
Arb: exact points of hostile boxes (subnormal, huge, zero, zero-radius) lie in the product box;
two points with a zero factor give an exact 0; overflow is never a proof."""

from __future__ import annotations

import numpy as np
import pytest
from flint import ctx

from headcount.core.numbers import mul_bounds
from tests.core.test_activation_bounds import A

SCALES = [1.0, 1e-300, 2.0**-1070, 1e150, 1e-8, 3.0, 0.0]


@pytest.fixture(autouse=True)
def _arb_precision():
    old = ctx.prec
    ctx.prec = 2400
    yield
    ctx.prec = old


def _box(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    scale = float(rng.choice(SCALES))
    mid = rng.normal(size=size) * scale
    mid[rng.random(size) < 0.1] = 0.0
    rad = [np.zeros(size), np.abs(mid) * 1e-15 + 2.0**-1074, rng.random(size) * scale][
        rng.integers(0, 3)
    ]
    return mid, rad


def test_exact_products_lie_in_the_box():
    rng = np.random.default_rng(4)
    checked = 0
    for _ in range(200):
        (a_m, a_r), (b_m, b_r) = _box(rng, 16), _box(rng, 16)
        out = mul_bounds(a_m, a_r, b_m, b_r)
        for ta, tb in ((0, 0), (1, -1), (-1, 1), (1, 1), (rng.uniform(-1, 1), rng.uniform(-1, 1))):
            for i in range(16):
                a = A(a_m[i]) + A(ta) * A(a_r[i])
                b = A(b_m[i]) + A(tb) * A(b_r[i])
                assert abs(a * b - A(out.mid[i])) <= A(out.rad[i]), (a_m[i], a_r[i], b_m[i], b_r[i])
                checked += 1
    assert checked == 200 * 5 * 16


def test_a_zero_factor_of_two_points_is_exact_and_overflow_is_not_a_proof():
    out = mul_bounds(np.array([0.0, 3.0, 1e300]), np.zeros(3), np.array([5.0, 0.0, 1e300]), 0.0)
    assert list(out.rad[:2]) == [0.0, 0.0] and out.rad[2] == np.inf
    tight = mul_bounds(np.array([1.5]), np.zeros(1), np.array([-3.0]), np.zeros(1))
    assert tight.mid[0] == -4.5 and 0 < tight.rad[0] < 1e-15
