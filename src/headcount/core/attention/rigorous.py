"""Rigorous bounds on one attention head's output softmax(q kᵀ) v for q, k, v given as boxes of
NumPy arrays, and the check of NumPy's libm they rest on.

The bound itself is core.attention.softmax_bound's (written once for NumPy arrays and torch tensors;
the proofs are there); core.passes.bounds states the error model. Two algorithms with the same
guarantee:

* ``dense_attention_bounds`` — the reference (the algorithm of the first release): one [batch query
  key] array per quantity, the masked half included.
* ``blocked_attention_bounds`` — the same bound computed in query blocks (only the keys a block can
  see, memory O(block·n)), with the near keys of each query gathered sparsely and the far keys
  accounted for as a group, never exponentiated.
"""

from __future__ import annotations

import numpy as np

from headcount.core.attention.blocked_bound import blocked_bound
from headcount.core.attention.counters import ATTENTION
from headcount.core.attention.softmax_bound import (
    FAR,
    FAR_WEIGHT,
    LIBM_ULPS,
    RHO_CAP,
    arb_precision,
    check_values,
    dense_bound,
    libm_points,
    terms_of,
    weight_error,
)
from headcount.core.numbers import FLINT_LOCK

__all__ = [
    "FAR",
    "FAR_WEIGHT",
    "LIBM_ULPS",
    "RHO_CAP",
    "attention_work",
    "blocked_attention_bounds",
    "check_libm",
    "dense_attention_bounds",
    "reset_attention_work",
    "weight_error",
]

_libm_checked: list[bool] = []
_libm_lock = FLINT_LOCK  # chunks are bounded on several threads; flint's precision is global


def check_libm() -> None:
    """Check the one assumption about the platform that the softmax bounds rest on — np.exp and
    np.expm1 within LIBM_ULPS ulp — against Arb balls on softmax_bound.libm_points, the ranges they
    are used on (once per process, about 20 ms). A machine where it fails gets an InternalError,
    never a certificate."""
    with _libm_lock:
        if not _libm_checked:
            _check_libm()


def _check_libm() -> None:
    import flint

    with arb_precision():
        for fn, arb_fn, points in zip(
            (np.exp, np.expm1), (flint.arb.exp, flint.arb.expm1), libm_points()
        ):
            exact = [arb_fn(flint.arb(x)) for x in points.tolist()]
            check_values(f"np.{fn.__name__}", points, fn(points), exact)
    _libm_checked.append(True)


def dense_attention_bounds(q, k, v, allowed: np.ndarray):
    """Bounds (mid, rad) [batch query d_value] on softmax(q kᵀ) v for q, k, v given as (mid, rad)
    pairs of NumPy arrays [batch pos d], `allowed` [query key] the keys each query sees:
    softmax_bound.dense_bound."""
    check_libm()
    (qm, qr), (km, kr), (_, vr) = q, k, v
    return dense_bound(q, k, v, allowed, terms_of(qm, qr, km, kr, vr))


def blocked_attention_bounds(q, k, v, mask: str):
    """Bounds (mid, rad) [batch query d_value] on softmax(q kᵀ) v for q, k, v given as (mid, rad)
    pairs of NumPy arrays [batch pos d], `mask` "causal" or "full": blocked_bound.blocked_bound, the
    bound of dense_attention_bounds computed per query block."""
    check_libm()
    return blocked_bound((q, k, v), (q, k, v), mask)


def attention_work() -> dict[str, int]:
    """Counts since the process started (or the last reset_attention_work) of the blocked rigorous
    pass: `score_entries` the visible (query, key) pairs it bounded, `computed` those whose score it
    computed, `exponentiated` those it exponentiated (the near keys and every key of a dense block);
    the rest were accounted for as far keys without an exponential. `tame_heads` / `scanned_heads`:
    heads whose scores were shown finite and below 2^40 from q and k alone, or were scanned block by
    block (core.attention.counters)."""
    return ATTENTION.snapshot()


def reset_attention_work() -> None:
    ATTENTION.reset()
