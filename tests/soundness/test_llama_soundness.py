"""Soundness of certificates on Llama / GPT-NeoX-style models (issue 32): every position
certified_predict marks proven, at fixed:p and in mode exact, must carry the answer of the
real-arithmetic model computed independently in Arb balls (tests/soundness/arb_reference.py, whose
rotary angles, RMSNorm, gates and parallel residual never touch headcount's code).

Families, one per part and one with all of them: RMSNorm (ε-scale variances, eps from 2^-1074 to
1e300, Gemma's 1 + w), rotary (θ from 1e-300 to 1e300, so angles p·θ^(−2i/dims) from 0 to
astronomically large, both layouts, partial rotation), gated MLPs (SiLU / GELU gates whose arguments
sit on the enclosures' turning points and cut-offs, with and without a gate bias), grouped-query
attention (heads sharing one key/value head's arrays, rotated), GPT-NeoX's parallel residual with
LayerNorm and partial rotary, shortformer positions (W_pos in q and k only). Models are tiny (n =
2–3, every input of Σ^n) with the palettes' adversarial weights. Undecided reference positions are
skipped and counted, never agreement.

Default run: a small seeded set per family. The slow set (`-m slow`) runs
HEADCOUNT_LLAMA_SOUNDNESS_MODELS models per family (default 10,000) and prints its counts.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np
import pytest

from headcount.core.model import (
    MLP,
    AttentionHead,
    Layer,
    LayerNorm,
    LinearDecoder,
    RMSNorm,
    Rotary,
    Transformer,
)
from tests.soundness.palettes import NumpyFill
from tests.soundness.test_gpt2_soundness import EPS, SCALES, Counts, gelu_edges, run_cases

SLOW_MODELS = int(os.environ.get("HEADCOUNT_LLAMA_SOUNDNESS_MODELS", "10000"))
FAST_MODELS = 10
THETAS = (10000.0, 500000.0, 1.0, 2.0, 0.5, 1e-12, 1e-300, 1e300, 1e12, 3.0)
GATES = ("silu", "gelu", "gelu_tanh")


@dataclass(frozen=True)
class Family:
    name: str
    layers: int
    norm: str  # "rms" | "ln" | "none"
    rotary: bool
    mlp: str  # "gated" | "plain" | "none"
    gqa: bool = False
    parallel: bool = False
    shortformer: bool = False


FAMILIES = [
    Family("rmsnorm", 2, "rms", False, "plain"),
    Family("rotary", 2, "none", True, "none"),
    Family("gated", 1, "rms", False, "gated"),
    Family("gqa", 2, "rms", True, "none", gqa=True),
    Family("neox-parallel", 2, "ln", True, "plain", parallel=True),
    Family("llama", 2, "rms", True, "gated", gqa=True),
    Family("shortformer", 2, "ln", False, "none", shortformer=True),
]
FAMILY_IDS = [f.name for f in FAMILIES]


def _norm(rng, fill: NumpyFill, d: int, kind: str):
    if kind == "none" or rng.random() < 0.1:
        return None
    mode = fill.mode("ln")
    eps = float(rng.choice(EPS))
    if kind == "ln":
        return LayerNorm(fill((d,), mode), fill((d,), mode), eps)
    w = np.ones(d) if rng.random() < 0.25 else fill((d,), mode)  # without a weight: w = 1
    return RMSNorm(w, eps, float(rng.random() < 0.25))


def _rotary(rng, d_head: int) -> Rotary:
    dims = 2 * int(rng.integers(1, d_head // 2 + 1))
    layout = "interleaved" if rng.random() < 0.3 else "rotate_half"
    return Rotary(float(rng.choice(THETAS)), dims, layout)


def _heads(rng, fill: NumpyFill, d: int, d_head: int, gqa: bool) -> tuple[AttentionHead, ...]:
    count = int(rng.integers(2, 5)) if gqa else int(rng.integers(1, 3))
    kv = [1, 2][int(rng.integers(0, 2))] if gqa and count % 2 == 0 else (1 if gqa else count)
    part = lambda dims, role: fill(dims, fill.mode(role))  # noqa: E731
    maybe = lambda dims, role: part(dims, role) if rng.random() < 0.3 else None  # noqa: E731
    shared = [(part((d, d_head), "W_K"), part((d, d_head), "W_V")) for _ in range(kv)]
    shared_b = [(maybe((d_head,), "b_K"), maybe((d_head,), "b_V")) for _ in range(kv)]
    group = count // kv
    return tuple(
        AttentionHead(
            part((d, d_head), "W_Q"),
            shared[h // group][0],
            shared[h // group][1],
            part((d_head, d), "W_O"),
            maybe((d_head,), "b_Q"),
            *shared_b[h // group],
        )  # fmt: skip
        for h in range(count)
    )


def _mlp(rng, fill: NumpyFill, d: int, kind: str) -> MLP | None:
    if kind == "none":
        return None
    d_mlp = int(rng.integers(1, 4))
    act = str(rng.choice(GATES if kind == "gated" else ("relu", "gelu", "silu")))
    m_in, m_out = fill.mode("mlp_in"), fill.mode("mlp_out")
    W_in, b_in = fill((d, d_mlp), m_in), fill((d_mlp,), m_in)
    W_gate = b_gate = None
    if kind == "gated":
        W_gate = fill((d, d_mlp), fill.mode("mlp_in"))
        b_gate = fill((d_mlp,), m_in) if rng.random() < 0.4 else None
        if rng.random() < 0.4:  # gate arguments on the enclosures' edges, the input silenced
            b_gate = rng.choice(gelu_edges(), size=d_mlp)
            W_gate = fill((d, d_mlp), str(rng.choice(["zero", "subnormal", "tiny"])))
    elif rng.random() < 0.35:
        b_in = rng.choice(gelu_edges(), size=d_mlp)
        W_in = fill((d, d_mlp), str(rng.choice(["zero", "subnormal", "tiny"])))
    return MLP(W_in, b_in, fill((d_mlp, d), m_out), fill((d,), m_out), act, W_gate, b_gate)


def random_llama_case(rng: np.random.Generator, family: Family) -> tuple[Transformer, int]:
    """(tiny model of `family`, p): p in 1..8 half the time, else in 1..60."""
    bits = int(rng.integers(1, 9)) if rng.random() < 0.5 else int(rng.integers(1, 61))
    fill = NumpyFill(rng, bits)
    n, d, alphabet = int(rng.integers(2, 4)), int(rng.integers(1, 5)), int(rng.integers(2, 4))
    layers = []
    for _ in range(family.layers):
        d_head = int(rng.integers(2, 5)) if family.rotary else int(rng.integers(1, 3))
        mlp = _mlp(rng, fill, d, family.mlp)
        layers.append(
            Layer(
                _heads(rng, fill, d, d_head, family.gqa),
                mlp,
                _norm(rng, fill, d, family.norm),
                None if mlp is None else _norm(rng, fill, d, family.norm),
                fill((d,), fill.mode("b_O")) if rng.random() < 0.3 else None,
                float(rng.choice(SCALES)) if rng.random() < 0.5 else 1.0,
                _rotary(rng, d_head) if family.rotary and rng.random() < 0.9 else None,
                family.parallel and mlp is not None,
            )
        )
    W_E = fill((alphabet, d), fill.mode("embed"))
    W_pos = np.zeros((n, d)) if family.rotary else fill((n, d), fill.mode("embed"))
    positions = "qk" if family.shortformer and rng.random() < 0.9 else "residual"
    if rng.random() < 0.15:  # ε-scale rows: every embedding tiny, variances near eps
        W_E = W_E * 2.0**-520
    classes = alphabet + 1
    m_u = fill.mode("decoder")
    decoder = LinearDecoder(fill((d, classes), m_u), fill((classes,), m_u))
    mask = "causal" if rng.random() < 0.7 else "full"
    final = _norm(rng, fill, d, family.norm)
    model = Transformer(
        W_E, W_pos, tuple(layers), decoder, mask, ln_final=final, positions=positions
    )
    return model, bits


def run_family(family: Family, seed: int, models: int) -> Counts:
    return run_cases(random_llama_case, family, seed, models)


def family_seed(family: Family) -> int:
    return 32_000 + FAMILIES.index(family)


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_certified_llama_positions_match_the_reference(family):
    counts = run_family(family, family_seed(family), FAST_MODELS)
    assert counts.mismatches == 0, "\n".join(counts.examples)
    assert counts.models == FAST_MODELS and counts.checked > 0, counts.line(family.name, "llama")


def test_families_reach_the_llama_parts():
    rng = np.random.default_rng(0)
    seen: set[str] = set()
    for family in FAMILIES:
        for _ in range(20):
            seen |= set(random_llama_case(rng, family)[0].extensions)
    assert {
        "rmsnorm",
        "rotary",
        "gated mlp",
        "parallel",
        "silu",
        "layernorm",
        "shortformer",
    } <= seen


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_certified_llama_positions_match_the_reference_many_models(family):
    start = time.perf_counter()
    counts = run_family(family, family_seed(family) + 1000, SLOW_MODELS)
    print(f"\n{counts.line(family.name, 'llama')}, {time.perf_counter() - start:.0f} s")
    for text in counts.examples:
        print(text)
    assert counts.models == SLOW_MODELS
    assert counts.mismatches == 0, "\n".join(counts.examples)
