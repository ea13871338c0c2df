"""The construction's certificate behind `headcount minmax certify` (spec/minmax.md).

``certify_minmax`` builds the Appendix-A construction and certifies it (a ``MinMaxCertificate``).
Whether a given single head + two classifiers compute min and max (`headcount minmax verify`) is
single_head.py's ``verify_single_head``.

Certificates of the construction come in two methods, both about the stored weights as exact reals
(the real-arithmetic model):

* "exact-histogram" (M ≤ 1024): verify.verify_exact_one_head / verify_block_layer — correct on all
  C(n+M−1, n) inputs iff it says so (float64 scan with an error bound, near-ties re-decided
  exactly). margin_* is the true minimum logit gap over all inputs (± the verifier's tolerance).
* "sufficient-condition" (M > 1024, or when asked): proves, in exact arithmetic, the construction's
  own argument for the head reading each classifier:
    (a) the values are ±1 integer codes, θ = v on that head's block, every other head has zeros
        there (so the classifier sees only its head — see verify.py, block reduction);
    (b) the codes are distinct: g = min_{ω≠ω'} (d − ⟨v_ω, v_ω'⟩) ≥ 2, integer inner products
        computed exactly (float64 BLAS on ±1 entries: all partial sums are integers ≤ d < 2^53, no
        rounding);
    (c) the scores are strictly monotone with gap δ = min_m (s_m − max_{ω>m} s_ω) > 0 (min head;
        mirrored for max), δ computed exactly from the float64 scores as rationals; then for every
        input with minimum m the weight of m is W ≥ W_low = 1/(1 + (n−1)·e^{−δ}) (one copy of m
        against n−1 copies of the next-best token is the worst case), and W_low is bounded below
        with arb balls;
    (d) W_low > 1/2, hence ⟨v_m − v_j, z⟩ ≥ (2W−1)(d − ⟨v_m, v_j⟩) ≥ (2·W_low − 1)·g > 0 for every
        input and every j ≠ m. margin_* is this rigorous lower bound (rounded down), not the true
        minimum.
  It also reports whether W_low ≥ 4/5 (the spec's W*), proven with arb.

``scope`` is always "exhaustive": every method covers all C(n+M−1, n) multisets of [M]^n — brute
force by enumerating them, exact-histogram and sufficient-condition by an argument about every
histogram. Nothing here samples (a failed sufficient condition is no verdict, errors_* = None, but
its scope is still all inputs).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import log
from typing import Any

import flint
import numpy as np

from headcount.common.errors import InternalError, param
from headcount.common.jsonable import jsonable
from headcount.common.resources import check_memory, check_work
from headcount.common.validate import check_choice
from headcount.minmax.brute import check_brute_resources, verify_brute
from headcount.minmax.construction import (
    CODES,
    check_construction_resources,
    code_dim,
    make_code,
    max_head,
    min_head,
    two_head_layer,
)
from headcount.minmax.exact_signs import frac
from headcount.minmax.exact_verify import (
    Verdict,
    block_head,
    check_exact_resources,
    scope_of,
    verify_exact_one_head,
)
from headcount.minmax.model import Classifier, TokenLayer
from headcount.minmax.task import MAX_ENUMERATE, check_sizes, count_multisets

EXACT_MAX_M = 1024
METHODS = ("exact-histogram", "sufficient-condition", "brute-force")
TASKS = ("min", "max")
#: sufficient-condition: the codes' Gram matrix, M²·d multiply-adds per task (exact in float64
#: BLAS, about 2·10⁹ a second): at most this many for both tasks (M ≈ 45,000 with the compact code,
#: ~30 s; the sign code's own bound stops near M = 20,500). It scales far beyond exact-histogram (M
#: ≤ 1290), which is why certify switches to it above M = 1024.
SUFFICIENT_MAX_WORK = 2**36


# ----------------------------------------------------------------------------------------------
# (a)–(d)


@dataclass(frozen=True)
class SufficientCondition:
    """(a)–(d) of the module docstring for the head reading one classifier, checked exactly:
    ``holds``, that head's index, the quantities computed before the first step that failed, and why
    it failed."""

    holds: bool
    head: int
    reason: str | None = None  # the first of (a)–(d) that failed; None when it holds
    code_dim: int | None = None  # (b)
    max_inner_product: int | None = None
    code_gap: int | None = None
    inner_products_below_half_d: bool | None = None
    score_gap: float | None = None  # (c): δ
    attention_weight_low: float | None = None  # (d): W_low, rounded down
    weight_at_least_4_5: bool | None = None
    margin_lower_bound: float | None = None  # (2·W_low − 1)·g, rounded down

    def to_json(self) -> dict[str, Any]:
        """holds, head, the quantities computed (in the order of the steps), then the reason of a
        failure."""
        out: dict[str, Any] = {"holds": self.holds, "head": self.head}
        for key in _QUANTITIES:
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.reason is not None:
            out["reason"] = self.reason
        return jsonable(out)


_QUANTITIES = (
    "code_dim",
    "max_inner_product",
    "code_gap",
    "inner_products_below_half_d",
    "score_gap",
    "attention_weight_low",
    "weight_at_least_4_5",
    "margin_lower_bound",
)


def _fmpq(x: Fraction) -> flint.fmpq:
    return flint.fmpq(x.numerator, x.denominator)


def _max_inner_product(code: np.ndarray) -> int:
    """max over ω ≠ ω' of ⟨v_ω, v_ω'⟩ for ±1 codes [M d], exactly, in row chunks of the Gram
    matrix."""
    M, d = code.shape
    if d >= 2**53:  # the exactness argument below needs every partial sum below 2^53
        raise InternalError(
            f"code dimension {d} ≥ 2^53: the float64 Gram matrix would not be exact"
        )
    max_ip = -d
    for start in range(0, M, 1024):
        # [chunk M]: BLAS in float64 is exact here — every product is ±1 and every partial sum an
        # integer of size ≤ d < 2^53, so no rounding ever happens
        g = code[start : start + 1024] @ code.T
        g[np.arange(g.shape[0]), start + np.arange(g.shape[0])] = -d  # drop the diagonal
        max_ip = max(max_ip, int(g.max()))
    return max_ip


def _score_gap(scores: np.ndarray, task: str) -> Fraction:
    """δ = min_m (s_m − max_{ω>m} s_ω) in the task's direction, exactly (the scores as
    rationals)."""
    s = scores if task == "min" else scores[::-1]
    suffix_max = np.maximum.accumulate(s[::-1])[
        ::-1
    ]  # suffix_max[m] = max_{ω ≥ m} s_ω (exact: comparisons)
    return min(frac(s[m]) - frac(suffix_max[m + 1]) for m in range(s.shape[0] - 1))


def _weight_bounds(delta: Fraction, n: int, gap: int) -> tuple[bool, dict[str, Any]]:
    """(W_low > 1/2 proven, {attention_weight_low, weight_at_least_4_5, margin_lower_bound}) with
    arb balls at 256 bits: W_low = 1/(1 + (n−1)e^{−δ})."""
    old = flint.ctx.prec
    try:
        flint.ctx.prec = 256
        rest = (n - 1) * (-flint.arb(_fmpq(delta))).exp()  # (n−1)e^{−δ}, a ball
        w_low = 1 / (1 + rest)
        quantities = {
            "attention_weight_low": float(w_low.lower()),
            "weight_at_least_4_5": bool(4 * rest <= 1),  # W_low ≥ 4/5 ⇔ (n−1)e^{−δ} ≤ 1/4, proven
            "margin_lower_bound": float(((2 * w_low - 1) * gap).lower()),
        }
        return bool(rest < 1), quantities  # W_low > 1/2 ⇔ (n−1)e^{−δ} < 1, proven
    finally:
        flint.ctx.prec = old


def sufficient_condition(
    layer: TokenLayer, classifier: Classifier, task: str, n: int
) -> SufficientCondition:
    """Check (a)–(d) of the module docstring exactly."""
    k = block_head(layer, classifier)
    head = layer.heads[k]
    support = np.any(classifier.theta != 0, axis=0)
    V = head.values[:, support]
    if not (np.all(np.abs(V) == 1) and np.array_equal(classifier.theta[:, support], V)):  # (a)
        return SufficientCondition(
            False, k, "values are not ±1 codes equal to θ on the classifier's block"
        )
    d = V.shape[1]
    max_ip = _max_inner_product(np.ascontiguousarray(V, dtype=np.float64))  # (b)
    gap = d - max_ip
    codes = {
        "code_dim": d,
        "max_inner_product": max_ip,
        "code_gap": gap,
        "inner_products_below_half_d": 2 * max_ip < d,
    }
    if gap < 2:
        return SufficientCondition(False, k, "two tokens share a code", **codes)
    delta = _score_gap(head.scores, task)  # (c)
    if delta <= 0:
        reason = "scores are not strictly monotone in the task's direction"
        return SufficientCondition(False, k, reason, **codes, score_gap=float(delta))
    above_half, weights = _weight_bounds(delta, n, gap)  # (d)
    reason = None if above_half else "attention weight on the extreme token not proven > 1/2"
    return SufficientCondition(above_half, k, reason, **codes, score_gap=float(delta), **weights)


# ----------------------------------------------------------------------------------------------
# certify


@dataclass(frozen=True)
class MinMaxCertificate:
    """The construction's certificate (``certify_minmax``; the JSON of `headcount minmax certify`).

    errors_*: 0 when certified; the exact number of wrong multisets under brute-force; None
    otherwise — exact-histogram then also gives counterexample_* (a wrong input), while a failed
    sufficient condition proves nothing either way (sufficient_*.reason). margin_*: module
    docstring."""

    M: int
    n: int
    heads: int
    dim: int
    code: str
    seed: int
    value_bits: int
    value_norm: float
    method: str
    inputs_covered: int
    scope: str
    beta: float
    beta_target: float
    errors_min: int | None
    errors_max: int | None
    margin_min: float | None
    margin_max: float | None
    counterexample_min: tuple[int, ...] | None = None
    counterexample_max: tuple[int, ...] | None = None
    sufficient_min: SufficientCondition | None = None
    sufficient_max: SufficientCondition | None = None

    @property
    def certified(self) -> bool:
        return self.errors_min == 0 and self.errors_max == 0

    def to_json(self) -> dict[str, Any]:
        """The construction's sizes, then per task: margin, counterexample or sufficient (where
        given), errors."""
        out = {key: getattr(self, key) for key in _CERTIFICATE_HEAD}
        for task in TASKS:
            out[f"margin_{task}"] = getattr(self, f"margin_{task}")
            for key in (f"counterexample_{task}", f"sufficient_{task}"):
                if getattr(self, key) is not None:
                    out[key] = getattr(self, key)
            out[f"errors_{task}"] = getattr(self, f"errors_{task}")
        return jsonable(out)


_CERTIFICATE_HEAD = (
    "M",
    "n",
    "heads",
    "dim",
    "code",
    "seed",
    "value_bits",
    "value_norm",
    "method",
    "inputs_covered",
    "scope",
    "beta",
    "beta_target",
)


@dataclass(frozen=True)
class _TaskCertificate:
    errors: int | None
    margin: float | None
    counterexample: tuple[int, ...] | None = None
    sufficient: SufficientCondition | None = None
    verdict: Verdict | None = None


def _certify_task(
    layer: TokenLayer, clf: Classifier, task: str, n: int, method: str
) -> _TaskCertificate:
    if method == "exact-histogram":
        v = verify_exact_one_head(layer.heads[block_head(layer, clf)], clf, task, n)
        return _TaskCertificate(0 if v.correct else None, v.margin, v.worst_input, verdict=v)
    if method == "brute-force":
        v = verify_brute(layer, clf, task, n)
        return _TaskCertificate(v.errors, v.margin, verdict=v)
    sc = sufficient_condition(layer, clf, task, n)
    return _TaskCertificate(0 if sc.holds else None, sc.margin_lower_bound, sufficient=sc)


def _construction_pairs(
    M: int, n: int, heads: int, codes: np.ndarray
) -> dict[str, tuple[TokenLayer, Classifier]]:
    """(layer, classifier) per task: the two-head layer for both (heads=2), or the min head for min
    and the max head for max, each alone (heads=1)."""
    if heads == 2:
        model = two_head_layer(M, n, codes)
        return {
            "min": (model.layer, model.classifier_min),
            "max": (model.layer, model.classifier_max),
        }
    hmin, cmin = min_head(M, n, codes)
    hmax, cmax = max_head(M, n, codes)
    return {"min": (TokenLayer((hmin,)), cmin), "max": (TokenLayer((hmax,)), cmax)}


def certify_minmax(
    M: int, n: int, heads: int, code: str = "sign", seed: int = 0, method: str | None = None
) -> MinMaxCertificate:
    """Build the construction and certify it on all inputs.

    heads=2: the two-head layer, each classifier certified through its block; heads=1: the min head
    is certified for min and the max head for max, separately (one head cannot do both, Theorem 1).
    method: None (exact-histogram for M ≤ 1024, sufficient-condition beyond), or forced:
    "exact-histogram", "sufficient-condition", "brute-force" (small M, n only)."""
    check_sizes(M, n)
    check_choice("heads", heads, (1, 2))
    check_choice("code", code, CODES)
    if method is None:
        method = "exact-histogram" if M <= EXACT_MAX_M else "sufficient-condition"
    check_choice("method", method, METHODS)
    _check_certify_resources(M, n, heads, code, seed, method)
    codes = make_code(M, code, seed)
    pairs = _construction_pairs(M, n, heads, codes)
    tasks = {
        task: _certify_task(layer, clf, task, n, method) for task, (layer, clf) in pairs.items()
    }
    return MinMaxCertificate(
        M=M,
        n=n,
        heads=heads,
        dim=pairs["min"][0].dim,
        code=code,
        seed=seed,
        value_bits=0,
        value_norm=float(np.sqrt(codes.shape[1])),
        method=method,
        inputs_covered=count_multisets(M, n),
        scope=scope_of(*(t.verdict for t in tasks.values() if t.verdict is not None)),
        beta=float(-pairs["min"][0].heads[0].scores[0]),
        beta_target=log(4 * (n - 1)),
        errors_min=tasks["min"].errors,
        errors_max=tasks["max"].errors,
        margin_min=tasks["min"].margin,
        margin_max=tasks["max"].margin,
        counterexample_min=tasks["min"].counterexample,
        counterexample_max=tasks["max"].counterexample,
        sufficient_min=tasks["min"].sufficient,
        sufficient_max=tasks["max"].sufficient,
    )


def _check_certify_resources(M: int, n: int, heads: int, code: str, seed: int, method: str) -> None:
    """certify's bounds for its method, before the code is drawn: the construction (memory, the
    code's work), then the method's memory and work (messages name the method)."""
    what = f"minmax certify ({method}) at {param('M')} {M} {param('n')} {n}"
    check_construction_resources(M, n, code, seed, what)
    d = code_dim(M, code) * heads
    if method == "exact-histogram":
        check_exact_resources(M, d, what)
    elif method == "brute-force":
        check_brute_resources(M, n, heads, MAX_ENUMERATE, what)
    else:  # the Gram matrix in chunks of 1024 rows, per task
        check_memory(8.0 * 1024 * M + 8.0 * M * d, what)
        work = 2.0 * M * M * code_dim(M, code)
        check_work(work, SUFFICIENT_MAX_WORK, what, "multiply-adds (2 tasks × M²·d)", param("M"))
