"""Lemma 6 of seed 004 (approximately triangular integer vectors need large dimension or large
norm), its Facts 1–2 and the Figure-1 process, run in exact arithmetic with every inequality
checked as it goes. The seed's Figure 1 and Appendix B are lost; this is the proof as
reconstructed (docs/minmax.md, "Theorem 1 as a chain").

Hypothesis: integer vectors u_1..u_N ∈ Z^d, all non-zero, and rational w_2..w_N with
⟨w_i, u_i⟩ = 1 and |⟨w_i, u_j⟩| < ε for every j < i. The process keeps two d × r matrices with
the same span S_i = span(u_1..u_i), r = r_i = dim S_i:

* A_i, the basis of first arrivals: A_1 = [u_1]; when u_i ∉ S_{i−1} (the rank grows) A_i =
  [A_{i−1} | u_i], else A_i = A_{i−1};
* B_i, a basis drawn from U_i = {u_1..u_i}: B_1 = [u_1]; when the rank grows B_i = [B_{i−1} | u_i];
  else u_i = B_{i−1}t exactly, and column k of B_{i−1}, the one with the largest |t_k|, is
  replaced by u_i: B_i = B_{i−1}T with T = [I_{k−1} | t | I_{r−k}], det T = t_k.

So B_i = A_iC_i with C_1 = [1], C_i = diag(C_{i−1}, 1) when the rank grows, C_i = C_{i−1}T
otherwise, and det(B_iᵀB_i) = det(A_iᵀA_i)·det(C_i)². Where u_i replaces a column,
1 = ⟨w_i, u_i⟩ = Σ_k t_k⟨w_i, b_k⟩ and every column b_k is an earlier u_j, so
1 < ε·Σ|t_k| ≤ ε·r·max|t_k|: |det T| > 1/(rε). With N_r the replacements made at rank r:

    L^{2R} ≥ det(B_NᵀB_N) = det(A_NᵀA_N)·det(C_N)² ≥ det(C_N)² > ∏_r (1/(rε))^{2N_r}

(Fact 1: columns of norm ≤ L give det(BᵀB) ≤ L^{2R}, Hadamard; Fact 2: an integer matrix of
full column rank has det(AᵀA) ≥ 1, a positive integer), the last inequality strict when some
N_r > 0, ≥ (= 1) otherwise. In logarithms: R·log₂ L ≥ Σ_r N_r·log₂(1/(rε)), and
Σ_r N_r = N − R. Every object here is exact (python-flint integers and rationals) and every
step's equation and inequality is checked; a failed check raises BrokenChain, never a verdict.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from fractions import Fraction

import flint

IntVector = tuple[int, ...]
RatVector = tuple[Fraction, ...]


class BrokenChain(ValueError):
    """A hypothesis or a step of the chain failed its exact check (what failed, where)."""


def _q(x: flint.fmpq | flint.fmpz | int) -> Fraction:
    x = flint.fmpq(x)
    return Fraction(int(x.p), int(x.q))


def _inner(w: RatVector, u: IntVector) -> Fraction:
    return sum((a * b for a, b in zip(w, u)), Fraction(0))


def _gram_det(M: flint.fmpq_mat) -> Fraction:
    return _q((M.transpose() * M).det())


@dataclass(frozen=True)
class Step:
    """One vector of the process: "first", "grows" (a new column of A and B) or "replaces"
    (column `column` of B replaced; u_i = B_{i−1}t with |t_column| > bound = 1/(rε))."""

    position: int
    kind: str
    rank: int  # r_i after the step
    column: int | None = None  # k, 1-based
    coefficients: RatVector | None = None  # t
    bound: Fraction | None = None  # 1/(rε), which |t_k| exceeds
    det_C: Fraction = Fraction(1)  # det C_i after the step


@dataclass(frozen=True)
class TriangularChain:
    """The process's record and its end: R, N_r (replacements by rank), det(AᵀA), det(BᵀB),
    det C, L² (the largest squared norm among the u's), and the two sides of the proven
    inequality (L²)^R > ∏_r (1/(rε))^{2N_r}, exact."""

    eps: Fraction
    steps: tuple[Step, ...]
    rank: int  # R
    replacements: dict[int, int]  # r -> N_r
    det_AtA: int
    det_BtB: int
    det_C: Fraction
    L2: int
    volume_bound: Fraction  # ∏_r (1/(rε))^{2N_r}
    strict: bool  # some N_r > 0: the bound is strict


def _check_hypotheses(u: list[IntVector], w: dict[int, RatVector], eps: Fraction) -> None:
    """Lemma 6's hypotheses, exactly (BrokenChain naming the first that fails)."""
    if eps <= 0:
        raise BrokenChain(f"ε = {eps} must be positive")
    for i, ui in enumerate(u, 1):
        if not any(ui):
            raise BrokenChain(f"u_{i} is the zero vector")
        if i == 1:
            continue
        if _inner(w[i], ui) != 1:
            raise BrokenChain(f"⟨w_{i}, u_{i}⟩ = {_inner(w[i], ui)}, not 1")
        for j in range(1, i):
            if abs(_inner(w[i], u[j - 1])) >= eps:
                raise BrokenChain(f"|⟨w_{i}, u_{j}⟩| ≥ ε = {eps}")


def _replace(
    B: flint.fmpq_mat, C: flint.fmpq_mat, t: flint.fmpq_mat, eps: Fraction, i: int
) -> tuple[flint.fmpq_mat, flint.fmpq_mat, Step, Fraction]:
    """Replace the column of B with the largest |t_k| by u_i (= B t); the step and det T."""
    r = B.ncols()
    coeffs = tuple(_q(t[k, 0]) for k in range(r))
    k = max(range(r), key=lambda c: abs(coeffs[c]))
    bound = 1 / (r * eps)
    if not abs(coeffs[k]) > bound:
        raise BrokenChain(f"step {i}: |t_k| = {abs(coeffs[k])} is not above 1/(rε) = {bound}")
    T = flint.fmpq_mat(r, r)
    for c in range(r):
        T[c, c] = 1
    for c in range(r):
        T[c, k] = t[c, 0]
    step = Step(i, "replaces", r, k + 1, coeffs, bound)
    return B * T, C * T, step, coeffs[k]


def triangular_chain(u: list[IntVector], w: dict[int, RatVector], eps: Fraction) -> TriangularChain:
    """Run the Figure-1 process on u_1..u_N with duals w_2..w_N (module docstring), checking
    every hypothesis, step and inequality exactly; BrokenChain if any fails."""
    _check_hypotheses(u, w, eps)
    col = [flint.fmpq_mat([[x] for x in ui]) for ui in u]
    A, B, C = col[0], col[0], flint.fmpq_mat([[1]])
    det_C = Fraction(1)
    steps = [Step(1, "first", 1)]
    for i in range(2, len(u) + 1):
        ui = col[i - 1]
        t = (B.transpose() * B).solve(B.transpose() * ui)
        if B * t != ui:  # u_i ∉ span(B) = S_{i−1}: the rank grows
            A, B = _hstack(A, ui), _hstack(B, ui)
            C = _block(C)
            steps.append(Step(i, "grows", A.ncols(), det_C=det_C))
        else:
            B, C, step, pivot = _replace(B, C, t, eps, i)
            det_C *= pivot
            steps.append(replace(step, det_C=det_C))
        if B != A * C:
            raise BrokenChain(f"step {i}: B_i ≠ A_i·C_i")
    return _finish(u, A, B, C, det_C, tuple(steps), eps)


def _finish(u, A, B, C, det_C: Fraction, steps: tuple[Step, ...], eps: Fraction):
    """Facts 1–2, the determinant identity and the volume bound, each checked exactly."""
    R = A.ncols()
    if flint.fmpz_mat(A.nrows(), R, [int(_q(x)) for x in A.entries()]).rank() != R:
        raise BrokenChain("A_N does not have full column rank")
    det_AtA, det_BtB = _gram_det(A), _gram_det(B)
    if det_AtA.denominator != 1 or det_AtA < 1:  # Fact 2
        raise BrokenChain(f"Fact 2 fails: det(AᵀA) = {det_AtA}")
    L2 = max(sum(x * x for x in ui) for ui in u)
    if det_BtB > Fraction(L2) ** R:  # Fact 1 (Hadamard), with L over all of u ⊇ B's columns
        raise BrokenChain(f"Fact 1 fails: det(BᵀB) = {det_BtB} > (L²)^R")
    if _q(C.det()) != det_C or det_BtB != det_AtA * det_C**2:
        raise BrokenChain("det(BᵀB) ≠ det(AᵀA)·det(C)²")
    counts = Counter(s.rank for s in steps if s.kind == "replaces")
    volume = Fraction(1)
    for r, k in counts.items():
        volume *= (1 / (r * eps)) ** (2 * k)
    strict = bool(counts)
    if not (det_C**2 > volume if strict else det_C**2 >= volume):
        raise BrokenChain(f"det(C)² = {det_C**2} is not above ∏(1/(rε))^(2N_r) = {volume}")
    if not Fraction(L2) ** R >= det_BtB >= det_C**2:
        raise BrokenChain("(L²)^R ≥ det(BᵀB) ≥ det(C)² fails")
    return TriangularChain(
        eps, steps, R, dict(sorted(counts.items())), int(det_AtA), int(det_BtB), det_C, L2,
        volume, strict,
    )  # fmt: skip


def _hstack(M: flint.fmpq_mat, c: flint.fmpq_mat) -> flint.fmpq_mat:
    rows = [[M[i, j] for j in range(M.ncols())] + [c[i, 0]] for i in range(M.nrows())]
    return flint.fmpq_mat(rows)


def _block(C: flint.fmpq_mat) -> flint.fmpq_mat:
    r = C.nrows()
    out = flint.fmpq_mat(r + 1, r + 1)
    for i in range(r):
        for j in range(r):
            out[i, j] = C[i, j]
    out[r, r] = 1
    return out
