"""The exact accuracy frontier below the threshold degree (spec/frontiers.md, "Boolean accuracy
frontier").

For a symmetric f(x) = F(|x|) on n bits, H heads with a degree-D readout output sign R(t) with deg R
≤ D·H (Theorem 2), so at most D·H sign changes along t = 0..n (a zero of R at an integer is an
error); Theorem 3 realises every ±1 pattern with c ≤ D·H sign changes (its threshold degree is c).
So the best accuracy over all 2^n inputs is

    A(c) = max over s ∈ {±1}^{n+1} with at most c sign changes of  Σ_t C(n, t)·[s_t = F(t)] / 2^n,

at c = min(D·H, T), T = the threshold degree of F (its number of sign changes; A(T) = 1).

The programme. Every optimal pattern is constant on each run of F (a maximal interval where F is
constant): if s changes sign inside a run of value v, it contains v there, so setting s = v on the
whole run adds no sign change (the path from s's left neighbour through a v to its right neighbour
already changed sign at least as often) and agrees on strictly more weight (binomial weights are >
0). So the dynamic programme runs over the T + 1 runs j, with weights W_j = Σ_{t ∈ run j} C(n, t)
(exact integers), over (run j, its sign s, changes still allowed k):

    V(j, s, k) = W_j·[s = F on run j] + max( V(j + 1, s, k),  V(j + 1, −s, k − 1) if k ≥ 1 ),

from the last run backwards, for every k = 0..T at once; A(c) = max_s V(0, s, c) / 2^n. Exact
throughout: integer counts, divided by 2^n only at the end (``FrontierRow.accuracy``, an fmpq).

Ties: the pattern reported is the lexicographically first optimal one, reading t = 0..n with '+'
before '-' (the ASCII order of the characters, so ``min`` of the strings): the reconstruction walks
the runs from the left and takes '+' whenever '+' still reaches the optimum. Since every optimal
pattern is constant on F's runs, this is the first among *all* ±1 patterns with at most c changes,
not only among run-constant ones.

Cost: about (n + 1)·(n/64 + 40) word operations for the binomial weights (flint integers) and 2·(T +
1)·(K + 1)·(n/64 + 20) for the programme (K = the largest c asked for); ``check_frontier_cost``
refuses beyond FRONTIER_WORK_LIMIT (about 2–5 s on one core) or the memory limit, before any work.

``accuracy_frontier`` is `headcount boolean frontier`: the rows c = 0..T and, with (D, H), the model
Theorem 3 builds for the best pattern at c = min(D·H, T) (``boolean.construction.construct``,
without the optional basis search), its exact accuracy over all 2^n inputs (``model_sign_exact`` at
t = 0..n, weighted by C(n, t)) and ``certified`` = that accuracy equals the frontier's, compared as
exact rationals.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from flint import fmpq, fmpz

from headcount.boolean.certification import check_exact_cost
from headcount.boolean.construction import Construction, construct
from headcount.boolean.lower_bound import check_sizes
from headcount.boolean.model import BooleanLayer, Readout, model_sign_exact
from headcount.boolean.model_file import save_boolean
from headcount.boolean.task import check_values, format_function, function_and_label, sign_changes
from headcount.common.errors import InputError, param
from headcount.common.jsonable import JsonResult
from headcount.common.resources import check_memory, check_work
from headcount.common.validate import check_int, check_writable

FRONTIER_WORK_LIMIT = 1e9
"""Most word operations (``frontier_cost``) one frontier may take. Measured on one core: xor at n =
2000 (all 2001 rows, 4·10⁸ units) in about 1 s; majority at n = 10⁵ (1.6·10⁸ units, the binomials)
in 0.8 s."""


def frontier_cost(n: int, T: int, K: int) -> tuple[float, float]:
    """(word operations, bytes) of the frontier of an n-bit F with T sign changes, rows c = 0..K:
    the binomial weights, then 2·(T + 1)·(K + 1) programme cells on integers of ≤ n + 1 bits; memory
    for the decisions (one byte per cell), two value rows per sign and the rows' patterns (an int8
    array, the tuples and their JSON: ~20 bytes a sign). Floats: no overflow for huge arguments."""
    n, T, K = (float(min(v, 1e300)) for v in (n, T, K))
    words = n / 64
    cells = 2 * (T + 1) * (K + 1)
    work = (n + 1) * (words + 40) + cells * (words + 20)
    memory = cells + 4 * (K + 1) * (n / 8 + 64) + (K + 1) * (20 * (n + 1) + 200)
    return work, memory


def check_frontier_cost(n: int, T: int, K: int, what: str) -> None:
    """InputError (one line: the estimate, the bound, the option) beyond FRONTIER_WORK_LIMIT or the
    memory limit."""
    work, memory = frontier_cost(n, T, K)
    check_memory(memory, what)
    check_work(work, FRONTIER_WORK_LIMIT, what, "word operations", param("n"))


def runs(F: Sequence[int]) -> list[tuple[int, int, int]]:
    """The maximal runs of F as (value, first t, last t), left to right: T + 1 of them."""
    F = check_values(F)
    out, start = [], 0
    for t in range(1, len(F) + 1):
        if t == len(F) or F[t] != F[start]:
            out.append((F[start], start, t - 1))
            start = t
    return out


def run_weights(F: Sequence[int]) -> list[int]:
    """W_j = Σ_{t ∈ run j} C(n, t) for each run of F (exact; they sum to 2^n)."""
    F = check_values(F)
    n = len(F) - 1
    out, c = [], fmpz(1)  # c = C(n, t), updated along t (flint integers: ~3× Python's at n = 10⁵)
    for _, first, last in runs(F):
        total = fmpz(0)
        for t in range(first, last + 1):
            total += c
            c = c * (n - t) // (t + 1)
        out.append(int(total))
    return out


def agreement(signs: Sequence[int], F: Sequence[int]) -> int:
    """Σ_t C(n, t)·[signs_t = F(t)]: how many of the 2^n inputs a symmetric answer `signs` (±1, or 0
    = an error) gets right."""
    F = check_values(F)
    n = len(F) - 1
    if len(signs) != n + 1:
        raise InputError(f"signs need n + 1 = {n + 1} values, got {len(signs)}")
    total, c = 0, 1
    for t in range(n + 1):
        total += c if signs[t] == F[t] else 0
        c = c * (n - t) // (t + 1)
    return total


def pattern_string(signs: Sequence[int]) -> str:
    """'+' for +1 and '-' for −1, t = 0..n."""
    return "".join("+" if v > 0 else "-" for v in signs)


@dataclass(frozen=True)
class FrontierRow:
    """The frontier at ``sign_changes`` = c: ``agree`` = the most inputs (of 2^n) any pattern with
    at most c sign changes gets right, and the lexicographically first such ``pattern`` (±1 for t =
    0..n)."""

    sign_changes: int
    n: int
    agree: int
    pattern: tuple[int, ...]

    @property
    def accuracy(self) -> fmpq:
        """agree / 2^n, exact."""
        return fmpq(self.agree, 2**self.n)

    @property
    def accuracy_float(self) -> float:
        return self.agree / 2**self.n  # Python's int division rounds correctly at any size

    def to_json(self) -> dict[str, Any]:
        return {
            "sign_changes": self.sign_changes,
            "best_accuracy": str(self.accuracy),
            "best_accuracy_float": self.accuracy_float,
            "pattern": pattern_string(self.pattern),
        }


_NONE = np.array([-1], dtype=object)  # "no pattern": below every agreement (which is ≥ 0)


def _programme(values: list[int], W: list[int], K: int) -> tuple[list[np.ndarray], np.ndarray]:
    """The backward programme over runs (module docstring): V(0, s, k) for s = '+' (index 0), '-'
    (1) and k = 0..K, and plus[j, s, k]: whether '+' on run j + 1 still reaches the optimum from
    state (j, s, k)."""
    m = len(W)
    sign = (1, -1)
    V = [np.array([W[-1] if sign[s] == values[-1] else 0] * (K + 1), dtype=object) for s in (0, 1)]
    plus = np.zeros((m, 2, K + 1), dtype=bool)
    for j in range(m - 2, -1, -1):
        new = []
        for s in (0, 1):
            same = V[s]
            flip = np.concatenate([_NONE, V[1 - s][:-1]])  # one change used; none left at k = 0
            keep = same >= flip
            best = np.where(keep, same, flip)
            gain = W[j] if sign[s] == values[j] else 0
            new.append(best + gain if gain else best)
            plus[j, s] = (
                keep if s == 0 else flip >= same
            )  # '+' next: keep the sign, or flip from '-'
        V = new
    return V, plus


def _patterns(lengths: list[int], V: list[np.ndarray], plus: np.ndarray, K: int) -> np.ndarray:
    """[K + 1, n + 1] int8: row c is the lexicographically first optimal pattern with at most c
    changes (0 = '+', 1 = '-'), read back from the programme for every c at once."""
    m = len(lengths)
    s = np.where(V[0] >= V[1], 0, 1)  # [K + 1]: the first run's sign, '+' on a tie
    k = np.arange(K + 1)  # changes still allowed
    signs = np.empty((K + 1, m), dtype=np.int8)  # [rows runs]
    for j in range(m):
        signs[:, j] = s
        if j + 1 < m:
            nxt = np.where(plus[j, s, k], 0, 1)
            k = k - (nxt != s)
            s = nxt
    return np.repeat(signs, lengths, axis=1)


def frontier_rows(F: Sequence[int], max_changes: int | None = None) -> tuple[FrontierRow, ...]:
    """The frontier of F for c = 0..min(max_changes, T) (default: up to T, where the accuracy is 1):
    exact, with the lexicographically first optimal pattern of each row (module docstring)."""
    F = check_values(F)
    n, T = len(F) - 1, sign_changes(F)
    K = T if max_changes is None else min(check_int("max_changes", max_changes, low=0), T)
    check_frontier_cost(
        n, T, K, f"the accuracy frontier at n={n} (threshold degree {T}, rows 0..{K})"
    )
    runs_ = runs(F)
    V, plus = _programme([v for v, _, _ in runs_], run_weights(F), K)
    patterns = 1 - 2 * _patterns(
        [last - first + 1 for _, first, last in runs_], V, plus, K
    )  # int8 ±1
    return tuple(
        FrontierRow(c, n, int(max(V[0][c], V[1][c])), tuple(patterns[c].tolist()))
        for c in range(K + 1)
    )


def frontier_row(F: Sequence[int], c: int) -> FrontierRow:
    """The frontier at c sign changes (c ≥ T: F itself, accuracy 1), computing only rows up to c."""
    F = check_values(F)
    c = check_int("sign changes", c, low=0)
    T = sign_changes(F)
    if c >= T:
        return FrontierRow(c, len(F) - 1, 2 ** (len(F) - 1), F)
    return frontier_rows(F, c)[c]


def model_accuracy(layer: BooleanLayer, readout: Readout, F: Sequence[int]) -> fmpq:
    """The exact fraction of all 2^n inputs a Boolean model answers F on (its exact sign at every
    weight t, weighted by C(n, t); sign 0 is wrong)."""
    F = check_values(F)
    n = len(F) - 1
    return fmpq(agreement(model_sign_exact(layer, readout, n), F), 2**n)


@dataclass(frozen=True)
class FrontierModel(JsonResult):
    """The Theorem-3 model built for the frontier's best pattern at ``sign_changes`` = min(D·H, T):
    its exact accuracy against the frontier's, ``certified`` when they are equal (exact rationals),
    its route and value dimension, and where it was saved (None: not saved)."""

    degree: int
    heads: int
    sign_changes: int
    pattern: str
    best_accuracy: fmpq
    best_accuracy_float: float
    model_accuracy: fmpq
    model_accuracy_float: float
    certified: bool
    route: str
    dim: int
    model_path: str | None


def build_frontier_model(
    F: Sequence[int],
    row: FrontierRow,
    D: int,
    H: int,
    out: str | os.PathLike | None = None,
    label: str = "",
) -> tuple[FrontierModel, Construction]:
    """Theorem 3 on ``row``'s pattern (c ≤ D·H sign changes) with D, H; its exact accuracy on F;
    saved to ``out`` when given (its info records the pattern it computes and the function it
    approximates)."""
    F = check_values(F)
    n = len(F) - 1
    built = construct(row.pattern, n, D, H, use_search=False)
    if out is not None:
        info = {
            "construction": built.route,
            "function": format_function(row.pattern),
            "frontier_of": label or format_function(F),
            "n": n,
        }
        save_boolean(built.layer, built.readout, out, info)
    acc = model_accuracy(built.layer, built.readout, F)
    model = FrontierModel(
        degree=D,
        heads=H,
        sign_changes=row.sign_changes,
        pattern=pattern_string(row.pattern),
        best_accuracy=row.accuracy,
        best_accuracy_float=row.accuracy_float,
        model_accuracy=acc,
        model_accuracy_float=int(acc.p) / int(acc.q),
        certified=acc == row.accuracy,
        route=built.route,
        dim=built.dim,
        model_path=None if out is None else str(out),
    )
    return model, built


@dataclass(frozen=True)
class AccuracyFrontier:
    """`headcount boolean frontier`: the function, n, its threshold degree T, the rows c = 0..T and,
    when (D, H) were given, the constructed model. ``to_json()`` puts the model's fields at the top
    level (and model_path only when it was saved)."""

    function: str
    n: int
    threshold_degree: int
    rows: tuple[FrontierRow, ...]
    model: FrontierModel | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "function": self.function,
            "n": self.n,
            "threshold_degree": self.threshold_degree,
            "rows": [row.to_json() for row in self.rows],
        }
        if self.model is not None:
            model = self.model.to_json()
            if model["model_path"] is None:
                del model["model_path"]
            out |= model
        return out


def _degree_heads(degree: int | None, heads: int | None, n: int) -> tuple[int, int] | None:
    if (degree is None) != (heads is None):
        raise InputError(
            f"give {param('degree')} and {param('heads')} together (or neither): the model needs "
            "both D and H"
        )
    if degree is None or heads is None:
        return None
    check_sizes(n, degree, heads)
    return degree, heads


def accuracy_frontier(
    function: str | Sequence[int],
    n: int,
    degree: int | None = None,
    heads: int | None = None,
    out: str | os.PathLike | None = None,
) -> AccuracyFrontier:
    """The exact accuracy frontier of a symmetric function (a name, F:+-… or values) on n bits for c
    = 0..T; with ``degree`` and ``heads`` (both or neither) also the Theorem-3 model for the best
    pattern at c = min(D·H, T) and its exact accuracy (saved to ``out`` when given). Sizes are
    checked first: the frontier's work (``check_frontier_cost``) and the model's exact arithmetic
    (certify's budget)."""
    check_int("n", n, low=1)
    F, label = function_and_label(function, n)
    T = sign_changes(F)
    DH = _degree_heads(degree, heads, n)
    if out is not None and DH is None:
        raise InputError(
            f"{param('out')} saves the constructed model: give {param('degree')} and "
            f"{param('heads')} too"
        )
    check_frontier_cost(n, T, T, f"boolean frontier at n={n} (threshold degree {T})")
    if DH is not None:
        D, H = DH
        c = min(D * H, T)
        what = f"boolean frontier's model at n={n}, D={D}, H={H}"
        d = max(1, -(-c // H))
        check_exact_cost(
            n,
            D,
            H,
            d,
            terms=c + 1,
            bits=0,
            what=what,
            options=f"{param('n')}, {param('degree')} or {param('heads')}",
        )
        if out is not None:
            check_writable(out)
    rows = frontier_rows(F)
    model = None
    if DH is not None:
        model, _ = build_frontier_model(F, rows[min(D * H, T)], D, H, out, label)
    return AccuracyFrontier(label, n, T, rows, model)
