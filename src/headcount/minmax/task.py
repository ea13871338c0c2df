"""The min/max task on lists over [M] = {1..M} (tokens are 1-based, as in spec/minmax.md).

Inputs are int arrays ``x [batch n]``. Because one attention head without positions sees a list only
through its histogram, the verifiers work with multisets (sorted lists) and histograms. The size
rule (M ≥ 2 and n ≥ 2) is checked here, once, for every command and the Python API
(``check_sizes``).
"""

from __future__ import annotations

import itertools
from math import comb, exp, lgamma

import numpy as np

from headcount.common.errors import InputError, param

#: refuse to enumerate more multisets than this (they are held in memory as one array)
MAX_ENUMERATE = 5_000_000
#: Largest M (the parameter M): the construction's scores β·ω are exact float64 numbers only for ω ≤
#: 2^26 (β is a multiple of 2^-20 below 2^6, construction.py); every command's memory and work
#: bounds stop far earlier.
MAX_M = 2**26
#: Largest n (the parameter n): β = ln(4(n−1)) stays below 2^6 = 64 (the same exactness) for n ≤
#: 2^60.
MAX_N = 2**60


def check_sizes(M: int, n: int) -> None:
    """InputError (one line) unless 2 ≤ M ≤ MAX_M and 2 ≤ n ≤ MAX_N are integers: the one place of
    the size rule."""
    if isinstance(M, bool) or not isinstance(M, (int, np.integer)) or M < 2:
        raise InputError(f"bad M={M!r}: the token range [M] = {{1..M}} needs an integer M ≥ 2")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise InputError(f"bad n={n!r}: the list length needs an integer n ≥ 2")
    if M > MAX_M:
        raise InputError(
            f"{param('M')} {M} is too large: allowed up to 2^26 = {MAX_M} (exact float64 scores)"
        )
    if n > MAX_N:
        raise InputError(
            f"{param('n')} {n} is too large: allowed up to 2^60 = {MAX_N} (exact float64 scores)"
        )


def check_task(task: str) -> str:
    """`task` if it is "min" or "max" (InputError otherwise)."""
    if task not in ("min", "max"):
        raise InputError(f"unknown task {task!r}: use 'min' or 'max'")
    return task


def check_tokens(x: np.ndarray, M: int) -> np.ndarray:
    """x as an int64 array [batch n] with every entry in 1..M (InputError otherwise)."""
    x = np.asarray(x)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2 or x.shape[1] == 0:
        raise InputError(f"lists must be an int array [batch n] with n ≥ 1, got shape {x.shape}")
    if x.size and (not np.issubdtype(x.dtype, np.integer) or x.min() < 1 or x.max() > M):
        raise InputError(f"tokens must be integers in 1..{M}")
    return x.astype(np.int64)


def min_max(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reference answers: (min over each list [batch], max over each list [batch])."""
    x = np.asarray(x)
    if x.ndim == 1:
        x = x[None, :]
    return x.min(axis=1), x.max(axis=1)


def count_multisets(M: int, n: int) -> int:
    """Number of multisets of size n over [M] = C(n+M−1, n) (a Python int, exact)."""
    return comb(n + M - 1, n)


def estimate_multisets(M: int, n: int) -> float:
    """C(n+M−1, n) as a float (+inf when it overflows), from log-gamma: cheap at any size, for the
    resource checks that come before the exact count (which is a huge integer when M and n are both
    large)."""
    log_count = lgamma(n + M) - lgamma(n + 1) - lgamma(M)
    return exp(log_count) if log_count < 700 else float("inf")


def all_multisets(M: int, n: int) -> np.ndarray:
    """Every sorted list of n tokens from 1..M, lexicographic order: int64 [C(n+M−1, n) n].

    These are all the inputs one position-free head can distinguish (it sees only the histogram).
    """
    if M < 1 or n < 1:
        raise InputError(f"all_multisets needs M ≥ 1 and n ≥ 1, got M={M}, n={n}")
    total = count_multisets(M, n)
    if total > MAX_ENUMERATE:
        raise InputError(
            f"C(n+M−1, n) = {total} multisets for M={M}, n={n}: more than {MAX_ENUMERATE} to "
            "enumerate"
        )
    flat = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations_with_replacement(range(1, M + 1), n)),
        dtype=np.int64,
        count=total * n,
    )
    return flat.reshape(total, n)


def histograms(x: np.ndarray, M: int) -> np.ndarray:
    """h[b, ω−1] = #{j : x[b, j] = ω}: int64 [batch M]."""
    x = check_tokens(x, M)
    batch = x.shape[0]
    h = np.zeros((batch, M), dtype=np.int64)
    np.add.at(h, (np.repeat(np.arange(batch), x.shape[1]), x.ravel() - 1), 1)
    return h
