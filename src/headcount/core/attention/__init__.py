"""One attention head's softmax(scale·q kᵀ) v, in floats and as rigorous bounds: the public face of
the kernels, and their ONE dispatch.

`attend` (float, any precision mode) and `attention_bounds` (rigorous boxes, float64) choose the
implementation here and nowhere else, from the two settings of core.attention.settings:

* the algorithm — "blocked" (the default: query blocks, masked keys never computed, near keys
  gathered sparsely, far keys bounded as a group) or "reference" (the dense [batch query key]
  algorithm of the first release, kept so that tests and benchmarks can compare the two);
* the backend — NumPy, or PyTorch on the CPU or a CUDA device (core.attention.torch_backend: the
  same blocked algorithms step for step; torch is imported on first use).

Modules: blocks (masks, query blocks, cut constants), floats (NumPy float kernels), softmax_bound
(the rigorous bound, written once for NumPy arrays and torch tensors, over array_ops' few
primitives) and blocked_bound (the same in query blocks), pruning (certified key pruning: the
keys a block need not score, issue 34), rigorous (its NumPy face and NumPy's libm check),
torch_backend (the torch float kernel, the bound on a device, torch's platform checks), settings,
counters (work counters of the shortcuts).
"""

from __future__ import annotations

import numpy as np

from headcount.core.attention import torch_backend
from headcount.core.attention.blocks import (
    ATTENTION_BLOCK,
    BLOCK_ENTRIES,
    causal_mask,
    exp_shifted,
    mask_bias,
    mask_diagonal,
    negligible_cut,
    query_blocks,
)
from headcount.core.attention.counters import ATTENTION, FLOAT, TIES, Counters
from headcount.core.attention.floats import (
    blocked_attend,
    dense_attend,
    float_work,
    reset_float_work,
    softmax_values,
)
from headcount.core.attention.rigorous import (
    FAR,
    FAR_WEIGHT,
    RHO_CAP,
    attention_work,
    blocked_attention_bounds,
    check_libm,
    dense_attention_bounds,
    reset_attention_work,
    weight_error,
)
from headcount.core.attention.settings import (
    ALGORITHMS,
    BACKENDS,
    DEVICES,
    current_algorithm,
    use_algorithm,
    use_backend,
)
from headcount.core.attention.settings import current_backend as _current_backend
from headcount.core.attention.torch_backend import attention_backend, check_torch_libm
from headcount.core.numbers import Precision

__all__ = [
    "ALGORITHMS",
    "ATTENTION",
    "ATTENTION_BLOCK",
    "BLOCK_ENTRIES",
    "BACKENDS",
    "DEVICES",
    "FAR",
    "FAR_WEIGHT",
    "FLOAT",
    "RHO_CAP",
    "TIES",
    "Counters",
    "attend",
    "attention_backend",
    "attention_bounds",
    "attention_work",
    "causal_mask",
    "check_libm",
    "check_torch_libm",
    "chunk_threads_help",
    "current_algorithm",
    "dense_attend",
    "dense_attention_bounds",
    "exp_shifted",
    "float_work",
    "mask_bias",
    "mask_diagonal",
    "negligible_cut",
    "query_blocks",
    "reset_attention_work",
    "reset_float_work",
    "softmax_values",
    "use_algorithm",
    "use_backend",
    "weight_error",
]


def attend(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: str | None,
    prec: Precision,
    scale: float = 1.0,
    patterns: list[np.ndarray] | None = None,
) -> np.ndarray:
    """softmax(scale·q kᵀ) v [.. query d_value] with the `mask` ("causal"; "full" or None: every
    query sees every key), in the precision mode `prec`; `patterns`, when given, receives the
    attention weights (for analysis: the dense kernel computes them). The dense kernel also serves
    the reference algorithm and short sequences (one block); otherwise the blocked kernel of the
    current backend runs."""
    n = q.shape[-2]
    if patterns is not None or current_algorithm() == "reference" or n <= ATTENTION_BLOCK:
        return dense_attend(q, k, v, mask, prec, scale, patterns)
    backend, device = _current_backend()
    if backend == "torch":
        return torch_backend.torch_attend(q, k, v, mask, prec, scale, device)
    return blocked_attend(q, k, v, mask, prec, scale)


def attention_bounds(q, k, v, mask: str):
    """Rigorous bounds (mid, rad) [batch query d_value] on softmax(q kᵀ) v for q, k, v given as
    (mid, rad) pairs [batch pos d], `mask` "causal" or "full": the dense bound under the reference
    algorithm, else the blocked bound of the current backend (the same guarantee;
    core.attention.rigorous has the proof)."""
    if current_algorithm() == "reference":
        n, keys = q[0].shape[-2], k[0].shape[-2]
        allowed = causal_mask(n) if mask == "causal" else np.ones((n, keys), bool)
        return dense_attention_bounds(q, k, v, allowed)
    backend, device = _current_backend()
    if backend == "torch":
        return torch_backend.torch_attention_bounds(q, k, v, mask, device)
    return blocked_attention_bounds(q, k, v, mask)


def chunk_threads_help() -> bool:
    """Whether headcount's own chunk threads speed up the kernels: with NumPy, yes; the torch
    backend runs its own threads (and one CUDA device serves every chunk), so chunks go one after
    another there."""
    return _current_backend()[0] != "torch"
