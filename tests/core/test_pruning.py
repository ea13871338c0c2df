"""Certified key pruning (core.attention.pruning, issue 34): the groupings it finds, the cells it
aggregates, and the pruned passes against the full ones. Its soundness on hostile heads is
tests/soundness/test_pruning_soundness.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from headcount.core.attention import (
    attention_work,
    blocked_attention_bounds,
    blocked_bound,
    float_work,
    pruning,
    reset_attention_work,
    reset_float_work,
)
from headcount.core.attention.pruning import MIN_KEYS, CellSums, key_groups
from headcount.core.attention.settings import use_pruning
from headcount.core.certify.evaluate import certified_predict, emulate
from headcount.core.numbers.precision import FLOAT64, fixed
from headcount.induction.construction import (
    TWO_LAYER_DIM,
    base_embedding,
    layer_one_heads,
    two_layer_induction,
    two_layer_parameters,
)
from tests.soundness.pruning_families import cells


def _layer_one_keys(n: int, alphabet: int, tokens: np.ndarray) -> list[np.ndarray]:
    c = two_layer_parameters(n, alphabet)
    W_E, W_pos = base_embedding(TWO_LAYER_DIM, n, alphabet, c.token_base, c.pos_base, c.scale)
    x = W_E[tokens] + W_pos
    return [x @ head.W_K for head in layer_one_heads(TWO_LAYER_DIM, c.beta1, c.key_shift)]


def test_groupings_of_the_construction_heads():
    n, alphabet = 4096, 64
    tokens = np.random.default_rng(0).integers(0, alphabet, size=n)
    previous, duplicate = (key_groups(k) for k in _layer_one_keys(n, alphabet, tokens))
    # previous-token head: positions as two digits and squares; F the high digit, V the low one
    assert previous.kind == "set" and len(previous.V) == 2 and previous.groups == 64
    assert len(previous.U) == 64 and (np.bincount(previous.cell_of) == 1).all()  # one key each
    # duplicate head: the token alone, so cells of identical keys
    assert duplicate.kind == "set" and len(duplicate.V) == 0 and duplicate.groups == alphabet
    assert duplicate.cell_same.all()
    # the induction head's keys: a token and a recency term
    recent = np.arange(n, dtype=np.float64) * 0.25
    induction = key_groups(np.stack([tokens // 8, tokens % 8, recent], axis=1).astype(float))
    assert induction.kind == "box" and induction.monotone and induction.groups == alphabet


def test_group_ids_are_the_ranks_of_the_rows():
    """pruning._ids ranks rows column by column; it must give np.unique's ids over whole rows."""
    rng = np.random.default_rng(34)
    for _ in range(200):
        n, width = int(rng.integers(1, 2000)), int(rng.integers(1, 5))
        spread = [int(rng.choice([1, 2, 50, 2**24])) for _ in range(width)]
        codes = [rng.integers(-s, s + 1, n) for s in spread]
        rows = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)[1].reshape(-1)
        assert np.array_equal(pruning._ids(codes), rows)


def test_keys_without_structure_are_not_grouped():
    rng = np.random.default_rng(1)
    assert key_groups(rng.standard_normal((MIN_KEYS + 5, 3))) is None
    assert key_groups(np.zeros((MIN_KEYS - 1, 2))) is None  # too short to gain
    k = np.ones((MIN_KEYS + 5, 2))
    k[3, 1] = np.nan
    assert key_groups(k) is None


def test_cell_sums_are_sequential_float_sums():
    rng = np.random.default_rng(2)
    k = rng.integers(0, 3, size=(MIN_KEYS + 40, 1)).astype(float)
    groups = key_groups(k)
    values = rng.standard_normal((len(k), 2)) * np.array([1.0, 1e16])
    sums = CellSums(groups, [values])
    for w0 in (300, 301, 700, len(k)):
        got = sums.upto(w0)[0]
        for cell in range(len(groups.cell_same)):
            expected = np.zeros(2)
            for j in np.flatnonzero(groups.cell_of[:w0] == cell):
                expected = expected + values[j]  # one addition at a time, in position order
            assert np.array_equal(got[cell], expected)


def _listed_one_by_one(monkeypatch):
    """Make every cell be listed key by key (as if its keys differed)."""
    original = blocked_bound.key_groups

    def listed(k, same=None):
        groups = original(k, same)
        if groups is None:
            return None
        return dataclasses.replace(groups, cell_same=np.zeros_like(groups.cell_same))

    monkeypatch.setattr(blocked_bound, "key_groups", listed)


# seeds whose keys have radii (the weights' error term dominates: a cell's multiplicity shows there)
# and seeds without (the float sums' γ terms dominate, counted differently for a cell)
@pytest.mark.parametrize("seed", [2, 3, 5, 9, 16, 0, 6])
def test_a_cell_is_bounded_as_its_keys_one_by_one(seed, monkeypatch):
    head = cells(np.random.default_rng(seed))
    with np.errstate(all="ignore"):
        reset_attention_work()
        mid, rad = blocked_attention_bounds(head.q, head.k, head.v, "causal")
        assert attention_work()["pruned_blocks"] > 0
        _listed_one_by_one(monkeypatch)
        mid1, rad1 = blocked_attention_bounds(head.q, head.k, head.v, "causal")
    both = np.isfinite(rad) & np.isfinite(rad1) & (rad1 > 0)
    assert both.mean() > 0.5
    assert (np.abs(mid - mid1)[both] <= rad1[both]).all()
    # the same bound up to the rounding factors: a cell's keys weigh as its multiplicity says
    ratio = rad[both] / rad1[both]
    tolerance = 0.1 if head.k[1].max() > 1e-4 else 1.0
    assert 1 - tolerance < ratio.min() and ratio.max() < 1 + tolerance


def _inputs(n: int, alphabet: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    return np.stack(
        [
            rng.integers(0, alphabet, size=n),
            np.zeros(n, dtype=np.int64),  # every key alike: cells of n keys
            np.repeat(np.arange(alphabet), n // alphabet + 1)[:n],  # long runs
            np.arange(n) % alphabet,  # periodic: the latest match one period back
        ]
    )


def test_pruned_passes_give_the_full_passes_answers_on_the_construction():
    n, alphabet = 4096, 16
    model, tokens = two_layer_induction(n, alphabet), _inputs(n, alphabet)
    runs = {}
    for on in (False, True):
        reset_attention_work()
        reset_float_work()
        with use_pruning(on), np.errstate(all="ignore"):
            runs[on] = (
                certified_predict(model, tokens, fixed(14)),
                emulate(model, tokens, FLOAT64),
                attention_work(),
                float_work(),
            )
    (out0, proven0), float0, work0, _ = runs[False]
    (out1, proven1), float1, work1, fwork1 = runs[True]
    assert proven0.all() and np.array_equal(proven0, proven1) and np.array_equal(out0, out1)
    assert np.array_equal(float0, float1)
    assert work0["pruned_blocks"] == 0 and work1["pruned_blocks"] > 0
    assert work1["computed"] < 0.75 * work0["computed"]  # pruned from 2048 keys on
    assert fwork1["pruned_rows"] > 0


@pytest.mark.parametrize("alphabet, bits", [(64, 10), (256, 9), (256, 16)])
def test_pruned_fixed_emulation_gives_the_full_answers(alphabet, bits):
    """The fixed:p emulation prunes too (its attention is float64 arithmetic). At these sizes some
    query blocks keep no scored key, only cells of identical keys: their sums start from empty
    bincounts (once an integer array that the cells' float weights could not be added to)."""
    n = 4096
    model = two_layer_induction(n, alphabet)
    tokens = np.concatenate([_inputs(n, alphabet), np.random.default_rng(1).integers(0, 3, (1, n))])
    outs = {}
    for on in (False, True):
        reset_float_work()
        with use_pruning(on), np.errstate(all="ignore"):
            outs[on] = emulate(model, tokens, fixed(bits))
        assert (float_work()["pruned_rows"] > 0) == on
    assert np.array_equal(outs[False], outs[True])


def test_pruning_is_off_for_the_reference_and_short_heads():
    assert MIN_KEYS > pruning.PRUNE_FROM > pruning.WINDOW
    head = cells(np.random.default_rng(0))
    short = tuple((a[0][:, : MIN_KEYS - 1], a[1][:, : MIN_KEYS - 1]) for a in head[:3])
    reset_attention_work()
    with np.errstate(all="ignore"):
        blocked_attention_bounds(*short, "causal")
    assert attention_work()["pruned_blocks"] == 0
