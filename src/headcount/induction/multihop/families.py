"""Adversarial input families for the k-hop task (issue 16): inputs whose pointer chains are what a
k-hop model can get wrong. Each generator is (rng, batch, n, S, hops) → [batch n] int64 tokens in
0..S−1; `certify` adds them to its sampled input set when hops ≥ 2 (induction/certification.py
family_sizes).

find(i) = 1 + the latest j < i with σ_j = σ_i (⊥ if none); in a sequence of period P with P distinct
symbols, find(i) = i − P + 1 for i ≥ P, so every hop moves the pointer back P − 1 positions.

* ``khop_long_chain`` — periodic with a random period P ∈ [2, S] and a random phase: chains of up to
  i / (P − 1) hops, all valid far back (P = 2: one position per hop, the longest chains there are);
* ``khop_bottom_at_last_hop`` — periodic with the period that puts "hop k − 1 still valid, hop k ⊥"
  in the middle of the input (P − 1 ≈ n / (2k)), then a random eighth of the positions re-drawn:
  many positions whose k-th hop is the first to fall off the start;
* ``khop_revisits`` — runs of one symbol (lengths 1..4) between random symbols: where σ_{i−1} = σ_i,
  find(i) = i, so a chain that reaches a run stays there — pointers that revisit a position;
* ``khop_maximal_chain`` — two symbols alternating (a random pair): find(i) = i − 1 for every i ≥ 2,
  the longest chain the alphabet allows; hop k lands k positions back until the chain reaches the
  start (⊥).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

KhopGenerator = Callable[[np.random.Generator, int, int, int, int], np.ndarray]


def _periodic(
    rng: np.random.Generator, batch: int, n: int, periods: np.ndarray, alphabet: int
) -> np.ndarray:
    """Row b: a random ordering of `periods[b]` distinct symbols repeated from a random phase."""
    symbols = np.argsort(rng.random((batch, alphabet)), axis=1)  # a random permutation per row
    phase = rng.integers(0, np.maximum(periods, 1))
    slot = (np.arange(n)[None, :] + phase[:, None]) % periods[:, None]
    return np.take_along_axis(symbols, slot, axis=1).astype(np.int64)


def khop_long_chain(
    rng: np.random.Generator, batch: int, n: int, alphabet: int, hops: int
) -> np.ndarray:
    periods = rng.integers(2, max(2, alphabet) + 1, size=batch)
    return _periodic(rng, batch, n, np.minimum(periods, alphabet), alphabet)


def khop_bottom_at_last_hop(
    rng: np.random.Generator, batch: int, n: int, alphabet: int, hops: int
) -> np.ndarray:
    # hop k of position i ≥ P is valid iff i − k(P − 1) ≥ P − 1: the boundary i ≈ (k + 1)(P − 1)
    # sits mid-input when P − 1 ≈ n / (2(k + 1)); one step of randomness either side
    centre = max(1, n // (2 * (hops + 1)))
    periods = np.clip(centre + 1 + rng.integers(-1, 2, size=batch), 2, alphabet)
    tokens = _periodic(rng, batch, n, periods, alphabet)
    redraw = rng.random((batch, n)) < 0.125
    tokens[redraw] = rng.integers(0, alphabet, size=int(redraw.sum()))
    return tokens


def khop_revisits(
    rng: np.random.Generator, batch: int, n: int, alphabet: int, hops: int
) -> np.ndarray:
    # each position starts a new run with probability 2/5 (mean run length 2.5), else repeats its
    # left neighbour; a new run draws a fresh symbol
    fresh = rng.integers(0, alphabet, size=(batch, n), dtype=np.int64)
    starts = rng.random((batch, n)) < 0.4
    starts[:, 0] = True
    last_start = np.maximum.accumulate(np.where(starts, np.arange(n)[None, :], 0), axis=1)
    return np.take_along_axis(fresh, last_start, axis=1)


def khop_maximal_chain(
    rng: np.random.Generator, batch: int, n: int, alphabet: int, hops: int
) -> np.ndarray:
    first = rng.integers(0, alphabet, size=batch)
    second = (first + rng.integers(1, alphabet, size=batch)) % alphabet  # a different symbol
    pair = np.stack([first, second], axis=1)
    return pair[:, np.arange(n) % 2].astype(np.int64)


KHOP_FAMILIES: dict[str, KhopGenerator] = {
    "khop_long_chain": khop_long_chain,
    "khop_bottom_at_last_hop": khop_bottom_at_last_hop,
    "khop_revisits": khop_revisits,
    "khop_maximal_chain": khop_maximal_chain,
}
