"""The rigorous bounds (headcount.core.passes.bounds) must CONTAIN the value of the real-arithmetic
model.

The reference is an independent forward pass in python-flint ball arithmetic at 200 bits (weights
are float64, hence exact rationals; only exp is inexact, to ~2^-200). In fixed:p mode it applies the
seed's rounding — nearest multiple of 2^-p, ties to even, clipped to ±2^p — at the same points as
headcount.core.passes.forward: embedding output, q, k, v, each head's output after W_O, the MLP
output. Where the reference value is within 1e-30 of a rounding tie the case is skipped (no float64
evaluation decides it).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from flint import arb, ctx, fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from headcount.core.attention import attention_bounds
from headcount.core.certify.evaluate import certified_predict, predict
from headcount.core.model import MLP, AttentionHead, Layer, LinearDecoder, Transformer, parts
from headcount.core.model.symbols import BOTTOM
from headcount.core.model.table import OneLayerTable, table_from_weights
from headcount.core.model.vocab import VocabDecoder
from headcount.core.numbers.interval import (
    add_bounds,
    affine_bounds,
    fraction_bits,
    quantize_bounds,
)
from headcount.core.numbers.precision import EXACT, FLOAT64, Precision, fixed, round_fixed
from headcount.core.passes.bounds import residual_bounds
from headcount.core.passes.forward import residual_stream
from headcount.core.passes.table_form import table_residual_bounds
from headcount.induction.construction import one_layer_induction, two_layer_induction
from headcount.induction.task import all_sequences, induction_targets

TIE_TOLERANCE = 1e-30


@pytest.fixture(autouse=True)
def _arb_precision():
    old = ctx.prec
    ctx.prec = 200
    yield
    ctx.prec = old


# --------------------------------------------------------------------------------------------------
# Reference forward pass in ball arithmetic


class NearTie(Exception):
    """The reference value is within TIE_TOLERANCE of a fixed:p rounding tie."""


def A(x) -> arb:
    return arb(float(x))  # exact: every float64 is an arb midpoint


def amat(a: np.ndarray) -> list:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 1:
        return [A(v) for v in a]
    return [amat(row) for row in a]


def round_fixed_arb(v: arb, bits: int) -> arb:
    """Nearest multiple of 2^-bits (ties to even), clipped to ±2^bits, of the real number in the
    ball."""
    scale = 2**bits
    t = v * scale + fmpq(1, 2)
    if (t + arb(0, TIE_TOLERANCE * scale)).contains_integer():
        raise NearTie
    k = t.floor().unique_fmpz()
    assert k is not None
    k = max(-(scale * scale), min(scale * scale, int(k)))  # clip: |k/2^p| ≤ 2^p
    return arb(fmpq(k, scale))


def vecmat(x: list, W: list) -> list:
    """x [d] · W [d k] in ball arithmetic."""
    return [sum((x[i] * W[i][j] for i in range(len(x))), arb(0)) for j in range(len(W[0]))]


def relu(v: arb) -> arb:
    if v >= 0:
        return v
    if v <= 0:
        return arb(0)
    return v.nonnegative_part()


def reference_residual(model: Transformer, seq, prec: Precision) -> list:
    """Final residual [pos][d_model] (balls) of the real-arithmetic model with prec's rounding
    points."""
    rp = (lambda v: round_fixed_arb(v, prec.bits)) if prec.kind == "fixed" else (lambda v: v)
    n, d = len(seq), model.d_model
    W_E, W_pos = amat(model.W_E), amat(model.W_pos)
    x = [[rp(W_E[t][c] + W_pos[i][c]) for c in range(d)] for i, t in enumerate(seq)]
    for layer in model.layers:
        update = [[arb(0)] * d for _ in range(n)]
        for head in layer.heads:
            WQ, WK, WV, WO = amat(head.W_Q), amat(head.W_K), amat(head.W_V), amat(head.W_O)
            q = [[rp(v) for v in vecmat(xi, WQ)] for xi in x]
            k = [[rp(v) for v in vecmat(xi, WK)] for xi in x]
            v = [[rp(u) for u in vecmat(xi, WV)] for xi in x]
            for i in range(n):
                keys = range(i + 1) if model.mask == "causal" else range(n)
                scores = [sum((a * b for a, b in zip(q[i], k[j])), arb(0)) for j in keys]
                top = max(float(s.mid()) for s in scores)
                weights = [(s - top).exp() for s in scores]  # shifting is exact in ball arithmetic
                total = sum(weights, arb(0))
                z = [
                    sum((w * v[j][c] for w, j in zip(weights, keys)), arb(0)) / total
                    for c in range(len(v[0]))
                ]
                out = [rp(o) for o in vecmat(z, WO)]
                update[i] = [u + o for u, o in zip(update[i], out)]
        x = [[a + b for a, b in zip(xi, ui)] for xi, ui in zip(x, update)]
        if layer.mlp is not None:
            mlp = layer.mlp
            W_in, b_in, W_out, b_out = (
                amat(mlp.W_in),
                amat(mlp.b_in),
                amat(mlp.W_out),
                amat(mlp.b_out),
            )
            for i in range(n):
                hidden = [relu(h + b) for h, b in zip(vecmat(x[i], W_in), b_in)]
                out = [rp(o + b) for o, b in zip(vecmat(hidden, W_out), b_out)]
                x[i] = [a + o for a, o in zip(x[i], out)]
    return x


def reference_table_residual(table: OneLayerTable, seq, prec: Precision) -> list:
    rp = (lambda v: round_fixed_arb(v, prec.bits)) if prec.kind == "fixed" else (lambda v: v)
    n, d = len(seq), table.d_model
    x = [[rp(A(table.embed[i, t, c])) for c in range(d)] for i, t in enumerate(seq)]
    result = [row[:] for row in x]
    for h in range(table.heads_per_layer[0]):
        q = [[rp(A(u)) for u in table.Q[h, i, t]] for i, t in enumerate(seq)]
        k = [[rp(A(u)) for u in table.K[h, i, t]] for i, t in enumerate(seq)]
        v = [[rp(A(u)) for u in table.V[h, i, t]] for i, t in enumerate(seq)]
        for i in range(n):
            keys = range(i + 1) if table.mask == "causal" else range(n)
            scores = [sum((a * b for a, b in zip(q[i], k[j])), arb(0)) for j in keys]
            top = max(float(s.mid()) for s in scores)
            weights = [(s - top).exp() for s in scores]
            total = sum(weights, arb(0))
            for c in range(d):
                z = sum((w * v[j][c] for w, j in zip(weights, keys)), arb(0)) / total
                result[i][c] = result[i][c] + rp(z)
    return result


def assert_contains(ref: list, mid: np.ndarray, rad: np.ndarray, label: str) -> None:
    """|exact − mid| ≤ rad at every coordinate (ref balls are ~2^-190 wide; their radius is
    allowed)."""
    assert np.all(np.isfinite(mid)) and not np.any(np.isnan(rad)) and np.all(rad >= 0), label
    for i, row in enumerate(ref):
        for c, value in enumerate(row):
            if rad[i, c] == np.inf:
                continue  # an infinite radius is useless but sound
            ok = abs(value - A(mid[i, c])) <= A(rad[i, c]) + value.rad()
            assert ok, (
                f"{label}: pos {i} coord {c}: exact {value} not in {mid[i, c]!r} ± {rad[i, c]!r}"
            )


# --------------------------------------------------------------------------------------------------
# Random models


def random_model(seed: int, dyadic: bool = False) -> Transformer:
    """d_model 3..6, 1–2 layers, 1–3 heads, causal/full, n_ctx 2..6; an MLP sometimes. Scores are
    O(1..10), so softmax is neither flat nor one-hot. dyadic: small multiples of 1/4 (exercises the
    exact-dot path)."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(3, 7))
    n_ctx = int(rng.integers(2, 7))
    alphabet = int(rng.integers(2, 5))

    def mat(*shape, scale=1.0):
        if dyadic:
            return rng.integers(-4, 5, size=shape) / 4 * scale
        return rng.uniform(-1, 1, size=shape) * scale * rng.uniform(0.5, 2.5)

    layers = []
    for _ in range(int(rng.integers(1, 3))):
        heads = []
        for _ in range(int(rng.integers(1, 4))):
            d_head, d_value = int(rng.integers(1, 5)), int(rng.integers(1, 4))
            heads.append(
                AttentionHead(
                    mat(d, d_head), mat(d, d_head), mat(d, d_value, scale=2.0), mat(d_value, d)
                )
            )
        mlp = None
        if rng.random() < 0.4:
            d_mlp = int(rng.integers(1, 6))
            mlp = MLP(mat(d, d_mlp), mat(d_mlp), mat(d_mlp, d), mat(d))
        layers.append(Layer(tuple(heads), mlp))
    mask = "causal" if rng.random() < 0.5 else "full"
    decoder = LinearDecoder(mat(d, alphabet + 1), mat(alphabet + 1))
    return Transformer(mat(alphabet, d, scale=2.0), mat(n_ctx, d), tuple(layers), decoder, mask)


MODES = [EXACT, fixed(3), fixed(6), fixed(10)]


def _check_model(model: Transformer, seed: int, sequences: int = 3) -> tuple[int, int]:
    rng = np.random.default_rng(1000 + seed)
    tokens = rng.integers(0, model.alphabet, size=(sequences, model.n_ctx))
    tokens[-1, : model.n_ctx // 2] = 0  # some repeated tokens
    checked = skipped = 0
    for prec in MODES:
        mid, rad = residual_bounds(model, tokens, prec)
        assert mid.shape == rad.shape == (sequences, model.n_ctx, model.d_model)
        out, ok = certified_predict(model, tokens, prec)
        for b, seq in enumerate(tokens):
            try:
                ref = reference_residual(model, seq.tolist(), prec)
            except NearTie:
                skipped += 1
                continue
            assert_contains(ref, mid[b], rad[b], f"seed {seed} {prec.name} seq {seq.tolist()}")
            # end to end: a certified output is the real-arithmetic model's output
            exact = np.array([[float(v.mid()) for v in row] for row in ref])
            real = model.decoder.decode(exact[None])[0]
            np.testing.assert_array_equal(out[b][ok[b]], real[ok[b]])
            checked += 1
    return checked, skipped


@pytest.mark.parametrize("seed", range(36))
def test_residual_bounds_contain_exact_value_random_models(seed):
    checked, skipped = _check_model(random_model(seed), seed)
    assert checked >= 10 and skipped <= 2


@pytest.mark.filterwarnings(
    "ignore::RuntimeWarning"
)  # wide boxes in fixed:3 (see the NaN test below)
@pytest.mark.parametrize("seed", range(12))
def test_residual_bounds_contain_exact_value_dyadic_models(seed):
    checked, skipped = _check_model(random_model(seed, dyadic=True), seed, sequences=6)
    assert checked >= 6  # exact mode has no ties: every sequence is checked there


def near_tie_embedding_model(seed: int, bits: int) -> Transformer:
    """random_model(seed) with every embedding W_E[σ] + W_pos[i] within 2^-(p+56) of a fixed:p
    rounding tie: W_E is a half-grid point (k + 1/2)·2^-p and W_pos a tiny ±2^-(p+56), so float64
    lands exactly on the tie while the real value lies to one side. Only a rigorous quantization
    gets this right."""
    base = random_model(seed)
    rng = np.random.default_rng(50_000 + seed)
    scale = 2.0**bits
    W_E = (rng.integers(-(2**bits), 2**bits, size=base.W_E.shape) + 0.5) / scale
    W_pos = rng.choice([-1.0, 1.0], size=base.W_pos.shape) * 2.0 ** -(bits + 56)
    assert np.array_equal(
        W_E[:, None, :] + W_pos[None],
        np.broadcast_to(W_E[:, None, :], (*W_E.shape[:1], *W_pos.shape)),
    )
    return Transformer(W_E, W_pos, base.layers, base.decoder, base.mask)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("seed", range(12))
def test_residual_bounds_contain_exact_value_near_tie_embeddings(seed):
    checked = 0
    for bits in (3, 6, 10):
        model = near_tie_embedding_model(seed, bits)
        tokens = np.random.default_rng(seed).integers(0, model.alphabet, size=(3, model.n_ctx))
        prec = fixed(bits)
        mid, rad = residual_bounds(model, tokens, prec)
        for b, seq in enumerate(tokens):
            try:
                ref = reference_residual(model, seq.tolist(), prec)
            except NearTie:
                continue
            assert_contains(
                ref, mid[b], rad[b], f"near-tie seed {seed} {prec.name} seq {seq.tolist()}"
            )
            checked += 1
    assert checked >= 6


def test_random_models_cover_the_intended_space():
    models = [random_model(seed) for seed in range(36)]
    assert {m.mask for m in models} == {"causal", "full"}
    assert {len(m.layers) for m in models} == {1, 2}
    assert {h for m in models for h in m.heads_per_layer} == {1, 2, 3}
    assert any(layer.mlp is not None for m in models for layer in m.layers)
    assert {m.d_model for m in models} == {3, 4, 5, 6}
    assert {m.n_ctx for m in models} >= {2, 3, 4, 5, 6}
    # softmax is neither flat nor one-hot: the largest first-layer weight is mostly strictly between
    spreads = []
    for m in models:
        tokens = np.random.default_rng(0).integers(0, m.alphabet, size=(4, m.n_ctx))
        x = m.W_E[tokens] + m.W_pos[: m.n_ctx]
        head = m.layers[0].heads[0]
        s = (x @ head.W_Q) @ np.swapaxes(x @ head.W_K, -1, -2)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        spreads.append((w / w.sum(axis=-1, keepdims=True)).max(axis=-1).mean())
    spreads = np.array(spreads)
    assert np.mean((spreads > 0.3) & (spreads < 0.99)) > 0.6


def test_residual_bounds_are_tight_in_exact_mode():
    """Soundness alone is easy (rad = inf); the boxes must also be small enough to certify
    anything."""
    for seed in range(36):
        model = random_model(seed)
        tokens = np.random.default_rng(seed).integers(0, model.alphabet, size=(8, model.n_ctx))
        mid, rad = residual_bounds(model, tokens, EXACT)
        x = residual_stream(model, tokens, FLOAT64)
        scale = 1 + np.abs(x).max()
        # one layer: a few hundred ulps; two layers: the second layer's scores (up to ~1e5 here)
        # amplify the first layer's radii, so allow more
        limit = 1e-9 if len(model.layers) == 1 else 1e-6
        assert np.all(rad < limit * scale), (seed, rad.max(), scale)
        np.testing.assert_allclose(mid, x, rtol=0, atol=1e-12 * scale)


@pytest.mark.parametrize("seed", range(8))
def test_table_residual_bounds_contain_exact_value(seed):
    rng = np.random.default_rng(seed)
    if seed % 2:  # the table of a random one-layer weight-form model (first layer, MLP dropped)
        base = random_model(100 + seed)
        one_layer = Transformer(
            base.W_E, base.W_pos, (Layer(base.layers[0].heads),), base.decoder, base.mask
        )
        table = table_from_weights(one_layer)
    else:  # a random table (ψ_in need not be W_E + W_pos)
        n, S, d, H, w = (
            int(rng.integers(2, 6)),
            int(rng.integers(2, 4)),
            int(rng.integers(2, 5)),
            int(rng.integers(1, 4)),
            3,
        )
        table = OneLayerTable(
            rng.normal(size=(n, S, d)),
            rng.normal(size=(H, n, S, w)),
            rng.normal(size=(H, n, S, w)),
            rng.normal(size=(H, n, S, d)) * 2,
            LinearDecoder(np.eye(d, S + 1), np.zeros(S + 1)),
            "causal" if seed % 4 == 0 else "full",
        )
    tokens = rng.integers(0, table.alphabet, size=(3, table.n_ctx))
    checked = 0
    for prec in MODES:
        mid, rad = table_residual_bounds(table, tokens, prec)
        for b, seq in enumerate(tokens):
            try:
                ref = reference_table_residual(table, seq.tolist(), prec)
            except NearTie:
                continue
            assert_contains(ref, mid[b], rad[b], f"table seed {seed} {prec.name}")
            checked += 1
    assert checked >= 8


def test_one_layer_construction_table_bounds_contain_exact_value():
    table = one_layer_induction(5, 3)
    tokens = np.array([[0, 1, 2, 0, 1], [2, 2, 2, 2, 2]])
    for prec in (EXACT, fixed(4), fixed(10)):
        mid, rad = table_residual_bounds(table, tokens, prec)
        for b, seq in enumerate(tokens):
            try:
                ref = reference_table_residual(table, seq.tolist(), prec)
            except NearTie:
                continue
            assert_contains(ref, mid[b], rad[b], f"one-layer {prec.name}")


def test_two_layer_construction_bounds_contain_exact_value():
    model = two_layer_induction(5, 3)
    tokens = np.array([[0, 1, 2, 0, 1], [1, 1, 0, 1, 2]])
    checked = 0
    for prec in (EXACT, fixed(8), fixed(12)):
        mid, rad = residual_bounds(model, tokens, prec)
        for b, seq in enumerate(tokens):
            try:
                ref = reference_residual(model, seq.tolist(), prec)
            except NearTie:
                continue
            assert_contains(ref, mid[b], rad[b], f"two-layer {prec.name}")
            checked += 1
    assert checked >= 2


def test_reference_rounding_matches_round_fixed():
    rng = np.random.default_rng(0)
    for bits in (1, 3, 6, 10):
        for x in rng.normal(scale=2.0**bits, size=300):
            try:
                got = round_fixed_arb(A(x), bits)
            except NearTie:
                continue
            assert got == A(round_fixed(x, bits))
    with pytest.raises(NearTie):
        round_fixed_arb(A(0.375), 2)


# --------------------------------------------------------------------------------------------------
# quantize_bounds


def _round_exact(x: Fraction, bits: int) -> Fraction:
    limit = Fraction(2) ** bits
    return max(-limit, min(limit, Fraction(round(x * 2**bits), 2**bits)))


@settings(max_examples=300, deadline=None)
@given(
    mid=st.one_of(st.floats(-40, 40), st.builds(lambda k: k / 64, st.integers(-3000, 3000))),
    rad=st.one_of(
        st.just(0.0),
        st.floats(0, 1e-12),
        st.floats(0, 3),
        st.builds(lambda k: k / 128, st.integers(0, 300)),
    ),
    bits=st.sampled_from([1, 2, 3, 6, 10, 30]),
)
def test_quantize_bounds_contains_every_rounded_point(mid, rad, bits):
    qm, qr = quantize_bounds(np.array([mid]), np.array([rad]), bits)
    qm, qr = float(qm[0]), float(qr[0])
    lo, hi = Fraction(qm) - Fraction(qr), Fraction(qm) + Fraction(qr)
    grid = Fraction(1, 2**bits)
    assert lo % grid == 0 and hi % grid == 0  # exact grid points
    assert -(2**bits) <= lo <= hi <= 2**bits
    m, r = Fraction(mid), Fraction(rad)
    points = [m - r, m + r, m] + [m + r * Fraction(t, 7) for t in range(-7, 8)]
    for p in (
        points
    ):  # rounding is monotone, so the endpoints are the worst case; check a few inside too
        assert lo <= _round_exact(p, bits) <= hi, (mid, rad, bits, p)
    if rad == 0:
        assert qr == 0 and qm == float(round_fixed(mid, bits))


def test_quantize_bounds_examples():
    qm, qr = quantize_bounds(
        np.array([0.3, 0.3, 0.3, 100.0, -0.125, 0.125]),
        np.array([0.0, 0.01, 0.2, 1.0, 0.0, 1e-20]),
        2,
    )
    # 0.3 -> 0.25; [0.29, 0.31] -> {0.25}; [0.1, 0.5] -> [0, 0.5]; clipped to 4; tie -0.125 -> 0;
    # an interval around the tie 0.125 covers both neighbours
    np.testing.assert_array_equal(qm - qr, [0.25, 0.25, 0.0, 4.0, 0.0, 0.0])
    np.testing.assert_array_equal(qm + qr, [0.25, 0.25, 0.5, 4.0, 0.0, 0.25])


# --------------------------------------------------------------------------------------------------
# fraction_bits, add_bounds, affine_bounds


@pytest.mark.parametrize(
    ("values", "bits"),
    [
        ([0.75], 2),
        ([3.0], 0),
        ([2.0**-40], 40),
        ([0.0, 0.0], 0),
        ([], 0),
        ([-0.75], 2),
        ([0.5, 0.125, 3.0], 3),
        ([1.0 + 2.0**-52], 52),
        ([1e20, 0.5], 1),
        ([0.1], 55),  # 0.1 = 3602879701896397 / 2^55
        ([5e-324], 1074),
        ([np.inf, 1.0], 1100),
    ],
)
def test_fraction_bits_examples(values, bits):
    assert fraction_bits(np.array(values, dtype=np.float64)) == bits


@pytest.mark.parametrize("values", [[2.0**60], [2.0**53, 1.0], [1e300]])
def test_fraction_bits_large_integers(values):
    assert fraction_bits(np.array(values)) == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=6))
def test_fraction_bits_is_the_smallest_exponent(values):
    e = fraction_bits(np.array(values))
    fr = [Fraction(v) for v in values]
    if e == 1100:  # "none found": only allowed (conservatively) for integers beyond 2^53, see above
        assert all(f.denominator == 1 for f in fr) and max(abs(v) for v in values) >= 2.0**53
        return
    assert all((f * 2**e).denominator == 1 for f in fr)
    if e > 0:
        assert not all((f * 2 ** (e - 1)).denominator == 1 for f in fr)


def test_add_bounds_exact_sums_have_no_radius():
    a = np.array([1.0, 0.5, -3.25, 2.0**40, 0.0])
    b = np.array([2.0, 0.25, 3.25, 1.0, -0.0])
    mid, rad = add_bounds(a, 0.0, b, 0.0)
    np.testing.assert_array_equal(mid, a + b)
    assert np.all(rad < 1e-290)


@settings(max_examples=300, deadline=None)
@given(
    a=st.floats(-1e12, 1e12),
    b=st.floats(-1e12, 1e12),
    ra=st.one_of(st.just(0.0), st.floats(0, 1e-3)),
    rb=st.one_of(st.just(0.0), st.floats(0, 1e-3)),
)
def test_add_bounds_covers_the_true_sum(a, b, ra, rb):
    mid, rad = add_bounds(np.array([a]), np.array([ra]), np.array([b]), np.array([rb]))
    err = abs(Fraction(a) + Fraction(b) - Fraction(float(mid[0])))
    assert err + Fraction(ra) + Fraction(rb) <= Fraction(float(rad[0]))


def test_add_bounds_inexact_example():
    mid, rad = add_bounds(np.array([1.0]), 0.0, np.array([2.0**-60]), 0.0)
    assert mid[0] == 1.0
    assert 2.0**-60 <= rad[0] < 2.0**-59


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), dyadic=st.booleans(), with_bias=st.booleans())
def test_affine_bounds_cover_every_point_of_the_box(seed, dyadic, with_bias):
    rng = np.random.default_rng(seed)
    d, k = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    if dyadic:
        mid = rng.integers(-64, 64, size=(2, d)) / 8
        W = rng.integers(-64, 64, size=(d, k)) / 16
        b = rng.integers(-64, 64, size=k) / 32
        rad = np.zeros((2, d))
    else:
        mid = rng.normal(size=(2, d)) * 10.0 ** rng.integers(-3, 4)
        W = rng.normal(size=(d, k))
        b = rng.normal(size=k)
        rad = np.abs(rng.normal(size=(2, d))) * rng.choice([0.0, 1e-15, 1e-3])
    out_mid, out_rad = affine_bounds(mid, rad, W, b if with_bias else None)
    for r in range(2):
        for j in range(k):
            exact = sum(Fraction(mid[r, i]) * Fraction(W[i, j]) for i in range(d))
            if with_bias:
                exact += Fraction(b[j])
            spread = sum(Fraction(rad[r, i]) * abs(Fraction(W[i, j])) for i in range(d))
            assert abs(exact - Fraction(out_mid[r, j])) + spread <= Fraction(out_rad[r, j])


def test_attention_bounds_single_key_and_uniform():
    # one allowed key: the output is exactly v, and the radius is tiny
    q = (np.array([[[1.0, 2.0]]]), np.zeros((1, 1, 2)))
    v = (np.array([[[3.0, -5.0]]]), np.zeros((1, 1, 2)))
    z_mid, z_rad = attention_bounds(q, q, v, "full")
    np.testing.assert_array_equal(z_mid, [[[3.0, -5.0]]])
    assert np.all(z_rad < 1e-13)
    # value radii propagate: v ± 0.5 gives z ± 0.5 (at least)
    v = (np.array([[[3.0, -5.0]]]), np.full((1, 1, 2), 0.5))
    _, z_rad = attention_bounds(q, q, v, "full")
    assert np.all(z_rad >= 0.5) and np.all(z_rad < 0.5 * (1 + 1e-8))


# --------------------------------------------------------------------------------------------------
# certified_predict


def test_certified_predict_two_layer_construction_all_inputs():
    model = two_layer_induction(6, 3)
    tokens = all_sequences(6, 3)
    assert len(tokens) == 3**6
    want = induction_targets(tokens)
    out, ok = certified_predict(model, tokens, EXACT)
    assert out.shape == ok.shape == (729, 6) and ok.dtype == bool
    assert ok.all()
    np.testing.assert_array_equal(out, want)
    out8, ok8 = certified_predict(model, tokens, fixed(8))
    assert ok8.all()
    np.testing.assert_array_equal(out8, want)
    np.testing.assert_array_equal(predict(model, tokens, fixed(8)), want)


def test_certified_predict_refuses_float_modes():
    model = two_layer_induction(4, 2)
    for mode in ("float64", "float32", "float16", "bfloat16"):
        with pytest.raises(ValueError, match="fixed:p and exact"):
            certified_predict(model, [[0, 1, 0, 1]], Precision(mode))


def test_certified_output_agrees_with_fixed_predictions_where_certified():
    model = two_layer_induction(6, 3)
    tokens = all_sequences(6, 3)
    for bits in (4, 5, 6):
        out, ok = certified_predict(model, tokens, fixed(bits))
        plain = predict(model, tokens, fixed(bits))
        np.testing.assert_array_equal(out[ok], plain[ok])


def near_tie_model(gap: float) -> Transformer:
    """d_model 4: [1, key feature, value, output]. Token 0 -> key 0, value +1; token 1 -> key `gap`,
    value −1. One head (q = 1, k = key feature) writes z into coordinate 3. Decoder: class 0 has
    logit z, class 1 logit −1000, ⊥ logit −1e-30 — so the answer is 0 iff z ≥ −1e-30."""
    W_E = np.array([[1.0, 0.0, 1.0, 0.0], [1.0, gap, -1.0, 0.0]])
    W_pos = np.zeros((2, 4))
    e = np.eye(4)
    head = AttentionHead(W_Q=e[:, [0]], W_K=e[:, [1]], W_V=e[:, [2]], W_O=e[[3], :])
    W_U = np.zeros((4, 3))
    W_U[3, 0] = 1.0
    b_U = np.array([0.0, -1000.0, -1e-30])
    return Transformer(W_E, W_pos, (Layer((head,)),), LinearDecoder(W_U, b_U), "causal")


def test_certified_predict_near_tie_is_not_certified():
    model = near_tie_model(1e-17)
    tokens = np.array([[0, 1]])
    # position 2 attends to keys with scores 0 and 1e-17: float64 sees a tie (z = 0, answer 0) ...
    assert predict(model, tokens).tolist() == [[0, 0]]
    # ... but in real arithmetic z = tanh(−5e-18) < −1e-30, so the true answer is ⊥
    ref = reference_residual(model, [0, 1], EXACT)
    assert ref[1][3] < -1e-30 and ref[1][3] > -1e-17
    out, ok = certified_predict(model, tokens, EXACT)
    assert ok.tolist() == [[True, False]]
    assert out[0, 0] == 0
    # with a clear gap the same position is certified, with the right answer ⊥
    model = near_tie_model(1e-3)
    out, ok = certified_predict(model, tokens, EXACT)
    assert ok.tolist() == [[True, True]] and out.tolist() == [[0, BOTTOM]]


def test_mlp_bounds_contain_exact_value_when_bias_add_is_inexact():
    """x = 1 exactly, hidden = relu(1·1 + 2^-60) = 1 + 2^-60 (float64 rounds to 1), output x +
    hidden. The exact final residual is 2 + 2^-60; the decoder answers 0 iff it exceeds 2 +
    2^-61."""
    z = np.zeros((1, 1))
    head = AttentionHead(z, z, np.ones((1, 1)), z)
    mlp = MLP(np.ones((1, 1)), np.array([2.0**-60]), np.ones((1, 1)), np.zeros(1))
    decoder = LinearDecoder(np.array([[1.0, 0.0]]), np.array([-2.0, 2.0**-61]))
    model = Transformer(np.ones((1, 1)), np.zeros((1, 1)), (Layer((head,), mlp),), decoder)
    tokens = np.zeros((1, 1), dtype=np.int64)
    ref = reference_residual(model, [0], EXACT)
    assert ref[0][0] == A(2.0) + A(2.0**-60)
    out, ok = certified_predict(model, tokens, EXACT)
    # the real-arithmetic model answers token 0 (logit 2^-60 > 2^-61); a certificate must never say
    # otherwise
    assert not (ok[0, 0] and out[0, 0] != 0)
    mid, rad = residual_bounds(model, tokens, EXACT)
    assert_contains(ref, mid[0], rad[0], "mlp")


def wide_box_model() -> Transformer:
    """d_model 1, one head, fixed:6. Token 0 embeds to −1; token 1 at position 2 to 2^-7 − 2^-63,
    which float64 rounds to 2^-7 — exactly a fixed:6 rounding tie — so the embedding's box straddles
    the tie and quantizes to [0, 1/64] (its real value is just below the tie: it rounds to 0). W_Q =
    W_K = 2^12 blow that box up to q, k ∈ [0, 64], score radius ~3000: the softmax bound is then
    vacuous (that is fine), but it must stay a (possibly infinite) radius, never NaN. Real
    arithmetic on tokens (0, 1): position 2 has q = 0, so uniform attention over v = (−1, 0): z =
    −0.5, residual 0 − 0.5 = −0.5. Decoder: class 0 logit x, ⊥ logit −0.25 -> the answer is ⊥."""
    one = np.ones((1, 1))
    head = AttentionHead(one * 2.0**12, one * 2.0**12, one, one)
    decoder = LinearDecoder(np.array([[1.0, 0.0, 0.0]]), np.array([0.0, -100.0, -0.25]))
    W_pos = np.array([[0.0], [-(2.0**-63)]])
    return Transformer(np.array([[-1.0], [2.0**-7]]), W_pos, (Layer((head,)),), decoder, "causal")


def test_wide_box_model_real_answer():
    model = wide_box_model()
    assert model.W_E[1, 0] + model.W_pos[1, 0] == 2.0**-7  # float64 lands on the tie
    ref = reference_residual(model, [0, 1], fixed(6))
    assert ref[0][0] == A(-2.0) and ref[1][0] == A(-0.5)
    assert predict(model, [[0, 1]], fixed(6)).tolist() == [[BOTTOM, BOTTOM]]


def test_attention_bounds_never_return_nan():
    q = (np.array([[[32.0], [32.0]]]), np.array([[[32.0], [32.0]]]))
    k = (np.array([[[-64.0], [32.0]]]), np.array([[[0.0], [32.0]]]))
    v = (np.array([[[-1.0], [0.0078125]]]), np.array([[[0.0], [0.0078125]]]))
    with np.errstate(all="ignore"):
        z_mid, z_rad = attention_bounds(q, k, v, "causal")
    assert not np.isnan(z_rad).any()
    # the real z at position 2 can be anything in [−1, 1/64]: the box must say so
    assert z_mid[0, 1, 0] - z_rad[0, 1, 0] <= -1.0 and z_mid[0, 1, 0] + z_rad[0, 1, 0] >= 0.0078125


def test_certificate_is_sound_when_attention_boxes_are_wide():
    model = wide_box_model()
    with np.errstate(all="ignore"):
        out, ok = certified_predict(model, np.array([[0, 1]]), fixed(6))
        mid, rad = residual_bounds(model, np.array([[0, 1]]), fixed(6))
    real = np.array([[BOTTOM, BOTTOM]])  # test_wide_box_model_real_answer
    assert not np.any(ok & (out != real)), (out, ok, real)
    assert_contains(reference_residual(model, [0, 1], fixed(6)), mid[0], rad[0], "wide box")


def test_linear_decoder_decided_means_every_point_decodes_the_same():
    rng = np.random.default_rng(0)
    dec = LinearDecoder(rng.normal(size=(3, 4)), rng.normal(size=4))
    mid = rng.normal(size=(200, 1, 3))
    rad = np.abs(rng.normal(size=(200, 1, 3))) * 0.05
    pred, decided = dec.decode_bounds(mid, rad)
    np.testing.assert_array_equal(pred, dec.decode(mid))
    assert decided.any() and not decided.all()
    corners = np.array(list(itertools.product([-1.0, 1.0], repeat=3)))
    for b in np.flatnonzero(decided[:, 0]):
        points = mid[b, 0] + corners * rad[b, 0]
        assert (dec.decode(points[:, None, :])[:, 0] == pred[b, 0]).all()


@pytest.mark.parametrize("shape", [(2, 7), (1, 1), (0, 5), (3, 0)])
def test_decoders_decide_in_row_blocks_as_on_the_whole(shape, monkeypatch):
    """Decoders make their logits a block of positions at a time (parts.in_row_blocks): with blocks
    of 3 rows the answers equal those of one pass over the whole [batch pos classes] array."""
    rng = np.random.default_rng(sum(shape))
    d, classes = 4, 6
    W_U, b_U = rng.standard_normal((d, classes)), rng.standard_normal(classes)
    mid = rng.standard_normal(shape + (d,))
    rad = np.abs(rng.standard_normal(shape + (d,))) * rng.choice(
        [0.0, 1e-3, 1.0], size=shape + (1,)
    )
    whole = parts.argmax_bounds(*affine_bounds(mid, rad, W_U, b_U))
    blocked = parts.in_row_blocks(
        lambda m, r: parts.argmax_bounds(*affine_bounds(m, r, W_U, b_U)), mid, rad, rows=3
    )
    assert all(np.array_equal(a, b) for a, b in zip(whole, blocked, strict=True))
    assert blocked[0].shape == shape
    monkeypatch.setattr(parts, "LOGIT_ROWS", 3)
    for decoder in (LinearDecoder(W_U, b_U), VocabDecoder(W_U, b_U, "lm-head")):
        cls = np.argmax(mid @ W_U + b_U, axis=-1)
        expected = np.where(cls == classes - 1, BOTTOM, cls) if decoder.kind == "linear" else cls
        assert np.array_equal(decoder.decode(mid), expected)
        got, decided = decoder.decode_bounds(mid, rad)
        assert np.array_equal(got, expected) and np.array_equal(decided, whole[1])
