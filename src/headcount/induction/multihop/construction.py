"""k-hop induction heads by pointer doubling (issue 16): hop_k(σ)_i = σ_{find^k(i)}, find(i) = 1 +
the latest j < i with σ_j = σ_i (⊥ if none; ⊥ propagates), in L(k) = ⌈log₂ k⌉ + 2 layers.

* :func:`khop_construction` — one fixed k, plain layout (the characters only). k = 1 is
  construction.two_layer_induction itself (the same model, weights and info).
* :func:`variable_hop_construction` — every k ≤ K in one model of L(K) layers, hop-prefix layout
  (induction/layouts.py: the hop token S + k − 1 at position 1, then the n characters).
* :func:`khop_shape`, :func:`variable_hop_shape` — their shapes (heads per layer, d_model) before
  they are built, for the resource bounds (induction/source.py's ModelSource.shape).
* (request.py writes what `headcount induction construct` asks for, this construction or
  floor.py's.)

Design. Positions i = 1..N (N = n, or n + 1 with the hop token); a pointer is a position, coded by
the two base-B digits of i − 1 (POS_* of construction.py); ⊥ is the pointer 1 (the sink: find(i) ≥ 2
whenever it exists, and position 1 is always new, so its own state is "⊥, pointing at 1" and stays
so). After layer t ≥ 2 the state of position i is G = find^{2^{t−2}}(i) (a pointer, 2 digits; the
last layer leaves it) and H = find^a(i) as the token there (2 digits) and a ⊥ flag (0/1), the same a
at every position.

    layer 1   previous-token and duplicate heads, exactly as the two-layer construction (COPIED,
              DUP);
              MLP: H_BOT := 1 − clamp(8y − 2) with y = i − DUP/s (y ≈ 0 iff σ_i is new, ≥ 1/2
              otherwise).
    layer 2   find head: query σ_i's digits, key the copied previous token, recency g·j (the latest
              match wins), plus a sink bonus C·H_BOT(i)·[j = 1] (a new σ_i attends to position 1);
              reads
              the position digits (→ G = find(i)) and the token (→ H, a = 1) at the pointer.
              hop-prefix: a second head copies the hop token's bits of k − 1 to every position (its
              W_E
              row), cleaned to exact 0/1 by the MLP (clamp(2r − 1/2)).
    layer t   (t = 3..L) pointer head: query G's digits, key every position's own digits (nearest
              position, β = g per unit of digit distance); reads G, H and H_BOT at p = G(i) into
              read slots:
              G(p) = find^{2^{t−2}}(i) and H(p) = find^{a + 2^{t−3}}(i). The MLP moves them into the
              state
              (x += relu(T) − relu(X), T −= relu(T): exact, every value ≥ 0), G always (t < L), H
              where
              bit t − 3 of k − 1 is set: a weight for fixed k; for hop-prefix the bit b selects,
              X := relu(T − M(1−b)) + relu(X − Mb) for values in [0, M].
    decoder   token logits 2⟨σ, H⟩ − ‖σ‖² (nearest token), ⊥ logit λ·(H_BOT − 1/2).

After layer 2 a = 1, and layer t adds 2^{t−3} where the bit is set: a = 1 + Σ bits = k. The pointer
to a ⊥ lands on position 1, whose state is ⊥, so ⊥ propagates without any OR. d_model is 28 for
every n, S and k ≥ 2 (KHOP_DIM: the two-layer columns, the sink column, state and read slots); the
hop-prefix model adds ⌈log₂ K⌉ bit columns. Heads per layer: (2, 1, 1, …), hop-prefix (2, 2, 1, …).
Every weight is dyadic — integers (β, g, digits) times powers of two (s, 2^key_shift, λ, M, and C =
2^c split as 2^{c−u} in the query and 2^u in the key) — so, as in the two-layer construction,
fixed:p rounding is exact wherever the values fit.

Depth. The doubling reaches k ≤ 2^{L−2}: after layer 2 a position knows hops {0, 1}; a layer reads
at one known pointer what that position knows, so the known set {0..m} grows to at most {0..2m}.
Hence L = ⌈log₂ k⌉ + 2, which is ⌊log₂ k⌋ + 2 exactly when k is a power of two (the issue's ⌊log₂ k⌋
+ 2 for other k would need layer 1 to know find(i), a strictly-earlier latest match, which the
causal heads here cannot single out).

Error budget (real arithmetic; fixed:p precision is measured by certify). With V = max(B_token,
B_pos) and η = 1/(16·L·V): layer-1 heads leave ≤ ε₁ = 1/(16(N+1)B_token³) off target (β₁ =
⌈ln(N/ε₁)⌉), so layer-2 scores move by < g/4 and the duplicate test by < s/16; every later head wins
by ≥ g/2 after errors, leaving ≤ N·e^{−g/2} ≤ η off target (g = ⌈2 ln(N/η)⌉), so each read adds ≤
η·V = 1/(16L) to a value's error and after L layers every digit and flag is within 1/16 of its exact
value (a pointer query within 1/16 still scores its target ≥ 0.87·g above any other position). The
hop-bit head scores position 1 at C ≥ g·N and every other position 0.
tests/induction/test_khop_construction.py checks the state layer by layer against these bounds.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from headcount.common.errors import InputError, param
from headcount.common.jsonable import JsonResult
from headcount.common.validate import check_int
from headcount.core.model import MLP, AttentionHead, Layer, LinearDecoder, Transformer
from headcount.induction.construction import (
    COPIED,
    DUP,
    ONE,
    POS_HI,
    POS_HI2,
    POS_LO,
    POS_LO2,
    POS_SCALED,
    TOKEN_HI,
    TOKEN_HI2,
    TOKEN_LO,
    TOKEN_LO2,
    ModelShape,
    base_embedding,
    check_sizes,
    copy_values,
    digit_base,
    layer_one_heads,
    nearest_head,
    two_layer_induction,
    two_layer_shape,
    write_codes,
)

# Residual columns after the two-layer construction's 0..16 (TOKEN_*, POS_*, PREV_*, ONE,
# POS_SCALED, COPIED, DUP).
FIRST = 17  # 2^u at position 1, else 0: the sink's key
G_HI, G_LO = 18, 19  # the pointer G (digits of G − 1)
H_HI, H_LO, H_BOT = 20, 21, 22  # the token at H (digits) and H's ⊥ flag
TG_HI, TG_LO = 23, 24  # read slots of a pointer head (cleared by its layer's MLP)
TH_HI, TH_LO, TH_BOT = 25, 26, 27
KHOP_DIM = 28  # hop-prefix: bit m of k − 1 in column KHOP_DIM + m
STATE_G, READ_G = (G_HI, G_LO), (TG_HI, TG_LO)
STATE_H, READ_H = (H_HI, H_LO, H_BOT), (TH_HI, TH_LO, TH_BOT)
# Largest hop count a construction is built for (L = 18 layers); the CLI states it in its help.
MAX_CONSTRUCTION_HOPS = 2**16
# Bytes per position while building (W_pos in float64 plus int64 work arrays), per vocabulary token.
BYTES_PER_POSITION_EXTRA = 80


def khop_layers(hops: int) -> int:
    """L(k) = ⌈log₂ k⌉ + 2 (module docstring, "Depth")."""
    return (int(hops) - 1).bit_length() + 2


def khop_shape(hops: int) -> ModelShape:
    """khop_construction's shape for k = hops: heads (2, 1, 1, …) in L(k) layers, d_model KHOP_DIM
    (k = 1: the two-layer construction's)."""
    if hops == 1:
        return two_layer_shape()
    return ModelShape((2,) + (1,) * (khop_layers(hops) - 1), KHOP_DIM)


def variable_hop_shape(max_hops: int) -> ModelShape:
    """variable_hop_construction's shape for K = max_hops: L(K) layers, heads (2, 2, 1, …) (the
    second head of layer 2 copies the hop token's bits: none for K = 1) and KHOP_DIM + L(K) − 2
    columns."""
    doublings = khop_layers(max_hops) - 2
    return ModelShape((2, 2 if doublings else 1) + (1,) * doublings, KHOP_DIM + doublings)


@dataclasses.dataclass(frozen=True)
class KHopParameters(JsonResult):
    """The constants of a k-hop construction (stored in its info as "parameters"; module
    docstring)."""

    token_base: int
    pos_base: int
    beta1: int  # layer-1 score scale β₁
    g: int  # recency step per position (layer 2) and pointer score scale (layers ≥ 3)
    beta2: int  # layer-2 score scale β₂ = g(N + 1)
    scale: float  # s
    key_shift: int  # copied digits stored ×2^key_shift
    sink_exp: int  # the sink bonus C = 2^sink_exp
    sink_shift: int  # C split as 2^(sink_exp − sink_shift) in the query, 2^sink_shift in the key
    bottom_gain: float  # λ
    gate: float  # M of the hop-prefix selection (a power of two above every selected value)


def khop_parameters(n_ctx: int, token_count: int, layers: int) -> KHopParameters:
    """The constants for N = n_ctx positions, token codes 0..token_count−1 and L layers."""
    N, tb, pb = n_ctx, digit_base(token_count), digit_base(n_ctx)
    beta1 = math.ceil(math.log(16 * N * (N + 1) * tb**3))
    g = math.ceil(2 * math.log(16 * layers * max(tb, pb) * N))
    beta2 = g * (N + 1)
    scale = 2.0 ** -(int(math.log2(N)) // 2)
    shift = max(0, int(math.log2(2 * beta2 * (tb - 1) / max(1, (tb - 1) ** 2))) // 2)
    sink_exp = math.ceil(math.log2(2 * beta2 * (tb - 1) ** 2 + g * N + 1))
    lam = 2.0 ** math.ceil(math.log2(5 * tb**2 + 8))
    gate = 2.0 ** math.ceil(math.log2(tb))
    return KHopParameters(tb, pb, beta1, g, beta2, scale, shift, sink_exp, sink_exp // 2, lam, gate)


Neuron = tuple[
    dict[int, float], float, dict[int, float]
]  # (inputs row → weight, bias, outputs col → weight)


def relu_mlp(d: int, neurons: list[Neuron], b_out: dict[int, float] | None = None) -> MLP:
    """A ReLU MLP from its neurons: hidden_h = relu(Σ x_row·w + bias), x_col += Σ_h hidden_h·w."""
    W_in, b_in = np.zeros((d, len(neurons))), np.zeros(len(neurons))
    W_out, bias_out = np.zeros((len(neurons), d)), np.zeros(d)
    for h, (inputs, bias, outputs) in enumerate(neurons):
        for row, w in inputs.items():
            W_in[row, h] = w
        b_in[h] = bias
        for col, w in outputs.items():
            W_out[h, col] = w
    for col, w in (b_out or {}).items():
        bias_out[col] = w
    return MLP(W_in, b_in, W_out, bias_out)


def _move(read: int, state: int) -> list[Neuron]:
    """state := read, read := 0 (both ≥ 0): x_state += relu(read) − relu(state), x_read −=
    relu(read)."""
    return [({read: 1.0}, 0.0, {state: 1.0, read: -1.0}), ({state: 1.0}, 0.0, {state: -1.0})]


def _select(read: int, state: int, bit: int, gate: float) -> list[Neuron]:
    """state := b·read + (1 − b)·state, read := 0, for an exact bit b (column `bit`), values in [0,
    gate]."""
    return [
        ({read: 1.0, bit: gate}, -gate, {state: 1.0}),
        ({state: 1.0, bit: -gate}, 0.0, {state: 1.0}),
        ({state: 1.0}, 0.0, {state: -1.0}),
        ({read: 1.0}, 0.0, {read: -1.0}),
    ]


def _clean_bit(col: int) -> list[Neuron]:
    """x_col := clamp(2r − 1/2) ∈ {0, 1} for r = x_col ≥ 0 (1 for r ≥ 3/4, 0 for r ≤ 1/4)."""
    return [
        ({col: 2.0}, -0.5, {col: 1.0}),
        ({col: 2.0}, -1.5, {col: -1.0}),
        ({col: 1.0}, 0.0, {col: -1.0}),
    ]


def _new_flag_mlp(d: int, s: float) -> MLP:
    """Layer 1's MLP: H_BOT := 1 − clamp(8y − 2), y = i − DUP/s (1 iff σ_i is new: y ≤ 1/4; 0 for y
    ≥ 3/8)."""
    y = {POS_SCALED: 8 / s, DUP: -8 / s}
    return relu_mlp(d, [(y, -2.0, {H_BOT: -1.0}), (y, -3.0, {H_BOT: 1.0})], b_out={H_BOT: 1.0})


def pointer_layer(
    d: int, g: int, move_g: bool, move_h: bool, bit: int | None, gate: float
) -> Layer:
    """Layer t ≥ 3: attend to the position G points at, read its G (move_g) and H (move_h), move
    them in."""
    rows, reads = [], []
    if move_g:
        rows, reads = [*STATE_G], [*READ_G]
    if move_h:
        rows, reads = rows + [*STATE_H], reads + [*READ_H]
    head = AttentionHead(
        *nearest_head(d, STATE_G, (POS_HI, POS_LO, POS_HI2, POS_LO2), g),
        *copy_values(d, rows, reads),
    )
    neurons: list[Neuron] = []
    for read, state in zip(reads, rows):
        if state in STATE_H and bit is not None:
            neurons += _select(read, state, bit, gate)
        else:
            neurons += _move(read, state)
    return Layer((head,), relu_mlp(d, neurons))


def _build(
    n_ctx: int, alphabet: int, hop_tokens: int, layers: int, hops: int | None
) -> Transformer:
    """The model (module docstring): fixed `hops` (plain layout, hop_tokens 0) or, with hops None,
    the bits of k − 1 read from the hop token (hop-prefix layout, `hop_tokens` = K hop tokens
    S..S+K−1)."""
    c = khop_parameters(n_ctx, alphabet + (1 if hop_tokens else 0), layers)
    tb, g, s = c.token_base, c.g, c.scale
    doublings = layers - 2
    variable = hops is None
    d = KHOP_DIM + (doublings if variable else 0)
    bits = [KHOP_DIM + m for m in range(doublings)] if variable else []

    W_E, W_pos = base_embedding(d, n_ctx, alphabet + hop_tokens, tb, c.pos_base, s)
    W_pos[0, FIRST] = 2.0**c.sink_shift
    if hop_tokens:  # every hop token has the code S (no character's) and the bits of k − 1
        codes = np.full(hop_tokens, alphabet)
        write_codes(W_E[alphabet:], (TOKEN_HI, TOKEN_LO, TOKEN_HI2, TOKEN_LO2), codes, tb)
        for m, col in enumerate(bits):
            W_E[alphabet:, col] = (np.arange(hop_tokens) >> m) & 1

    first = Layer(layer_one_heads(d, c.beta1, c.key_shift), _new_flag_mlp(d, s))
    sink_q = 2.0 ** (c.sink_exp - c.sink_shift)
    find = AttentionHead(
        *nearest_head(
            d,
            (TOKEN_HI, TOKEN_LO),
            range(COPIED, COPIED + 4),
            c.beta2 / 2.0**c.key_shift,
            extra_q=[(ONE, g / s), (H_BOT, sink_q)],
            extra_k=[(POS_SCALED, 1.0), (FIRST, 1.0)],
        ),
        *copy_values(d, (POS_HI, POS_LO, TOKEN_HI, TOKEN_LO), (G_HI, G_LO, H_HI, H_LO)),
    )
    second = Layer((find,))
    if bits:  # the hop token's bits to every position (score C at position 1, 0 elsewhere), cleaned
        W_Q, W_K = np.zeros((d, 1)), np.zeros((d, 1))
        W_Q[ONE, 0], W_K[FIRST, 0] = sink_q, 1.0
        hop_bits = AttentionHead(W_Q, W_K, *copy_values(d, bits, bits))
        second = Layer((find, hop_bits), relu_mlp(d, [n for col in bits for n in _clean_bit(col)]))

    stack = [first, second]
    for t in range(3, layers + 1):
        m = t - 3
        move_h = variable or bool(((hops - 1) >> m) & 1)
        stack.append(pointer_layer(d, g, t < layers, move_h, bits[m] if variable else None, c.gate))

    W_U = np.zeros((d, alphabet + 1))  # [d_model alphabet+1], last column ⊥
    b_U = np.zeros(alphabet + 1)
    th, tl = np.arange(alphabet) // tb, np.arange(alphabet) % tb
    W_U[H_HI, :alphabet], W_U[H_LO, :alphabet], b_U[:alphabet] = 2 * th, 2 * tl, -(th**2) - tl**2
    W_U[H_BOT, alphabet], b_U[alphabet] = c.bottom_gain, -c.bottom_gain / 2

    n = n_ctx - (1 if hop_tokens else 0)
    info = {
        "construction": "variable_hop_pointer_doubling" if variable else "khop_pointer_doubling",
        "task": "khop",
        "hops": hop_tokens if variable else hops,
        "layers": layers,
        "layout": "hop-prefix" if variable else "plain",
        "n": n,
        "alphabet": alphabet,
        "parameters": c.to_json(),
    }
    if variable:
        info["max_hops"] = hop_tokens
    return Transformer(W_E, W_pos, tuple(stack), LinearDecoder(W_U, b_U), "causal", info)


def check_khop_sizes(n: int, alphabet: int, hops: int, name: str = "hops") -> int:
    """The hop count (parameter `name`), after checking that a k-hop construction exists at (n,
    alphabet) for it: alphabet ≤ n and 1 ≤ hops ≤ MAX_CONSTRUCTION_HOPS (InputError otherwise)."""
    check_sizes(n, alphabet)
    if alphabet > n:
        raise InputError(
            f"{param('alphabet')} {alphabet} > {param('n')} {n}: the k-hop construction is for "
            "alphabet ≤ n "
            "(seed 000)"
        )
    return check_int(name, hops, 1, MAX_CONSTRUCTION_HOPS)


def khop_construction(n: int, alphabet: int, hops: int) -> Transformer:
    """The k-hop model on Σ^n, plain layout, k = hops: L(k) layers (k = 1: two_layer_induction)."""
    hops = check_khop_sizes(n, alphabet, hops, "hops")
    if hops == 1:
        return two_layer_induction(n, alphabet)
    return _build(n, alphabet, 0, khop_layers(hops), hops)


def variable_hop_construction(n: int, alphabet: int, max_hops: int) -> Transformer:
    """One model of L(K) layers answering hop_k for every k ≤ K = max_hops, hop-prefix layout:
    context n + 1, vocabulary S + K (the hop tokens S..S+K−1), outputs the S characters and ⊥."""
    max_hops = check_khop_sizes(n, alphabet, max_hops, "max_hops")
    return _build(n + 1, alphabet, max_hops, khop_layers(max_hops), None)
