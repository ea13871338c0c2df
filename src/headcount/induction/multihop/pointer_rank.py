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

from headcount.common.errors import InputError, param
from headcount.common.jsonable import JsonResult
from headcount.common.validate import check_int
from headcount.core.numbers.gordan import check_gordan, gordan_certificate

FAMILIES = ("poly", "fourier")
GRID_BITS = 40  # the rationalised A and the fourier features are multiples of 2^-GRID_BITS
MARGIN_TOL = 1e-9  # an LP optimum above this must come with an exactly strict A (else: error)
# Tighter than HiGHS's 1e-7 defaults: at n = 64 the margins at the minimal rank are ~1e-6.
HIGHS_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}

Matrix = tuple[tuple[Fraction, ...], ...]
Certificate = tuple[tuple[int, ...], tuple[Fraction, ...]]  # (support, y on the support)


class PointerRankError(RuntimeError):
    """HiGHS's answer could not be made into an exact certificate either way: no verdict."""


def check_family(family: str) -> str:
    """`family` if it is one of FAMILIES; InputError otherwise."""
    if family not in FAMILIES:
        raise InputError(f"{param('family')} must be one of {', '.join(FAMILIES)}, got {family!r}")
    return family


def chebyshev_features(n: int, r: int) -> Matrix:
    """T_0..T_{r−1} at x_j = (2j − (n − 1))/(n − 1), exact (|T_k| ≤ 1 on [−1, 1])."""
    rows = []
    for j in range(n):
        x = Fraction(2 * j - (n - 1), n - 1) if n > 1 else Fraction(0)
        t = [Fraction(1), x]
        while len(t) < r:
            t.append(2 * x * t[-1] - t[-2])
        rows.append(tuple(t[:r]))
    return tuple(rows)


def dyadic_trig(j: int, a: int, n: int) -> tuple[Fraction, Fraction]:
    """(cos, sin)(π a j/n), each rounded to the nearest multiple of 2^−GRID_BITS."""
    with flint.ctx.workprec(128):  # a ball far narrower than the grid: the rounding is certain
        s, c = flint.arb.sin_cos_pi_fmpq(flint.fmpq(a * j, n))
        half = flint.arb(flint.fmpq(1, 2))
        out = [(v * 2**GRID_BITS + half).floor().unique_fmpz() for v in (c, s)]
    if any(k is None for k in out):  # only at a tie, which π a j/n never gives
        raise PointerRankError(f"cos/sin(π·{a}·{j}/{n}) sits on a rounding tie")
    return tuple(Fraction(int(k), 2**GRID_BITS) for k in out)  # type: ignore[return-value]


def fourier_features(n: int, r: int) -> Matrix:
    """1, cos(π j/n), sin(π j/n), cos(2π j/n), … (r columns), rounded to the 2^−GRID_BITS grid."""
    rows = []
    for j in range(n):
        row = [Fraction(1)]
        a = 1
        while len(row) < r:
            row.extend(dyadic_trig(j, a, n))
            a += 1
        rows.append(tuple(row[:r]))
    return tuple(rows)


def pointer_features(family: str, n: int, r: int) -> Matrix:
    """The exact features Φ [n × r] of `family`, as a tuple of n rows of Fractions (|Φ| ≤ 1);
    `fmpq_matrix` turns them into python-flint's fmpq_mat for exact products."""
    check_family(family)
    n, r = check_int("n", n, low=1), check_int("r", r, low=1)
    return chebyshev_features(n, r) if family == "poly" else fourier_features(n, r)


def fmpq_matrix(rows: Sequence[Sequence[Fraction]]) -> flint.fmpq_mat:
    """A matrix of Fractions as python-flint's exact fmpq_mat."""
    flat = [flint.fmpq(x.numerator, x.denominator) for row in rows for x in row]
    return flint.fmpq_mat(len(rows), len(rows[0]) if rows else 0, flat)


def gap_index(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query, lo, hi) of every gap G[query, hi] − G[query, lo] that must be > 0, in this order:
    for i = 1..n − 1, first (i, lo=i, hi=0), then (i, lo=j − 1, hi=j) for j = 1..i − 1."""
    query, lo, hi = [], [], []
    for i in range(1, n):
        query += [i] * i
        lo += [i, *range(i - 1)]
        hi += [0, *range(1, i)]
    return tuple(np.array(v, dtype=np.int64) for v in (query, lo, hi))  # type: ignore[return-value]


@dataclasses.dataclass(frozen=True, eq=False)
class PointerRows(Sequence):
    """The constraint rows Φ[i] ⊗ (Φ[hi] − Φ[lo]) (length r², gap_index order), lazily: rows[k]
    is row k in exact Fractions (what core.numbers.gordan reads, only on a support)."""

    features: Matrix
    query: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def __len__(self) -> int:
        return len(self.query)

    def __getitem__(self, k):  # type: ignore[override]
        k = range(len(self))[k]  # IndexError past the end, which Sequence's iteration relies on
        phi = self.features
        i, lo, hi = int(self.query[k]), int(self.lo[k]), int(self.hi[k])
        diff = [h - low for h, low in zip(phi[hi], phi[lo])]
        return [p * d for p in phi[i] for d in diff]

    def exact_matrix(self) -> flint.fmpq_mat:
        """All the rows as python-flint's fmpq_mat [K × r²] (K = n(n − 1)/2)."""
        return fmpq_matrix([self[k] for k in range(len(self))])

    def float_matrix(self) -> np.ndarray:
        """All the rows in float64 [K × r²], for HiGHS."""
        phi = np.array([[float(x) for x in row] for row in self.features])
        diff = phi[self.hi] - phi[self.lo]
        return (phi[self.query][:, :, None] * diff[:, None, :]).reshape(len(self), -1)


def pointer_rows(features: Matrix) -> PointerRows:
    """The gap rows of `features` (see PointerRows)."""
    return PointerRows(features, *gap_index(len(features)))


def rationalise(values: np.ndarray) -> Matrix:
    """A float A [r × r] rounded to multiples of 2^−GRID_BITS and clipped to [−1, 1], exactly."""
    scale = 2**GRID_BITS
    return tuple(
        tuple(Fraction(max(-scale, min(scale, round(float(v) * scale))), scale) for v in row)
        for row in np.asarray(values)
    )


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


def exact_dual(y: np.ndarray) -> Certificate:
    """HiGHS's dual y made exact: its positive entries as exact binary fractions (each float is
    one), renormalised so Σ y = 1 exactly; (support, values)."""
    support = tuple(int(k) for k in np.flatnonzero(y > 0))
    values = [Fraction(float(y[k])) for k in support]
    total = sum(values, Fraction(0))
    if total <= 0:
        raise PointerRankError("HiGHS's dual has no positive entry")
    return support, tuple(v / total for v in values)


def margin_lp(M: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """HiGHS on max m s.t. M a ≥ m, |a| ≤ 1: (m, a, y) with y ≥ 0 the dual of the gap rows. Tight
    tolerances first; on a solve error, the interior-point method, then HiGHS's defaults."""
    k, w = M.shape
    cost = np.zeros(w + 1)
    cost[-1] = -1.0  # linprog minimises −m
    messages = []
    for method, options in (("highs", HIGHS_OPTIONS), ("highs-ipm", HIGHS_OPTIONS), ("highs", {})):
        res = linprog(
            cost,
            A_ub=np.hstack([-M, np.ones((k, 1))]),
            b_ub=np.zeros(k),
            bounds=[(-1, 1)] * w + [(None, None)],
            method=method,
            options=options,
        )
        if res.status == 0:
            return -float(res.fun), res.x[:w], -res.ineqlin.marginals
        messages.append(f"{method}: {res.message}")
    raise PointerRankError(f"HiGHS did not solve the margin LP ({'; '.join(messages)})")


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
    float, informative only). to_json writes Fractions as strings ("p/q", or "p" when whole)."""

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
        )


def search_pointer_rank(family: str, n: int, r: int) -> PointerRank:
    """Decide (family, n, r) with exact certificates (module docstring); PointerRankError when
    HiGHS's answer does not check out exactly. The last query's gaps are tried first: when they
    alone are infeasible (last_query_gordan), the big margin LP is skipped (dual and lp_margin
    None: m* = 0 needs no dual)."""
    features = pointer_features(family, n, r)
    check_int("n", n, low=2)  # n = 1 has no gap to order
    rows = pointer_rows(features)
    common: dict[str, Any] = dict(family=family, n=n, r=r)
    gordan = last_query_gordan(rows)
    if gordan is not None and check_gordan(rows, *gordan):
        return PointerRank(
            strict=False, solution=None, margin_lower=None, margin_upper=Fraction(0),
            gordan=gordan, dual=None, lp_margin=None, **common,
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


def minimal_pointer_rank(family: str, n: int, r_max: int) -> list[PointerRank]:
    """search_pointer_rank for r = 1, 2, … up to the first strict r (or r_max): every result below
    the last carries its Gordan certificate."""
    check_int("r_max", r_max, low=1)
    results = []
    for r in range(1, r_max + 1):
        results.append(search_pointer_rank(family, n, r))
        if results[-1].strict:
            break
    return results
