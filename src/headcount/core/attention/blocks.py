"""The shape of the blocked attention kernels, shared by the float and the rigorous pass and by both
backends: the causal mask (cached per length), query blocks (masked keys never computed), and the
cuts that decide which keys a float sum may leave out.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator

import numpy as np


@functools.lru_cache(maxsize=16)
def cached_masks(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(allowed, bias, hidden) [pos pos]: the causal mask, its additive bias, and its complement."""
    allowed = np.tri(n, dtype=bool)
    bias = np.where(allowed, 0.0, -np.inf)
    hidden = ~allowed
    for a in (allowed, bias, hidden):
        a.setflags(write=False)
    return allowed, bias, hidden


EXP_UNDERFLOW = (
    -745.2
)  # exp(x) rounds to 0 in float64 below this; numpy's exp is slow on such inputs


def exp_shifted(shifted: np.ndarray) -> np.ndarray:
    """exp of max-shifted scores (all ≤ 0), skipping entries whose exp underflows to 0 anyway: the
    same bits as np.exp, several times faster for sharp attention (most entries far below the
    max)."""
    out = np.zeros_like(shifted)
    np.exp(shifted, out=out, where=shifted > EXP_UNDERFLOW)
    return out


def causal_mask(n: int) -> np.ndarray:
    """[pos pos] True where key j may be attended from query i (j ≤ i). Read-only, cached per n."""
    return cached_masks(n)[0]


def mask_bias(n: int, mask: str) -> np.ndarray | None:
    """[pos pos] additive score bias: 0 where key j is visible from query i, -inf elsewhere."""
    if mask == "full":
        return None
    return cached_masks(n)[1]


ATTENTION_BLOCK = 256  # queries per block: a block's [batch block keys] scores stay in cache


def query_blocks(
    n: int, causal: bool, block: int = ATTENTION_BLOCK, keys: int | None = None
) -> Iterator[tuple[int, int, int]]:
    """(start, stop, keys) of each block of n queries: queries start..stop−1 see keys 0..keys−1 (the
    causal mask hides every later key, so those scores are never computed; without a mask every
    query sees all `keys`, n by default)."""
    for start in range(0, n, block):
        stop = min(n, start + block)
        yield start, stop, stop if causal else (n if keys is None else keys)


# A block scored in full ([rows keys] per head, several float64 copies while it is bounded) is split
# into parts of at most this many entries: 256 queries over 65536 keys, 128 MiB a copy. Below
# n = 65536 nothing is split; at n = 2^20 a part has 16 queries, so the memory of a dense block no
# longer grows with n (induction.construction.evaluation_bytes counts it).
BLOCK_ENTRIES = ATTENTION_BLOCK * 2**16


def dense_parts(
    start: int, stop: int, keys: int, causal: bool, batch: int = 1
) -> Iterator[tuple[int, int, int]]:
    """query_blocks' block start..stop−1 (seeing keys 0..keys−1) as (start, stop, keys) parts of at
    most BLOCK_ENTRIES [batch query key] entries each (at least one query a part): causal parts see
    keys up to their own last query only."""
    rows = max(1, min(stop - start, BLOCK_ENTRIES // max(1, keys * batch)))
    for lo in range(start, stop, rows):
        hi = min(stop, lo + rows)
        yield lo, hi, hi if causal else keys


def mask_diagonal(scores: np.ndarray, start: int, stop: int) -> None:
    """Set the masked entries of a causal query block's scores [.. block keys] to −inf (only the
    square of keys start..stop−1 holds any: earlier keys are all visible, later ones are not in the
    block)."""
    np.copyto(scores[..., start:stop], -np.inf, where=cached_masks(stop - start)[2])


SPARSE_SHARE = 0.6  # a block where more of the keys than this are kept is evaluated densely
NEGLIGIBLE_BITS = (
    72  # the keys left out of a sparse float sum weigh < 2^-72 of its top key, all together
)
# ... and a row keeps them out only where they move no output coordinate by more than this share of
# the coordinate's kept mass Σ_kept w_j|v_jc| (2^-10 of the unit roundoff: far inside the rounding
# error any float64 evaluation of the sum may make)
LEFT_OUT_SHARE = 2.0**-63


def negligible_cut(keys: int) -> float:
    """c such that the keys with s ≥ max + c are a superset of those whose weight e^{s − max}
    exceeds 2^-NEGLIGIBLE_BITS / keys (and never below exp's underflow), for |max| < 2^40 (where the
    threshold's rounding is ≪ 1)."""
    return max(EXP_UNDERFLOW, -NEGLIGIBLE_BITS * math.log(2) - math.log(keys)) - 1
