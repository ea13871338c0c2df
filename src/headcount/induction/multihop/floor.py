"""k-hop induction heads in ⌊log₂ k⌋ + 2 layers (issue 35): the latest strictly earlier match found
in layer 1 by one head per binary level of the position, then pointer doubling.

Depth. construction.py needs ⌈log₂ k⌉ + 2 layers because its layer 1 cannot point at the latest
j < i with σ_j = σ_i: key i always matches its own token, and one causal head whose position part
has O(1) dimensions cannot rank key i below every earlier key (pointer_rank.py measures the rank
that takes within two feature families: about 2√n). Here layer 1 has one head per binary level ℓ
of the 0-based position p = i − 1 (Λ = ⌈log₂ N⌉ heads), and each head's position part is a key
bias only, so layer 1 leaves find(i) at every position and every later layer doubles the hop
count it knows: after layer t ≥ 2 the pointer is find^{2^{t−1}}(i), so L layers answer k ≤
2^{L−1} − 1, L(k) = ⌊log₂ k⌋ + 2.

Layer 1. For a key j < i let ℓ* be the highest bit where p_j and p_i differ: then bit ℓ* of p_i is
1, of p_j 0, and the bits above agree. So the keys j < i fall into the level blocks S_ℓ(i) = {j :
P_{ℓ+1}(j) = P_{ℓ+1}(i), d_ℓ(j) = 0} (d_ℓ the bit, P_{ℓ+1} = p >> (ℓ + 1); empty unless d_ℓ(i) =
1), and every key of S_ℓ is later than every key of S_{ℓ'} for ℓ < ℓ'. The latest earlier match
is therefore the latest match in S_ℓ for the smallest ℓ that holds one. Head ℓ scores

    β·(‖x_i‖² − ‖x_i − x_j‖²)  +  c·P_{ℓ+1}(j) − c·d_ℓ(j) + g·p_j      (x: the two token digits)

(the first term through construction.nearest_head; the rest is one key column, KEY_ℓ). With c =
g(N + 1) and β = g(2N + 2): among matching keys the top is the latest match in S_ℓ when there is
one, else key i itself (when d_ℓ(i) = 1 every other matching key scores below i's c·P(i) − c +
g·p_i; when d_ℓ(i) = 0 key i is the latest of the keys scoring c·P(i) + g·p), by ≥ g; a key of
another token scores ≥ g below key i. Its value is (the two digits of j, FV_ℓ(j)) with FV_ℓ =
P_{ℓ+1} − d_ℓ; the flag F_ℓ = FV_ℓ(landed) − FV_ℓ(i) is 1 when the head found a match in S_ℓ and
0 when it landed on i. Layer 1's MLP takes the first level found:

    G := Σ_ℓ relu(digit_ℓ − M(1 − F_ℓ) − M·Σ_{ℓ'<ℓ} F_ℓ')      (each digit of G − 1; M = gate)

so G = find(i) = 1 + the match, or the digits (0, 0) — position 1, the sink — when no level found
one (⊥). The state after layer 1 is G = find(i), H = σ_i (hop 0: W_E writes the token's digits into
H's columns) and H_BOT = 0, except at position 1, whose H_BOT is 1: a pointer is never 1 unless it
is ⊥ (find(i) ≥ 2), so a hop read there is ⊥, and position 1's own answer for k ≥ 1 is ⊥.

Layers t = 2..L are construction.pointer_layer as they are: attend to G's position, move its G
in (t < L) and, where bit t − 2 of k is set, its H; so H holds hop Σ_{set bits} 2^{t−2} = k.

Errors (real arithmetic). Each head of layer 1 leaves ≤ η = N·e^{−g} of its weight off its top
key, so a digit moves by ≤ η·B and a flag by ≤ η·N; the MLP's sum moves G's digits by ≤ η·B +
M·(Λ + 1)·η·N ≤ 1/(16L), with g = ⌈2 ln(16·L·M·Λ·N)⌉ (and ≥ construction.khop_parameters' g, so
the pointer layers keep their budget). Every weight is an integer or a power of two.

d_model = KHOP_DIM + 2 + 5Λ (the next-position digits; per level the key bias, FV, and the head's
three outputs); heads per layer (Λ, 1, 1, …).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from headcount.common.jsonable import JsonResult
from headcount.core.model import AttentionHead, Layer, LinearDecoder, Transformer
from headcount.induction.construction import (
    ONE,
    TOKEN_HI,
    TOKEN_HI2,
    TOKEN_LO,
    TOKEN_LO2,
    ModelShape,
    base_embedding,
    copy_values,
    digit_base,
    nearest_head,
)
from headcount.induction.multihop.construction import (
    G_HI,
    G_LO,
    H_BOT,
    H_HI,
    H_LO,
    KHOP_DIM,
    check_khop_sizes,
    pointer_layer,
    relu_mlp,
)

NEXT_HI, NEXT_LO = KHOP_DIM, KHOP_DIM + 1  # digits of i at position i (= find − 1 for a match at i)
LEVEL_COLUMNS = 5  # per level ℓ: KEY_ℓ, FV_ℓ, and head ℓ's outputs (two digits, FV of the key)


def floor_layers(hops: int) -> int:
    """L(k) = ⌊log₂ k⌋ + 2 (module docstring, "Depth")."""
    return int(hops).bit_length() + 1


def floor_levels(n_ctx: int) -> int:
    """Λ: the binary levels of the 0-based positions 0..n_ctx − 1 (one at least)."""
    return max(1, (n_ctx - 1).bit_length())


def level_columns(level: int) -> tuple[int, int, int, int, int]:
    """(KEY, FV, OUT_HI, OUT_LO, OUT_FV) of level ℓ."""
    first = KHOP_DIM + 2 + LEVEL_COLUMNS * level
    return tuple(range(first, first + LEVEL_COLUMNS))  # type: ignore[return-value]


def floor_shape(n: int, hops: int) -> ModelShape:
    """floor_construction's shape at n positions for k = hops: heads (Λ, 1, 1, …) in L(k) layers."""
    levels = floor_levels(n)
    return ModelShape(
        (levels,) + (1,) * (floor_layers(hops) - 1), KHOP_DIM + 2 + LEVEL_COLUMNS * levels
    )


@dataclasses.dataclass(frozen=True)
class FloorParameters(JsonResult):
    """The constants of a floor-depth k-hop construction (its info's "parameters")."""

    token_base: int
    pos_base: int
    levels: int  # Λ, the heads of layer 1
    g: int  # recency step per position (layer 1) and pointer score scale (layers ≥ 2)
    block: int  # c: a level block's weight in layer 1's key bias
    beta: int  # β: layer 1's token match, per unit of squared digit distance
    gate: float  # M: a power of two above every digit
    bottom_gain: float  # λ of the ⊥ logit


def floor_parameters(n_ctx: int, alphabet: int, layers: int) -> FloorParameters:
    """The constants for N = n_ctx positions, `alphabet` tokens and L layers."""
    N, tb, pb = n_ctx, digit_base(alphabet), digit_base(n_ctx)
    levels = floor_levels(N)
    gate = 2.0 ** math.ceil(math.log2(max(tb, pb) + 1))
    g = math.ceil(2 * math.log(16 * layers * gate * levels * N))
    lam = 2.0 ** math.ceil(math.log2(5 * tb**2 + 8))
    return FloorParameters(tb, pb, levels, g, g * (N + 1), g * (2 * N + 2), gate, lam)


def _embedding(d: int, n: int, alphabet: int, c: FloorParameters) -> tuple[np.ndarray, np.ndarray]:
    """W_E [alphabet d_model] and W_pos [n d_model]: the shared columns, H = the token's digits,
    H_BOT = 1 at position 1, the next-position digits, and per level KEY_ℓ and FV_ℓ."""
    W_E, W_pos = base_embedding(d, n, alphabet, c.token_base, c.pos_base, 1.0)
    W_E[:, H_HI], W_E[:, H_LO] = W_E[:, TOKEN_HI], W_E[:, TOKEN_LO]
    W_pos[0, H_BOT] = 1.0
    p = np.arange(n)  # i − 1
    W_pos[:, NEXT_HI], W_pos[:, NEXT_LO] = (p + 1) // c.pos_base, (p + 1) % c.pos_base
    for level in range(c.levels):
        key, fv = level_columns(level)[:2]
        above, bit = p >> (level + 1), (p >> level) & 1
        W_pos[:, key] = c.block * above - c.block * bit + c.g * p
        W_pos[:, fv] = above - bit
    return W_E, W_pos


def _first_layer(d: int, c: FloorParameters) -> Layer:
    """Λ level heads and the MLP that keeps the first level that found a match (module
    docstring)."""
    heads, neurons = [], []
    flags: dict[int, float] = {}  # Σ_{ℓ'<ℓ} F_ℓ' as input weights (times −M below)
    for level in range(c.levels):
        key, fv, out_hi, out_lo, out_fv = level_columns(level)
        W_Q, W_K = nearest_head(
            d,
            (TOKEN_HI, TOKEN_LO),
            (TOKEN_HI, TOKEN_LO, TOKEN_HI2, TOKEN_LO2),
            c.beta,
            extra_q=[(ONE, 1.0)],
            extra_k=[(key, 1.0)],
        )
        heads.append(
            AttentionHead(
                W_Q, W_K, *copy_values(d, (NEXT_HI, NEXT_LO, fv), (out_hi, out_lo, out_fv))
            )
        )
        M = c.gate
        for out, state in ((out_hi, G_HI), (out_lo, G_LO)):
            inputs = {out: 1.0, out_fv: M, fv: -M}
            for col, w in flags.items():
                inputs[col] = inputs.get(col, 0.0) - M * w
            neurons.append((inputs, -M, {state: 1.0}))
        flags[out_fv], flags[fv] = 1.0, -1.0
    return Layer(tuple(heads), relu_mlp(d, neurons))


def floor_construction(n: int, alphabet: int, hops: int) -> Transformer:
    """The k-hop model on Σ^n, plain layout, in ⌊log₂ k⌋ + 2 layers (module docstring)."""
    hops = check_khop_sizes(n, alphabet, hops, "hops")
    layers = floor_layers(hops)
    c = floor_parameters(n, alphabet, layers)
    d = floor_shape(n, hops).d_model
    W_E, W_pos = _embedding(d, n, alphabet, c)
    stack = [_first_layer(d, c)]
    for t in range(2, layers + 1):
        move_h = bool((hops >> (t - 2)) & 1)
        stack.append(pointer_layer(d, c.g, t < layers, move_h, None, c.gate))

    W_U = np.zeros((d, alphabet + 1))  # [d_model alphabet+1], last column ⊥
    b_U = np.zeros(alphabet + 1)
    tb = c.token_base
    th, tl = np.arange(alphabet) // tb, np.arange(alphabet) % tb
    W_U[H_HI, :alphabet], W_U[H_LO, :alphabet], b_U[:alphabet] = 2 * th, 2 * tl, -(th**2) - tl**2
    W_U[H_BOT, alphabet], b_U[alphabet] = c.bottom_gain, -c.bottom_gain / 2
    info = {
        "construction": "khop_floor_levels",
        "task": "khop",
        "hops": hops,
        "layers": layers,
        "depth": "floor",
        "layout": "plain",
        "n": n,
        "alphabet": alphabet,
        "parameters": c.to_json(),
    }
    return Transformer(W_E, W_pos, tuple(stack), LinearDecoder(W_U, b_U), "causal", info)
