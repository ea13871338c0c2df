"""Theorem 1 of seed 004 as a chain of checked objects, for one given head and its two
classifiers (`headcount minmax lower-bound`; docs/minmax.md, "Theorem 1 as a chain").

    theorem1_chain(model, n=None, bits=None) -> Theorem1Chain

(a) Lemma 1: the longest non-decreasing and non-increasing runs of the attention weights along
    tokens 1..M; one has length ≥ ⌊1 + √(M−1)⌋ (Erdős–Szekeres, checked). N = min{⌊1 + √(M−1)⌋,
    ⌊(n−1)/2⌋}. A non-decreasing run obstructs min, a non-increasing one max.
(b) For each task whose run has ≥ N tokens, on its first N: the duals of Lemma 3 / 5, exact
    (duals.py) — or the input the head gets wrong, which ends that task's chain.
(c) The values scaled to integers u = 2^p·v (p: the head's exact value bits unless given) and the
    Figure-1 process run on them with the duals as w = λ/2^p and ε = 1/(n−1) (triangular.py):
    Facts 1–2 and every determinant inequality checked exactly.
(d) The conclusion the code proves, with L = 2^p·max ‖v‖ over the chain's values ≤ 2^p·ℓ:

        R·log₂ L > Σ_r N_r·log₂((n−1)/r)        (≥ when no replacement was made)

    with R = rank ≤ d and Σ_r N_r = N − R. Because N ≤ (n−1)/2, every r ≤ N/2 has
    log₂((n−1)/r) ≥ 2, so: d > N/2, or d·(p + log₂ ℓ) > N — checked on the numbers, and hence
    max{d, p + log₂ ℓ} > min{N/2, √N}. This is what is proven; the seed's display
    "max{d, p, log ℓ} ≳ n" is garbled and is not asserted.

A head that computes both tasks on every list completes (b)–(d) for a task whose run is long
enough; a head that does not may end at (b) with its wrong input instead. A check that fails
where the mathematics says it cannot makes the chain "broken" — reported, never a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import isqrt, log2
from typing import Any

from headcount.common.errors import InputError, param
from headcount.common.jsonable import jsonable
from headcount.minmax.exact_verify import check_counterexample_resources
from headcount.minmax.lower_bound import (
    MonotoneRun,
    exact_value_bits,
    lemma_n,
    longest_monotone_run,
)
from headcount.minmax.model import MinMaxModel, TokenHead
from headcount.minmax.task import check_sizes
from headcount.minmax.theorem1.duals import DualResult, build_duals, exact_vector
from headcount.minmax.theorem1.triangular import BrokenChain, TriangularChain, triangular_chain

MAX_CHAIN_WORK = 1 << 20  # N²·d exact products in the duals (seconds of plain fractions)
TASK_RUN = {"min": "non_decreasing", "max": "non_increasing"}  # the run that obstructs each task


def log2_exact(x: Fraction) -> float:
    """log₂ of a positive rational of any size (float(x) would overflow past 2^1024)."""
    return log2(x.numerator) - log2(x.denominator)


def _text(x: Fraction | int) -> str:
    """An exact number as text ("a/b" or "a"): JSON numbers would lose its digits."""
    return str(x)


@dataclass(frozen=True)
class Conclusion:
    """(d) for one completed task chain: both sides of R·log₂ L > Σ N_r·log₂((n−1)/r) in bits,
    and which alternative of the corollary holds."""

    lhs_bits: float  # R·log₂ L
    rhs_bits: float  # Σ_r N_r·log₂((n−1)/r)
    strict: bool
    dimension_above_half_N: bool  # d > N/2
    bits_above_N: bool  # d·(p + log₂ ℓ) > N
    max_d_bits: float  # max{d, p + log₂ ℓ}
    floor: float  # min{N/2, √N}, which max_d_bits exceeds

    def to_json(self) -> dict[str, Any]:
        return {
            "inequality": "R·log₂ L " + (">" if self.strict else "≥") + " Σ_r N_r·log₂((n−1)/r)",
            "lhs_bits": self.lhs_bits,
            "rhs_bits": self.rhs_bits,
            "corollary": "d > N/2 or d·(p + log₂ ℓ) > N",
            "d_above_half_N": self.dimension_above_half_N,
            "d_times_bits_above_N": self.bits_above_N,
            "max_d_p_plus_log2_ell": self.max_d_bits,
            "min_half_N_sqrt_N": self.floor,
        }


@dataclass(frozen=True)
class TaskChain:
    """One task's chain: "proven" (duals, process, conclusion), "wrong input" (the duals up to the
    input the head gets wrong), "too short" (its run has fewer than N tokens: nothing to prove),
    "vacuous" (N < 2) or "broken" (a check the mathematics guarantees failed; `broken` says
    which)."""

    task: str
    run: tuple[int, ...]  # the N tokens used (increasing)
    outcome: str
    duals: DualResult | None = None
    process: TriangularChain | None = None
    conclusion: Conclusion | None = None
    broken: str | None = None

    def to_json(self) -> dict[str, Any]:
        d = self.duals
        return {
            "task": self.task,
            "run": list(self.run),
            "outcome": self.outcome,
            "order": None if d is None else list(d.order),
            "duals": None if d is None else [_dual_json(x) for x in d.duals],
            "wrong_input": None if d is None or d.wrong is None else _wrong_json(d.wrong),
            "lemma6": None if self.process is None else _process_json(self.process),
            "conclusion": None if self.conclusion is None else self.conclusion.to_json(),
            "broken": self.broken,
        }


def _dual_json(x) -> dict[str, Any]:
    return {
        "position": x.position,
        "token": x.token,
        "partner": x.partner,
        "w": [_text(c) for c in x.w],
        "largest_earlier": _text(x.largest_earlier),
    }


def _wrong_json(w) -> dict[str, Any]:
    return {
        "position": w.position,
        "x_y_z": list(w.tokens),
        "input": list(w.input),
        "answer": w.answer,
        "decision": w.decision,
        "check": w.check,
    }


def _process_json(p: TriangularChain) -> dict[str, Any]:
    steps = [
        {
            "position": s.position,
            "kind": s.kind,
            "rank": s.rank,
            "column": s.column,
            "t": None if s.coefficients is None else [_text(c) for c in s.coefficients],
            "bound": None if s.bound is None else _text(s.bound),
            "det_C": _text(s.det_C),
        }
        for s in p.steps
    ]
    return {
        "eps": _text(p.eps),
        "steps": steps,
        "R": p.rank,
        "replacements_by_rank": {str(r): k for r, k in p.replacements.items()},
        "det_AtA": _text(p.det_AtA),
        "det_BtB": _text(p.det_BtB),
        "det_C": _text(p.det_C),
        "L2": _text(p.L2),
        "volume_bound": _text(p.volume_bound),
        "strict": p.strict,
    }


@dataclass(frozen=True)
class Theorem1Chain:
    """The chain for one head at list length n (module docstring): its sizes, the runs, and one
    TaskChain per task."""

    M: int
    n: int
    d: int
    p: int
    p_given: bool
    ell2: Fraction  # ℓ² = max_ω ‖v_ω‖², exact
    N: int
    erdos_szekeres_length: int
    runs: MonotoneRun
    chains: tuple[TaskChain, ...]

    @property
    def verdict(self) -> str:
        """'bound proven' (some task's chain completed), 'wrong input' (a chain ended at one and
        none completed), 'vacuous' (N < 2: nothing to prove) or 'broken'."""
        outcomes = {c.outcome for c in self.chains}
        if "broken" in outcomes:
            return "broken"
        if "proven" in outcomes:
            return "bound proven"
        return "wrong input" if "wrong input" in outcomes else "vacuous"

    def to_json(self) -> dict[str, Any]:
        return jsonable(
            {
                "M": self.M,
                "n": self.n,
                "d": self.d,
                "p": self.p,
                "p_given": self.p_given,
                "log2_ell": log2_exact(self.ell2) / 2 if self.ell2 > 0 else None,
                "ell2": _text(self.ell2),
                "N": self.N,
                "erdos_szekeres_length": self.erdos_szekeres_length,
                "monotone_run": self.runs.to_json(),
                "verdict": self.verdict,
                "chains": [c.to_json() for c in self.chains],
            }
        )


def _integer_values(head: TokenHead, tokens: tuple[int, ...], p: int) -> list[tuple[int, ...]]:
    """u = 2^p·v for the tokens' values, exactly; InputError when some value is not in 2^-p·Z."""
    scale = Fraction(2) ** p
    out = []
    for t in tokens:
        row = [c * scale for c in exact_vector(head.values[t - 1])]
        if any(c.denominator != 1 for c in row):
            raise BrokenChain(f"the value of token {t} is not in 2^-{p}·Z^d")
        out.append(tuple(int(c) for c in row))
    return out


def _conclusion(process: TriangularChain, n: int, N: int, d: int, p: int, ell2: Fraction):
    """(d): the proven inequality in bits, and the corollary checked on the numbers."""
    R = process.rank
    lhs = R * log2(process.L2) / 2
    rhs = sum(k * log2((n - 1) / r) for r, k in process.replacements.items())
    bits = p + log2_exact(ell2) / 2  # p + log₂ ℓ ≥ log₂ L
    above_half = 2 * d > N
    above_n = d * bits > N
    top = max(d, bits)
    floor = min(N / 2, N**0.5)
    if R > d or not (above_half or above_n) or not top > floor:
        raise BrokenChain(
            f"the corollary fails on the numbers: R = {R}, d = {d}, N = {N}, "
            f"p + log₂ ℓ = {bits:.6g}"
        )
    return Conclusion(lhs, rhs, process.strict, above_half, above_n, top, floor)


def _task_chain(
    model: MinMaxModel, task: str, run: tuple[int, ...], n: int, N: int, p: int, ell2: Fraction
) -> TaskChain:
    head = model.layer.heads[0]
    if N < 2:  # no dual to build: the theorem says nothing at these sizes
        return TaskChain(task, (), "vacuous")
    if len(run) < N:
        return TaskChain(task, run, "too short")
    tokens = run[:N]
    clf = model.classifier_min if task == "min" else model.classifier_max
    duals = build_duals(head, clf, task, tokens, n)
    if duals.broken is not None:
        return TaskChain(task, tokens, "broken", duals, broken=duals.broken)
    if duals.wrong is not None:
        return TaskChain(task, tokens, "wrong input", duals)
    u = _integer_values(head, duals.order, p)
    scale = Fraction(2) ** p
    w = {x.position: tuple(c / scale for c in x.w) for x in duals.duals}
    try:
        process = triangular_chain(u, w, Fraction(1, n - 1))
        conclusion = _conclusion(process, n, N, head.dim, p, ell2)
    except BrokenChain as e:
        return TaskChain(task, tokens, "broken", duals, broken=str(e))
    return TaskChain(task, tokens, "proven", duals, process, conclusion)


def _single_head(model: MinMaxModel) -> TokenHead:
    if not isinstance(model, MinMaxModel):
        raise TypeError(f"expected a MinMaxModel, got {type(model).__name__}")
    if model.layer.n_heads != 1:
        raise InputError(f"Theorem 1 is about one head; this model has {model.layer.n_heads} heads")
    return model.layer.heads[0]


def theorem1_chain(
    model: MinMaxModel, n: int | None = None, bits: int | None = None
) -> Theorem1Chain:
    """Theorem 1's chain for a one-head model at list length n (default: model.info["n"]) and value
    precision `bits` (default: the values' exact bits). Returns a Theorem1Chain; InputError for a
    multi-head model, sizes out of range, or values not in 2^-bits·Z^d."""
    head = _single_head(model)
    if n is None:
        if "n" not in model.info:
            raise InputError(f"give {param('n')} (the model's info has no 'n')")
        n = int(model.info["n"])
    check_sizes(head.M, n)
    what = f"minmax lower-bound at M = {head.M}, {param('n')} {n}"
    check_counterexample_resources(head.M, n, what)  # the chain may print a list of n tokens
    N = lemma_n(head.M, n)
    if N * N * head.dim > MAX_CHAIN_WORK:
        raise InputError(
            f"the chain at N = {N} (from M = {head.M}, n = {n}) and d = {head.dim} needs "
            f"N²·d = {N * N * head.dim} exact products; allowed up to {MAX_CHAIN_WORK}"
        )
    exact_bits = exact_value_bits(head.values)
    p = exact_bits if bits is None else _bits(bits)
    if p < exact_bits:
        raise InputError(
            f"the values need {exact_bits} bits (2^-{exact_bits}·Z^d), more than "
            f"{param('bits')} {p}: give at least {exact_bits}, or leave it out"
        )
    ell2 = max(sum(c * c for c in exact_vector(row)) for row in head.values)
    runs = longest_monotone_run(head)
    es = 1 + isqrt(head.M - 1)
    chains = [
        _task_chain(model, task, getattr(runs, TASK_RUN[task]), n, N, p, ell2)
        for task in ("min", "max")
    ]
    if runs.length < es:  # Lemma 1 (Erdős–Szekeres) contradicted: never a verdict
        chains = [TaskChain(c.task, c.run, "broken", broken="Erdős–Szekeres") for c in chains]
    return Theorem1Chain(head.M, n, head.dim, p, bits is not None, ell2, N, es, runs, tuple(chains))


def _bits(bits: int) -> int:
    if isinstance(bits, bool) or not isinstance(bits, int) or not 0 <= bits <= 1074:
        raise InputError(f"{param('bits')} must be an integer in 0..1074, got {bits!r}")
    return bits
