"""The passes of the one-layer table form (core.model.table): its residual stream in any precision
mode, and rigorous bounds on it, straight from the tables (no weights).
"""

from __future__ import annotations

import numpy as np

from headcount.core.attention import attend, attention_bounds
from headcount.core.model import OneLayerTable
from headcount.core.numbers import FLOAT64, Precision, add_bounds, quantize_bounds


def _lookup(table: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """table[..., pos, token, :] gathered at each (pos, token) of a [batch pos] array."""
    pos = np.arange(tokens.shape[1])[None, :]
    return table[..., pos, tokens, :]


def table_residual(
    table: OneLayerTable,
    tokens: np.ndarray,
    prec: Precision = FLOAT64,
    patterns: list[np.ndarray] | None = None,
) -> np.ndarray:
    """x_i + Σ_h head_h(i): the vector ψ_out reads, [batch pos d_model]. With a list `patterns`,
    each head's attention weights [batch query key] are appended to it (analysis only)."""
    dt = prec.compute_dtype
    rp = lambda a: prec.at_rounding_point(prec.after_op(a.astype(dt)))  # noqa: E731
    x = rp(_lookup(table.embed, tokens))
    update = np.zeros_like(x)
    for h in range(table.heads_per_layer[0]):
        q, k, v = (
            rp(_lookup(table.Q[h], tokens)),
            rp(_lookup(table.K[h], tokens)),
            rp(_lookup(table.V[h], tokens)),
        )
        update = prec.after_op(update + rp(attend(q, k, v, table.mask, prec, patterns=patterns)))
    return prec.after_op(x + update)


def table_residual_bounds(table: OneLayerTable, tokens: np.ndarray, prec: Precision):
    """Rigorous (mid, rad) of the vector ψ_out reads (see headcount.core.passes.bounds)."""

    def rp(a):
        mid, rad = a, np.zeros_like(a)  # table entries are exact float64 numbers
        return quantize_bounds(mid, rad, prec.bits) if prec.kind == "fixed" else (mid, rad)

    x = rp(_lookup(table.embed, tokens))
    update = (np.zeros_like(x[0]), np.zeros_like(x[0]))
    for h in range(table.heads_per_layer[0]):
        z = attention_bounds(
            rp(_lookup(table.Q[h], tokens)),
            rp(_lookup(table.K[h], tokens)),
            rp(_lookup(table.V[h], tokens)),
            table.mask,
        )
        z = quantize_bounds(*z, prec.bits) if prec.kind == "fixed" else z
        update = add_bounds(*update, *z)
    return add_bounds(*x, *update)
