"""What the INDEX reduction reads from a one-layer model, precomputed once per (model, k, p), and the
vectorized steps every other module of the reduction is built from.

Setting. A one-layer model in table form at fixed:p, k ≥ 1, n = 2k+1, and the INDEX input
σ(f, i*) = (e_1, f_1, …, e_k, f_k, ?) (token 2 is '?', e_i = ? iff i = i*, else 0). At the last position
N = n, head h reads the query q = round_p(Q̃[h, N, ?]); position j contributes the score
s_j = ⟨q, round_p(K̃[h, j, σ_j])⟩ and the value v_j = round_p(Ṽ[h, j, σ_j]) ∈ R^m (m = d_model). The head
output is Y = Σ_j e^{s_j} v_j / Σ_j e^{s_j}, rounded to the 2^-p grid (round_p); the decoder reads
round_p(ψ_in(N, ?)) + Σ_h round_p(Y_h). These are exactly the rounding points of
:func:`headcount.core.table.table_residual`, so Bob's computation mirrors the model's, op for op, from
the head outputs on.

Scope and assumptions. A one-layer weight-form model is converted with table_from_weights and the
protocol follows the *table's* fixed:p rounding points (ψ_in, Q̃, K̃, Ṽ, head outputs); check_protocol
compares with predict on that table, while refute confirms counterexamples on the model as given.
Decoders are taken to be positionwise (ψ_out(i, x_i), as the Decoder protocol says): Bob decodes his
vector at position N of an otherwise zero block.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from headcount.core.errors import InputError
from headcount.core.evaluate import Model, predict
from headcount.core.model import Transformer
from headcount.core.precision import fixed, round_fixed
from headcount.core.table import OneLayerTable, random_table, table_from_weights
from headcount.core.validate import check_int
from headcount.induction.construction import load_model_file
from headcount.induction.task import INDEX_QUERY, index_input

# Largest p: Alice's s·2^{3p} (|s| up to d_head·2^{2p}) must stay within float64's range.
MAX_PRECISION_BITS = 200
# Working-set size (float64 elements) that the vectorized steps aim for per chunk.
CHUNK_ELEMENTS = 1 << 21


@dataclass(frozen=True, eq=False)
class MessageLayout:
    """Where each transmitted number can lie (Bob knows this from the model alone) and its bit width.

    Ends are grid indices (integers, as floats) of the ε = 2^{-3p} grid: number = index·ε. The widths
    depend only on (model, k, p), so every message has the same length `bits`.
    """

    k: int
    p: int
    r_lo: np.ndarray  # [h m] grid index of the lowest possible r̂_c
    r_hi: np.ndarray  # [h m]
    s_lo: np.ndarray  # [h]
    s_hi: np.ndarray  # [h]
    r_bits: np.ndarray  # [h m] int
    s_bits: np.ndarray  # [h] int

    @property
    def bits(self) -> int:
        return int(self.r_bits.sum()) + int(self.s_bits.sum())

    @property
    def n_heads(self) -> int:
        return self.r_bits.shape[0]

    @property
    def d_model(self) -> int:
        return self.r_bits.shape[1]

    @property
    def seed_bits(self) -> int:
        """The seed's accounting: h·(m+1) numbers at 3p bits each."""
        return self.n_heads * (self.d_model + 1) * 3 * self.p


@dataclass(frozen=True, eq=False)
class IndexSetup:
    """Everything the protocol needs at length n = 2k+1, precomputed once (all rounded as the model does).

    Alice's tables index (head, i, bit) for her position 2i (1-based); Bob's part (log Z_B, b) is
    tabulated for every i* since it depends on nothing else."""

    table: OneLayerTable
    model: Model  # the model as given: confirmations run on it
    form: str
    k: int
    p: int
    score_alice: np.ndarray  # [h k 2]
    value_alice: np.ndarray  # [h k 2 m]
    log_zb: np.ndarray  # [k h]   (row i*-1)
    b: np.ndarray  # [k h m]
    x_final: np.ndarray  # [m]    round_p(ψ_in(N, ?))
    layout: MessageLayout

    @property
    def n(self) -> int:
        return 2 * self.k + 1

    @property
    def n_heads(self) -> int:
        return self.score_alice.shape[0]

    @property
    def d_model(self) -> int:
        return self.value_alice.shape[-1]

    @property
    def d_head(self) -> int:
        return self.table.Q.shape[-1]

    @property
    def eps(self) -> float:
        return 2.0 ** (-3 * self.p)


def as_table(model: Model) -> tuple[OneLayerTable, str]:
    """(table form, how it was obtained) of a one-layer attention-only model; InputError otherwise."""
    if isinstance(model, OneLayerTable):
        return model, "table"
    if isinstance(model, Transformer):
        if len(model.layers) != 1:
            raise InputError(
                f"the INDEX reduction is for one-layer models; this model has {len(model.layers)} layers"
            )
        if model.layers[0].mlp is not None:
            raise InputError(
                "the INDEX reduction is for one-layer attention-only models; this layer has an MLP"
            )
        return table_from_weights(model), "weights (converted with table_from_weights)"
    raise InputError(f"expected a OneLayerTable or a one-layer Transformer, got {type(model).__name__}")


def lse(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """log Σ exp along `axis`, shifted by the max (finite scores only)."""
    top = x.max(axis=axis, keepdims=True)
    return np.squeeze(top, axis) + np.log(np.exp(x - top).sum(axis=axis))


def grid_bits(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """⌈log₂(#grid points)⌉ for index ranges [lo, hi] (integral floats, possibly beyond 2^63)."""
    # ⌈log₂(count)⌉ = (count − 1).bit_length(), in Python ints (exact at any p).
    flat = [(int(top) - int(bottom)).bit_length() for bottom, top in zip(lo.ravel(), hi.ravel())]
    return np.array(flat, dtype=np.int64).reshape(lo.shape)


def index_setup(model: Model, k: int, p: int) -> IndexSetup:
    """The IndexSetup of `model` at INDEX size k and fixed:p; InputError for a model or size the
    reduction is not about (not one layer of attention, context shorter than 2k+1, fewer than 3 tokens)."""
    k = check_int("k", k, 1)
    p = check_int("p (precision bits)", p, 1)
    if p > MAX_PRECISION_BITS:
        raise InputError(
            f"p (precision bits) must be at most {MAX_PRECISION_BITS} for the INDEX protocol "
            f"(its float64 message grid 2^-3p), got {p}"
        )
    table, form = as_table(model)
    n = 2 * k + 1
    if n > table.n_ctx:
        raise InputError(
            f"INDEX with k={k} needs n = 2k+1 = {n} positions; the model's context is {table.n_ctx}"
        )
    if table.alphabet < 3:
        raise InputError(
            f"INDEX needs the tokens 0, 1, ? (alphabet ≥ 3); the model's alphabet is {table.alphabet}"
        )
    last = n - 1
    q = round_fixed(table.Q[:, last, INDEX_QUERY], p)  # [h d_head], at the model's rounding points
    keys = round_fixed(table.K[:, :n, :3], p)  # [h n 3 d_head]
    values = round_fixed(table.V[:, :n, :3], p)  # [h n 3 m]
    scores = np.einsum("hd,hjtd->hjt", q, keys)  # [h n 3]
    alice, bob = np.arange(1, 2 * k, 2), np.arange(0, 2 * k, 2)
    score_alice, value_alice = scores[:, alice, :2], values[:, alice, :2]
    heads, m = values.shape[0], values.shape[-1]

    # Bob's part for every i*: his positions carry 0 except e_{i*} = ?, plus the final ? at N.
    bob_zero, bob_query = scores[:, bob, 0], scores[:, bob, INDEX_QUERY]  # [h k]
    vzero, vquery = values[:, bob, 0], values[:, bob, INDEX_QUERY]  # [h k m]
    log_zb, b = np.empty((k, heads)), np.empty((k, heads, m))
    step = max(1, CHUNK_ELEMENTS // max(1, heads * (k + 1) * m))
    for start in range(0, k, step):
        stars = np.arange(start, min(k, start + step))  # 0-based i*
        c = len(stars)
        s = np.empty((c, heads, k + 1))
        v = np.empty((c, heads, k + 1, m))
        s[:, :, :k], v[:, :, :k] = bob_zero[None], vzero[None]
        s[np.arange(c), :, stars] = bob_query[:, stars].T
        v[np.arange(c), :, stars] = np.transpose(vquery[:, stars], (1, 0, 2))
        s[:, :, k], v[:, :, k] = scores[None, :, last, INDEX_QUERY], values[None, :, last, INDEX_QUERY]
        top = s.max(axis=-1, keepdims=True)
        w = np.exp(s - top)
        z = w.sum(axis=-1)
        log_zb[stars] = top[..., 0] + np.log(z)
        b[stars] = np.einsum("chj,chjm->chm", w, v) / z[..., None]

    scale = 2.0 ** (3 * p)
    r_lo, r_hi = (
        np.round(value_alice.min(axis=(1, 2)) * scale),
        np.round(value_alice.max(axis=(1, 2)) * scale),
    )
    s_lo, s_hi = (
        np.round(lse(score_alice.min(axis=2)) * scale),
        np.round(lse(score_alice.max(axis=2)) * scale),
    )
    layout = MessageLayout(k, p, r_lo, r_hi, s_lo, s_hi, grid_bits(r_lo, r_hi), grid_bits(s_lo, s_hi))
    return IndexSetup(
        table,
        model,
        form,
        k,
        p,
        score_alice,
        value_alice,
        log_zb,
        b,
        round_fixed(table.embed[last, INDEX_QUERY], p),
        layout,
    )


# ---------------------------------------------------------------------------------------------
# Vectorized protocol steps
# ---------------------------------------------------------------------------------------------


def alice_exact(st: IndexSetup, F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(r [B h m], s [B h]) for bit strings F [B k]: Alice's exact quantities, log-sum-exp style."""
    idx = np.arange(st.k)[None, :]
    s = np.transpose(st.score_alice[:, idx, F], (1, 0, 2))  # [B h k]
    v = np.transpose(st.value_alice[:, idx, F], (1, 0, 2, 3))  # [B h k m]
    top = s.max(axis=-1, keepdims=True)
    w = np.exp(s - top)
    z = w.sum(axis=-1)
    return np.einsum("bhk,bhkm->bhm", w, v) / z[..., None], top[..., 0] + np.log(z)


def quantize(
    st: IndexSetup, r: np.ndarray, s: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(r̂, ŝ, r grid index, s grid index): round to the ε grid, clamped into the layout's intervals."""
    scale, lay = 2.0 ** (3 * st.p), st.layout
    ri = np.clip(np.round(r * scale), lay.r_lo, lay.r_hi)
    si = np.clip(np.round(s * scale), lay.s_lo, lay.s_hi)
    return ri / scale + 0.0, si / scale + 0.0, ri, si  # + 0.0: no −0.0 (messages compare by bits)


def mix(
    st: IndexSetup, r: np.ndarray, s: np.ndarray, stars: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Y [B h m], λ [B h], b [B h m]) with Y = λ r + (1−λ) b, λ = sigmoid(s − log Z_B): the head output
    at N given Alice's (r, s) — exact ones give the model's head, rounded ones give Bob's Ỹ."""
    lam = expit(s - st.log_zb[stars - 1])
    b = st.b[stars - 1]
    return b + lam[..., None] * (r - b), lam, b


def residual(st: IndexSetup, heads: np.ndarray) -> np.ndarray:
    """x_N + Σ_h round_p(head_h), summed in the same order as table_residual ([B h m] -> [B m])."""
    rounded = round_fixed(heads, st.p)
    update = np.zeros(rounded.shape[:1] + rounded.shape[2:])
    for h in range(rounded.shape[1]):
        update = update + rounded[:, h]
    return st.x_final[None, :] + update


def decode_final(st: IndexSetup, x: np.ndarray) -> np.ndarray:
    """ψ_out(N, x) for rows x [B m]. Decoders take [batch pos d_model] and are positionwise (ψ_out(i, x_i)),
    so each row goes in at position N of an otherwise zero block and only position N is read."""
    n, m = st.n, x.shape[-1]
    rows = max(1, CHUNK_ELEMENTS // (n * max(n, m)))
    out = np.empty(len(x), dtype=np.int64)
    for start in range(0, len(x), rows):
        part = x[start : start + rows]
        block = np.zeros((len(part), n, m))
        block[:, n - 1] = part
        out[start : start + rows] = st.table.decoder.decode(block)[:, n - 1]
    return out


def model_at_n(st: IndexSetup, F: np.ndarray, stars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(outputs [B], exact heads [B h m]) of the table model at N, from the closed form (fast path for
    search; reported counterexamples are always re-run through predict)."""
    r, s = alice_exact(st, F)
    y, _, _ = mix(st, r, s, stars)
    return decode_final(st, residual(st, y)), y


def confirm_wrong(st: IndexSetup, F: np.ndarray, stars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(wrong [B], outputs [B]): predict(model as given, σ(f, i*), fixed:p) at N versus f_{i*}."""
    out = predict(st.model, index_input(F, stars), fixed(st.p))[:, st.n - 1]
    return out != F[np.arange(len(F)), stars - 1], out


def index_model(
    k: int,
    model_file: str | os.PathLike | None = None,
    random_seed: int | None = None,
    heads: int | None = None,
    d_model: int | None = None,
) -> Model:
    """The one-layer model an INDEX check runs on: a model file, or a seeded random table model with
    `heads` heads of width `d_model` over the tokens 0, 1, ? at length 2k+1 (messages name the options as
    the command line spells them)."""
    if k < 1:
        raise InputError(f"--k {k} is too small: k ≥ 1 (the INDEX input has length n = 2k+1)")
    if (model_file is None) == (random_seed is None):
        raise InputError("give exactly one of --model FILE or --random-seed R (with --heads h --dim m)")
    if model_file is not None:
        model = load_model_file(model_file)
        if len(model.layers) != 1:
            raise InputError(
                f"{str(model_file)!r} has {len(model.layers)} layers: "
                "the INDEX reduction is about one-layer models"
            )
        return model
    if heads is None or d_model is None or heads < 1 or d_model < 1:
        raise InputError("--random-seed needs --heads h ≥ 1 and --dim m ≥ 1")
    return random_table(np.random.default_rng(random_seed), 2 * k + 1, 3, heads, d_model)
