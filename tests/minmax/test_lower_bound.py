"""minmax/lower_bound.py and search.py: monotone runs (Lemma 1), Lemma 6 quantities, one-head
counterexamples, search."""

from __future__ import annotations

from math import ceil, log, sqrt

import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.minmax.brute import verify_brute
from headcount.minmax.construction import compact_code, min_head, sign_code, two_head_layer
from headcount.minmax.lower_bound import (
    lemma6_quantities,
    longest_monotone_run,
    one_head_counterexamples,
)
from headcount.minmax.model import (
    Classifier,
    MinMaxModel,
    TokenHead,
    TokenLayer,
    random_single_head,
)
from headcount.minmax.search import search_single_head, smallest_dimension


def _dp_lengths(a):
    """O(M²) DP: longest non-decreasing and non-increasing subsequence lengths."""
    m = len(a)
    up, down = [1] * m, [1] * m
    for i in range(m):
        for j in range(i):
            if a[j] <= a[i]:
                up[i] = max(up[i], up[j] + 1)
            if a[j] >= a[i]:
                down[i] = max(down[i], down[j] + 1)
    return max(up), max(down)


def _check_run(a, tokens, sign):
    assert all(t1 < t2 for t1, t2 in zip(tokens, tokens[1:]))
    vals = [a[t - 1] for t in tokens]
    assert all(sign * (v2 - v1) >= 0 for v1, v2 in zip(vals, vals[1:]))


def test_monotone_run_matches_dp_with_ties():
    rng = np.random.default_rng(7)
    for _ in range(300):
        m = int(rng.integers(1, 40))
        a = rng.integers(0, int(rng.integers(1, 12)), m).astype(float)  # many ties
        if rng.integers(0, 2):
            a = rng.standard_normal(m)
        run = longest_monotone_run(a)
        up, down = _dp_lengths(a.tolist())
        assert (len(run.non_decreasing), len(run.non_increasing)) == (up, down)
        _check_run(a, run.non_decreasing, +1)
        _check_run(a, run.non_increasing, -1)
        assert run.length == max(up, down)
        assert run.obstructs == ("both" if up == down else ("min" if up > down else "max"))
    # weights and scores give the same runs (exp is increasing)
    s = rng.standard_normal(30)
    assert (
        longest_monotone_run(np.exp(s))
        == longest_monotone_run(s)
        == longest_monotone_run(TokenHead(s, np.ones((30, 1))))
    )


def test_erdos_szekeres():
    rng = np.random.default_rng(11)
    for N in range(2, 9):
        m = (N - 1) ** 2 + 1
        for _ in range(40):
            assert longest_monotone_run(rng.permutation(m).astype(float)).length >= N
        # tight: (N−1)² distinct values with both runs of length N−1 (N−1 increasing blocks, each
        # decreasing)
        k = N - 1
        tight = np.array([b * k + (k - 1 - i) for b in range(k) for i in range(k)], dtype=float)
        run = longest_monotone_run(tight)
        assert len(run.non_decreasing) == len(run.non_increasing) == k


def test_lemma6_on_construction_min_head():
    M, n = 64, 16
    code = sign_code(M)
    head, _ = min_head(M, n, code)
    q = lemma6_quantities(head, n)
    d = ceil(8 * log(M))
    assert q.N == min(1 + 7, 15 // 2) == 7
    assert q.d == d and q.p == 0 and q.ell == pytest.approx(sqrt(d))
    assert len(q.run.non_increasing) == M and len(q.run.non_decreasing) == 1
    assert q.run.obstructs == "max" and q.run_at_least_N
    assert q.alt_dimension and q.either
    # given p, ℓ override; half-integer values give p = 1
    q2 = lemma6_quantities(TokenHead(head.scores, head.values / 2), n)
    assert q2.p == 1 and q2.ell == pytest.approx(sqrt(d) / 2)
    q3 = lemma6_quantities(head, n, value_bits=5, value_norm=2.0)
    assert q3.p == 5 and q3.log2_ell == 1.0 and q3.d_times_p_plus_log2_ell == d * 6
    # the JSON: the run as its own object, non-finite values as null (ℓ = 0: log₂ ℓ = −inf)
    js = lemma6_quantities(TokenHead(head.scores, 0 * head.values), n).to_json()
    assert js["run"]["length_non_increasing"] == M and js["ell"] == 0.0 and js["log2_ell"] is None
    assert list(js)[:5] == ["M", "n", "N", "erdos_szekeres_length", "d"]


def test_one_head_counterexamples_construction_min_head():
    M, n = 16, 5
    head, clf = min_head(M, n, compact_code(M))
    model = MinMaxModel(TokenLayer((head,)), clf, Classifier(clf.theta.copy()), {"n": n})
    rep = one_head_counterexamples(model)
    assert rep.min.correct and rep.min.margin > 0
    mx = rep.max
    assert not mx.correct and mx.confirmed and mx.margin <= 0
    assert mx.decision_exact != max(mx.worst_input) == mx.answer
    assert rep.run.obstructs == "max" and not rep.solves_both and rep.task("max") is mx
    with pytest.raises(InputError, match="single-head model, this one has 2 heads"):
        one_head_counterexamples(two_head_layer(M, n, compact_code(M)))


def test_one_head_counterexamples_random_heads():
    rng = np.random.default_rng(3)
    for _ in range(5):
        rep = one_head_counterexamples(random_single_head(rng, 8, 3), n=4)
        for task in ("min", "max"):
            assert rep.task(task).correct or rep.task(task).confirmed


def test_search_fails_with_confirmed_counterexamples_at_64_16():
    out = smallest_dimension(64, 16, 4, restarts=1, steps=10, seed=0)
    assert out.smallest_d is None and set(out.results) == {1, 2, 3, 4}
    for d, res in out.results.items():
        assert res.dim == d and not res.succeeded and res.all_failed_confirmed
        assert min(res.best_margins) <= 0
        assert all(not r.solves_both and r.confirmed_counterexample for r in res.runs)
    js = out.to_json()
    assert js["smallest_d"] is None and js["results"][1]["d"] == 1 and js["d_max"] == 4
    assert set(js["results"][1]["best_counterexamples"]) == {"min", "max"}


def test_search_succeeds_when_possible():
    # M=3, n=2: d = 2 suffices (the six outputs v1, z12, v2, z23, v3, z13 go round the circle and
    # both labellings 1,1,2,2,3,1 and 1,2,2,3,3,3 are contiguous arcs); d = 1 cannot (a scalar z
    # picks ≤ 2 classes)
    res = search_single_head(3, 2, 2, restarts=2, steps=200, seed=0)
    assert res.succeeded and min(res.best_margins) > 0
    model = res.best_model
    for task, clf in (("min", model.classifier_min), ("max", model.classifier_max)):
        assert verify_brute(model, clf, task, 2).correct
    assert not search_single_head(3, 2, 1, restarts=2, steps=100, seed=0).succeeded
    assert smallest_dimension(3, 2, 3, restarts=2, steps=200, seed=0).smallest_d == 2


@pytest.mark.parametrize(
    "call, needle",
    [
        (lambda: smallest_dimension(1, 3, 2), "M ≥ 2"),
        (lambda: smallest_dimension(6, 3, 0), "^dim 0"),
        (lambda: smallest_dimension(6, 3, 2, restarts=0), "restarts 0"),
        (lambda: search_single_head(6, 3, 2, steps=-1), "steps -1"),
    ],
)
def test_search_bad_input(call, needle):
    with pytest.raises(InputError, match=needle) as err:
        call()
    assert "\n" not in str(err.value)
