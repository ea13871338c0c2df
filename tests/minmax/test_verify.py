"""minmax/verify.py: the exact histogram verifier against brute force over all multisets."""

from __future__ import annotations

import numpy as np
import pytest

from headcount.core.symbols import BOTTOM
from headcount.minmax.construction import compact_code, min_head, two_head_layer
from headcount.minmax.model import Classifier, TokenHead, TokenLayer
from headcount.minmax.task import all_multisets, min_max
from headcount.minmax.verify import decide_exact, verify_block_layer, verify_brute, verify_exact_one_head


def _random_head(rng):
    """Small integer (or half-integer) weights: many exact ties and near-ties."""
    M, d = int(rng.integers(2, 7)), int(rng.integers(1, 4))
    kind = rng.integers(0, 3)
    if kind == 0:  # arbitrary small integers
        scores = rng.integers(-2, 3, M).astype(float)
        values = rng.integers(-1, 2, (M, d)).astype(float)
        theta = rng.integers(-1, 2, (M, d)).astype(float)
    else:  # near the construction: monotone scores, ±1 codes, θ = v, sometimes perturbed
        b = float(rng.choice([0.0, 0.5, 1.0, 2.0, 3.0]))
        scores = (-1 if kind == 1 else 1) * b * np.arange(1, M + 1) + rng.integers(-1, 2, M) * 0.5 * rng.integers(0, 2)
        values = rng.choice([-1.0, 1.0], (M, d))
        theta = values + rng.integers(-1, 2, (M, d)) * rng.integers(0, 2)
    return TokenHead(scores, values), Classifier(theta)


def _check_counterexample(head, clf, task, verdict):
    lst = np.array([verdict.worst_input])
    truth = min_max(lst)[0 if task == "min" else 1][0]
    dec = decide_exact(head, clf, lst)[0]
    assert dec != truth and dec == verdict.decision
    assert len(verdict.worst_input) == verdict.n


def test_exact_verifier_agrees_with_brute_force():
    rng = np.random.default_rng(2024)
    outcomes = {True: 0, False: 0}
    for _ in range(300):
        head, clf = _random_head(rng)
        n = int(rng.integers(2, 6))
        for task in ("min", "max"):
            ex = verify_exact_one_head(head, clf, task, n)
            bf = verify_brute(head, clf, task, n)
            assert ex.correct == bf.correct, (head, clf, task, n)
            assert abs(ex.margin - bf.margin) <= ex.tolerance + bf.tolerance + 1e-12
            outcomes[ex.correct] += 1
            if not ex.correct:
                _check_counterexample(head, clf, task, ex)
                _check_counterexample(head, clf, task, bf)
                X = all_multisets(head.M, n)
                assert bf.errors >= 1 and bf.worst_input in {tuple(r) for r in X}
    assert outcomes[True] >= 20 and outcomes[False] >= 20  # both verdicts exercised


def test_exact_tie_is_wrong():
    # all values equal: every logit ties, every input answers ⊥
    head = TokenHead(np.array([0.0, 1.0, 2.0]), np.ones((3, 2)))
    clf = Classifier(np.ones((3, 2)))
    v = verify_exact_one_head(head, clf, "min", 3)
    assert not v.correct and v.margin == 0.0 and v.decision == BOTTOM
    # a tie that float64 cannot see: e^0·(−2) + 2·e^0·1 = 0 exactly (n = 3, same score)
    head = TokenHead(np.zeros(2), np.array([[1.0], [0.5]]))
    clf = Classifier(np.array([[1.0], [-2.0]]))  # C = [[1, .5], [−2, −1]]: gap(x=1,y=2,ω=2) = 3 + 2·1.5 > 0
    assert verify_exact_one_head(head, clf, "min", 3).correct == verify_brute(head, clf, "min", 3).correct


def test_near_tie_needs_exact_recheck():
    # (1−w)·D_x + w·D_ω = 0 exactly with w = 2/3 (n = 3, equal scores): D_x = 2, D_ω = −1
    head = TokenHead(np.zeros(2), np.array([[0.1], [-0.05]]))
    clf = Classifier(np.array([[20.0], [0.0]]))  # C_1ω − C_2ω = 20·v_ω: D_1 = 2, D_2 = −1
    for verdict in (verify_exact_one_head(head, clf, "min", 3), verify_brute(head, clf, "min", 3)):
        assert not verdict.correct and verdict.worst_input == (1, 2, 2) and verdict.decision == BOTTOM
    ex = verify_exact_one_head(head, clf, "min", 3)
    assert ex.exact_rechecks >= 1


def test_block_layer_reduces_to_one_head():
    model = two_head_layer(5, 4, compact_code(5))
    for task, clf in (("min", model.classifier_min), ("max", model.classifier_max)):
        blk = verify_block_layer(model.layer, clf, task, 4)
        bf = verify_brute(model.layer, clf, task, 4)
        assert blk.correct and bf.correct and abs(blk.margin - bf.margin) <= blk.tolerance + bf.tolerance
    # a non-block layer is refused
    h = model.layer.heads[0]
    mixed = TokenLayer((h, TokenHead(h.scores, h.values + 1)))
    with pytest.raises(ValueError, match="not block-structured"):
        verify_block_layer(mixed, model.classifier_min, "min", 4)


def test_multi_head_brute_force_finds_errors():
    head, clf = min_head(4, 3, compact_code(4))
    bad = TokenLayer((head, TokenHead(-head.scores, head.values)))  # a max head added on the same block
    v = verify_brute(bad, clf, "min", 3)
    assert not v.correct and v.errors >= 1
    _check_counterexample(bad, clf, "min", v)


@pytest.mark.parametrize(
    "call",
    [
        lambda h, c: verify_exact_one_head(h, c, "median", 3),
        lambda h, c: verify_exact_one_head(h, c, "min", 1),
        lambda h, c: verify_brute(h, c, "sum", 3),
        lambda h, c: verify_brute(h, c, "max", 0),
    ],
)
def test_bad_arguments(call):
    head, clf = min_head(3, 3, compact_code(3))
    with pytest.raises(ValueError) as err:
        call(head, clf)
    assert "\n" not in str(err.value)
