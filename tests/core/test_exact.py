"""The exact fixed:p evaluator (headcount.core.passes.exact_fixed) and exact exponential-sum signs
(headcount.core.numbers.expsum).

The evaluator is checked three ways: on hand-built models whose exact answer is known on paper —
ties and near-ties the float64 emulation gets wrong (issue 11, finding 4), exact ties of softmax
outputs (half to even), the clip —; against the float64 emulation on generic models, where no value
comes near a tie, so the two must agree to the last bit of the final residual; and against the
constructions' known answers.
"""

from __future__ import annotations

import time
from fractions import Fraction

import flint
import numpy as np
import pytest

from headcount.core.certify.evaluate import emulate
from headcount.core.model import MLP, AttentionHead, Layer, LinearDecoder, Transformer
from headcount.core.model.symbols import BOTTOM
from headcount.core.model.table import random_table
from headcount.core.numbers import expsum
from headcount.core.numbers.precision import fixed
from headcount.core.passes.exact_fixed import (
    exact_fixed_predict,
    exact_fixed_residual,
    exact_round_fixed,
)
from headcount.core.passes.forward import residual_stream
from headcount.core.passes.table_form import table_residual
from headcount.induction import task
from headcount.induction.construction import one_layer_induction, two_layer_induction
from headcount.minmax import exact_signs as minmax_exact

Q = flint.fmpq


def residual_fractions(model, row, bits) -> list[list[Fraction]]:
    return [
        [Fraction(int(v.p), int(v.q)) for v in vec]
        for vec in exact_fixed_residual(model, row, bits)
    ]


def float_fractions(values: np.ndarray) -> list[list[Fraction]]:
    return [[Fraction(float(v)) for v in vec] for vec in values]


def zero_head(d: int) -> AttentionHead:
    return AttentionHead(np.ones((d, 1)), np.ones((d, 1)), np.ones((d, 1)), np.zeros((1, d)))


# --------------------------------------------------------------------------------------------------
# expsum


def test_sign_exp_poly_zero_iff_collected_coefficients_vanish():
    # Fraction and fmpq exponents of equal value must be collected together (they hash alike,
    # compare unequal)
    assert expsum.sign_exp_poly({Fraction(1, 2): Fraction(3), Q(1, 2): Q(-3)}) == 0
    assert expsum.sign_exp_poly({}) == 0
    assert expsum.sign_exp_poly({Q(0): Q(0), Q(5): Q(0)}) == 0
    assert expsum.sign_exp_poly({Q(7, 3): Q(-1, 10**30)}) == -1


def test_sign_exp_poly_near_cancellations():
    # e − r for rationals r within 1e-46 of e on both sides (e = 2.71828…4709369995…); huge exponent
    # gaps; a tiny top coefficient
    e_digits = 27182818284590452353602874713526624977572470936
    low, high = Q(e_digits, 10**46), Q(e_digits + 1, 10**46)
    assert expsum.sign_exp_poly({Q(1): Q(1), Q(0): -low}) == 1
    assert expsum.sign_exp_poly({Q(1): Q(1), Q(0): -high}) == -1
    assert expsum.sign_exp_poly({Q(10**300): Q(1, 2**1074), Q(0): Q(-(10**300))}) == 1
    assert expsum.sign_exp_poly({Q(-(10**300)): Q(10**300), Q(0): Q(-1, 2**1074)}) == -1


def test_sign_exp_poly_matches_minmax_on_random_sums():
    rng = np.random.default_rng(5)
    for _ in range(200):
        poly = {
            Fraction(int(a), 4): Fraction(int(c), int(rng.integers(1, 9)))
            for a, c in zip(rng.integers(-8, 9, size=4), rng.integers(-5, 6, size=4))
        }
        assert expsum.sign_exp_poly(poly) == minmax_exact.sign_exp_poly(
            {k: v for k, v in poly.items() if v}
        )


def test_sign_exp_poly_gives_up_as_undecided():
    # a non-zero sum never resolves below its cancellation depth: with max_prec too small it says so
    e_digits = 27182818284590452353602874713526624977572470936
    with pytest.raises(ArithmeticError, match="undecided"):
        expsum.sign_exp_poly({Q(1): Q(1), Q(0): Q(-e_digits, 10**46)}, max_prec=64)


# --------------------------------------------------------------------------------------------------
# exact_round_fixed


def test_exact_round_fixed_ties_to_even_and_clips():
    assert exact_round_fixed(Fraction(5, 4), 1) == Q(1)  # 2.5 halves → 2
    assert exact_round_fixed(Fraction(7, 4), 1) == Q(2)  # 3.5 halves → 4
    assert exact_round_fixed(Fraction(5, 4) + Fraction(1, 2**54), 1) == Q(3, 2)
    assert exact_round_fixed(Q(-5, 4), 1) == Q(-1)
    assert exact_round_fixed(Q(-7, 4), 1) == Q(-2)
    assert exact_round_fixed(Fraction(1, 3), 3) == Q(3, 8)
    assert exact_round_fixed(3, 1) == Q(2) and exact_round_fixed(-3, 1) == Q(-2)  # clip to ±2^p
    assert exact_round_fixed(2.0**60 + 1, 60) == Q(2**60)
    assert exact_round_fixed(0.0, 5) == Q(0)


# --------------------------------------------------------------------------------------------------
# Hand-built models with known exact answers


def finding4_model(layers: int) -> Transformer:
    """Issue 11, finding 4: x = 1 + (1/4 + 2^-54) rounds UP to 1.5 at p = 1, but float64 first
    rounds the sum to the tie 1.25, which goes to 1.0. Decoder: token 0 when x ≤ 1.25, ⊥ when x ≥
    1.5."""
    decoder = LinearDecoder(np.array([[0.0, 1.0]]), np.array([0.0, -1.375]))
    stack = (Layer((zero_head(1),)),) if layers else ()
    return Transformer(np.array([[1.0]]), np.array([[0.25 + 2.0**-54]]), stack, decoder)


@pytest.mark.parametrize("layers", [0, 1])
def test_finding4_embedding_tie_float_gets_wrong(layers):
    model = finding4_model(layers)
    assert residual_fractions(model, [0], 1) == [[Fraction(3, 2)]]
    assert exact_fixed_predict(model, [[0]], 1).tolist() == [[BOTTOM]]
    assert emulate(model, [[0]], fixed(1)).tolist() == [[0]]  # the float emulation's (wrong) answer
    assert exact_fixed_predict(model, [[0]], 2).tolist() == [
        [0]
    ]  # on the 1/4 grid it rounds to 1.25


def test_mlp_hidden_layer_is_exact():
    # relu(x·1 + (1/4 + 2^-54)) at x = 1 is 1.25 + 2^-54 exactly: the MLP output rounds up to 1.5 at
    # p = 1
    mlp = MLP(np.array([[1.0]]), np.array([0.25 + 2.0**-54]), np.array([[1.0]]), np.array([0.0]))
    model = Transformer(
        np.array([[1.0]]),
        np.array([[0.0]]),
        (Layer((), mlp),),
        LinearDecoder(np.array([[0.0, 1.0]]), np.array([0.0, -2.375])),
    )
    assert residual_fractions(model, [0], 1) == [[Fraction(5, 2)]]
    assert exact_fixed_predict(model, [[0]], 1).tolist() == [[BOTTOM]]
    assert emulate(model, [[0]], fixed(1)).tolist() == [[0]]


def mean_model(
    values: list[float], extra_score: float = 0.0, gain: float = 1.0, mask: str = "causal"
):
    """d_model 3: coordinate 0 carries a value v_j, coordinate 1 receives the head output,
    coordinate 2 a key/query feature c (only at the last position) giving the last key the score c².
    Head output at the last query: (Σ_j e^{s_j} v_j·gain) / Σ_j e^{s_j}."""
    n = len(values)
    W_pos = np.zeros((n, 3))
    W_pos[:, 0] = values
    W_pos[-1, 2] = extra_score
    W_Q = np.array([[0.0], [0.0], [1.0]])
    head = AttentionHead(
        W_Q, W_Q.copy(), np.array([[1.0], [0.0], [0.0]]), np.array([[0.0, gain, 0.0]])
    )
    decoder = LinearDecoder(np.zeros((3, 2)), np.zeros(2))
    return Transformer(np.zeros((1, 3)), W_pos, (Layer((head,)),), decoder, mask)


@pytest.mark.parametrize("bits", [1, 3, 20, 60])
def test_softmax_tie_rounds_half_to_even(bits):
    g = 2.0**-bits
    # equal scores, values 0 and 2^-p: y = 2^-(p+1) exactly, a tie: half to even → 0
    assert residual_fractions(mean_model([0.0, g]), [0, 0], bits)[1][1] == 0
    # values 2^-p and 2·2^-p: y = 1.5·2^-p → 2·2^-p
    assert residual_fractions(mean_model([g, 2 * g]), [0, 0], bits)[1][1] == Fraction(2, 2**bits)
    # a third key with a different score and value exactly the tie: still an exact tie
    # (Lindemann–Weierstrass)
    bits = max(bits, 2)  # the score feature 3/4 must be on the grid
    g = 2.0**-bits
    model = mean_model([0.0, 2 * g, g], extra_score=0.75, gain=0.5)
    assert residual_fractions(model, [0, 0, 0], bits)[2][1] == 0
    model = mean_model([2 * g, 4 * g, 3 * g], extra_score=0.75, gain=0.5)  # y = 1.5·2^-p → 2·2^-p
    assert residual_fractions(model, [0, 0, 0], bits)[2][1] == Fraction(2, 2**bits)


def test_near_tie_decided_exactly_where_float_says_tie():
    # scores 0 and 2^-60 (q = k = 2^-30), values 0 and 2^-30: y = 2^-30·e^ε/(1 + e^ε) is just ABOVE
    # the tie 2^-31, so it rounds up to 2^-30; float64 has e^(2^-60) = 1 and rounds the tie down to
    # 0
    bits = 30
    model = mean_model([0.0, 2.0**-bits], extra_score=2.0**-bits)
    exact = residual_fractions(model, [0, 0], bits)
    assert exact[1][1] == Fraction(1, 2**bits)
    assert residual_stream(model, np.array([[0, 0]]), fixed(bits))[0, 1, 1] == 0.0
    # and just below the tie when the larger score sits on the smaller value
    model = mean_model([2.0**-bits, 0.0], extra_score=2.0**-bits)
    assert residual_fractions(model, [0, 0], bits)[1][1] == 0


def test_clipping_at_every_rounding_point():
    # embedding 3 → 2 (p = 1), −3 → −2; head output v·W_O = 2·4 = 8 → 2; q, k, v clip at 2 as well
    head = AttentionHead(np.array([[1.0]]), np.array([[1.0]]), np.array([[4.0]]), np.array([[4.0]]))
    model = Transformer(
        np.array([[3.0], [-3.0]]),
        np.zeros((2, 1)),
        (Layer((head,)),),
        LinearDecoder(np.zeros((1, 2)), np.zeros(2)),
    )
    # position 0 sees itself: v = clip(2·4 = 8) = 2, u = 2·4 = 8 → 2, x = 2 + 2. Position 1: q = −2,
    # scores −4 (key 0) and 4 (key 1), u = 8, −8: y ≈ −8·(1 − 2e^-8) → −2, x = −2 − 2
    assert residual_fractions(model, [0, 1], 1) == [[Fraction(4)], [Fraction(-4)]]
    mlp = MLP(np.array([[1.0]]), np.array([0.0]), np.array([[1e300]]), np.array([-1e300]))
    model = Transformer(
        np.array([[1.0]]),
        np.zeros((1, 1)),
        (Layer((), mlp),),
        LinearDecoder(np.zeros((1, 2)), np.zeros(2)),
    )
    assert residual_fractions(model, [0], 4) == [
        [Fraction(1)]
    ]  # 1e300·1 − 1e300 = 0 exactly: no clip
    model = Transformer(
        np.array([[2.0**-3]]),
        np.zeros((1, 1)),
        (Layer((), mlp),),
        LinearDecoder(np.zeros((1, 2)), np.zeros(2)),
    )
    assert residual_fractions(model, [0], 4) == [[Fraction(1, 8) - 16]]  # 1e300·(1/8 − 1) → −2^4


def test_clipped_head_output_value():
    head = AttentionHead(np.zeros((1, 1)), np.zeros((1, 1)), np.array([[1.0]]), np.array([[4.0]]))
    model = Transformer(
        np.array([[2.0], [-2.0]]),
        np.zeros((2, 1)),
        (Layer((head,)),),
        LinearDecoder(np.zeros((1, 2)), np.zeros(2)),
        "full",
    )
    # p = 1: v = ±2, uniform attention; position 0 (token 0) and 1 (token 1): y = 4·(2 − 2)/2 = 0
    assert residual_fractions(model, [0, 1], 1) == [[Fraction(2)], [Fraction(-2)]]
    # both tokens 0: y = 4·2 = 8 → 2
    assert residual_fractions(model, [0, 0], 1) == [[Fraction(4)], [Fraction(4)]]
    assert residual_fractions(model, [1, 1], 1) == [[Fraction(-4)], [Fraction(-4)]]


def test_full_mask_sees_later_keys():
    # full mask: position 0's head output averages both values; causal: only its own
    values = [0.0, 1.0]
    full, causal = mean_model(values, mask="full"), mean_model(values, mask="causal")
    assert residual_fractions(full, [0, 0], 4)[0][1] == Fraction(1, 2)
    assert residual_fractions(causal, [0, 0], 4)[0][1] == 0


# --------------------------------------------------------------------------------------------------
# Agreement with the float64 emulation where nothing is near a tie


def gaussian_model(
    rng: np.random.Generator,
    layers: int,
    mlp: bool,
    mask: str,
    n: int = 5,
    d: int = 4,
    alphabet: int = 3,
) -> Transformer:
    g = lambda *shape: rng.standard_normal(shape)  # noqa: E731
    stack = []
    for _ in range(layers):
        heads = tuple(AttentionHead(g(d, 2), g(d, 2), g(d, 3), g(3, d)) for _ in range(2))
        stack.append(Layer(heads, MLP(g(d, 6), g(6), g(6, d), g(d)) if mlp else None))
    return Transformer(
        g(alphabet, d),
        g(n, d),
        tuple(stack),
        LinearDecoder(g(d, alphabet + 1), g(alphabet + 1)),
        mask,
    )


@pytest.mark.parametrize("mask", ["causal", "full"])
@pytest.mark.parametrize("layers,mlp", [(1, False), (1, True), (2, False), (2, True)])
def test_generic_models_match_float_emulation_bit_for_bit(mask, layers, mlp):
    rng = np.random.default_rng(layers * 10 + mlp + (mask == "full") * 100)
    model = gaussian_model(rng, layers, mlp, mask)
    tokens = rng.integers(0, model.alphabet, size=(4, model.n_ctx))
    for bits in (2, 7, 16, 28):  # float64 errs by ~2^-50 here: far below the grid up to p ≈ 30
        emulated = residual_stream(model, tokens, fixed(bits))
        for b in range(len(tokens)):
            assert residual_fractions(model, tokens[b], bits) == float_fractions(emulated[b]), (
                bits,
                b,
            )
        assert np.array_equal(
            exact_fixed_predict(model, tokens, bits), emulate(model, tokens, fixed(bits))
        )


@pytest.mark.parametrize("mask", ["causal", "full"])
def test_table_models_match_float_emulation(mask):
    rng = np.random.default_rng(7)
    table = random_table(rng, 5, 3, 2, 4, scale=2.0, mask=mask)
    tokens = rng.integers(0, 3, size=(6, 5))
    for bits in (1, 4, 16, 40):
        emulated = table_residual(table, tokens, fixed(bits))
        for b in range(len(tokens)):
            assert residual_fractions(table, tokens[b], bits) == float_fractions(emulated[b]), (
                bits,
                b,
            )
        assert np.array_equal(
            exact_fixed_predict(table, tokens, bits), emulate(table, tokens, fixed(bits))
        )


def test_two_layer_construction_exact_at_its_precision():
    n, S = 12, 3
    model = two_layer_induction(n, S)
    tokens = np.concatenate(
        [
            task.uniform(np.random.default_rng(2), 6, n, S),
            task.latest_match_far_back(np.random.default_rng(3), 3, n, S),
        ]
    )
    target = task.induction_targets(tokens)
    exact = {bits: exact_fixed_predict(model, tokens, bits) for bits in range(6, 13)}
    good = [bits for bits, out in exact.items() if np.array_equal(out, target)]
    assert good, "the construction must be right at some p ≤ 12"
    for bits in (good[0], good[0] + 2):
        assert np.array_equal(exact[bits], emulate(model, tokens, fixed(bits)))
        assert np.array_equal(exact[bits], target)


def test_one_layer_construction_and_readout():
    n, S = 9, 3
    model = one_layer_induction(n, S)
    tokens = task.all_sequences(5, S)[::7]
    tokens = np.concatenate([tokens, np.zeros((len(tokens), n - 5), dtype=np.int64)], axis=1)
    target = task.induction_targets(tokens)
    assert np.array_equal(exact_fixed_predict(model, tokens, 5), target)
    for bits in (
        2,
        3,
        5,
    ):  # low p: the readout's half-up floor lands on exact halves; must match the float
        assert np.array_equal(
            exact_fixed_predict(model, tokens, bits), emulate(model, tokens, fixed(bits))
        )
    assert not np.array_equal(exact_fixed_predict(model, tokens, 2), target)


# --------------------------------------------------------------------------------------------------
# Positions, input checks, speed


@pytest.mark.parametrize("mask", ["causal", "full"])
def test_positions_compute_only_what_is_asked(mask):
    rng = np.random.default_rng(11)
    model = gaussian_model(rng, 2, True, mask, n=7)
    tokens = rng.integers(0, model.alphabet, size=(3, 7))
    full = exact_fixed_predict(model, tokens, 12)
    part = exact_fixed_predict(model, tokens, 12, positions=[4, 1])
    assert np.array_equal(part[:, [1, 4]], full[:, [1, 4]])
    assert (part[:, [0, 2, 3, 5, 6]] == BOTTOM).all()
    assert (exact_fixed_predict(model, tokens, 12, positions=[]) == BOTTOM).all()
    table = one_layer_induction(7, 3)
    target = task.induction_targets(tokens)
    got = exact_fixed_predict(table, tokens, 6, positions=[2, 6])
    assert np.array_equal(got[:, [2, 6]], target[:, [2, 6]]) and (got[:, 3] == BOTTOM).all()


def test_bad_input_is_a_value_error():
    model = finding4_model(1)
    for bits in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="bits"):
            exact_fixed_predict(model, [[0]], bits)
    with pytest.raises(ValueError, match="positions"):
        exact_fixed_predict(model, [[0]], 3, positions=[1])
    with pytest.raises(ValueError, match="tokens"):
        exact_fixed_predict(model, [[1]], 3)
    with pytest.raises(ValueError, match="finite"):
        exact_fixed_predict(
            Transformer(np.array([[np.inf]]), np.zeros((1, 1)), (), model.decoder), [[0]], 3
        )

    class Other:
        kind = "other"

    weird = Transformer(model.W_E, model.W_pos, model.layers, Other())
    with pytest.raises(ValueError, match="exact evaluation does not support decoder kind other"):
        exact_fixed_predict(weird, [[0]], 3)
    with pytest.raises(ValueError, match="one input row"):
        exact_fixed_residual(model, [[0], [0]], 3)


def test_empty_batch():
    assert exact_fixed_predict(finding4_model(0), np.zeros((0, 1), dtype=np.int64), 3).shape == (
        0,
        1,
    )


def test_speed_two_layer_n64():
    # the target is well under a second per input on one core; the bound leaves room for a loaded
    # machine
    rng = np.random.default_rng(0)
    model = gaussian_model(rng, 2, True, "causal", n=64, d=32, alphabet=8)
    tokens = rng.integers(0, 8, size=(2, 64))
    start = time.process_time()  # CPU time: what the machine's load does not change
    exact_fixed_predict(model, tokens, 30)
    assert (time.process_time() - start) / 2 < 3.0
    tiny = gaussian_model(rng, 1, False, "causal", n=3, d=2, alphabet=2)
    start = time.process_time()
    exact_fixed_predict(tiny, np.array([[0, 1, 1]]), 10)
    assert time.process_time() - start < 0.5
