"""The one-layer table of a weight-form model at one precision p whose fixed:p model IS the weight
model's fixed:p model (core.model.table has the table form and the real-arithmetic conversion,
table_from_weights, whose fixed:p rounding points are not the model's). Its entries are the model's
own rounded values, computed with the exact evaluator's integer arithmetic
(core.passes.exact_fixed); where no float64 table can hold them, or the weight form's unrounded
v·W_O is not a table's rounded Ṽ, the conversion refuses (NoExactTable).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np

from headcount.common.errors import InputError
from headcount.common.validate import check_int
from headcount.core.model import OneLayerTable, Transformer, check_plain
from headcount.core.passes.exact_fixed import MAX_BITS, TransformerPass
from headcount.core.passes.head_rounding import int_matmul


class NoExactTable(InputError):
    """table_at_precision's refusal of a model whose fixed:p rounding points no float64 table has (a
    v·W_O off the 2^-p grid or outside [−2^p, 2^p], or a grid value of more than 53 significant
    bits), as distinct from a model that is not a one-layer plain model at all. A caller that only
    needs a search guide may fall back to table_from_weights on this one
    (induction.lower_bound.refute); a caller whose numbers are the model's must refuse."""


# Bytes per exact grid value while table_at_precision works (an object-array slot, a Python int of
# up to 2p+1 bits, the fmpz_mat product and list copies it goes through), and per float64 table
# entry it returns.
EXACT_ENTRY_BYTES = 256


def table_at_precision_bytes(model: Transformer, n_ctx: int, alphabet: int) -> float:
    """Memory of table_at_precision(model, p, n_ctx, alphabet): the exact weights and grid values
    (per head q, k, v and v·W_O at every (position, token)) and the float64 table it returns."""
    d = model.d_model
    heads = model.layers[0].heads if model.layers else ()
    weights = (alphabet + n_ctx) * d + sum(
        h.W_Q.size + h.W_K.size + h.W_V.size + h.W_O.size for h in heads
    )
    per_cell = d + sum(2 * h.W_Q.shape[1] + h.W_V.shape[1] + d for h in heads)
    width = max((h.W_Q.shape[1] for h in heads), default=1)
    table = 8.0 * n_ctx * alphabet * (d + len(heads) * (2 * width + d))
    return EXACT_ENTRY_BYTES * (weights + float(n_ctx) * alphabet * per_cell) + table


def _grid_floats(N: np.ndarray, bits: int, what: str) -> np.ndarray:
    """The float64 numbers N/2^p of grid ints N [token pos …] (object array); NoExactTable where one
    is not a float64 number (more than 53 significant bits)."""
    ints = N.ravel().tolist()
    nearest = [float(v) for v in ints]  # |v| ≤ 2^{2p}: rounded to nearest, never overflowing
    for index, (v, f) in enumerate(zip(ints, nearest)):
        if int(f) != v:
            raise NoExactTable(
                f"{what} at {_where(np.unravel_index(index, N.shape))} is {v}/2^{bits}: over 53 "
                "significant "
                "bits, which a float64 table cannot hold, so no table has the model's rounding "
                "points; "
                "allowed: a table-form model, or p ≤ 26 (every grid value is then a float64 number)"
            )
    return (
        np.array(nearest, dtype=np.float64).reshape(N.shape) * 2.0**-bits
    )  # exact: a power-of-two scale


def _where(index: tuple) -> str:
    """'position i, token σ' (i 1-based) of a [token pos …] index."""
    return f"position {int(index[1]) + 1}, token {int(index[0])}"


def table_at_precision(
    model: Transformer, bits: int, n_ctx: int | None = None, alphabet: int | None = None
) -> OneLayerTable:
    """The table whose fixed:p model (p = bits) is exactly the weight-form model's fixed:p model, on
    inputs of length ≤ n_ctx (default the model's context) over the tokens 0..alphabet−1 (default
    all), or InputError.

    Entries, computed exactly (core.passes.exact_fixed's integer machinery, the exact evaluator's
    own code, never float64 sums or products): ψ_in[i, σ] = x = round_p(W_E[σ] + W_pos[i]), Q̃ =
    round_p(x W_Q), K̃ = round_p(x W_K), and Ṽ[h, i, σ] = v W_O with v = round_p(x W_V) — the
    model's own rounded values at its rounding points. The table rounds ψ_in, Q̃, K̃, Ṽ and each
    head output; rounding a grid value is the identity, and the head outputs round_p(softmax · v
    W_O) are the model's, so the two fixed:p models are the same — provided every entry is a float64
    number and every v W_O already lies on the 2^-p grid inside [−2^p, 2^p] (the weight form does
    not round v W_O; a table rounds Ṽ). That holds for W_O = I, for integer W_O while |v W_O| ≤ 2^p,
    and for any W_O that maps the model's grid values to grid values; where it does not hold the
    conversion refuses (NoExactTable, an InputError of one line naming the head, position and
    token). The decoder and mask are carried over; info records the conversion ("fixed_p_table_of":
    p)."""
    if not isinstance(model, Transformer):
        raise InputError(
            f"table_at_precision converts a weight-form Transformer, got {type(model).__name__}"
        )
    bits = check_int("p (precision bits)", bits, 1, MAX_BITS)
    if len(model.layers) != 1:
        raise InputError(
            f"a fixed:p table is of a one-layer model; this one has {len(model.layers)} layers"
        )
    check_plain(model)
    if model.layers[0].mlp is not None:
        raise InputError(
            "a layer with an MLP has no one-layer table form (ψ_out would have to absorb it)"
        )
    n = model.n_ctx if n_ctx is None else check_int("n_ctx", n_ctx, 1, model.n_ctx)
    S = model.alphabet if alphabet is None else check_int("alphabet", alphabet, 1, model.alphabet)
    heads = model.layers[0].heads
    weights = [model.W_E, model.W_pos] + [w for h in heads for w in (h.W_Q, h.W_K, h.W_V, h.W_O)]
    if not all(np.isfinite(w).all() for w in weights):
        raise InputError("the model has NaN or infinite weights: its fixed:p model is undefined")
    allowed = (
        "allowed: a table-form model, or a W_O mapping grid values into the grid within [−2^p, "
        "2^p] "
        "(W_O = I, integer W_O)"
    )
    part = replace(model, W_E=model.W_E[:S])  # only the tokens asked are converted
    exact = TransformerPass(part, n, bits)
    tokens = np.repeat(np.arange(S)[:, None], n, axis=1)  # row σ: σ at every position
    x = exact.embed(tokens)  # [S n d] grid ints
    embed = _grid_floats(x, bits, "the embedding round_p(W_E + W_pos)")
    flat = x.reshape(S * n, model.d_model)
    width = max(h.W_Q.shape[1] for h in heads)
    Q, K, V = [], [], []
    for index, (w_q, w_k, w_v, w_o) in enumerate(exact.layers[0][0]):
        for out, w, name in ((Q, w_q, "q = round_p(x·W_Q)"), (K, w_k, "k = round_p(x·W_K)")):
            grid = exact.project(flat, w).reshape(S, n, -1)
            out.append(_grid_floats(grid, bits, f"head {index}'s {name}"))
        u = int_matmul(exact.project(flat, w_v), w_o[0]).reshape(
            S, n, -1
        )  # v W_O = u / 2^(p + e_O)
        shift, bound = w_o[1], 1 << (2 * bits)  # grid ints lie in [−2^{2p}, 2^{2p}]
        for at, value in enumerate(u.ravel().tolist()):
            off = (value >> shift) << shift != value
            if off or abs(value >> shift) > bound:
                number = float(Fraction(value, 1 << (bits + shift)))
                problem = (
                    f"not on the 2^-{bits} grid" if off else f"outside [−2^p, 2^p] at p={bits}"
                )
                raise NoExactTable(
                    f"v·W_O of head {index} at {_where(np.unravel_index(at, u.shape))} is "
                    f"{number:.6g}, "
                    f"{problem}: a table rounds Ṽ, the weight form leaves v·W_O unrounded, so no "
                    "table has "
                    f"the model's rounding points; {allowed}"
                )
        V.append(_grid_floats(u >> shift, bits, f"head {index}'s v·W_O"))
    pad = lambda a: np.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, width - a.shape[-1])])  # noqa: E731
    swap = lambda a: np.transpose(a, (1, 0, 2))  # [S n ·] -> [n S ·]  # noqa: E731
    info = dict(model.info) | {"fixed_p_table_of": bits}
    return OneLayerTable(
        swap(embed),
        np.stack([pad(swap(q)) for q in Q]),
        np.stack([pad(swap(k)) for k in K]),
        np.stack([swap(v) for v in V]),
        model.decoder,
        model.mask,
        info,
    )
