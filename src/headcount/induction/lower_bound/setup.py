"""What the INDEX reduction reads from a one-layer model, precomputed once per (model, k, p), and
the vectorized steps every other module of the reduction is built from.

Setting. A one-layer model in table form at fixed:p, k ≥ 1, n = 2k+1, and the INDEX input σ(f, i*) =
(e_1, f_1, …, e_k, f_k, ?) (token 2 is '?', e_i = ? iff i = i*, else 0). At the last position N = n,
head h reads the query q = round_p(Q̃[h, N, ?]); position j contributes the score s_j = ⟨q,
round_p(K̃[h, j, σ_j])⟩ and the value v_j = round_p(Ṽ[h, j, σ_j]) ∈ R^m (m = d_model). The head
output is Y = Σ_j e^{s_j} v_j / Σ_j e^{s_j}, rounded to the 2^-p grid (round_p); the decoder reads
round_p(ψ_in(N, ?)) + Σ_h round_p(Y_h). These are exactly the rounding points of
:func:`headcount.core.model.table.table_residual`, so Bob's computation mirrors the model's, op for
op, from the head outputs on.

Scope and assumptions. A table-form model is used as given (model_form "table"). A one-layer
weight-form model is converted, at the (k, p) the reduction runs at, with
core.passes.fixed_table.table_at_precision into the table of its own fixed:p rounding points
(positions 1..n, tokens 0, 1, ?): ψ_in = round_p(W_E + W_pos), Q̃ = round_p(ψ_in W_Q), K̃ =
round_p(ψ_in W_K) and Ṽ = v W_O with v = round_p(ψ_in W_V), all computed exactly, so that the
table's fixed:p model on INDEX inputs IS the weight model's (model_form WEIGHTS_FORM). That is
possible only where every v W_O is on the 2^-p grid within [−2^p, 2^p] (the weight form does not
round v W_O, a table rounds Ṽ) and every entry is a float64 number: otherwise the reduction refuses
the model (InputError), never runs on a table with other rounding points. check_protocol compares
Bob with predict on that table (the same answers as the model's), and refute confirms
counterexamples on the model as given. refute alone (index_setup(…, guide=True)) does not refuse
such a model: every input it reports is confirmed on the model as given, so the table only guides
its search, and where no exact table exists the guide is the real-arithmetic table
(core.model.table.table_from_weights at positions 1..n, tokens 0, 1, ?; model_form GUIDE_FORM),
whose protocol is not the model's. Decoders are taken to be positionwise (ψ_out(i, x_i), as the
Decoder protocol says): Bob decodes his vector at position N of an otherwise zero block.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.special import expit

from headcount.common.errors import InputError, param
from headcount.common.resources import check_memory
from headcount.common.validate import check_int
from headcount.core.certify import Model, predict
from headcount.core.model import OneLayerTable, Transformer, random_table, table_from_weights
from headcount.core.numbers import fixed, round_fixed
from headcount.core.passes import NoExactTable, table_at_precision
from headcount.induction.construction import load_model_file
from headcount.induction.lower_bound.resources import (
    CHUNK_ELEMENTS,
    check_context,
    setup_bytes,
    table_bytes,
)
from headcount.induction.source import ModelSource
from headcount.induction.task import INDEX_QUERY, INDEX_TOKENS, index_input

# Largest p (precision_bits): the precision modes' range (fixed:p for 1 ≤ p ≤ 60,
# core.numbers.precision), which the model's own evaluation at fixed:p follows; Alice's grid 2^{-3p}
# stays well inside float64 there.
MAX_PRECISION_BITS = 60
# model_form of a weight-form model: the reduction ran on the table of its own fixed:p rounding
# points.
WEIGHTS_FORM = "weights (exact table of its fixed:p rounding points)"
# model_form of a weight-form model no exact table has, searched by refute only
# (index_setup(guide=True)): the search ran on its real-arithmetic table (table_from_weights), every
# reported input was run on the model.
GUIDE_FORM = (
    "weights (search guided by its real-arithmetic table; every input confirmed on the model)"
)


@dataclass(frozen=True, eq=False)
class MessageLayout:
    """Where each transmitted number can lie (Bob knows this from the model alone) and its bit
    width.

    Ends are grid indices (integers, as floats) of the ε = 2^{-3p} grid: number = index·ε. The
    widths depend only on (model, k, p), so every message has the same length `bits`.
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
    """Everything the protocol needs at length n = 2k+1, precomputed once (all rounded as the model
    does).

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

    @property
    def models_own(self) -> bool:
        """Whether the table's fixed:p model is the model's (form "table" or WEIGHTS_FORM), so that
        the protocol on it — its messages, their length, Bob's answers — is the model's; False for
        GUIDE_FORM."""
        return self.form != GUIDE_FORM


def as_table(model: Model, n: int, p: int, guide: bool = False) -> tuple[OneLayerTable, str]:
    """(table, model_form) the reduction runs on at length n and fixed:p: a table model as given
    ("table"), or a one-layer attention-only weight-form model as the exact table of its own fixed:p
    rounding points at positions 1..n and tokens 0, 1, ? (WEIGHTS_FORM; module docstring);
    InputError otherwise, and for a weight-form model no table can follow
    (core.passes.fixed_table.NoExactTable) — unless guide=True (a search whose every answer is
    confirmed on the model), which then gets its real-arithmetic table (GUIDE_FORM)."""
    if isinstance(model, OneLayerTable):
        return model, "table"
    if isinstance(model, Transformer):
        if len(model.layers) != 1:
            raise InputError(
                f"the INDEX reduction is for one-layer models; this model has {len(model.layers)} "
                "layers"
            )
        if model.layers[0].mlp is not None:
            raise InputError(
                "the INDEX reduction is for one-layer attention-only models; this layer has an MLP"
            )
        tokens = min(INDEX_TOKENS, model.alphabet)
        try:
            table = table_at_precision(model, p, n, tokens)
        except NoExactTable as error:
            if not guide:
                raise InputError(f"INDEX reduction: {error}") from None
        except InputError as error:
            raise InputError(f"INDEX reduction: {error}") from None
        else:
            return table, WEIGHTS_FORM
        # only the positions and tokens the INDEX inputs use: at most the exact table's memory
        # (setup_bytes)
        return table_from_weights(
            replace(model, W_E=model.W_E[:tokens], W_pos=model.W_pos[:n])
        ), GUIDE_FORM
    raise InputError(
        f"expected a OneLayerTable or a one-layer Transformer, got {type(model).__name__}"
    )


def lse(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """log Σ exp along `axis`, shifted by the max (finite scores only)."""
    top = x.max(axis=axis, keepdims=True)
    return np.squeeze(top, axis) + np.log(np.exp(x - top).sum(axis=axis))


def grid_bits(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """⌈log₂(#grid points)⌉ for index ranges [lo, hi] (integral floats, possibly beyond 2^63)."""
    # ⌈log₂(count)⌉ = (count − 1).bit_length(), in Python ints (exact at any p).
    flat = [(int(top) - int(bottom)).bit_length() for bottom, top in zip(lo.ravel(), hi.ravel())]
    return np.array(flat, dtype=np.int64).reshape(lo.shape)


def index_setup(model: Model, k: int, p: int, *, guide: bool = False) -> IndexSetup:
    """The IndexSetup of `model` at INDEX size k and fixed:p; InputError for a model or size the
    reduction is not about (not one layer of attention, context shorter than 2k+1, fewer than 3
    tokens), and for a weight-form model whose fixed:p rounding points no table has (as_table)
    unless guide=True: then its setup is of its real-arithmetic table (form GUIDE_FORM), a search
    guide whose protocol is not the model's (for refute, which confirms every answer on the model as
    given)."""
    k = check_int("k", k, 1)
    p = check_int("p (precision bits)", p, 1)
    if p > MAX_PRECISION_BITS:
        raise InputError(
            f"p (precision bits) must be at most {MAX_PRECISION_BITS} for the INDEX protocol "
            f"({param('precision_bits')}: the precision modes' fixed:p, 1 ≤ p ≤ "
            f"{MAX_PRECISION_BITS}), "
            f"got {p}"
        )
    check_context(model, k)
    check_memory(setup_bytes(model, k), f"the INDEX reduction at {param('k')} {k}")
    n = 2 * k + 1
    alphabet = getattr(model, "alphabet", INDEX_TOKENS)  # as_table refuses what has none
    if alphabet < INDEX_TOKENS:
        raise InputError(
            f"INDEX needs the tokens 0, 1, ? (alphabet ≥ 3); the model's alphabet is {alphabet}"
        )
    table, form = as_table(model, n, p, guide)
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
        s[:, :, k], v[:, :, k] = (
            scores[None, :, last, INDEX_QUERY],
            values[None, :, last, INDEX_QUERY],
        )
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
    layout = MessageLayout(
        k, p, r_lo, r_hi, s_lo, s_hi, grid_bits(r_lo, r_hi), grid_bits(s_lo, s_hi)
    )
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
    """(r̂, ŝ, r grid index, s grid index): round to the ε grid, clamped into the layout's
    intervals."""
    scale, lay = 2.0 ** (3 * st.p), st.layout
    ri = np.clip(np.round(r * scale), lay.r_lo, lay.r_hi)
    si = np.clip(np.round(s * scale), lay.s_lo, lay.s_hi)
    return ri / scale + 0.0, si / scale + 0.0, ri, si  # + 0.0: no −0.0 (messages compare by bits)


def mix(
    st: IndexSetup, r: np.ndarray, s: np.ndarray, stars: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Y [B h m], λ [B h], b [B h m]) with Y = λ r + (1−λ) b, λ = sigmoid(s − log Z_B): the head
    output at N given Alice's (r, s) — exact ones give the model's head, rounded ones give Bob's
    Ỹ."""
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
    """ψ_out(N, x) for rows x [B m]. Decoders take [batch pos d_model] and are positionwise
    (ψ_out(i, x_i)), so each row goes in at position N of an otherwise zero block and only position
    N is read."""
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
    """(outputs [B], exact heads [B h m]) of the table model at N, from the closed form (fast path
    for search; reported counterexamples are always re-run through predict)."""
    r, s = alice_exact(st, F)
    y, _, _ = mix(st, r, s, stars)
    return decode_final(st, residual(st, y)), y


def confirm_wrong(
    st: IndexSetup, F: np.ndarray, stars: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(wrong [B], outputs [B]): predict(model as given, σ(f, i*), fixed:p) at N versus f_{i*}."""
    out = predict(st.model, index_input(F, stars), fixed(st.p))[:, st.n - 1]
    return out != F[np.arange(len(F)), stars - 1], out


def check_index_size(k: int) -> int:
    """k, the INDEX size: InputError unless k ≥ 1 (named as the parameter `k`)."""
    if k < 1:
        raise InputError(
            f"{param('k')} {k} is too small: k ≥ 1 (the INDEX input has length n = 2k+1)"
        )
    return k


def random_index_model(
    k: int, random_seed: int, heads: int | None, dim: int | None
) -> OneLayerTable:
    """A seeded random one-layer table model for INDEX at size k: `heads` heads of width `dim` over
    the tokens 0, 1, ? at length 2k+1 (its tables within the memory limit)."""
    check_index_size(k)
    if heads is None or dim is None or heads < 1 or dim < 1:
        raise InputError(
            f"{param('random_seed')} needs {param('heads')} h ≥ 1 and {param('dim')} m ≥ 1"
        )
    random_seed = check_int("random_seed", random_seed, 0)
    # Gaussian tables: each array and its scaled copy exist at once while it is drawn
    check_memory(
        2 * table_bytes(2 * k + 1, INDEX_TOKENS, heads, dim, dim),
        f"a random one-layer model at {param('k')} {k} {param('heads')} {heads} {param('dim')} "
        f"{dim}",
    )
    return random_table(np.random.default_rng(random_seed), 2 * k + 1, INDEX_TOKENS, heads, dim)


def load_index_model(source: ModelSource, k: int) -> Model:
    """The one-layer model an INDEX check at size k runs on: the file read (InputError unless it has
    one layer), or the seeded random table model (random_index_model)."""
    check_index_size(k)
    if source.layers is not None:
        raise InputError(
            f"{param('layers')} names a construction: the INDEX commands run a one-layer model "
            "file or "
            "a random model"
        )
    if (source.model_file is None) == (source.random_seed is None):
        raise InputError(
            f"give exactly one of {param('model')} FILE or {param('random_seed')} R "
            f"(with {param('heads')} h {param('dim')} m)"
        )
    if source.model_file is None:
        return random_index_model(k, source.random_seed, source.heads, source.dim)
    if source.heads is not None or source.dim is not None:  # they shape the random model only
        raise InputError(
            f"{param('heads')} and {param('dim')} describe the random model: give them with "
            f"{param('random_seed')}, not {param('model')}"
        )
    model = load_model_file(source.model_file)
    if len(model.layers) != 1:
        raise InputError(
            f"{str(source.model_file)!r} has {len(model.layers)} layers: "
            "the INDEX reduction is about one-layer models"
        )
    return model
