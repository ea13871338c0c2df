"""Additive bases for the Lemma 13 construction (spec/boolean.md, Lemmas 13–14).

B ⊆ [H] = {1..H} is an additive D-basis with range ≥ T when every integer 0..T is a sum of at most D
elements of B, repetition allowed. ``basis_range`` and ``representation`` are one small dynamic
program (fewest summands for each value); ``lemma14_basis`` is the (reconstructed) Lemma 14 family,
each candidate checked by the DP before it is returned, so a wrong reconstruction can only cost
size, never correctness. Bad input raises InputError.
"""

from __future__ import annotations

from collections.abc import Iterable

from headcount.common.errors import InputError


def _check_basis(B: Iterable[int], D: int) -> tuple[int, ...]:
    B = tuple(sorted(set(int(b) for b in B)))
    if not B or B[0] < 1:
        raise InputError(f"a basis needs positive integers, got {B}")
    if not isinstance(D, int) or D < 1:
        raise InputError(f"degree D must be an integer ≥ 1, got {D!r}")
    return B


def _fewest(B: tuple[int, ...], D: int, limit: int) -> tuple[list[int], list[int]]:
    """fewest[v] = least number of elements of B summing to v (D + 1 if more than D), v = 0..limit,
    and last[v] = one element used by such a sum."""
    INF = D + 1
    fewest, last = [0] + [INF] * limit, [0] * (limit + 1)
    for v in range(1, limit + 1):
        best, arg = INF, 0
        for b in B:
            if b > v:
                break
            c = fewest[v - b] + 1
            if c < best:
                best, arg = c, b
        fewest[v], last[v] = min(best, INF), arg
    return fewest, last


def basis_range(B: Iterable[int], D: int) -> int:
    """Largest T such that every integer 0..T is a sum of at most D elements of B (0 for an empty
    B)."""
    B = tuple(B)
    if not B:
        return 0
    B = _check_basis(B, D)
    limit = D * B[-1]
    fewest, _ = _fewest(B, D, limit)
    for v in range(limit + 1):
        if fewest[v] > D:
            return v - 1
    return limit


def representation(ell: int, B: Iterable[int], D: int) -> dict[int, int]:
    """ell as a sum of at most D elements of B: {element: count} (fewest summands), or
    InputError."""
    B = _check_basis(B, D)
    if not isinstance(ell, int) or ell < 0:
        raise InputError(f"ell must be an integer ≥ 0, got {ell!r}")
    fewest, last = _fewest(B, D, ell)
    if fewest[ell] > D:
        raise InputError(f"{ell} is not a sum of at most D = {D} elements of {list(B)}")
    rep: dict[int, int] = {}
    v = ell
    while v:
        b = last[v]
        rep[b] = rep.get(b, 0) + 1
        v -= b
    return rep


def representations(limit: int, B: Iterable[int], D: int) -> list[dict[int, int]]:
    """``representation(ell, B, D)`` for every ell = 0..limit from one DP (the same sums: the table
    up to ell does not depend on how far it extends), or InputError at the first ell that has
    none."""
    B = _check_basis(B, D)
    if not isinstance(limit, int) or limit < 0:
        raise InputError(f"limit must be an integer ≥ 0, got {limit!r}")
    fewest, last = _fewest(B, D, limit)
    out: list[dict[int, int]] = []
    for ell in range(limit + 1):
        if fewest[ell] > D:
            raise InputError(f"{ell} is not a sum of at most D = {D} elements of {list(B)}")
        rep: dict[int, int] = {}
        v = ell
        while v:
            rep[last[v]] = rep.get(last[v], 0) + 1
            v -= last[v]
        out.append(rep)
    return out


def _ceil_root(H: int, p: int) -> int:
    """Smallest integer b ≥ 1 with b^p ≥ H."""
    b = max(1, round(H ** (1.0 / p)))
    while b > 1 and (b - 1) ** p >= H:
        b -= 1
    while b**p < H:
        b += 1
    return b


def lemma14_candidate(D: int, H: int, p: int) -> list[int] | None:
    """Lemma 14's B for this p: b = ⌈H^{1/p}⌉, needs D + 2 ≥ 2p(b − 1); B = {H} ∪ {b^k : k < p} ∪
    {H − b^k : k < p}, positive elements. None when the condition fails."""
    b = _ceil_root(H, p)
    if D + 2 < 2 * p * (b - 1):
        return None
    B = {H} | {b**k for k in range(p)} | {H - b**k for k in range(p)}
    return sorted(x for x in B if 0 < x <= H)


def lemma14_basis(D: int, H: int) -> list[int] | None:
    """The smallest Lemma 14 basis over p = 1..max{1, ⌈log₂ H⌉} + 1 whose range (checked by DP) is
    ≥ D·H, or None if no p qualifies."""
    if not isinstance(D, int) or D < 1 or not isinstance(H, int) or H < 1:
        raise InputError(f"degree D and heads H must be integers ≥ 1, got D = {D!r}, H = {H!r}")
    best = None
    for p in range(1, max(1, (H - 1).bit_length()) + 2):
        B = lemma14_candidate(D, H, p)
        if B is None or (best is not None and len(B) >= len(best)):
            continue
        if basis_range(B, D) >= D * H:
            best = B
    return best
