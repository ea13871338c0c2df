"""Exact searches for additive bases (Lemmas 13–14 of seed 004, and the postage-stamp problem).

A set B of positive integers is an *additive D-basis with range r* if every integer 0..r is a sum of
at most D elements of B (repetition allowed; 0 is the empty sum) and r + 1 is not.

- :func:`smallest_basis` (D, H, T): a smallest B ⊆ {1..H} with range ≥ T, proven smallest by
  exhaustive search over sizes k = 1, 2, ... .  Returns the sorted list; returns ``None`` if the time
  limit is hit before the search finishes (``search_smallest_basis`` gives the same answer with a
  ``timed_out`` flag and statistics).  Raises ``ValueError`` when no basis exists (T > D·H: every
  element is ≤ H so every sum of ≤ D elements is ≤ D·H; and {1..H} reaches exactly D·H).
- :func:`stamps` (D, k): the classic postage-stamp problem n(D, k): the largest range of a k-element
  set of positive integers with at most D summands, with one optimal basis.  Raises
  ``SearchTimeout`` if the time limit is hit.

Pruning used by both searches (elements chosen in increasing order b_1 < b_2 < ...):
  * b_1 = 1 whenever the target range is ≥ 1 (otherwise 1 is not representable);
  * b_{i+1} ≤ r_i + 1 where r_i is the range of {b_1..b_i} (else r_i + 1 is never representable,
    since all later elements exceed it);
  * with m elements still to add, the final range is ≤ g^m(r_i), g(r) = D·(r + 1) (the next element is
    ≤ r + 1, and the range of a set is ≤ D·max element); also ≤ D·H;
  * a k-element set represents at most C(k + D, D) − 1 distinct positive integers, so sizes k with
    C(k + D, D) − 1 < T are skipped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from math import comb

import numpy as np

from headcount.boolean.bases import basis_range

__all__ = [
    "SearchTimeout",
    "BasisSearchResult",
    "smallest_basis",
    "search_smallest_basis",
    "stamps",
]

_INF = 1 << 30


class SearchTimeout(TimeoutError):
    """An exact search ran past its time limit (no claim of optimality is made)."""


def _add_element(dp: np.ndarray, b: int, D: int) -> np.ndarray:
    """Min-summand table after adding element b (using it c = 1..D times)."""
    new = dp.copy()
    for c in range(1, D + 1):
        shift = c * b
        if shift >= dp.size:
            break
        cand = dp[:-shift] + c
        np.minimum(new[shift:], cand, out=new[shift:])
    new[new > D] = _INF
    return new


def _range_of(dp: np.ndarray, D: int) -> int:
    bad = np.flatnonzero(dp > D)
    return int(bad[0] - 1) if bad.size else dp.size - 1


@dataclass
class BasisSearchResult:
    """Outcome of :func:`search_smallest_basis`. ``basis`` is None when the search timed out
    (``timed_out``) or, with ``max_size``, when no basis of at most ``max_size`` elements exists
    (``proven_minimal`` then means "proven: none that small")."""

    D: int
    H: int
    T: int
    basis: list[int] | None
    range: int | None
    timed_out: bool
    proven_minimal: bool
    nodes: int
    seconds: float


def _bound_after(r: int, m: int, D: int, cap: int) -> int:
    for _ in range(m):
        r = D * (r + 1)
        if r >= cap:
            return cap
    return min(r, cap)


def _dfs_fixed_size(D, H, T, k, deadline, stats):
    """Find a k-element B ⊆ {1..H} with range ≥ T, or None (exhaustive).  Raises SearchTimeout."""
    limit = D * H + 1
    dp0 = np.full(limit + 1, _INF, dtype=np.int64)
    dp0[0] = 0
    chosen: list[int] = []

    def rec(dp, last, r):
        stats[0] += 1
        if stats[0] & 255 == 0 and time.perf_counter() > deadline:
            raise SearchTimeout("time limit reached")
        m = k - len(chosen)
        if m == 0:
            return list(chosen) if r >= T else None
        if _bound_after(r, m, D, D * H) < T:
            return None
        hi = min(H, r + 1)
        # the largest element must be ≥ ceil(T / D); with m elements left, the last one is ≤ ...
        for b in range(hi, last, -1):  # larger elements first: finds solutions sooner
            if m == 1 and D * b < T:
                break
            nd = _add_element(dp, b, D)
            nr = _range_of(nd, D)
            chosen.append(b)
            got = rec(nd, b, nr)
            chosen.pop()
            if got is not None:
                return got
        return None

    return rec(dp0, 0, 0)


def search_smallest_basis(
    D: int, H: int, T: int, time_limit: float = 10.0, max_size: int | None = None
) -> BasisSearchResult:
    """Smallest B ⊆ {1..H} whose range with ≤ D summands is ≥ T; see module docstring.
    ``max_size`` stops the search after sizes ≤ max_size (a caller that already has a basis of
    max_size + 1 elements need not prove anything about larger ones)."""
    for name, v in (("D", D), ("H", H), ("T", T)):
        if not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    if T > 0 and (D < 1 or H < 1):
        raise ValueError(f"no basis exists: T = {T} > 0 needs D ≥ 1 and H ≥ 1")
    if T > D * H:
        raise ValueError(
            f"no basis exists: T = {T} > D·H = {D * H} (every sum of ≤ D elements of [H] is ≤ D·H)"
        )
    t0 = time.perf_counter()
    if T == 0:
        return BasisSearchResult(D, H, T, [], 0, False, True, 0, 0.0)
    deadline = t0 + time_limit
    stats = [0]
    k = 1
    try:
        while max_size is None or k <= max_size:
            if comb(k + D, D) - 1 >= T:
                found = _dfs_fixed_size(D, H, T, k, deadline, stats)
                if found is not None:
                    B = sorted(found)
                    return BasisSearchResult(
                        D, H, T, B, basis_range(B, D), False, True, stats[0], time.perf_counter() - t0
                    )
            k += 1
        return BasisSearchResult(D, H, T, None, None, False, True, stats[0], time.perf_counter() - t0)
    except SearchTimeout:
        return BasisSearchResult(D, H, T, None, None, True, False, stats[0], time.perf_counter() - t0)


def smallest_basis(
    D: int, H: int, T: int, time_limit: float = 10.0, max_size: int | None = None
) -> list[int] | None:
    """Smallest B ⊆ {1..H} with range ≥ T (sorted), or None if ``time_limit`` seconds ran out (or
    none has ≤ ``max_size`` elements)."""
    return search_smallest_basis(D, H, T, time_limit, max_size).basis


def stamps(D: int, k: int, time_limit: float = 60.0) -> tuple[int, list[int]]:
    """Postage-stamp number n(D, k) and one optimal basis (lexicographically first found).

    Largest r such that some k-element set of positive integers represents every 1..r as a sum of at
    most D elements (repetition allowed).  Exhaustive branch-and-bound; raises ``SearchTimeout``.
    """
    if not isinstance(D, (int, np.integer)) or D < 1:
        raise ValueError(f"D must be a positive integer, got {D!r}")
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    deadline = time.perf_counter() + time_limit
    # elements are ≤ r_{i} + 1, so the largest possible element bounds every table
    cap = _bound_after(0, k, D, 1 << 62)
    max_elem = cap // D + 1
    limit = D * max_elem + 1
    if limit > 5_000_000:
        raise ValueError(f"stamps(D={D}, k={k}) is too large for the exact search")
    dp0 = np.full(limit + 1, _INF, dtype=np.int64)
    dp0[0] = 0
    best = [-1, []]
    nodes = [0]
    chosen: list[int] = []

    def rec(dp, last, r):
        nodes[0] += 1
        if nodes[0] & 255 == 0 and time.perf_counter() > deadline:
            raise SearchTimeout(f"stamps(D={D}, k={k}) exceeded {time_limit} s")
        m = k - len(chosen)
        if m == 0:
            if r > best[0]:
                best[0], best[1] = r, list(chosen)
            return
        if _bound_after(r, m, D, 1 << 62) <= best[0]:
            return
        for b in range(last + 1, r + 2):
            nd = _add_element(dp, b, D)
            chosen.append(b)
            rec(nd, b, _range_of(nd, D))
            chosen.pop()

    rec(dp0, 0, 0)
    return best[0], best[1]
