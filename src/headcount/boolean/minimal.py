"""Exact minimal models for symmetric Boolean functions: does value dimension d = 1 suffice for H
heads with a degree-D readout? Found models are certified exactly on all 2^n inputs; "none" is
backed by an exact infeasibility certificate for every member of a stated finite family.

    value_dimension_one(F, D, H, grid=default_grid(H)) -> DimensionOne

**Every d = 1 model.** A head outputs a + b/(n + c·t) with c = w_1/w_0 − 1 > −1 (Lemma 9, read
backwards), so H heads give z(t) = a + Σ_h b_h/(n + c_h·t). A readout of degree ≤ D has the sign
of γ·Π_{j=1..D} (z − ρ_j) on the values z(t), with γ = ±1 and real roots ρ_j (complex roots do not
change signs; missing roots can be put above every z(t)). With m(t) = #{j : ρ_j < z(t)}, the
model is right at t iff γ·(−1)^(D − m(t)) = F(t).

**The walks.** z(t) − ρ is (P(t) − ρ·Q(t))/Q(t) with Q = Π_h (n + c_h·t) > 0 on [0, n] and P of
degree ≤ H, so z crosses each level at most H times on [0, n]. F changes sign T times; each change
needs an odd step of m, every other step is even, and Σ|Δm| ≤ D·H. For D·H < T + 2 (the map's
D·H = T and T + 1) parity forces Σ|Δm| = T: m moves by ±1 exactly at the sign changes of F and
stays put elsewhere, and crosses each level at most H times. `walks` lists every such m; for other
D·H it lists only these ±1 walks, and the family says so.

**The family.** For fixed denominators c = (c_1..c_H) and a walk m the conditions are a system of
strict linear inequalities in (a, b_1..b_H, ρ_1..ρ_D):

    σ_{t,j}·(a + Σ_h b_h/(n + c_h·t) − ρ_j) > 0,   σ_{t,j} = +1 if j ≤ m(t) else −1.

HiGHS decides each system. A feasible one is rounded to rationals and the model (Lemma 9 heads,
readout γ·Π(z − ρ_j)) certified exactly on t = 0..n. An infeasible one gets Gordan's certificate,
made exact: y ≥ 0, y ≠ 0 with Σ_k y_k·row_k = 0 in rationals (the rows of the HiGHS solution's
support, solved and checked in python-flint). The family searched is: every set of H distinct
denominators from `grid` (repeated c's merge into fewer heads, so they are covered), and every
walk. "None in the family" means every member has its certificate; it says nothing beyond it.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import flint
import numpy as np

from headcount.boolean.certification import BooleanCertificate, certify_boolean_model
from headcount.boolean.construction import lemma9_head
from headcount.boolean.model import BooleanLayer, Readout
from headcount.boolean.model_file import save_boolean
from headcount.boolean.task import check_values, function_and_label, sign_changes
from headcount.common.errors import InputError, param
from headcount.common.validate import check_int
from headcount.core.numbers import (
    check_gordan,
    gordan_certificate,
    solve_rational,
    strict_solution,
)

MAX_MEMBERS = 200_000  # (denominator set, walk) systems one search may decide
MAX_WALKS = 20_000  # walks held at once (each a tuple of n + 1 levels)


def default_grid(H: int) -> tuple[Fraction, ...]:
    """The denominators searched by default: −1/2, 1/2 and 1..max(4, H + 2) — a pole beyond n,
    and poles at −n/c before 0 — so H distinct values always exist."""
    return (Fraction(-1, 2), Fraction(1, 2), *(Fraction(c) for c in range(1, max(4, H + 2) + 1)))


def family_size(walk_count: int, grid_size: int, H: int) -> int:
    """(denominator set, walk) systems in the family: every min(H, |grid|) grid values × walks."""
    return walk_count * math.comb(grid_size, min(H, grid_size))


def count_walks(F: Sequence[int], D: int, H: int) -> int:
    """How many walks there are, up to MAX_WALKS + 1 (counting stops there)."""
    return sum(1 for _ in itertools.islice(walks(F, D, H), MAX_WALKS + 1))


def walks(F: Sequence[int], D: int, H: int) -> Iterator[tuple[int, ...]]:
    """Every m(0..n) ∈ {0..D}^(n+1) that moves by ±1 exactly where F changes sign, stays put
    elsewhere and crosses each level j (between m = j−1 and j) at most H times."""
    changes = [t for t in range(1, len(F)) if F[t] != F[t - 1]]

    def extend(m: list[int], k: int, crossed: list[int]) -> Iterator[tuple[int, ...]]:
        if k == len(changes):
            yield tuple(_expand(m, changes, len(F)))
            return
        for step in (-1, 1):
            nxt = m[-1] + step
            level = max(m[-1], nxt)  # crossing between m and m ± 1 is level max(m, m ± 1)
            if 0 <= nxt <= D and crossed[level] < H:
                crossed[level] += 1
                yield from extend(m + [nxt], k + 1, crossed)
                crossed[level] -= 1

    for start in range(D + 1):
        yield from extend([start], 0, [0] * (D + 1))


def _expand(levels: list[int], changes: list[int], length: int) -> list[int]:
    """The walk per t from its value after each change."""
    out, k = [], 0
    for t in range(length):
        if k < len(changes) and t == changes[k]:
            k += 1
        out.append(levels[k])
    return out


def _rows(n: int, c: Sequence[Fraction], m: Sequence[int], D: int) -> _Rows:
    """The strict system's rows over (a, b_1..b_H, ρ_1..ρ_D): σ·(1, 1/(n + c_h·t)…, −e_j)."""
    return _Rows(_heads(n, c), m, D)


def _heads(n: int, c: Sequence[Fraction]) -> tuple[tuple[Fraction, ...], ...]:
    """(1, 1/(n + c_h·t)…) for t = 0..n: the heads' part of each row."""
    return tuple((Fraction(1), *(1 / (n + ch * t) for ch in c)) for t in range(n + 1))


class _Rows(Sequence):
    """Rows σ_{t,j}·(heads[t], −e_j), row t·D + j − 1 for t = 0..n, j = 1..D (σ = +1 iff
    j ≤ m(t)), each built exactly when read: a certificate reads only its support's."""

    def __init__(self, heads: Sequence[Sequence[Fraction]], m: Sequence[int], D: int):
        self.heads, self.m, self.D = heads, m, D

    def __len__(self) -> int:
        return len(self.m) * self.D

    def __getitem__(self, k):  # type: ignore[override]
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        if not 0 <= k < len(self):
            raise IndexError(k)
        t, j = divmod(k, self.D)
        sigma = 1 if j < self.m[t] else -1
        row = [*self.heads[t], *(Fraction(-1 if i == j else 0) for i in range(self.D))]
        return [x if sigma == 1 else -x for x in row]


def _mirror(m: Sequence[int], D: int) -> tuple[int, ...]:
    """The walk of (−a, −b, −ρ reversed): z ↦ −z swaps "above root j" and "below root D+1−j"."""
    return tuple(D - level for level in m)


def _spread(n: int) -> list[int]:
    """t = 0..n ordered farthest point first (0, n, n/2, …): interpolation nodes spread out."""
    order = [0, n] if n else [0]
    while len(order) < n + 1:
        order.append(max(range(n + 1), key=lambda t: (min(abs(t - s) for s in order), -t)))
    return order


@dataclass(frozen=True)
class _Basis:
    """The values z(0..n) of a + Σ_h b_h/(n + c_h·t), a space of dimension r, parametrised by
    its values v at r nodes: z(t) = K[t]·v. The 1/(n + c_h·t) columns are nearly collinear
    (condition numbers 10¹¹–10¹⁸ by n = 8–14, where HiGHS calls feasible systems infeasible);
    K is the exact RREF of their span, well conditioned. A solution or certificate in (v, ρ) is
    one in (a, b, ρ): each original row is the K-row times the fixed matrix diag(M_S, I)."""

    K: tuple[tuple[Fraction, ...], ...]  # [n + 1, r]
    heads: tuple[tuple[Fraction, ...], ...]  # [n + 1, H + 1] the original (1, 1/(n + c_h·t)…)
    M_S: flint.fmpq_mat  # [r, H + 1] the original head rows at the nodes
    K_float: np.ndarray  # [n + 1, r]


def _basis(n: int, c: Sequence[Fraction]) -> _Basis:
    order = _spread(n)
    MT = flint.fmpq_mat(len(c) + 1, n + 1)  # [H + 1, n + 1] columns in `order`
    for col, t in enumerate(order):
        MT[0, col] = 1
        for h, ch in enumerate(c):
            MT[h + 1, col] = 1 / (n + flint.fmpq(ch.numerator, ch.denominator) * t)
    R, r = MT.rref()
    K = [[Fraction(0)] * r for _ in range(n + 1)]
    nodes = []
    for i in range(r):
        lead = next(col for col in range(n + 1) if R[i, col] != 0)
        nodes.append(order[lead])
        for col, t in enumerate(order):
            K[t][i] = Fraction(int(R[i, col].p), int(R[i, col].q))
    M_S = flint.fmpq_mat(r, len(c) + 1)
    for i, t in enumerate(nodes):
        for h in range(len(c) + 1):
            M_S[i, h] = MT[h, order.index(t)]
    K_float = np.array([[float(x) for x in row] for row in K])
    return _Basis(tuple(tuple(row) for row in K), _heads(n, c), M_S, K_float)


@dataclass(frozen=True)
class Refutation:
    """Gordan's certificate for one member: y ≥ 0 (rationals, on the rows listed) with
    Σ y_k·row_k = 0."""

    denominators: tuple[Fraction, ...]
    walk: tuple[int, ...]
    support: tuple[int, ...]  # row indices (t·D + j − 1)
    y: tuple[Fraction, ...]


@dataclass(frozen=True)
class Found:
    """A d = 1 model: its denominators, walk, a, b, roots, γ, and its exact certificate."""

    denominators: tuple[Fraction, ...]
    walk: tuple[int, ...]
    a: Fraction
    b: tuple[Fraction, ...]
    roots: tuple[Fraction, ...]
    gamma: int
    layer: BooleanLayer
    readout: Readout
    certificate: BooleanCertificate


def _float_rows(heads: np.ndarray, m: Sequence[int], D: int) -> np.ndarray:
    """_Rows in float64, built without fractions (the search's fast path; every verdict is
    then checked in exact rows)."""
    j = np.arange(1, D + 1)
    sigma = np.where(j[None, :] <= np.asarray(m)[:, None], 1.0, -1.0)  # [t, j]
    A = np.concatenate([np.repeat(heads, D, axis=0), -np.tile(np.eye(D), (len(m), 1))], axis=1)
    return A * sigma.reshape(-1, 1)


def _rational(x: np.ndarray, rows: list[list[Fraction]]) -> tuple[Fraction, ...] | None:
    """x rounded to rationals that still satisfy every strict row exactly (None: none tried
    does)."""
    for limit in (1 << 20, 1 << 40, None):
        q = tuple(
            Fraction(float(v)) if limit is None else Fraction(float(v)).limit_denominator(limit)
            for v in x
        )
        if all(sum(r * v for r, v in zip(row, q)) > 0 for row in rows):
            return q
    return None


def _model(n: int, c, x: tuple[Fraction, ...], D: int, gamma: int) -> tuple[BooleanLayer, Readout]:
    """The d = 1 model of a solution: Lemma 9 heads a/H + b_h/(n + c_h·t), readout γ·Π(z − ρ_j)."""
    H = len(c)
    a, b, roots = x[0], x[1 : H + 1], x[H + 1 :]
    heads = [lemma9_head([a / H], [bh], ch, n) for bh, ch in zip(b, c)]
    poly = flint.fmpq_poly([gamma])
    for r in roots:
        poly *= flint.fmpq_poly([-flint.fmpq(r.numerator, r.denominator), 1])
    terms = {(k,): poly[k] for k in range(poly.degree() + 1)}
    return BooleanLayer(tuple(heads)), Readout(terms, degree=D, dim=1)


@dataclass(frozen=True)
class DimensionOne:
    """value_dimension_one's answer: `found` (a certified d = 1 model), or every member of the
    family refuted (`refutations`, each with its exact certificate), or `undecided` members (a
    feasible system whose rounding failed the exact check: neither found nor refuted)."""

    F: tuple[int, ...]
    D: int
    H: int
    T: int
    grid: tuple[Fraction, ...]
    members: int  # (denominator set, walk) systems in the family
    walk_count: int
    found: Found | None
    refutations: tuple[Refutation, ...]
    undecided: int

    @property
    def verdict(self) -> str:
        if self.found is not None:
            return "d = 1 found"
        return "d = 1 refuted in the family" if not self.undecided else "undecided"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "n": len(self.F) - 1,
            "D": self.D,
            "H": self.H,
            "T": self.T,
            "family": {
                "denominators": [str(c) for c in self.grid],
                "sets": f"every {min(self.H, len(self.grid))} distinct values of the grid",
                "walks": "±1 at each sign change of F, each level crossed ≤ H times",
                "members": self.members,
                "walk_count": self.walk_count,
            },
            "verdict": self.verdict,
            "undecided": self.undecided,
        }
        if self.found is not None:
            f = self.found
            out["found"] = {
                "denominators": [str(c) for c in f.denominators],
                "walk": list(f.walk),
                "a": str(f.a),
                "b": [str(v) for v in f.b],
                "roots": [str(v) for v in f.roots],
                "gamma": f.gamma,
                "certificate": f.certificate.to_json(),
            }
        out["refutations"] = [
            {
                "denominators": [str(c) for c in r.denominators],
                "walk": list(r.walk),
                "support": list(r.support),
                "y": [str(v) for v in r.y],
            }
            for r in self.refutations
        ]
        return out


def _member(F, n, c, basis: _Basis, m, D) -> tuple[Found | None, Refutation | None]:
    """Decide one (denominators, walk) system in the basis's coordinates (v, ρ): a certificate
    (checked on the original rows), a certified model, or neither. Gordan's LP runs first:
    most members of a search are infeasible."""
    A = _float_rows(basis.K_float, m, D)
    rows = _Rows(basis.K, m, D)
    cert = gordan_certificate(rows, A)
    if cert is not None:
        if not check_gordan(_Rows(basis.heads, m, D), *cert):
            return None, None
        return None, Refutation(tuple(c), m, *cert)
    x = strict_solution(A)
    q = None if x is None else _rational(x, rows)
    r = len(basis.K[0])
    ab = None if q is None else solve_rational(basis.M_S, _column(q[:r]))
    if ab is None:
        return None, None
    a_b = [Fraction(int(ab[i, 0].p), int(ab[i, 0].q)) for i in range(ab.nrows())]
    gamma = F[0] * (-1) ** (D - m[0])
    layer, readout = _model(n, c, (*a_b, *q[r:]), D, gamma)
    cert = certify_boolean_model(layer, readout, F)
    if not cert.certified:
        return None, None
    return Found(tuple(c), m, a_b[0], tuple(a_b[1:]), q[r:], gamma, layer, readout, cert), None


def _mirrored(ref: Refutation, basis: _Basis, D: int) -> Refutation | None:
    """The certificate of walk m carried to walk D − m (row (t, j) ↦ (t, D + 1 − j), same y),
    checked exactly on the mirrored walk's original rows."""
    pairs = sorted(((k // D) * D + D - 1 - k % D, y) for k, y in zip(ref.support, ref.y))
    support, y = tuple(k for k, _ in pairs), tuple(v for _, v in pairs)
    walk = _mirror(ref.walk, D)
    if not check_gordan(_Rows(basis.heads, walk, D), support, y):
        return None
    return Refutation(ref.denominators, walk, support, y)


def _column(values: Sequence[Fraction]) -> flint.fmpq_mat:
    col = flint.fmpq_mat(len(values), 1)
    for i, v in enumerate(values):
        col[i, 0] = flint.fmpq(v.numerator, v.denominator)
    return col


def value_dimension_one(
    F: Sequence[int], D: int, H: int, grid: Sequence[Fraction] | None = None
) -> DimensionOne:
    """Search the family (module docstring) for an exact d = 1 model of F with H heads and a
    degree-D readout; stop at the first certified one, else refute every member exactly."""
    F = check_values(F)
    n, T = len(F) - 1, sign_changes(F)
    grid = tuple(sorted({Fraction(c) for c in (default_grid(H) if grid is None else grid)}))
    if any(c <= -1 for c in grid) or not grid:
        raise InputError("every denominator c of the grid must be > −1 (a head has c = w₁/w₀ − 1)")
    if D * H < T:
        raise InputError(f"D·H = {D * H} < T = {T}: no model exists at any d (Theorem 2)")
    all_walks = list(itertools.islice(walks(F, D, H), MAX_WALKS + 1))
    size = min(H, len(grid))
    members = family_size(len(all_walks), len(grid), H)  # counted before any set is listed
    if len(all_walks) > MAX_WALKS:
        raise InputError(
            f"the readout has more than {MAX_WALKS:,} root walks at n = {n}, D = {D}, H = {H}; "
            f"allowed up to {MAX_WALKS:,}: use a smaller n, D or H"
        )
    if members > MAX_MEMBERS:
        raise InputError(
            f"the family has {members:,} (denominator set, walk) systems; allowed up to "
            f"{MAX_MEMBERS:,}: use a smaller grid, D or H"
        )
    refutations, undecided = [], 0
    for c in itertools.combinations(grid, size):
        basis = _basis(n, c)
        decided: dict[tuple[int, ...], Refutation] = {}
        for m in sorted(all_walks):  # a walk's mirror, when smaller, was decided before it
            if _mirror(m, D) in decided:
                found, refuted = None, _mirrored(decided[_mirror(m, D)], basis, D)
            else:
                found, refuted = _member(F, n, c, basis, m, D)
                if refuted is not None:
                    decided[m] = refuted
            if found is not None:
                return DimensionOne(F, D, H, T, grid, members, len(all_walks), found, (), 0)
            if refuted is None:
                undecided += 1
            else:
                refutations.append(refuted)
    return DimensionOne(
        F, D, H, T, grid, members, len(all_walks), None, tuple(refutations), undecided
    )


MAX_MINIMAL_N = 64  # bits of the search's functions (its systems have (n + 1)·D rows)
MAX_GRID = 32


def parse_grid(text: str) -> tuple[Fraction, ...]:
    """ "c1,c2,…" (rationals p or p/q, each > −1, at most MAX_GRID) as the search's denominators."""
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    if not parts or len(parts) > MAX_GRID:
        raise InputError(f"{param('grid')} needs 1..{MAX_GRID} comma-separated rationals")
    try:
        grid = tuple(Fraction(p) for p in parts)
    except (ValueError, ZeroDivisionError):
        raise InputError(
            f"{param('grid')} {text[:60]!r}: write rationals p or p/q separated by commas"
        ) from None
    if any(c <= -1 or max(abs(c.numerator), c.denominator) > 10**6 for c in grid):
        raise InputError(f"{param('grid')}: every c must be > −1 with |p|, q ≤ 10^6")
    return grid


def minimal_dimension_one(
    function: str | Sequence[int],
    n: int,
    D: int,
    H: int,
    grid: Sequence[Fraction] | None = None,
    out: str | os.PathLike | None = None,
) -> DimensionOne:
    """value_dimension_one for a function by name (or its values F) on n bits; the found model is
    saved to `out` when given (nothing is written otherwise)."""
    check_int("n", n, low=1, high=MAX_MINIMAL_N)
    check_int("degree", D, low=1, high=MAX_MINIMAL_N)
    check_int("heads", H, low=1, high=MAX_MINIMAL_N)
    F, label = function_and_label(function, n)
    result = value_dimension_one(F, D, H, grid)
    if out is not None and result.found is not None:
        info = {"function": label, "n": n, "route": "minimal d = 1"}
        save_boolean(result.found.layer, result.found.readout, out, info)
    return result
