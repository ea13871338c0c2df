"""Adversarial weight palettes and tiny-model builders for soundness fuzzing of fixed:p
certificates.

Why palettes and not Gaussians: random reals almost never sit on a rounding tie, the clip, the edge
of exp's underflow or the subnormal range, which is where a float64 bound can be wrong. Every value
here is chosen to land on (or next to) one of those edges for the precision p at hand; benign values
are mixed in so that some positions are provable at all. Models are tiny (n ≤ 3, S = 2, d ≤ 3) so
every input of Σ^n is checked and the exact evaluator (headcount.core.passes.exact_fixed) stays
cheap.

Entry points: random_case(rng, layers, mlp, mask) for plain loops, fuzz_cases(...) for Hypothesis,
build_model(shape, fill) for custom shapes, finding1_model() (issue 11's finding 1), describe(model,
p). Used by tests/soundness/test_certified_soundness.py; other suites may import it (weights are
plain float64).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from hypothesis import strategies as st

from headcount.core.model import MLP, AttentionHead, Layer, LinearDecoder, Transformer


class Fill(Protocol):
    """Where weights come from: fill(shape, mode) gives float64 weights of that shape drawn from
    mode_values(mode) (a fresh mode when None); fill.mode(role) draws the mode of one matrix (its
    role: "W_O", "decoder", …) so that a matrix and its bias can share it."""

    def __call__(self, shape: tuple[int, ...], mode: str | None = None) -> np.ndarray: ...

    def mode(self, role: str = "*") -> str: ...


BENIGN = (0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 0.75, -1.25, 3.0, 0.3, -0.7, 1.7)
EXP_EDGE = (
    700.0,
    708.39,
    709.79,
    744.44,
    745.13,
    745.2,
    26.5,
    27.3,
)  # e^-s underflows near s ≈ 745; 27.3² ≈ 745
HUGE = (1e6, 1e15, 1e100, 1e300)
TINY = (2.0**-1074, 3 * 2.0**-1074, 2.0**-1022, 2.0**-1020, 1.5 * 2.0**-1020)


def adversarial(bits: int) -> tuple[float, ...]:
    """Positive edge values for fixed:`bits` (callers add signs): ties, the clip, float-rounding
    traps, the exp underflow edge, huge scores and values, subnormals, 1/3."""
    g = 2.0**-bits
    ties = (0.5 * g, 1.5 * g, 3.5 * g, 2.0**bits - 0.5 * g)  # odd multiples of 2^-(p+1)
    clip = (2.0**bits, 2.0**bits - g, 2.0**bits + g)
    near_half = (
        0.5 + 2.0 ** -(bits + 1),
        0.5 - 2.0 ** -(bits + 1),
        0.5 + 2.0**-53,
        0.5 - 2.0**-54,
        0.25 + 2.0**-54,
        1.25,
    )  # a float sum of these lands on a tie the exact sum misses
    big_grid = (2.0 ** (52 - bits),)  # adding a grid step to it rounds in float64
    return ties + clip + near_half + big_grid + TINY + EXP_EDGE + HUGE + (1 / 3,)


def palette(bits: int) -> np.ndarray:
    """Every value a weight may take in a model fuzzed at fixed:`bits`: adversarial and benign, both
    signs."""
    values = adversarial(bits) + BENIGN
    return np.array(sorted(set(values) | {-v for v in values}), dtype=np.float64)


def mode_values(mode: str, bits: int) -> np.ndarray:
    """The values one matrix draws from, by mode. A whole matrix in one mode is what reaches an edge
    that single values miss: all-subnormal decoder weights make every logit product underflow (issue
    11, finding 1), all-grid values make head outputs land on ties, all-huge ones overflow
    float64."""
    g = 2.0**-bits
    if mode == "mixed":
        return palette(bits)
    if mode == "benign":
        values = BENIGN
    elif (
        mode == "zero"
    ):  # a silent head (W_V or W_O = 0) leaves the residual exact: no radius to hide in
        values = (0.0,)
    elif mode == "subnormal":
        values = tuple(k * 2.0**-1074 for k in (0, 1, 2, 3, 5))
    elif mode == "tiny":
        values = TINY + (0.0, 2.0**-1060, 2.0**-1020 + 2.0**-1070)
    elif mode == "grid":
        values = tuple(k * 0.5 * g for k in range(6)) + (2.0**bits, 2.0**bits - 0.5 * g)
    elif mode == "huge":
        values = HUGE + (2.0 ** (52 - bits), 2.0**bits, 0.0, 1.0)
    else:
        raise ValueError(f"unknown palette mode {mode!r}")
    return np.array(sorted(set(values) | {-v for v in values}), dtype=np.float64)


MODES = (
    "mixed",
    "mixed",
    "mixed",
    "benign",
    "zero",
    "subnormal",
    "tiny",
    "grid",
    "huge",
)  # repeats weight the draw

# A theme biases the mode each role (which matrix of the model) draws, so that the structure an edge
# needs appears often: "underflow" silences heads and makes the decoder subnormal, so logits are
# sums of underflowing products of an exact residual (issue 11, finding 1); "ties" puts values on
# the 2^-(p+1) grid; "range" mixes huge and tiny magnitudes. "*" is every role not named.
THEMES: dict[str, dict[str, tuple[str, ...]]] = {
    "mixed": {"*": MODES},
    "underflow": {
        "*": ("benign", "grid", "mixed"),
        "W_O": ("zero", "zero", "zero", "subnormal"),
        "mlp_out": ("zero", "zero", "subnormal"),
        "decoder": ("subnormal", "subnormal", "subnormal", "tiny"),
        "near_tie": ("subnormal", "tiny"),
    },
    "ties": {
        "*": ("grid", "grid", "benign", "mixed"),
        "W_O": ("grid", "benign", "zero"),
        "decoder": ("benign", "grid", "subnormal"),
    },
    "range": {
        "*": ("huge", "tiny", "mixed", "benign"),
        "decoder": ("benign", "huge", "tiny", "subnormal"),
    },
}
THEME_NAMES = ("mixed", "mixed", "underflow", "ties", "range")


def role_modes(theme: str, role: str) -> tuple[str, ...]:
    table = THEMES[theme]
    return table.get(role, table["*"])


class NumpyFill:
    """A Fill from a seeded numpy generator: a theme per model (THEME_NAMES), a mode per matrix from
    the theme's modes for its role, then each entry from that mode's values (uniformly)."""

    def __init__(self, rng: np.random.Generator, bits: int, theme: str | None = None):
        self.rng, self.bits = rng, bits
        self.theme = theme or str(rng.choice(THEME_NAMES))

    def mode(self, role: str = "*") -> str:
        return str(self.rng.choice(role_modes(self.theme, role)))

    def __call__(self, shape: tuple[int, ...], mode: str | None = None) -> np.ndarray:
        return self.rng.choice(mode_values(mode or self.mode(), self.bits), size=shape)


@dataclass(frozen=True)
class Shape:
    """Sizes of one tiny model (S = alphabet, n = n_ctx)."""

    n: int
    d: int
    layers: int
    heads: tuple[int, ...]
    d_head: int
    d_value: int
    d_mlp: int  # 0: no MLP
    mask: str
    alphabet: int = 2
    near_tie_decoder: bool = False


def random_shape(rng: np.random.Generator, layers: int, mlp: bool, mask: str) -> Shape:
    return Shape(
        n=int(rng.integers(1, 4)),
        d=int(rng.integers(1, 4)),
        layers=layers,
        heads=tuple(int(h) for h in rng.integers(1, 3, size=layers)),
        d_head=int(rng.integers(1, 3)),
        d_value=int(rng.integers(1, 3)),
        d_mlp=int(rng.integers(1, 3)) if mlp else 0,
        mask=mask,
        near_tie_decoder=bool(rng.random() < 0.3),
    )


def build_model(shape: Shape, fill: Fill) -> Transformer:
    """A Transformer of `shape` with every weight from `fill`; LinearDecoder over S tokens and ⊥.
    Each weight matrix shares its mode with its bias (an all-subnormal affine map, say)."""
    d = shape.d
    part = lambda dims, role: fill(dims, fill.mode(role))  # noqa: E731
    layers = []
    for heads in shape.heads:
        attention = tuple(
            AttentionHead(
                part((d, shape.d_head), "W_Q"),
                part((d, shape.d_head), "W_K"),
                part((d, shape.d_value), "W_V"),
                part((shape.d_value, d), "W_O"),
            )
            for _ in range(heads)
        )
        mlp = None
        if shape.d_mlp:
            m_in, m_out = fill.mode("mlp_in"), fill.mode("mlp_out")
            mlp = MLP(
                fill((d, shape.d_mlp), m_in),
                fill((shape.d_mlp,), m_in),
                fill((shape.d_mlp, d), m_out),
                fill((d,), m_out),
            )
        layers.append(Layer(attention, mlp))
    classes = shape.alphabet + 1
    m_u = fill.mode("decoder")
    W_U, b_U = fill((d, classes), m_u), fill((classes,), m_u)
    if (
        shape.near_tie_decoder
    ):  # every class = one base column plus a small perturbation: logits nearly tie
        m_t = fill.mode("near_tie")
        W_U, b_U = (
            W_U[:, :1] + fill((d, classes), m_t) * 2.0**-40,
            b_U[:1] + fill((classes,), m_t) * 2.0**-40,
        )
    decoder = LinearDecoder(W_U, b_U)
    W_E, W_pos = part((shape.alphabet, d), "embed"), part((shape.n, d), "embed")
    return Transformer(W_E, W_pos, tuple(layers), decoder, shape.mask)


def random_case(
    rng: np.random.Generator,
    layers: int,
    mlp: bool,
    mask: str,
    theme: str | None = None,
    silent: bool = False,
) -> tuple[Transformer, int]:
    """(tiny model, p) of one family: p in 1..8 half the time, else in 1..60; a theme drawn unless
    given; `silent` zeroes every W_O (silence_heads)."""
    bits = int(rng.integers(1, 9)) if rng.random() < 0.5 else int(rng.integers(1, 61))
    model = build_model(random_shape(rng, layers, mlp, mask), NumpyFill(rng, bits, theme))
    return (silence_heads(model) if silent else model), bits


def fuzz_cases(layers: int, mlp: bool, mask: str, theme: str | None = None, silent: bool = False):
    """Hypothesis strategy of random_case. Hypothesis draws the seed, not the weights: its own value
    generation favours simple draws (first palette entries, repeats), which reached the edges far
    less often than uniform draws when measured against the bounds of issue 11."""
    return st.integers(0, 2**64 - 1).map(
        lambda seed: random_case(np.random.default_rng(seed), layers, mlp, mask, theme, silent)
    )


def silence_heads(model: Transformer) -> Transformer:
    """The model with every head's W_O zeroed: the residual is the rounded embedding (plus MLP
    outputs), exactly, with radius 0 in the bounds — so a decoder step that loses an error term
    cannot hide behind a radius carried from the layers below (issue 11, finding 1 had this
    shape)."""
    layers = tuple(
        Layer(
            tuple(AttentionHead(h.W_Q, h.W_K, h.W_V, np.zeros_like(h.W_O)) for h in layer.heads),
            layer.mlp,
        )
        for layer in model.layers
    )
    return Transformer(model.W_E, model.W_pos, layers, model.decoder, model.mask, dict(model.info))


def finding1_model() -> Transformer:
    """Issue 11, finding 1: one position, both tokens embed to (1/2, 1/2), the head writes nothing
    (W_O = 0), decoder W_U = [[t, −1, 3t], [t, −1, −2t]], t = 2^-1074 (columns: token 0, token 1,
    ⊥). Exact logits at fixed:1: token 0 = t, token 1 = −1, ⊥ = t/2, so the answer is token 0;
    float64 rounds the products 3t/2 and t/2 (subnormal ties) and gets ⊥."""
    t = 2.0**-1074
    ones = np.ones((2, 1))
    head = AttentionHead(ones, ones, ones, np.zeros((1, 2)))
    decoder = LinearDecoder(np.array([[t, -1.0, 3 * t], [t, -1.0, -2 * t]]), np.zeros(3))
    return Transformer(np.full((2, 2), 0.5), np.zeros((1, 2)), (Layer((head,)),), decoder)


def describe(model: Transformer, bits: int) -> str:
    """Every weight with repr floats (which round-trip exactly), to rebuild a counterexample by
    hand."""
    if not hasattr(model, "W_E"):  # a table model (the packed readout's soundness family)
        tables = " ".join(f"{name}={getattr(model, name).tolist()}" for name in ("Q", "K", "V"))
        return f"fixed:{bits} {type(model).__name__} decoder={model.decoder.config()} {tables}"
    parts = [
        f"fixed:{bits} mask={model.mask}",
        f"W_E={model.W_E.tolist()}",
        f"W_pos={model.W_pos.tolist()}",
    ]
    for i, layer in enumerate(model.layers):
        for h, head in enumerate(layer.heads):
            parts.append(
                f"L{i}H{h} W_Q={head.W_Q.tolist()} W_K={head.W_K.tolist()} W_V={head.W_V.tolist()} "
                f"W_O={head.W_O.tolist()}"
            )
        if layer.mlp is not None:
            m = layer.mlp
            parts.append(
                f"L{i} MLP W_in={m.W_in.tolist()} b_in={m.b_in.tolist()} W_out={m.W_out.tolist()} "
                f"b_out={m.b_out.tolist()}"
            )
    parts.append(f"W_U={model.decoder.W_U.tolist()} b_U={model.decoder.b_U.tolist()}")
    return "\n  ".join(parts)
