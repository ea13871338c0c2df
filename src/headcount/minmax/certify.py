"""The certificate behind `headcount minmax certify` (command contract keys, spec/minmax.md).

Two methods, both about the stored weights as exact reals (the real-arithmetic model):

* "exact-histogram" (M ≤ 1024): verify.verify_exact_one_head / verify_block_layer — correct on all
  C(n+M−1, n) inputs iff it says so (float64 scan with an error bound, near-ties re-decided exactly).
  margin_* is the true minimum logit gap over all inputs (± the verifier's tolerance).
* "sufficient-condition" (M > 1024, or when asked): proves, in exact arithmetic, the construction's own
  argument for the head reading each classifier:
    (a) the values are ±1 integer codes, θ = v on that head's block, every other head has zeros there
        (so the classifier sees only its head — see verify.py, block reduction);
    (b) the codes are distinct: g = min_{ω≠ω'} (d − ⟨v_ω, v_ω'⟩) ≥ 2, integer inner products computed
        exactly (float64 BLAS on ±1 entries: all partial sums are integers ≤ d < 2^53, no rounding);
    (c) the scores are strictly monotone with gap δ = min_m (s_m − max_{ω>m} s_ω) > 0 (min head; mirrored
        for max), δ computed exactly from the float64 scores as rationals; then for every input with
        minimum m the weight of m is W ≥ W_low = 1/(1 + (n−1)·e^{−δ}) (one copy of m against n−1 copies of
        the next-best token is the worst case), and W_low is bounded below with arb balls;
    (d) W_low > 1/2, hence ⟨v_m − v_j, z⟩ ≥ (2W−1)(d − ⟨v_m, v_j⟩) ≥ (2·W_low − 1)·g > 0 for every input
        and every j ≠ m. margin_* is this rigorous lower bound (rounded down), not the true minimum.
  It also reports whether W_low ≥ 4/5 (the spec's W*), proven with arb.

``scope`` is always "exhaustive": every method covers all C(n+M−1, n) multisets of [M]^n — brute force by
enumerating them, exact-histogram and sufficient-condition by an argument about every histogram. Nothing
here samples (a failed sufficient condition is no verdict, errors_* = None, but its scope is still all
inputs).
"""

from __future__ import annotations

from fractions import Fraction
from math import log

import flint
import numpy as np

from headcount.core.errors import InternalError
from headcount.minmax.construction import compact_code, max_head, min_head, sign_code, two_head_layer
from headcount.minmax.exact import frac
from headcount.minmax.model import Classifier, TokenLayer
from headcount.minmax.task import check_sizes, count_multisets
from headcount.minmax.verify import block_head, scope_of, verify_brute, verify_exact_one_head

EXACT_MAX_M = 1024


def _fmpq(x: Fraction) -> flint.fmpq:
    return flint.fmpq(x.numerator, x.denominator)


def sufficient_condition(layer: TokenLayer, classifier: Classifier, task: str, n: int) -> dict:
    """Check (a)–(d) of the module docstring exactly; returns a dict with "holds" and the quantities."""
    k = block_head(layer, classifier)
    head = layer.heads[k]
    support = np.any(classifier.theta != 0, axis=0)
    V = head.values[:, support]
    out = {"holds": False, "head": k}
    # (a) ±1 codes, θ = v on the block, zeros elsewhere
    if not (np.all(np.abs(V) == 1) and np.array_equal(classifier.theta[:, support], V)):
        out["reason"] = "values are not ±1 codes equal to θ on the classifier's block"
        return out
    # (b) exact integer Gram matrix, in row chunks
    code = np.ascontiguousarray(V, dtype=np.float64)  # ±1 entries
    M, d = code.shape
    max_ip = -d
    for start in range(0, M, 1024):
        # [chunk M]: BLAS in float64 is exact here — every product is ±1 and every partial sum an
        # integer of size ≤ d < 2^53, so no rounding ever happens
        g = code[start : start + 1024] @ code.T
        g[np.arange(g.shape[0]), start + np.arange(g.shape[0])] = -d  # drop the diagonal
        max_ip = max(max_ip, int(g.max()))
    if d >= 2**53:  # the exactness argument above needs every partial sum below 2^53
        raise InternalError(f"code dimension {d} ≥ 2^53: the float64 Gram matrix would not be exact")
    gmin = d - max_ip
    out.update(
        code_dim=d, max_inner_product=max_ip, code_gap=gmin, inner_products_below_half_d=2 * max_ip < d
    )
    if gmin < 2:
        out["reason"] = "two tokens share a code"
        return out
    # (c) exact score gap δ
    s = head.scores if task == "min" else head.scores[::-1]
    suffix_max = np.maximum.accumulate(s[::-1])[::-1]  # suffix_max[m] = max_{ω ≥ m} s_ω (exact: comparisons)
    delta = min(frac(s[m]) - frac(suffix_max[m + 1]) for m in range(M - 1))
    out["score_gap"] = float(delta)
    if delta <= 0:
        out["reason"] = "scores are not strictly monotone in the task's direction"
        return out
    old = flint.ctx.prec
    try:
        flint.ctx.prec = 256
        rest = (n - 1) * (-flint.arb(_fmpq(delta))).exp()  # (n−1)e^{−δ}, a ball
        w_low = 1 / (1 + rest)
        out["attention_weight_low"] = float(w_low.lower())
        out["weight_at_least_4_5"] = bool(4 * rest <= 1)  # W_low ≥ 4/5 ⇔ (n−1)e^{−δ} ≤ 1/4, proven
        above_half = bool(rest < 1)  # W_low > 1/2 ⇔ (n−1)e^{−δ} < 1, proven
        bound = (2 * w_low - 1) * gmin
        out["margin_lower_bound"] = float(bound.lower())
    finally:
        flint.ctx.prec = old
    if not above_half:
        out["reason"] = "attention weight on the extreme token not proven > 1/2"
        return out
    out["holds"] = True
    return out


def certify_minmax(
    M: int, n: int, heads: int, code: str = "sign", seed: int = 0, method: str | None = None
) -> dict:
    """Build the construction and certify it on all inputs; the command's JSON object (a dict).

    heads=2: the two-head layer, each classifier certified through its block; heads=1: the min head is
    certified for min and the max head for max, separately (one head cannot do both, Theorem 1).
    method: None (exact-histogram for M ≤ 1024, sufficient-condition beyond), or forced:
    "exact-histogram", "sufficient-condition", "brute-force" (small M, n only).

    errors_min / errors_max: 0 when certified; the exact number of wrong multisets under brute-force;
    None (JSON null) otherwise — exact-histogram then also gives counterexample_* (a wrong input), while
    a failed sufficient condition proves nothing either way (see sufficient_*["reason"])."""
    check_sizes(M, n)
    if heads not in (1, 2):
        raise ValueError(
            f"bad heads={heads!r}: the construction has 1 head per task (heads=1) or one layer with 2 heads"
        )
    if code not in ("sign", "compact"):
        raise ValueError(f"unknown code {code!r}: use 'sign' (d = ⌈8 ln M⌉) or 'compact' (d = ⌈log₂ M⌉)")
    if method is None:
        method = "exact-histogram" if M <= EXACT_MAX_M else "sufficient-condition"
    if method not in ("exact-histogram", "sufficient-condition", "brute-force"):
        raise ValueError(
            f"unknown method {method!r}: use exact-histogram, sufficient-condition or brute-force"
        )
    codes = sign_code(M, seed=seed) if code == "sign" else compact_code(M)
    if heads == 2:
        model = two_head_layer(M, n, codes)
        pairs = {"min": (model.layer, model.classifier_min), "max": (model.layer, model.classifier_max)}
        dim = model.layer.dim
    else:
        hmin, cmin = min_head(M, n, codes)
        hmax, cmax = max_head(M, n, codes)
        pairs = {"min": (TokenLayer((hmin,)), cmin), "max": (TokenLayer((hmax,)), cmax)}
        dim = hmin.dim
    result = {
        "M": M,
        "n": n,
        "heads": heads,
        "dim": dim,
        "code": code,
        "seed": seed,
        "value_bits": 0,
        "value_norm": float(np.sqrt(codes.shape[1])),
        "method": method,
        "inputs_covered": count_multisets(M, n),
        "scope": "exhaustive",
        "beta": float(pairs["min"][0].heads[0].scores[0] * -1),
        "beta_target": log(4 * (n - 1)),
    }
    verdicts = []
    for task, (layer, clf) in pairs.items():
        if method == "exact-histogram":
            k = block_head(layer, clf)
            v = verify_exact_one_head(layer.heads[k], clf, task, n)
            verdicts.append(v)
            errors = 0 if v.correct else None
            result[f"margin_{task}"] = v.margin
            if not v.correct:
                result[f"counterexample_{task}"] = list(v.worst_input)
        elif method == "brute-force":
            v = verify_brute(layer, clf, task, n)
            verdicts.append(v)
            errors = v.errors
            result[f"margin_{task}"] = v.margin
        else:
            sc = sufficient_condition(layer, clf, task, n)
            errors = 0 if sc["holds"] else None
            result[f"margin_{task}"] = sc.get("margin_lower_bound")
            result[f"sufficient_{task}"] = sc
        result[f"errors_{task}"] = errors
    result["scope"] = scope_of(*verdicts)  # the sufficient condition argues about every histogram
    return result
