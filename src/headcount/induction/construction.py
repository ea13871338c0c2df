"""Explicit models that solve induction heads for any (n, S): the upper bounds, their shapes, and
the checks that a construction exists for the sizes asked.

* :func:`two_layer_induction` — two layers, heads (2, 1), d_model = 19 for every n and S, O(log n)
  bits.
* :func:`one_layer_induction` — one head, d_model = n + 1, in table form: size O(n log n), matching
  the one-layer lower bound h·m·p = Ω(n) up to the log factor.
* :func:`two_layer_shape`, :func:`one_layer_shape` — each construction's shape (heads per layer,
  d_model) before it is built, for the resource bounds (induction/source.py's ModelSource.shape).
* :func:`check_sizes`, :func:`build_construction`, :func:`write_construction` — the same checks for
  the Python API and the command line (InputError naming the parameter: common.errors.param).
* the two-layer construction's building blocks (write_codes, nearest_head, copy_values,
  base_embedding, layer_one_heads), which the k-hop constructions
  (induction/multihop/construction.py) build on.

Two-layer design (spec/induction.md "Upper bound"), with two refinements that keep every quantity
small: positions and tokens are written as two base-B digits (so squares stay below n instead of
n²), and all weights are integers or powers of two (so fixed:p rounding is exact wherever the values
fit).

Quadratic scores: −β‖a − b‖² = β(2⟨a, b⟩ − ‖b‖²) − β‖a‖²; the last term is the same for every key,
so a query (2βa, −β) against a key (b, b²) picks the key nearest a, with a gap of at least β per
mismatch.

    layer 1, previous-token head  query: digits of i−1 (0-based, the previous position); key: digits
    of
                                  the key's own position. Copies the previous token's digits and
                                  squares.
    layer 1, duplicate head       query/key: token digits. Value s·j, so the output is s·(mean
    position
                                  of the earlier-or-equal occurrences of σ_i): exactly s·i iff σ_i
                                  is new,
                                  at most s·i − s/2 otherwise — a linear test for ⊥.
    layer 2, induction head       query: σ_i's digits; key: the copied previous-token digits, plus a
                                  recency term g·j so the latest match wins; value: σ_j's digits.
    decoder                       token logits 2⟨σ, o⟩ − ‖σ‖² (nearest token to the copied digits
                                  o);
                                  ⊥ logit λ·(dup − s·i + s/4), large when the duplicate test says
                                  new.

A bogus match at j = 1 (which copies its own token) needs σ_i = σ_1, and then a real match at some j
≥ 2 exists and wins on recency.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.common.errors import InputError, param
from headcount.common.jsonable import JsonResult
from headcount.common.resources import check_memory
from headcount.core.attention import ATTENTION_BLOCK, BLOCK_ENTRIES, current_algorithm
from headcount.core.certify import WORKERS, Model
from headcount.core.model import (
    AttentionHead,
    Layer,
    LinearDecoder,
    OneLayerTable,
    Transformer,
    load_model,
    save_model,
)
from headcount.core.passes import CHUNK_BYTES
from headcount.induction.readout import InductionReadoutDecoder

# Residual-stream layout of the two-layer construction (one name per coordinate).
TOKEN_HI, TOKEN_LO, TOKEN_HI2, TOKEN_LO2 = 0, 1, 2, 3  # σ_i digits and their squares
POS_HI, POS_LO, POS_HI2, POS_LO2 = 4, 5, 6, 7  # digits of i−1 (0-based position) and squares
PREV_HI, PREV_LO = 8, 9  # digits of the previous position max(i−2, 0)
ONE = 10  # constant 1
POS_SCALED = 11  # s·i
COPIED = (
    12  # 12..15: previous token's digits and squares ×2^key_shift (layer-1 previous-token head)
)
DUP = 16  # s · mean position of σ_i's occurrences (layer-1 duplicate head)
ANSWER_HI, ANSWER_LO = 17, 18  # digits of the token after the latest match (layer-2 head)
TWO_LAYER_DIM = 19


def _check_n_alphabet(n: int, alphabet: int) -> None:
    if n < 1 or alphabet < 2:
        raise InputError(f"need n ≥ 1 and alphabet ≥ 2, got n={n}, alphabet={alphabet}")


def digit_base(count: int) -> int:
    """Base B with B² ≥ count, so 0..count−1 is two base-B digits."""
    return max(2, math.isqrt(max(count - 1, 0)) + 1)


def _digits(values: np.ndarray, base: int) -> tuple[np.ndarray, np.ndarray]:
    return values // base, values % base


@dataclass(frozen=True)
class TwoLayerParameters(JsonResult):
    """The two-layer construction's constants (stored in the model's info as "parameters")."""

    token_base: int  # B for token digits
    pos_base: int  # B for position digits
    beta1: int  # layer-1 score scale β₁
    g: int  # recency step per position
    beta2: int  # layer-2 score scale β₂
    scale: float  # s
    bottom_gain: float  # λ
    key_shift: int  # copied digits stored ×2^key_shift


def two_layer_parameters(n: int, alphabet: int) -> TwoLayerParameters:
    """The construction's constants, chosen from error budgets (docstring of
    two_layer_induction)."""
    token_base, pos_base = digit_base(alphabet), digit_base(n)
    # β1: layer-1 heads must put ≤ e^-β1·n weight off target, so that the copied key digits err by
    # so little that layer-2 scores (|q| ≤ 2β2·B) move by under g/4, and the duplicate test by under
    # s/8.
    beta1 = math.ceil(math.log(64 * (n + 1) ** 2 * (2 * token_base + 1) * token_base**2)) + 1
    # g: recency step per position; the latest match must beat every other key by g/2 after errors,
    # leaving ≤ n·e^{-g/2} weight elsewhere: the copied answer digits err by < 1/8.
    g = math.ceil(2 * math.log(8 * n * token_base)) + 1
    beta2 = g * (n + 1)  # a token mismatch costs more than any recency gain (≤ g·(n−1))
    scale = 2.0 ** -(int(math.log2(n)) // 2)  # s: keeps s·n ≈ √n, balanced against resolution s/8
    # λ: with the duplicate test "new", λ·s/4 must beat every token logit (≤ ‖o‖² ≤ 2(B−1)²).
    lam = 2.0 ** math.ceil(math.log2(4 * (2 * token_base**2 + 1) / scale))
    # 2^shift: the copied previous-token digits are stored ×2^shift and the layer-2 query ÷2^shift.
    # Scores are unchanged, but the largest query (2β2·(B−1)) and key ((B−1)²) meet near the
    # geometric mean, which is what fixed:p's range [-2^p, 2^p] rewards.
    shift = max(
        0, int(math.log2(2 * beta2 * (token_base - 1) / max(1, (token_base - 1) ** 2))) // 2
    )
    return TwoLayerParameters(token_base, pos_base, beta1, g, beta2, scale, lam, shift)


# ---------------------------------------------------------------------------------------------
# Building blocks shared with the k-hop constructions (headcount.induction.multihop.construction)
# ---------------------------------------------------------------------------------------------


def write_codes(
    W: np.ndarray, cols: tuple[int, int, int, int], values: np.ndarray, base: int
) -> None:
    """Columns `cols` of W [rows d_model] := the two base-B digits of `values` [rows] and their
    squares."""
    hi, lo = _digits(values, base)
    W[:, cols[0]], W[:, cols[1]], W[:, cols[2]], W[:, cols[3]] = hi, lo, hi**2, lo**2


def nearest_head(
    d: int,
    query_rows,
    key_cols,
    beta: float,
    extra_q=(),
    extra_k=(),
) -> tuple[np.ndarray, np.ndarray]:
    """W_Q, W_K [d_model d_head] for the score β(2⟨a, b⟩ − ‖b‖²) (+ extra terms): a = the two query
    digits (rows `query_rows`), b = the key's two digits and their squares (rows `key_cols`); each
    extra term is a (row, weight) pair of the query and of the key, multiplied together."""
    width = 4 + len(extra_q)
    W_Q, W_K = np.zeros((d, width)), np.zeros((d, width))
    for col, row in enumerate(query_rows):
        W_Q[row, col] = 2 * beta
    W_Q[ONE, 2] = W_Q[ONE, 3] = -beta
    for col, row in enumerate(key_cols):
        W_K[row, col] = 1.0
    for col, (qrow, qval) in enumerate(extra_q, start=4):
        W_Q[qrow, col] = qval
    for col, (krow, kval) in enumerate(extra_k, start=4):
        W_K[krow, col] = kval
    return W_Q, W_K


def copy_values(d: int, rows, out_cols, gain: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """W_V, W_O of a head that adds gain · (rows of the attended position) to columns `out_cols`."""
    W_V, W_O = np.zeros((d, len(rows))), np.zeros((len(rows), d))
    for col, (row, out) in enumerate(zip(rows, out_cols)):
        W_V[row, col] = 1.0
        W_O[col, out] = gain
    return W_V, W_O


def base_embedding(
    d: int, n: int, alphabet: int, token_base: int, pos_base: int, scale: float
) -> tuple[np.ndarray, np.ndarray]:
    """W_E [alphabet d_model] and W_pos [n d_model] with the two-layer construction's columns
    TOKEN_*, POS_*, PREV_*, ONE and POS_SCALED (the rest zero)."""
    W_E = np.zeros((alphabet, d))
    write_codes(W_E, (TOKEN_HI, TOKEN_LO, TOKEN_HI2, TOKEN_LO2), np.arange(alphabet), token_base)
    W_pos = np.zeros((n, d))
    pos0 = np.arange(n)  # i − 1
    write_codes(W_pos, (POS_HI, POS_LO, POS_HI2, POS_LO2), pos0, pos_base)
    W_pos[:, PREV_HI], W_pos[:, PREV_LO] = _digits(np.maximum(pos0 - 1, 0), pos_base)
    W_pos[:, ONE] = 1.0
    W_pos[:, POS_SCALED] = scale * (pos0 + 1)
    return W_E, W_pos


def layer_one_heads(d: int, beta1: float, key_shift: int) -> tuple[AttentionHead, AttentionHead]:
    """Layer 1 of the two-layer construction: the previous-token head (copies the previous token's
    digits and squares ×2^key_shift to COPIED) and the duplicate head (s · mean position of σ_i's
    occurrences to DUP)."""
    token_cols = (TOKEN_HI, TOKEN_LO, TOKEN_HI2, TOKEN_LO2)
    prev_token = AttentionHead(
        *nearest_head(d, (PREV_HI, PREV_LO), (POS_HI, POS_LO, POS_HI2, POS_LO2), beta1),
        *copy_values(d, token_cols, range(COPIED, COPIED + 4), gain=2.0**key_shift),
    )
    duplicate = AttentionHead(
        *nearest_head(d, (TOKEN_HI, TOKEN_LO), token_cols, beta1),
        *copy_values(d, (POS_SCALED,), (DUP,)),
    )
    return prev_token, duplicate


def two_layer_induction(n: int, alphabet: int) -> Transformer:
    """Two-layer, heads (2, 1), d_model 19 model solving 1-hop induction heads on Σ^n, |Σ| =
    alphabet."""
    _check_n_alphabet(n, alphabet)
    c = two_layer_parameters(n, alphabet)
    tb, g, beta2, s, lam, shift = c.token_base, c.g, c.beta2, c.scale, c.bottom_gain, c.key_shift
    d = TWO_LAYER_DIM
    W_E, W_pos = base_embedding(d, n, alphabet, tb, c.pos_base, s)
    prev_token, duplicate = layer_one_heads(d, c.beta1, shift)
    induction = AttentionHead(
        *nearest_head(
            d,
            (TOKEN_HI, TOKEN_LO),
            range(COPIED, COPIED + 4),
            beta2 / 2.0**shift,
            extra_q=[(ONE, g / s)],
            extra_k=[(POS_SCALED, 1.0)],
        ),
        *copy_values(d, (TOKEN_HI, TOKEN_LO), (ANSWER_HI, ANSWER_LO)),
    )

    W_U = np.zeros((d, alphabet + 1))  # [d_model alphabet+1], last column ⊥
    b_U = np.zeros(alphabet + 1)
    th, tl = _digits(np.arange(alphabet), tb)
    W_U[ANSWER_HI, :alphabet], W_U[ANSWER_LO, :alphabet] = 2 * th, 2 * tl
    b_U[:alphabet] = -(th**2) - tl**2
    W_U[DUP, alphabet], W_U[POS_SCALED, alphabet], b_U[alphabet] = lam, -lam, lam * s / 4

    info = {
        "construction": "two_layer_induction",
        "task": "induction",
        "hops": 1,
        "n": n,
        "alphabet": alphabet,
        "parameters": c.to_json(),
    }
    return Transformer(
        W_E,
        W_pos,
        (Layer((prev_token, duplicate)), Layer((induction,))),
        LinearDecoder(W_U, b_U),
        "causal",
        info,
    )


def one_layer_induction(n: int, alphabet: int) -> OneLayerTable:
    """One head, d_model = n + 1, table form: ψ_in(i, σ) = (σ+1)·e_{n+1}, uniform causal attention
    (Q̃ = K̃ = 0), Ṽ[j, σ] = (σ+1)·e_j, and the readout ψ_out of headcount.induction.readout:
    position i reads every (σ_j+1)/i back. Needs p ≈ log₂ n + 1 bits (resolve 1/(2i)), so size O(n
    log n)."""
    _check_n_alphabet(n, alphabet)
    token_code = np.arange(1, alphabet + 1, dtype=np.float64)  # σ + 1
    embed = np.zeros((n, alphabet, n + 1))  # [n_ctx alphabet d_model]
    embed[:, :, n] = token_code[None, :]
    values = np.zeros((1, n, alphabet, n + 1))  # [heads n_ctx alphabet d_model]
    values[0, np.arange(n), :, np.arange(n)] = token_code[None, :]
    zeros = np.zeros((1, n, alphabet, 1))  # [heads n_ctx alphabet d_head]
    info = {
        "construction": "one_layer_induction",
        "task": "induction",
        "hops": 1,
        "n": n,
        "alphabet": alphabet,
    }
    return OneLayerTable(embed, zeros, zeros, values, InductionReadoutDecoder(n), "causal", info)


# ---------------------------------------------------------------------------------------------
# Shapes, sizes and the resource estimates of the constructions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelShape:
    """What a model will be before it is built: heads per layer and the residual width d_model."""

    heads_per_layer: tuple[int, ...]
    d_model: int

    @property
    def layers(self) -> int:
        return len(self.heads_per_layer)

    @property
    def heads(self) -> int:
        """Heads in all layers (the resource bounds count score entries per head)."""
        return sum(self.heads_per_layer)

    @classmethod
    def of(cls, model: Model) -> ModelShape:
        return cls(tuple(int(h) for h in model.heads_per_layer), int(model.d_model))


def two_layer_shape() -> ModelShape:
    """two_layer_induction's shape at every (n, S): heads (2, 1), d_model TWO_LAYER_DIM."""
    return ModelShape((2, 1), TWO_LAYER_DIM)


def one_layer_shape(n: int) -> ModelShape:
    """one_layer_induction's shape at length n: one head, d_model n + 1."""
    return ModelShape((1,), n + 1)


def construction_shape(layers: int, n: int) -> ModelShape:
    """The shape of the `layers`-layer construction (CONSTRUCTIONS) at length n."""
    return one_layer_shape(n) if layers == 1 else two_layer_shape()


MAX_TABLE_BYTES = 4 * 2**30  # memory a one-layer construction's tables may take (ψ_in and Ṽ)
CONSTRUCTIONS = {2: two_layer_induction, 1: one_layer_induction}  # by number of layers

# Resource estimates (issue 13), from the arguments alone, before anything is allocated; floats, so
# that any size (10^100 included) is estimated without overflowing. The resource guard
# (common.resources) refuses beyond its memory limit (max_memory); evaluation work is bounded where
# each command states its limit.
#
# The two-layer construction: W_pos [n 19] and W_E, W_U [alphabet 19] in float64, plus ten int64
# work arrays of n positions while it is built (digits, squares): bytes per position and per token.
TWO_LAYER_BYTES_PER_POSITION = 8 * TWO_LAYER_DIM + 8 * 10
TWO_LAYER_BYTES_PER_TOKEN = 8 * 2 * TWO_LAYER_DIM
# Evaluating a model on inputs of length n (core.passes.forward, core.passes.bounds): the cached
# causal mask and score bias (9 bytes per query-key pair), and per worker thread one chunk of the
# batch whose score tensors take about EVAL_SCORE_COPIES float64 copies of max(n × max(n, d_model),
# a quarter of core's chunk target) (measured: 1.7 GB peak certifying the two-layer construction at
# n = 4096 on 2 workers; estimate 1.8 GB).
EVAL_SCORE_COPIES = 6
# The blocked passes' per-position arrays (residual boxes, q/k/v boxes, logits): bytes per position
# per model dimension (measured: see tests/induction/test_limits.py or the benchmark's memory).
EVAL_POSITION_BYTES = 400
# Work of evaluating one input of length n: heads · n² score entries, plus a fixed cost per input in
# the same units (measured: certify's per-input overhead at small n is about a thousand score
# entries' time).
PER_INPUT_WORK = 1024


def construction_bytes(layers: int, n: int, alphabet: int) -> float:
    """Memory the `layers`-layer construction at (n, alphabet) takes while it is built (bytes, a
    float)."""
    n, alphabet = float(n), float(alphabet)
    if layers == 1:  # ψ_in [n S n+1] and Ṽ [1 n S n+1], plus the zero Q̃ = K̃ [1 n S 1]
        return 2 * 8 * n * alphabet * (n + 1) + 8 * n * alphabet
    return TWO_LAYER_BYTES_PER_POSITION * n + TWO_LAYER_BYTES_PER_TOKEN * (alphabet + 1)


def evaluation_bytes(n: int, d_model: int) -> float:
    """Memory of running a model of width d_model on a batch of length-n inputs (bytes, a float).
    The blocked passes (core.attention.settings) hold one query block's scores [block n] per head at
    a time (at most BLOCK_ENTRIES of them: core.attention.blocks.dense_parts), and
    EVAL_POSITION_BYTES per position and model dimension; the reference holds [n n] ones and the
    masks."""
    n, d_model = float(n), float(d_model)
    if current_algorithm() == "reference":
        chunk = max(8 * n * max(n, d_model), CHUNK_BYTES / 4)
        return 9 * n * n + WORKERS * EVAL_SCORE_COPIES * chunk
    block = min(n, float(ATTENTION_BLOCK))
    # a block scored in full is split into parts of BLOCK_ENTRIES entries (one query at least)
    scores = max(min(block * n, max(float(BLOCK_ENTRIES), n)), block * d_model)
    chunk = max(8 * scores, CHUNK_BYTES / 4)
    return EVAL_POSITION_BYTES * n * d_model + WORKERS * EVAL_SCORE_COPIES * chunk


def evaluation_work(inputs: int, heads: int, n: int) -> float:
    """Score entries of one pass of a model with `heads` heads in all over `inputs` inputs of length
    n."""
    return float(inputs) * (float(heads) * float(n) * float(n) + PER_INPUT_WORK)


def check_construction_memory(layers: int, n: int, alphabet: int, copies: int = 1) -> None:
    """The resource guard on building the construction (copies = 2 when it is also written to a
    file: safetensors serialises a copy of every tensor)."""
    check_memory(
        copies * construction_bytes(layers, n, alphabet),
        f"the {layers}-layer construction at {param('n')} {n} {param('alphabet')} {alphabet}",
    )


def check_sizes(n: int, alphabet: int, layers: int | None = None) -> None:
    """InputError unless (n, alphabet) is a task size and, with `layers`, a construction exists for
    it within MAX_TABLE_BYTES. Messages name the parameters (common.errors.param)."""
    n_, alphabet_, layers_ = param("n"), param("alphabet"), param("layers")
    if n < 1:
        raise InputError(f"{n_} {n} is too small: the sequence length must be ≥ 1")
    if alphabet < 2:
        raise InputError(f"{alphabet_} {alphabet} is too small: the alphabet size must be ≥ 2")
    if layers is not None and layers not in CONSTRUCTIONS:
        raise InputError(
            f"{layers_} {layers} is not available: constructions exist for {layers_} 1 or 2"
        )
    if layers == 2 and alphabet > n:
        raise InputError(
            f"{alphabet_} {alphabet} > {n_} {n}: the two-layer construction is for alphabet ≤ n "
            "(seed 000)"
        )
    table_bytes = (
        2 * 8 * n * alphabet * (n + 1)
    )  # the one-layer construction stores ψ_in and Ṽ tables
    if layers == 1 and table_bytes > MAX_TABLE_BYTES:
        raise InputError(
            f"{layers_} 1 at n={n}, alphabet={alphabet} needs {table_bytes / 2**30:.1f} GiB of "
            "tables "
            f"(2·8·n·S·(n+1) bytes); allowed up to {MAX_TABLE_BYTES / 2**30:.0f} GiB"
        )


def build_construction(layers: int, n: int, alphabet: int, copies: int = 1) -> Model:
    """The `layers`-layer construction at (n, alphabet), after check_sizes and the memory guard."""
    check_sizes(n, alphabet, layers)
    check_construction_memory(layers, n, alphabet, copies)
    return CONSTRUCTIONS[layers](n, alphabet)


def load_model_file(path: str | os.PathLike) -> Model:
    """load_model (a bad or missing file is a ModelFileError, an InputError: the user can fix
    it)."""
    return load_model(path)


@dataclass(frozen=True)
class ConstructionFile:
    """A construction written to `path`: its shape (heads per layer, residual width) and task size;
    the k-hop constructions add their hop count (`hops`) and depth's name (`depth`: ceil or floor)
    or, in the hop-prefix layout, `layout` and `max_hops` (keys left out of the JSON where None, so
    the 1- and 2-layer files read as they always did)."""

    path: str
    layers: int
    heads_per_layer: tuple[int, ...]
    d_model: int
    n: int
    alphabet: int
    hops: int | None = None
    layout: str | None = None
    max_hops: int | None = None
    depth: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "path": self.path,
            "layers": self.layers,
            "heads": list(self.heads_per_layer),
            "dim": self.d_model,
            "n": self.n,
            "alphabet": self.alphabet,
        }
        extra = {
            "hops": self.hops,
            "layout": self.layout,
            "max_hops": self.max_hops,
            "depth": self.depth,
        }
        return out | {key: value for key, value in extra.items() if value is not None}


def save_construction(
    model: Model, n: int, alphabet: int, out: str | os.PathLike, **task: Any
) -> ConstructionFile:
    """Save a built construction as a model file at `out` (InputError when it cannot be written);
    `task`: ConstructionFile's hops / layout / max_hops."""
    try:
        save_model(model, out)
    except OSError as err:
        raise InputError(f"cannot write {str(out)!r}: {err.strerror}") from None
    return ConstructionFile(
        str(out),
        len(model.layers),
        tuple(model.heads_per_layer),
        model.d_model,
        n,
        alphabet,
        **task,
    )


def write_construction(
    layers: int, n: int, alphabet: int, out: str | os.PathLike
) -> ConstructionFile:
    """Build the construction (build_construction) and save it as a model file at `out`."""
    return save_construction(build_construction(layers, n, alphabet, copies=2), n, alphabet, out)
