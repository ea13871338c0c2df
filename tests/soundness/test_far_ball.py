"""The far-key ball of exact tie settling (core.passes.head_rounding._far_keys_ball: from FAR_FROM
keys, keys far below the top score are bounded as one ball and only the near ones are taken
exactly) against its reference, the same row with every key taken exactly (FAR_FROM out of reach).

Hostile family, built for that shortcut: 1,024–1,400 keys on the 2^-p grid (p = 8..40), a top
group of keys tied or a few grid steps apart whose values average to a rounding tie point or one
grid step of 2^-(2p+1) beside it, and far keys placed just beyond the cut T (and just inside it)
with values up to 2^p — the most a far key may move the output — and, for some rows, far keys
alone on one side of the tie. The two must give the same box (mid and radius) every time; the ball
must be taken on some rows and left (a near tie) on others.

Default: FAST_ROWS rows; the slow set (`-m slow`): HEADCOUNT_FAR_BALL_ROWS (default 2,000).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from headcount.core.attention import TIES
from headcount.core.passes import head_rounding
from headcount.core.passes.head_rounding import exact_head_row

FAST_ROWS = 24
SLOW_ROWS = int(os.environ.get("HEADCOUNT_FAR_BALL_ROWS", "2000"))


def _row(rng: np.random.Generator):
    """(q_row, k, v, W_O, bits) of one hostile row (module docstring)."""
    bits = int(rng.integers(8, 41))
    step = 2.0**-bits
    keys = int(rng.integers(1024, 1401))
    d_head = int(rng.integers(1, 3))
    q = np.zeros(d_head)
    q[0] = 1.0
    # scores are k[:, 0]: a top group, then far keys around the cut the split would pick
    top = float(rng.integers(0, 4)) * step
    k = np.zeros((keys, d_head))
    group = int(rng.integers(1, 4))
    k[:group, 0] = top - step * rng.integers(0, 3, size=group)
    if d_head > 1:
        k[:, 1] = np.round(rng.normal(size=keys) / step) * step
        q[1] = 0.0  # a coordinate the scores do not read: only magnitudes change
    v = np.zeros((keys, 1))
    tie = (2 * int(rng.integers(-50, 50)) + 1) * 2.0 ** -(bits + 1)
    offset = float(rng.choice([0.0, 2.0 ** -(2 * bits + 1), -(2.0 ** -(2 * bits + 1))]))
    v[:group, 0] = np.round((tie + offset) / step) * step  # the group averages near the tie
    if group > 1:
        v[0, 0] += step
        v[1, 0] -= step
    far_value = float(rng.choice([1.0, -1.0])) * 2.0 ** float(rng.integers(0, bits + 1))
    v[group:, 0] = far_value if rng.random() < 0.7 else rng.choice([-1.0, 1.0], keys - group)
    W_O = np.array([[float(rng.choice([1.0, 0.5, 3.0, -2.0]))]])
    # the cut T of head_rounding._far_split for these values: far keys a few grid steps either side
    spread = 2.0 * keys * float((np.abs(v) @ np.abs(W_O)).max()) * 2.0 ** (bits + 1) + 1.0
    cut = np.log(spread) + head_rounding.FAR_MARGIN_BITS * np.log(2) + 1.0
    cut += float(rng.choice([0.0, 0.0, -5.0, 10.0]))  # mostly at the cut, some well inside/out
    far_scores = top - cut + step * rng.integers(-8, 9, size=keys - group)
    k[group:, 0] = np.round(far_scores / step) * step
    return q, k, v, W_O, bits


def _compare(rows: int, seed: int) -> tuple[int, int]:
    """(rows that took the ball, rows that fell back); fails on the first difference."""
    rng = np.random.default_rng(seed)
    took = fell = 0
    for _ in range(rows):
        case = _row(rng)
        before = TIES.snapshot()["far_balls"]
        fast = exact_head_row(*case)
        used = TIES.snapshot()["far_balls"] - before
        saved = head_rounding.FAR_FROM
        head_rounding.FAR_FROM = 10**12
        try:
            full = exact_head_row(*case)
        finally:
            head_rounding.FAR_FROM = saved
        assert np.array_equal(fast[0], full[0]) and np.array_equal(fast[1], full[1]), case[-1]
        took += used
        fell += 1 - used
    return took, fell


def test_far_ball_equals_every_key_exactly():
    took, fell = _compare(FAST_ROWS, 0)
    assert took > 0 and fell > 0, (took, fell)


@pytest.mark.slow
def test_far_ball_equals_every_key_exactly_slow_set():
    took, fell = _compare(SLOW_ROWS, 1)
    print(f"far ball: {took} rows by the ball, {fell} fell back to every key")
    assert took > 0 and fell > 0
