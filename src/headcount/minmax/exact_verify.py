"""Verifiers: does a layer + classifier compute min (or max) on *every* list in [M]^n?

Margin (used by every verifier, brute.py's too): the smallest logit gap
    margin = min over all inputs x ∈ [M]^n and all classes y ≠ f(x) of ⟨θ_{f(x)} − θ_y, z(x)⟩,
where f is the task (min or max) and z the layer output. The classifier is correct on all inputs iff
margin > 0 (= 0 means a tie, i.e. ⊥, which counts as wrong). It is in the classifier's logit units.

* ``verify_exact_one_head`` — the spec's histogram-linearity test. For one head,
  ⟨θ_x − θ_y, Att(h)⟩ = Σ_ω h_ω Δ_ω / Σ_ω h_ω α_ω with Δ_ω = α_ω(C_xω − C_yω), C = Θ·Vᵀ. Over the
  histograms with minimum exactly x (h_x ≥ 1, h_ω = 0 for ω < x, Σ h = n) both the sign test and
  this ratio are minimised at a vertex of that simplex, e_x + (n−1)·e_ω for some ω ≥ x (a linear
  and a linear-fractional objective with positive denominator attain their minima at vertices; the
  vertices are integral, so they are real inputs: one x and n−1 copies of ω). Hence
      correct ⇔ Δ_x + (n−1)·Δ_ω > 0 for all x ≠ y, ω ≥ x      (max: ω ≤ x),
  and the margin is min over (x, y, ω) of G = (1−w)(C_xx − C_yx) + w(C_xω − C_yω) with
  w = (n−1)α_ω / (α_x + (n−1)α_ω), computed as a logistic so no exp over- or underflows.
  Cost: an M×M array per x (O(M³) cheap float operations in all), vectorized. The scan covers every
  multiset of [M]^n (scope "exhaustive").

* ``decide_exact`` — the exact decision of a layer + classifier on given lists (any number of
  heads); brute.py's ``verify_brute`` decides every multiset with it (``decide_lists``).

* ``verify_block_layer`` — several heads, block structure: if every head other than head k has zero
  value coordinates wherever the classifier's θ is non-zero, then ⟨θ_i, z⟩ = ⟨θ_i, Att_k(x)⟩ exactly
  for all i and x (the other heads' outputs are convex combinations of their values, which vanish on
  θ's support), so the classifier's decisions are those of head k alone: the one-head test applies.

What is proven. Every verdict is about the stored weights as exact reals (the real-arithmetic
model), and every decision is either proven by a rigorous float64 error bound (float_bounds.py: what
is assumed and why each bound holds) or taken in exact arithmetic (exact_signs.py: exact rational
inner products, Lindemann–Weierstrass for exact zeros, arb balls for the sign). A NaN or infinity is
never "proven": it falls through to the exact decision.

Entries whose float value is within their bound of zero are re-decided exactly. Margin and tolerance
are reported in the original units (scaled back, saturating at ±1.8e308); the margin is the float64
value (accurate to ±tolerance), clipped so that its sign agrees with the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import log

import numpy as np

from headcount.common.errors import InputError, InternalError, param
from headcount.common.resources import check_memory, check_work
from headcount.core.model import BOTTOM
from headcount.minmax.exact_signs import exact_inner, layer_gap_sign, sign_weighted_pair
from headcount.minmax.float_bounds import (
    Products,
    gap_bound_matrix,
    logit_bounds,
    pair_weights,
    proven_below,
    rho_weights,
    scaled_products,
    scan_floor,
    to_original,
)
from headcount.minmax.model import Classifier, MinMaxModel, TokenHead, TokenLayer, as_layer
from headcount.minmax.task import (
    check_sizes,
    check_task,
    check_tokens,
)

#: at most this many near-tied (x, y, ω) triples are re-decided exactly before giving up (undecided)
MAX_EXACT_RECHECKS = 200_000
#: verify_exact_one_head scans M²(M+1)/2 triples (x, y, ω ≥ x) per task: at most this many (M ≤
#: 1290). Measured ~10⁸ a second on the constructions and ~2.5·10⁷ on random heads (more entries
#: need their own bound), so a task takes seconds to a minute at the limit; certify's default uses
#: it up to M = 1024.
EXACT_MAX_TRIPLES = 2**30
#: float64 [M M] arrays the one-head verifier holds at once (C, its error bound, B, the scan's rows)
EXACT_ARRAYS = 10
#: A counterexample is a list of n tokens (one x and n−1 copies of ω), printed in full and
#: re-decided exactly on [1 n M] float64 arrays: the commands whose heads may fail (verify, search)
#: take n ≤ MAX_LIST_N.
MAX_LIST_N = 1_000_000


def check_counterexample_resources(M: int, n: int, what: str) -> None:
    """n ≤ MAX_LIST_N, and the exact re-decision of one counterexample ([1 n M], a few arrays) in
    memory."""
    if n > MAX_LIST_N:
        raise InputError(
            f"{what}: {param('n')} {n} is too large for a printed counterexample (a list of n "
            "tokens); "
            f"allowed up to {MAX_LIST_N}"
        )
    check_memory(8.0 * 4 * n * M, what)


def check_exact_resources(M: int, d: int, what: str) -> None:
    """The one-head verifier's bounds at M tokens and value dimension d: memory, then
    EXACT_MAX_TRIPLES."""
    check_memory(8.0 * M * (EXACT_ARRAYS * M + 4 * d), what)
    triples = float(M) * M * (M + 1) / 2
    check_work(
        triples, EXACT_MAX_TRIPLES, what, "(x, y, ω) triples per task (M²(M+1)/2)", param("M")
    )


@dataclass(frozen=True)
class Verdict:
    """Outcome of a verifier (see the module docstring for margin and what is proven)."""

    task: str
    M: int
    n: int
    method: str  # "exact-histogram" | "brute-force"
    correct: bool
    margin: float
    tolerance: float  # rigorous float64 error bound on margin (in the margin's units)
    worst_input: tuple[int, ...] | None = None  # sorted, 1-based; None when correct
    wrong_class: int | None = (
        None  # a class y with ⟨θ_y, z⟩ ≥ ⟨θ_{f(x)}, z⟩ on worst_input (exactly)
    )
    decision: int | None = None  # the classifier's exact decision on worst_input (token or BOTTOM)
    errors: int | None = None  # number of wrong multisets (brute force only)
    exact_rechecks: int = 0  # near-ties re-decided in exact arithmetic
    scope: str = "exhaustive"  # every verifier covers every multiset of [M]^n; none samples


def scope_of(*verdicts: Verdict) -> str:
    """The `scope` of a JSON result built from these verdicts: "exhaustive" when every one covers
    all multisets of [M]^n (always true of verify.py's and brute.py's verifiers), else "sampled"."""
    return "exhaustive" if all(v.scope == "exhaustive" for v in verdicts) else "sampled"


def _check_theta(layer: TokenLayer, classifier: Classifier) -> None:
    if classifier.theta.shape != (layer.M, layer.dim):
        raise InputError(
            f"classifier theta has shape {classifier.theta.shape}, expected [M d] = "
            f"{(layer.M, layer.dim)}"
        )


def check_inputs(layer: TokenLayer, classifier: Classifier, task: str, n: int) -> None:
    """InputError unless a verifier can take them: a known task, the size rule for M and n, and θ
    of shape [M d] for the layer (every verifier checks this first, brute.py's too)."""
    check_task(task)
    check_sizes(layer.M, n)
    _check_theta(layer, classifier)


def hist_dict(lst: np.ndarray) -> dict[int, int]:
    """{0-based token: count} of one list of 0-based tokens (Python ints, for exact arithmetic)."""
    out: dict[int, int] = {}
    for t in lst:
        out[int(t)] = out.get(int(t), 0) + 1
    return out


def _exact_argmax(
    layer: TokenLayer, theta: np.ndarray, hist: dict[int, int], cands, cache: dict
) -> int:
    """The exact decision (1-based token, or BOTTOM on a tie at the top) among candidate classes
    cands (0-based; every other class is already proven below one of them)."""
    best, tied = int(cands[0]), False
    for c in cands[1:]:
        sgn = layer_gap_sign(layer.heads, theta, hist, int(c), best, cache)
        if sgn > 0:
            best, tied = int(c), False
        elif sgn == 0:
            tied = True
    return BOTTOM if tied else best + 1


def decide_lists(
    layer: TokenLayer, classifier: Classifier, prod: Products, x: np.ndarray, cache: dict
) -> tuple[np.ndarray, int]:
    """Exact decisions [batch] (1-based token or BOTTOM) on lists x [batch n] of 0-based tokens,
    given the classifier's scaled products (float_bounds.scaled_products) and an exact-sign cache
    shared across chunks; and how many rows needed exact arithmetic. decide_exact's core, which
    brute force calls chunk by chunk."""
    L, R = logit_bounds(layer, prod, x)
    best = np.argmax(np.where(np.isnan(L), -np.inf, L), axis=1)
    cand = ~proven_below(L, R, best)
    cand[np.arange(L.shape[0]), best] = True
    out = best + 1
    unsure = np.nonzero(cand.sum(axis=1) > 1)[0]
    for b in unsure:
        out[b] = _exact_argmax(
            layer, classifier.theta, hist_dict(x[b]), np.nonzero(cand[b])[0], cache
        )
    return out, int(unsure.size)


def chunk_rows(M: int, n: int) -> int:
    """Rows per chunk of lists of n tokens over [M]: the [rows n M] gathers stay around 16 MB."""
    return max(1, (1 << 21) // (M * n))


def decide_exact(
    model: MinMaxModel | TokenLayer | TokenHead, classifier: Classifier, x: np.ndarray
) -> np.ndarray:
    """Exact decisions [batch] (1-based token or BOTTOM) of classifier on the layer output for lists
    x.

    Float64 logits with rigorous bounds first; where another class is not proven below the top one,
    the candidates are compared in exact arithmetic (exact_signs.layer_gap_sign) and a tie at the
    top gives BOTTOM."""
    layer = as_layer(model)
    x = check_tokens(x, layer.M)
    _check_theta(layer, classifier)
    prod = scaled_products(classifier.theta, [h.values for h in layer.heads])
    out = np.empty(x.shape[0], dtype=np.int64)
    cache: dict = {}
    step = chunk_rows(layer.M, x.shape[1])
    for start in range(0, x.shape[0], step):
        out[start : start + step] = decide_lists(
            layer, classifier, prod, x[start : start + step] - 1, cache
        )[0]
    return out


# ---------------------------------------------------------------- the one-head histogram verifier


@dataclass
class _Scan:
    """What the float64 scan of the one-head verifier found (mirrored 0-based coordinates)."""

    margin: float = np.inf  # min over triples of G̃ (scaled units)
    tolerance: float = 0.0  # max over triples of the bound on |G̃ − G|
    failure: tuple | None = None  # (G̃, x, y, ω) with G proven < 0, the smallest G̃ among them
    near: list | None = (
        None  # [(G̃, x, y, ω)] not decided by the float bound (first MAX_EXACT_RECHECKS)
    )
    near_total: int = 0


def _scan_one_head(s: np.ndarray, prod: Products, n: int) -> _Scan:
    """Float64 pass over every (x, y, ω ≥ x): G̃ and its rigorous bound (``gap_bound_matrix``).

    The bound is first taken per column ω with the largest B over y (O(M) per x, and for the
    constructions every entry clears it); only entries that do not clear it get their own bound."""
    C = prod.C[0]
    M = C.shape[0]
    B = gap_bound_matrix(prod, rho_weights(n))
    b_col = B.max(axis=0)  # [M]: max over y of B_yω
    floor = scan_floor(prod)
    ln_rest = log(n - 1)
    out = _Scan(near=[])
    for x in range(M):
        gap, tol_col, w, wc = _scan_x(C, B, b_col, s, x, ln_rest, floor)
        out.tolerance = max(out.tolerance, float(tol_col.max()))
        out.margin = min(out.margin, float(gap.min()))
        if not gap.min() > tol_col.max():  # else: every triple of this x proven positive
            _scan_row(out, x, gap, tol_col, B, w, wc, floor)
    return out


def _scan_x(C, B, b_col, s, x: int, ln_rest: float, floor: float):
    """For one x: G̃ [M M−x] over (y, ω ≥ x) (row y = x set to +inf), the column bound [M−x] that is
    ≥ every entry's own bound, and the weights w, 1 − w [M−x] of the n−1 copies of ω and of the
    single x."""
    with np.errstate(over="ignore"):
        w, wc = pair_weights((s[x:] - s[x]) + ln_rest)
    with np.errstate(under="ignore"):
        gap = (C[x, x:][None, :] - C[:, x:]) * w[None, :]
        gap += (C[x, x] - C[:, x])[:, None] * wc[None, :]
        tol_col = (B[x, x:] + b_col[x:]) * w + (B[x, x] + b_col[x]) * wc + floor
    gap[x, :] = np.inf  # y = x is not a wrong class
    return gap, tol_col, w, wc


def _entry_tol(B, x: int, ys: np.ndarray, oms: np.ndarray, w, wc, floor: float) -> np.ndarray:
    """The bound on |G̃ − G| of the triples (x, ys, x + oms) (``gap_bound_matrix``)."""
    with np.errstate(under="ignore"):
        return (B[x, x + oms] + B[ys, x + oms]) * w[oms] + (B[x, x] + B[ys, x]) * wc[oms] + floor


def _scan_row(out: _Scan, x: int, gap, tol_col, B, w, wc, floor) -> None:
    """Triples of one x not cleared by the column bound: their own bound, then proven failures (G̃ <
    −bound) and near-ties (|G̃| ≤ bound, or NaN: never "passes") folded into the scan summary."""
    ys, oms = np.nonzero(~(gap > tol_col[None, :]))
    g = gap[ys, oms]
    tol = _entry_tol(B, x, ys, oms, w, wc, floor)
    fail = g < -tol
    if fail.any():
        k = int(np.argmin(np.where(fail, g, np.inf)))
        if out.failure is None or g[k] < out.failure[0]:
            out.failure = (float(g[k]), x, int(ys[k]), x + int(oms[k]))
    if out.failure is not None:
        return  # a failure is proven: near-ties no longer matter
    near = np.nonzero(~(g > tol))[0]
    out.near_total += near.size
    room = MAX_EXACT_RECHECKS - len(out.near)
    out.near.extend((float(g[k]), x, int(ys[k]), x + int(oms[k])) for k in near[:room])


def _recheck_near(s, T, V, n: int, near: list) -> tuple[tuple[int, int, int] | None, int]:
    """Exact signs of the near triples, smallest G̃ first; the first with Δ_x + (n−1)Δ_ω ≤ 0, and
    the number re-decided."""
    cache: dict = {}

    def c_exact(i: int, w: int):
        if (i, w) not in cache:
            cache[(i, w)] = exact_inner(T[i], V[w])
        return cache[(i, w)]

    rechecks = 0
    for _, x, y, om in sorted(near, key=lambda t: (np.nan_to_num(t[0], nan=0.0), t[1:])):
        rechecks += 1
        dx = c_exact(x, x) - c_exact(y, x)
        dw = c_exact(x, om) - c_exact(y, om)
        if sign_weighted_pair(s[x], dx, s[om], (n - 1) * dw) <= 0:
            return (x, y, om), rechecks
    return None, rechecks


def verify_exact_one_head(head: TokenHead, classifier: Classifier, task: str, n: int) -> Verdict:
    """The exact histogram-linearity verifier for one head (module docstring: what it proves)."""
    check_inputs(TokenLayer((head,)), classifier, task, n)
    M = head.M
    s, V, T = head.scores, head.values, classifier.theta
    if task == "max":  # mirror ω ↦ M+1−ω: max over [M] becomes min over the reversed order
        s, V, T = s[::-1], V[::-1], T[::-1]
    prod = scaled_products(T, [V])
    scan = _scan_one_head(s, prod, n)
    margin = to_original(scan.margin, prod.shift)
    tolerance = to_original(scan.tolerance, prod.shift)
    rechecks = 0
    if scan.failure is not None:
        worst = scan.failure[1:]
    else:
        worst, rechecks = _recheck_near(s, T, V, n, scan.near)
        if worst is None and scan.near_total > len(scan.near):
            raise InputError(  # a limit the user can act on: brute force decides small cases
                f"undecided: {scan.near_total} near-tied (x, y, ω) triples (more than "
                f"{MAX_EXACT_RECHECKS}) "
                "to re-decide exactly; use verify_brute for a small case"
            )
    correct = worst is None
    margin = max(margin, 0.0) if correct else min(margin, 0.0)
    if correct:
        return Verdict(
            task, M, n, "exact-histogram", True, margin, tolerance, exact_rechecks=rechecks
        )

    def token(i: int) -> int:  # mirrored 0-based index -> original 1-based token
        return M - i if task == "max" else i + 1

    x, y, om = worst
    lst = tuple(sorted([token(x)] + [token(om)] * (n - 1)))
    decision = int(decide_exact(head, classifier, np.array([lst]))[0])
    if decision == token(x):
        raise InternalError(
            f"verifier bug: the exact verifier's counterexample {lst} for {task} is decided "
            "correctly by the exact decision"
        )
    return Verdict(
        task,
        M,
        n,
        "exact-histogram",
        False,
        margin,
        tolerance,
        lst,
        token(y),
        decision,
        exact_rechecks=rechecks,
    )


# ---------------------------------------------------------------- block reduction


def block_head(layer: TokenLayer, classifier: Classifier) -> int:
    """The index k of the only head whose values meet the classifier's support (InputError if the
    layer is not block-structured for this classifier)."""
    support = np.any(classifier.theta != 0, axis=0)  # [d]
    touching = [k for k, h in enumerate(layer.heads) if np.any(h.values[:, support] != 0)]
    if len(touching) > 1:
        raise InputError(
            f"not block-structured: heads {touching} all have values on the classifier's "
            "coordinates"
        )
    return touching[0] if touching else 0


def verify_block_layer(
    layer: TokenLayer | MinMaxModel, classifier: Classifier, task: str, n: int
) -> Verdict:
    """Exact verification of a multi-head layer whose classifier reads one head's block only."""
    layer = as_layer(layer)
    check_inputs(layer, classifier, task, n)
    return verify_exact_one_head(layer.heads[block_head(layer, classifier)], classifier, task, n)
