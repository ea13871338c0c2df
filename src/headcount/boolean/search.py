"""Exact searches for additive bases (Lemmas 13–14 of seed 004, and the postage-stamp problem).

A set B of positive integers is an *additive D-basis with range r* if every integer 0..r is a sum of
at most D elements of B (repetition allowed; 0 is the empty sum) and r + 1 is not.

- :func:`smallest_basis` (D, H, T): a smallest B ⊆ {1..H} with range ≥ T, proven smallest by
  exhaustive search over sizes k = 1, 2, ... .  Returns the sorted list; returns ``None`` if the
  time limit (CPU seconds: a busy machine does not change the answer) is hit before the search
  finishes (``search_smallest_basis`` gives the same answer with a ``timed_out`` flag and
  statistics).  Raises ``InputError`` when no basis exists (T > D·H: every element is ≤ H so every
  sum of ≤ D elements is ≤ D·H; and {1..H} reaches exactly D·H).
- :func:`stamps` (D, k): the classic postage-stamp problem n(D, k): the largest range of a k-element
  set of positive integers with at most D summands, with one optimal basis (a ``Stamps``), for
  k ≤ ``stamps_max_size(D)`` (InputError beyond, naming the bound; within it, ≤ ~2 s).  Raises
  ``SearchTimeout`` if the time limit is hit anyway (a slow machine).
- :func:`choose_basis` (D, H, T, optimal): what `headcount boolean basis` prints — Lemma 14's basis
  or the proven smallest one, as a ``BasisChoice``; InputError when there is none to give.

Pruning used by both searches (elements chosen in increasing order b_1 < b_2 < ...):
  * b_1 = 1 whenever the target range is ≥ 1 (otherwise 1 is not representable);
  * b_{i+1} ≤ r_i + 1 where r_i is the range of {b_1..b_i} (else r_i + 1 is never representable,
    since all later elements exceed it);
  * with m elements still to add, the final range is ≤ g^m(r_i), g(r) = D·(r + 1) (the next element
    is ≤ r + 1, and the range of a set is ≤ D·max element); also ≤ D·H;
  * a k-element set represents at most C(k + D, D) − 1 distinct positive integers, so sizes k with
    C(k + D, D) − 1 < T are skipped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from math import comb

import numpy as np

from headcount.boolean.bases import basis_range, lemma14_basis
from headcount.common.errors import InputError, NamesParameters, param
from headcount.common.jsonable import JsonResult

__all__ = [
    "MAX_BASIS_SPAN",
    "STAMPS_TABLE",
    "stamps_max_size",
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


class SearchTimeout(NamesParameters, TimeoutError):
    """An exact search ran past its time limit (no claim of optimality is made). The message may
    mark the parameters that set the search's size (common.errors.param), as an InputError's
    does."""


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
        if time.process_time() > deadline:  # every node: a node's work grows with D·H
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
    if D * H > MAX_BASIS_SPAN:
        raise InputError(
            f"D·H = {D * H} is more than {MAX_BASIS_SPAN}: the search's tables span 0..D·H"
        )


def _search_sizes(D: int, H: int, T: int, max_size: int | None, deadline: float, stats: list[int]):
    """The first size k = 1, 2, … (up to max_size) with a basis reaching T: its sorted basis, or
    None."""
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
        B = _search_sizes(D, H, T, max_size, time.process_time() + time_limit, stats)
    except SearchTimeout:
        return BasisSearchResult(
            D, H, T, None, None, True, False, stats[0], time.perf_counter() - t0
        )
    reach = None if B is None else basis_range(B, D)
    return BasisSearchResult(D, H, T, B, reach, False, True, stats[0], time.perf_counter() - t0)


def smallest_basis(
    D: int, H: int, T: int, time_limit: float = 10.0, max_size: int | None = None
) -> list[int] | None:
    """Smallest B ⊆ {1..H} with range ≥ T (sorted), or None if ``time_limit`` seconds of CPU time
    ran out (or none has ≤ ``max_size`` elements)."""
    return search_smallest_basis(D, H, T, time_limit, max_size).basis


@dataclass(frozen=True)
class Stamps(JsonResult):
    """The postage-stamp number n(D, k) (``range``) and one k-element basis reaching it."""

    range: int
    basis: tuple[int, ...]


STAMPS_SECONDS = 60.0
"""CPU-time limit of the postage-stamp search (a backstop: within STAMPS_MAX_SIZE it answers in
seconds)."""


def stamps_max_size(D: int) -> int:
    """The largest k that ``stamps`` searches at D summands: each bound is the largest k the exact
    search finishes in at most ~2 s on one core (measured: (3, 8) 1 s, (4, 7) 2 s, (2, 11) 1.2 s);
    the next k takes 2 s to many minutes ((3, 9) 27 s, (4, 8) over a minute: the tree grows like the
    admissible bases). k = 1 (n(D, 1) = D) and D = 1 (n(1, k) = k) are formulas."""
    for top, size in ((1, 64), (2, 11), (3, 8), (4, 7), (5, 6), (8, 5), (16, 4), (40, 3), (200, 2)):
        if D <= top:
            return size
    return 1


STAMPS_TABLE = (
    "k ≤ 64, 11, 8, 7, 6 at D = 1..5; 5 at D ≤ 8; 4 at D ≤ 16; 3 at D ≤ 40; 2 at D ≤ 200; else 1"
)
"""``stamps_max_size`` in words (the CLI's help and the refusal say it)."""


def _check_stamps(D: int, k: int) -> None:
    for name, option, v in (("D", "summands", D), ("k", "size", k)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise InputError(f"{name} ({param(option)}) must be a positive integer, got {v!r}")
    if k > stamps_max_size(D):
        raise InputError(
            f"stamps(D={D}, k={k}): the exact search answers k ≤ {stamps_max_size(D)} at D = {D} "
            f"({STAMPS_TABLE}); lower {param('size')} or {param('summands')}"
        )


class _StampSearch:
    """Branch and bound over sorted k-sets 1 = b_1 < b_2 < … with b_{i+1} ≤ r_i + 1 (r_i: the range
    so far), in lexicographic order, keeping a set only when its range beats the best so far: the
    answer is the lexicographically first optimal basis. Sums are bitmasks over 0..C(k+D, D) (no
    k-set represents more values: range ≤ C(k+D, D) − 1), reach[s] = the values with ≤ s summands. A
    subtree is cut when
      * D·(r + 1) iterated over the elements left is ≤ best (the module docstring's growth bound);
      * counting: each value in 0..T (T = best + 1) uses j ≤ D new summands with a new part ≥
        j·(last + 1), so T + 1 ≤ Σ_j C(m + j − 1, j)·#{old sums with ≤ D − j summands, ≤ T − j·(last
        + 1)};
      * for the last element b: b ≥ T/D (range ≤ D·max element), and every gap of the old sums in
        0..T must be covered by c ≥ 1 copies of b plus old sums (one bitmask test per b)."""

    def __init__(
        self, D: int, k: int, deadline: float, best: int = -1, node_cap: int | None = None
    ):
        self.D, self.k, self.deadline, self.node_cap = D, k, deadline, node_cap
        self.size = comb(k + D, D)
        self.mask = (1 << (self.size + 1)) - 1
        self.coef = [[comb(m + j - 1, j) if j else 1 for j in range(D + 1)] for m in range(k + 1)]
        self.best, self.basis, self.nodes, self.chosen = best, [], 0, []

    def add(self, reach: list[int], b: int) -> list[int]:
        """The sums after adding b: new[s] = ∪_c reach[s − c] + c·b = reach[s] ∪ (new[s − 1] +
        b)."""
        new, mask = [reach[0]], self.mask
        for s in range(1, self.D + 1):
            new.append((reach[s] | (new[-1] << b)) & mask)
        return new

    def promising(self, reach: list[int], m: int, last: int, r: int) -> bool:
        D, T = self.D, self.best + 1
        if _bound_after(r, m, D, self.size) < T:
            return False
        total = 0
        for j in range(D + 1):
            hi = T - j * (last + 1)
            if hi < 0:
                break
            total += self.coef[m][j] * (reach[D - j] & ((1 << (hi + 1)) - 1)).bit_count()
            if total > T:
                return True
        return False

    def last_element(self, reach: list[int], last: int, r: int, descending: bool) -> None:
        D, T = self.D, self.best + 1
        need = ~reach[D] & ((1 << (T + 1)) - 1)  # the gaps in 0..T
        lo = max(last + 1, -(-T // D))
        fewer = reach[D - 1 :: -1]  # the old sums with ≤ D − c summands, c = 1..D
        for b in range(r + 1, lo - 1, -1) if descending else range(lo, r + 2):
            cover, shift = 0, 0
            for old in fewer:
                shift += b
                cover |= old << shift
            if not need & ~cover:
                full = self.add(reach, b)[D]
                got = (~full & (full + 1)).bit_length() - 2
                if got > self.best:
                    self.best, self.basis = got, self.chosen + [b]

    def run(self, reach: list[int], last: int, r: int, descending: bool = False) -> None:
        self.nodes += 1
        if self.node_cap is not None and self.nodes > self.node_cap:
            return
        if self.nodes & 1023 == 0 and time.process_time() > self.deadline:
            raise SearchTimeout(
                f"stamps(D={self.D}, k={self.k}) ran past its time limit; "
                f"lower {param('size')} or {param('summands')}"
            )
        m = self.k - len(self.chosen)
        if m == 0:
            if r > self.best:
                self.best, self.basis = r, list(self.chosen)
            return
        if not self.promising(reach, m, last, r):
            return
        if m == 1 and r <= self.best:
            self.last_element(reach, last, r, descending)
            return
        for b in range(r + 1, last, -1) if descending else range(last + 1, r + 2):
            new = self.add(reach, b)
            self.chosen.append(b)
            self.run(new, b, (~new[self.D] & (new[self.D] + 1)).bit_length() - 2, descending)
            self.chosen.pop()


def stamps(D: int, k: int, time_limit: float = STAMPS_SECONDS) -> Stamps:
    """Postage-stamp number n(D, k) and one optimal basis (the lexicographically first).

    Largest r such that some k-element set of positive integers represents every 1..r as a sum of at
    most D elements (repetition allowed). Exact branch and bound (``_StampSearch``), started from
    the best range a short largest-first search finds; k ≤ ``stamps_max_size(D)`` (InputError
    beyond: the search would take minutes to hours); raises ``SearchTimeout`` past ``time_limit``
    seconds of CPU time (a loaded machine changes how long the search takes, not what it answers).
    """
    _check_stamps(D, k)
    D, k = int(D), int(k)
    if (
        k == 1 or D == 1
    ):  # n(D, 1) = D with {1}; n(1, k) = k with {1..k} (the only bases reaching them)
        return Stamps(D * k, tuple(range(1, k + 1)))
    deadline = time.process_time() + time_limit
    quick = _StampSearch(D, k, deadline, node_cap=2000)
    quick.run([1] * (D + 1), 0, 0, descending=True)
    search = _StampSearch(
        D, k, deadline, best=quick.best - 1
    )  # a basis with range ≥ quick.best exists
    search.run([1] * (D + 1), 0, 0)
    return Stamps(int(search.best), tuple(sorted(int(b) for b in search.basis)))


@dataclass(frozen=True)
class BasisChoice(JsonResult):
    """An additive D-basis inside [H] (sorted), its size and range, and whether it is the proven
    smallest."""

    basis: tuple[int, ...]
    size: int
    range_reached: int
    optimal: bool


MAX_BASIS_SPAN = 250_000
"""Most D·H for `boolean basis` (its degree times its heads): Lemma 14's candidates are checked by a
range DP over 0..D·H (Python, ~1 s at this bound, ~4 s at 10⁶) and the exact search holds tables of
D·H + 2 entries per level; 10⁹ heads asked for 15 GiB (issue 13)."""


def _check_basis_request(D: int, H: int, T: int) -> None:
    """InputError unless D, H ≥ 1 and 0 ≤ T ≤ D·H are integers (no basis inside [H] reaches more),
    with D·H ≤ MAX_BASIS_SPAN."""
    if not all(isinstance(v, (int, np.integer)) for v in (D, H, T)) or D < 1 or H < 1 or T < 0:
        raise InputError(f"degree {D}, heads {H}, range {T}: need D, H ≥ 1 and T ≥ 0")
    if D * H > MAX_BASIS_SPAN:
        raise InputError(
            f"degree·heads = {D * H} is more than {MAX_BASIS_SPAN} (the range tables span 0..D·H); "
            f"lower {param('degree')} or {param('heads')}"
        )
    if T > D * H:
        raise InputError(
            f"range {T} > degree·heads = {D * H}: no basis inside [H] reaches it with ≤ D summands"
        )


def choose_basis(D: int, H: int, T: int, optimal: bool = False) -> BasisChoice:
    """A basis B ⊆ [H] reaching T with ≤ D summands: Lemma 14's, or with ``optimal`` the proven
    smallest (``smallest_basis``, its default time limit). InputError when the sizes are out of
    range, no basis can reach T, Lemma 14 gives none that reaches it, or the exact search runs out
    of time."""
    _check_basis_request(D, H, T)
    if optimal:
        basis = smallest_basis(D, H, T)
        if basis is None:
            raise InputError(
                "the exact search ran out of time: use smaller parameters or drop "
                f"{param('optimal')}"
            )
    else:
        basis = lemma14_basis(D, H)
        if basis is None or basis_range(basis, D) < T:
            raise InputError(
                f"Lemma 14 gives no basis with range ≥ {T} for D={D}, H={H}: try {param('optimal')}"
            )
    B = tuple(sorted(int(b) for b in basis))
    return BasisChoice(B, len(B), basis_range(B, D), bool(optimal))
