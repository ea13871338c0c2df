"""Regression tests for the false verdicts of issue 27 (findings 1 and 2, built from the issue's
recipes) and for the one rule that joins a certificate's two verdicts (`certified`). Finding 3 (the
INDEX protocol on a weight-form file) is in tests/induction/test_lower_bound.py. Each model below
fooled a verdict once."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from headcount.core.attention import use_algorithm, use_backend
from headcount.core.certify.certify import minimal_precision_bits
from headcount.core.certify.evaluate import certified_predict, emulate
from headcount.core.model import AttentionHead, Layer, LinearDecoder, Transformer
from headcount.core.model.files import save_model
from headcount.core.numbers.precision import FLOAT64, fixed
from headcount.core.passes.exact_fixed import exact_fixed_predict
from headcount.core.passes.forward import residual_stream
from headcount.core.passes.head_rounding import exact_head_row, grid_box
from headcount.induction.certification import certify_induction
from headcount.induction.construction import ONE, two_layer_induction
from tests.soundness.test_findings import run_json, tie_embedding_model, underflow_model

# ---- finding 1: a settled tie's value needs more than 53 bits
# ------------------------------------------

TIE_W_POS = (
    0.9999999999999991,
    0.9999999999999982,
    1.4999999999999991,
    1.9999999999999998,
    0.7499999999999996,
    0,
)


def settled_tie_model(c: float = 0.0) -> Transformer:
    """Issue 27's recipe: causal, n = 6, d_model = 1, W_E = 0, uniform attention (W_Q = W_K = 0),
    W_V = W_O = 1, a linear decoder with logits (x, c, −100). With c the float64 head output at
    position 6, the exact fixed:60 head output there is 9382499223688527/2^53 < c: the exact answer
    is class 1."""
    head = AttentionHead(np.zeros((1, 1)), np.zeros((1, 1)), np.ones((1, 1)), np.ones((1, 1)))
    decoder = LinearDecoder(np.array([[1.0, 0.0, 0.0]]), np.array([0.0, c, -100.0]))
    return Transformer(np.zeros((2, 1)), np.array(TIE_W_POS)[:, None], (Layer((head,)),), decoder)


@pytest.fixture(scope="module")
def tie_model() -> Transformer:
    c = float(residual_stream(settled_tie_model(), np.zeros((1, 6), dtype=np.int64))[0, 5, 0])
    assert c == 1.041666666666666
    return settled_tie_model(c)


def test_a_grid_value_float64_cannot_hold_keeps_a_radius():
    # grid ints N (value N/2^60): 54 and 61 bits (not floats), 53 bits and 3 (floats)
    N = np.array([9382499223688527 * 2**7, 2**60 + 1, 2**52 + 1, 3, -(2**61) - 3], dtype=object)
    mid, rad = grid_box(N, 60)
    assert rad.tolist()[2:4] == [0.0, 0.0]  # exactly floats: radius 0
    assert all(r > 0 for r in rad.tolist()[:2] + rad.tolist()[4:])
    for exact, m, r in zip(N.tolist(), mid.tolist(), rad.tolist()):
        value = Fraction(exact, 2**60)
        assert Fraction(m) - Fraction(r) <= value <= Fraction(m) + Fraction(r)


def test_a_grid_box_radius_is_rounded_up():
    """At p = 60 a grid integer has up to 121 bits, and its distance to the nearest float up to 68:
    float() of that distance rounds to nearest, so half the time below it; the radius must still
    reach the value."""
    rng = np.random.default_rng(27)
    N = np.array(
        [int(rng.integers(2**60)) << 61 | int(rng.integers(2**61)) for _ in range(4000)],
        dtype=object,
    )
    N[::2] = -N[::2]
    mid, rad = grid_box(N, 60)
    for exact, m, r in zip(N.tolist(), mid.tolist(), rad.tolist()):
        value = Fraction(exact, 2**60)
        assert Fraction(m) - Fraction(r) <= value <= Fraction(m) + Fraction(r)


def test_exact_head_row_is_not_rounded_to_float64(tie_model):
    W_pos = np.array(TIE_W_POS)[:, None]
    v = np.array([[float(x)] for x in (np.round(W_pos[:, 0] * 2.0**60) / 2.0**60)])
    mid, rad = exact_head_row(np.zeros(1), np.zeros((6, 1)), v, np.ones((1, 1)), 60)
    assert rad[0] > 0  # the rounded mean of the six values needs more than 53 bits
    assert mid[0] - rad[0] <= 9382499223688527 / 2**53 <= mid[0] + rad[0]


def test_settled_tie_proves_nothing_false(tie_model):
    tokens = np.zeros((1, 6), dtype=np.int64)
    exact = exact_fixed_predict(tie_model, tokens, 60)
    assert exact[0, 5] == 1  # the exact fixed:60 head output is below c
    out, proven = certified_predict(tie_model, tokens, fixed(60))
    assert not (proven & (out != exact)).any()  # was: class 0, proven
    assert not proven[0, 5]


def test_settled_tie_predict_and_precision_search(tie_model, capsys, tmp_path):
    path = tmp_path / "tie60.safetensors"
    save_model(tie_model, path)
    got = run_json(
        capsys,
        "induction",
        "predict",
        "--model",
        str(path),
        "--input",
        "0 0 0 0 0 0",
        "--precision",
        "fixed:60",
    )
    assert got["outputs"][5] == "1"
    tokens = np.zeros((1, 6), dtype=np.int64)
    target = exact_fixed_predict(tie_model, tokens, 60)
    found = minimal_precision_bits(tie_model, tokens, target, start=54)
    assert found is not None
    assert np.array_equal(exact_fixed_predict(tie_model, tokens, found), target)  # found p is right


# ---- finding 2: the negligible-key cut must be negligible against the output it changes
# ------------


def huge_value_model(n: int = 300, alphabet: int = 4) -> Transformer:
    """Issue 27's recipe: the two-layer construction plus one layer-1 head whose query (1) scores
    key 0 at 60 and every other key at 0, with value 1e300 off position 0 (0 there), written into
    every residual coordinate. At fixed:p the values clip and the head's output rounds to 0, so the
    fixed:p model is exact; in float64 the 1e300 values at weight e^-60 ruin every position."""
    base = two_layer_induction(n, alphabet)
    d, first = base.d_model, 0  # one more residual coordinate: 1 at position 0 only
    pad = lambda a, rows=0, cols=0: np.pad(a, ((0, rows), (0, cols)))  # noqa: E731
    W_pos = pad(base.W_pos, cols=1)
    W_pos[first, d] = 1.0

    def grow(h: AttentionHead) -> AttentionHead:
        return AttentionHead(
            pad(h.W_Q, rows=1), pad(h.W_K, rows=1), pad(h.W_V, rows=1), pad(h.W_O, cols=1)
        )

    W_Q, W_K, W_V = np.zeros((d + 1, 1)), np.zeros((d + 1, 1)), np.zeros((d + 1, 1))
    W_Q[ONE, 0], W_K[d, 0], W_V[ONE, 0], W_V[d, 0] = 1.0, 60.0, 1e300, -1e300
    extra = AttentionHead(W_Q, W_K, W_V, np.ones((1, d + 1)))
    layers = (
        Layer(tuple(grow(h) for h in base.layers[0].heads) + (extra,)),
        Layer(tuple(grow(h) for h in base.layers[1].heads)),
    )
    decoder = LinearDecoder(pad(base.decoder.W_U, rows=1), base.decoder.b_U)
    return Transformer(pad(base.W_E, cols=1), W_pos, layers, decoder, "causal", {})


@pytest.fixture(scope="module")
def huge_model() -> Transformer:
    return huge_value_model()


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_negligible_cut_keeps_a_huge_value_under_a_tiny_weight(huge_model, backend):
    tokens = np.random.default_rng(0).integers(0, 4, size=(2, 300))
    with use_algorithm("reference"), np.errstate(all="ignore"):
        dense = emulate(huge_model, tokens, FLOAT64)
    with use_backend(backend), np.errstate(all="ignore"):
        blocked = emulate(huge_model, tokens, FLOAT64)
    assert np.array_equal(blocked, dense)
    assert (
        dense != two_layer_answers(tokens)
    ).sum() > 100  # float64 is ruined: the head's output is huge


def two_layer_answers(tokens: np.ndarray) -> np.ndarray:
    from headcount.induction.task import induction_targets

    return induction_targets(tokens)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_huge_value_model_is_not_certified(huge_model, backend):
    def run(algorithm: str):
        with use_algorithm(algorithm), use_backend(backend if algorithm == "blocked" else "numpy"):
            cert = certify_induction(huge_model, 300, 4, samples=8).certificate.to_json()
        cert.pop("seconds")
        return cert

    blocked, reference = run("blocked"), run("reference")
    assert blocked == reference
    assert blocked["errors"] > 0 and blocked["certified"] is False
    assert blocked["proven_at_precision_bits"] is True  # the fixed:p model itself is proven right
    assert "float64" not in blocked["dtypes_exact"]


def test_huge_value_model_cli(huge_model, capsys, tmp_path):
    path = tmp_path / "huge.safetensors"
    save_model(huge_model, path)
    cert = run_json(
        capsys,
        "induction",
        "certify",
        "--model",
        str(path),
        "--n",
        "300",
        "--alphabet",
        "4",
        "--samples",
        "8",
    )
    assert cert["errors"] > 0 and cert["dtypes_exact"] == [] and cert["certified"] is False


# ---- one rule for `certified`: the fixed:p proof and the float64 error count
# ------------------------


def test_certified_is_the_conjunction_of_its_two_verdicts(capsys, tmp_path):
    """Each half failing alone makes `certified` false: float64 errs where fixed:p is proven right
    (the tie-embedding model of issue 11), and fixed:p is proven wrong at every p where float64 is
    right (the underflow model of issue 11). The two constructions pass both."""
    cases = {"float64-errs": tie_embedding_model(), "no-proof": underflow_model()}
    seen = {}
    for name, model in cases.items():
        path = tmp_path / f"{name}.safetensors"
        save_model(model, path)
        seen[name] = run_json(
            capsys, "induction", "certify", "--model", str(path), "--n", "1", "--alphabet", "2"
        )
    errs, no_proof = seen["float64-errs"], seen["no-proof"]
    assert (
        errs["errors"] > 0
        and errs["proven_at_precision_bits"] is True
        and errs["certified"] is False
    )
    assert no_proof["errors"] == 0 and no_proof["proven_at_precision_bits"] is False
    assert no_proof["certified"] is False
    good = run_json(capsys, "induction", "certify", "--layers", "2", "--n", "6", "--alphabet", "2")
    assert (
        good["errors"] == 0
        and good["proven_at_precision_bits"] is True
        and good["certified"] is True
    )


def test_certified_rule_lives_in_one_place():
    from headcount.core.certify.certificate import Certificate

    assert Certificate(errors=0, proven_at_precision_bits=True).certified
    assert not Certificate(errors=1, proven_at_precision_bits=True).certified
    assert not Certificate(errors=0, proven_at_precision_bits=False).certified
    with pytest.raises(TypeError):
        Certificate(certified=True)  # derived, never stored
