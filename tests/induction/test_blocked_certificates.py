"""The blocked algorithm (the default: query-blocked attention, sparse near keys, certify in one
pass) gives the same certificates as the reference algorithm of the first release
(core.attention.settings) — every field but the timings — on every size the quick `reproduce`
certifies (issue 18). The large sizes are slow."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from headcount.core.attention import current_algorithm, use_algorithm
from headcount.core.certify.certify import certify_model
from headcount.core.certify.evaluate import emulate
from headcount.core.numbers.precision import FLOAT64
from headcount.induction.certification import certify_induction
from headcount.induction.construction import one_layer_induction, two_layer_induction
from headcount.induction.multihop.construction import khop_construction
from tests.core.test_gpt2_parts import gpt2_like


def both(certify) -> tuple[dict, dict]:
    """certify() under each algorithm, as JSON without the timings."""
    out = []
    for name in ("reference", "blocked"):
        with use_algorithm(name):
            assert current_algorithm() == name
            cert = certify().to_json()
        cert.pop("seconds")
        out.append(cert)
    return out[0], out[1]


# induction.two_layer.exhaustive (quick), induction.one_layer.n_log_n (quick), the small precision
# points
SMALL = [
    ("two_layer", n, S, None) for S, n in [(2, 4), (2, 8), (2, 12), (3, 5), (3, 8), (4, 4), (4, 6)]
]
SMALL += [("one_layer", n, S, s) for n, S, s in [(10, 2, None), (8, 3, None), (64, 3, 32)]]
SMALL += [("two_layer", 64, 64, 8), ("two_layer", 256, 64, 8)]
SLOW = [("one_layer", 128, 3, 32), ("one_layer", 256, 3, 32)]
SLOW += [("two_layer", n, S, s) for n, S, s in [(1024, 16, 8), (1024, 64, 4), (4096, 64, 2)]]
BUILD = {"two_layer": two_layer_induction, "one_layer": one_layer_induction}


def _induction_case(kind: str, n: int, S: int, samples: int | None) -> None:
    reference, blocked = both(lambda: certify_induction(BUILD[kind](n, S), n, S, samples=samples))
    assert blocked == reference
    assert blocked["certified"] and blocked["errors"] == 0  # what the claims need, under both


@pytest.mark.parametrize("kind,n,S,samples", SMALL)
def test_induction_certificates_agree(kind, n, S, samples):
    _induction_case(kind, n, S, samples)


@pytest.mark.slow
@pytest.mark.parametrize("kind,n,S,samples", SLOW)
def test_induction_certificates_agree_at_large_n(kind, n, S, samples):
    _induction_case(kind, n, S, samples)


def _khop_case(n: int, S: int, samples: int, hops: int) -> None:
    model = khop_construction(n, S, hops)
    reference, blocked = both(
        lambda: certify_induction(model, n, S, samples=samples, hops=hops, dtypes=False)
    )
    assert blocked == reference and blocked["certified"]


@pytest.mark.parametrize("hops", [1, 4, 16])
def test_khop_certificates_agree(
    hops,
):  # induction.khop.construction's quick precision points (n = 32)
    _khop_case(32, 8, 64, hops)


@pytest.mark.slow
@pytest.mark.parametrize("hops", range(1, 17))
def test_khop_depth_certificates_agree(hops):  # induction.khop.construction's quick depth case
    _khop_case(64, 8, 128, hops)


@pytest.mark.slow
@pytest.mark.parametrize("hops", [1, 4, 16])
@pytest.mark.parametrize("n,samples", [(64, 128), (128, 32), (256, 16)])
def test_khop_precision_certificates_agree(hops, n, samples):
    _khop_case(n, 8, samples, hops)


def test_gpt2_style_certificates_agree():
    """A model with LayerNorm, MLP and a scaled score (like the trained models learn/certified_runs
    certifies): boxes with radii in every head, the precision search climbing, rejections
    recorded."""
    model = gpt2_like(seed=3, n_ctx=24, vocab=6, readout="lm-head")
    rng = np.random.default_rng(0)
    chunks = [rng.integers(0, 6, size=(rows, 24)) for rows in (3, 5, 4)]
    with use_algorithm("reference"):
        targets = [
            emulate(model, tokens, FLOAT64) for tokens in chunks
        ]  # the model's own float64 answers

    def stream() -> Iterator[tuple[str, np.ndarray]]:
        yield from (("random", tokens) for tokens in chunks)

    def reference(tokens: np.ndarray) -> np.ndarray:
        return next(t for c, t in zip(chunks, targets) if c is tokens or np.array_equal(c, tokens))

    ref, blocked = both(lambda: certify_model(model, stream, reference))
    assert blocked == ref
    assert ref["rejected"] and ref["precision_bits"] > 1  # the search did climb
