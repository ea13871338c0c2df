"""Exact searches for additive bases (Lemmas 13–14 of seed 004, and the postage-stamp problem).

A set B of positive integers is an *additive D-basis with range r* if every integer 0..r is a sum of
at most D elements of B (repetition allowed; 0 is the empty sum) and r + 1 is not.

- :func:`smallest_basis` (D, H, T): a smallest B ⊆ {1..H} with range ≥ T, proven smallest by
  exhaustive search over sizes k = 1, 2, ... .  Returns the sorted list; returns ``None`` if the time
  limit is hit before the search finishes (``search_smallest_basis`` gives the same answer with a
  ``timed_out`` flag and statistics).  Raises ``InputError`` when no basis exists (T > D·H: every
  element is ≤ H so every sum of ≤ D elements is ≤ D·H; and {1..H} reaches exactly D·H).
- :func:`stamps` (D, k): the classic postage-stamp problem n(D, k): the largest range of a k-element
  set of positive integers with at most D summands, with one optimal basis (a ``Stamps``).  Raises
  ``SearchTimeout`` if the time limit is hit.
- :func:`choose_basis` (D, H, T, optimal): what `headcount boolean basis` prints — Lemma 14's basis or
  the proven smallest one, as a ``BasisChoice``; InputError when there is none to give.

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

from headcount.boolean.bases import basis_range, lemma14_basis
from headcount.core.errors import InputError
from headcount.core.jsonable import JsonResult

__all__ = [
    "SearchTimeout",
    "BasisSearchResult",
    "BasisChoice",
    "Stamps",
    "smallest_basis",
    "search_smallest_basis",
    "stamps",
    "choose_basis",
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


@dataclass(frozen=True)
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


def _check_search(D: int, H: int, T: int) -> None:
    """InputError unless D, H, T ≥ 0 are integers and some B ⊆ [H] reaches T with ≤ D summands."""
    for name, v in (("D", D), ("H", H), ("T", T)):
        if not isinstance(v, (int, np.integer)) or v < 0:
            raise InputError(f"{name} must be a non-negative integer, got {v!r}")
    if T > 0 and (D < 1 or H < 1):
        raise InputError(f"no basis exists: T = {T} > 0 needs D ≥ 1 and H ≥ 1")
    if T > D * H:
        raise InputError(
            f"no basis exists: T = {T} > D·H = {D * H} (every sum of ≤ D elements of [H] is ≤ D·H)"
        )


def _search_sizes(D: int, H: int, T: int, max_size: int | None, deadline: float, stats: list[int]):
    """The first size k = 1, 2, … (up to max_size) with a basis reaching T: its sorted basis, or None."""
    k = 1
    while max_size is None or k <= max_size:
        if comb(k + D, D) - 1 >= T:
            found = _dfs_fixed_size(D, H, T, k, deadline, stats)
            if found is not None:
                return sorted(found)
        k += 1
    return None


def search_smallest_basis(
    D: int, H: int, T: int, time_limit: float = 10.0, max_size: int | None = None
) -> BasisSearchResult:
    """Smallest B ⊆ {1..H} whose range with ≤ D summands is ≥ T; see module docstring.
    ``max_size`` stops the search after sizes ≤ max_size (a caller that already has a basis of
    max_size + 1 elements need not prove anything about larger ones)."""
    _check_search(D, H, T)
    t0 = time.perf_counter()
    if T == 0:
        return BasisSearchResult(D, H, T, [], 0, False, True, 0, 0.0)
    stats = [0]
    try:
        B = _search_sizes(D, H, T, max_size, t0 + time_limit, stats)
    except SearchTimeout:
        return BasisSearchResult(D, H, T, None, None, True, False, stats[0], time.perf_counter() - t0)
    reach = None if B is None else basis_range(B, D)
    return BasisSearchResult(D, H, T, B, reach, False, True, stats[0], time.perf_counter() - t0)


def smallest_basis(
    D: int, H: int, T: int, time_limit: float = 10.0, max_size: int | None = None
) -> list[int] | None:
    """Smallest B ⊆ {1..H} with range ≥ T (sorted), or None if ``time_limit`` seconds ran out (or
    none has ≤ ``max_size`` elements)."""
    return search_smallest_basis(D, H, T, time_limit, max_size).basis


@dataclass(frozen=True)
class Stamps(JsonResult):
    """The postage-stamp number n(D, k) (``range``) and one k-element basis reaching it."""

    range: int
    basis: tuple[int, ...]


def stamps(D: int, k: int, time_limit: float = 60.0) -> Stamps:
    """Postage-stamp number n(D, k) and one optimal basis (lexicographically first found).

    Largest r such that some k-element set of positive integers represents every 1..r as a sum of at
    most D elements (repetition allowed).  Exhaustive branch-and-bound; raises ``SearchTimeout``.
    """
    if not isinstance(D, (int, np.integer)) or D < 1:
        raise InputError(f"D must be a positive integer, got {D!r}")
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k must be a positive integer, got {k!r}")
    deadline = time.perf_counter() + time_limit
    # elements are ≤ r_{i} + 1, so the largest possible element bounds every table
    cap = _bound_after(0, k, D, 1 << 62)
    max_elem = cap // D + 1
    limit = D * max_elem + 1
    if limit > 5_000_000:
        raise InputError(f"stamps(D={D}, k={k}) is too large for the exact search")
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
    return Stamps(int(best[0]), tuple(sorted(int(b) for b in best[1])))


@dataclass(frozen=True)
class BasisChoice(JsonResult):
    """An additive D-basis inside [H] (sorted), its size and range, and whether it is the proven smallest."""

    basis: tuple[int, ...]
    size: int
    range_reached: int
    optimal: bool


def _check_basis_request(D: int, H: int, T: int) -> None:
    """InputError unless D, H ≥ 1 and 0 ≤ T ≤ D·H are integers (no basis inside [H] reaches more)."""
    if not all(isinstance(v, (int, np.integer)) for v in (D, H, T)) or D < 1 or H < 1 or T < 0:
        raise InputError(f"degree {D}, heads {H}, range {T}: need D, H ≥ 1 and T ≥ 0")
    if T > D * H:
        raise InputError(
            f"range {T} > degree·heads = {D * H}: no basis inside [H] reaches it with ≤ D summands"
        )


def choose_basis(D: int, H: int, T: int, optimal: bool = False) -> BasisChoice:
    """A basis B ⊆ [H] reaching T with ≤ D summands: Lemma 14's, or with ``optimal`` the proven smallest
    (``smallest_basis``, its default time limit). InputError when the sizes are out of range, no basis
    can reach T, Lemma 14 gives none that reaches it, or the exact search runs out of time."""
    _check_basis_request(D, H, T)
    if optimal:
        basis = smallest_basis(D, H, T)
        if basis is None:
            raise InputError("the exact search ran out of time: use smaller parameters or drop --optimal")
    else:
        basis = lemma14_basis(D, H)
        if basis is None or basis_range(basis, D) < T:
            raise InputError(f"Lemma 14 gives no basis with range ≥ {T} for D={D}, H={H}: try --optimal")
    B = tuple(sorted(int(b) for b in basis))
    return BasisChoice(B, len(B), basis_range(B, D), bool(optimal))
