"""The LayerNorm and GELU enclosures (headcount.core.passes.activations) must CONTAIN the exact real
value.

The reference is python-flint Arb: sample points inside each box are exact reals (built from the
box's floats at 2400 bits, where every such sum and product is exact), their LayerNorm / GELU an Arb
ball, and the whole ball must lie inside the computed interval. The GELU constants (where f turns,
its minimum, the cut-offs) are proven here with Arb too. The end of the file runs whole random
GPT-2-style models: the bounds of core.passes.bounds.residual_bounds must contain the Arb reference
residual, and must be tight enough to certify most positions of a well-conditioned model.
"""

from __future__ import annotations

import math
import types

import numpy as np
import pytest
from flint import arb, ctx, fmpq

from headcount.common.errors import InternalError
from headcount.core.certify.evaluate import certified_predict
from headcount.core.model import (
    MLP,
    AttentionHead,
    Layer,
    LayerNorm,
    LinearDecoder,
    Transformer,
)
from headcount.core.numbers.interval import scale_bounds
from headcount.core.numbers.precision import EXACT, FLOAT64, fixed
from headcount.core.passes import activations as ab
from headcount.core.passes.activations import GELU_SHAPES, X_POS, gelu_interval, layer_norm_interval
from headcount.core.passes.bounds import activation_bounds, residual_bounds
from headcount.core.passes.forward import residual_stream
from tests.soundness import arb_reference as ref

KINDS = ("gelu", "gelu_tanh", "silu")  # silu: the same shape (issue 32)


@pytest.fixture(autouse=True)
def _arb_precision():
    old = ctx.prec
    ctx.prec = 2400
    yield
    ctx.prec = old


def A(x) -> arb:
    return arb(float(x))


def f_exact(x: arb, kind: str) -> arb:
    """GELU of the (exact, up to 2400-bit) real x, as a ball at 320 bits."""
    old = ctx.prec
    ctx.prec = 320
    try:
        return ref.gelu(x, kind)
    finally:
        ctx.prec = old


def f_prime(x: arb, kind: str) -> arb:
    """GELU's derivative: Φ(x) + xφ(x), resp. σ(2a) + 2x·σ(2a)(1 − σ(2a))·a'(x)."""
    if kind == "gelu":
        return (-x / arb(2).sqrt()).erfc() / 2 + x * (-(x * x) / 2).exp() / (2 * arb.pi()).sqrt()
    if kind == "silu":
        s = 1 / (1 + (-x).exp())
        return s * (1 + x * (1 - s))
    k, c3 = (2 / arb.pi()).sqrt(), arb(fmpq(44715, 10**6))
    s = 1 / (1 + (-2 * k * (x + c3 * x * x * x)).exp())
    return s + 2 * x * s * (1 - s) * k * (1 + 3 * c3 * x * x)


def inside(value: arb, lo: float, hi: float) -> bool:
    return bool(A(lo) <= value and value <= A(hi))


def f_inside(x: arb, kind: str, lo: float, hi: float) -> bool:
    """f(x) ∈ [lo, hi]. For large |x|, f(x) is a ball too wide to compare with x or 0: there the
    upper end uses f(x) ≤ x (x ≥ 0: Φ, σ ≤ 1) or f(x) ≤ 0 (x ≤ 0), and the lower end the gap g = x −
    f(x) = x(1 − Φ(x)) resp. x/(1 + e^{2a}), which Arb gets to full relative accuracy."""
    value = f_exact(x, kind)
    upper = bool(value <= A(hi)) or bool(x >= 0 and x <= A(hi)) or bool(x <= 0 and hi >= 0)
    if kind == "gelu":
        gap = x * (x / arb(2).sqrt()).erfc() / 2
    elif kind == "silu":
        gap = x / (1 + x.exp())
    else:
        gap = x / (
            1 + (2 * (2 / arb.pi()).sqrt() * (x + arb(fmpq(44715, 10**6)) * x * x * x)).exp()
        )
    lower = bool(A(lo) <= value) or bool(x >= 0 and gap <= x - A(lo))
    return upper and lower


# --------------------------------------------------------------------------------------------------
# GELU: the constants


@pytest.mark.parametrize("kind", KINDS)
def test_gelu_turning_point_is_bracketed(kind):
    shape = GELU_SHAPES[kind]
    assert f_prime(A(shape.star_lo), kind) < 0 < f_prime(A(shape.star_hi), kind)
    # the derivative's sign elsewhere (the docstring proves f' changes sign once; this is a sanity
    # check)
    for x in np.concatenate([-np.geomspace(0.7525, 60, 200), np.linspace(-0.75, 12, 200)]):
        below = x < shape.star_lo
        assert (f_prime(A(x), kind) < 0) if below else (f_prime(A(x), kind) > 0), x


@pytest.mark.parametrize("kind", KINDS)
def test_gelu_minimum_bound_holds_and_is_tight(kind):
    shape = GELU_SHAPES[kind]
    # mean-value form on the bracket: f(x) ∈ f(c) + f'([lo, hi])·[−w, w]; min f = f(x*), x* in the
    # bracket
    c = (A(shape.star_lo) + A(shape.star_hi)) / 2
    w = (A(shape.star_hi) - A(shape.star_lo)) / 2
    bracket = arb(c.mid(), w.mid())
    lowest = f_exact(c, kind) - abs(f_prime(bracket, kind)) * w
    assert A(shape.min_lb) <= lowest
    assert lowest - A(shape.min_lb) < 1e-14


@pytest.mark.parametrize("kind", KINDS)
def test_gelu_cutoffs(kind):
    shape = GELU_SHAPES[kind]
    assert shape.x_neg < shape.star_lo
    assert (
        A(shape.f_neg) <= f_exact(A(shape.x_neg), kind) < 0
    )  # f decreasing and negative below x_neg
    x_pos = A(shape.x_pos)
    assert x_pos - f_exact(x_pos, kind) <= x_pos * A(2.0**-53)  # and x − f(x) decreases after
    assert shape.x_pos == (40.0 if kind == "silu" else X_POS)


# --------------------------------------------------------------------------------------------------
# GELU: enclosures


def _interesting_points(rng: np.random.Generator) -> np.ndarray:
    s_e, s_t, s_s = GELU_SHAPES["gelu"], GELU_SHAPES["gelu_tanh"], GELU_SHAPES["silu"]
    edges = [
        0.0,
        -0.0,
        2.0**-1074,
        2.0**-1022,
        1e-300,
        1e-8,
        0.5,
        1.0,
        3.0,
        9.99,
        10.0,
        10.5,
        40.0,
        1e10,
    ]
    edges += [
        1e300,
        0.7,
        0.74,
        0.75,
        0.7518,
        0.7525,
        0.76,
        5.0,
        18.99,
        19.0,
        19.01,
        36.99,
        37.0,
        37.01,
    ]
    edges += [-s_e.star_lo, -s_e.star_hi, -s_t.star_lo, -s_t.star_hi, 1.7976931348623157e308]
    edges += [-s_s.star_lo, -s_s.star_hi, 1.2, 1.3, 39.99, 40.01, 549.99, 550.0, 550.01]
    points = np.array(edges + [-e for e in edges])
    return np.concatenate(
        [points, rng.normal(size=60), rng.normal(size=60) * 8, -rng.random(20) * 40]
    )


def _intervals(rng: np.random.Generator) -> list[tuple[float, float]]:
    points = _interesting_points(rng)
    out = [(x, x) for x in points]
    for x in points:
        for width in (0.0, 2.0**-1074, 1e-15 * abs(x), 1e-9, 1e-3, 0.3, 5.0):
            with np.errstate(over="ignore"):
                out.append((float(x), float(x + width)))
    out += [(-np.inf, -40.0), (-np.inf, -0.7), (-np.inf, 3.0), (-2.0, np.inf), (-np.inf, np.inf)]
    return [(lo, hi) for lo, hi in out if lo <= hi]


def _samples(lo: float, hi: float, rng: np.random.Generator) -> list[arb]:
    """Exact reals in [lo, hi] (ends, random interior points, GELU's turning points when inside)."""
    if not math.isfinite(lo) or not math.isfinite(hi):
        finite = [v for v in (lo, hi) if math.isfinite(v)]
        pool = [x for x in _interesting_points(rng) if lo <= x <= hi] + finite
        return [A(x) for x in pool]
    out = [A(lo), A(hi)]
    out += [A(lo) + (A(hi) - A(lo)) * A(t) for t in rng.random(4)]
    turns = (-0.7517915246935645, -0.7524614220710163, -1.2784645427610738)
    out += [A(s) for s in turns if lo <= s <= hi]
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_gelu_interval_contains_exact_values(kind):
    rng = np.random.default_rng(KINDS.index(kind) + 7)
    intervals = _intervals(rng)
    lo = np.array([a for a, _ in intervals])
    hi = np.array([b for _, b in intervals])
    out_lo, out_hi = gelu_interval(lo, hi, kind)
    checked = 0
    for a, b, olo, ohi in zip(lo, hi, out_lo, out_hi):
        assert olo <= ohi or math.isnan(ohi), (a, b, olo, ohi)
        for x in _samples(a, b, rng):
            value = f_exact(x, kind)
            assert f_inside(x, kind, olo, ohi), (
                f"{kind} on [{a!r}, {b!r}]: f({x.mid()}) = {value} ∉ [{olo!r}, {ohi!r}]"
            )
            checked += 1
    assert checked > 1000


@pytest.mark.parametrize("kind", KINDS)
def test_gelu_interval_is_tight_on_points(kind):
    rng = np.random.default_rng(3)
    x = np.concatenate([_interesting_points(rng), rng.normal(size=200) * 3])
    x = x[np.isfinite(x)]
    lo, hi = gelu_interval(x, x, kind)
    shape = GELU_SHAPES[kind]
    for xi, a, b in zip(x, lo, hi):
        value = float(f_exact(A(xi), kind).mid())
        if xi <= shape.x_neg:
            assert (a, b) == (shape.f_neg, 0.0)
        elif shape.star_lo < xi < shape.star_hi:
            assert a == shape.min_lb and b - a < 1e-14
        else:
            limit = 3e-12 if xi < -3 else 1e-13  # erfc(ŷ) errs by ~ŷ²·u in scipy: more room there
            assert b - a <= limit * abs(value) + 1e-300, (xi, a, b, value)


@pytest.mark.parametrize("kind", KINDS)
def test_gelu_minimum_handling(kind):
    shape = GELU_SHAPES[kind]
    # around each kind's turning point t: boxes holding it (two), right of it, left of it
    t = -0.75 if kind != "silu" else -1.28
    ends = np.array(
        [[t - 0.25, t + 0.25], [t - 0.01, t + 0.01], [t + 0.05, t + 0.15], [-3.0, t - 0.01]]
    )
    lo, hi = gelu_interval(ends[:, 0], ends[:, 1], kind)
    assert lo[0] == lo[1] == shape.min_lb  # the bracket of x* inside: the global minimum's bound
    f = lambda x: float(f_exact(A(x), kind).mid())  # noqa: E731
    assert lo[2] > shape.min_lb + 1e-4 and abs(lo[2] - f(ends[2, 0])) < 1e-15
    assert abs(lo[3] - f(ends[3, 1])) < 1e-15  # decreasing part: f(hi)
    assert abs(hi[0] - f(ends[0, 1])) < 1e-15  # the maximum is at an end
    assert abs(hi[3] - f(ends[3, 0])) < 1e-15


@pytest.mark.parametrize("kind", KINDS)
def test_gelu_non_finite_is_never_a_proof(kind):
    lo, hi = gelu_interval(np.array([np.nan, 0.0, -np.inf]), np.array([1.0, np.inf, np.nan]), kind)
    assert np.all(hi == np.inf)
    mid, rad = activation_bounds(
        np.array([np.nan, 0.0, 1e308]), np.array([1.0, np.inf, 1e308]), kind
    )
    assert np.all(rad == np.inf)


def test_unknown_activation_is_refused():
    with pytest.raises(ValueError, match="gelu"):
        gelu_interval(np.zeros(1), np.zeros(1), "swish")


def test_platform_check_refuses_an_inaccurate_erfc(monkeypatch):
    ab.check_special()  # this machine passes
    erfc = ab.special.erfc
    bad = types.SimpleNamespace(erfc=lambda y: erfc(y) * (1 + 1e-12))
    monkeypatch.setattr(ab, "special", bad)
    monkeypatch.setattr(ab, "_special_checked", [])
    with pytest.raises(InternalError, match="erfc"):
        gelu_interval(np.zeros(1), np.ones(1), "gelu")


# --------------------------------------------------------------------------------------------------
# LayerNorm


def ln_exact(x: list, ln: LayerNorm) -> list:
    return ref.layer_norm(x, ln)


def _random_ln(rng: np.random.Generator, d: int) -> LayerNorm:
    w = rng.choice([1.0, -1.0, 0.5, 0.0, 3.0, 1e-300, 1e100, -2.5], size=d) * rng.choice([1.0, 1.1])
    b = rng.choice([0.0, 1.0, -0.25, 1e-300, 1e6, 2.0**-1074], size=d)
    eps = float(rng.choice([1e-5, 1e-12, 2.0**-1074, 1.0, 1e-300, 0.37]))
    return LayerNorm(w, b, eps)


def _random_box(rng: np.random.Generator, d: int) -> tuple[np.ndarray, np.ndarray]:
    scale = float(rng.choice([1.0, 1e-300, 2.0**-1070, 1e300, 1e-8, 1e8, 3.0]))
    mid = rng.normal(size=d) * scale
    kind = rng.integers(0, 6)
    if kind == 0:
        mid[:] = mid[0]  # zero variance at the midpoint
    elif kind == 1:
        with np.errstate(over="ignore"):
            mid[rng.integers(0, d)] *= 1e12  # one coordinate dominates (or overflows)
    rad_kind = rng.integers(0, 5)
    rad = [
        np.zeros(d),
        np.abs(mid) * 1e-15 + 2.0**-1074,
        np.full(d, 1e-12 * scale),
        rng.random(d) * scale,
        np.where(rng.random(d) < 0.5, 0.0, rng.random(d) * 1e-3),
    ][rad_kind]
    return mid, rad


def _box_points(
    mid: np.ndarray, rad: np.ndarray, rng: np.random.Generator, count: int = 6
) -> list[list]:
    """Exact real points of the box: the midpoint, corners and random points (at 2400 bits all
    exact)."""
    d = len(mid)
    ts = [np.zeros(d), np.ones(d), -np.ones(d)] + [
        rng.choice([-1.0, 1.0], size=d) for _ in range(2)
    ]
    ts += [rng.uniform(-1, 1, size=d) for _ in range(count)]
    points = []
    for t in ts:
        if np.all(np.isfinite(rad)) and np.all(np.isfinite(mid)):
            points.append([A(m) + A(ti) * A(r) for m, ti, r in zip(mid, t, rad)])
    return points


@pytest.mark.parametrize("d", [1, 2, 3, 5, 8])
def test_layer_norm_interval_contains_exact_values(d):
    rng = np.random.default_rng(100 + d)
    checked = 0
    for _ in range(60):
        ln = _random_ln(rng, d)
        mid, rad = _random_box(rng, d)
        lo, hi = layer_norm_interval(mid[None], rad[None], ln)
        lo, hi = lo[0], hi[0]
        assert np.all(lo <= hi)
        for point in _box_points(mid, rad, rng):
            exact = ln_exact(point, ln)
            for i, value in enumerate(exact):
                assert inside(value, lo[i], hi[i]), (
                    f"d={d} coord {i}: {value} ∉ [{lo[i]!r}, {hi[i]!r}]"
                )
                checked += 1
    assert checked >= 60 * 5 * d


@pytest.mark.parametrize("d", [1, 2, 4, 9])
def test_layer_norm_of_an_unbounded_box_is_clamped(d):
    """Infinite radius or NaN midpoint: still bounded by b ± |w|·√(d−1), which holds for every real
    x."""
    rng = np.random.default_rng(d)
    ln = LayerNorm(rng.normal(size=d), rng.normal(size=d), 1e-5)
    mids = np.array([np.zeros(d), np.full(d, np.nan), rng.normal(size=d), np.full(d, 1e308)])
    rads = np.array(
        [
            np.full(d, np.inf),
            np.ones(d),
            np.where(np.arange(d) == 0, np.inf, 0.0),
            np.full(d, 1e308),
        ]
    )
    lo, hi = layer_norm_interval(mids, rads, ln)
    assert np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))
    reach = np.abs(ln.w) * math.sqrt(d - 1)
    slack = 1e-12 * (reach + np.abs(ln.b)) + 1e-300
    assert np.all(lo >= ln.b - reach - slack) and np.all(hi <= ln.b + reach + slack)
    for x in ([1e300] + [0.0] * (d - 1), [(-1.0) ** i * 1e200 * (i + 1) for i in range(d)]):
        exact = ln_exact([A(v) for v in x], ln)
        for row in range(len(mids)):
            if (
                row == 2 and d > 1
            ):  # a box unbounded in one coordinate holds every x with the others fixed
                continue
            assert all(inside(v, a, b) for v, a, b in zip(exact, lo[row], hi[row]))
    if d == 1:  # x − mean(x) = 0: LN(x) = b exactly, whatever the box
        assert np.all(np.abs(lo - ln.b) <= 1e-15 * np.abs(ln.b)) and np.all(
            np.abs(hi - ln.b) <= 1e-15 * np.abs(ln.b)
        )


def test_layer_norm_interval_is_tight_on_points():
    rng = np.random.default_rng(5)
    for d in (2, 3, 4, 16, 64):
        ln = LayerNorm(rng.normal(size=d), rng.normal(size=d), 1e-5)
        mid = rng.normal(size=(20, d)) * rng.choice([1e-3, 1.0, 1e3], size=(20, 1))
        lo, hi = layer_norm_interval(mid, np.zeros_like(mid), ln)
        scale = np.abs(ln.w) * math.sqrt(d) + np.abs(ln.b)
        assert np.all(hi - lo <= 1e-13 * scale), (d, (hi - lo).max())


# --------------------------------------------------------------------------------------------------
# The attention scale (core.passes.bounds.scale_bounds): scale·x for x in a box


def test_scale_bounds_contain_every_scaled_point():
    rng = np.random.default_rng(11)
    scales = [1 / math.sqrt(2), 1 / math.sqrt(3), 0.125, 3.0, -0.7, 1e-300, 1e10, 0.0]
    mids = np.array([0.0, 1.0, -1 / 3, 2.0**-1074, 3 * 2.0**-1074, 1e-310, 1e300, -7.25, 0.1])
    rads = np.array([0.0, 0.0, 1e-17, 0.0, 2.0**-1074, 1e-320, 1e284, 0.5, 1e-15])
    for scale in scales:
        mid, rad = scale_bounds(mids, rads, scale)
        for m, r, om, orad in zip(mids, rads, mid, rad):
            for t in (-1.0, 1.0, float(rng.uniform(-1, 1))):
                exact = A(scale) * (A(m) + A(t) * A(r))
                assert abs(exact - A(om)) <= A(orad), (scale, m, r, om, orad)
    mid, rad = scale_bounds(np.array([np.inf, np.nan, 1e308]), np.array([0.0, 0.0, 1.0]), 4.0)
    assert np.all(rad == np.inf)


# --------------------------------------------------------------------------------------------------
# Whole models


def random_gpt2_model(seed: int) -> Transformer:
    """A well-conditioned GPT-2-style model: LayerNorms everywhere, biases, scale 1/√d_head, GELU
    MLPs."""
    rng = np.random.default_rng(seed)
    d, n_ctx, alphabet = int(rng.integers(3, 7)), int(rng.integers(2, 6)), int(rng.integers(2, 5))

    def mat(*shape, scale=1.0):
        return rng.normal(size=shape) * scale

    def ln():
        return LayerNorm(1 + 0.2 * mat(d), 0.2 * mat(d), float(rng.choice([1e-5, 1e-12])))

    layers = []
    for _ in range(int(rng.integers(1, 3))):
        d_head = int(rng.integers(2, 5))
        heads = tuple(
            AttentionHead(
                mat(d, d_head, scale=2),
                mat(d, d_head, scale=2),
                mat(d, 2),
                mat(2, d),
                mat(d_head),
                mat(d_head),
                mat(2),
            )
            for _ in range(int(rng.integers(1, 4)))
        )
        d_mlp = int(rng.integers(1, 8))
        mlp = MLP(
            mat(d, d_mlp), mat(d_mlp), mat(d_mlp, d), mat(d), str(rng.choice(["gelu", "gelu_tanh"]))
        )
        layers.append(Layer(heads, mlp, ln(), ln(), mat(d), 1 / math.sqrt(d_head)))
    decoder = LinearDecoder(mat(d, alphabet + 1, scale=3), mat(alphabet + 1))
    return Transformer(
        mat(alphabet, d), mat(n_ctx, d), tuple(layers), decoder, "causal", ln_final=ln()
    )


@pytest.mark.parametrize("seed", range(10))
def test_residual_bounds_contain_the_reference_on_gpt2_models(seed):
    ctx.prec = 256
    model = random_gpt2_model(seed)
    assert set(model.extensions) == {"attention biases", "attention scale", "gelu", "layernorm"}
    tokens = np.random.default_rng(seed).integers(0, model.alphabet, size=(3, model.n_ctx))
    checked = 0
    for prec in (EXACT, fixed(4), fixed(12)):
        mid, rad = residual_bounds(model, tokens, prec)
        assert np.all(np.isfinite(mid)) and np.all(rad < np.inf)
        for b, seq in enumerate(tokens):
            try:
                x = ref.residual(model, seq.tolist(), prec)
            except ref.Undecided:
                continue
            for i, row in enumerate(x):
                for c, value in enumerate(row):
                    assert abs(value - A(mid[b, i, c])) <= A(rad[b, i, c]), (prec.name, b, i, c)
            checked += 1
    assert checked >= 4


def test_float_forward_pass_lies_in_the_exact_boxes():
    """The float64 forward pass is within a few ulps of the real model: inside the exact-mode boxes,
    which are themselves narrow."""
    for seed in range(20):
        model = random_gpt2_model(seed)
        tokens = np.random.default_rng(seed).integers(0, model.alphabet, size=(16, model.n_ctx))
        mid, rad = residual_bounds(model, tokens, EXACT)
        x = residual_stream(model, tokens, FLOAT64)
        assert np.all(np.abs(x - mid) <= rad), (seed, np.max(np.abs(x - mid) - rad))
        # one layer: a few hundred ulps; two: the second layer's scores and LayerNorm amplify the
        # first's
        limit = 1e-9 if len(model.layers) == 1 else 1e-6
        assert np.all(rad <= limit * (1 + np.abs(x))), (seed, rad.max())


def test_certified_predict_proves_most_positions_of_gpt2_models(capsys):
    proven = total = 0
    for seed in range(20):
        model = random_gpt2_model(seed)
        tokens = np.random.default_rng(seed).integers(0, model.alphabet, size=(32, model.n_ctx))
        for prec in (EXACT, fixed(16)):
            _, ok = certified_predict(model, tokens, prec)
            proven += int(ok.sum())
            total += ok.size
    with capsys.disabled():
        print(f"\nGPT-2-style models: proven {proven} of {total} positions ({proven / total:.4f})")
    assert proven >= 0.95 * total
