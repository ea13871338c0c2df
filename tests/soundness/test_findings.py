"""Regression tests for the soundness findings of issue 11 on the core (findings 1–4): each model
below fooled a verdict once. They stay as fixtures: the same inputs must now give the true
answer."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from flint import arb, ctx, fmpq

from headcount.cli import main
from headcount.core.attention import weight_error
from headcount.core.certify.evaluate import certified_predict, emulate, predict
from headcount.core.model import AttentionHead, Layer, LinearDecoder, Transformer
from headcount.core.model.files import save_model
from headcount.core.model.symbols import BOTTOM
from headcount.core.numbers.interval import affine_bounds, quantize_bounds
from headcount.core.numbers.precision import FLOAT64, fixed, round_fixed

TINY = 2.0**-1074


def run_json(capsys, *argv):
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--json"])
        raise SystemExit(0)
    out, err = capsys.readouterr()
    assert (exit_info.value.code or 0) == 0, err
    return json.loads(out)


def _silent_layer(d: int) -> Layer:
    """One head whose output is 0 (W_O = 0): the residual is the embedding."""
    eye = np.eye(d)
    return Layer((AttentionHead(eye, eye, eye, np.zeros((d, d))),))


def underflow_model() -> Transformer:
    """Finding 1: both tokens embed to (1/2, 1/2); every product x·t underflows, so float64 argmax
    is ⊥ (column 2), while the exact logits are (t, −1, t/2): the real model answers token 0."""
    t = TINY
    decoder = LinearDecoder(np.array([[t, -1.0, 3 * t], [t, -1.0, -2 * t]]), np.zeros(3))
    return Transformer(np.full((2, 2), 0.5), np.zeros((1, 2)), (_silent_layer(2),), decoder)


def tie_embedding_model() -> Transformer:
    """Finding 4: the exact embedding 1.25 + 2^-54 rounds up to 1.5 at p = 1, but float64 first
    rounds the sum to the tie 1.25, which goes to 1.0. The decoder answers ⊥ iff x > 1.375 (else
    token 0)."""
    decoder = LinearDecoder(np.array([[0.0, 0.0, 1.0]]), np.array([0.0, -100.0, -1.375]))
    W_pos = np.array([[0.25 + 2.0**-54]])
    return Transformer(np.ones((2, 1)), W_pos, (_silent_layer(1),), decoder)


# ---- finding 1: underflow
# ------------------------------------------------------------------------------


def test_underflowing_products_keep_a_radius():
    mid, rad = affine_bounds(np.array([[0.5, 0.5]]), np.zeros((1, 2)), np.array([[TINY], [TINY]]))
    assert mid[0, 0] == 0.0 and rad[0, 0] >= TINY  # the exact value is 2^-1074, not 0


def test_underflow_model_is_not_certified(capsys, tmp_path):
    model = underflow_model()
    assert emulate(model, [[0]], FLOAT64).tolist() == [[BOTTOM]]
    out, proven = certified_predict(model, [[0], [1]], fixed(1))
    assert not np.any(proven & (out == BOTTOM))  # never "proven ⊥": the exact model answers 0
    assert predict(model, [[0], [1]], fixed(1)).tolist() == [[0], [0]]
    path = tmp_path / "underflow.safetensors"
    save_model(model, path)
    cert = run_json(
        capsys, "induction", "certify", "--model", str(path), "--n", "1", "--alphabet", "2"
    )
    assert cert["errors"] == 0  # float64 itself answers ⊥ …
    assert (
        cert["certified"] is False and cert["precision_bits"] is None
    )  # … but no fixed:p model does
    assert len(cert["rejected"]) == 60
    assert cert["rejected"][0] == {
        "p": 1,
        "family": "exhaustive",
        "input": [0],
        "position": 1,
        "expected": "⊥",
        "got": "0",
    }


# ---- finding 2: quantize_bounds at p ≥ 27
# ----------------------------------------------------------


def test_quantize_bounds_contains_the_exact_image_at_high_precision():
    rng = np.random.default_rng(2)
    misses = 0
    for bits in range(27, 61):
        scale = 2.0**bits
        # boxes whose endpoints sit near binade edges 2^e (e ≤ p) and off the grid
        edges = 2.0 ** rng.integers(-bits, bits, size=400)
        mid = edges * (
            1 + rng.choice([-1, 1], size=400) * rng.integers(1, 2**20, size=400) * 2.0**-52
        )
        mid *= rng.choice([-1.0, 1.0], size=400)
        rad = np.abs(mid) * rng.choice([0, 2.0**-50, 2.0**-30, 2.0**-8], size=400)
        qm, qr = quantize_bounds(mid, rad, bits)
        for m, r, a, b in zip(mid, rad, qm, qr):
            lo_box, hi_box = (
                Fraction(float(a)) - Fraction(float(b)),
                Fraction(float(a)) + Fraction(float(b)),
            )
            # the exact rounding of the exact endpoints m ± r (round half to even, then clip)
            for end in (
                Fraction(float(m)) - Fraction(float(r)),
                Fraction(float(m)) + Fraction(float(r)),
            ):
                k = end * scale
                q = round(k)  # Python's round on Fraction: half to even
                image = max(-scale, min(scale, Fraction(q) / Fraction(scale)))
                misses += not (lo_box <= image <= hi_box)
    assert misses == 0


def test_quantize_bounds_point_boxes_stay_exact():
    qm, qr = quantize_bounds(np.array([0.3, -7.25]), np.zeros(2), 3)
    np.testing.assert_array_equal(qm, round_fixed(np.array([0.3, -7.25]), 3))
    np.testing.assert_array_equal(qr, [0.0, 0.0])


# ---- finding 3: the softmax weight step holds on its own
# -------------------------------------------


def _exact_extremes(alpha_bar: list[arb], rho: list[arb], j: int) -> tuple[arb, arb]:
    """max and min of ᾱ_j e^{η_j} / Σ_k ᾱ_k e^{η_k} over |η| ≤ ρ (attained at η_j = ±ρ_j, η_k =
    ∓ρ_k)."""

    def ratio(sign: int) -> arb:
        num = alpha_bar[j] * (sign * rho[j]).exp()
        rest = sum(
            (alpha_bar[k] * (-sign * rho[k]).exp() for k in range(len(rho)) if k != j), arb(0)
        )
        return num / (num + rest)

    return ratio(1), ratio(-1)


@pytest.mark.parametrize("seed", range(40))
def test_weight_error_bounds_every_weight_on_its_own(seed):
    """|α_j − α̂_j| ≤ e_j for the exact extremes, with tiny ρ (where 1 + Σ α̂(e^{-ρ} − 1) loses the
    low bits of a sum near 1) and large ρ alike; θ is the exact |ᾱ/α̂ − 1| of these α̂, nothing
    more."""
    rng = np.random.default_rng(seed)
    keys = int(rng.integers(1, 9))
    weights = np.exp(-rng.choice([0.0, 1e-3, 3.0, 40.0], size=keys) * rng.random(keys))
    alpha = weights / weights.sum()
    scale = [1e-17, 1e-15, 1e-13, 1e-6, 0.2][seed % 5]
    rho = scale * rng.random(keys) + rng.choice([0.0, scale], size=keys)
    old = ctx.prec
    ctx.prec = 300
    try:
        exact = [fmpq(*float(a).as_integer_ratio()) for a in alpha]
        total = sum(exact, fmpq(0))
        alpha_bar = [arb(a / total) for a in exact]  # the exact normalisation, as balls
        theta = max(
            float(abs(ab / arb(float(a)) - 1).upper()) if a else 0.0
            for ab, a in zip(alpha_bar, alpha)
        )
        err, unbounded = weight_error(
            alpha[None, :].copy(), rho[None, :].copy(), theta * (1 + 1e-6)
        )
        assert not unbounded.any()
        arb_rho = [arb(float(r)) for r in rho]
        for j in range(keys):
            high, low = _exact_extremes(alpha_bar, arb_rho, j)
            worst = max(
                float(abs(high - float(alpha[j])).upper()),
                float(abs(low - float(alpha[j])).upper()),
            )
            assert worst <= err[0, j], (j, worst, err[0, j])
    finally:
        ctx.prec = old


def _worst_errors(alpha: np.ndarray, rho: np.ndarray, mult: np.ndarray) -> list[float]:
    """Per column of (α̂, ρ, mult) — a column stands for mult identical keys, each its own η — the
    largest |α_j − α̂_j| over |η| ≤ ρ with ᾱ the exact normalisation of α̂ (Arb, upper bounds), and
    the θ of that normalisation."""
    expanded = np.repeat(np.arange(len(alpha)), mult.astype(int))
    exact = [fmpq(*float(alpha[c]).as_integer_ratio()) for c in expanded]
    total = sum(exact, fmpq(0))
    alpha_bar = [arb(a / total) for a in exact]
    arb_rho = [arb(float(rho[c])) for c in expanded]
    worst = []
    for column in range(len(alpha)):
        j = int(np.flatnonzero(expanded == column)[0])
        high, low = _exact_extremes(alpha_bar, arb_rho, j)
        worst.append(max(float(abs(e - float(alpha[column])).upper()) for e in (high, low)))
    theta = max(
        float(abs(ab / arb(float(alpha[c])) - 1).upper()) if alpha[c] else 0.0
        for ab, c in zip(alpha_bar, expanded)
    )
    return worst + [theta]


@pytest.mark.parametrize("seed", range(30))
def test_weight_error_holds_for_cells_and_dominant_keys(seed):
    """The same check with cells of identical keys (`mult`, core.attention.pruning) and rows where
    one key holds nearly all the weight with a ρ as large as the others' (weight_error's pairwise
    bound λ_j, whose factor 1 − ᾱ_j must not be rounded below its true value)."""
    rng = np.random.default_rng(100 + seed)
    keys = int(rng.integers(1, 6))
    gaps = rng.choice([0.0, 1e-3, 3.0, 30.0, 60.0], size=keys) * rng.random(keys)
    gaps[0] = 0.0
    gaps[1:] += [0.0, 25.0, 60.0][seed % 3]  # key 0 dominant by e^-25 or e^-60 from seed % 3 = 1
    mult = rng.integers(1, 4, size=keys).astype(float) if seed % 2 else np.ones(keys)
    weights = np.exp(-gaps)
    alpha = weights / (weights * mult).sum()
    scale = [1e-15, 1e-9, 1e-4, 0.3][seed % 4]
    rho = scale * rng.random(keys) + rng.choice([0.0, scale], size=keys)
    old = ctx.prec
    ctx.prec = 300
    try:
        *worst, theta = _worst_errors(alpha, rho, mult)
        err, unbounded = weight_error(
            alpha[None, :].copy(), rho[None, :].copy(), theta * (1 + 1e-6), mult[None, :]
        )
    finally:
        ctx.prec = old
    assert not unbounded.any()
    for j in range(keys):
        assert worst[j] <= err[0, j], (j, worst[j], err[0, j])


def test_a_dominant_key_has_nearly_exact_weight_whatever_its_own_rho():
    """One key against the rest at e^-30 with ρ = 10⁻⁴ everywhere: the first release's bound gave
    its weight an error ≈ 2ρ; the pairwise bound gives about (1 − α)·2ρ (the n = 2^20 two-layer
    construction's layer-2 rows: one near key, scores rounded to 10⁻⁴)."""
    alpha = np.array([1.0, np.exp(-30.0), np.exp(-31.0)])
    alpha /= alpha.sum()
    rho = np.full(3, 1e-4)
    err, _ = weight_error(alpha[None, :].copy(), rho[None, :].copy(), 4 * 2.0**-53)
    assert err[0, 0] < 1e-15
    assert err[0, 1] <= 2.1e-4 * alpha[1]  # a small key's weight still errs by ≈ 2ρ


# ---- finding 4: fixed:p is the seed's semantics, not its float64 emulation
# --------------------------


def test_fixed_p_predict_rounds_the_exact_value(capsys):
    model = tie_embedding_model()
    assert emulate(model, [[0]], fixed(1)).tolist() == [
        [0]
    ]  # the emulation lands on the tie 1.25 → 1.0
    assert predict(model, [[0]], fixed(1)).tolist() == [[BOTTOM]]  # the exact 1.25 + 2^-54 → 1.5


def test_precision_bits_is_the_exact_models(capsys, tmp_path):
    path = tmp_path / "tie.safetensors"
    save_model(tie_embedding_model(), path)
    got = run_json(
        capsys,
        "induction",
        "predict",
        "--model",
        str(path),
        "--input",
        "0",
        "--precision",
        "fixed:1",
    )
    assert got["outputs"] == ["⊥"]
    cert = run_json(
        capsys, "induction", "certify", "--model", str(path), "--n", "1", "--alphabet", "2"
    )
    assert (
        cert["precision_bits"] == 1 and cert["rejected"] == []
    )  # no p was rejected: none is wrong
    assert cert["errors"] == 2  # float64 (a different mode) does round the sum to 1.25 first
    assert cert["scope"] == "exhaustive"


# ---- finding 9: a certificate says what it covers ------------------------------------------------


def test_sampled_certificate_says_sampled(capsys):
    """A certificate over sampled inputs is "certified on the inputs checked", not on all of Σ^n:
    its JSON says scope "sampled" and counts the inputs per family; the README says so where it
    shows one."""
    cert = run_json(
        capsys,
        "induction",
        "certify",
        "--layers",
        "2",
        "--n",
        "16",
        "--alphabet",
        "4",
        "--samples",
        "16",
    )
    assert cert["scope"] == "sampled" and cert["certified"] is True
    assert sum(cert["families"].values()) == cert["inputs_checked"] < 4**16
    assert {"uniform", "index"} <= set(cert["families"])
    exhaustive = run_json(
        capsys, "induction", "certify", "--layers", "2", "--n", "6", "--alphabet", "2"
    )
    assert exhaustive["scope"] == "exhaustive" and exhaustive["inputs_checked"] == 2**6
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "# a trained model, certified\n" not in readme
    assert "(scope: sampled)" in readme


# ---- the one platform assumption, checked at run time
# ----------------------------------------------


def test_a_libm_less_accurate_than_assumed_gets_no_certificate(monkeypatch):
    from headcount.common.errors import InternalError
    from headcount.core.attention import rigorous as bounds

    exp = np.exp
    monkeypatch.setattr(bounds, "_libm_checked", [])
    monkeypatch.setattr(np, "exp", lambda x, *a, **k: exp(x, *a, **k) * (1 + 2.0**-40))
    with pytest.raises(InternalError, match="off by more than 4 ulp"):
        certified_predict(tie_embedding_model(), [[0]], fixed(3))
    monkeypatch.undo()
    bounds.check_libm()  # the real one passes
