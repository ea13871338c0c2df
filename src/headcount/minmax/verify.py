"""Verifiers: does a layer + classifier compute min (or max) on *every* list in [M]^n?

Margin (used by every verifier here): the smallest logit gap
    margin = min over all inputs x ∈ [M]^n and all classes y ≠ f(x) of ⟨θ_{f(x)} − θ_y, z(x)⟩,
where f is the task (min or max) and z the layer output. The classifier is correct on all inputs iff
margin > 0 (= 0 means a tie, i.e. ⊥, which counts as wrong). It is in the classifier's logit units.

* ``verify_exact_one_head`` — the spec's histogram-linearity test. For one head,
  ⟨θ_x − θ_y, Att(h)⟩ = Σ_ω h_ω Δ_ω / Σ_ω h_ω α_ω with Δ_ω = α_ω(C_xω − C_yω), C = Θ·Vᵀ. Over the histograms
  with minimum exactly x (h_x ≥ 1, h_ω = 0 for ω < x, Σ h = n) both the sign test and this ratio are
  minimised at a vertex of that simplex, e_x + (n−1)·e_ω for some ω ≥ x (a linear and a linear-fractional
  objective with positive denominator attain their minima at vertices; the vertices are integral, so
  they are real inputs: one x and n−1 copies of ω). Hence
      correct ⇔ Δ_x + (n−1)·Δ_ω > 0 for all x ≠ y, ω ≥ x      (max: ω ≤ x),
  and the margin is min over (x, y, ω) of (1−w)(C_xx − C_yx) + w(C_xω − C_yω) with
  w = (n−1)α_ω / (α_x + (n−1)α_ω), computed as a logistic so no exp over- or underflows.
  Cost: an M×M array per x (O(M³) cheap float operations in all), vectorized.

  What is proven: the statement is about the stored weights as exact reals (real-arithmetic model).
  The scan is float64 with a documented error bound ``tolerance`` (from the matrix product, the score
  differences and the logistic; it assumes libm's exp is accurate to a few ulp). Triples whose float
  value is below −tolerance are failures; triples within ±tolerance are re-decided exactly
  (headcount.minmax.exact: rational coefficients, Lindemann–Weierstrass for exact zeros, arb balls for
  the sign). So the verdict is exact up to that float error bound; the reported margin is the float64
  value (accurate to ±tolerance), clipped so that its sign agrees with the verdict.

* ``verify_brute`` — every multiset (sorted list) of n tokens, any number of heads; float64 decisions,
  re-decided exactly where the top two logits are within a float error bound. Counts errors.

* ``verify_block_layer`` — several heads, block structure: if every head other than head k has zero
  value coordinates wherever the classifier's θ is non-zero, then ⟨θ_i, z⟩ = ⟨θ_i, Att_k(x)⟩ exactly for all
  i and x (the other heads' outputs are convex combinations of their values, which vanish on θ's
  support), so the classifier's decisions are those of head k alone: the one-head test applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import log

import numpy as np
from scipy.special import expit

from headcount.core.symbols import BOTTOM
from headcount.minmax.exact import exact_inner, layer_gap_sign, sign_weighted_pair
from headcount.minmax.model import Classifier, MinMaxModel, TokenHead, TokenLayer, as_layer, forward
from headcount.minmax.task import all_multisets, check_sizes, check_task, min_max

U = 2.0**-53
#: at most this many near-tied (x, y, ω) triples are re-decided exactly before giving up
MAX_EXACT_RECHECKS = 200_000


@dataclass(frozen=True)
class Verdict:
    """Outcome of a verifier (see the module docstring for margin and what is proven)."""

    task: str
    M: int
    n: int
    method: str  # "exact-histogram" | "brute-force"
    correct: bool
    margin: float
    tolerance: float  # float64 error bound on margin (0 for exact arithmetic)
    worst_input: tuple[int, ...] | None = None  # sorted, 1-based; None when correct
    wrong_class: int | None = None  # the class y with ⟨θ_y, z⟩ ≥ ⟨θ_{f(x)}, z⟩ on worst_input
    decision: int | None = None  # the classifier's exact decision on worst_input (token or BOTTOM)
    errors: int | None = None  # number of wrong multisets (brute force only)
    exact_rechecks: int = 0  # near-ties re-decided in exact arithmetic


def _check(layer: TokenLayer, classifier: Classifier, task: str, n: int) -> None:
    check_task(task)
    check_sizes(layer.M, n)
    if classifier.theta.shape != (layer.M, layer.dim):
        raise ValueError(f"classifier theta has shape {classifier.theta.shape}, expected [M d] = {(layer.M, layer.dim)}")


def logit_tolerance(layer: TokenLayer, classifier: Classifier, n: int) -> float:
    """A (generous) bound on the float64 error of any logit ⟨θ_i, z⟩ computed by forward + logits."""
    smax = max(float(np.abs(h.scores).max()) for h in layer.heads)
    vmax = max(float(np.abs(h.values).max()) for h in layer.heads)
    t1 = float(np.abs(classifier.theta).sum(axis=1).max())
    return 16 * U * (n + layer.dim + 10 + smax) * len(layer.heads) * t1 * vmax + 1e-300


def decide_exact(model: MinMaxModel | TokenLayer | TokenHead, classifier: Classifier, x: np.ndarray) -> np.ndarray:
    """Exact decisions [batch] (1-based token or BOTTOM) of classifier on the layer output for lists x.

    float64 logits first; where other classes come within the float error bound of the top one, the
    candidates are compared in exact arithmetic (exact.layer_gap_sign) and a tie gives BOTTOM."""
    layer = as_layer(model)
    x = np.atleast_2d(np.asarray(x))
    n = x.shape[1]
    logits = classifier.logits(forward(layer, x))  # [batch M]
    tol = logit_tolerance(layer, classifier, n)
    top = logits.max(axis=1)
    out = logits.argmax(axis=1) + 1
    near = logits >= (top - 2 * tol)[:, None]
    for b in np.nonzero(near.sum(axis=1) > 1)[0]:
        hist: dict[int, int] = {}
        for t in x[b]:
            hist[int(t) - 1] = hist.get(int(t) - 1, 0) + 1
        best, tied = None, False
        for c in np.nonzero(near[b])[0]:
            if best is None:
                best = int(c)
                continue
            sgn = layer_gap_sign(layer.heads, classifier.theta, hist, int(c), best)
            if sgn > 0:
                best, tied = int(c), False
            elif sgn == 0:
                tied = True
        out[b] = BOTTOM if tied else best + 1
    return out


def verify_exact_one_head(head: TokenHead, classifier: Classifier, task: str, n: int) -> Verdict:
    """The exact histogram-linearity verifier for one head (module docstring: what it proves)."""
    _check(TokenLayer((head,)), classifier, task, n)
    M, d = head.M, head.dim
    s, V, T = head.scores, head.values, classifier.theta
    if task == "max":  # mirror ω ↦ M+1−ω: max over [M] becomes min over the reversed order
        s, V, T = s[::-1], V[::-1], T[::-1]
    C = T @ V.T  # [class token]: C_iω = ⟨θ_i, v_ω⟩
    cabs = float((np.abs(T) @ np.abs(V).T).max())
    tol = 8 * U * cabs * (d + 10 + 2 * float(np.abs(s).max()) + log(n)) + 1e-300
    ln_rest = log(n - 1)

    best = (np.inf, -1, -1, -1)  # (gap, x, y, ω) in mirrored 0-based coordinates
    near: list[tuple[float, int, int, int]] = []
    too_many = False
    for x in range(M):
        t = s[x:] - s[x] + ln_rest  # [M−x]: log((n−1)α_ω/α_x)
        w, wc = expit(t), expit(-t)  # weight of the n−1 copies of ω, of the single x
        dx = C[x, x] - C[:, x]  # [M]: C_xx − C_yx over y
        gap = C[x, x:][None, :] - C[:, x:]  # [M M−x]: C_xω − C_yω
        gap *= w[None, :]
        gap += dx[:, None] * wc[None, :]
        gap[x, :] = np.inf  # y = x is not a wrong class
        k = int(np.argmin(gap))
        y, om = divmod(k, M - x)
        if gap[y, om] < best[0]:
            best = (float(gap[y, om]), x, y, x + om)
        # near-ties only matter while no pair has failed beyond doubt (best > −tol)
        if not too_many and best[0] >= -tol and gap[y, om] <= tol:
            ys, oms = np.nonzero(np.abs(gap) <= tol)
            near.extend((float(gap[a, b]), x, int(a), x + int(b)) for a, b in zip(ys, oms))
            too_many = len(near) > MAX_EXACT_RECHECKS

    margin, worst = best[0], best[1:]
    rechecks = 0
    if margin >= -tol:  # undecided in float64 unless every near triple is positive exactly
        if too_many:
            raise ValueError(
                f"more than {MAX_EXACT_RECHECKS} near-tied (x, y, ω) triples to re-decide exactly; "
                "use verify_brute for a small case"
            )
        cache: dict = {}

        def c_exact(i: int, w: int):
            if (i, w) not in cache:
                cache[(i, w)] = exact_inner(T[i], V[w])
            return cache[(i, w)]

        worst = None
        for _, x, y, om in sorted(near):
            rechecks += 1
            dx = c_exact(x, x) - c_exact(y, x)
            dw = c_exact(x, om) - c_exact(y, om)
            if sign_weighted_pair(s[x], dx, s[om], (n - 1) * dw) <= 0:
                worst = (x, y, om)
                break
    correct = worst is None
    margin = max(margin, 0.0) if correct else min(margin, 0.0)
    if correct:
        return Verdict(task, M, n, "exact-histogram", True, margin, tol, exact_rechecks=rechecks)

    def token(i: int) -> int:  # mirrored 0-based index -> original 1-based token
        return M - i if task == "max" else i + 1

    x, y, om = worst
    lst = tuple(sorted([token(x)] + [token(om)] * (n - 1)))
    decision = int(decide_exact(head, classifier, np.array([lst]))[0])
    answer = token(x)
    if decision == answer:
        raise AssertionError(f"verifier bug: counterexample {lst} for {task} is decided correctly")
    return Verdict(task, M, n, "exact-histogram", False, margin, tol, lst, token(y), decision, exact_rechecks=rechecks)


def verify_brute(
    model: MinMaxModel | TokenLayer | TokenHead, classifier: Classifier, task: str, n: int, chunk: int = 20_000
) -> Verdict:
    """Check every multiset of n tokens (any number of heads); exact decisions; first counterexample."""
    layer = as_layer(model)
    _check(layer, classifier, task, n)
    X = all_multisets(layer.M, n)
    tol = logit_tolerance(layer, classifier, n)
    errors, first, margin = 0, None, np.inf
    for start in range(0, X.shape[0], chunk):
        xb = X[start : start + chunk]
        truth = min_max(xb)[0 if task == "min" else 1]
        logits = classifier.logits(forward(layer, xb))  # [batch M]
        rows = np.arange(xb.shape[0])
        true_logit = logits[rows, truth - 1].copy()
        logits[rows, truth - 1] = -np.inf
        gaps = true_logit - logits.max(axis=1)  # [batch]
        margin = min(margin, float(gaps.min()))
        dec = np.where(gaps > 2 * tol, truth, -2)  # -2: decide exactly
        unsure = np.nonzero(dec == -2)[0]
        if unsure.size:
            dec[unsure] = decide_exact(layer, classifier, xb[unsure])
        wrong = np.nonzero(dec != truth)[0]
        errors += int(wrong.size)
        if first is None and wrong.size:
            b = int(wrong[0])
            lg = classifier.logits(forward(layer, xb[b : b + 1]))[0]
            lg[truth[b] - 1] = -np.inf
            first = (tuple(int(t) for t in xb[b]), int(np.argmax(lg)) + 1, int(dec[b]))
    correct = errors == 0
    margin = max(margin, 0.0) if correct else min(margin, 0.0)
    if correct:
        return Verdict(task, layer.M, n, "brute-force", True, margin, 2 * tol, errors=0)
    return Verdict(task, layer.M, n, "brute-force", False, margin, 2 * tol, first[0], first[1], first[2], errors=errors)


def block_head(layer: TokenLayer, classifier: Classifier) -> int:
    """The index k of the only head whose values meet the classifier's support (ValueError if the
    layer is not block-structured for this classifier)."""
    support = np.any(classifier.theta != 0, axis=0)  # [d]
    touching = [k for k, h in enumerate(layer.heads) if np.any(h.values[:, support] != 0)]
    if len(touching) > 1:
        raise ValueError(f"not block-structured: heads {touching} all have values on the classifier's coordinates")
    return touching[0] if touching else 0


def verify_block_layer(layer: TokenLayer | MinMaxModel, classifier: Classifier, task: str, n: int) -> Verdict:
    """Exact verification of a multi-head layer whose classifier reads one head's block only."""
    layer = as_layer(layer)
    _check(layer, classifier, task, n)
    return verify_exact_one_head(layer.heads[block_head(layer, classifier)], classifier, task, n)
