"""The fixed:p model evaluated EXACTLY (spec/README.md "Precision semantics"; precision.py).

forward.py emulates fixed:p in float64, which rounds between the rounding points and so can land on
the wrong side of a rounding tie or of the clip. This module computes the seed's definition itself:

* Every weight is a float64, i.e. a dyadic rational, and every rounded value is a multiple of 2^-p,
  so everything up to a softmax is an integer times a power of two. Vectors are kept as Python/FLINT
  integers with a known exponent (value = ints / 2^e); matrix products go through fmpz_mat (exact,
  in C).
* The residual stream is always a multiple of 2^-p (a sum of rounded values), stored as ints / 2^p.
* A head output coordinate y = Σ_j e^{s_j} u_j / Σ_j e^{s_j} is transcendental in general. It is
  evaluated as an arb ball (arb_mat products, scores shifted by their exact maximum). Rounding y
  needs only the grid cell it lies in: when the ball straddles a single tie point t (an odd multiple
  of 2^-(p+1)), the sign of y − t is the sign of Σ_j e^{s_j}(u_j − t), an exponential polynomial
  with rational data, decided exactly by core.numbers.expsum.sign_exp_poly (zero ⇒ a true tie ⇒ half
  to even); when it straddles more, the precision doubles (core.numbers.expsum.UndecidedError, an
  ArithmeticError, past core.numbers.expsum.MAX_PREC bits).
* Rounding is to the nearest multiple of 2^-p, ties to even, then clipping to [-2^p, 2^p]; residual
  sums, scores, the MLP's hidden layer and decoder logits are exact.

Decoders: "linear" (exact logits, argmax with ties to the lowest class) here, and any decoder with a
``decode_grid(x, bits, positions)`` method that decodes the exact residual itself (the induction
readout: σ_j = ⌊i·y_j + ½⌋ − 1 in integers). Any other kind is refused with a ValueError.
"""

from __future__ import annotations

from collections.abc import Sequence

import flint
import numpy as np

from headcount.core.model import BOTTOM, OneLayerTable, Transformer, check_tokens
from headcount.core.numbers import as_fmpq
from headcount.core.passes.head_rounding import dyadic, fmpz_mat, head_output, int_array, int_matmul

MAX_BITS = 4096  # fixed:p is exact here for any p ≥ 1; the cap only keeps integer sizes sane

Model = Transformer | OneLayerTable


# --------------------------------------------------------------------------------------------------
# Exact dyadic integers: value = ints / 2^e (core.passes.head_rounding has the conversions)


def _add(a: np.ndarray, ea: int, b: np.ndarray, eb: int) -> tuple[np.ndarray, int]:
    """a/2^ea + b/2^eb as (ints, e), exactly (b broadcasts)."""
    e = max(ea, eb)
    return (a << (e - ea)) + (b << (e - eb)), e


def _round_half_even_shift(m: int, shift: int) -> int:
    """round(m / 2^shift), ties to even, for shift ≥ 1."""
    q = m >> shift
    r = m - (q << shift)
    half = 1 << (shift - 1)
    return q + 1 if r > half or (r == half and q & 1) else q


_round_shift = np.frompyfunc(_round_half_even_shift, 2, 1)


def _to_grid(ints: np.ndarray, e: int, bits: int) -> np.ndarray:
    """The rounding point: N = round(ints/2^e · 2^p) (ties to even), clipped to ±2^{2p}; the value
    is N/2^p."""
    shift = e - bits
    grid = ints << -shift if shift <= 0 else _round_shift(ints, shift)
    bound = 1 << (2 * bits)
    return np.clip(np.asarray(grid, dtype=object), -bound, bound)


def exact_round_fixed(value, bits: int) -> flint.fmpq:
    """The fixed:p rounding of one exact rational (Fraction, fmpq, int or float): nearest multiple
    of 2^-bits, ties to even, clipped to [-2^bits, 2^bits]."""
    v = as_fmpq(value)
    num, den = int(v.p) << bits, int(v.q)
    q, r = divmod(num, den)
    if 2 * r > den or (2 * r == den and q & 1):
        q += 1
    bound = 1 << (2 * bits)
    return flint.fmpq(min(max(q, -bound), bound), 1 << bits)


# --------------------------------------------------------------------------------------------------
# Attention: one head's rounded output, exactly


# --------------------------------------------------------------------------------------------------
# The two model forms


def _check_bits(bits) -> int:
    if (
        isinstance(bits, bool)
        or not isinstance(bits, (int, np.integer))
        or not 1 <= int(bits) <= MAX_BITS
    ):
        raise ValueError(f"bits must be an integer in 1..{MAX_BITS}, got {bits!r}")
    return int(bits)


class TransformerPass:
    """The weight-form model's exact fixed:p pass; weights converted to exact integers once per
    call."""

    def __init__(self, model: Transformer, n: int, bits: int):
        self.model, self.bits, self.causal = model, bits, model.mask == "causal"
        self.W_E, self.e_E = dyadic(model.W_E)
        self.W_pos, self.e_pos = dyadic(model.W_pos[:n])
        self.layers = [self._convert_layer(layer) for layer in model.layers]

    @staticmethod
    def _mat(a: np.ndarray) -> tuple[flint.fmpz_mat, int]:
        ints, e = dyadic(a)
        return fmpz_mat(ints), e

    def _convert_layer(self, layer) -> tuple[list, tuple | None]:
        heads = [tuple(self._mat(w) for w in (h.W_Q, h.W_K, h.W_V, h.W_O)) for h in layer.heads]
        mlp = None
        if layer.mlp is not None:
            m = layer.mlp
            mlp = (self._mat(m.W_in), dyadic(m.b_in), self._mat(m.W_out), dyadic(m.b_out))
        return heads, mlp

    def project(self, x: np.ndarray, w: tuple[flint.fmpz_mat, int]) -> np.ndarray:
        """Rounded x W for x on the grid (units 2^-p): grid ints."""
        return _to_grid(int_matmul(x, w[0]), self.bits + w[1], self.bits)

    def embed(self, tokens: np.ndarray) -> np.ndarray:
        """[batch pos d_model] grid ints of round(W_E[σ_i] + W_pos[i])."""
        n = tokens.shape[1]
        ints, e = _add(self.W_E[tokens], self.e_E, self.W_pos[None, :n], self.e_pos)
        return _to_grid(ints, e, self.bits)

    def residual(self, tokens: np.ndarray, last_rows: Sequence[int]) -> np.ndarray:
        """Final residual [batch pos d_model] as grid ints; in the last layer only the query rows
        `last_rows` get their attention update (the others are not needed by the caller)."""
        x = self.embed(tokens)
        batch, n, d = x.shape
        for index, (heads, mlp) in enumerate(self.layers):
            rows = list(last_rows) if index == len(self.layers) - 1 else list(range(n))
            flat = x.reshape(batch * n, d)
            update = np.zeros((batch, n, d), dtype=object)
            for w_q, w_k, w_v, w_o in heads:
                q = self.project(flat, w_q).reshape(batch, n, -1)
                k = self.project(flat, w_k).reshape(batch, n, -1)
                u = int_matmul(self.project(flat, w_v), w_o[0]).reshape(
                    batch, n, d
                )  # value ints / 2^(p+e_O)
                for b in range(batch):
                    update[b, rows] += head_output(
                        q[b], k[b], u[b], self.bits + w_o[1], self.bits, self.causal, rows
                    )
            x = x + update
            if mlp is not None:
                x = x + self._mlp(x.reshape(batch * n, d), mlp).reshape(batch, n, d)
        return x

    def _mlp(self, x: np.ndarray, mlp: tuple) -> np.ndarray:
        """Rounded relu(x W_in + b_in) W_out + b_out (the hidden layer is exact, not a rounding
        point)."""
        (w_in, e_in), (b_in, e_bin), (w_out, e_out), (b_out, e_bout) = mlp
        hidden, e_h = _add(int_matmul(x, w_in), self.bits + e_in, b_in[None, :], e_bin)
        hidden = np.maximum(hidden, 0)
        out, e_o = _add(int_matmul(hidden, w_out), e_h + e_out, b_out[None, :], e_bout)
        return _to_grid(out, e_o, self.bits)


def _float_grid(values: np.ndarray, bits: int) -> np.ndarray:
    """Grid ints of single float64 values rounded at a rounding point (table entries are used as
    is)."""
    ints, e = dyadic(values)
    return _to_grid(ints, e, bits)


def _table_residual(
    table: OneLayerTable, tokens: np.ndarray, bits: int, rows: Sequence[int]
) -> np.ndarray:
    """Final residual [batch pos d_model] grid ints of a table model; only `rows` get the head
    updates."""
    batch, n = tokens.shape
    pos = np.arange(n)[None, :]
    x = _float_grid(table.embed[pos, tokens], bits)
    causal = table.mask == "causal"
    for h in range(table.heads_per_layer[0]):
        q = _float_grid(table.Q[h][pos, tokens], bits)
        k = _float_grid(table.K[h][pos, tokens], bits)
        v = _float_grid(table.V[h][pos, tokens], bits)
        for b in range(batch):
            x[b, list(rows)] += head_output(q[b], k[b], v[b], bits, bits, causal, rows)
    return x


def _residual_grid(model: Model, tokens: np.ndarray, bits: int, rows: Sequence[int]) -> np.ndarray:
    if isinstance(model, OneLayerTable):
        return _table_residual(model, tokens, bits, rows)
    if isinstance(model, Transformer):
        return TransformerPass(model, tokens.shape[1], bits).residual(tokens, rows)
    raise ValueError(
        f"exact evaluation needs a Transformer or a OneLayerTable, got {type(model).__name__}"
    )


# --------------------------------------------------------------------------------------------------
# Decoders on the exact residual


def _decode_linear(decoder, x: np.ndarray, bits: int) -> np.ndarray:
    """argmax of x W_U + b_U (ties to the lowest class; class S is ⊥) on grid ints x [rows
    d_model]."""
    W_U, e_U = dyadic(decoder.W_U)
    b_U, e_b = dyadic(decoder.b_U)
    if W_U.shape[0] != x.shape[1]:
        raise ValueError(f"decoder W_U reads d_model={W_U.shape[0]}, the model has {x.shape[1]}")
    logits, _ = _add(int_matmul(x, fmpz_mat(W_U)), bits + e_U, b_U[None, :], e_b)
    alphabet = W_U.shape[1] - 1
    out = []
    for row in logits.tolist():
        best = row.index(max(row))  # first maximum: ties go to the lowest class
        out.append(BOTTOM if best == alphabet else best)
    return np.array(out, dtype=np.int64)


# --------------------------------------------------------------------------------------------------
# Public entry points


def _needed(model: Model, n: int, positions: Sequence[int] | None) -> tuple[int, list[int]]:
    """(how many leading positions to evaluate, the output positions asked), validated."""
    if positions is None:
        return n, list(range(n))
    asked = sorted({int(p) for p in positions})
    if asked and (asked[0] < 0 or asked[-1] >= n):
        raise ValueError(f"positions must lie in 0..{n - 1}")
    if not asked:
        return 0, []
    return (asked[-1] + 1 if model.mask == "causal" else n), asked


def exact_supported(model: Model) -> str | None:
    """None when this module evaluates `model` exactly; else why not. It covers the seed's plain
    model (a "linear" decoder or one with decode_grid): LayerNorm's square root and GELU's erf/tanh
    leave the rationals, and the GPT-2 parts are proven by the rigorous bounds alone (open positions
    stay open)."""
    extensions = getattr(model, "extensions", [])
    if extensions:
        return f"exact evaluation covers the seed's plain model, not {', '.join(extensions)}"
    kind = getattr(model.decoder, "kind", None)
    if kind != "linear" and not hasattr(model.decoder, "decode_grid"):
        return f"exact evaluation does not support decoder kind {kind}"
    return None


def _check_decoder(model: Model) -> str:
    why = exact_supported(model)
    if why is not None:
        raise ValueError(why)
    return model.decoder.kind


def exact_fixed_predict(
    model: Model, tokens: np.ndarray, bits: int, positions: Sequence[int] | None = None
) -> np.ndarray:
    """Outputs [batch pos] (int64, BOTTOM for ⊥) of the fixed:`bits` model, computed exactly.

    `positions` (0-based) limits which outputs are computed: with the causal mask only positions up
    to max(positions) are evaluated (nothing later can influence them), with the full mask every
    position is evaluated below the last layer; positions NOT asked are returned as BOTTOM (not
    computed, not a prediction). ValueError for bad input (tokens, bits, positions, unsupported
    decoder)."""
    bits = _check_bits(bits)
    kind = _check_decoder(model)
    tokens = check_tokens(model, tokens)
    batch, n = tokens.shape
    out = np.full((batch, n), BOTTOM, dtype=np.int64)
    length, asked = _needed(model, n, positions)
    if batch == 0 or not asked:
        return out
    x = _residual_grid(model, tokens[:, :length], bits, asked)
    for b in range(batch):
        if kind == "linear":
            out[b, asked] = _decode_linear(model.decoder, x[b, asked], bits)
        else:
            out[b, asked] = model.decoder.decode_grid(x[b], bits, asked)[asked]
    return out


def exact_fixed_residual(model: Model, tokens_row, bits: int) -> np.ndarray:
    """The exact final residual [pos d_model] of one input (object array of fmpq: every coordinate
    is a multiple of 2^-bits, a sum of rounded values), for tests and for inspecting near-ties."""
    bits = _check_bits(bits)
    tokens = check_tokens(model, np.asarray(tokens_row))
    if tokens.shape[0] != 1:
        raise ValueError(f"exact_fixed_residual takes one input row, got {tokens.shape[0]}")
    n = tokens.shape[1]
    x = _residual_grid(model, tokens, bits, list(range(n)))[0]
    scale = 1 << bits
    return int_array([flint.fmpq(int(v), scale) for v in x.ravel().tolist()], x.shape)
