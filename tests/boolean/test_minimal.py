"""boolean minimal (headcount.boolean.minimal): d = 1 models found and certified on all 2^n inputs,
refutations whose every certificate re-checks exactly, the walk enumeration against brute force,
the exact Gordan fallback against the HiGHS fast path, and bad input refused in one line."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest

from headcount.boolean.certification import check_model
from headcount.boolean.minimal import (
    _basis,
    _float_rows,
    _member,
    _Rows,
    _rows,
    minimal_dimension_one,
    value_dimension_one,
    walks,
)
from headcount.boolean.model import layer_output_exact
from headcount.boolean.task import sign_changes, symmetric_values
from headcount.common.errors import InputError
from headcount.core.numbers.gordan import (
    check_gordan,
    float_matrix,
)


def sign(x) -> int:
    return (x > 0) - (x < 0)


def rebuilt_rows(n, c, m, D):
    """The strict rows from the docstring's formula, written again here."""
    out = []
    for t in range(n + 1):
        for j in range(1, D + 1):
            s = 1 if j <= m[t] else -1
            z = [Fraction(1)] + [Fraction(1) / (n + ch * t) for ch in c]
            out.append(
                [s * v for v in z] + [Fraction(-s if k == j else 0) for k in range(1, D + 1)]
            )
    return out


@pytest.mark.parametrize(
    "n, D, H", [(6, 2, 3), (6, 3, 2), (8, 2, 4), (8, 4, 2), (9, 3, 3), (10, 2, 5)]
)
def test_dimension_one_xor_at_DH_equal_n_is_found_and_exact(tmp_path, n, D, H):
    path = tmp_path / "m.safetensors"
    r = minimal_dimension_one("xor", n, D, H, out=str(path))
    assert r.verdict == "d = 1 found" and D * H == n == r.T
    f = r.found
    assert f.layer.dim == 1 and f.readout.dim == 1 and f.readout.degree == D
    F = symmetric_values("xor", n)
    assert all(
        sign(f.readout(layer_output_exact(f.layer, n, t))) == F[t] for t in range(n + 1)
    )  # the direct formula, every weight: all 2^n inputs
    checked = check_model(path, "xor", n)  # the saved file, read back and checked
    t2 = checked.theorem2
    assert checked.certificate.certified and t2.degree_ok and t2.signs_match and t2.bound == n
    # the model's own walk is one of the enumerated walks
    z = [
        Fraction(int(v.p), int(v.q))
        for v in (layer_output_exact(f.layer, n, t)[0] for t in range(n + 1))
    ]
    own = tuple(sum(1 for rho in f.roots if rho < v) for v in z)
    assert own == f.walk and own in set(walks(F, D, H))


def test_refutation_certificates_all_recheck():
    r = value_dimension_one(symmetric_values("xor", 12), 4, 3)
    assert r.verdict == "d = 1 refuted in the family" and r.undecided == 0
    assert len(r.refutations) == r.members == r.walk_count * 35  # C(7, 3) denominator sets
    for ref in r.refutations:
        rows = rebuilt_rows(12, ref.denominators, ref.walk, 4)
        total = [
            sum(y * rows[k][i] for y, k in zip(ref.y, ref.support)) for i in range(len(rows[0]))
        ]
        assert all(y >= 0 for y in ref.y) and sum(ref.y) > 0 and not any(total)
    record = json.loads(json.dumps(r.to_json()))
    assert record["family"]["members"] == r.members and len(record["refutations"]) == r.members


@pytest.mark.parametrize("name, n, D, H", [("xor", 5, 2, 3), ("mod:3", 7, 2, 2), ("xor", 6, 3, 2)])
def test_walks_match_brute_force(name, n, D, H):
    F = symmetric_values(name, n)
    changes = {t for t in range(1, n + 1) if F[t] != F[t - 1]}
    brute = set()
    for m in itertools.product(range(D + 1), repeat=n + 1):
        steps = [m[t] - m[t - 1] for t in range(1, n + 1)]
        if any((abs(s) != 1) if t in changes else s for t, s in zip(range(1, n + 1), steps)):
            continue
        crossed = [0] * (D + 1)
        for t in range(1, n + 1):
            if m[t] != m[t - 1]:
                crossed[max(m[t], m[t - 1])] += 1
        if max(crossed) <= H:
            brute.add(m)
    assert set(walks(F, D, H)) == brute and len(list(walks(F, D, H))) == len(brute)


def test_float_rows_are_the_exact_rows_rounded():
    """The search's float rows only guide HiGHS (every verdict is then checked exactly): they are
    the exact rows to within a few ulps."""
    c = (Fraction(-1, 2), Fraction(3), Fraction(7, 3))
    m = (0, 1, 2, 1, 1, 0)
    basis = _basis(5, c)
    fast, exact = _float_rows(basis.K_float, m, 2), float_matrix(_Rows(basis.K, m, 2))
    assert np.allclose(fast, exact, rtol=4e-16, atol=0) and fast.shape == exact.shape
    assert list(_rows(5, c, m, 2)) == rebuilt_rows(5, c, m, 2)


@pytest.mark.parametrize("n, H", [(5, 3), (9, 4), (12, 12), (12, 13)])
def test_basis_spans_the_head_rows_exactly(n, H):
    """Every original head row is its K-row times M_S (so a (v, ρ) solution or certificate is one
    in (a, b, ρ)); K is the identity at its nodes."""
    c = [Fraction(-1, 2), *(Fraction(h) for h in range(1, H))]
    basis = _basis(n, c)
    r = len(basis.K[0])
    assert r == min(n + 1, H + 1)
    for t in range(n + 1):
        original = [Fraction(1)] + [1 / (n + ch * t) for ch in c]
        spanned = [
            sum(basis.K[t][i] * Fraction(int(basis.M_S[i, h].p), int(basis.M_S[i, h].q))
                for i in range(r))
            for h in range(H + 1)
        ]  # fmt: skip
        assert spanned == original
    assert sorted(row for row in basis.K if sum(x != 0 for x in row) == 1 and 1 in row) == sorted(
        tuple(Fraction(int(i == k)) for i in range(r)) for k in range(r)
    )


@pytest.mark.parametrize("n", [11, 14])
def test_ill_conditioned_cells_are_decided(n):
    """D = 1, H = n: the 1/(n + c·t) columns have condition numbers ~10¹⁷ (HiGHS called every
    member infeasible and no certificate existed: the cell was undecided). In the basis's
    coordinates a model is found and certified exactly."""
    r = value_dimension_one(symmetric_values("xor", n), 1, n)
    assert r.verdict == "d = 1 found" and r.found.certificate.certified


def test_a_falsified_certificate_fails_its_check():
    r = value_dimension_one(symmetric_values("xor", 12), 4, 3)
    ref = r.refutations[0]
    rows = _rows(12, ref.denominators, ref.walk, 4)
    assert check_gordan(rows, ref.support, ref.y)
    bad = (ref.y[0] * 2,) + ref.y[1:]
    assert not check_gordan(rows, ref.support, bad)


def test_bad_input_is_refused():
    with pytest.raises(InputError, match="Theorem 2"):
        value_dimension_one(symmetric_values("xor", 8), 1, 3)
    with pytest.raises(InputError, match="> −1"):
        value_dimension_one(symmetric_values("xor", 4), 2, 2, grid=[Fraction(-1), Fraction(1)])
    with pytest.raises(InputError, match="root walks .* allowed up to 20,000"):
        value_dimension_one(symmetric_values("xor", 40), 4, 10)
    with pytest.raises(InputError, match="systems; allowed up to 200,000"):
        grid = [Fraction(k) for k in range(1, 33)]
        value_dimension_one(symmetric_values("xor", 16), 2, 8, grid=grid)
    with pytest.raises(InputError, match="n must be ≤ 64"):
        minimal_dimension_one("xor", 65, 1, 65)
    assert sign_changes(symmetric_values("xor", 12)) == 12


def test_mirrored_walks_are_decided_like_their_mirror():
    """The search decides a walk's mirror D − m once and carries the certificate over (rows
    (t, j) ↦ (t, D + 1 − j)); deciding the mirrored walk directly agrees, and both re-check."""
    r = value_dimension_one(symmetric_values("mod:3", 12), 2, 4)
    assert r.verdict == "d = 1 refuted in the family"
    walk_set = {ref.walk for ref in r.refutations}
    pairs = [ref for ref in r.refutations if tuple(2 - x for x in ref.walk) in walk_set]
    assert pairs
    for ref in pairs[:6]:
        basis = _basis(12, ref.denominators)
        _, direct = _member(symmetric_values("mod:3", 12), 12, ref.denominators, basis, ref.walk, 2)
        assert direct is not None
        assert check_gordan(rebuilt_rows(12, ref.denominators, ref.walk, 2), ref.support, ref.y)
