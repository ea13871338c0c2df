"""The one-head lower bound (Theorem 1 of seed 004; spec/minmax.md, "Lower bound for one head"), executable.

* ``longest_monotone_run`` — Lemma 1 (Erdős–Szekeres): the longest non-decreasing and the longest
  non-increasing subsequence of the attention weights α_ω = exp(s_ω) along the tokens 1..M, O(M log M)
  patience sorting with the actual tokens reconstructed, and which task each run obstructs.
* ``lemma6_quantities`` — the quantities of Lemma 6 for a head (N, d, p, ℓ, the run length) and the two
  alternatives "d ≥ N/2" and "d·(p + log₂ ℓ) > N" as booleans. The exact constant of Lemma 6 is marked
  uncertain in the spec, so nothing here asserts the lemma; it only reports.
* ``one_head_counterexamples`` — for one head + two classifiers: the exact verifier for min and for max,
  each counterexample re-decided (float and exact) to confirm it.
* ``search_single_head`` / ``smallest_dimension`` — a search that tries hard to find one head solving both
  tasks (Adam on a softplus-hinge surrogate of the exact verifier's vertex constraints), every restart
  verified exactly.

Which run obstructs which task (Lemmas 2–5). For one head, ⟨θ_x − θ_y, Att(h)⟩ has the sign of
Σ_ω h_ω Δ_ω^{x,y}, Δ_ω^{x,y} = α_ω⟨θ_x − θ_y, v_ω⟩. A correct *min* classifier needs, for x < y and every
z ≥ y (inputs (x,z..z), (y,z..z), ...), Δ_x^{x,y} > 0 and |Δ_z^{x,y}| < Δ_x^{x,y}/(n−1). Take a run of tokens
x_1 < x_2 < ... < x_L and λ_i = (θ_{x_i} − θ_{x_{i+1}}) / ⟨θ_{x_i} − θ_{x_{i+1}}, v_{x_i}⟩. Then ⟨λ_i, v_{x_i}⟩ = 1
and, for j > i, |⟨λ_i, v_{x_j}⟩| < (α_{x_i}/α_{x_j})/(n−1). The factor α_{x_i}/α_{x_j} is ≤ 1 exactly when
α does not decrease along the run: a long **non-decreasing** run of α along increasing tokens forces the
"approximately triangular" system of Lemma 6 on the values, so it **obstructs min** (min wants the
smaller tokens to hold the attention — the construction's min head has α strictly decreasing, whose
longest non-decreasing run has length 1). Max is the mirror image ω ↦ M+1−ω, which turns a
non-increasing run along increasing tokens into a non-decreasing one: a long **non-increasing** run
**obstructs max**. By Erdős–Szekeres one of the two runs has length ≥ ⌊1 + √(M−1)⌋ for every head, so
every head is obstructed for at least one task (ties in α count for both directions).
"""

from __future__ import annotations

import time
from bisect import bisect_right
from dataclasses import dataclass, field
from fractions import Fraction
from math import isqrt, log, log2, sqrt
from typing import Any

import numpy as np
from scipy.special import expit

from headcount.minmax.model import Classifier, MinMaxModel, TokenHead, TokenLayer, predict
from headcount.minmax.task import check_sizes, min_max
from headcount.minmax.verify import decide_exact, verify_exact_one_head

#: p is reported exactly for float64 values (every finite double is in 2^-1074·Z); above this it is capped
P_CAP = 1074


# ---------------------------------------------------------------------------------------------- Lemma 1


@dataclass(frozen=True)
class MonotoneRun:
    """Longest monotone runs of the attention weights along tokens 1..M (tokens 1-based, increasing).

    non_decreasing obstructs min, non_increasing obstructs max (module docstring)."""

    non_decreasing: tuple[int, ...]
    non_increasing: tuple[int, ...]

    @property
    def length(self) -> int:
        return max(len(self.non_decreasing), len(self.non_increasing))

    @property
    def longer(self) -> str:
        """'non-decreasing', 'non-increasing' or 'tie'."""
        a, b = len(self.non_decreasing), len(self.non_increasing)
        return "tie" if a == b else ("non-decreasing" if a > b else "non-increasing")

    @property
    def obstructs(self) -> str:
        """The task the longer run obstructs: 'min' (non-decreasing), 'max' (non-increasing), 'both' (tie)."""
        return {"tie": "both", "non-decreasing": "min", "non-increasing": "max"}[self.longer]

    def report(self) -> dict[str, Any]:
        return {
            "non_decreasing": list(self.non_decreasing),
            "non_increasing": list(self.non_increasing),
            "length_non_decreasing": len(self.non_decreasing),
            "length_non_increasing": len(self.non_increasing),
            "longer": self.longer,
            "obstructs": self.obstructs,
            "length": self.length,
        }


def _longest_non_decreasing(a: list[float]) -> tuple[int, ...]:
    """Indices (0-based, increasing) of one longest non-decreasing subsequence: patience sorting."""
    tails: list[float] = []  # tails[k] = smallest last value of a run of length k+1
    tail_idx: list[int] = []
    prev = [-1] * len(a)
    for i, v in enumerate(a):
        k = bisect_right(tails, v)  # non-decreasing: equal values extend a run
        prev[i] = tail_idx[k - 1] if k else -1
        if k == len(tails):
            tails.append(v)
            tail_idx.append(i)
        else:
            tails[k] = v
            tail_idx[k] = i
    out = []
    i = tail_idx[-1] if tail_idx else -1
    while i >= 0:
        out.append(i)
        i = prev[i]
    return tuple(reversed(out))


def longest_monotone_run(weights: np.ndarray | TokenHead) -> MonotoneRun:
    """Longest non-decreasing and non-increasing subsequences of a sequence over tokens 1..M.

    ``weights`` is the attention weights α [M], or equivalently the scores s [M] (α = exp(s) is
    increasing, so the runs are the same; compare scores to avoid exp under/overflow), or a TokenHead
    (its scores are used). O(M log M); the returned tokens are 1-based and increasing."""
    a = weights.scores if isinstance(weights, TokenHead) else np.asarray(weights, dtype=np.float64)
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"need a finite 1-D array of weights or scores, got shape {a.shape}")
    vals = a.tolist()
    up = _longest_non_decreasing(vals)
    down = _longest_non_decreasing([-v for v in vals])
    return MonotoneRun(tuple(i + 1 for i in up), tuple(i + 1 for i in down))


# ---------------------------------------------------------------------------------------------- Lemma 6


def _value_bits(values: np.ndarray) -> int:
    """Smallest p ≥ 0 with every value in 2^-p·Z (exact for float64; at most P_CAP)."""
    p = 0
    for v in np.unique(values.ravel()).tolist():
        den = Fraction(v).denominator  # a power of two for a finite double
        p = max(p, den.bit_length() - 1)
    return min(p, P_CAP)


def lemma_n(M: int, n: int) -> int:
    """N = min{⌊1 + √(M−1)⌋, ⌊(n−1)/2⌋} (integer arithmetic)."""
    return min(1 + isqrt(M - 1), (n - 1) // 2)


def lemma6_quantities(
    head: TokenHead, n: int, value_bits: int | None = None, value_norm: float | None = None
) -> dict:
    """Lemma 6's quantities for one head at list length n (reported, not asserted).

    N = min{⌊1+√(M−1)⌋, ⌊(n−1)/2⌋}; d = value dimension; p = value bits (smallest p with values in 2^-p·Z,
    computed exactly from the float64 values unless given); ℓ = max_ω ‖v_ω‖₂ unless given; the monotone run
    (Lemma 1; its length is ≥ ⌊1+√(M−1)⌋ ≥ N by Erdős–Szekeres). The spec's two alternatives:
    ``alt_dimension`` = (d ≥ N/2), ``alt_precision`` = (d·(p + log₂ ℓ) > N), ``either`` = their or. Also the
    reconstructed form's two sides, max{d, p + log₂ ℓ} and √(N/2), as numbers only."""
    if not isinstance(head, TokenHead):
        raise TypeError(f"expected a TokenHead, got {type(head).__name__}")
    check_sizes(head.M, n)
    M, d = head.M, head.dim
    N = lemma_n(M, n)
    p = _value_bits(head.values) if value_bits is None else int(value_bits)
    if value_norm is None:  # ℓ = max ‖v_ω‖, scaled by max |v| first so that huge values do not overflow
        top = float(np.abs(head.values).max(initial=0.0))
        scaled = float(np.linalg.norm(head.values / top, axis=1).max()) if top > 0 else 0.0
        log_ell = log2(top) + log2(scaled) if top > 0 else float("-inf")
        ell = top * scaled
    else:
        ell = float(value_norm)
        log_ell = log2(ell) if ell > 0 else float("-inf")
    run = longest_monotone_run(head)
    bits = d * (p + log_ell)
    finite = lambda x: x if np.isfinite(x) else None  # noqa: E731 — JSON has no ±inf (ℓ = 0, or ℓ > 1.8e308)
    return {
        "M": M,
        "n": n,
        "N": N,
        "erdos_szekeres_length": 1 + isqrt(M - 1),
        "d": d,
        "p": p,
        "p_given": value_bits is not None,
        "ell": finite(ell),
        "log2_ell": finite(log_ell),
        "run": run.report(),
        "run_length": run.length,
        "run_at_least_N": run.length >= N,
        "d_times_p_plus_log2_ell": finite(bits),
        "alt_dimension": bool(d >= N / 2),
        "alt_precision": bool(bits > N),
        "either": bool(d >= N / 2 or bits > N),
        "max_d_p_plus_log2_ell": finite(max(d, p + log_ell)),
        "sqrt_half_N": sqrt(N / 2),
    }


# ---------------------------------------------------------------------------------------------- Theorem 1


def _single_head(model: MinMaxModel) -> TokenHead:
    if not isinstance(model, MinMaxModel):
        raise TypeError(f"expected a MinMaxModel, got {type(model).__name__}")
    if len(model.layer.heads) != 1:
        raise ValueError(
            f"the one-head tools need a single-head model, this one has {len(model.layer.heads)} heads"
        )
    return model.layer.heads[0]


def _task_report(model: MinMaxModel, task: str, n: int) -> dict:
    head = _single_head(model)
    clf = model.classifier_min if task == "min" else model.classifier_max
    v = verify_exact_one_head(head, clf, task, n)
    out: dict[str, Any] = {
        "correct": v.correct,
        "margin": v.margin,
        "tolerance": v.tolerance,
        "worst_input": None,
    }
    if v.correct:
        return out
    x = np.array([v.worst_input], dtype=np.int64)
    truth = int(min_max(x)[0 if task == "min" else 1][0])
    exact = int(decide_exact(head, clf, x)[0])
    flt = int(predict(model, x)[0 if task == "min" else 1][0])
    out.update(
        worst_input=list(v.worst_input),
        answer=truth,
        decision_exact=exact,
        decision_float=flt,
        wrong_class=v.wrong_class,
        confirmed=exact != truth,
    )
    return out


def one_head_counterexamples(model: MinMaxModel, n: int | None = None) -> dict:
    """Theorem 1 for a given single-head model: exact verdicts for min and for max (margin, and where
    wrong the worst input, its true answer and the float64 and exact decisions — ``confirmed`` when the
    exact decision differs from the answer), plus the monotone run report. ``n`` defaults to
    model.info["n"]."""
    head = _single_head(model)
    if n is None:
        if "n" not in model.info:
            raise ValueError("give n (the model's info has no 'n')")
        n = int(model.info["n"])
    rep = {task: _task_report(model, task, n) for task in ("min", "max")}
    rep["solves_both"] = rep["min"]["correct"] and rep["max"]["correct"]
    rep["run"] = longest_monotone_run(head).report()
    rep["M"], rep["n"], rep["d"] = head.M, n, head.dim
    return rep


# ---------------------------------------------------------------------------------------------- search


def _task_loss_grad(s, V, T, n, mu, tau):
    """Softplus-hinge surrogate for one task (min, in the given token order) and its gradients.

    Over the verifier's vertex triples (x, y ≠ x, ω ≥ x) the normalised gap is
    g = (1−w)(C_xx − C_yx) + w(C_xω − C_yω), w = σ(s_ω − s_x + ln(n−1)), C = T·Vᵀ; the loss is the mean of
    softplus(τ(μ − g))/τ. Returns (loss, min g, ds, dV, dT)."""
    M = s.shape[0]
    C = T @ V.T
    diag = np.diag(C)
    D1 = diag[:, None] - C.T  # [x y]: C_xx − C_yx
    D2 = C[:, None, :] - C[None, :, :]  # [x y ω]: C_xω − C_yω
    W = expit(s[None, :] - s[:, None] + log(n - 1))  # [x ω]
    g = (1 - W)[:, None, :] * D1[:, :, None] + W[:, None, :] * D2
    mask = np.triu(np.ones((M, M), dtype=bool))[:, None, :] & ~np.eye(M, dtype=bool)[:, :, None]
    cnt = mask.sum()
    z = tau * (mu - g)
    loss = float((np.logaddexp(0, z) * mask).sum() / (tau * cnt))
    G = expit(z) * mask / cnt  # −dL/dg
    dD1 = -(G * (1 - W)[:, None, :]).sum(axis=2)
    dD2 = -G * W[:, None, :]
    dW = -(G * (D2 - D1[:, :, None])).sum(axis=1)
    dC = np.diag(dD1.sum(axis=1)) - dD1.T + dD2.sum(axis=1) - dD2.sum(axis=0)
    E = dW * W * (1 - W)
    ds = E.sum(axis=0) - E.sum(axis=1)
    gmin = float(np.where(mask, g, np.inf).min())
    return loss, gmin, ds, dC.T @ T, dC @ V


def _loss_grad(params, n, mu, tau, reg):
    s, V, Tmin, Tmax = params
    l1, g1, ds1, dV1, dT1 = _task_loss_grad(s, V, Tmin, n, mu, tau)
    l2, g2, ds2, dV2, dT2 = _task_loss_grad(s[::-1], V[::-1], Tmax[::-1], n, mu, tau)
    loss = l1 + l2 + reg * float((V**2).sum() + (Tmin**2).sum() + (Tmax**2).sum())
    grads = (ds1 + ds2[::-1], dV1 + dV2[::-1] + 2 * reg * V, dT1 + 2 * reg * Tmin, dT2[::-1] + 2 * reg * Tmax)
    return loss, (g1, g2), grads


@dataclass
class SearchResult:
    """Outcome of search_single_head. margins are the exact verifier's (logit units, > 0 = correct)."""

    M: int
    n: int
    d: int
    restarts: int
    steps: int
    seed: int
    succeeded: bool  # some restart solves both tasks (exactly verified)
    best_margins: tuple[
        float, float
    ]  # (min, max) of the restart with the largest min(margin_min, margin_max)
    best_model: MinMaxModel
    best_report: dict  # one_head_counterexamples of the best model (counterexamples confirmed when it fails)
    runs: list[dict] = field(default_factory=list)  # per restart: margins, correct, worst inputs, confirmed
    seconds: float = 0.0

    @property
    def all_failed_confirmed(self) -> bool:
        """Every restart failed, and each has a confirmed counterexample (for at least one task)."""
        return all(r["confirmed_counterexample"] for r in self.runs)

    def summary(self) -> dict:
        return {
            "M": self.M,
            "n": self.n,
            "d": self.d,
            "restarts": self.restarts,
            "steps": self.steps,
            "seed": self.seed,
            "succeeded": self.succeeded,
            "best_margins": list(self.best_margins),
            "all_failed_confirmed": self.all_failed_confirmed,
            "seconds": round(self.seconds, 3),
            "best_counterexamples": {t: self.best_report[t]["worst_input"] for t in ("min", "max")},
        }


def search_single_head(
    M: int,
    n: int,
    d: int,
    *,
    restarts: int = 2,
    steps: int = 60,
    seed: int = 0,
    lr: float = 0.05,
    mu: float = 1.0,
    tau: float = 4.0,
    reg: float = 1e-3,
) -> SearchResult:
    """Try hard to find ONE head (scores s, values V [M d]) and two classifiers θ_min, θ_max solving both
    min and max on [M]^n. Each restart: random init, ``steps`` Adam steps on the softplus-hinge surrogate
    of the exact verifier's vertex constraints for both tasks (+ a small L2 term fixing the scale), then
    both tasks verified exactly (verify_exact_one_head). Keeps the restart with the largest
    min(margin_min, margin_max); every failing restart's counterexamples are re-decided to confirm them."""
    check_sizes(M, n)
    if d < 1 or restarts < 1 or steps < 0:
        raise ValueError(
            f"need d ≥ 1, restarts ≥ 1, steps ≥ 0; got d={d}, restarts={restarts}, steps={steps}"
        )
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    best = None
    runs = []
    for r in range(restarts):
        params = [
            rng.standard_normal(M),
            rng.standard_normal((M, d)),
            rng.standard_normal((M, d)),
            rng.standard_normal((M, d)),
        ]
        if r % 2 == 1:  # every other restart starts from equal attention
            params[0] = np.zeros(M)
        m1 = [np.zeros_like(p) for p in params]
        m2 = [np.zeros_like(p) for p in params]
        b1, b2, eps = 0.9, 0.999, 1e-8
        for t in range(1, steps + 1):
            _, _, grads = _loss_grad(params, n, mu, tau, reg)
            for i, gr in enumerate(grads):
                m1[i] = b1 * m1[i] + (1 - b1) * gr
                m2[i] = b2 * m2[i] + (1 - b2) * gr**2
                params[i] = params[i] - lr * (m1[i] / (1 - b1**t)) / (np.sqrt(m2[i] / (1 - b2**t)) + eps)
        s, V, Tmin, Tmax = params
        info = {"construction": "search_single_head", "M": M, "n": n, "d": d, "seed": seed, "restart": r}
        model = MinMaxModel(TokenLayer((TokenHead(s, V),)), Classifier(Tmin), Classifier(Tmax), info)
        rep = one_head_counterexamples(model, n)
        margins = (rep["min"]["margin"], rep["max"]["margin"])
        wrong = [t for t in ("min", "max") if not rep[t]["correct"]]
        runs.append(
            {
                "restart": r,
                "margins": list(margins),
                "solves_both": rep["solves_both"],
                "wrong_tasks": wrong,
                "counterexamples": {t: rep[t]["worst_input"] for t in wrong},
                "confirmed_counterexample": bool(wrong) and all(rep[t]["confirmed"] for t in wrong),
                "run": {
                    k: rep["run"][k] for k in ("length_non_decreasing", "length_non_increasing", "obstructs")
                },
            }
        )
        if best is None or min(margins) > min(best[0]):
            best = (margins, model, rep)
    margins, model, rep = best
    return SearchResult(
        M,
        n,
        d,
        restarts,
        steps,
        seed,
        any(r["solves_both"] for r in runs),
        margins,
        model,
        rep,
        runs,
        time.perf_counter() - t0,
    )


def smallest_dimension(M: int, n: int, d_max: int, **search_kw) -> dict:
    """search_single_head for d = 1..d_max (stopping at the first success): the smallest d at which the
    search found a head solving both tasks (None if none did — which the search cannot turn into a proof
    that none exists), and each dimension's summary."""
    results = {}
    smallest = None
    for d in range(1, d_max + 1):
        res = search_single_head(M, n, d, **search_kw)
        results[d] = res.summary()
        if res.succeeded:
            smallest = d
            break
    return {"M": M, "n": n, "d_max": d_max, "smallest_d": smallest, "results": results}
