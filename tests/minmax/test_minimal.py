"""minmax minimal (headcount.minmax.theorem1.minimal): the family's value classes against brute
force, each member's linear systems against the exact verifier (their reference), and the
search's verdicts at M = 3."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from headcount.minmax.exact_verify import verify_exact_one_head
from headcount.minmax.model import Classifier, TokenHead
from headcount.minmax.theorem1.minimal import (
    count_value_classes,
    minimal_resources,
    search_cell,
    task_rows,
    value_classes,
)


@pytest.mark.parametrize("M, d, K", [(3, 1, 1), (3, 2, 1), (2, 2, 2), (3, 1, 2)])
def test_value_classes_are_one_per_symmetry_class(M, d, K):
    classes = set(value_classes(M, d, K))

    def canonical(V):
        cols = [tuple(V[w][i] for w in range(M)) for i in range(d)]
        cols = [c if next(x for x in c if x) > 0 else tuple(-x for x in c) for c in cols]
        return tuple(sorted(cols))

    brute = set()
    for flat in itertools.product(range(-K, K + 1), repeat=M * d):
        V = [flat[w * d : (w + 1) * d] for w in range(M)]
        if all(any(r) for r in V) and all(any(V[w][i] for w in range(M)) for i in range(d)):
            brute.add(canonical(V))
    assert {canonical(V) for V in classes} == brute and len(classes) == len(brute)
    assert len(classes) <= count_value_classes(M, d, K)


def test_member_systems_agree_with_the_exact_verifier():
    """A classifier satisfies every row of a task's system iff the exact verifier says the head
    is right for that task (random integer heads and classifiers; α = β^r as float scores)."""
    rng = np.random.default_rng(3)
    agree = 0
    for _ in range(150):
        M, d, n = int(rng.integers(2, 5)), int(rng.integers(1, 3)), int(rng.integers(2, 7))
        V = rng.integers(-2, 3, size=(M, d))
        V[np.all(V == 0, axis=1), 0] = 1
        ranking = rng.permutation(M)
        beta = int(rng.choice([2, 2 * n]))
        theta = rng.normal(size=(M, d)) * 3
        head = TokenHead(ranking * math.log(beta), V.astype(float))
        alpha = [beta ** int(r) for r in ranking]
        for task in ("min", "max"):
            rows = task_rows(alpha, V.tolist(), n, task)
            values = [sum(float(a) * b for a, b in zip(r, theta.ravel())) for r in rows]
            if min(abs(v) for v in values) < 1e-9:
                continue  # a near-tie: the float head's α = e^fl(r·ln β) is not exactly β^r
            by_rows = min(values) > 0
            exact = verify_exact_one_head(head, Classifier(theta), task, n).correct
            assert by_rows == exact
            agree += exact
    assert agree > 0  # some random classifier was right: both sides were exercised


def test_M3_needs_two_dimensions_in_the_family():
    r = minimal_resources(3, 5, 2, 2)
    verdicts = [(c.d, c.K, c.verdict) for c in r.cells]
    assert verdicts[:2] == [(1, 1, "refuted in the family"), (1, 2, "refuted in the family")]
    assert verdicts[-1] == (2, 1, "found")
    assert all(c.certificates == c.members for c in r.cells[:2])
    assert r.chain["verdict"] == "bound proven" and r.N == 2


def test_a_too_large_cell_is_reported_not_searched():
    cell = search_cell(5, 3, 2, 1)
    assert cell.too_large and cell.verdict == "not searched (family too large)"
