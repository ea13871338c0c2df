"""The one-head lower bound (Theorem 1 of seed 004; spec/minmax.md, "Lower bound for one head"),
executable.

* ``longest_monotone_run`` — Lemma 1 (Erdős–Szekeres): the longest non-decreasing and the longest
  non-increasing subsequence of the attention weights α_ω = exp(s_ω) along the tokens 1..M, O(M log
  M) patience sorting with the actual tokens reconstructed, and which task each run obstructs.
* ``lemma6_quantities`` — the quantities of Lemma 6 for a head (N, d, p, ℓ, the run length) and the
  two alternatives "d ≥ N/2" and "d·(p + log₂ ℓ) > N" as booleans. The exact constant of Lemma 6 is
  marked uncertain in the spec, so nothing here asserts the lemma; it only reports.
* ``one_head_counterexamples`` — for one head + two classifiers: the exact verifier for min and for
  max, each counterexample re-decided (float and exact) to confirm it.

search.py tries hard to find one head solving both tasks (evidence, not a proof).

Which run obstructs which task (Lemmas 2–5). For one head, ⟨θ_x − θ_y, Att(h)⟩ has the sign of Σ_ω
h_ω Δ_ω^{x,y}, Δ_ω^{x,y} = α_ω⟨θ_x − θ_y, v_ω⟩. A correct *min* classifier needs, for x < y and
every z ≥ y (inputs (x,z..z), (y,z..z), ...), Δ_x^{x,y} > 0 and |Δ_z^{x,y}| < Δ_x^{x,y}/(n−1). Take
a run of tokens x_1 < x_2 < ... < x_L and λ_i = (θ_{x_i} − θ_{x_{i+1}}) / ⟨θ_{x_i} − θ_{x_{i+1}},
v_{x_i}⟩. Then ⟨λ_i, v_{x_i}⟩ = 1 and, for j > i, |⟨λ_i, v_{x_j}⟩| < (α_{x_i}/α_{x_j})/(n−1). The
factor α_{x_i}/α_{x_j} is ≤ 1 exactly when α does not decrease along the run: a long
**non-decreasing** run of α along increasing tokens forces the "approximately triangular" system of
Lemma 6 on the values, so it **obstructs min** (min wants the smaller tokens to hold the attention —
the construction's min head has α strictly decreasing, whose longest non-decreasing run has length
1). Max is the mirror image ω ↦ M+1−ω, which turns a non-increasing run along increasing tokens into
a non-decreasing one: a long **non-increasing** run **obstructs max**. By Erdős–Szekeres one of the
two runs has length ≥ ⌊1 + √(M−1)⌋ for every head, so every head is obstructed for at least one task
(ties in α count for both directions).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from fractions import Fraction
from math import isqrt, log2, sqrt
from typing import Any

import numpy as np

from headcount.common.errors import InputError
from headcount.common.jsonable import JsonResult
from headcount.minmax.exact_verify import decide_exact, verify_exact_one_head
from headcount.minmax.model import MinMaxModel, TokenHead, predict
from headcount.minmax.task import check_sizes, check_task, min_max

#: p is reported exactly for float64 values (every finite double is in 2^-1074·Z); above this it is
#: capped
P_CAP = 1074


# ----------------------------------------------------------------------------------------------
# Lemma 1


@dataclass(frozen=True)
class MonotoneRun:
    """Longest monotone runs of the attention weights along tokens 1..M (tokens 1-based,
    increasing).

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
        """The task the longer run obstructs: 'min' (non-decreasing), 'max' (non-increasing), 'both'
        (tie)."""
        return {"tie": "both", "non-decreasing": "min", "non-increasing": "max"}[self.longer]

    def to_json(self) -> dict[str, Any]:
        """The runs, their lengths and what they obstruct (the `monotone_run` of `minmax
        verify`)."""
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
    increasing, so the runs are the same; compare scores to avoid exp under/overflow), or a
    TokenHead (its scores are used). O(M log M); the returned tokens are 1-based and increasing."""
    a = weights.scores if isinstance(weights, TokenHead) else np.asarray(weights, dtype=np.float64)
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)):
        raise InputError(f"need a finite 1-D array of weights or scores, got shape {a.shape}")
    vals = a.tolist()
    up = _longest_non_decreasing(vals)
    down = _longest_non_decreasing([-v for v in vals])
    return MonotoneRun(tuple(i + 1 for i in up), tuple(i + 1 for i in down))


# ----------------------------------------------------------------------------------------------
# Lemma 6


# ----------------------------------------------------------------------------------------------
# Lemma 6


def exact_value_bits(values: np.ndarray) -> int:
    """Smallest p ≥ 0 with every value in 2^-p·Z (exact for float64; at most P_CAP)."""
    p = 0
    for v in np.unique(values.ravel()).tolist():
        den = Fraction(v).denominator  # a power of two for a finite double
        p = max(p, den.bit_length() - 1)
    return min(p, P_CAP)


def lemma_n(M: int, n: int) -> int:
    """N = min{⌊1 + √(M−1)⌋, ⌊(n−1)/2⌋} (integer arithmetic)."""
    return min(1 + isqrt(M - 1), (n - 1) // 2)


@dataclass(frozen=True)
class Lemma6Quantities(JsonResult):
    """Lemma 6's quantities for one head at list length n (reported, not asserted;
    ``lemma6_quantities``).

    The names are the lemma's: d is the head's value dimension, p its value bits, ℓ = ell its
    largest value norm. A non-finite ell or log2_ell (ℓ = 0, or ℓ > 1.8e308) is JSON null."""

    M: int
    n: int
    N: int
    erdos_szekeres_length: int
    d: int
    p: int
    p_given: bool
    ell: float
    log2_ell: float
    run: MonotoneRun
    run_length: int
    run_at_least_N: bool
    d_times_p_plus_log2_ell: float
    alt_dimension: bool
    alt_precision: bool
    either: bool
    max_d_p_plus_log2_ell: float
    sqrt_half_N: float


def _value_norm(values: np.ndarray) -> tuple[float, float]:
    """(ℓ, log₂ ℓ) with ℓ = max_ω ‖v_ω‖₂, scaled by max |v| first so that huge values do not
    overflow."""
    top = float(np.abs(values).max(initial=0.0))
    if top == 0:
        return 0.0, float("-inf")
    scaled = float(np.linalg.norm(values / top, axis=1).max())
    return top * scaled, log2(top) + log2(scaled)


def lemma6_quantities(
    head: TokenHead, n: int, value_bits: int | None = None, value_norm: float | None = None
) -> Lemma6Quantities:
    """Lemma 6's quantities for one head at list length n (reported, not asserted).

    N = min{⌊1+√(M−1)⌋, ⌊(n−1)/2⌋}; d = value dimension; p = value bits (smallest p with values in
    2^-p·Z, computed exactly from the float64 values unless given); ℓ = max_ω ‖v_ω‖₂ unless given;
    the monotone run (Lemma 1; its length is ≥ ⌊1+√(M−1)⌋ ≥ N by Erdős–Szekeres). The spec's two
    alternatives: ``alt_dimension`` = (d ≥ N/2), ``alt_precision`` = (d·(p + log₂ ℓ) > N),
    ``either`` = their or. Also the reconstructed form's two sides, max{d, p + log₂ ℓ} and √(N/2),
    as numbers only."""
    if not isinstance(head, TokenHead):
        raise TypeError(f"expected a TokenHead, got {type(head).__name__}")
    check_sizes(head.M, n)
    M, d = head.M, head.dim
    N = lemma_n(M, n)
    p = exact_value_bits(head.values) if value_bits is None else int(value_bits)
    if value_norm is None:
        ell, log_ell = _value_norm(head.values)
    else:
        ell = float(value_norm)
        log_ell = log2(ell) if ell > 0 else float("-inf")
    run = longest_monotone_run(head)
    bits = d * (p + log_ell)
    return Lemma6Quantities(
        M=M,
        n=n,
        N=N,
        erdos_szekeres_length=1 + isqrt(M - 1),
        d=d,
        p=p,
        p_given=value_bits is not None,
        ell=ell,
        log2_ell=log_ell,
        run=run,
        run_length=run.length,
        run_at_least_N=run.length >= N,
        d_times_p_plus_log2_ell=bits,
        alt_dimension=bool(d >= N / 2),
        alt_precision=bool(bits > N),
        either=bool(d >= N / 2 or bits > N),
        max_d_p_plus_log2_ell=max(d, p + log_ell),
        sqrt_half_N=sqrt(N / 2),
    )


# ----------------------------------------------------------------------------------------------
# Theorem 1


@dataclass(frozen=True)
class TaskCheck(JsonResult):
    """The exact verdict of one head for one task; where it is wrong, the worst input with its true
    answer, the exact and float64 decisions on it, and ``confirmed`` (the exact decision differs
    from the answer)."""

    correct: bool
    margin: float
    tolerance: float
    worst_input: tuple[int, ...] | None = None
    answer: int | None = None
    decision_exact: int | None = None
    decision_float: int | None = None
    wrong_class: int | None = None
    confirmed: bool = False


@dataclass(frozen=True)
class OneHeadCheck(JsonResult):
    """Theorem 1 for a given single-head model (``one_head_counterexamples``): a verdict per task
    and the head's monotone run."""

    M: int
    n: int
    dim: int
    min: TaskCheck
    max: TaskCheck
    run: MonotoneRun

    @property
    def solves_both(self) -> bool:
        return self.min.correct and self.max.correct

    def task(self, name: str) -> TaskCheck:
        """The verdict for task "min" or "max"."""
        return self.min if check_task(name) == "min" else self.max


def _single_head(model: MinMaxModel) -> TokenHead:
    if not isinstance(model, MinMaxModel):
        raise TypeError(f"expected a MinMaxModel, got {type(model).__name__}")
    if model.layer.n_heads != 1:
        raise InputError(
            f"the one-head tools need a single-head model, this one has {model.layer.n_heads} heads"
        )
    return model.layer.heads[0]


def _task_check(model: MinMaxModel, task: str, n: int) -> TaskCheck:
    head = _single_head(model)
    which = 0 if task == "min" else 1
    clf = model.classifier_min if task == "min" else model.classifier_max
    v = verify_exact_one_head(head, clf, task, n)
    if v.correct:
        return TaskCheck(True, v.margin, v.tolerance)
    x = np.array([v.worst_input], dtype=np.int64)
    truth = int(min_max(x)[which][0])
    exact = int(decide_exact(head, clf, x)[0])
    return TaskCheck(
        correct=False,
        margin=v.margin,
        tolerance=v.tolerance,
        worst_input=v.worst_input,
        answer=truth,
        decision_exact=exact,
        decision_float=int(predict(model, x)[which][0]),
        wrong_class=v.wrong_class,
        confirmed=exact != truth,
    )


def one_head_counterexamples(model: MinMaxModel, n: int | None = None) -> OneHeadCheck:
    """Theorem 1 for a given single-head model: exact verdicts for min and for max (margin, and
    where wrong the worst input, its true answer and the float64 and exact decisions — ``confirmed``
    when the exact decision differs from the answer), plus the monotone run. ``n`` defaults to
    model.info["n"]."""
    head = _single_head(model)
    if n is None:
        if "n" not in model.info:
            raise InputError("give n (the model's info has no 'n')")
        n = int(model.info["n"])
    return OneHeadCheck(
        head.M,
        n,
        head.dim,
        _task_check(model, "min", n),
        _task_check(model, "max", n),
        longest_monotone_run(head),
    )
