"""The rotary rotation as a rigorous enclosure (issue 32; not yet a part of the formal model): for
every x in a box and the true cos and sin of each position's angles (core.numbers.rotary_table's
boxes), the rotated vector lies in the box returned.

Each rotated pair (a, b) at position p and frequency i becomes (a·c − b·s, b·c + a·s), c and s the
table's entries. One output is a two-term dot product of boxes: its float midpoint is within
γ_2·(|a_m c_m| + |b_m s_m|) + 4·2^-1074 of the product of the midpoints (three roundings, two
products that may underflow), and each exact product a·c over its boxes is within |a_m|·c_r +
a_r·|c_m| + a_r·c_r of a_m·c_m. The radius is inflated (core.numbers.inflate) for its own rounding.
Where the table is exact (p = 0: c = 1, s = 0) the rotation is the identity and keeps its radius,
so an exact input stays exact. Layouts: "rotate_half" pairs entry i with i + dims/2 (NeoX, Llama),
"interleaved" pairs 2i with 2i + 1 (GPT-J); entries past table.dims pass unchanged.
"""

from __future__ import annotations

import numpy as np

from headcount.core.numbers import TINY, Box, RotaryTable, gamma, inflate

LAYOUTS = ("rotate_half", "interleaved")


def rotary_pairs(dims: int, layout: str) -> tuple[np.ndarray, np.ndarray]:
    """(first, second): the entries of each rotated pair of a layout (the module docstring)."""
    if layout == "rotate_half":
        first = np.arange(dims // 2)
        return first, first + dims // 2
    if layout == "interleaved":
        first = np.arange(0, dims, 2)
        return first, first + 1
    raise ValueError(f"unknown rotary layout {layout!r}: use one of {LAYOUTS}")


def _spread(a_m, a_r, c_m, c_r):
    """max |a·c − a_m·c_m| over the boxes a_m ± a_r, c_m ± c_r (before rounding)."""
    return np.abs(a_m) * c_r + a_r * np.abs(c_m) + a_r * c_r


def rotary_bounds(
    mid: np.ndarray,
    rad: np.ndarray,
    table: RotaryTable,
    positions: np.ndarray,
    layout: str = "rotate_half",
) -> Box:
    """The box of the rotated x for every x in (mid, rad) [.. n d_head], row j at position
    positions[j] (module docstring); ValueError for a layout not in LAYOUTS, a rotary part wider
    than the head, or a position outside the table."""
    first, second = rotary_pairs(table.dims, layout)
    positions = np.asarray(positions)
    if table.dims > mid.shape[-1]:
        raise ValueError(f"the rotary part ({table.dims}) is wider than the head ({mid.shape[-1]})")
    if positions.size and (positions.min() < 0 or positions.max() >= table.n):
        raise ValueError(f"positions must lie in 0..{table.n - 1}, the table's")
    c_m, c_r = table.cos.mid[positions], table.cos.rad[positions]  # [n dims/2]
    s_m, s_r = table.sin.mid[positions], table.sin.rad[positions]
    a_m, a_r = mid[..., first], rad[..., first]
    b_m, b_r = mid[..., second], rad[..., second]
    identity = (c_r == 0) & (s_r == 0) & (c_m == 1) & (s_m == 0)
    out_mid, out_rad = np.array(mid, dtype=np.float64), np.array(rad, dtype=np.float64)
    with np.errstate(all="ignore"):
        for index, (x_m, x_r), (y_m, y_r), sign in (
            (first, (a_m, a_r), (b_m, b_r), -1.0),  # a·c − b·s
            (second, (b_m, b_r), (a_m, a_r), 1.0),  # b·c + a·s
        ):
            value = x_m * c_m + sign * (y_m * s_m)
            error = _spread(x_m, x_r, c_m, c_r) + _spread(y_m, y_r, s_m, s_r)
            error += gamma(2) * (np.abs(x_m * c_m) + np.abs(y_m * s_m)) + 4 * TINY
            out_mid[..., index] = np.where(identity, x_m, value)
            out_rad[..., index] = np.where(identity, x_r, inflate(error))
    return Box(out_mid, out_rad)
