"""The rank of the position-only part of a floor-depth pointer head, within fixed feature families.

Problem. A layer-1 head in which query i points at the latest j < i with σ_j = σ_i (find(i) of
construction.py is 1 + this j) sees keys 0..i, and key i always matches its own token, so the
position-only score matrix G [n × n] must rank key i below every strictly earlier key: for every
query i ≥ 1 the pointer order G[i, i] < G[i, 0] < G[i, 1] < … < G[i, i − 1] (row 0 is free, and so
is every j > i). Token matching is a separate large term (β·[σ_j = σ_i], see the tests). We ask for
the smallest r such that G = Φ A Φᵀ holds for some A [r × r], with Φ [n × r] a fixed exact-rational
feature matrix (column a = feature a of the position, |Φ| ≤ 1):

* ``"poly"``: Chebyshev polynomials T_0..T_{r−1} at x_j = (2j − (n − 1))/(n − 1) (x = 0 for n =
  1): the span of the monomials j^0..j^{r−1}, well conditioned;
* ``"fourier"``: the constant 1, then cos(π a j/n), sin(π a j/n) for a = 1, 2, … until r columns,
  each rounded to the nearest multiple of 2^−40 (computed in ball arithmetic, so the rounding is the
  same on every platform): the family is these rounded, exact dyadic features.

Each gap G[i, hi] − G[i, lo] = Φ[i] A (Φ[hi] − Φ[lo])ᵀ is linear in vec(A) (row-major, A[a, b] at
a·r + b) with coefficient row Φ[i] ⊗ (Φ[hi] − Φ[lo]); `pointer_rows` lists them (the order is in
`gap_index`). With |A_ab| ≤ 1 the best margin is the LP m* = max_a min_c row_c·a, solved by HiGHS
and then certified exactly:

* lower bound (a strict solution): A rounded to multiples of 2^−40 and clipped to [−1, 1]; its
  margin, computed in rationals, is a lower bound on m* and, when > 0, proves that G exists.
* upper bound (the dual): for any y ≥ 0 with Σ y = 1, m ≤ yᵀM a ≤ Σ_ab |(Mᵀy)_ab|·|a_ab| ≤ Σ_ab
  |(Mᵀy)_ab| for every feasible a. HiGHS's dual, made exact (negatives dropped, renormalised to sum
  1 exactly), gives that bound with no fix-up; Mᵀy is Φᵀ W Φ with W[i, hi] += y_c, W[i, lo] −= y_c.
* infeasibility (Gordan's alternative): the strict system row_c·a > 0 has no solution iff some
  y ≥ 0, y ≠ 0 has Σ y_c row_c = 0 (were a a solution, 0 = Σ y_c row_c·a > 0). Then no G exists at
  any magnitude and m* = 0 exactly (core.numbers.gordan checks y). y is sought first on the last
  query's gaps alone (r columns: Σ y_k D_k = 0 with D_k = Φ[hi] − Φ[lo] lifts, as row_k =
  Φ[n − 1] ⊗ D_k); that decided all but 2 of the infeasible ranks measured (n ≤ 64), and the
  margin LP (r² columns, the slow part) is then skipped, so such a result has no dual. Else y is
  HiGHS's, made exact by projecting it onto the null space of its support's rows.

The shift lift (pointer_shift.py): where the rank-r span is shift invariant (poly at every r,
fourier at odd r), a solution of the last query's gaps alone, f of the offset j − i, orders every
query, so a strict A comes from an r-column LP over n − 1 rows instead of the r²-column one (its
margin is a lower bound on m*, not m*; `optimal=True` asks for m*). With last_query_gordan this
decides "poly" by the last query alone: r(n) = 1 + the least degree of a polynomial that rises on
n − 1 consecutive points and ends below its start. Measured with both certificates: r(n) = 6, 8,
11, 16, 23, 32, 46, 64 at n = 8, 16, …, 1024 — 2√n to within one (exactly 2√n at n = 4^m).

Nesting: the first r − 1 features at rank r are the rank-(r − 1) features (poly: T_0..T_{r−2};
fourier: the fixed column order 1, cos 1, sin 1, cos 2, …, each rounded alone), so an A at rank
r − 1, padded with zeros, is one at rank r: a Gordan certificate at r − 1 refutes every r' < r
too, and `pointer_rank_bounds` needs only the pair (r(n) − 1, r(n)).

The refutation as a program: `refuting_gap(result, A)` takes an infeasible result and ANY A at its
rank and returns a gap (query, lo, hi) of G = Φ A Φᵀ that is ≤ 0, found exactly on the Gordan
support (Σ y_k gap_k = 0 with every y_k > 0 leaves some gap_k ≤ 0).

"Within the family" means G ∈ span(Φ) ⊗ span(Φ): an infeasible rank proves only that no G with
rows and columns in these r features exists, not that no r-dimensional query/key embedding (any
O(r)-dimensional features of the position) gives the pointer order.

A verdict is never read off the float LP: strict = True only with a rationalised A whose exact
margin is > 0, strict = False only with an exact Gordan certificate. When HiGHS's optimum is
clearly positive (> MARGIN_TOL) but its rationalised A is not exactly strict, or the optimum is
≈ 0 but no Gordan certificate checks out, `search_pointer_rank` raises PointerRankError (no
verdict). `check_pointer_rank` re-verifies a result from scratch in exact arithmetic.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

import flint
import numpy as np
from scipy.optimize import linprog

from headcount.common.errors import InputError
from headcount.common.jsonable import JsonResult
from headcount.common.validate import check_int
from headcount.core.numbers.gordan import check_gordan, gordan_certificate
from headcount.induction.multihop.pointer_family import (
    FAMILIES,
    Certificate,
    Matrix,
    PointerRankError,
    PointerRows,
    check_family,
    exact_dual,
    fmpq_matrix,
    gap_index,
    margin_lp,
    pointer_features,
    pointer_rows,
    rationalise,
)
from headcount.induction.multihop.pointer_shift import shift_invariant, shift_solution

__all__ = [
    "FAMILIES",
    "METHODS",
    "PointerRank",
    "PointerRankError",
    "RankBounds",
    "check_family",
    "check_pointer_rank",
    "exact_margin",
    "gap_index",
    "minimal_pointer_rank",
    "pointer_features",
    "pointer_rank_bounds",
    "pointer_rows",
    "pointer_scores",
    "refuting_gap",
    "search_pointer_rank",
]

MARGIN_TOL = 1e-9  # an LP optimum above this must come with an exactly strict A (else: error)
# How a result was decided: the last query's Gordan certificate, the shift lift (pointer_shift),
# or the margin LP over all the gaps (the optimum m*, and its own certificates).
METHODS = ("last_query", "shift", "lp")


def pointer_scores(features: Matrix, solution: Matrix) -> flint.fmpq_mat:
    """G = Φ A Φᵀ [n × n], exactly."""
    phi = fmpq_matrix(features)
    return phi * fmpq_matrix(solution) * phi.transpose()


def exact_margin(features: Matrix, solution: Matrix) -> Fraction:
    """min over the gaps of G = Φ A Φᵀ, exactly (integers over one common denominator)."""
    n = len(features)
    num, den = pointer_scores(features, solution).numer_denom()
    vals = np.array([int(v) for v in num.entries()], dtype=object).reshape(n, n)
    query, lo, hi = gap_index(n)
    return Fraction(int(min(vals[query, hi] - vals[query, lo])), int(den))


def dual_bound(features: Matrix, dual: Certificate) -> Fraction:
    """Σ_ab |(Mᵀy)_ab| for the sparse y = dual (the upper bound on m* when y ≥ 0, Σ y = 1):
    Mᵀy as the r × r matrix Φᵀ W Φ, W[i, hi] += y_c and W[i, lo] −= y_c."""
    n = len(features)
    query, lo, hi = gap_index(n)
    w: dict[tuple[int, int], Fraction] = {}
    for k, v in zip(*dual):
        i = int(query[k])
        w[i, int(hi[k])] = w.get((i, int(hi[k])), Fraction(0)) + v
        w[i, int(lo[k])] = w.get((i, int(lo[k])), Fraction(0)) - v
    W = flint.fmpq_mat(n, n)
    for (i, j), v in w.items():
        W[i, j] = flint.fmpq(v.numerator, v.denominator)
    phi = fmpq_matrix(features)
    mty = phi.transpose() * W * phi
    return sum((abs(Fraction(int(x.p), int(x.q))) for x in mty.entries()), Fraction(0))


def project_on_support(
    rows: Sequence[Sequence[Fraction]], support: Sequence[int], y: np.ndarray
) -> Certificate | None:
    """The float y on `support`, projected exactly onto {Σ_k y_k row_k = 0} (the null space of
    the support's rows, from python-flint) and normalised to Σ y = 1; None unless every entry is
    ≥ 0. A projection, not a square solve: the support's rows are often dependent (the constant
    feature's differences vanish), so the null space may have several dimensions."""
    R = fmpq_matrix([rows[k] for k in support]).transpose()  # r² × |S|
    basis, dim = R.numer_denom()[0].nullspace()
    if dim == 0:
        return None
    N = flint.fmpq_mat(
        len(support), dim, [basis[i, j] for i in range(len(support)) for j in range(dim)]
    )
    target = flint.fmpq_mat(
        len(support), 1, [flint.fmpq(*float(y[k]).as_integer_ratio()) for k in support]
    )
    coef = (N.transpose() * N).solve(N.transpose() * target)
    exact = [Fraction(int(v.p), int(v.q)) for v in (N * coef).entries()]
    total = sum(exact, Fraction(0))
    if total <= 0 or any(v < 0 for v in exact):
        return None
    kept = [(k, v / total) for k, v in zip(support, exact) if v > 0]
    return tuple(k for k, _ in kept), tuple(v for _, v in kept)


def gordan_lp(M: np.ndarray, tol: float) -> np.ndarray | None:
    """HiGHS's y ≥ 0, Σ y = 1 with Mᵀy = 0 (core.numbers.gordan's LP), or None. M's columns are
    scaled to max 1 and its rows to norm 1 first (the same y work, rescaled: undone at the end),
    and the dual simplex gives a vertex, so a small support: at n = 128 the unscaled LP's supports
    were not exact."""
    col = np.abs(M).max(axis=0)
    scaled = M / np.where(col > 0, col, 1.0)
    norm = np.linalg.norm(scaled, axis=1)
    norm = np.where(norm > 0, norm, 1.0)
    scaled /= norm[:, None]
    k, width = M.shape
    res = linprog(
        np.zeros(k),
        A_eq=np.vstack([scaled.T, np.ones((1, k))]),
        b_eq=np.concatenate([np.zeros(width), [1.0]]),
        bounds=(0, None),
        method="highs-ds",
        options={"primal_feasibility_tolerance": tol, "dual_feasibility_tolerance": tol},
    )
    if res.status != 0:
        return None
    y = res.x / norm
    return y / y.sum()


def project_near(
    rows: Sequence[Sequence[Fraction]], ys: Iterable[np.ndarray | None]
) -> tuple[Certificate | None, tuple[int, ...]]:
    """The first float y in `ys` whose support, cut at a few thresholds, projects to an exact
    certificate (project_on_support); with the last support tried, for a caller's fallback."""
    support: tuple[int, ...] = ()
    for z in ys:
        if z is None or np.max(z) <= 0:
            continue
        for cut in (0.0, 1e-12, 1e-9, 1e-7, 1e-5):
            support = tuple(int(k) for k in np.flatnonzero(z > cut * np.max(z)))
            cert = project_on_support(rows, support, z)
            if cert is not None:
                return cert, support
        support = tuple(int(k) for k in np.flatnonzero(z > 0))
    return None, support


def last_query_gordan(rows: PointerRows) -> Certificate | None:
    """A Gordan certificate from the last query's gaps alone, lifted: there row_k = Φ[n − 1] ⊗ D_k
    (D_k = Φ[hi] − Φ[lo]), so Σ y_k D_k = 0 gives Σ y_k row_k = 0. That system has r columns and
    n − 1 rows, far better conditioned than the full one (r² columns). HiGHS's y (gordan_lp) is
    projected exactly on its support; failing that, core.numbers.gordan's gordan_certificate
    decides the rows of that support alone (on all n − 1 rows its exact-simplex fallback can run
    for minutes)."""
    phi = rows.features
    ks = np.flatnonzero(rows.query == len(phi) - 1)
    diffs = [[h - low for h, low in zip(phi[rows.hi[k]], phi[rows.lo[k]])] for k in ks]
    D = np.array([[float(v) for v in d] for d in diffs])
    found, support = project_near(diffs, (gordan_lp(D, tol) for tol in (1e-9, 1e-7)))
    if found is None and support:
        sub = gordan_certificate([diffs[k] for k in support])
        found = None if sub is None else (tuple(support[k] for k in sub[0]), sub[1])
    return None if found is None else (tuple(int(ks[k]) for k in found[0]), found[1])


def exact_gordan_near(rows: PointerRows, M: np.ndarray, y: np.ndarray) -> Certificate | None:
    """An exact Gordan certificate near a float one, when the last query's gaps alone do not give
    one: HiGHS's dual y of the margin LP (at m* = 0, Σ y_k row_k ≈ 0), then gordan_lp's, made
    exact by project_near. (gordan_certificate on all ~n²/2 rows is not tried: its exact-simplex
    fallback took a minute at n = 32, r = 6.)"""
    candidates = itertools.chain([y], (gordan_lp(M, tol) for tol in (1e-9, 1e-7)))
    cert, _ = project_near(rows, candidates)
    return cert if cert is not None and check_gordan(rows, *cert) else None


@dataclasses.dataclass(frozen=True)
class PointerRank(JsonResult):
    """One (family, n, r): strict says a G in the family exists (pointer order, any magnitude).

    solution — an exact A [r × r], |A| ≤ 1, with exact margin margin_lower > 0 (strict only);
    margin_upper — the certified upper bound on m* (|A| ≤ 1): 0 with a Gordan certificate, else
    dual_bound(dual); gordan — (support, y) with Σ y_c row_c = 0 (not strict only);
    dual — HiGHS's dual made exact, sparse (support, y), Σ y = 1; lp_margin — HiGHS's own m* (a
    float, informative only; with method "shift" the last query's univariate optimum); method —
    one of METHODS (older JSON has none: "lp", or "last_query" for a result without a dual).
    to_json writes Fractions as strings ("p/q", or "p" when whole)."""

    family: str
    n: int
    r: int
    strict: bool
    solution: Matrix | None
    margin_lower: Fraction | None
    margin_upper: Fraction
    gordan: Certificate | None
    dual: Certificate | None
    lp_margin: float | None
    method: str = "lp"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PointerRank:
        """The result `to_json` wrote (Fractions read back from their strings)."""

        def cert(c):
            return None if c is None else (tuple(c[0]), tuple(Fraction(v) for v in c[1]))

        sol = data["solution"]
        lower = data["margin_lower"]
        return cls(
            family=data["family"],
            n=data["n"],
            r=data["r"],
            strict=data["strict"],
            solution=None if sol is None else tuple(tuple(map(Fraction, row)) for row in sol),
            margin_lower=None if lower is None else Fraction(lower),
            margin_upper=Fraction(data["margin_upper"]),
            gordan=cert(data["gordan"]),
            dual=cert(data["dual"]),
            lp_margin=data["lp_margin"],
            method=data.get("method", "lp" if data["dual"] is not None else "last_query"),
        )


def search_pointer_rank(family: str, n: int, r: int, *, optimal: bool = False) -> PointerRank:
    """Decide (family, n, r) with exact certificates (module docstring); PointerRankError when
    HiGHS's answer does not check out exactly. The last query's gaps are tried first: when they
    alone are infeasible (last_query_gordan), the big margin LP is skipped (dual and lp_margin
    None: m* = 0 needs no dual). Else, where the span is shift invariant and not `optimal`, the
    shift lift (pointer_shift) gives a strict A without the r²-column LP; its margin is a lower
    bound on m*, not m*. `optimal` (or a span the lift does not fit) solves the margin LP."""
    check_int("n", n, low=2)  # n = 1 has no gap to order
    refuted = last_query_result(family, n, r)
    return refuted if refuted is not None else beyond_last_query(family, n, r, optimal)


def beyond_last_query(family: str, n: int, r: int, optimal: bool) -> PointerRank:
    """search_pointer_rank once the last query's gaps alone did not refute rank r: the shift lift
    where it fits (and not `optimal`), else the margin LP over all the gaps."""
    features = pointer_features(family, n, r)
    rows = pointer_rows(features)
    common: dict[str, Any] = dict(family=family, n=n, r=r)
    lifted = None if optimal or not shift_invariant(family, r) else shift_solution(family, n, r)
    if lifted is not None:
        solution, dual, univariate = lifted
        lower = exact_margin(features, solution)
        if lower > 0:
            return PointerRank(
                strict=True, solution=solution, margin_lower=lower,
                margin_upper=dual_bound(features, dual), gordan=None, dual=dual,
                lp_margin=univariate, method="shift", **common,
            )  # fmt: skip
    M = rows.float_matrix()
    lp_margin, a, y = margin_lp(M)
    common.update(dual=exact_dual(y), lp_margin=lp_margin)
    if lp_margin > MARGIN_TOL:
        solution = rationalise(a.reshape(r, r))
        lower = exact_margin(features, solution)
        if lower <= 0:
            raise PointerRankError(
                f"{family}, n={n}, r={r}: HiGHS's margin {lp_margin:.3g} but the rationalised "
                f"A's exact margin is {float(lower):.3g}"
            )
        return PointerRank(
            strict=True, solution=solution, margin_lower=lower,
            margin_upper=dual_bound(features, common["dual"]), gordan=None, **common,
        )  # fmt: skip
    gordan = exact_gordan_near(rows, M, y)
    if gordan is None:
        raise PointerRankError(
            f"{family}, n={n}, r={r}: HiGHS's margin {lp_margin:.3g} but no exact Gordan "
            "certificate"
        )
    return PointerRank(
        strict=False, solution=None, margin_lower=None, margin_upper=Fraction(0), gordan=gordan,
        **common,
    )  # fmt: skip


def check_certificate(cert: Any, count: int) -> bool:
    """(support, y): indices in range, y ≥ 0 and Fractions, one y per index."""
    if not isinstance(cert, tuple) or len(cert) != 2 or len(cert[0]) != len(cert[1]):
        return False
    support, y = cert
    return all(isinstance(v, Fraction) and v >= 0 for v in y) and all(
        isinstance(k, int) and 0 <= k < count for k in support
    )


def check_solution(result: PointerRank, features: Matrix) -> bool:
    """The strict half: A is r × r exact with |A| ≤ 1 and exact margin margin_lower > 0."""
    A = result.solution
    if A is None or len(A) != result.r or any(len(row) != result.r for row in A):
        return False
    if not all(isinstance(v, Fraction) and abs(v) <= 1 for row in A for v in row):
        return False
    lower = result.margin_lower
    return lower is not None and lower > 0 and exact_margin(features, A) == lower


def check_pointer_rank(result: PointerRank) -> bool:
    """Every claim of `result`, re-verified in exact arithmetic from rebuilt features: the strict
    solution's margin, the Gordan certificate, the dual's upper bound and lower ≤ upper."""
    try:
        check_int("n", result.n, low=2)
        features = pointer_features(result.family, result.n, result.r)
    except InputError:
        return False
    rows = pointer_rows(features)
    if result.strict:
        if result.gordan is not None or not check_solution(result, features):
            return False
    elif result.solution is not None or result.margin_lower is not None:
        return False
    elif not check_certificate(result.gordan, len(rows)) or result.margin_upper != 0:
        return False
    elif not check_gordan(rows, *result.gordan):
        return False
    if result.dual is not None:
        if not check_certificate(result.dual, len(rows)) or sum(result.dual[1]) != 1:
            return False
        bound = dual_bound(features, result.dual)
        if result.margin_upper != (0 if result.gordan is not None else bound):
            return False
    elif result.gordan is None:
        return False  # a strict result's upper bound needs its dual
    return result.margin_lower is None or result.margin_lower <= result.margin_upper


def minimal_pointer_rank(
    family: str, n: int, r_max: int, *, optimal: bool = False
) -> list[PointerRank]:
    """search_pointer_rank for r = 1, 2, … up to the first strict r (or r_max): every result below
    the last carries its Gordan certificate (`optimal`: see search_pointer_rank)."""
    check_int("r_max", r_max, low=1)
    results = []
    for r in range(1, r_max + 1):
        results.append(search_pointer_rank(family, n, r, optimal=optimal))
        if results[-1].strict:
            break
    return results


def refuting_gap(result: PointerRank, solution: Matrix) -> tuple[int, int, int]:
    """(query, lo, hi) of a gap G[query, hi] − G[query, lo] ≤ 0 of G = Φ A Φᵀ, for any A [r × r]
    (exact, any magnitude) at an infeasible result's rank: the checked statement that no A in
    the family orders every query. Exact, on the Gordan support only (Σ y_k gap_k = 0 with every
    y_k > 0 forces a gap ≤ 0 there; the most negative is returned). ValueError for a strict
    result or an A of the wrong shape; a gap > 0 everywhere on the support would contradict the
    certificate (check_pointer_rank rejects such a certificate), and raises PointerRankError."""
    if result.strict or result.gordan is None:
        raise ValueError("only an infeasible result (with its Gordan certificate) refutes an A")
    if len(solution) != result.r or any(len(row) != result.r for row in solution):
        raise ValueError(f"A must be {result.r} × {result.r}")
    phi = pointer_features(result.family, result.n, result.r)
    query, lo, hi = gap_index(result.n)
    worst: tuple[Fraction, int] | None = None
    for k in result.gordan[0]:
        i, j0, j1 = int(query[k]), int(lo[k]), int(hi[k])
        diff = [phi[j1][b] - phi[j0][b] for b in range(result.r)]
        pairs = itertools.product(range(result.r), repeat=2)
        value = sum((phi[i][a] * solution[a][b] * diff[b] for a, b in pairs), Fraction(0))
        if worst is None or value < worst[0]:
            worst = (value, k)
    if worst is None or worst[0] > 0:
        raise PointerRankError("every gap on the Gordan support is > 0: the certificate is wrong")
    k = worst[1]
    return int(query[k]), int(lo[k]), int(hi[k])


@dataclasses.dataclass(frozen=True)
class RankBounds:
    """below — an infeasible result (r(n) > below.r, every smaller rank too: spans nest); at — a
    strict one (r(n) ≤ at.r). exact when at.r = below.r + 1; else the ranks between were left
    undecided (the margin LP was not allowed there)."""

    below: PointerRank
    at: PointerRank

    @property
    def exact(self) -> bool:
        return self.at.r == self.below.r + 1

    def to_json(self) -> dict[str, Any]:
        return {"below": self.below.to_json(), "at": self.at.to_json(), "exact": self.exact}


def last_query_result(family: str, n: int, r: int) -> PointerRank | None:
    """The infeasible result at rank r from the last query's gaps alone, or None."""
    rows = pointer_rows(pointer_features(family, n, r))
    gordan = last_query_gordan(rows)
    if gordan is None or not check_gordan(rows, *gordan):
        return None
    return PointerRank(
        family=family, n=n, r=r, strict=False, solution=None, margin_lower=None,
        margin_upper=Fraction(0), gordan=gordan, dual=None, lp_margin=None, method="last_query",
    )  # fmt: skip


def pointer_rank_bounds(
    family: str, n: int, guess: int, r_max: int, *, lp: bool = True
) -> RankBounds:
    """Certified bounds on r(n): the least rank the last query does not refute (searched from
    `guess`, a hint only, down or up: spans nest), then ranks upward from there until one is
    strict, each by search_pointer_rank. With lp=False a rank the shift lift does not fit (fourier
    at even r) is skipped, not solved: the bounds may then be one apart. Rank 1 (the constant
    feature, every gap 0) is never strict for n ≥ 2. PointerRankError past r_max."""
    check_int("n", n, low=2)
    check_int("guess", guess, low=2)
    check_int("r_max", r_max, low=guess)
    r = guess
    below = last_query_result(family, n, r - 1)
    while below is None:  # the last query allows r − 1: step down
        r -= 1
        below = last_query_result(family, n, r - 1)
    while r <= r_max:
        refuted = last_query_result(family, n, r)
        if refuted is not None:
            below = refuted
        elif lp or shift_invariant(family, r):
            result = beyond_last_query(family, n, r, optimal=False)
            if result.strict:
                return RankBounds(below, result)
            below = result
        r += 1
    raise PointerRankError(f"{family}, n={n}: no strict rank up to r_max = {r_max}")
