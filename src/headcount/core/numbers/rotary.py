"""Rotary position tables as rigorous enclosures (issue 32): cos and sin of p·θ^(−2i/dims) for
positions p < n and frequencies i < dims/2, each a float64 midpoint and radius computed from an Arb
ball — so no libm enters the proof, and the float64 model and the bound passes read one table.

Every entry is evaluated by python-flint at WORKING_BITS bits: θ (a float64, exact in Arb) raised to
the exact rational −2i/dims, times the exact integer p, then sin_cos. The midpoint is the ball's
centre rounded to float64; the radius is an exact Arb bound on the distance from it to every point
of the ball, rounded up — 0 only where the value is exactly representable (p = 0: cos 1, sin 0).
Tables are cached per (θ, dims, n) and read-only.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import flint
import numpy as np

from headcount.core.numbers.arb import FLINT_LOCK
from headcount.core.numbers.interval import Box

WORKING_BITS = 128  # angles reach n ≤ 2^31 radians: 128 bits leave ~90 correct bits in each entry
MAX_ENTRIES = 2**25  # n · dims/2 entries per table (~3 µs each); more is refused, not allocated


@dataclass(frozen=True, eq=False)
class RotaryTable:
    """cos and sin of p·θ^(−2i/dims) as enclosures, each [n, dims // 2] (position, frequency)."""

    theta: float
    dims: int
    cos: Box
    sin: Box

    @property
    def n(self) -> int:
        return self.cos.mid.shape[0]


def _check(theta: float, dims: int, n: int) -> None:
    if not (isinstance(theta, float) and math.isfinite(theta) and theta > 0):
        raise ValueError(f"rotary θ must be a positive finite float, got {theta!r}")
    if not (isinstance(dims, int) and dims >= 2 and dims % 2 == 0):
        raise ValueError(f"the rotary part of a head must be an even number ≥ 2, got {dims!r}")
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"a rotary table needs n ≥ 1 positions, got {n!r}")
    if n * (dims // 2) > MAX_ENTRIES:
        raise ValueError(
            f"a rotary table of {n:,} positions × {dims // 2} frequencies is more than "
            f"{MAX_ENTRIES:,} entries"
        )


def _to_float(ball: flint.arb) -> tuple[float, float]:
    """(mid, rad) in float64 with the ball inside [mid − rad, mid + rad]: the bound on |ball − mid|
    is an exact Arb number, and rad is the float64 at or above it (compared exactly)."""
    mid = float(ball.mid())
    bound = (ball - flint.arb(mid)).abs_upper()  # exact: the radius and the centre's rounding
    if bound == 0:
        return mid, 0.0
    rad = float(bound)
    if flint.arb(rad) < bound:
        rad = math.nextafter(rad, math.inf)
    return mid, rad


def rotary_table(theta: float, dims: int, n: int) -> RotaryTable:
    """The table for θ, a rotary part of `dims` entries per head and positions 0..n−1 (module
    docstring); ValueError for θ not positive and finite, odd or too small `dims`, n < 1, or more
    than MAX_ENTRIES entries."""
    theta = float(theta) if isinstance(theta, int) and not isinstance(theta, bool) else theta
    _check(theta, dims, n)
    return _cached(theta, dims, n)


@functools.lru_cache(maxsize=16)
def _cached(theta: float, dims: int, n: int) -> RotaryTable:
    half = dims // 2
    arrays = [np.zeros((n, half)) for _ in range(4)]  # cos mid, cos rad, sin mid, sin rad
    with FLINT_LOCK:
        saved = flint.ctx.prec
        flint.ctx.prec = WORKING_BITS
        try:
            base = flint.arb(theta)
            for i in range(half):
                frequency = base ** flint.arb(flint.fmpq(-2 * i, dims))
                for p in range(n):
                    sin, cos = (frequency * p).sin_cos()
                    arrays[0][p, i], arrays[1][p, i] = _to_float(cos)
                    arrays[2][p, i], arrays[3][p, i] = _to_float(sin)
        finally:
            flint.ctx.prec = saved
    for a in arrays:
        a.setflags(write=False)
    return RotaryTable(theta, dims, Box(arrays[0], arrays[1]), Box(arrays[2], arrays[3]))
