"""Soundness of certificates: every position certified_predict marks proven at fixed:p must carry
the exact fixed:p model's answer (headcount.core.passes.exact_fixed), on tiny models with
adversarial weights (palettes.py).

A proven wrong answer is a false certificate — the one thing headcount must never produce. Proving
little is allowed (a model whose float emulation overflows may legitimately prove nothing). Any
exception from certified_predict is a failure; one from the exact evaluator is a bug in it,
reported, never skipped.

Families: one or two layers × with or without an MLP × causal or full mask, S = 2, n ≤ 3, d ≤ 3, all
S^n inputs of each model. The default run fuzzes with Hypothesis (derandomized); the slow set checks
20,000 models per family from a seeded generator and prints its counts (HEADCOUNT_SOUNDNESS_MODELS
overrides the count, for a quicker look).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from headcount.core.certify.evaluate import certified_predict
from headcount.core.model.symbols import BOTTOM
from headcount.core.numbers.precision import fixed
from headcount.core.passes.exact_fixed import exact_fixed_predict
from headcount.induction.task import all_sequences
from tests.soundness.palettes import describe, finding1_model, fuzz_cases, random_case

FAMILIES = [
    (layers, mlp, mask) for layers in (1, 2) for mlp in (False, True) for mask in ("causal", "full")
]
FAMILY_IDS = [f"{layers}L-{'mlp' if mlp else 'attn'}-{mask}" for layers, mlp, mask in FAMILIES]
SLOW_MODELS = int(os.environ.get("HEADCOUNT_SOUNDNESS_MODELS", "20000"))


@dataclass
class Counts:
    models: int = 0
    positions: int = 0
    proven: int = 0
    mismatches: int = 0
    exceptions: int = 0
    examples: list[str] = field(default_factory=list)  # the first few counterexamples / exceptions

    def note(self, text: str) -> None:
        if len(self.examples) < 5:
            self.examples.append(text)


def check_soundness(model, bits: int, counts: Counts, catch_exact: bool = False) -> None:
    """Certify every input of Σ^n at fixed:bits and compare each proven position with the exact
    model. certified_predict may raise only by failing the test; the exact evaluator's exceptions
    are counted when `catch_exact` (the slow loop reports them all at the end) and propagate
    otherwise."""
    tokens = all_sequences(model.n_ctx, model.alphabet)
    out, proven = certified_predict(model, tokens, fixed(bits))
    counts.models += 1
    counts.positions += proven.size
    counts.proven += int(proven.sum())
    for row in np.flatnonzero(proven.any(axis=1)):
        asked = [int(i) for i in np.flatnonzero(proven[row])]
        try:
            exact = exact_fixed_predict(model, tokens[row : row + 1], bits, positions=asked)[0]
        except Exception as error:  # noqa: BLE001 — counted and reported by the slow loop
            if not catch_exact:
                raise
            counts.exceptions += 1
            counts.note(
                f"exact evaluator raised {error!r} on input {tokens[row].tolist()}:\n  "
                f"{describe(model, bits)}"
            )
            continue
        wrong = [i for i in asked if out[row, i] != exact[i]]
        if wrong:
            counts.mismatches += len(wrong)
            counts.note(
                f"input {tokens[row].tolist()} positions {wrong}: certified "
                f"{out[row, wrong].tolist()}, "
                f"exact {exact[wrong].tolist()}:\n  {describe(model, bits)}"
            )


def assert_sound(counts: Counts) -> None:
    assert counts.mismatches == 0 and counts.exceptions == 0, "\n".join(counts.examples)


# --------------------------------------------------------------------------------------------------
# Known counterexamples of issue 11


@pytest.fixture
def finding1():
    return finding1_model()


def test_finding1_exact_answer_is_token_0(finding1):
    assert exact_fixed_predict(finding1, np.array([[0], [1]]), 1).tolist() == [[0], [0]]


def test_finding1_bottom_is_not_proven(finding1):
    model = finding1
    out, proven = certified_predict(model, np.array([[0], [1]]), fixed(1))
    assert not (proven & (out == BOTTOM)).any(), (
        "certified_predict proves ⊥ where the exact model answers 0"
    )
    counts = Counts()
    check_soundness(model, 1, counts)
    assert_sound(counts)


# --------------------------------------------------------------------------------------------------
# Fast set: Hypothesis, derandomized

FAST = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def fuzz(strategy, examples: int = FAST.max_examples) -> Counts:
    """Run check_soundness on every case Hypothesis draws from `strategy`; fails on the first
    mismatch."""
    counts = Counts()

    @settings(FAST, max_examples=examples)
    @given(case=strategy)
    def run(case):
        model, bits = case
        before = counts.mismatches
        check_soundness(model, bits, counts)
        assert counts.mismatches == before, "\n".join(counts.examples)

    run()
    return counts


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_certified_positions_are_exact_fuzzed(family):
    counts = fuzz(fuzz_cases(*family))
    assert counts.models >= FAST.max_examples


@pytest.mark.parametrize("mask", ["causal", "full"])
def test_decoder_on_exact_residual_fuzzed(mask):
    # silent heads (W_O = 0) and the "underflow" theme: the decoder step alone must be sound on an
    # exact residual, with subnormal weights whose products underflow (the shape of issue 11,
    # finding 1)
    counts = fuzz(fuzz_cases(1, False, mask, theme="underflow", silent=True), examples=500)
    assert counts.models >= 500
    assert counts.proven > 0, "no position proven: the fuzzing checked nothing"


# --------------------------------------------------------------------------------------------------
# Slow set: ≥ 20,000 models per family from a seeded generator


def slow_family(label: str, seed: int, **family) -> None:
    """SLOW_MODELS models of random_case(**family) from one seeded generator; prints the counts,
    then asserts soundness."""
    rng = np.random.default_rng(seed)
    counts = Counts()
    start = time.perf_counter()
    with np.errstate(all="ignore"):
        for _ in range(SLOW_MODELS):
            check_soundness(*random_case(rng, **family), counts, catch_exact=True)
    print(
        f"\nsoundness {label}: models {counts.models}, positions {counts.positions}, proven "
        f"{counts.proven}, "
        f"mismatches {counts.mismatches}, exact-evaluator exceptions {counts.exceptions}, "
        f"{time.perf_counter() - start:.0f} s"
    )
    for text in counts.examples:
        print(text)
    assert counts.models == SLOW_MODELS
    assert_sound(counts)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_certified_positions_are_exact_many_models(family):
    layers, mlp, mask = family
    seed = 20_000 + 10 * layers + 2 * mlp + (mask == "full")
    slow_family(FAMILY_IDS[FAMILIES.index(family)], seed, layers=layers, mlp=mlp, mask=mask)


@pytest.mark.slow
@pytest.mark.parametrize("mask", ["causal", "full"])
def test_decoder_on_exact_residual_many_models(mask):
    slow_family(
        f"silent-heads-{mask}",
        30_000 + (mask == "full"),
        layers=1,
        mlp=False,
        mask=mask,
        theme="underflow",
        silent=True,
    )
