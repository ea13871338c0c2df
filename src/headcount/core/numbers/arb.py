"""Exact integer and ball arithmetic shared by the exact passes: float64 arrays as dyadic integers,
exact integer matrix products through python-flint, and the one lock around flint's global working
precision.
"""

from __future__ import annotations

import threading

import flint
import numpy as np

FLINT_LOCK = threading.Lock()  # flint's working precision is global: platform checks hold this lock


def dyadic(a: np.ndarray) -> tuple[np.ndarray, int]:
    """(ints, e) with a == ints / 2^e exactly (object array of Python ints, e ≥ 0 the smallest
    such). ValueError for NaN or infinite weights: the real-arithmetic model is undefined there."""
    a = np.asarray(a, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(
            "exact evaluation needs finite weights (the model has NaN or infinite entries)"
        )
    ratios = [v.as_integer_ratio() for v in a.ravel().tolist()]
    e = max((den.bit_length() - 1 for _, den in ratios), default=0)
    ints = [num << (e - den.bit_length() + 1) for num, den in ratios]
    return np.array(ints + [0], dtype=object)[:-1].reshape(a.shape), e


def int_array(values: list, shape: tuple[int, ...]) -> np.ndarray:
    """An object array of Python ints (the trailing sentinel stops numpy from nesting lists)."""
    return np.array(list(values) + [0], dtype=object)[:-1].reshape(shape)


def fmpz_mat(a: np.ndarray) -> flint.fmpz_mat:
    return flint.fmpz_mat(a.shape[0], a.shape[1], a.ravel().tolist())


def int_matmul(a: np.ndarray, b: flint.fmpz_mat) -> np.ndarray:
    """Exact product of an object int array [rows k] with an fmpz_mat [k cols]."""
    if a.shape[0] == 0 or b.ncols() == 0 or a.shape[1] == 0:
        return int_array([0] * (a.shape[0] * b.ncols()), (a.shape[0], b.ncols()))
    product = fmpz_mat(a) * b
    return int_array([int(v) for v in product.entries()], (a.shape[0], b.ncols()))
