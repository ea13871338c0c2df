"""Exact minimal one-head models for min and max at small (M, n): the smallest value dimension d
and value bound K at which ONE head with integer values supports both tasks, found by exhaustive
search over a stated family — each head found verified by the exact verifier, each member of a
refuted (d, K) refuted by an exact certificate — beside Theorem 1's bound (chain.py).

    minimal_resources(M, n, d_max, K_max) -> MinimalResources

**The family F(M, n, d, K).** Attention weights α_ω = β^(r_ω) for every ranking r of the tokens (a
permutation of 0..M−1) and β ∈ {2, 2n}; values v_ω ∈ {−K..K}^d, every v_ω ≠ 0 (a zero value ties
on the constant list), taken up to permuting coordinates and flipping a coordinate's sign (the
classifiers absorb both), with no coordinate identically zero (that is dimension d − 1).
Integer values are precision p = 0; values in 2^-p·Z^d of norm ℓ are integers of norm 2^p·ℓ,
which is why the resource reported is log₂ of the largest value norm (p + log₂ ℓ).

**Each member is two linear systems.** For one head the min classifier is right on every list iff
Δ_x + (n−1)·Δ_ω > 0 for all x ≠ y and ω ≥ x, with Δ_ω = α_ω⟨θ_x − θ_y, v_ω⟩ (spec/minmax.md, the
exact verifier): strict homogeneous inequalities in θ. Max: ω ≤ x. HiGHS decides both; a member
with both feasible becomes a head (scores r·ln β) with the HiGHS classifiers, confirmed by
`verify_exact_one_head` for both tasks. A member with an infeasible task gets Gordan's certificate
for that task in exact rationals (core.numbers.gordan). (d, K) is refuted in the family when every
member has one; a member neither found nor refuted is counted as undecided. The refutations are
about α = β^r exactly; a head found carries the float64 scores r·ln β (α within rounding of β^r)
and is verified exactly as it is.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from headcount.common.validate import check_int
from headcount.core.numbers import check_gordan, gordan_certificate, strict_solution
from headcount.minmax.exact_verify import verify_exact_one_head
from headcount.minmax.lower_bound import lemma_n
from headcount.minmax.model import Classifier, MinMaxModel, TokenHead, TokenLayer
from headcount.minmax.task import check_sizes
from headcount.minmax.theorem1.chain import theorem1_chain

MAX_MEMBERS = 100_000  # (ranking, β, values) members one (d, K) may have
TASKS = ("min", "max")


def bases(n: int) -> tuple[int, ...]:
    """The attention bases β of the family: 2 (weights close together) and 2n (the extreme token
    outweighs the rest)."""
    return (2, 2 * n)


def value_classes(M: int, d: int, K: int) -> Iterator[tuple[tuple[int, ...], ...]]:
    """Value tables [M d] in {−K..K}, one per class under coordinate permutations and sign flips:
    columns with first non-zero entry positive, in non-decreasing order; no zero column, no zero
    row."""
    columns = [
        c
        for c in itertools.product(range(-K, K + 1), repeat=M)
        if any(c) and next(x for x in c if x) > 0
    ]
    for cols in itertools.combinations_with_replacement(columns, d):
        rows = tuple(tuple(col[w] for col in cols) for w in range(M))
        if all(any(r) for r in rows):
            yield rows


def count_value_classes(M: int, d: int, K: int) -> int:
    """An upper bound on value_classes's count (zero rows not removed): C(c + d − 1, d)."""
    c = ((2 * K + 1) ** M - 1) // 2
    return math.comb(c + d - 1, d)


def task_rows(
    alpha: Sequence[int], V: Sequence[Sequence[int]], n: int, task: str
) -> list[list[Fraction]]:
    """The strict system in θ (flattened [M d]) for one task: rows α_x v_x + (n−1) α_ω v_ω on θ_x,
    minus it on θ_y, for x ≠ y and ω ≥ x (min) or ω ≤ x (max)."""
    M, d = len(V), len(V[0])
    rows = []
    for x in range(M):
        others = range(x, M) if task == "min" else range(0, x + 1)
        for y in range(M):
            if y == x:
                continue
            for w in others:
                g = [alpha[x] * V[x][i] + (n - 1) * alpha[w] * V[w][i] for i in range(d)]
                row = [Fraction(0)] * (M * d)
                row[x * d : (x + 1) * d] = [Fraction(v) for v in g]
                row[y * d : (y + 1) * d] = [Fraction(-v) for v in g]
                rows.append(row)
    return rows


@dataclass(frozen=True)
class Member:
    ranking: tuple[int, ...]
    beta: int
    values: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Cell:
    """One (d, K): found (a verified head: its member and model), refuted (every member has a
    certificate for one task: `certificates`), or undecided members left."""

    d: int
    K: int
    members: int
    found: Member | None
    model: MinMaxModel | None
    certificates: int
    undecided: int

    too_large: bool = False  # not searched: more than MAX_MEMBERS members

    @property
    def verdict(self) -> str:
        if self.too_large:
            return "not searched (family too large)"
        if self.found is not None:
            return "found"
        return "refuted in the family" if not self.undecided else "undecided"


def _member_model(member: Member, thetas: dict[str, np.ndarray], n: int) -> MinMaxModel:
    M, d = len(member.values), len(member.values[0])
    scores = np.array(member.ranking, dtype=float) * math.log(member.beta)
    head = TokenHead(scores, np.array(member.values, dtype=float))
    clf = {t: Classifier(thetas[t].reshape(M, d)) for t in TASKS}
    return MinMaxModel(TokenLayer((head,)), clf["min"], clf["max"], {"M": M, "n": n})


def _decide(member: Member, n: int) -> tuple[MinMaxModel | None, bool]:
    """(the verified model, False) when both tasks are solved; (None, True) when some task's
    system is refuted exactly; (None, False) when neither."""
    alpha = [member.beta**r for r in member.ranking]
    thetas = {}
    for task in TASKS:
        rows = task_rows(alpha, member.values, n, task)
        x = strict_solution(np.array([[float(v) for v in r] for r in rows]))
        if x is None:
            cert = gordan_certificate(rows)
            return None, cert is not None and check_gordan(rows, *cert)
        thetas[task] = x
    model = _member_model(member, thetas, n)
    head = model.layer.heads[0]
    ok = all(
        verify_exact_one_head(
            head, model.classifier_min if t == "min" else model.classifier_max, t, n
        ).correct
        for t in TASKS
    )
    return (model if ok else None), False


def search_cell(M: int, n: int, d: int, K: int) -> Cell:
    """Every member of F(M, n, d, K) until a head is found (module docstring)."""
    rankings = list(itertools.permutations(range(M)))
    members = count_value_classes(M, d, K) * len(rankings) * len(bases(n))
    if members > MAX_MEMBERS:  # reported, and the search stops there
        return Cell(d, K, members, None, None, 0, 0, too_large=True)
    counted, certificates, undecided = 0, 0, 0
    for V in value_classes(M, d, K):
        for ranking in rankings:
            for beta in bases(n):
                counted += 1
                member = Member(ranking, beta, V)
                model, refuted = _decide(member, n)
                if model is not None:
                    return Cell(d, K, counted, member, model, certificates, undecided)
                certificates += refuted
                undecided += not refuted
    return Cell(d, K, counted, None, None, certificates, undecided)


@dataclass(frozen=True)
class MinimalResources:
    """minimal_resources's answer: every (d, K) searched in order, the first found, and Theorem
    1's bound on the found head (its chain's verdict and the corollary's numbers)."""

    M: int
    n: int
    N: int
    cells: tuple[Cell, ...]
    chain: dict[str, Any] | None  # theorem1_chain(found head).to_json(), None when none found

    @property
    def found(self) -> Cell | None:
        return next((c for c in self.cells if c.found is not None), None)

    def to_json(self) -> dict[str, Any]:
        f = self.found
        norm = None
        if f is not None:
            norm = max(math.sqrt(sum(v * v for v in row)) for row in f.found.values)
        return {
            "M": self.M,
            "n": self.n,
            "N": self.N,
            "family": "α = β^r for every ranking r and β ∈ {2, 2n}; integer values in "
            "{−K..K}^d up to coordinate permutations and sign flips",
            "cells": [
                {
                    "d": c.d,
                    "K": c.K,
                    "verdict": c.verdict,
                    "members": c.members,
                    "certificates": c.certificates,
                    "undecided": c.undecided,
                }
                for c in self.cells
            ],
            "minimal": None
            if f is None
            else {
                "d": f.d,
                "K": f.K,
                "ranking": list(f.found.ranking),
                "beta": f.found.beta,
                "values": [list(r) for r in f.found.values],
                "log2_norm": math.log2(norm),
            },
            "theorem1": None
            if self.chain is None
            else {"verdict": self.chain["verdict"], "N": self.chain["N"]},
        }


def minimal_resources(M: int, n: int, d_max: int, K_max: int) -> MinimalResources:
    """Search (d, K) for d = 1..d_max and K = 1..K_max (d first) until one head does both tasks;
    every cell before it refuted in the family (or undecided). Theorem 1's chain runs on the head
    found."""
    check_sizes(M, n)
    check_int("M", M, high=6)
    check_int("d_max", d_max, low=1, high=4)
    check_int("K_max", K_max, low=1, high=4)
    cells = []
    for d in range(1, d_max + 1):
        for K in range(1, K_max + 1):
            cell = search_cell(M, n, d, K)
            cells.append(cell)
            if cell.too_large:
                return MinimalResources(M, n, lemma_n(M, n), tuple(cells), None)
            if cell.found is not None:
                chain = theorem1_chain(cell.model, n).to_json()
                return MinimalResources(M, n, lemma_n(M, n), tuple(cells), chain)
    return MinimalResources(M, n, lemma_n(M, n), tuple(cells), None)
