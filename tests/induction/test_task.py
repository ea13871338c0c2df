"""Tests for the induction task: reference solvers, enumeration, generators, INDEX, metrics."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headcount.core.model.symbols import BOTTOM
from headcount.induction.metrics import induction_metrics
from headcount.induction.task import (
    ADVERSARIAL_FAMILIES,
    GENERATORS,
    all_equal,
    all_sequences,
    bottom_heavy,
    count_sequences,
    find_positions,
    index_family,
    index_family_for_length,
    index_input,
    induction_targets,
    induction_targets_literal,
    latest_match_far_back,
    no_adjacent_repeats,
    repeated_block,
    uniform,
)

B = BOTTOM


# ---------------------------------------------------------------------------------------------
# Solvers
# ---------------------------------------------------------------------------------------------


@st.composite
def token_batches(draw):
    S = draw(st.integers(2, 6))
    n = draw(st.integers(1, 30))
    rows = draw(st.integers(1, 4))
    row = st.lists(st.integers(0, S - 1), min_size=n, max_size=n)
    return np.array(draw(st.lists(row, min_size=rows, max_size=rows)), dtype=np.int64)


@settings(max_examples=150, deadline=None)
@given(token_batches())
def test_fast_solver_matches_literal(tokens):
    for hops in (1, 2, 3):
        fast = induction_targets(tokens, hops=hops)
        assert fast.dtype == np.int64 and fast.shape == tokens.shape
        for r in range(tokens.shape[0]):
            assert fast[r].tolist() == induction_targets_literal(tokens[r].tolist(), hops=hops)
        # The 1-D path must agree with the batched one.
        assert induction_targets(tokens[0], hops=hops).tolist() == fast[0].tolist()


@settings(max_examples=80, deadline=None)
@given(token_batches())
def test_find_positions_matches_definition(tokens):
    find = find_positions(tokens)
    for r, seq in enumerate(tokens.tolist()):
        for i, t in enumerate(seq):
            earlier = [j for j in range(i) if seq[j] == t]
            assert find[r, i] == (max(earlier) + 1 if earlier else -1)


@pytest.mark.parametrize(
    ("seq", "hops", "expected"),
    [
        ([3, 0, 2, 3], 1, [B, B, B, 0]),
        ([5, 5, 5], 1, [B, 5, 5]),
        ([1, 2, 1, 3, 1, 2], 1, [B, B, 2, B, 3, 1]),
        ([0, 1, 0, 1, 0], 1, [B, B, 1, 0, 1]),
        ([0, 1, 0, 1, 0], 2, [B, B, B, 1, 0]),
        ([0, 1, 0, 1, 0], 3, [B, B, B, B, 1]),
        ([7], 1, [B]),
        # An adjacent repeat makes find a fixed point (find(1) = 1), so every hop answers 4.
        ([4, 4], 2, [B, 4]),
        ([4, 4], 3, [B, 4]),
    ],
)
def test_hand_checked_examples(seq, hops, expected):
    assert induction_targets(np.array(seq), hops=hops).tolist() == expected
    assert induction_targets_literal(seq, hops=hops) == expected


def test_find_positions_hand_example():
    assert find_positions(np.array([1, 2, 1, 3, 1, 2])).tolist() == [-1, -1, 1, -1, 3, 2]
    assert find_positions(np.array([[5, 5, 5]])).tolist() == [[-1, 1, 2]]


def test_first_position_always_bottom():
    tokens = uniform(np.random.default_rng(3), 500, 12, 3)
    for hops in (1, 2, 4):
        assert (induction_targets(tokens, hops=hops)[:, 0] == BOTTOM).all()


def test_large_token_ids_and_long_sequences():
    # Token ids far above n take the compaction path; answers must still be the original ids.
    big = np.array([[10**12, 5, 10**12, 7, 5]])
    assert induction_targets(big).tolist() == [[B, B, 5, B, 10**12]]
    tokens = uniform(np.random.default_rng(4), 2, 300, 150)  # n > 127: wider index dtype
    fast = induction_targets(tokens, hops=2)
    for r in range(2):
        assert fast[r].tolist() == induction_targets_literal(tokens[r].tolist(), hops=2)


def test_empty_and_invalid_inputs():
    assert induction_targets(np.zeros((3, 0), dtype=np.int64)).shape == (3, 0)
    assert induction_targets(np.zeros((0, 5), dtype=np.int64)).shape == (0, 5)
    with pytest.raises(ValueError):
        induction_targets(np.array([0, -1, 2]))
    with pytest.raises(ValueError):
        induction_targets(np.array([0, 1]), hops=-1)
    assert induction_targets(np.array([0, 1]), hops=0).tolist() == [0, 1]  # hop 0: the input
    with pytest.raises(ValueError):
        induction_targets(np.array([0.5, 1.0]))


# ---------------------------------------------------------------------------------------------
# Enumeration
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "S"), [(0, 3), (1, 1), (3, 2), (2, 4), (4, 3)])
def test_all_sequences_matches_itertools(n, S):
    expected = np.array(list(itertools.product(range(S), repeat=n)), dtype=np.int64)
    expected = expected.reshape(S**n, n)
    got = all_sequences(n, S)
    assert got.dtype == np.int64
    assert got.tolist() == expected.tolist()
    assert count_sequences(n, S) == S**n == got.shape[0]


def test_all_sequences_slices():
    full = all_sequences(4, 3)
    assert all_sequences(4, 3, 10, 20).tolist() == full[10:20].tolist()
    assert all_sequences(4, 3, start=79).tolist() == [[2, 2, 2, 1], [2, 2, 2, 2]]
    assert all_sequences(4, 3, 5, 5).shape == (0, 4)
    # Starts beyond int64 still enumerate exactly.
    assert count_sequences(30, 6) == 6**30
    assert all_sequences(30, 6, start=6**29, stop=6**29 + 1).tolist() == [[1] + [0] * 29]
    assert all_sequences(30, 6, start=6**30 - 2).tolist() == [[5] * 29 + [4], [5] * 30]
    with pytest.raises(ValueError):
        all_sequences(3, 2, 0, 9)


# ---------------------------------------------------------------------------------------------
# Generators
# ---------------------------------------------------------------------------------------------


def test_generator_registries():
    assert set(ADVERSARIAL_FAMILIES) == {
        "latest_match_far_back",
        "all_equal",
        "bottom_heavy",
        "repeated_block",
        "index",
    }
    assert set(GENERATORS) == set(ADVERSARIAL_FAMILIES) | {"uniform", "no_adjacent_repeats"}
    assert ADVERSARIAL_FAMILIES["index"] is index_family_for_length
    assert GENERATORS["uniform"] is uniform


@pytest.mark.parametrize("name", sorted(GENERATORS))
@pytest.mark.parametrize(("n", "S"), [(3, 3), (8, 5), (20, 20), (33, 4)])
def test_generator_shape_dtype_range_determinism(name, n, S):
    gen = GENERATORS[name]
    a = gen(np.random.default_rng(11), 64, n, S)
    b = gen(np.random.default_rng(11), 64, n, S)
    assert a.shape == (64, n)
    assert a.dtype == np.int64
    assert a.min() >= 0 and a.max() < S
    assert np.array_equal(a, b)


@pytest.mark.parametrize("name", sorted(set(GENERATORS) - {"all_equal"}))
def test_random_generators_depend_on_seed(name):
    gen = GENERATORS[name]
    first = gen(np.random.default_rng(1), 32, 9, 5)
    assert not np.array_equal(first, gen(np.random.default_rng(2), 32, 9, 5))


def test_no_adjacent_repeats():
    x = no_adjacent_repeats(np.random.default_rng(5), 2000, 25, 3)
    assert (x[:, 1:] != x[:, :-1]).all()
    # Both of the other tokens do follow each token (not a fixed cycle).
    pairs = {(int(p), int(q)) for p, q in zip(x[:, :-1].ravel(), x[:, 1:].ravel())}
    assert pairs == {(p, q) for p in range(3) for q in range(3) if p != q}
    alt = no_adjacent_repeats(np.random.default_rng(5), 10, 6, 2)
    assert (alt[:, 1:] != alt[:, :-1]).all()
    with pytest.raises(ValueError):
        no_adjacent_repeats(np.random.default_rng(5), 1, 4, 1)


def test_repeated_block_is_periodic():
    x = repeated_block(np.random.default_rng(6), 300, 16, 4)
    for row in x:
        periods = [L for L in range(1, 17) if all(row[i] == row[i % L] for i in range(16))]
        assert periods  # L = 16 always qualifies; the check is that row is a tiling of its prefix
    # Some rows really are short blocks repeated.
    assert any(all(row[i] == row[i % 2] for i in range(16)) for row in x)


@pytest.mark.parametrize(("n", "S"), [(3, 2), (10, 4), (10, 20), (40, 6)])
def test_latest_match_far_back_structure(n, S):
    x = latest_match_far_back(np.random.default_rng(7), 200, n, S)
    t = x[:, 0]
    assert (x[:, 1] == t).all() and (x[:, -1] == t).all()
    assert not (x[:, 2:-1] == t[:, None]).any()
    # The final query's latest match is position 1 (0-based), with an older one at 0.
    assert (find_positions(x)[:, -1] == 2).all()
    # Filler repeats are exactly S-1 back, the farthest possible for every repeat at once.
    find = find_positions(x)
    inner = find[:, 2:-1]
    dist = np.arange(2, n - 1)[None, :] - (inner - 1)
    assert ((inner == -1) | (dist == S - 1)).all()


def test_latest_match_far_back_tiny():
    rng = np.random.default_rng(0)
    assert latest_match_far_back(rng, 3, 1, 4).shape == (3, 1)
    two = latest_match_far_back(rng, 3, 2, 4)
    assert (two[:, 0] == two[:, 1]).all()
    assert (latest_match_far_back(rng, 2, 5, 1) == 0).all()


def test_all_equal_exact():
    x = all_equal(np.random.default_rng(0), 5, 4, 3)
    assert x.tolist() == [[0] * 4, [1] * 4, [2] * 4, [0] * 4, [1] * 4]


def test_bottom_heavy_mostly_bottom():
    x = bottom_heavy(np.random.default_rng(8), 400, 20, 40)
    bottoms = induction_targets(x) == BOTTOM
    assert bottoms.mean() > 0.75
    assert (~bottoms).any()  # a few repeats exist
    # With S < n the first S positions are still distinct unless a repeat was injected.
    y = bottom_heavy(np.random.default_rng(8), 400, 20, 5)
    assert y.shape == (400, 20) and (induction_targets(y)[:, 0] == BOTTOM).all()


# ---------------------------------------------------------------------------------------------
# INDEX
# ---------------------------------------------------------------------------------------------


def test_index_input_exact():
    assert index_input([1, 0, 1], 2).tolist() == [0, 1, 2, 0, 0, 1, 2]
    assert index_input([1], 1).tolist() == [2, 1, 2]
    batch = index_input(np.array([[0, 1], [1, 1]]), np.array([1, 2]))
    assert batch.tolist() == [[2, 0, 0, 1, 2], [0, 1, 2, 1, 2]]
    with pytest.raises(ValueError):
        index_input([1, 0], 3)
    with pytest.raises(ValueError):
        index_input([1, 2], 1)


def test_index_family_answers_f_at_i_star():
    inputs, f_bits, i_stars = index_family(4)
    assert inputs.shape == (64, 9) and f_bits.shape == (64, 4) and i_stars.shape == (64,)
    answers = induction_targets(inputs)[:, -1]
    assert answers.tolist() == f_bits[np.arange(64), i_stars - 1].tolist()
    # Every (f, i*) pair appears exactly once.
    pairs = {(tuple(f), int(i)) for f, i in zip(f_bits.tolist(), i_stars)}
    assert len(pairs) == 64
    assert f_bits[:4].tolist() == [[0, 0, 0, 0]] * 4 and i_stars[:5].tolist() == [1, 2, 3, 4, 1]


@pytest.mark.parametrize("k", [1, 2, 3, 5, 7])
def test_index_family_size(k):
    inputs, f_bits, i_stars = index_family(k)
    assert inputs.shape == (2**k * k, 2 * k + 1)
    assert set(i_stars.tolist()) == set(range(1, k + 1))


def test_index_family_sampled_and_limits():
    a = index_family(30, rng=np.random.default_rng(9), samples=50)
    b = index_family(30, rng=np.random.default_rng(9), samples=50)
    for x, y in zip(a, b):
        assert np.array_equal(x, y)
    inputs, f_bits, i_stars = a
    assert inputs.shape == (50, 61)
    assert induction_targets(inputs)[:, -1].tolist() == f_bits[np.arange(50), i_stars - 1].tolist()
    with pytest.raises(ValueError):
        index_family(21)


@pytest.mark.parametrize("n", [3, 4, 9, 10])
def test_index_family_for_length(n):
    x = index_family_for_length(np.random.default_rng(10), 100, n, 3)
    k = (n - 1) // 2
    assert x.shape == (100, n)
    query = 2 * k  # 0-based position of '?'
    assert (x[:, query] == 2).all()
    assert ((x[:, 0 : 2 * k : 2] == 2).sum(axis=1) == 1).all()
    assert np.isin(x[:, 1 : 2 * k : 2], (0, 1)).all()
    i_star = np.argmax(x[:, 0 : 2 * k : 2] == 2, axis=1) + 1
    assert induction_targets(x)[:, query].tolist() == x[np.arange(100), 2 * i_star - 1].tolist()
    if n % 2 == 0:
        assert np.isin(x[:, -1], (0, 1)).all()


def test_index_family_for_length_limits():
    with pytest.raises(ValueError):
        index_family_for_length(np.random.default_rng(0), 2, 5, 2)
    with pytest.raises(ValueError):
        index_family_for_length(np.random.default_rng(0), 2, 2, 3)


# ---------------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------------


def test_metrics_hand_example():
    target = np.array([[B, 3, 0], [B, B, 2]])
    predicted = np.array([[B, 3, 1], [0, B, 2]])
    m = induction_metrics(predicted, target)
    assert m.to_json() == {
        "positions": 6,
        "bottom_positions": 3,
        "token_positions": 3,
        "errors": 2,
        "errors_bottom": 1,
        "errors_token": 1,
        "accuracy": 2 / 3,
        "accuracy_bottom": 2 / 3,
        "first_error": (0, 2),
    }
    assert (
        list(m.to_json())[0] == "positions" and list(m.to_json())[-1] == "first_error"
    )  # the JSON's order
    assert all(isinstance(v, int) for v in (m.positions, m.errors, m.errors_token))


def test_metrics_perfect_and_degenerate():
    target = np.array([B, B, 1])
    m = induction_metrics(target.copy(), target)
    assert m.errors == 0 and m.first_error is None
    assert m.accuracy == 1.0 and m.accuracy_bottom == 1.0
    only_bottom = induction_metrics(np.array([[0, B]]), np.array([[B, B]]))
    assert only_bottom.accuracy == 1.0 and only_bottom.token_positions == 0
    assert only_bottom.accuracy_bottom == 0.5 and only_bottom.first_error == (0, 0)
    only_tokens = induction_metrics(np.array([[1, 2], [3, 5]]), np.array([[1, 2], [3, 4]]))
    assert only_tokens.accuracy_bottom == 1.0 and only_tokens.accuracy == 0.75
    assert only_tokens.first_error == (1, 1)
    with pytest.raises(ValueError):
        induction_metrics(np.array([1, 2]), np.array([1, 2, 3]))
