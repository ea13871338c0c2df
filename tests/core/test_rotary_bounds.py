"""The rotary rotation's enclosure (core.passes.rotary.rotary_bounds) against exact rotations in
Arb: for exact points of hostile boxes (tiny, huge, subnormal, zero-radius), at every position of
tables with small and huge θ and both layouts, the rotated point lies in the box; the identity at
p = 0 keeps an exact input exact; entries past the rotary part pass unchanged; points stay tight."""

from __future__ import annotations

import numpy as np
import pytest
from flint import arb, ctx

from headcount.core.numbers import rotary_table
from headcount.core.passes.rotary import rotary_bounds
from tests.core.test_activation_bounds import A


@pytest.fixture(autouse=True)
def _arb_precision():
    old = ctx.prec
    ctx.prec = 2400
    yield
    ctx.prec = old


def _exact_angle_terms(theta: float, dims: int, p: int, i: int) -> tuple[arb, arb]:
    angle = p * (-(arb(2 * i) / dims) * A(theta).log()).exp()
    return angle.cos(), angle.sin()


def _pairs(dims: int, layout: str) -> list[tuple[int, int]]:
    if layout == "rotate_half":
        return [(i, i + dims // 2) for i in range(dims // 2)]
    return [(2 * i, 2 * i + 1) for i in range(dims // 2)]


def _box(rng: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    scale = float(rng.choice([1.0, 1e-300, 2.0**-1070, 1e150, 1e-8, 3.0]))
    mid = rng.normal(size=(n, d)) * scale
    rad = [np.zeros((n, d)), np.abs(mid) * 1e-15 + 2.0**-1074, rng.random((n, d)) * scale][
        rng.integers(0, 3)
    ]
    return mid, rad


@pytest.mark.parametrize("layout", ["rotate_half", "interleaved"])
@pytest.mark.parametrize(("theta", "dims", "d"), [(10000.0, 4, 6), (1.0, 2, 2), (1e12, 8, 8)])
def test_rotated_points_lie_in_the_box(layout, theta, dims, d):
    rng = np.random.default_rng(dims + d)
    n = 9
    table = rotary_table(theta, dims, 4096)
    positions = np.array([0, 1, 2, 7, 100, 999, 2048, 4094, 4095])
    checked = 0
    for _ in range(12):
        mid, rad = _box(rng, n, d)
        out = rotary_bounds(mid, rad, table, positions, layout)
        for t in (np.zeros((n, d)), np.ones((n, d)), rng.uniform(-1, 1, (n, d))):
            point = [[A(m) + A(s) * A(r) for m, s, r in zip(*row)] for row in zip(mid, t, rad)]
            for j, p in enumerate(positions):
                rotated = list(point[j])
                for i, (u, v) in enumerate(_pairs(dims, layout)):
                    c, s = _exact_angle_terms(theta, dims, int(p), i)
                    rotated[u] = point[j][u] * c - point[j][v] * s
                    rotated[v] = point[j][v] * c + point[j][u] * s
                for k, value in enumerate(rotated):  # |value − mid| ≤ rad, decided exactly
                    inside = abs(value - A(out.mid[j, k])) <= A(out.rad[j, k])
                    assert inside, (p, k, value, out.mid[j, k], out.rad[j, k])
                    checked += 1
    assert checked == 12 * 3 * n * d


def test_position_zero_is_the_identity_and_the_rest_passes_unchanged():
    table = rotary_table(10000.0, 4, 16)
    mid = np.arange(12.0).reshape(2, 6) / 7
    out = rotary_bounds(mid, np.zeros_like(mid), table, np.array([0, 5]))
    assert (out.mid[0] == mid[0]).all() and (out.rad[0] == 0).all()  # exact in, exact out
    assert (out.mid[:, 4:] == mid[:, 4:]).all() and (out.rad[:, 4:] == 0).all()
    assert (out.rad[1, :4] > 0).all()


def test_points_stay_tight():
    rng = np.random.default_rng(1)
    table = rotary_table(10000.0, 64, 512)
    mid = rng.normal(size=(3, 512, 64))
    out = rotary_bounds(mid, np.zeros_like(mid), table, np.arange(512))
    assert out.rad.max() <= 1e-15 * np.abs(mid).max() * 4


def test_non_finite_is_never_a_proof_and_bad_calls_are_refused():
    table = rotary_table(10000.0, 2, 4)
    out = rotary_bounds(np.array([[np.inf, 1.0]]), np.zeros((1, 2)), table, np.array([3]))
    assert np.all(out.rad == np.inf)
    with pytest.raises(ValueError, match="layout"):
        rotary_bounds(np.zeros((1, 2)), np.zeros((1, 2)), table, np.array([0]), "other")
    with pytest.raises(ValueError, match="wider than the head"):
        rotary_bounds(np.zeros((1, 1)), np.zeros((1, 1)), table, np.array([0]))
    with pytest.raises(ValueError, match=r"positions must lie in 0\.\.3"):
        rotary_bounds(np.zeros((1, 2)), np.zeros((1, 2)), table, np.array([4]))
