"""Random models with every GPT-2 part, for tests (no torch needed to build them)."""

from __future__ import annotations

import numpy as np

from headcount.core.model import (
    MLP,
    AttentionHead,
    Layer,
    LayerNorm,
    LinearDecoder,
    Transformer,
)
from headcount.core.model.vocab import VocabDecoder, VocabMap


def _ln(rng, d):
    return LayerNorm(1 + 0.2 * rng.standard_normal(d), 0.2 * rng.standard_normal(d), 1e-5)


def gpt2_like(
    seed=0,
    d=8,
    vocab=12,
    n_ctx=6,
    layers=2,
    heads=2,
    activation="gelu_tanh",
    readout="tied",
    vmap=None,
):
    """A random model with every GPT-2 part (heads of width d // heads, MLP 4d); readout "tied",
    "lm-head", "hidden" (a vocab decoder) or "linear" (a LinearDecoder over the vocab and ⊥)."""
    rng = np.random.default_rng(seed)
    e = d // heads
    out = []
    for _ in range(layers):
        hs = tuple(
            AttentionHead(
                *(rng.standard_normal(s) for s in ((d, e), (d, e), (d, e), (e, d), e, e, e))
            )
            for _ in range(heads)
        )
        mlp = MLP(
            rng.standard_normal((d, 4 * d)) / 2,
            rng.standard_normal(4 * d),
            rng.standard_normal((4 * d, d)) / 4,
            rng.standard_normal(d),
            activation,
        )
        out.append(Layer(hs, mlp, _ln(rng, d), _ln(rng, d), rng.standard_normal(d), e**-0.5))
    W_E = rng.standard_normal((vocab, d))
    if readout == "linear":  # the task's own decoder: the vocab's tokens and ⊥
        decoder = LinearDecoder(rng.standard_normal((d, vocab + 1)), rng.standard_normal(vocab + 1))
    else:
        W_U = {"tied": W_E.T.copy(), "lm-head": rng.standard_normal((d, vocab)), "hidden": None}[
            readout
        ]
        decoder = VocabDecoder(W_U, None, readout, VocabMap.from_json(vmap))
    return Transformer(
        W_E, rng.standard_normal((n_ctx, d)), tuple(out), decoder, ln_final=_ln(rng, d)
    )
