"""Theorems 2 and 3 for symmetric Boolean functions (spec/boolean.md), checked exactly."""

from __future__ import annotations

import random

import pytest
from flint import fmpq, fmpq_poly

from headcount.boolean.bases import basis_range, lemma14_basis, representation
from headcount.boolean.certification import construct_and_certify, dim_bound, format_rational
from headcount.boolean.construction import construct, lemma9_head, lemma11_layer
from headcount.boolean.lower_bound import check_feasible, find_wrong_input, theorem2_check
from headcount.boolean.model import (
    BooleanHead,
    BooleanLayer,
    Readout,
    layer_output_exact,
    layer_outputs_exact,
    model_sign_exact,
    model_sign_float,
    model_values_exact,
)
from headcount.boolean.task import (
    change_points,
    parse_function,
    sign_changes,
    symmetric_values,
    threshold_degree_symmetric,
)
from headcount.common.errors import InputError


def q(s):
    return fmpq(*map(int, s.split("/"))) if "/" in s else fmpq(int(s))


# --- the spec's worked example ------------------------------------------------------------------


def test_worked_example_exact():
    n, H = 2, 2
    P = fmpq_poly([fmpq(-1, 2), 1]) * fmpq_poly([fmpq(-3, 2), 1])
    layer = lemma11_layer([P], n, H)
    h1, h2 = layer.heads
    assert (h1.w0, h1.w1, h1.v0, h1.v1) == (1, 2, (q("-31/16"),), (q("-27/32"),))
    assert (h2.w0, h2.w1, h2.v0, h2.v1) == (1, 3, (q("17/8"),), (q("7/8"),))
    # inputs 00, 01, 10, 11 have t = 0, 1, 1, 2
    outs = [layer_output_exact(layer, n, x.count("1"))[0] for x in ("00", "01", "10", "11")]
    assert outs == [q("3/16"), q("-1/48"), q("-1/48"), q("1/32")]
    assert [z[0] for z in layer_outputs_exact(layer, n)] == [q("3/16"), q("-1/48"), q("1/32")]
    readout = Readout({(1,): 1}, 1, 1)
    assert model_sign_exact(layer, readout, n) == list(symmetric_values("xor", 2)) == [1, -1, 1]
    built = construct(symmetric_values("xor", 2), 2, 1, 2)
    assert (built.route, built.dim) == ("factorization", 1) and built.layer == layer
    r = construct_and_certify("xor", 2, 1, 2)
    assert r.certified and r.certificate.min_abs_margin == "1/48" and r.dim == 1


def test_one_head_cannot_do_2bit_xor():
    with pytest.raises(
        ValueError, match=r"degree·heads = 1 < threshold degree 2 of xor on 2 bits.*heads ≥ 2"
    ):
        construct_and_certify("xor", 2, 1, 1)


# --- XOR n = 12 over the whole (D, H) grid -----------------------------------------------------


def test_xor_12_grid():
    n = 12
    for D in range(1, 13):
        for H in range(1, 13):
            if D * H >= n:
                r = construct_and_certify("xor", n, D, H, use_search=False)
                assert r.certified and r.certificate.errors == 0, (D, H, r)
                assert r.certificate.weights_checked == n + 1
                assert r.dim <= r.dim_bound == dim_bound(D, H), (D, H, r)
            else:
                with pytest.raises(ValueError) as e:
                    construct_and_certify("xor", n, D, H)
                msg = str(e.value)
                assert f"degree·heads = {D * H} < threshold degree 12 of xor on 12 bits" in msg
                assert "Theorem 2" in msg and f"heads ≥ {-(-12 // D)}" in msg


def test_both_routes_forced_agree_with_F():
    F = symmetric_values("xor", 12)
    for route in ("factorization", "additive-basis"):
        built = construct(F, 12, 4, 4, route=route, use_search=False)
        layer, readout = built.layer, built.readout
        assert built.route == route
        assert model_sign_exact(layer, readout, 12) == list(F)
        rep = theorem2_check(layer, readout, 12)
        assert rep.degree_ok and rep.signs_match and rep.mismatches == ()
        assert find_wrong_input(layer, readout, F) is None


# --- Theorem 2 on random layers ----------------------------------------------------------------


def test_theorem2_random_layers():
    rng = random.Random(4)

    def rq(lo=-9, hi=9):
        return fmpq(rng.randint(lo, hi), rng.randint(1, 7))

    for trial in range(25):
        n, H, d, D = rng.randint(1, 9), rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 3)
        heads = tuple(
            BooleanHead(rq(1, 9), rq(1, 9), [rq() for _ in range(d)], [rq() for _ in range(d)])
            for _ in range(H)
        )
        layer = BooleanLayer(heads)
        terms = {}
        for _ in range(rng.randint(1, 5)):
            K = [0] * d
            for _ in range(rng.randint(0, D)):
                K[rng.randrange(d)] += 1
            terms[tuple(K)] = rq()
        readout = Readout(terms, D, d)
        rep = theorem2_check(layer, readout, n)
        assert rep.degree_R <= D * H and rep.degree_ok, (trial, rep)
        assert rep.signs_match, (trial, rep)
        # the batch path equals the per-t formula
        assert layer_outputs_exact(layer, n) == [
            layer_output_exact(layer, n, t) for t in range(n + 1)
        ]
        vals = model_values_exact(layer, readout, n)
        assert vals == model_values_exact(layer, readout, n, method="direct")
        for t in range(n + 1):
            assert vals[t] == readout(layer_output_exact(layer, n, t))
            assert (rep.polynomial(t) > 0) == (vals[t] > 0)


def test_find_wrong_input_on_too_small_model():
    # one head cannot compute 3-bit XOR with a linear readout (1·1 < 3): Theorem 2 says some t is
    # wrong
    rng = random.Random(1)
    F = symmetric_values("xor", 3)
    for _ in range(10):
        head = BooleanHead(
            fmpq(rng.randint(1, 5)),
            fmpq(rng.randint(1, 5)),
            [fmpq(rng.randint(-5, 5))],
            [fmpq(rng.randint(-5, 5))],
        )
        w = find_wrong_input(BooleanLayer((head,)), Readout({(1,): 1}, 1, 1), F)
        assert (
            w is not None and len(w.x) == 3 and w.x.count("1") == w.t and w.model_sign != w.target
        )
        assert w.to_json() == {"t": w.t, "x": w.x, "model_sign": w.model_sign, "target": w.target}


# --- named functions ---------------------------------------------------------------------------


def test_named_functions_values():
    assert symmetric_values("xor", 4) == (1, -1, 1, -1, 1)
    assert symmetric_values("and", 3) == (1, 1, 1, -1)
    assert symmetric_values("or", 3) == (1, -1, -1, -1)
    assert symmetric_values("majority", 4) == (1, 1, 1, -1, -1)
    assert symmetric_values("threshold:2", 3) == (1, 1, -1, -1)
    assert symmetric_values("exact:1", 3) == (1, -1, 1, 1)
    assert symmetric_values("mod:3", 6) == (1, -1, -1, 1, -1, -1, 1)
    assert symmetric_values("mod:2", 5) == symmetric_values("xor", 5)
    assert parse_function("F:+-+", 2) == (1, -1, 1)
    assert (
        sign_changes(symmetric_values("exact:1", 3))
        == threshold_degree_symmetric((1, -1, 1, 1))
        == 2
    )
    assert change_points((1, -1, 1, 1)) == [fmpq(1, 2), fmpq(3, 2)]


@pytest.mark.parametrize(
    "name,n,T",
    [
        ("and", 7, 1),
        ("or", 7, 1),
        ("majority", 8, 1),
        ("threshold:3", 8, 1),
        ("exact:3", 8, 2),
        ("mod:3", 9, 6),
        ("xor", 9, 9),
        ("F:++--+-++-", 8, 5),
    ],
)
def test_named_functions_certify(name, n, T):
    for D in (1, 2, 3):
        H = -(-T // D)
        r = construct_and_certify(name, n, D, H, use_search=False)
        assert (
            r.threshold_degree == T
            and r.certified
            and r.certificate.errors == 0
            and r.dim <= r.dim_bound
        )
        r = construct_and_certify(name, n, D + 2, H + 3, use_search=False)
        assert r.certified, r


def test_constant_function_certifies():
    r = construct_and_certify([1, 1, 1, 1], 3, 1, 1)
    assert r.threshold_degree == 0 and r.certified
    r = construct_and_certify([-1, -1, -1], 2, 2, 3)
    assert r.certified and r.to_json()["function"] == "F:---"


# --- bases -------------------------------------------------------------------------------------


def test_bases():
    assert basis_range([1], 5) == 5
    assert basis_range([1, 3], 2) == 4  # 0..4 ok, 5 needs 3 summands
    for D in range(1, 13):
        for H in range(1, 13):
            B = lemma14_basis(D, H)
            if B is not None:
                assert basis_range(B, D) >= D * H and set(B) <= set(range(1, H + 1))
                assert len(B) + 1 <= 2 * max(1, (H - 1).bit_length()) + 2
            elif D >= 2 * max(1, (H - 1).bit_length()) - 2:
                pytest.fail(f"Lemma 14 should apply at D = {D}, H = {H}")
    rep = representation(100, [1, 6, 26, 31, 32], 32)
    assert sum(b * c for b, c in rep.items()) == 100 and sum(rep.values()) <= 32
    with pytest.raises(ValueError):
        representation(7, [3], 5)


def test_format_rational():
    assert format_rational(fmpq(1, 48)) == "1/48"
    s = format_rational(fmpq(2, 3) / fmpq(10) ** 100)
    assert s == "6.66666666666666666666666666667e-101"
    assert format_rational(fmpq(-10) ** 60) == "1.00000000000000000000000000000e+60"


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,match",
    [
        (("xor", 0, 1, 1), "n must be"),
        (("nand", 4, 2, 2), "unknown function"),
        (("xor", 4, 0, 5), "degree must be"),
        (("xor", 4, 5, 0), "heads must be"),
        (("threshold:9", 4, 2, 2), "threshold:k"),
        (("exact:x", 4, 2, 2), "integer"),
        (("mod:1", 4, 2, 2), "mod:m"),
        (("F:+-", 4, 2, 2), "n \\+ 1 = 5"),
    ],
)
def test_bad_input(args, match):
    with pytest.raises(InputError, match=match):
        construct_and_certify(*args)


def test_model_validation():
    with pytest.raises(InputError, match="> 0"):
        BooleanHead(0, 1, [1], [1])
    with pytest.raises(InputError, match="same dimension"):
        BooleanHead(1, 1, [1, 2], [1])
    with pytest.raises(InputError, match="total"):
        Readout({(2, 1): 1}, 2, 2)
    with pytest.raises(InputError, match="c > −1"):
        lemma9_head([0], [1], -1, 3)
    with pytest.raises(InputError, match="impossible by Theorem 2"):
        check_feasible(8, 3, 2, "xor", 8)
    with pytest.raises(InputError, match="use heads ≥ 2"):
        check_feasible(8, 6, 1, "xor", 8)


def test_float64_path_runs():
    built = construct(symmetric_values("xor", 4), 4, 2, 2, use_search=False)
    assert model_sign_float(built.layer, built.readout, 4) == list(symmetric_values("xor", 4))
