"""RMSNorm's rigorous enclosure (core.passes.activations.rms_norm_interval, issue 32) against an
exact Arb evaluation (tests.soundness.arb_reference.rms_norm) on hostile boxes: ε-scale and
underflowing variances, overflowing squares, one dominating coordinate, zero vectors, d = 1,
gemma's offset with w = −1; an unbounded box stays within √d·|offset + w|; points stay tight."""

from __future__ import annotations

import math

import numpy as np
import pytest
from flint import ctx

from headcount.core.passes.activations import rms_norm_interval
from tests.core.test_activation_bounds import A, _box_points, _random_box, inside
from tests.soundness import arb_reference as ref


@pytest.fixture(autouse=True)
def _arb_precision():
    old = ctx.prec
    ctx.prec = 2400  # every point of the boxes below is exact at this precision
    yield
    ctx.prec = old


def _random_norm(rng: np.random.Generator, d: int) -> tuple[np.ndarray, float, float]:
    w = rng.choice([1.0, -1.0, 0.5, 0.0, 3.0, 1e-300, 1e100, -2.5], size=d) * rng.choice([1.0, 1.1])
    eps = float(rng.choice([1e-6, 1e-12, 2.0**-1074, 1.0, 1e-300, 0.37]))
    offset = float(rng.choice([0.0, 1.0]))
    return w, eps, offset


@pytest.mark.parametrize("d", [1, 2, 3, 5, 8])
def test_rms_norm_interval_contains_exact_values(d):
    rng = np.random.default_rng(200 + d)
    checked = 0
    for _ in range(60):
        w, eps, offset = _random_norm(rng, d)
        mid, rad = _random_box(rng, d)
        lo, hi = rms_norm_interval(mid[None], rad[None], w, eps, offset)
        lo, hi = lo[0], hi[0]
        assert np.all(lo <= hi)
        for point in _box_points(mid, rad, rng):
            for i, value in enumerate(ref.rms_norm(point, w, eps, offset)):
                assert inside(value, lo[i], hi[i]), f"d={d} {i}: {value} ∉ [{lo[i]!r}, {hi[i]!r}]"
                checked += 1
    assert checked >= 60 * 5 * d


def test_gemma_offset_cancelling_the_weight_gives_zero():
    mid = np.array([[0.3, -2.0, 5.0]])
    lo, hi = rms_norm_interval(mid, np.zeros_like(mid), np.array([-1.0, -1.0, 0.0]), 1e-6, 1.0)
    assert (lo[0, :2] == 0).all() and (hi[0, :2] == 0).all()  # (1 + −1)·anything = 0 exactly
    assert lo[0, 2] < 5 / math.sqrt((0.09 + 4 + 25) / 3 + 1e-6) < hi[0, 2]


@pytest.mark.parametrize("d", [1, 2, 4, 9])
def test_rms_norm_of_an_unbounded_box_is_clamped(d):
    rng = np.random.default_rng(d)
    w = rng.normal(size=d)
    mids = np.array([np.zeros(d), np.full(d, np.nan), rng.normal(size=d), np.full(d, 1e308)])
    rads = np.array([np.full(d, np.inf), np.ones(d), np.where(np.arange(d) == 0, np.inf, 0.0),
                     np.full(d, 1e308)])  # fmt: skip
    lo, hi = rms_norm_interval(mids, rads, w, 1e-6)
    assert np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))
    reach = np.abs(w) * math.sqrt(d) * (1 + 1e-12) + 1e-300
    assert np.all(lo >= -reach) and np.all(hi <= reach)
    points = [[1e300] + [0.0] * (d - 1), [(-1.0) ** i * 1e200 * (i + 1) for i in range(d)]]
    for x, rows in zip(points, [(0, 1, 3), (0, 1)]):  # the boxes that hold each point
        exact = ref.rms_norm([A(v) for v in x], w, 1e-6)
        for row in rows:
            assert all(inside(v, a, b) for v, a, b in zip(exact, lo[row], hi[row]))


def test_nan_weights_are_never_a_proof():
    lo, hi = rms_norm_interval(
        np.ones((1, 3)), np.zeros((1, 3)), np.array([np.nan, 1.0, 1.0]), 1e-6
    )
    assert lo[0, 0] == -np.inf and hi[0, 0] == np.inf and np.isfinite(lo[0, 1:]).all()


def test_rms_norm_interval_is_tight_on_points():
    rng = np.random.default_rng(6)
    for d in (2, 3, 4, 16, 64):
        w = rng.normal(size=d)
        mid = rng.normal(size=(20, d)) * rng.choice([1e-3, 1.0, 1e3], size=(20, 1))
        lo, hi = rms_norm_interval(mid, np.zeros_like(mid), w, 1e-6)
        assert np.all(hi - lo <= 1e-13 * np.abs(w) * math.sqrt(d)), (d, (hi - lo).max())
