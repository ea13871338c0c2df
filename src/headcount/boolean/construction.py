"""Theorem 3 (construction): for symmetric f with threshold degree T and any D·H ≥ T, H heads with a
small value dimension d and a homogeneous readout (spec/boolean.md, Lemmas 9–14).

- ``lemma9_head``: one head computing a + b/(n + c·t).
- ``lemma11_layer``: H heads (c_h = h) realizing (P_1(t), …, P_d(t))/Q_0(t), Q_0 = Π_h (n + h·t),
  for any P_i of degree ≤ H; all α, β exact rationals.
- ``factorization_route`` (Lemma 12): F's sign polynomial c·Π_j (t − r_j) split into groups of ≤ H
  roots, g = c·z_1⋯z_k. We use k = max{1, ⌈T/H⌉} balanced groups (≤ D), so d = k, where the spec
  says D groups; that is the same construction with empty groups dropped, and never larger.
- ``additive_basis_route`` (Lemma 13): P_i = t^{β_i} for β_i ∈ B, P_d = 1, g homogeneous of degree D
  with g(P(t)) = c·Π_j (t − r_j); d = |B| + 1.
- ``construct`` takes the smallest d among the factorization, Lemma 14's basis, a given basis and
  the smallest basis from the exact search (bounded by the best d found so far and SEARCH_SECONDS).
  Ties go to factorization (smaller numbers).

Sign convention: c = F(0)·(−1)^T, so that c·Π_j (t − r_j) has the sign of F at every t = 0..n.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flint import fmpq, fmpq_poly

from headcount.boolean.bases import basis_range, lemma14_basis, representations
from headcount.boolean.lower_bound import check_feasible
from headcount.boolean.model import BooleanHead, BooleanLayer, Readout, to_fmpq
from headcount.boolean.search import smallest_basis
from headcount.boolean.task import change_points, check_values
from headcount.common.errors import InputError
from headcount.common.validate import check_choice, check_int

ROUTES = ("factorization", "additive-basis")


def lemma9_head(a: Sequence, b: Sequence, c, n: int) -> BooleanHead:
    """Head with output a + b/(n + c·t): w0 = 1, w1 = 1 + c, v0 = a + b/n, v1 = a + b/(n(1 + c))."""
    c = to_fmpq(c)
    if c <= -1:
        raise InputError(f"Lemma 9 needs c > −1, got c = {c}")
    a, b = [to_fmpq(x) for x in a], [to_fmpq(x) for x in b]
    if len(a) != len(b):
        raise InputError(f"a and b need the same dimension, got {len(a)} and {len(b)}")
    return BooleanHead(
        fmpq(1),
        1 + c,
        tuple(x + y / n for x, y in zip(a, b)),
        tuple(x + y / (n * (1 + c)) for x, y in zip(a, b)),
    )


def _lemma11_polys(polys: Sequence, n: int, H: int) -> list[fmpq_poly]:
    """The polynomials as fmpq_poly, after checking n, H ≥ 1 and every degree ≤ H (InputError)."""
    check_int("n", n, low=1)
    check_int("heads", H, low=1)
    polys = [fmpq_poly(p) for p in polys]
    if not polys or any(p.degree() > H for p in polys):
        raise InputError(f"Lemma 11 needs at least one polynomial, each of degree ≤ H = {H}")
    return polys


def _q_h_at_root(n: int, H: int, h: int) -> fmpq:
    """Q_h(−n/h) = Π_{h' ≠ h} (n + h'·(−n/h)), the Lemma 10 basis polynomial at its own root."""
    x, value = fmpq(-n, h), fmpq(1)
    for h2 in range(1, H + 1):
        if h2 != h:
            value *= n + h2 * x
    return value


def lemma11_layer(polys: Sequence[fmpq_poly], n: int, H: int) -> BooleanLayer:
    """H heads whose summed output is (P_1(t), …, P_d(t))/Q_0(t) with Q_0 = Π_{h=1..H} (n + h·t).

    P_i = α_i Q_0 + Σ_h β_i^h Q_h (Lemma 10 basis, Q_h = Q_0/(n + h·t)) with α_i = [t^H]P_i / H! and
    β_i^h = P_i(−n/h)/Q_h(−n/h); head h is Lemma 9 with a = α/H, b = β^h, c = h."""
    polys = _lemma11_polys(polys, n, H)
    lead = fmpq(math.factorial(H))
    alpha = [(p.coeffs()[H] if p.degree() == H else fmpq(0)) / lead for p in polys]
    heads = []
    for h in range(1, H + 1):
        Qh = _q_h_at_root(n, H, h)
        beta = [p(fmpq(-n, h)) / Qh for p in polys]
        heads.append(lemma9_head([a / H for a in alpha], beta, h, n))
    return BooleanLayer(tuple(heads))


def sign_polynomial_factors(F: Sequence[int]) -> tuple[int, list[fmpq]]:
    """(c, roots): c·Π_j (t − r_j) has the sign of F at every t = 0..n."""
    F = check_values(F)
    roots = change_points(F)
    return F[0] * (-1) ** len(roots), roots


def _product(roots: Sequence[fmpq], c=1) -> fmpq_poly:
    """c·Π (t − r) over the roots."""
    p = fmpq_poly([c])
    for r in roots:
        p *= fmpq_poly([-r, 1])
    return p


def factorization_route(F: Sequence[int], n: int, D: int, H: int) -> tuple[BooleanLayer, Readout]:
    """Lemma 12: k = max{1, ⌈T/H⌉} ≤ D groups of ≤ H roots; P_i = Π_{group i}(t − r_j); g =
    c·z_1⋯z_k."""
    c, roots = sign_polynomial_factors(F)
    T = len(roots)
    check_feasible(T, D, H, n=n)
    k = max(1, -(-T // H))
    sizes = [T // k + (i < T % k) for i in range(k)]
    starts = [sum(sizes[:i]) for i in range(k)]
    polys = [_product(roots[start : start + size]) for start, size in zip(starts, sizes)]
    return lemma11_layer(polys, n, H), Readout({(1,) * k: fmpq(c)}, D, k)


def _check_basis_for(B: Sequence[int], D: int, H: int, T: int) -> list[int]:
    B = sorted(set(int(b) for b in B))
    if not B or B[0] < 1 or B[-1] > H:
        raise InputError(f"the basis must be a nonempty subset of 1..H = 1..{H}, got {B}")
    if basis_range(B, D) < T:
        raise InputError(
            f"basis {B} has range {basis_range(B, D)} < threshold degree {T} with D = {D}"
        )
    return B


def additive_basis_route(
    F: Sequence[int], n: int, D: int, H: int, B: Sequence[int]
) -> tuple[BooleanLayer, Readout]:
    """Lemma 13 with basis B ⊆ [H] of range ≥ T: P_i = t^{β_i}, P_d = 1,
    g = Σ_ℓ a_ℓ Π_i z_i^{c_ℓ,i} z_d^{D − Σ_i c_ℓ,i} where Σ_ℓ a_ℓ t^ℓ = c·Π_j (t − r_j)."""
    c, roots = sign_polynomial_factors(F)
    T = len(roots)
    check_feasible(T, D, H, n=n)
    B = _check_basis_for(B, D, H, T)
    d = len(B) + 1
    index = {b: i for i, b in enumerate(B)}
    terms = {}
    coeffs = _product(roots, c).coeffs()
    reps = representations(len(coeffs) - 1, B, D)  # one DP for every ell (was one per ell: T² work)
    for ell, a in enumerate(coeffs):
        if a == 0:
            continue
        K = [0] * d
        for b, cnt in reps[ell].items():
            K[index[b]] = cnt
        K[-1] = D - sum(K)
        terms[tuple(K)] = a
    polys = [fmpq_poly([0] * b + [1]) for b in B] + [fmpq_poly([1])]
    return lemma11_layer(polys, n, H), Readout(terms, D, d)


SEARCH_SECONDS = 10.0
"""CPU-time limit of the exact smallest-basis search inside ``construct`` (then the other routes
win): CPU time, so that how busy the machine is never changes which basis a construction gets."""


def _search_basis(D: int, H: int, T: int, max_size: int) -> list[int] | None:
    """The smallest basis with at most ``max_size`` elements, or None (none, or the search timed
    out). Bounding the size by what the other routes already achieve keeps the search from proving
    minimality where it could not change the chosen d."""
    if max_size < 1:
        return None
    try:
        return smallest_basis(D, H, T, SEARCH_SECONDS, max_size=max_size)
    except ValueError:  # outside the search's supported sizes: fall back to the other routes
        return None


@dataclass(frozen=True)
class Construction:
    """A Theorem 3 model: its layer and readout, the route that built it and its value dimension
    d."""

    layer: BooleanLayer
    readout: Readout
    route: str
    dim: int


@dataclass(frozen=True)
class _Candidate:
    """A route with the d it would give; ``order`` breaks ties (factorization first, then smaller
    bases)."""

    dim: int
    order: int
    route: str
    basis: tuple[int, ...] = ()

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.dim, self.order, len(self.basis))


def _basis_candidates(bases, D: int, H: int, T: int) -> list[_Candidate]:
    """The bases (None skipped) that lie in 1..H and reach T with D summands, as candidates."""
    out = []
    for B in bases:
        if B and max(B) <= H and min(B) >= 1 and basis_range(B, D) >= T:
            out.append(_Candidate(len(set(B)) + 1, 1, "additive-basis", tuple(sorted(set(B)))))
    return out


def _candidates(
    T: int, D: int, H: int, basis, route: str | None, use_search: bool
) -> list[_Candidate]:
    """Every route allowed by ``route`` with the d it gives (the search only tries to beat the
    others)."""
    cands = (
        [_Candidate(max(1, -(-T // H)), 0, "factorization")]
        if route in (None, "factorization")
        else []
    )
    if route not in (None, "additive-basis"):
        return cands
    free = (
        route is None or basis is None
    )  # Lemma 14 and the search compete unless a forced basis is given
    bases = ([list(basis)] if basis is not None else []) + ([lemma14_basis(D, H)] if free else [])
    cands += _basis_candidates(bases, D, H, T)
    if use_search and free:
        best = min(
            (c.dim for c in cands), default=D * H + 2
        )  # a basis of k elements gives d = k + 1
        cands += _basis_candidates([_search_basis(D, H, T, best - 2)], D, H, T)
    return cands


def construct(
    F: Sequence[int],
    n: int,
    D: int,
    H: int,
    basis: Sequence[int] | None = None,
    route: str | None = None,
    use_search: bool = True,
) -> Construction:
    """The Theorem 3 model for F with D·H ≥ T, by the route with the smallest d.

    ``route`` forces "factorization" or "additive-basis"; ``basis`` adds a candidate basis (or is
    the one used when the additive-basis route is forced); ``use_search`` allows the optional exact
    search."""
    F = check_values(F)
    if len(F) != n + 1:
        raise InputError(f"F needs n + 1 = {n + 1} values, got {len(F)}")
    T = len(change_points(F))
    check_feasible(T, D, H, n=n)
    if route is not None:
        check_choice("route", route, ROUTES)
    cands = _candidates(T, D, H, basis, route, use_search)
    if not cands:
        raise InputError(
            f"no additive basis of 1..{H} reaches {T} with D = {D}; use the factorization route"
        )
    best = min(cands, key=lambda c: c.key)
    if best.route == "factorization":
        layer, readout = factorization_route(F, n, D, H)
    else:
        layer, readout = additive_basis_route(F, n, D, H, best.basis)
    return Construction(layer, readout, best.route, best.dim)


_READOUTS = {
    "factorization": "sign of g(z) = c·z_1⋯z_k: coordinate i of the layer output is P_i(t)/Q_0(t) "
    "with "
    "P_i = Π_{j in group i} (t − r_j) over F's sign changes r_j (Lemma 12)",
    "additive-basis": "sign of g(z), homogeneous of degree D: coordinate i is t^{β_i}/Q_0(t) for "
    "the "
    "basis β, the last 1/Q_0(t), and g(P(t)) = c·Π_j (t − r_j) over F's sign changes r_j (Lemma "
    "13)",
}


def construction_roles(built: Construction, n: int) -> dict[str, Any]:
    """What each head of a Theorem 3 model (``construct``) does, as JSON (the zoo's roles file):
    head h is Lemma 9's head with c_h = w1/w0 − 1 = h (Lemma 11), one pole of the partial-fraction
    form of the layer output (P_1(t), …, P_d(t))/Q_0(t), Q_0 = Π_h (n + h·t), t = |x|; the readout
    is the sign of g."""
    check_int("n", n, 1)
    heads = []
    for h, head in enumerate(built.layer.heads):
        c = head.w1 / head.w0 - 1
        heads.append(
            {
                "layer": 0,
                "head": h,
                "role": "partial_fraction",
                "c": str(c),
                "w0": str(head.w0),
                "w1": str(head.w1),
                "mechanism": f"attends to the 1-bits with exp-weight w1 = {head.w1} against w0 = "
                f"{head.w0} "
                f"for 0-bits (scores log w_b), so it outputs a + b/(n + {c}·t) in each of the d = "
                f"{head.dim} value coordinates: the pole at t = −n/{c} of (P_1, …, P_d)/Q_0",
                "query": "none: the score depends on the key bit only (no positions)",
                "key": f"bit b ∈ {{0, 1}}: exp-weight w_b (w0 = {head.w0}, w1 = {head.w1}), exact "
                "rationals",
                "value": "v0 on 0-bits, v1 on 1-bits (exact rationals): a + b/n and a + b/(n(1 + "
                "c))",
            }
        )
    readout = built.readout
    terms = [{"exponent": list(K), "coefficient": str(a)} for K, a in sorted(readout.terms.items())]
    decoder = {
        "kind": "polynomial_sign",
        "route": built.route,
        "degree": readout.degree,
        "dim": readout.dim,
        "terms": terms,
        "description": _READOUTS[built.route],
    }
    return {"construction": built.route, "dim": built.dim, "heads": heads, "decoder": decoder}
