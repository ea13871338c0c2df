"""A search for ONE head doing both min and max (the other side of Theorem 1, as evidence).

``search_single_head`` optimises a smooth surrogate of the exact verifier's vertex constraints (Adam
on a softplus hinge over the triples (x, y, ω) of verify.py, for both tasks at once) from a few
random restarts, and verifies every restart exactly; ``smallest_dimension`` runs it for d = 1, 2, …
and stops at the first success. A failed search is evidence, not a proof: every failing restart
comes with its counterexamples, re-decided exactly (lower_bound.one_head_counterexamples) to confirm
them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from math import log
from typing import Any

import numpy as np
from scipy.special import expit

from headcount.common.errors import InputError, param
from headcount.common.jsonable import JsonResult
from headcount.common.progress import progress_bar
from headcount.common.resources import check_memory, check_work
from headcount.common.validate import check_int
from headcount.minmax.exact_verify import check_counterexample_resources
from headcount.minmax.lower_bound import MonotoneRun, OneHeadCheck, one_head_counterexamples
from headcount.minmax.model import Classifier, MinMaxModel, TokenHead, TokenLayer
from headcount.minmax.task import check_sizes

TASKS = ("min", "max")
# Resource bounds (issue 13). Each Adam step evaluates the surrogate on every triple (x, y, ω): [M M
# M] float64 arrays, SEARCH_ARRAYS of them at once, plus [M M]·d products; each restart also runs
# the exact verifier (M³ triples). smallest_dimension tries d = 1..dim, `restarts` times each, so
# the work is Σ_d restarts·(steps + 1)·(M³ + M²·d) triple evaluations: at most SEARCH_MAX_WORK,
# ~5·10⁶ a second (about 7 minutes at the limit; the report's full search, M = 64, d ≤ 4, 3 restarts
# of 200 steps, is 6.5·10⁸).
SEARCH_MAX_WORK = 2**31
SEARCH_ARRAYS = 12
# the parameters that set the search's work, named in its refusal
_SEARCH_BOUNDED_BY = f"{param('restarts')}, {param('steps')}, {param('dim')} or {param('M')}"


def _task_loss_grad(s, V, T, n, mu, tau):
    """Softplus-hinge surrogate for one task (min, in the given token order) and its gradients.

    Over the verifier's vertex triples (x, y ≠ x, ω ≥ x) the normalised gap is g = (1−w)(C_xx −
    C_yx) + w(C_xω − C_yω), w = σ(s_ω − s_x + ln(n−1)), C = T·Vᵀ; the loss is the mean of
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
    grads = (
        ds1 + ds2[::-1],
        dV1 + dV2[::-1] + 2 * reg * V,
        dT1 + 2 * reg * Tmin,
        dT2[::-1] + 2 * reg * Tmax,
    )
    return loss, (g1, g2), grads


@dataclass(frozen=True)
class RestartOutcome(JsonResult):
    """One restart of the search, verified exactly: its margins (min, max), the tasks it gets wrong
    with a counterexample each, whether every one is confirmed, and its head's monotone run."""

    restart: int
    margins: tuple[float, float]
    wrong_tasks: tuple[str, ...]
    counterexamples: dict[str, tuple[int, ...] | None]
    confirmed_counterexample: bool  # wrong somewhere, and every counterexample confirmed
    run: MonotoneRun

    @property
    def solves_both(self) -> bool:
        return not self.wrong_tasks


@dataclass(frozen=True)
class SearchResult:
    """Outcome of search_single_head at one value dimension. margins are the exact verifier's (logit
    units, > 0 = correct); the best restart has the largest min(margin_min, margin_max)."""

    M: int
    n: int
    dim: int
    restarts: int
    steps: int
    seed: int
    succeeded: bool  # some restart solves both tasks (exactly verified)
    best_margins: tuple[float, float]  # (min, max) of the best restart
    best_model: MinMaxModel
    best_check: OneHeadCheck  # one_head_counterexamples of the best model
    runs: tuple[RestartOutcome, ...]
    seconds: float

    @property
    def all_failed_confirmed(self) -> bool:
        """Every restart failed, and each has a confirmed counterexample (for at least one task)."""
        return all(r.confirmed_counterexample for r in self.runs)

    def to_json(self) -> dict[str, Any]:
        """The summary `minmax search` prints per dimension (the model and the restarts are left
        out)."""
        return {
            "M": self.M,
            "n": self.n,
            "d": self.dim,
            "restarts": self.restarts,
            "steps": self.steps,
            "seed": self.seed,
            "succeeded": self.succeeded,
            "best_margins": list(self.best_margins),
            "all_failed_confirmed": self.all_failed_confirmed,
            "seconds": round(self.seconds, 3),
            "best_counterexamples": {
                t: _listed(self.best_check.task(t).worst_input) for t in TASKS
            },
        }


@dataclass(frozen=True)
class DimensionSearch:
    """Outcome of smallest_dimension: the smallest d at which the search found a head doing both
    (None if none did) and each dimension's search, d = 1 up to that d (or d_max)."""

    M: int
    n: int
    d_max: int
    smallest_d: int | None
    results: dict[int, SearchResult]

    def to_json(self) -> dict[str, Any]:
        """What `minmax search` prints."""
        return {
            "M": self.M,
            "n": self.n,
            "d_max": self.d_max,
            "smallest_d": self.smallest_d,
            "results": {d: r.to_json() for d, r in self.results.items()},
        }


def _listed(tokens: tuple[int, ...] | None) -> list[int] | None:
    return None if tokens is None else list(tokens)


def _check_search(
    M: int, n: int, dim: int, restarts: int, steps: int, seed: int = 0, dims: int = 1
) -> None:
    """Sizes, counts and seed, then memory and SEARCH_MAX_WORK for searches at d = dim − dims + 1 ..
    dim."""
    check_sizes(M, n)
    if dim < 1 or restarts < 1 or steps < 0:
        raise InputError(
            f"{param('dim')} {dim} {param('restarts')} {restarts} {param('steps')} {steps}: "
            "need dim ≥ 1, restarts ≥ 1, steps ≥ 0"
        )
    check_int("seed", seed, 0)
    M_f, d_f = float(M), float(dim)
    what = f"minmax search at {param('M')} {M} {param('dim')} {dim}"
    check_counterexample_resources(M, n, what)
    check_memory(8 * SEARCH_ARRAYS * M_f**3 + 8 * 16 * M_f * d_f + 8 * 4 * M_f * M_f, what)
    d_sum = dims * d_f - dims * (dims - 1) / 2  # Σ d over the dimensions tried
    work = float(restarts) * (float(steps) + 1) * (dims * M_f**3 + M_f * M_f * d_sum)
    check_work(work, SEARCH_MAX_WORK, what, "triple evaluations", _SEARCH_BOUNDED_BY)


def _adam(
    params: list[np.ndarray], n: int, steps: int, lr: float, mu: float, tau: float, reg: float
) -> None:
    """``steps`` Adam steps on the surrogate (β = 0.9, 0.999), updating params in place."""
    m1 = [np.zeros_like(p) for p in params]
    m2 = [np.zeros_like(p) for p in params]
    b1, b2, eps = 0.9, 0.999, 1e-8
    for t in range(1, steps + 1):
        _, _, grads = _loss_grad(params, n, mu, tau, reg)
        for i, gr in enumerate(grads):
            m1[i] = b1 * m1[i] + (1 - b1) * gr
            m2[i] = b2 * m2[i] + (1 - b2) * gr**2
            params[i] = params[i] - lr * (m1[i] / (1 - b1**t)) / (
                np.sqrt(m2[i] / (1 - b2**t)) + eps
            )


def _outcome(r: int, check: OneHeadCheck) -> RestartOutcome:
    wrong = tuple(t for t in TASKS if not check.task(t).correct)
    return RestartOutcome(
        restart=r,
        margins=(check.min.margin, check.max.margin),
        wrong_tasks=wrong,
        counterexamples={t: check.task(t).worst_input for t in wrong},
        confirmed_counterexample=bool(wrong) and all(check.task(t).confirmed for t in wrong),
        run=check.run,
    )


def search_single_head(
    M: int,
    n: int,
    dim: int,
    *,
    restarts: int = 2,
    steps: int = 60,
    seed: int = 0,
    lr: float = 0.05,
    mu: float = 1.0,
    tau: float = 4.0,
    reg: float = 1e-3,
    on_restart: Callable[[], None] | None = None,
) -> SearchResult:
    """Try hard to find ONE head (scores s, values V [M dim]) and two classifiers θ_min, θ_max
    solving both min and max on [M]^n. Each restart: random init (every other one with equal
    attention), ``steps`` Adam steps on the surrogate (+ a small L2 term fixing the scale), then
    both tasks verified exactly. Keeps the restart with the largest min(margin_min, margin_max);
    every failing restart's counterexamples are re-decided to confirm them. on_restart is called
    after each restart (a progress bar)."""
    _check_search(M, n, dim, restarts, steps, seed)
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    best: tuple[MinMaxModel, OneHeadCheck, RestartOutcome] | None = None
    runs = []
    for r in range(restarts):
        params = [rng.standard_normal(M)] + [rng.standard_normal((M, dim)) for _ in range(3)]
        if r % 2 == 1:  # every other restart starts from equal attention
            params[0] = np.zeros(M)
        _adam(params, n, steps, lr, mu, tau, reg)
        s, V, Tmin, Tmax = params
        info = {
            "construction": "search_single_head",
            "M": M,
            "n": n,
            "d": dim,
            "seed": seed,
            "restart": r,
        }
        model = MinMaxModel(
            TokenLayer((TokenHead(s, V),)), Classifier(Tmin), Classifier(Tmax), info
        )
        check = one_head_counterexamples(model, n)
        runs.append(_outcome(r, check))
        if best is None or min(runs[-1].margins) > min(best[2].margins):
            best = (model, check, runs[-1])
        if on_restart is not None:
            on_restart()
    model, check, outcome = best
    return SearchResult(
        M,
        n,
        dim,
        restarts,
        steps,
        seed,
        any(o.solves_both for o in runs),
        outcome.margins,
        model,
        check,
        tuple(runs),
        time.perf_counter() - t0,
    )


def smallest_dimension(
    M: int,
    n: int,
    d_max: int,
    *,
    restarts: int = 2,
    steps: int = 60,
    seed: int = 0,
    progress: bool = False,
    **search_kw,
) -> DimensionSearch:
    """search_single_head for d = 1..d_max (stopping at the first success): the smallest d at which
    the search found a head solving both tasks (None if none did — which the search cannot turn into
    a proof that none exists), and each dimension's search. progress: a bar over the restarts on
    stderr."""
    _check_search(M, n, d_max, restarts, steps, seed, dims=d_max)
    results = {}
    with progress_bar(progress, f"search M={M}: restarts", total=d_max * restarts) as bar:
        for d in range(1, d_max + 1):
            results[d] = search_single_head(
                M,
                n,
                d,
                restarts=restarts,
                steps=steps,
                seed=seed,
                on_restart=lambda: bar.update(advance=1),
                **search_kw,
            )
            if results[d].succeeded:
                return DimensionSearch(M, n, d_max, d, results)
    return DimensionSearch(M, n, d_max, None, results)
