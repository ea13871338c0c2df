"""Lemmas 2–5 of seed 004 as checked objects: along a monotone run of attention weights, a head
whose classifier supports its task yields dual vectors — or an input the head gets wrong.

The chain works in *Lemma-6 order* u_1, u_2, …, u_N (each u_i = v_{s_i}), chosen so that every
dual w_i constrains only the earlier vectors:

* min (Lemma 3), along a non-decreasing run x_1 < … < x_N: s = (x_N, …, x_1), the run reversed;
* max (Lemma 5), along a non-increasing run x_1 < … < x_N: s = (x_1, …, x_N).

For i ≥ 2, with x = s_i and its partner y = s_{i−1} (the next token of the run towards the
obstructed end), w_i = (θ_x − θ_y) / ⟨θ_x − θ_y, v_x⟩ with the task's classifier θ — exact
rationals, since every float64 is one. The lemma's conclusion is checked exactly:
⟨w_i, v_x⟩ = 1 and |⟨w_i, v_{s_j}⟩| < 1/(n−1) for every j < i.

Why a failed check ends the chain with a wrong input (Lemma 2; Lemma 4 mirrored). Write
Δ_ω = α_ω⟨θ_x − θ_y, v_ω⟩ and z = s_j. A classifier right on the four lists (x,…,x), (x,z,…,z),
(y,z,…,z) and (x,y,…,y) has Δ_x > 0, Δ_z > −Δ_x/(n−1), Δ_z < −Δ_y/(n−1) and −Δ_y < Δ_x/(n−1),
so |Δ_z| < Δ_x/(n−1). The run's order gives α_x ≤ α_z, hence |⟨w_i, v_z⟩| = |Δ_z|/Δ_x · α_x/α_z
< 1/(n−1). So when the exact check fails, one of those four lists is decided wrongly (or tied);
`decide_exact` finds it. Finding none would contradict the lemma: that is reported as a broken
chain, never as a proof.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from headcount.minmax.exact_verify import decide_exact
from headcount.minmax.model import Classifier, TokenHead
from headcount.minmax.task import min_max

Vector = tuple[Fraction, ...]


def exact_vector(row: np.ndarray) -> Vector:
    """A float64 row as exact rationals (every finite double is one)."""
    return tuple(Fraction(float(v)) for v in row)


def inner(a: Vector, b: Vector) -> Fraction:
    """⟨a, b⟩ exactly."""
    return sum((x * y for x, y in zip(a, b)), Fraction(0))


def lemma_order(task: str, run: tuple[int, ...]) -> tuple[int, ...]:
    """The run's tokens in Lemma-6 order (module docstring): reversed for min, as is for max."""
    return tuple(reversed(run)) if task == "min" else tuple(run)


@dataclass(frozen=True)
class Dual:
    """The dual w_i of the token at Lemma-6 position i (≥ 2): its token x, partner y, the vector
    and the largest |⟨w_i, v_{s_j}⟩| over j < i (exact), which the lemma bounds by 1/(n−1)."""

    position: int  # i, 1-based in Lemma-6 order
    token: int  # x = s_i
    partner: int  # y = s_{i−1}
    w: Vector  # (θ_x − θ_y) / ⟨θ_x − θ_y, v_x⟩
    largest_earlier: Fraction  # max_{j<i} |⟨w_i, v_{s_j}⟩|


@dataclass(frozen=True)
class WrongInput:
    """A list the task's classifier decides wrongly (exact decision; BOTTOM for a tie), found
    where a dual's check failed: it ends the chain."""

    position: int
    tokens: tuple[int, int, int]  # (x, y, z) of the failed check (z = x for the Δ_x > 0 check)
    input: tuple[int, ...]
    answer: int
    decision: int
    check: str  # which inequality of the lemma failed


@dataclass(frozen=True)
class DualResult:
    """The duals of one task along its run: every dual (complete), or the duals up to the first
    failed check and the wrong input it exposes (wrong), or — contradicting Lemma 2 — none of the
    lemma's lists wrong where a check failed (broken, with why)."""

    task: str
    order: tuple[int, ...]  # s_1..s_N, the run in Lemma-6 order
    duals: tuple[Dual, ...]
    wrong: WrongInput | None = None
    broken: str | None = None

    @property
    def complete(self) -> bool:
        return self.wrong is None and self.broken is None


def _lists(x: int, y: int, z: int, n: int) -> list[tuple[int, ...]]:
    """Lemma 2's lists for (x, y, z): (x..x), (x,z..z), (y,z..z), (x,y..y)."""
    return [(x,) * n, (x,) + (z,) * (n - 1), (y,) + (z,) * (n - 1), (x,) + (y,) * (n - 1)]


def _wrong_among(
    head: TokenHead, classifier: Classifier, task: str, lists: list[tuple[int, ...]]
) -> tuple[tuple[int, ...], int, int] | None:
    """The first list decided wrongly (exactly), with its answer and the decision; None if all
    are right."""
    x = np.array(lists, dtype=np.int64)
    answers = min_max(x)[0 if task == "min" else 1]
    decisions = decide_exact(head, classifier, x)
    for lst, answer, decision in zip(lists, answers.tolist(), decisions.tolist()):
        if decision != answer:
            return lst, int(answer), int(decision)
    return None


def _failure(
    head: TokenHead, classifier: Classifier, task: str, n: int, at: tuple[int, int, int, int], why
) -> WrongInput | str:
    """The wrong input behind a failed check at (position, x, y, z), or why the lemma broke."""
    position, x, y, z = at
    found = _wrong_among(head, classifier, task, _lists(x, y, z, n))
    if found is None:
        return (
            f"position {position} (x={x}, y={y}, z={z}): {why}, yet the classifier is right on "
            "all four lists of Lemma 2 — the lemma's derivation does not hold here"
        )
    lst, answer, decision = found
    return WrongInput(position, (x, y, z), lst, answer, decision, why)


def build_duals(
    head: TokenHead, classifier: Classifier, task: str, run: tuple[int, ...], n: int
) -> DualResult:
    """The duals of Lemma 3 (task min, run non-decreasing) or Lemma 5 (max, non-increasing) along
    `run` (increasing tokens, 1-based), each checked exactly; the first failure ends the chain
    with its wrong input (module docstring)."""
    order = lemma_order(task, run)
    values = {t: exact_vector(head.values[t - 1]) for t in order}
    eps = Fraction(1, n - 1)
    duals: list[Dual] = []
    first = order[0]
    if not any(values[first]):  # Att(first,…,first) = 0: every logit 0, a tie
        found = _wrong_among(head, classifier, task, [(first,) * n])
        if found is None:
            return DualResult(task, order, (), broken=f"v_{first} = 0 yet ({first},…) is right")
        lst, answer, decision = found
        why = f"v_{first} is the zero vector"
        return DualResult(task, order, (), WrongInput(1, (first,) * 3, lst, answer, decision, why))
    for i in range(2, len(order) + 1):
        x, y = order[i - 1], order[i - 2]
        theta_x, theta_y = (exact_vector(classifier.theta[t - 1]) for t in (x, y))
        diff = tuple(a - b for a, b in zip(theta_x, theta_y))  # exact: no float rounding
        den = inner(diff, values[x])
        if den <= 0:
            why = f"⟨θ_x − θ_y, v_x⟩ = {den} is not positive"
            out = _failure(head, classifier, task, n, (i, x, y, x), why)
            return _ended(task, order, duals, out)
        w = tuple(c / den for c in diff)
        earlier = [(abs(inner(w, values[order[j]])), order[j]) for j in range(i - 1)]
        largest, z = max(earlier)
        if largest >= eps:
            why = f"|⟨w, v_z⟩| = {largest} is not below 1/(n−1) = {eps}"
            out = _failure(head, classifier, task, n, (i, x, y, z), why)
            return _ended(task, order, duals, out)
        duals.append(Dual(i, x, y, w, largest))
    return DualResult(task, order, tuple(duals))


def _ended(task: str, order, duals: list[Dual], out: WrongInput | str) -> DualResult:
    if isinstance(out, WrongInput):
        return DualResult(task, order, tuple(duals), wrong=out)
    return DualResult(task, order, tuple(duals), broken=out)
