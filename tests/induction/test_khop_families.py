"""The k-hop adversarial families (induction/multihop/families.py): each has the chain structure it
names, and certify adds them to its sampled input set for hops ≥ 2 only (hop 1 certificates are
unchanged)."""

from __future__ import annotations

import numpy as np
import pytest

from headcount.induction import task
from headcount.induction.certification import family_sizes, induction_inputs
from headcount.induction.multihop.families import KHOP_FAMILIES


def draw(name: str, n: int = 96, alphabet: int = 8, hops: int = 4, batch: int = 64) -> np.ndarray:
    tokens = KHOP_FAMILIES[name](np.random.default_rng(5), batch, n, alphabet, hops)
    assert tokens.shape == (batch, n) and tokens.dtype == np.int64
    assert tokens.min() >= 0 and tokens.max() < alphabet
    return tokens


def test_long_chains_move_back_one_period_per_hop():
    sigma = draw("khop_long_chain")
    find = task.find_positions(sigma)
    for row, f in zip(sigma, find):
        period = len(set(row.tolist()))
        i = np.arange(period, len(row))
        assert np.array_equal(f[i], i - period + 1)  # every hop moves back period − 1 positions


@pytest.mark.parametrize("hops", [2, 3, 4, 8, 16])
def test_bottom_at_last_hop_is_common(hops):
    sigma = draw("khop_bottom_at_last_hop", n=256, alphabet=16, hops=hops)
    last = task.induction_targets(sigma, hops)
    before = task.induction_targets(sigma, hops - 1)
    falls_off = (before != task.BOTTOM) & (last == task.BOTTOM)
    assert falls_off.any(axis=1).mean() > 0.9  # almost every input has such positions
    assert falls_off.mean() > 0.02


def test_revisits_have_self_loops():
    sigma = draw("khop_revisits")
    find = task.find_positions(sigma)
    self_loops = find == np.arange(sigma.shape[1])[None, :]  # find(i) = i where σ_{i−1} = σ_i
    assert self_loops.any(axis=1).all()
    assert np.array_equal(self_loops[:, 1:], sigma[:, 1:] == sigma[:, :-1])


def test_maximal_chain_moves_one_position_per_hop():
    sigma = draw("khop_maximal_chain", hops=5)
    find = task.find_positions(sigma)
    assert np.array_equal(
        find[:, 2:], np.broadcast_to(np.arange(1, sigma.shape[1] - 1), find[:, 2:].shape)
    )
    assert (find[:, :2] == -1).all()
    hop5 = task.induction_targets(sigma, 5)
    assert np.array_equal(
        hop5[:, 6:], sigma[:, 1:-5]
    )  # hop k lands k positions back (find is i − 1)


def test_certify_adds_the_families_for_hops_two_and_more_only():
    one = family_sizes(64, 8, 64, hops=1)
    assert not any(name in KHOP_FAMILIES for name, _ in one)
    four = family_sizes(64, 8, 64, hops=4)
    assert four[: len(one)] == one and [name for name, _ in four[len(one) :]] == list(KHOP_FAMILIES)
    stream, exhaustive = induction_inputs(64, 8, 64, seed=2, exhaustive=False, hops=4)
    seen = {name for name, _ in stream()}
    assert not exhaustive and set(KHOP_FAMILIES) <= seen
