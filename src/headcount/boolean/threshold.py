"""Threshold degree of a general Boolean function by linear programming.

Conventions ----------- A Boolean function on ``n`` bits is given as a length-``2**n`` array
``values`` of ±1 (an ``f`` with ``f : {0,1}^n -> {-1,+1}``).  Entry ``values[i]`` is ``f(x)`` where
``i`` is the integer whose binary digits, most significant first, are ``x_1 x_2 ... x_n``; i.e.
variable ``x_j`` (1-based) is bit ``n - j`` of ``i``.  For ``n = 3`` the order is 000, 001, 010,
011, 100, ... (x_1 x_2 x_3).

``parse_truth_table`` reads a string of ``2**n`` characters in the same order and maps ``'0' -> +1``
and ``'1' -> -1`` (the usual (-1)^b encoding), so the truth table of parity is the string of parity
bits and, for a symmetric function, F(t) = (-1)^(output bit).  XOR has F(t) = (-1)^t.

Threshold degree ---------------- The threshold degree T of f is the least degree of a real
polynomial p with sign p(x) = f(x) on every x ∈ {0,1}^n.  It suffices to search multilinear p =
Σ_{|S| ≤ D} c_S x^S (x^S = Π_{j∈S} x_j), and by scaling, sign p = f everywhere  ⇔  f(x)·p(x) ≥ 1 is
feasible.  ``threshold_degree_lp`` bisects on D using HiGHS
(``scipy.optimize.linprog(method="highs")``) feasibility LPs; D = n is always feasible (the
multilinear interpolation of f itself, computed exactly by a Möbius transform, no LP needed).

Verification, both directions:

* upper bound (T ≤ reported): the witness is re-evaluated on every x in float64 and must satisfy
  f(x)·p(x) ≥ ``margin`` (default 1/2, whereas the LP asks for ≥ 1);
* lower bound (T > reported − 1), *certified exactly*: by Gordan's alternative, no polynomial of
  degree ≤ D sign-represents f  ⇔  some weighting μ ≥ 0, μ ≠ 0 of the inputs makes f orthogonal to
  every monomial of degree ≤ D:  Σ_x μ(x) f(x) x^S = 0 for all |S| ≤ D  (then Σ_x μ(x) f(x) p(x) = 0
  for every such p, impossible if f·p > 0 everywhere).  :func:`dual_certificate` finds μ with a
  HiGHS LP, then rebuilds it in exact integer arithmetic on the LP's support (python-flint rref) and
  :func:`check_dual_certificate` re-checks every orthogonality equation with integers.  Done for n ≤
  ``DUAL_MAX_N``; above that the lower bound is HiGHS's verdict and the result says so.

``threshold_degree`` is what `headcount boolean threshold-degree` prints: the sign changes of F for
a named symmetric function (``SymmetricThresholdDegree``), else the LP on a truth table
(``ThresholdDegree``). Bad input raises InputError.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from headcount.boolean.task import parse_function, threshold_degree_symmetric
from headcount.common.errors import InputError, param

__all__ = [
    "MAX_N",
    "ThresholdDegree",
    "SymmetricThresholdDegree",
    "threshold_degree",
    "parse_truth_table",
    "threshold_degree_lp",
    "evaluate_polynomial",
    "dual_certificate",
    "check_dual_certificate",
    "symmetric_truth_table",
]

MAX_N = 11
"""Largest number of variables accepted by the LP (a truth table of at most 2^11 characters). The
bisection may solve an LP of 2^n rows × up to 2^n − 1 monomial columns (a dense float64 matrix, then
HiGHS): at n = 11 that is ~4·10⁶ entries (~70 MB), 10–60 s; n = 12 took 3–4 minutes and n = 13 more
than 5 (issue 13), so larger n would look like a hang."""

DUAL_MAX_N = 10
"""Largest n for which the lower bound gets an exact dual certificate (exact rref of ≤ 2^n
columns)."""


@dataclass(frozen=True)
class ThresholdDegree:
    """Result of :func:`threshold_degree_lp`.

    ``threshold_degree`` is T; ``witness`` maps a monomial (sorted tuple of 1-based variable
    indices, ``()`` for the constant) to its coefficient, with degree ≤ T and sign = f on every x;
    ``min_margin`` = min_x f(x)·p(x) as evaluated in float64 (verified ≥ ``margin``); ``lp_calls``
    records (D, feasible) for each LP solved; ``dual`` is the exact lower-bound certificate at
    degree T − 1 (input index → positive integer weight μ(x)), or None when T = 0 or it was not
    attempted/found (``lower_bound_certified`` says which). ``to_json()`` is written out: the
    witness and the dual become lists of records, and a note says what each bound rests on.
    """

    n: int
    threshold_degree: int
    witness: dict[tuple[int, ...], float]
    min_margin: float
    verified: bool
    margin: float
    lp_calls: list[tuple[int, bool]] = field(default_factory=list)
    seconds: float = 0.0
    dual: dict[int, int] | None = None
    lower_bound_certified: bool = False

    method = "lp"

    def _dual_json(self) -> dict | None:
        if self.dual is None:
            return None
        weights = [
            {"input": format(x, f"0{self.n}b") if self.n else "", "weight": str(w)}
            for x, w in sorted(self.dual.items())
        ]
        return {"degree": self.threshold_degree - 1, "weights": weights}

    def _note(self) -> str:
        lower = (
            "an exact dual certificate μ ≥ 0 with Σ μ(x) f(x) x^S = 0 for all |S| < T (Gordan)"
            if self.lower_bound_certified or self.threshold_degree == 0
            else "HiGHS's infeasibility verdict at degree T-1 (no exact certificate above n = "
            f"{DUAL_MAX_N})"
        )
        return (
            "upper bound: the witness, checked in float64 on all inputs with margin; lower bound: "
            + lower
        )

    def to_json(self) -> dict:
        return {
            "method": self.method,
            "n": self.n,
            "threshold_degree": self.threshold_degree,
            "witness": [{"monomial": list(m), "coefficient": c} for m, c in self.witness.items()],
            "min_margin": self.min_margin,
            "verified": self.verified,
            "margin": self.margin,
            "lp_calls": [{"degree": d, "feasible": ok} for d, ok in self.lp_calls],
            "seconds": self.seconds,
            "lower_bound_certified": self.lower_bound_certified,
            "dual_certificate": self._dual_json(),
            "note": self._note(),
        }


@dataclass(frozen=True)
class SymmetricThresholdDegree:
    """The threshold degree of a named symmetric function: the sign changes of F (exact, no
    witness)."""

    function: str
    n: int
    threshold_degree: int

    method = "symmetric"

    def to_json(self) -> dict:
        return {
            "function": self.function,
            "n": self.n,
            "threshold_degree": self.threshold_degree,
            "method": self.method,
            "witness": None,
        }


def threshold_degree(
    function: str | None = None, n: int | None = None, truth_table: str | None = None
) -> SymmetricThresholdDegree | ThresholdDegree:
    """Threshold degree of a symmetric function given by name or F:+-… (with n), or of any function
    given by its truth table (see ``parse_truth_table``): exactly one of the two."""
    if (function is None) == (truth_table is None):
        raise InputError(
            f"give exactly one of {param('function')} NAME (with {param('n')} N) or "
            f"{param('truth_table')} BITS"
        )
    if function is None:
        values, bits = parse_truth_table(truth_table)
        if n is not None and n != bits:
            raise InputError(
                f"{param('n')} {n} contradicts the {param('truth_table')} of 2^{bits} characters: "
                f"drop {param('n')}"
            )
        return threshold_degree_lp(values, bits)
    if n is None or n < 1:
        raise InputError(f"{param('function')} needs {param('n')} N ≥ 1")
    T = threshold_degree_symmetric(parse_function(function, n))
    return SymmetricThresholdDegree(function, n, T)


def parse_truth_table(bits: str) -> tuple[np.ndarray, int]:
    """Parse a string of 2^n characters '0'/'1' (x_1 most significant) into (±1 values, n).

    '0' -> +1, '1' -> -1.  Surrounding whitespace is ignored.
    """
    if not isinstance(bits, str):
        raise InputError(f"truth table must be a string of '0'/'1', got {type(bits).__name__}")
    if (
        len(bits) > 2 * 2**MAX_N
    ):  # checked before reading it: at most 2^MAX_N bits (and some whitespace)
        raise InputError(
            f"{param('truth_table')} of {len(bits)} characters is too large: at most 2^{MAX_N} = "
            f"{2**MAX_N} "
            f"(n ≤ {MAX_N} bits)"
        )
    s = bits.strip()
    bad = sorted(set(s) - {"0", "1"})
    if bad:
        raise InputError(f"truth table may contain only '0' and '1', found {bad[0]!r}")
    length = len(s)
    if length == 0 or length & (length - 1):
        raise InputError(f"truth table length must be a power of 2 (2^n for n bits), got {length}")
    n = length.bit_length() - 1
    if n > MAX_N:
        raise InputError(
            f"n = {n} bits is too large for the threshold-degree LP; allowed n ≤ {MAX_N} "
            f"({param('truth_table')} of at most {2**MAX_N} characters: the LP grows as 4^n)"
        )
    values = np.fromiter((1 if ch == "0" else -1 for ch in s), dtype=np.int8, count=length)
    return values, n


def _check_values(values, n: int) -> np.ndarray:
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise InputError(f"n must be a non-negative integer, got {n!r}")
    if n > MAX_N:
        raise InputError(
            f"n = {n} bits is too large for the threshold-degree LP; allowed n ≤ {MAX_N}"
        )
    f = np.asarray(values)
    if f.ndim != 1 or f.shape[0] != 2**n:
        raise InputError(f"values must be a 1-D array of length 2^n = {2**n}, got shape {f.shape}")
    if not np.all((f == 1) | (f == -1)):
        raise InputError("values must all be +1 or -1")
    return f.astype(np.int8)


def _monomials(n: int, degree: int) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = []
    for k in range(degree + 1):
        out.extend(combinations(range(1, n + 1), k))
    return out


def _mask(mono: tuple[int, ...], n: int) -> int:
    m = 0
    for j in mono:
        m |= 1 << (n - j)
    return m


def _monomial_matrix(n: int, monos: list[tuple[int, ...]]) -> np.ndarray:
    """Dense 0/1 matrix A[x, S] = x^S (rows ordered by the integer index of x)."""
    xs = np.arange(2**n, dtype=np.int64)
    masks = np.array([_mask(m, n) for m in monos], dtype=np.int64)
    return ((xs[:, None] & masks[None, :]) == masks[None, :]).astype(np.float64)


def evaluate_polynomial(witness: dict[tuple[int, ...], float], n: int) -> np.ndarray:
    """Evaluate Σ c_S x^S on every x ∈ {0,1}^n in float64 (same index order as ``values``)."""
    monos = list(witness)
    if not monos:
        return np.zeros(2**n)
    A = _monomial_matrix(n, monos)
    c = np.array([witness[m] for m in monos], dtype=np.float64)
    return A @ c


def _mobius_witness(f: np.ndarray, n: int) -> dict[tuple[int, ...], float]:
    """Exact multilinear interpolation of f (degree ≤ n): coefficients by the Möbius transform."""
    a = f.astype(np.int64).copy()
    for j in range(n):
        bit = 1 << j
        idx = np.arange(2**n)
        sel = (idx & bit) != 0
        a[sel] -= a[idx[sel] ^ bit]
    out: dict[tuple[int, ...], float] = {}
    for i in range(2**n):
        if a[i] != 0:
            mono = tuple(j for j in range(1, n + 1) if i & (1 << (n - j)))
            out[mono] = float(a[i])
    return out


def _lp_feasible(f: np.ndarray, n: int, degree: int):
    """Is f(x)·p(x) ≥ 1 feasible over monomials x^S, |S| ≤ ``degree``?  Witness dict or None.

    Solved in the always-feasible, bounded form  max ε  s.t.  f(x)·p(x) ≥ ε, ε ≤ 1  (p = 0, ε = 0 is
    feasible; any ε > 0 rescales to ε = 1), so in exact arithmetic the optimum is 1 or 0.  This
    avoids HiGHS's unreliable infeasibility detection on the highly degenerate LPs (e.g. parity).
    """
    from scipy.optimize import linprog
    from scipy.sparse import csr_matrix, hstack

    monos = _monomials(n, degree)
    m = len(monos)
    A = _monomial_matrix(n, monos)
    A_ub = hstack([csr_matrix(-(f.astype(np.float64)[:, None] * A)), np.ones((2**n, 1))]).tocsr()
    c = np.zeros(m + 1)
    c[-1] = -1.0
    res = linprog(
        c=c,
        A_ub=A_ub,
        b_ub=np.zeros(2**n),
        bounds=[(None, None)] * m + [(None, 1.0)],
        method="highs",
    )
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed at degree {degree}: status {res.status}: {res.message}")
    eps = float(res.x[-1])
    if eps < 0.5:
        return None
    return {mono: float(v) / eps for mono, v in zip(monos, res.x[:-1]) if v != 0.0}


def _signed_monomial_matrix(f: np.ndarray, n: int, degree: int) -> np.ndarray:
    """B[x, S] = f(x)·x^S over monomials |S| ≤ degree, as int64."""
    return f.astype(np.int64)[:, None] * _monomial_matrix(n, _monomials(n, degree)).astype(np.int64)


def check_dual_certificate(values, n: int, degree: int, mu: dict[int, int]) -> bool:
    """Exact check that μ ≥ 0, μ ≠ 0 and Σ_x μ(x) f(x) x^S = 0 for every monomial with |S| ≤ degree
    — which proves that no polynomial of degree ≤ ``degree`` sign-represents f (integer
    arithmetic)."""
    from flint import fmpz_mat

    f = _check_values(values, n)
    if not mu or any(int(w) < 0 for w in mu.values()) or all(int(w) == 0 for w in mu.values()):
        return False
    xs = sorted(mu)
    if xs[0] < 0 or xs[-1] >= 2**n:
        return False
    B = _signed_monomial_matrix(f, n, degree)[xs]  # [support monomials]
    BT = fmpz_mat(B.T.tolist())  # [monomials support]
    weights = fmpz_mat([[int(mu[x])] for x in xs])
    return (BT * weights).is_zero()


def _lp_vertex(B: np.ndarray):
    """HiGHS's vertex of {μ ≥ 0, Σ μ = 1, Bᵀμ = 0}: (μ as floats, its right-hand side), or None."""
    from scipy.optimize import linprog

    N = B.shape[0]
    A_eq = np.vstack([B.T, np.ones((1, N))])
    b_eq = np.zeros(A_eq.shape[0])
    b_eq[-1] = 1.0
    res = linprog(np.zeros(N), A_eq=A_eq, b_eq=b_eq, bounds=[(0, None)] * N, method="highs-ds")
    return None if res.status != 0 else (res.x, b_eq)


def _exact_on_support(B: np.ndarray, b_eq: np.ndarray, x: np.ndarray, support: list[int]):
    """Solve Bᵀ_P μ_P = 0, Σ μ_P = 1 exactly on the support (free variables fixed to the LP's
    values): {position in support: μ as fmpq}, or None when the system is inconsistent."""
    from flint import fmpq, fmpq_mat

    k = len(support)
    rows = np.vstack([B[support].T, np.ones((1, k))]).astype(np.int64)
    aug = fmpq_mat(
        rows.shape[0],
        k + 1,
        [int(v) for v in np.hstack([rows, b_eq[:, None].astype(np.int64)]).ravel()],
    )
    R, rank = aug.rref()
    pivots = [next(c for c in range(k + 1) if R[r, c] != 0) for r in range(rank)]
    if k in pivots:
        return None  # inconsistent: the LP's support does not carry an exact solution
    free = [c for c in range(k) if c not in set(pivots)]
    value = {c: fmpq(*float(x[support[c]]).as_integer_ratio()) for c in free}
    for r, c in enumerate(pivots):
        value[c] = R[r, k] - sum((R[r, j] * value[j] for j in free), fmpq(0))
    return value


def dual_certificate(values, n: int, degree: int) -> dict[int, int] | None:
    """An exact Gordan certificate that f has threshold degree > ``degree``: integer weights μ(x) >
    0 on a set of inputs with Σ_x μ(x) f(x) x^S = 0 for all |S| ≤ degree.  None if none is found
    (then a sign-representation of that degree exists, or the LP's support did not yield an exact
    solution).

    HiGHS finds a vertex of {μ ≥ 0, Σ μ = 1, Bᵀμ = 0}; on its support the system is solved again in
    exact rationals (fmpz rref), free variables fixed to the LP's values, and the result is
    checked."""
    f = _check_values(values, n)
    B = _signed_monomial_matrix(f, n, degree).astype(np.float64)  # [inputs monomials]
    vertex = _lp_vertex(B)
    if vertex is None:
        return None
    x, b_eq = vertex
    support = [int(i) for i in np.flatnonzero(x > 1e-12)]
    value = _exact_on_support(B, b_eq, x, support) if support else None
    if value is None or any(v < 0 for v in value.values()):
        return None
    denominator = math.lcm(*(int(v.q) for v in value.values()))
    mu = {support[c]: int(v * denominator) for c, v in value.items() if v != 0}
    return mu if check_dual_certificate(f, n, degree, mu) else None


def _bisect(
    f: np.ndarray, n: int
) -> tuple[int, dict[tuple[int, ...], float], list[tuple[int, bool]]]:
    """(T, witness, LP calls) by bisection on D ∈ [0, n]: infeasible at lo, feasible at hi; D = n is
    always feasible via the Möbius transform, and a constant f has T = 0."""
    if np.all(f == f[0]):
        return 0, {(): float(f[0])}, []
    calls: list[tuple[int, bool]] = []
    lo, hi, best = 0, n, None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        w = _lp_feasible(f, n, mid)
        calls.append((mid, w is not None))
        if w is not None:
            hi, best = mid, w
        else:
            lo = mid
    return hi, (best if best is not None else _mobius_witness(f, n)), calls


def threshold_degree_lp(
    values, n: int, *, margin: float = 0.5, certify_lower: bool = True
) -> ThresholdDegree:
    """Threshold degree T of f (±1 ``values`` of length 2^n) with a verified witness polynomial and,
    for n ≤ DUAL_MAX_N (``certify_lower``), an exact dual certificate that degree T − 1 is
    impossible.

    Bisection on D ∈ [0, n] with HiGHS feasibility LPs.  Raises ``InputError`` on bad input and
    ``RuntimeError`` if the best witness fails float64 verification with the given ``margin``.
    """
    t0 = time.perf_counter()
    f = _check_values(values, n)
    best_deg, witness, calls = _bisect(f, n)
    prod = f.astype(np.float64) * evaluate_polynomial(witness, n)
    min_margin = float(prod.min()) if prod.size else float("inf")
    verified = min_margin >= margin and all(len(m) <= best_deg for m in witness)
    if not verified:
        raise RuntimeError(
            f"witness of degree {best_deg} failed float64 verification: min f·p = {min_margin} < "
            f"{margin}"
        )
    dual = None
    if best_deg > 0 and certify_lower and n <= DUAL_MAX_N:
        dual = dual_certificate(f, n, best_deg - 1)
    return ThresholdDegree(
        n=n,
        threshold_degree=best_deg,
        witness=witness,
        min_margin=min_margin,
        verified=verified,
        margin=margin,
        lp_calls=calls,
        seconds=time.perf_counter() - t0,
        dual=dual,
        lower_bound_certified=best_deg == 0 or dual is not None,
    )


# --- helpers for symmetric functions (used to cross-check the LP) -------------------------------


def symmetric_truth_table(F, n: int) -> np.ndarray:
    """±1 values of the symmetric f(x) = F(|x|), F a length-(n+1) sequence of ±1."""
    if not isinstance(n, (int, np.integer)) or not 0 <= n <= MAX_N:
        raise InputError(
            f"n must be an integer in 0..{MAX_N} (a truth table of 2^n entries), got {n!r}"
        )
    F = np.asarray(F)
    if F.shape != (n + 1,):
        raise InputError(f"F must have length n + 1 = {n + 1}, got {F.shape}")
    weights = np.array([bin(i).count("1") for i in range(2**n)], dtype=np.int64)
    return F[weights].astype(np.int8)
