"""Soundness of certificates on GPT-2-style models: every position certified_predict marks proven,
at fixed:p and in mode exact, must carry the answer of the real-arithmetic model, computed
independently in Arb balls at 256 bits, or 1024 or 4096 where those leave it open
(tests/soundness/arb_reference.py).

Models are tiny (1–2 layers, 1–2 heads, d ≤ 4, S = 2–3, n = 2–3; every input of Σ^n) with
adversarial weights (palettes.py) plus the GPT-2 parts' own edges: LayerNorm on inputs of zero or
huge variance and with tiny or huge eps, MLP pre-activations on GELU's turning point and at the
enclosures' cut-offs, biases, attention scales from 0 to 1e10. Where the reference balls straddle a
rounding tie or leave the argmax open the position is skipped (counted), never taken as agreement. A
proven wrong answer is a false certificate; an exception from certified_predict fails the test.

Default run: a small seeded set per family (seconds). The slow set (`-m slow`) runs
HEADCOUNT_GPT2_SOUNDNESS_MODELS models per family (default 2000) and prints its counts.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np
import pytest
from flint import ctx

from headcount.core.certify.evaluate import certified_predict
from headcount.core.model import (
    MLP,
    AttentionHead,
    Layer,
    LayerNorm,
    LinearDecoder,
    Transformer,
)
from headcount.core.model.vocab import VocabDecoder
from headcount.core.numbers.precision import EXACT, Precision, fixed
from headcount.core.passes.activations import GELU_SHAPES, X_POS
from headcount.induction.task import all_sequences
from tests.soundness import arb_reference as ref
from tests.soundness.palettes import NumpyFill

SLOW_MODELS = int(os.environ.get("HEADCOUNT_GPT2_SOUNDNESS_MODELS", "2000"))
FAST_MODELS = 12


@dataclass(frozen=True)
class Family:
    layers: int
    layernorm: bool
    activation: str | None  # None: attention only

    @property
    def label(self) -> str:
        return f"{self.layers}L-{'ln' if self.layernorm else 'noln'}-{self.activation or 'attn'}"


FAMILIES = [
    Family(1, True, "gelu"),
    Family(1, True, "gelu_tanh"),
    Family(1, False, "gelu"),
    Family(1, True, None),
    Family(2, True, "gelu"),
    Family(2, True, "gelu_tanh"),
    Family(2, True, "relu"),
    Family(2, False, "gelu_tanh"),
]
FAMILY_IDS = [f.label for f in FAMILIES]

EPS = (1e-5, 1e-12, 1.0, 0.25, 2.0**-1074, 1e-300, 1e300)
SCALES = (1.0, 0.5, 2.0**-0.5, 3.0**-0.5, 2.0**-10, 0.0, -1.0, 1e-300, 1e10, 3.0)


def gelu_edges() -> np.ndarray:
    """Pre-activations where a GELU enclosure changes form or f turns."""
    values = [0.0, 2.0**-1074, 1e-300, X_POS, np.nextafter(X_POS, 0), 40.0, -0.7517915246935645]
    values += [-0.7524614220710163, -0.75, -0.76, -1.0]
    for shape in GELU_SHAPES.values():
        values += [
            shape.star_lo,
            shape.star_hi,
            shape.x_neg,
            np.nextafter(shape.x_neg, 0),
            shape.x_neg - 1,
        ]
    return np.array(values)


def _layer_norm(
    rng: np.random.Generator, fill: NumpyFill, d: int, present: bool
) -> LayerNorm | None:
    if not present or rng.random() < 0.15:
        return None
    mode = fill.mode("ln")
    return LayerNorm(fill((d,), mode), fill((d,), mode), float(rng.choice(EPS)))


def _maybe(rng: np.random.Generator, fill: NumpyFill, shape: tuple[int, ...], role: str):
    return fill(shape, fill.mode(role)) if rng.random() < 0.5 else None


def _head(rng, fill, d: int, d_head: int, d_value: int) -> AttentionHead:
    part = lambda dims, role: fill(dims, fill.mode(role))  # noqa: E731
    return AttentionHead(
        part((d, d_head), "W_Q"),
        part((d, d_head), "W_K"),
        part((d, d_value), "W_V"),
        part((d_value, d), "W_O"),
        _maybe(rng, fill, (d_head,), "b_Q"),
        _maybe(rng, fill, (d_head,), "b_K"),
        _maybe(rng, fill, (d_value,), "b_V"),
    )


def _mlp(rng, fill, d: int, activation: str) -> MLP:
    d_mlp = int(rng.integers(1, 4))
    m_in, m_out = fill.mode("mlp_in"), fill.mode("mlp_out")
    W_in, b_in = fill((d, d_mlp), m_in), fill((d_mlp,), m_in)
    if (
        rng.random() < 0.35
    ):  # hidden values on GELU's edges: the bias there, the input nearly silenced
        b_in = rng.choice(gelu_edges(), size=d_mlp)
        W_in = fill((d, d_mlp), str(rng.choice(["zero", "subnormal", "tiny"])))
    return MLP(W_in, b_in, fill((d_mlp, d), m_out), fill((d,), m_out), activation)


def _decoder(rng, fill, d: int, alphabet: int):
    if rng.random() < 0.2:  # the final hidden state is the logit vector
        return VocabDecoder(None, _maybe(rng, fill, (d,), "decoder"), "hidden")
    classes = alphabet + 1
    m_u = fill.mode("decoder")
    W_U, b_U = fill((d, classes), m_u), fill((classes,), m_u)
    if (
        rng.random() < 0.3
    ):  # every class one base column plus a small perturbation: logits nearly tie
        m_t = fill.mode("near_tie")
        W_U, b_U = (
            W_U[:, :1] + fill((d, classes), m_t) * 2.0**-40,
            b_U[:1] + fill((classes,), m_t) * 2.0**-40,
        )
    return LinearDecoder(W_U, b_U)


def random_gpt2_case(rng: np.random.Generator, family: Family) -> tuple[Transformer, int]:
    """(tiny GPT-2-style model of `family`, p): p in 1..8 half the time, else in 1..60."""
    bits = int(rng.integers(1, 9)) if rng.random() < 0.5 else int(rng.integers(1, 61))
    fill = NumpyFill(rng, bits)
    n, d, alphabet = int(rng.integers(2, 4)), int(rng.integers(1, 5)), int(rng.integers(2, 4))
    layers = []
    for _ in range(family.layers):
        d_head, d_value = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        heads = tuple(_head(rng, fill, d, d_head, d_value) for _ in range(int(rng.integers(1, 3))))
        mlp = None if family.activation is None else _mlp(rng, fill, d, family.activation)
        ln2 = None if mlp is None else _layer_norm(rng, fill, d, family.layernorm)
        layers.append(
            Layer(
                heads,
                mlp,
                _layer_norm(rng, fill, d, family.layernorm),
                ln2,
                _maybe(rng, fill, (d,), "b_O"),
                float(rng.choice(SCALES)) if rng.random() < 0.7 else 1.0,
            )
        )
    W_E, W_pos = fill((alphabet, d), fill.mode("embed")), fill((n, d), fill.mode("embed"))
    if rng.random() < 0.15:  # every embedding constant across coordinates: zero variance for ln1
        W_E, W_pos = np.repeat(W_E[:, :1], d, axis=1), np.zeros((n, d))
    mask = "causal" if rng.random() < 0.5 else "full"
    ln_final = _layer_norm(rng, fill, d, family.layernorm)
    return Transformer(
        W_E, W_pos, tuple(layers), _decoder(rng, fill, d, alphabet), mask, ln_final=ln_final
    ), bits


@dataclass
class Counts:
    models: int = 0
    positions: int = 0
    proven: int = 0
    checked: int = 0
    skipped: int = 0  # proven positions the reference could not decide
    mismatches: int = 0
    examples: list[str] = field(default_factory=list)

    def line(self, label: str, kind: str = "gpt2") -> str:
        return (
            f"{kind} soundness {label}: models {self.models}, positions {self.positions}, "
            f"proven {self.proven}, checked {self.checked}, skipped {self.skipped}, "
            f"mismatches {self.mismatches}"
        )


ARB_PRECISIONS = (256, 1024, 4096)  # bits: a position the balls leave open is retried at the next


def reference_outputs(
    model: Transformer, seq: list[int], prec: Precision, positions
) -> dict[int, int]:
    """The reference's output at each of `positions` it decides, trying ARB_PRECISIONS in turn."""
    decided: dict[int, int] = {}
    old = ctx.prec
    try:
        for bits in ARB_PRECISIONS:
            ctx.prec = bits
            try:
                expected = ref.decode(model, ref.residual(model, seq, prec))
            except ref.Undecided:
                continue
            decided.update({int(i): expected[i] for i in positions if expected[i] is not None})
            if len(decided) == len(positions):
                break
    finally:
        ctx.prec = old
    return decided


def check_model(model: Transformer, prec: Precision, counts: Counts) -> None:
    """Certify every input of Σ^n in mode `prec`; compare each proven position with the Arb
    reference."""
    tokens = all_sequences(model.n_ctx, model.alphabet)
    out, proven = certified_predict(model, tokens, prec)
    counts.positions += proven.size
    counts.proven += int(proven.sum())
    for row in np.flatnonzero(proven.any(axis=1)):
        asked = np.flatnonzero(proven[row])
        expected = reference_outputs(model, tokens[row].tolist(), prec, asked)
        counts.skipped += len(asked) - len(expected)
        counts.checked += len(expected)
        for i, answer in expected.items():
            if answer != out[row, i]:
                counts.mismatches += 1
                if len(counts.examples) < 5:
                    counts.examples.append(
                        f"{prec.name} input {tokens[row].tolist()} position {i}: certified "
                        f"{out[row, i]}, "
                        f"reference {answer}:\n  {describe(model)}"
                    )


def describe(model: Transformer) -> str:
    """Every weight with repr floats (they round-trip), to rebuild a counterexample."""
    parts = [f"mask={model.mask} W_E={model.W_E.tolist()} W_pos={model.W_pos.tolist()}"]
    plain = lambda a: None if a is None else a.tolist()  # noqa: E731
    norm = lambda ln: (  # noqa: E731
        None if ln is None else (type(ln).__name__, ln.w.tolist(), plain(getattr(ln, "b", None)),
                                 ln.eps, getattr(ln, "offset", 0.0))
    )  # fmt: skip
    for i, layer in enumerate(model.layers):
        parts.append(
            f"L{i} ln1={norm(layer.ln1)} ln2={norm(layer.ln2)} b_O={plain(layer.b_O)} "
            f"scale={layer.attn_scale!r} rotary={layer.rotary} parallel={layer.parallel}"
        )
        for h, head in enumerate(layer.heads):
            parts.append(
                f"L{i}H{h} W_Q={head.W_Q.tolist()} W_K={head.W_K.tolist()} W_V={head.W_V.tolist()} "
                f"W_O={head.W_O.tolist()} b_Q={plain(head.b_Q)} b_K={plain(head.b_K)} "
                f"b_V={plain(head.b_V)}"
            )
        if layer.mlp is not None:
            m = layer.mlp
            parts.append(
                f"L{i} MLP {m.activation} W_in={m.W_in.tolist()} b_in={m.b_in.tolist()} "
                f"W_out={m.W_out.tolist()} b_out={m.b_out.tolist()} W_gate={plain(m.W_gate)} "
                f"b_gate={plain(m.b_gate)}"
            )
    dec = model.decoder
    parts.append(
        f"ln_final={norm(model.ln_final)} decoder {dec.kind} W_U={plain(dec.W_U)} "
        f"b_U={plain(dec.b_U)}"
    )
    return "\n  ".join(parts)


def run_cases(make, family, seed: int, models: int) -> Counts:
    """`models` cases make(rng, family) → (model, p), each certified at fixed:p and exact and
    checked against the reference."""
    rng = np.random.default_rng(seed)
    counts = Counts()
    with np.errstate(all="ignore"):
        for _ in range(models):
            model, bits = make(rng, family)
            counts.models += 1
            for prec in (fixed(bits), EXACT):
                check_model(model, prec, counts)
    return counts


def run_family(family: Family, seed: int, models: int) -> Counts:
    return run_cases(random_gpt2_case, family, seed, models)


def family_seed(family: Family) -> int:
    return 40_000 + FAMILIES.index(family)


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_certified_gpt2_positions_match_the_reference(family):
    counts = run_family(family, family_seed(family), FAST_MODELS)
    assert counts.mismatches == 0, "\n".join(counts.examples)
    assert counts.models == FAST_MODELS and counts.checked > 0, counts.line(family.label)


def test_families_reach_the_gpt2_parts():
    rng = np.random.default_rng(0)
    seen: set[str] = set()
    for family in FAMILIES:
        for _ in range(20):
            seen |= set(random_gpt2_case(rng, family)[0].extensions)
    assert seen == {"attention biases", "attention scale", "gelu", "layernorm"}


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_certified_gpt2_positions_match_the_reference_many_models(family):
    start = time.perf_counter()
    counts = run_family(family, family_seed(family) + 1000, SLOW_MODELS)
    print(f"\n{counts.line(family.label)}, {time.perf_counter() - start:.0f} s")
    for text in counts.examples:
        print(text)
    assert counts.models == SLOW_MODELS
    assert counts.mismatches == 0, "\n".join(counts.examples)
