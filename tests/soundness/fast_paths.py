"""Hostile families for the fast paths of the evaluation passes: one family per shortcut, each built
to stress the corner that shortcut cuts (issue 27). tests/soundness/test_fast_paths.py runs them
against the references; this module only builds the cases.

A family is a function rng -> Case: a model, the precision p it is checked at, the inputs, the
backend, and which reference the shortcut answers to:

* ``tie-settling`` (bounds.settle_ties: a head output whose box straddles a rounding tie is rounded
  exactly): causal or full, uniform or exact-score attention over values on the 2^-p grid with
  magnitudes to 2^40 at p = 27..60, so the rounded mean needs more than 53 bits; the decoder
  compares a head output with the float64 number nearest to its exact value, or the next one (issue
  27, finding 1).
* ``negligible-cut`` (attention.floats._sparse_softmax_values: keys of weight < 2^-72/keys left out
  of the float sum): n = 257..320 (the blocked float pass), a few kept keys and the rest at shifted
  scores around the cut (e^-40 … e^-80); values 1e300, 1e200, 1e20 under those weights, zero or
  cancelling values on the kept keys; decoders whose thresholds are as small as what the left-out
  keys add (finding 2).
* ``score-tame`` (softmax_bound.scores_tame: Σ_d |q_d|·max_j |k_jd| < 2^39 skips the scan of every
  score block): q and k at fixed:p (p = 20..60) with Σ|q|·max|k| just under and just over 2^39 and
  2^40, and scores near 2^53 and 2^58, where the far cut next to the top score rounds by more than
  1.
* ``sparse-far`` (blocked_bound.sparse_block: far keys bounded as a group, never exponentiated): one
  kept key and many keys just beyond the far cut, values at the clip 2^p (p = 28..60), so the far
  group's weight times the values is far above the 2^-p grid.
* ``prefix-sharing`` (core.passes.prefix: each distinct prefix evaluated once): every input of Σ^6
  over {0, 1} of palette models (palettes.py) with the causal mask, one or two layers.
* ``torch-backend`` (core.attention.torch_backend: the blocked kernels in torch): palette models,
  the rigorous pass on torch's CPU kernels against NumPy's.
* ``exact-logit-ties`` (model.argmax_bounds: a radius-0 logit is exact, ties go to the lowest
  class): exact residuals (silent heads or grid values) and decoders with tied columns, columns 1
  ulp apart and subnormal differences.

Models are small enough that the exact evaluator (core.passes.exact_fixed) answers every position;
`kind` says which reference applies: "exact" (the fixed:p proof against the exact evaluator, and the
certificate of the blocked algorithm against the reference algorithm's) or "float" (the float64 pass
against the reference algorithm's dense pass).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from headcount.core.attention import ATTENTION_BLOCK
from headcount.core.model import AttentionHead, Layer, LinearDecoder, Transformer
from headcount.core.passes.exact_fixed import exact_fixed_residual
from headcount.induction.task import all_sequences
from tests.soundness.palettes import NumpyFill, Shape, build_model, random_case, silence_heads


@dataclass(frozen=True, eq=False)
class Case:
    model: Transformer
    bits: int  # the fixed:p the proof is checked at
    tokens: np.ndarray  # [batch n] the inputs checked
    kind: str = "exact"  # "exact": proof + certificate; "float": the float64 pass
    backend: str = "numpy"  # the backend of the blocked side


def _grid(values: np.ndarray, bits: int) -> np.ndarray:
    """values moved onto the 2^-bits grid (exact: a float times a power of two, rounded, scaled
    back)."""
    return np.round(np.asarray(values, dtype=np.float64) * 2.0**bits) / 2.0**bits


def _one_head(W_Q, W_K, W_V, W_O) -> AttentionHead:
    return AttentionHead(*(np.asarray(w, dtype=np.float64) for w in (W_Q, W_K, W_V, W_O)))


def _sample_rows(rng: np.random.Generator, n: int, alphabet: int, rows: int) -> np.ndarray:
    """`rows` seeded inputs plus the all-zeros and all-ones rows (where every key looks alike)."""
    tokens = rng.integers(0, alphabet, size=(rows, n))
    return np.concatenate([tokens, np.zeros((1, n), np.int64), np.ones((1, n), np.int64)])


# ---- tie-settling
# ------------------------------------------------------------------------------------


def tie_settling(rng: np.random.Generator) -> Case:
    """Grid values that need more than 53 bits at p = 27..60, magnitudes to 2^40 (module
    docstring)."""
    bits = int(rng.integers(27, 61))
    mask = "causal" if rng.random() < 0.7 else "full"
    n = int(rng.integers(3, 7)) if mask == "causal" else int(rng.choice([3, 5, 6]))
    d = 1 if rng.random() < 0.6 else 2  # d = 1: the decoder's logits are exact products (recipe)
    magnitude = 2.0 ** int(rng.integers(0, 41))
    mantissas = 1 + rng.integers(0, 2**30, size=(n, d)) * 2.0**-30
    W_pos = _grid(magnitude * mantissas * rng.choice([-1.0, 1.0], size=(n, d)), bits)
    W_pos[rng.random((n, d)) < 0.2] = 0.0
    W_E = _grid(rng.choice([0.0, 0.5, 1.0, 3.0], size=(2, d)) * magnitude, bits) * rng.choice(
        [0.0, 1.0]
    )
    if rng.random() < 0.6:  # uniform attention
        W_Q, W_K = np.zeros((d, 1)), np.zeros((d, 1))
    else:  # exact scores that tie or nearly tie: small integers times the grid values' scale
        W_Q = rng.choice([0.0, 1.0, -1.0], size=(d, 1)) * 2.0 ** -int(rng.integers(20, 41))
        W_K = rng.choice([0.0, 1.0, 2.0], size=(d, 1)) * 2.0 ** -int(rng.integers(0, 8))
    W_V = np.eye(d)[:, : int(rng.integers(1, d + 1))]
    W_O = np.eye(d)[: W_V.shape[1]] * rng.choice([1.0, 3.0, 0.5, -1.0])
    heads = [_one_head(W_Q, W_K, W_V, W_O)]
    if rng.random() < 0.3:
        heads.append(
            _one_head(W_K, W_Q, W_V, W_O * rng.choice([0.5, -3.0]))
        )  # never the first's negative
    # the decoder reads one head output alone (as in the recipe): position `pos` embeds token 0 to 0
    # a position whose uniform mean is not dyadic (3, 5 or 6 keys), and a coordinate the heads write
    pos = (
        int(rng.choice([i for i in range(n) if i + 1 in (3, 5, 6)]))
        if mask == "causal"
        else int(rng.integers(n))
    )
    coord = int(rng.integers(W_V.shape[1]))
    W_pos[pos] = 0.0
    W_E[0] = 0.0
    probe_decoder = LinearDecoder(np.zeros((d, 3)), np.zeros(3))
    probe = Transformer(W_E, W_pos, (Layer(tuple(heads)),), probe_decoder, mask)
    # a few inputs, so that every head-output row is within settle_ties' budget (bounds.TIE_ROWS)
    tokens = rng.integers(0, 2, size=(4, n))
    tokens[0, pos] = row = 0
    exact = exact_fixed_residual(probe, tokens[row], bits)[
        pos, coord
    ]  # a multiple of 2^-p, maybe > 53 bits
    nearest = int(exact.p) / int(
        exact.q
    )  # the float a zero-radius box would claim (correctly rounded)
    c = nearest + float(rng.choice([0, 0, 0, 1, -1])) * float(np.spacing(nearest))
    W_U = np.zeros((d, 3))
    W_U[coord, 0] = 1.0  # logits (x_coord, c, −1e300): class 0 iff the exact x_coord ≥ c
    decoder = LinearDecoder(W_U, np.array([0.0, c, -1e300]))
    return Case(Transformer(W_E, W_pos, (Layer(tuple(heads)),), decoder, mask), bits, tokens)


# ---- negligible-cut
# ----------------------------------------------------------------------------------

ONE, KEY, VALUE, TOKEN = 0, 1, 2, 3  # residual coordinates of the float-pass families


def negligible_cut(rng: np.random.Generator) -> Case:
    """Huge values under tiny weights, zero and cancelling kept values (module docstring)."""
    n = int(rng.integers(ATTENTION_BLOCK + 1, ATTENTION_BLOCK + 65))
    d = 4
    W_pos = np.zeros((n, d))
    W_pos[:, ONE] = 1.0
    W_pos[:, KEY] = -(40.0 + 40.0 * rng.random(n))  # shifted scores around the cut (≈ −57)
    kept = rng.choice(n, size=int(rng.integers(1, 4)), replace=False)
    W_pos[kept, KEY] = 0.0
    W_pos[:, VALUE] = rng.choice([1e300, 1e200, 1e20, 1.0, -1e300, 0.0], size=n)
    kept_values = {"zero": 0.0, "one": 1.0, "huge": 1e300}[str(rng.choice(["zero", "one", "huge"]))]
    W_pos[kept, VALUE] = kept_values
    if len(kept) > 1 and rng.random() < 0.5:  # kept terms that cancel
        W_pos[kept[1], VALUE] = -W_pos[kept[0], VALUE] if W_pos[kept[0], VALUE] else -1.0
        W_pos[kept[0], VALUE] = -W_pos[kept[1], VALUE]
    W_E = np.zeros((2, d))
    W_E[1, TOKEN] = 1.0
    W_E[1, VALUE] = float(rng.choice([0.0, 1.0, 1e-20]))
    W_Q, W_K = np.zeros((d, 1)), np.zeros((d, 1))
    W_Q[ONE, 0], W_K[KEY, 0] = 1.0, 1.0
    W_K[TOKEN, 0] = float(rng.choice([0.0, 0.0, -5.0, 3.0]))
    W_V = np.zeros((d, 2))
    W_V[VALUE, 0], W_V[TOKEN, 1] = 1.0, float(rng.choice([1.0, 1e-30]))
    W_O = np.zeros((2, d))
    W_O[0, VALUE], W_O[1, TOKEN] = 1.0, 1.0
    layer = Layer((_one_head(W_Q, W_K, W_V, W_O),))
    # decoder: class 0 when the value coordinate is above a threshold as small as what the left-out
    # keys add
    threshold = float(rng.choice([0.0, 1e-30, 1e-25, 1e-20, -1e-25, 0.5, 1e250]))
    W_U = np.zeros((d, 3))
    W_U[VALUE, 0] = 1.0
    W_U[TOKEN, 2] = float(rng.choice([0.0, 1e-20]))
    decoder = LinearDecoder(W_U, np.array([0.0, threshold, -1e300]))
    model = Transformer(W_E, W_pos, (layer,), decoder, "causal")
    backend = "torch" if rng.random() < 0.25 else "numpy"
    return Case(model, 8, _sample_rows(rng, n, 2, 1), kind="float", backend=backend)


# ---- score-tame
# --------------------------------------------------------------------------------------


def score_tame(rng: np.random.Generator) -> Case:
    """Σ_d |q_d|·max_j |k_jd| just under and over 2^39 and 2^40 at fixed:p, p = 20..60."""
    bits = int(rng.integers(20, 61))
    n, d_head = int(rng.integers(8, 25)), int(rng.integers(1, 3))  # enough keys for a sparse block
    d = 2
    # the shortcut's own edges, and scores where a float threshold next to the top score rounds by >
    # 1
    edge = 2.0 ** float(rng.choice([39, 39, 40, 40, 53, 58]))
    factor = float(
        rng.choice([1 - 2.0**-20, 1 - 2.0**-52, 1.0, 1 + 2.0**-52, 1 + 2.0**-20, 0.5, 2.0])
    )
    # q = x W_Q with x = (1, position code); |q| = a, |k| = b with a·b·d_head ≈ edge·factor, both ≤
    # 2^p
    b = min(2.0**bits, 2.0 ** int(rng.integers(max(1, bits - 20), bits + 1)))
    a = edge * factor / (b * d_head)
    if a > 2.0**bits:  # q would clip: move the weight to the key's side
        a, b = 2.0**bits, edge * factor / (2.0**bits * d_head)
    W_pos = np.zeros((n, d))
    W_pos[:, 0] = 1.0
    codes = rng.choice(
        [1.0, -1.0, 0.5, 0.0], size=n
    )  # ties between keys (flat rows: dense blocks) ...
    spread = rng.random() < 0.7
    W_pos[:, 1] = _grid(
        rng.uniform(-1, 1, size=n) if spread else codes, bits
    )  # ... or distinct (sharp)
    W_E = np.zeros((2, d))
    W_E[1, 1] = 2.0**-bits
    W_Q = np.zeros((d, d_head))
    W_Q[0, :] = _grid(a, bits) * rng.choice([1.0, -1.0], size=d_head)
    W_K = np.zeros((d, d_head))
    W_K[1, :] = _grid(b, bits)
    W_V = np.array([[1.0], [0.5]])
    W_O = np.array([[1.0, float(rng.choice([0.0, 1.0]))]])
    decoder = LinearDecoder(NumpyFill(rng, bits, "mixed")((d, 3), "benign"), np.zeros(3))
    model = Transformer(W_E, W_pos, (Layer((_one_head(W_Q, W_K, W_V, W_O),)),), decoder, "causal")
    return Case(model, bits, _sample_rows(rng, n, 2, 3))


# ---- sparse-far
# --------------------------------------------------------------------------------------


def sparse_far(rng: np.random.Generator) -> Case:
    """A far group (shifted scores just below −64 − R) whose weight times the clipped values 2^p is
    far above the 2^-p grid (module docstring)."""
    bits = int(rng.integers(20, 61))
    n = int(rng.integers(24, 65))  # enough keys that the block is bounded sparsely
    d = 3
    W_pos = np.zeros((n, d))
    W_pos[:, 0] = 1.0
    # shifted scores just inside the far cut (−64 − 0.5), just beyond it (candidates that end far),
    # and far beyond it (never candidates): about a fifth of the keys near the cut keeps the block
    # sparse
    offsets = rng.choice(
        [0.5, 2.0, 3.5, 6.0, 30.0, 600.0], size=n, p=np.array([1, 1, 1, 1, 10, 6]) / 20
    )
    W_pos[:, 1] = -(64.0 + offsets)
    W_pos[rng.choice(n, size=int(rng.integers(1, 3)), replace=False), 1] = 0.0  # the kept keys
    W_pos[:, 2] = rng.choice([1.0, -1.0, 0.0], size=n)
    W_E = np.zeros((2, d))
    W_E[1, 2] = float(rng.choice([1.0, 0.5]))
    W_Q, W_K = np.zeros((d, 1)), np.zeros((d, 1))
    W_Q[0, 0], W_K[1, 0] = 1.0, 1.0
    W_V = np.zeros((d, 1))
    W_V[2, 0] = 2.0 ** (bits + 2)  # clips to ±2^p
    W_O = np.zeros((1, d))
    W_O[0, 2] = float(rng.choice([1.0, 2.0**-bits, 0.75]))
    threshold = float(rng.choice([0.0, 2.0**-bits, 0.5 * 2.0**-bits, 1e-9, -(2.0**-bits)]))
    W_U = np.zeros((d, 3))
    W_U[2, 0] = 1.0
    decoder = LinearDecoder(W_U, np.array([0.0, threshold, -1e300]))
    model = Transformer(W_E, W_pos, (Layer((_one_head(W_Q, W_K, W_V, W_O),)),), decoder, "causal")
    return Case(model, bits, _sample_rows(rng, n, 2, 3))


# ---- prefix-sharing, torch-backend
# ---------------------------------------------------------------------


def prefix_sharing(rng: np.random.Generator) -> Case:
    """Palette models with the causal mask on every input of Σ^6, Σ = {0, 1}: 126 distinct prefixes
    of 384 positions, so the prefix pass runs (core.passes.prefix.WORTHWHILE_SHARE)."""
    bits = int(rng.integers(1, 9)) if rng.random() < 0.5 else int(rng.integers(1, 61))
    layers = int(rng.integers(1, 3))
    shape = Shape(
        n=6,
        d=int(rng.integers(1, 3)),
        layers=layers,
        heads=tuple(int(h) for h in rng.integers(1, 3, size=layers)),
        d_head=1,
        d_value=1,
        d_mlp=int(rng.integers(0, 2)),
        mask="causal",
        near_tie_decoder=bool(rng.random() < 0.3),
    )
    return Case(build_model(shape, NumpyFill(rng, bits)), bits, all_sequences(6, 2))


def torch_backend(rng: np.random.Generator) -> Case:
    """Palette models (palettes.random_case: 1–2 layers, with or without an MLP, either mask) with
    the rigorous pass on torch's CPU kernels."""
    layers, mlp = int(rng.integers(1, 3)), bool(rng.random() < 0.5)
    mask = "causal" if rng.random() < 0.6 else "full"
    model, bits = random_case(rng, layers, mlp, mask)
    return Case(model, bits, all_sequences(model.n_ctx, 2), backend="torch")


# ---- exact-logit-ties
# ----------------------------------------------------------------------------------


def exact_logit_ties(rng: np.random.Generator) -> Case:
    """Exact residuals and decoders whose logits tie exactly or differ by an ulp (module
    docstring)."""
    bits = int(rng.integers(1, 9)) if rng.random() < 0.5 else int(rng.integers(1, 61))
    mask = "causal" if rng.random() < 0.6 else "full"
    model, _ = random_case(rng, 1, False, mask, theme=str(rng.choice(["ties", "mixed"])))
    if rng.random() < 0.5:
        model = silence_heads(model)  # the residual is the rounded embedding: radius 0
    d = model.d_model
    fill = NumpyFill(rng, bits, "ties")
    base = fill((d, 1), fill.mode("decoder"))
    columns = []
    for _ in range(3):
        how = str(rng.choice(["same", "same", "ulp", "subnormal", "other"]))
        column = base.copy()
        if how == "ulp":
            column = np.nextafter(column, rng.choice([-np.inf, np.inf]))
        elif how == "subnormal":
            column = column + rng.choice([1, -1, 3]) * 2.0**-1074
        elif how == "other":
            column = fill((d, 1), fill.mode("decoder"))
        columns.append(column)
    W_U = np.concatenate(columns, axis=1)
    b = float(fill((1,), "grid")[0])
    b_U = np.array([b, b if rng.random() < 0.7 else np.nextafter(b, np.inf), b])
    decoder = LinearDecoder(W_U, b_U)
    model = Transformer(model.W_E, model.W_pos, model.layers, decoder, model.mask)
    return Case(model, bits, all_sequences(model.n_ctx, 2))


FAMILIES: dict[str, Callable[[np.random.Generator], Case]] = {
    "tie-settling": tie_settling,
    "negligible-cut": negligible_cut,
    "score-tame": score_tame,
    "sparse-far": sparse_far,
    "prefix-sharing": prefix_sharing,
    "torch-backend": torch_backend,
    "exact-logit-ties": exact_logit_ties,
}
