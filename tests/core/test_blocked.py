"""The blocked attention passes against the dense reference (core.attention.settings): the float
pass's difference (last bits of the sums only), the rigorous pass's soundness (exact softmax of
points in the boxes, in Arb balls) and tightness, its dense fallbacks on hostile boxes, and its work
counts."""

from __future__ import annotations

import flint
import numpy as np
import pytest

from headcount.core.attention import (
    ATTENTION_BLOCK,
    attend,
    attention_bounds,
    attention_work,
    dense_attend,
    dense_attention_bounds,
    float_work,
    reset_attention_work,
    reset_float_work,
    softmax_values,
    use_algorithm,
    weight_error,
)
from headcount.core.attention.floats import _sparse_softmax_values, _visible_sum
from headcount.core.certify.evaluate import certified_predict
from headcount.core.numbers.precision import FLOAT64, fixed
from headcount.induction import task
from headcount.induction.construction import two_layer_induction


def random_qkv(seed: int, n: int, scale: float, batch: int = 2, d: int = 4, dv: int = 3):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((batch, n, d)) * scale
    k = rng.standard_normal((batch, n, d))
    v = rng.standard_normal((batch, n, dv))
    return q, k, v


@pytest.mark.parametrize("mask", ["causal", "full"])
@pytest.mark.parametrize("scale", [0.1, 3.0, 60.0, 1e4])  # flat to sharp: dense and sparse blocks
def test_float_pass_differs_from_dense_only_in_the_last_bits(mask, scale):
    q, k, v = random_qkv(1, 2 * ATTENTION_BLOCK + 77, scale)
    blocked = attend(q, k, v, mask, FLOAT64)
    dense = dense_attend(q, k, v, mask, FLOAT64)
    # a weighted mean of |v| ≤ max|v|: the sums' rounding differs by a few ulp of that at most
    assert np.max(np.abs(blocked - dense)) <= 16 * np.finfo(float).eps * np.abs(v).max()


def test_float_pass_leaves_out_only_keys_of_negligible_weight():
    # every key's exponential is a normal float; all but two weigh < 2^-72/keys of the top key's
    # weight
    keys, d_value = 3 * ATTENTION_BLOCK, 3
    rng = np.random.default_rng(9)
    scores = np.full((1, 4, keys), -60.0) - rng.random(
        (1, 4, keys)
    )  # e^-60 ≈ 2^-86.6: normal, negligible
    scores[..., 5], scores[..., 17] = 0.0, -40.0  # e^-40 ≈ 2^-57.7: kept
    v = rng.standard_normal((1, keys, d_value)) * 1e3
    v_max = np.abs(v).max(axis=-2)
    reset_float_work()
    sparse = _sparse_softmax_values(scores.copy(), v, v_max)
    assert sparse is not None  # the dense pass would have exponentiated every key
    assert float_work() == {
        "rows": 4,
        "rows_redone": 0,
        "pruned_rows": 0,
    }  # nothing added back: |v| is alike everywhere
    dense = softmax_values(scores.copy(), v, FLOAT64)
    assert np.max(np.abs(sparse - dense)) <= 2 * np.finfo(float).eps * np.abs(v).max()
    # a key of weight 2^-40 is kept: leaving it out would move the output by ~10^-12·|v|
    near = scores.copy()
    near[..., 17] = -40.0 * np.log(2)
    dropped = softmax_values(np.where(np.arange(keys) == 17, -np.inf, near), v, FLOAT64)
    assert (
        np.max(np.abs(_sparse_softmax_values(near.copy(), v, v_max) - dropped))
        > 1e-13 * np.abs(v).max()
    )


@pytest.mark.parametrize("hostile", ["huge", "zero", "cancel"])
def test_float_pass_adds_left_out_keys_back_where_they_matter(hostile):
    """Keys of negligible weight are left out only where they are negligible against the output they
    change (issue 27, finding 2): a value 1e300 at weight e^-60, a coordinate the kept keys leave at
    0 — there the row is the dense pass's sum, in another order. Kept terms that cancel leave a
    result within the float sum's own error scale (a few ulp of Σ α|v|) of the dense one with the
    keys left out."""
    keys = 3 * ATTENTION_BLOCK
    rng = np.random.default_rng(10)
    scores = np.full((1, 2, keys), -60.0) - rng.random((1, 2, keys))
    scores[..., 0] = 0.0
    v = rng.standard_normal((1, keys, 2))
    if hostile == "huge":
        v[0, 1:, 0] = 1e300
    elif hostile == "zero":
        v[0, 0, 1] = 0.0  # the only kept key has nothing in coordinate 1
    else:
        scores[..., 1] = 0.0
        v[0, 1] = -v[0, 0]  # two kept keys of equal weight cancel
    reset_float_work()
    sparse = _sparse_softmax_values(scores.copy(), v, np.abs(v).max(axis=-2))
    assert float_work()["rows_redone"] == (0 if hostile == "cancel" else 2)
    dense = softmax_values(scores.copy(), v, FLOAT64)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    mass = (weights @ np.abs(v)) / weights.sum(axis=-1, keepdims=True)  # Σ α_j |v_j|
    assert np.all(np.abs(sparse - dense) <= 8 * np.finfo(float).eps * mass)
    if hostile == "zero":
        assert np.all(sparse != 0)  # what the left-out keys add is there, not 0


def test_float_pass_is_the_dense_one_below_a_block():
    q, k, v = random_qkv(2, ATTENTION_BLOCK, 5.0)
    assert np.array_equal(
        attend(q, k, v, "causal", FLOAT64), dense_attend(q, k, v, "causal", FLOAT64)
    )
    with use_algorithm("reference"):
        q, k, v = random_qkv(3, 3 * ATTENTION_BLOCK, 5.0)
        assert np.array_equal(
            attend(q, k, v, "causal", FLOAT64), dense_attend(q, k, v, "causal", FLOAT64)
        )


def exact_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, keys: int) -> list[flint.arb]:
    """softmax(q kᵀ) v of one query over keys 0..keys−1, in 256-bit Arb balls (q, k, v float64
    points)."""
    old = flint.ctx.prec
    flint.ctx.prec = 256
    try:
        scores = [
            sum(flint.arb(a) * flint.arb(b) for a, b in zip(q.tolist(), k[j].tolist()))
            for j in range(keys)
        ]
        top = max(float(s.mid()) for s in scores)
        weights = [(s - top).exp() for s in scores]
        total = sum(weights)
        return [
            sum(w * flint.arb(v[j, c]) for j, w in enumerate(weights)) / total
            for c in range(v.shape[1])
        ]
    finally:
        flint.ctx.prec = old


def inside(ball: flint.arb, mid: float, rad: float) -> bool:
    return bool(abs(ball - flint.arb(mid)) <= flint.arb(rad))


@pytest.mark.parametrize("mask", ["causal", "full"])
@pytest.mark.parametrize("scale", [0.5, 30.0, 3e3])
def test_rigorous_pass_contains_the_exact_softmax_of_points_in_the_boxes(mask, scale):
    n = ATTENTION_BLOCK + 40
    q, k, v = random_qkv(4, n, scale, batch=1)
    rng = np.random.default_rng(5)
    radius = [np.abs(rng.standard_normal(a.shape)) * 1e-9 * np.abs(a).max() for a in (q, k, v)]
    z_mid, z_rad = attention_bounds((q, radius[0]), (k, radius[1]), (v, radius[2]), mask)
    assert_holds_exact_softmax((q, k, v), radius, (z_mid, z_rad), mask, rng)


def assert_holds_exact_softmax(qkv, radius, box, mask: str, rng: np.random.Generator) -> None:
    """The box [1 n d_value] holds the exact softmax (Arb) of points of the q, k, v boxes (centres
    qkv, radii `radius`): the centres, then two random corners; queries 0, 1, the first block's
    last, the next block's first and the last."""
    (z_mid, z_rad), n = box, qkv[0].shape[1]
    for trial in range(3):
        pick = [
            a if trial == 0 else a + r * rng.choice([-1.0, 1.0], size=a.shape)
            for a, r in zip(qkv, radius)
        ]
        for i in (0, 1, ATTENTION_BLOCK - 1, ATTENTION_BLOCK, n - 1):
            keys = i + 1 if mask == "causal" else n
            exact = exact_attention(pick[0][0, i], pick[1][0], pick[2][0], keys)
            assert all(inside(e, z_mid[0, i, c], z_rad[0, i, c]) for c, e in enumerate(exact)), (
                trial,
                i,
            )


@pytest.mark.parametrize("scale", [0.5, 30.0, 3e3])
def test_rigorous_pass_is_as_tight_as_the_dense_one(scale):
    n = 2 * ATTENTION_BLOCK + 5
    q, k, v = random_qkv(6, n, scale)
    boxes = [(a, np.abs(a) * 1e-12) for a in (q, k, v)]
    mid, rad = attention_bounds(*boxes, "causal")
    dense_mid, dense_rad = dense_attention_bounds(*boxes, np.tri(n, dtype=bool))
    assert np.all(np.abs(mid - dense_mid) <= rad + dense_rad)
    assert np.all(rad <= 1.01 * dense_rad + 1e-300)


def test_rigorous_pass_falls_back_to_the_dense_bound_on_hostile_boxes():
    n = ATTENTION_BLOCK + 9
    q, k, v = random_qkv(7, n, 4.0, batch=1)
    zeros = [np.zeros_like(a) for a in (q, k, v)]
    for hostile in (
        (q * 1e300, k * 1e300),  # scores overflow
        (np.where(np.arange(n)[None, :, None] == 3, np.nan, q), k),  # a NaN query
        (q * 2.0**45, k),  # scores beyond 2^40
    ):
        with np.errstate(all="ignore"):
            mid, rad = attention_bounds(
                (hostile[0], zeros[0]), (hostile[1], zeros[1]), (v, zeros[2]), "causal"
            )
            dense = dense_attention_bounds(
                (hostile[0], zeros[0]), (hostile[1], zeros[1]), (v, zeros[2]), np.tri(n, dtype=bool)
            )
        assert not np.isnan(rad).any()
        assert np.array_equal(np.isinf(rad), np.isinf(dense[1]))
    unbounded = np.where(
        np.arange(n)[None, :, None] == 5, np.inf, zeros[1]
    )  # one key's box is unbounded
    mid, rad = attention_bounds((q, zeros[0]), (k, unbounded), (v, zeros[2]), "causal")
    assert np.isinf(rad[0, 5:]).all() and np.isfinite(rad[0, :5]).all()


def test_far_keys_are_counted_without_exponentials():
    n, S = 2048, 64
    model = two_layer_induction(n, S)
    tokens = np.random.default_rng(0).integers(0, S, size=(1, n))
    reset_attention_work()
    out, proven = certified_predict(model, tokens, fixed(16))
    work = attention_work()
    assert proven.all() and np.array_equal(out, task.induction_targets(tokens))
    assert work["score_entries"] == 3 * n * (n + 1) // 2  # three heads, the causal half
    assert (
        work["exponentiated"] < 0.1 * work["score_entries"]
    )  # sharp heads: almost every key is far
    assert work["dense_blocks"] == 0


def test_a_head_output_on_a_rounding_tie_is_settled_exactly():
    """Uniform attention over the values 0 and 2^-p: the real head output is the tie 2^-(p+1). The
    float bounds straddle it (their radius is never 0 after a softmax); the exact rounding is half
    to even (0)."""
    from headcount.core.numbers.interval import affine_bounds, quantize_bounds
    from headcount.core.passes.bounds import settle_ties

    bits, W_O = 4, np.eye(1)
    zero = np.zeros((1, 2, 1))
    q, k, v = (zero, zero), (zero, zero), (np.array([[[0.0], [2.0**-bits]]]), zero)
    out = quantize_bounds(*affine_bounds(*attention_bounds(q, k, v, "causal"), W_O), bits)
    assert out[1][0, 1, 0] > 0  # open: both 0 and 2^-p are in the box
    mid, rad = settle_ties(out, q, k, v, W_O, bits, "causal")
    assert mid[0, 1, 0] == 0.0 and rad[0, 1, 0] == 0.0
    assert (
        mid[0, 0, 0] == out[0][0, 0, 0] and rad[0, 0, 0] == out[1][0, 0, 0]
    )  # position 1 untouched
    # a key whose box is not a point: nothing is settled (the head output is not a known sum)
    k_box = (zero, np.full((1, 2, 1), 2.0**-30))
    out = quantize_bounds(*affine_bounds(*attention_bounds(q, k_box, v, "causal"), W_O), bits)
    assert settle_ties(out, q, k_box, v, W_O, bits, "causal")[1][0, 1, 0] > 0


def _ieee_visible_sum(weights, v, hidden):
    """Σ_j w_j v_j over the visible keys, one float64 addition at a time (the reference)."""
    out = np.zeros(weights.shape[:-1] + v.shape[-1:])
    with np.errstate(all="ignore"):
        for index in np.ndindex(*out.shape):
            *lead, query, c = index
            for key in range(v.shape[-2]):
                if not hidden[(*lead, query, key)]:
                    out[index] = out[index] + weights[(*lead, query, key)] * v[(*lead, key, c)]
    return out


def test_hidden_keys_are_absent_even_with_infinite_values():
    """A key the mask hides never reaches the sum (issue 27: its weight 0 times an infinite value
    made every earlier query NaN); a visible key keeps IEEE's answers (0 · inf = NaN, inf − inf =
    NaN)."""
    rng = np.random.default_rng(11)
    for _ in range(300):
        n, d = int(rng.integers(1, 6)), int(rng.integers(1, 3))
        hidden = rng.random((2, n, n)) < 0.3
        weights = np.where(hidden, 0.0, rng.choice([0.0, 1.0, 0.5, 1e-300], size=(2, n, n)))
        v = rng.choice([1.0, -2.0, np.inf, -np.inf, np.nan, 0.0], size=(2, n, d))
        with np.errstate(all="ignore"):
            got, want = _visible_sum(weights, v, hidden), _ieee_visible_sum(weights, v, hidden)
        assert np.array_equal(got, want, equal_nan=True) or np.allclose(
            got, want, rtol=1e-15, equal_nan=True
        )
    # causality: an infinite value at the last key changes no earlier query, dense or blocked
    q, k, v = random_qkv(12, 2 * ATTENTION_BLOCK + 5, 3.0)
    v[:, -1] = np.inf
    with np.errstate(all="ignore"):
        for out in (attend(q, k, v, "causal", FLOAT64), dense_attend(q, k, v, "causal", FLOAT64)):
            assert np.isfinite(out[:, :-1]).all() and np.isinf(out[:, -1]).any()


def test_the_normalisation_counts_the_near_keys_only():
    """θ (softmax_bound.near_theta) is γ over a row's near keys, not every key it sees: with one
    near key among 4096 and values of 2^30, γ_4098·|v| would be ≈ 5·10⁻⁴; the bound's radius is the
    few roundings of one near key. The reference (dense) and the blocked bounds agree on it."""
    n = 4096
    pos = np.arange(n, dtype=np.float64)
    q = np.stack([np.full(n, 38400.0), np.ones(n)], axis=1)[None]  # 38400·j − 600·j²: peak j = 32
    k = np.stack([pos, -600.0 * pos**2], axis=1)[None]  # every other key ≥ 600 below: far
    v = np.full((1, n, 1), 2.0**30)
    zero = np.zeros_like
    for algorithm in ("reference", "blocked"):
        with use_algorithm(algorithm), np.errstate(all="ignore"):
            mid, rad = attention_bounds((q, zero(q)), (k, zero(k)), (v, zero(v)), "causal")
        assert np.all(mid[0, 40:, 0] == 2.0**30), algorithm
        assert rad[0, -1, 0] < 1e-5, (algorithm, rad[0, -1, 0])  # was γ_4098·2^30 ≈ 4.9·10⁻⁴


def test_a_float_sum_with_zeros_errs_as_the_sum_of_its_non_zero_terms():
    """near_theta's premise: NumPy's sum of non-negative terms, m of them non-zero among many exact
    zeros, is within γ_{m−1} of the exact sum (adding an exact zero rounds nothing)."""
    from fractions import Fraction

    from headcount.core.numbers import gamma

    rng = np.random.default_rng(35)
    for _ in range(200):
        n, m = int(rng.integers(2, 5000)), int(rng.integers(1, 9))
        x = np.zeros(n)
        x[rng.choice(n, m, replace=False)] = rng.random(m) * 2.0 ** rng.integers(-60, 60, m)
        exact = sum((Fraction(float(t)) for t in x), Fraction(0))
        error = abs(Fraction(float(x.sum())) - exact)
        assert error <= Fraction(gamma(max(m - 1, 0))) * exact


@pytest.mark.parametrize("shape", [(7,), (1, 9), (3, 5, 6), (2, 4, 3, 5)])
def test_weight_error_in_row_blocks_equals_one_pass(monkeypatch, shape):
    """weight_error works on blocks of query rows (softmax_bound.WEIGHT_BLOCK entries): blocks of
    one row give the bits of one pass over everything, with θ a float or per row [.. query 1],
    and cells (mult) or none."""
    from headcount.core.attention import softmax_bound

    rng = np.random.default_rng(len(shape))
    weights = np.exp(-30 * rng.random(shape))
    mult = rng.integers(1, 4, size=shape).astype(float)
    for cells in (None, mult):
        alpha = weights / (weights * (1 if cells is None else cells)).sum(-1, keepdims=True)
        rho = 10.0 ** rng.uniform(-16, -1, size=shape)
        for theta in (1e-15, 1e-15 * (1 + rng.random(shape[:-1] + (1,)))):
            monkeypatch.setattr(softmax_bound, "WEIGHT_BLOCK", 1 << 20)
            whole = weight_error(alpha.copy(), rho.copy(), theta, cells)
            monkeypatch.setattr(softmax_bound, "WEIGHT_BLOCK", 1)
            rows = weight_error(alpha.copy(), rho.copy(), theta, cells)
            for a, b in zip(whole, rows):
                np.testing.assert_array_equal(a, b)
            if len(shape) < 2:
                continue
            for index in np.ndindex(shape[:-1]):  # each row alone: its own θ and sums
                one = np.index_exp[index + (slice(None),)]
                th = theta if isinstance(theta, float) else theta[one][None, :]
                m = None if cells is None else cells[one][None, :]
                err, unbounded = weight_error(alpha[one][None, :], rho[one][None, :].copy(), th, m)
                np.testing.assert_array_equal(err[0], whole[0][one])
                assert unbounded[0] == whole[1][index]


@pytest.mark.parametrize("mask", ["causal", "full"])
@pytest.mark.parametrize("scale", [0.5, 30.0, 3e3])  # flat to sharp: dense and sparse parts
def test_a_block_scored_in_parts_gives_the_whole_blocks_results(monkeypatch, mask, scale):
    """A block whose [batch query key] scores exceed blocks.BLOCK_ENTRIES is scored in parts of
    fewer queries (at n = 2^20 a block's scores would otherwise take GBs): the float passes (numpy
    and torch) agree with the whole blocks' in the last bits, and the rigorous pass still holds the
    exact softmax and is as tight as the dense bound."""
    from headcount.core.attention import blocks
    from headcount.core.attention.torch_backend import torch_attend

    n = ATTENTION_BLOCK + 40
    q, k, v = random_qkv(11, n, scale)
    boxes = [(a, np.abs(a) * 1e-12) for a in (q, k, v)]
    whole = (attend(q, k, v, mask, FLOAT64), attention_bounds(*boxes, mask))
    whole_torch = torch_attend(q, k, v, mask, FLOAT64)
    parts = []
    monkeypatch.setattr(blocks, "BLOCK_ENTRIES", 7 * n)  # 3 or 4 queries a part (batch 2)
    original = blocks.dense_parts

    def counted(*args):
        got = list(original(*args))
        parts.extend(got)
        return iter(got)

    for module in ("floats", "blocked_bound", "torch_backend"):
        monkeypatch.setattr(f"headcount.core.attention.{module}.dense_parts", counted)
    split = (attend(q, k, v, mask, FLOAT64), attention_bounds(*boxes, mask))
    split_torch = torch_attend(q, k, v, mask, FLOAT64)
    assert parts and all(stop - start <= 4 for start, stop, _ in parts)
    assert all(keys == (stop if mask == "causal" else n) for _, stop, keys in parts)
    tolerance = 16 * np.finfo(float).eps * np.abs(v).max()
    assert np.max(np.abs(split[0] - whole[0])) <= tolerance
    # torch decides sparse or dense sums per part, not per block: ≤ n terms summed in another order
    assert np.max(np.abs(split_torch - whole_torch)) <= 4 * tolerance
    (mid, rad), (whole_mid, whole_rad) = split[1], whole[1]
    assert np.all(np.abs(mid - whole_mid) <= rad + whole_rad)
    # a part with few keys may be bounded densely where its whole block was sparse (and a little
    # tighter): the reference, the dense bound, is what both must match
    allowed = np.tri(n, dtype=bool) if mask == "causal" else np.ones((n, n), dtype=bool)
    dense_rad = dense_attention_bounds(*boxes, allowed)[1]
    assert np.all(rad <= 1.01 * dense_rad + 1e-300)
    one = [(a[:1], r[:1]) for a, r in boxes]  # the exact softmax, on batch element 0
    box = attention_bounds(*one, mask)
    assert_holds_exact_softmax(
        [a for a, _ in one], [r for _, r in one], box, mask, np.random.default_rng(3)
    )
