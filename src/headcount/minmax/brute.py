"""Brute force: ``verify_brute`` decides a layer + classifier on every multiset (sorted list) of n
tokens, any number of heads (scope "exhaustive"), and counts the wrong ones.

Margin, tolerance and what is proven are as in verify.py (its module docstring): float64 logits with
rigorous error bounds (float_bounds.py), classes not proven apart re-decided in exact arithmetic
(exact_signs.layer_gap_sign). A counterexample is the first wrong multiset, re-decided exactly,
with a class that reaches the answer's logit. ``check_brute_resources`` bounds the work before any
multiset is listed.
"""

from __future__ import annotations

import numpy as np

from headcount.common.errors import InputError, InternalError, param
from headcount.common.resources import check_memory, check_work
from headcount.core.model import BOTTOM
from headcount.minmax.exact_signs import layer_gap_sign
from headcount.minmax.exact_verify import Verdict, check_inputs, chunk_rows, decide_lists, hist_dict
from headcount.minmax.float_bounds import (
    U,
    logit_bounds,
    proven_below,
    scaled_products,
    to_original,
)
from headcount.minmax.model import Classifier, MinMaxModel, TokenHead, TokenLayer, as_layer
from headcount.minmax.task import all_multisets, estimate_multisets, min_max

#: verify_brute decides each multiset with about n·M·heads operations: at most this many per task
#: (~4.5·10⁷ a second, so under a minute); the multisets themselves are held as one [count n] array.
BRUTE_MAX_WORK = 2**31


def check_brute_resources(M: int, n: int, heads: int, max_inputs: int, what: str) -> None:
    """Brute force's bounds: at most max_inputs multisets (estimated before they are counted
    exactly), their [count n] array within the memory limit, and BRUTE_MAX_WORK per task."""
    count = estimate_multisets(M, n)
    if count > max_inputs + 0.5:
        raise InputError(
            f"{what}: brute force would enumerate about {count:.3g} inputs (C(n+M−1, n)); allowed "
            f"up to {max_inputs} (lower {param('M')} or {param('n')}, or use the exact method)"
        )
    # the lists, a chunk's [rows n M] gathers
    check_memory(2 * 8.0 * count * n + 8.0 * 8 * 2**21, what)
    check_work(
        count * n * M * heads,
        BRUTE_MAX_WORK,
        what,
        "operations per task (inputs·n·M·heads)",
        f"{param('M')} or {param('n')}",
    )


def _brute_chunk(layer, classifier, prod, x, truth, cache) -> tuple[np.ndarray, float, float, int]:
    """Exact right/wrong [batch] of a chunk of lists x (0-based tokens; truth: 1-based answers), the
    float margin and its error bound (scaled units), and how many rows needed exact arithmetic."""
    L, R = logit_bounds(layer, prod, x)
    rows, f = np.arange(L.shape[0]), truth - 1
    others = L.copy()
    others[rows, f] = -np.inf
    gaps = L[rows, f] - others.max(axis=1)
    Rp = R * (1 + 4 * U) + 2 * U * np.abs(L)
    Rp_others = Rp.copy()
    Rp_others[rows, f] = 0.0
    tol = float((Rp[rows, f] + Rp_others.max(axis=1)).max())
    below_f = proven_below(L, R, f)  # classes proven below the true answer
    below_f[rows, f] = True
    right = below_f.all(axis=1)
    maybe = np.nonzero(~right)[0]
    if maybe.size:  # the answer proven below the top class: wrong without exact work
        Lm, Rm = L[maybe], R[maybe]
        best = np.argmax(np.where(np.isnan(Lm), -np.inf, Lm), axis=1)
        beaten = proven_below(Lm, Rm, best)[np.arange(maybe.size), f[maybe]]
        maybe = maybe[~beaten]
    for b in maybe:
        h = hist_dict(x[b])
        right[b] = all(
            layer_gap_sign(layer.heads, classifier.theta, h, int(f[b]), int(c), cache) > 0
            for c in np.nonzero(~below_f[b])[0]
        )
    margin = float(np.nanmin(gaps)) if not np.all(np.isnan(gaps)) else np.nan
    return right, margin, tol, int(maybe.size)


def _wrong_class(
    layer: TokenLayer,
    classifier: Classifier,
    lst: tuple[int, ...],
    answer: int,
    decision: int,
    cache: dict,
) -> int:
    """A class y ≠ answer whose exact logit is ≥ the answer's on lst: the decision itself when it is
    a token, else (a tie at the top) another top class."""
    if decision != BOTTOM:
        return decision
    h = hist_dict(np.array(lst) - 1)
    f = answer - 1
    for y in range(layer.M):
        if y != f and layer_gap_sign(layer.heads, classifier.theta, h, y, f, cache) >= 0:
            return y + 1
    raise InternalError(f"verifier bug: {lst} decides ⊥ but no class reaches the answer's logit")


def verify_brute(
    model: MinMaxModel | TokenLayer | TokenHead,
    classifier: Classifier,
    task: str,
    n: int,
    chunk: int = 20_000,
) -> Verdict:
    """Check every multiset of n tokens (any number of heads); exact decisions; first
    counterexample."""
    layer = as_layer(model)
    check_inputs(layer, classifier, task, n)
    X = all_multisets(layer.M, n)
    prod = scaled_products(classifier.theta, [h.values for h in layer.heads])
    errors, first, margin, tol, rechecks = 0, None, np.inf, 0.0, 0
    cache: dict = {}
    step = min(chunk, chunk_rows(layer.M, n))
    for start in range(0, X.shape[0], step):
        xb = X[start : start + step]
        truth = min_max(xb)[0 if task == "min" else 1]
        right, m, t, r = _brute_chunk(layer, classifier, prod, xb - 1, truth, cache)
        margin, tol, rechecks = min(margin, m), max(tol, t), rechecks + r
        wrong = np.nonzero(~right)[0]
        errors += int(wrong.size)
        if first is None and wrong.size:
            first = (tuple(int(t) for t in xb[wrong[0]]), int(truth[wrong[0]]))
    margin, tol = to_original(margin, prod.shift), to_original(tol, prod.shift)
    correct = errors == 0
    margin = max(margin, 0.0) if correct else min(margin, 0.0)
    if correct:
        return Verdict(
            task, layer.M, n, "brute-force", True, margin, tol, errors=0, exact_rechecks=rechecks
        )
    lst, answer = first
    decision = int(decide_lists(layer, classifier, prod, np.array([lst]) - 1, cache)[0][0])
    if decision == answer:
        raise InternalError(
            f"verifier bug: brute force counts {lst} for {task} as wrong, the exact decision is "
            "right"
        )
    wrong_class = _wrong_class(layer, classifier, lst, answer, decision, cache)
    return Verdict(
        task,
        layer.M,
        n,
        "brute-force",
        False,
        margin,
        tol,
        lst,
        wrong_class,
        decision,
        errors=errors,
        exact_rechecks=rechecks,
    )
