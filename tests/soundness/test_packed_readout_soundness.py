"""Soundness of the packed readout (induction.readout.PackedInductionReadout, issue 33): every
position certified_predict proves at fixed:p carries the exact fixed:p model's answer
(core.passes.exact_fixed, which reads the residual through decode_grid), on packed one-layer tables
made hostile for the readout's shortcut (decode_bounds: an interval read as one integer per slot).

The models: the packed family's values (slots, offset, base as in the search) with entries moved to
rounding ties of i·y (odd multiples of 2^-(p+1) divided by small i), to the clip 2^p, by a grid
step, or replaced by palette values; scores from the adversarial palette, so attention is not
uniform either. Default run: FAST_MODELS models; the slow set (`-m slow`): HEADCOUNT_PACKED_MODELS
(default 10,000).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from headcount.core.model import OneLayerTable
from headcount.induction.lower_bound.minimal import packed_one_layer_induction
from tests.soundness.palettes import palette
from tests.soundness.test_certified_soundness import Counts, assert_sound, check_soundness

FAST_MODELS = 150
SLOW_MODELS = int(os.environ.get("HEADCOUNT_PACKED_MODELS", "10000"))


def hostile_packed(rng: np.random.Generator) -> tuple[OneLayerTable, int]:
    n, S = int(rng.integers(2, 5)), int(rng.integers(2, 4))
    slots, offset = int(rng.integers(1, n + 1)), int(rng.integers(0, 2))
    bits = int(rng.integers(2, 9))
    model = packed_one_layer_induction(n, S, slots, offset)
    V, Q, K = model.V.copy(), model.Q.copy(), model.K.copy()
    g = 2.0**-bits
    pal = palette(bits)
    for index in zip(*np.nonzero(rng.random(V.shape) < 0.3)):
        i = int(rng.integers(1, n + 1))
        kind = rng.integers(0, 4)
        if kind == 0:
            V[index] += (2 * int(rng.integers(0, 4)) + 1) * g / (2 * i)  # a tie of i·y
        elif kind == 1:
            V[index] = rng.choice([2.0**bits, 2.0**bits + g, -(2.0**bits)])
        elif kind == 2:
            V[index] += rng.choice([g, -g, g / 2])
        else:
            V[index] = rng.choice(pal)
    if rng.random() < 0.5:
        Q = rng.choice(pal[np.abs(pal) < 8], size=Q.shape)
        K = rng.choice(pal[np.abs(pal) < 8], size=K.shape)
    hostile = OneLayerTable(model.embed, Q, K, V, model.decoder, "causal", {})
    return hostile, bits


def run_models(count: int, seed: int) -> Counts:
    rng = np.random.default_rng(seed)
    counts = Counts()
    with np.errstate(all="ignore"):
        for _ in range(count):
            check_soundness(*hostile_packed(rng), counts, catch_exact=count > FAST_MODELS)
    return counts


def test_packed_readout_proves_nothing_false():
    counts = run_models(FAST_MODELS, 33)
    assert counts.models == FAST_MODELS and counts.proven > 0, "no position proven"
    assert_sound(counts)


@pytest.mark.slow
def test_packed_readout_proves_nothing_false_many_models():
    counts = run_models(SLOW_MODELS, 3300)
    print(
        f"\nsoundness packed-readout: models {counts.models}, positions {counts.positions}, "
        f"proven {counts.proven}, mismatches {counts.mismatches}, exact-evaluator exceptions "
        f"{counts.exceptions}"
    )
    assert_sound(counts)
