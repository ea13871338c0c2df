"""Certified key pruning (issue 34): the (query, key) scores a blocked causal pass must compute,
found without computing the others.

A head's keys (the mids [n d] of one batch element) are grouped by content once per head
(`key_groups`): the key coordinates split into F, grouped on (the members of a group lie in a small
box there: the rounding of F to 2^-24 of each coordinate's magnitude decides the groups, the box is
the members' own min and max), and V, the rest, bounded in one of two ways:

* ``set`` — V takes few distinct rows U (|V| = 0 or ≥ 2: positions as two digits and their squares,
  with F the slowly changing digit; or identical keys, V empty). A member j with V-row u scores at
  most E_F(q) + q_V·u; a group at most E_F(q) + max_U q_V·u.
* ``box`` — V is one coordinate (a position, or a recency term), bounded by its min and max over a
  stretch of the group's members: the group's members before a block are cut into stretches of
  positions ending 2^k·WINDOW before it, k = 0, 1, …, so old stretches are long and recent ones
  short.

with E_F(q) = Σ_{c∈F} max(q_c lo_c, q_c hi_c) over the group's F box.

For each block of queries from PRUNE_FROM on, the keys within WINDOW before it and its own (visible)
keys are scored as before. A row's lower bound L on its top score is the largest score computed for
it (the window's keys, and for ``box`` groups each stretch's latest key). A group, stretch or member
whose bound B satisfies B < L + cut − 1 is never scored: every key in it has a score below the row's
top + cut − 1 (the caller's cut: the far cut of the rigorous pass, the negligible cut or exp's
underflow for the float pass). The rest
are scored and returned as (row, key, score) entries.

Why B bounds every member's score and its float value. For a member j, the exact q·k_j ≤ E, where E
is the bound above in exact arithmetic, and a float dot product errs by at most γ_d Σ_c |q_c||k_jc|
≤ γ_d A, with A = Σ_{c∈F} |q_c| max(|lo_c|, |hi_c|) + max over V of Σ_{c∈V} |q_c||k_jc|. The
computed Ê and Â (matrix products of at most d + 2 terms) are within γ_{d+2} of E and A, so
B = Ê + 3γ_{d+2}·Â + (d + 2)·2^-1000 ≥ max(q·k_j, fl(q·k_j)) (the last term: products that
underflowed). Its own rounding and that of L + cut are ≪ 1 for tame heads (|scores| < 2^40, which
the caller checks), hence the −1.

Only NumPy arrays, the causal mask and 3-d [batch pos d] heads are pruned; everything else, and any
head whose keys show no structure (`key_groups` returns None), is scored in full as before.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from headcount.core.attention.blocks import ATTENTION_BLOCK
from headcount.core.numbers import gamma

WINDOW = ATTENTION_BLOCK  # keys this close before a query block are always scored
# blocks starting earlier are scored in full: below ~2000 keys, scoring them all costs less than
# bounding the groups (benchmarks/bench_pruning.py measured the crossover between 2048 and 4096)
PRUNE_FROM = 8 * ATTENTION_BLOCK
MIN_KEYS = PRUNE_FROM + WINDOW  # shorter heads are scored in full
GRID_BITS = 24  # F is grouped on its values rounded to 2^-24 of each coordinate's magnitude
CODES_LIMIT = 8  # a coordinate is grouped on when it changes (or takes values) ≤ n/8 times


@dataclass(frozen=True, eq=False)
class KeyGroups:
    """One head's keys grouped for pruning (module docstring); every array read-only."""

    kind: str  # "set" or "box"
    F: np.ndarray  # [f] coordinates grouped on
    V: np.ndarray  # [v] the others
    order: np.ndarray  # [n] the keys sorted by (group, V-row id for "set", position)
    sort_key: np.ndarray  # [n] the sort key of `order`'s entries (int64, increasing)
    first: np.ndarray  # [G] each group's earliest position
    f_mid: np.ndarray  # [G f] F box: centre ...
    f_rad: np.ndarray  # [G f] ... and a radius with [mid − rad, mid + rad] ⊇ [lo, hi]
    U: np.ndarray  # [u v] distinct V rows ("set"; one empty row when V is empty)
    v_sorted: np.ndarray  # [n] the V coordinate in `order` ("box")
    monotone: bool  # "box": V never decreases along a group's members
    v_range: np.ndarray  # [G 2] "box": the V coordinate's min and max per group
    cell_of: np.ndarray  # [n] "set": each key's cell (its group and V row)
    cell_same: np.ndarray  # [cells] "set": the cell's keys are identical (aggregated, not listed)

    @property
    def groups(self) -> int:
        return len(self.first)


def _codes(column: np.ndarray) -> np.ndarray:
    """Integer codes of a column's values rounded to 2^-GRID_BITS of its magnitude."""
    scale = float(np.abs(column).max())
    if scale == 0.0:
        return np.zeros(len(column), dtype=np.int64)
    return np.rint(column * (2.0**GRID_BITS / scale)).astype(np.int64)


def _ids(codes: list[np.ndarray]) -> np.ndarray:
    """Dense ids 0..G−1 of the rows of the stacked codes (in the order of the rows' values)."""
    if not codes:
        return np.zeros(0, dtype=np.int64)
    # column by column: the ids so far and the next column's rank, ranked together. Each rank keeps
    # the order, so the ids are those of the rows sorted lexicographically (np.unique over axis 0,
    # without its slow sort of whole rows); every pair fits int64 (ids, ranks < n < 2^31)
    ids = np.zeros(len(codes[0]), dtype=np.int64)
    for column in codes:
        rank = np.unique(column, return_inverse=True)[1].reshape(-1)
        ids = np.unique(ids * (int(rank.max()) + 1) + rank, return_inverse=True)[1].reshape(-1)
    return ids


def _outward_box(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mid, rad) with [mid − rad, mid + rad] ⊇ [lo, hi] exactly (the radius rounded up)."""
    mid = lo + (hi - lo) * 0.5
    rad = np.maximum(hi - mid, mid - lo) * (1 + 2.0**-50) + np.where(hi > lo, 2.0**-1000, 0.0)
    return mid, rad


def key_groups(k: np.ndarray, same: np.ndarray | None = None) -> KeyGroups | None:
    """The grouping of one head's key mids k [n d] that needs the least work per query (an
    estimate), or None when no grouping saves work (short heads, non-finite keys, no structure).
    A "set" cell whose keys have bitwise identical rows of `same` [n ..] (k by default; the
    rigorous pass adds the radii) is aggregated: its keys share one score."""
    n, d = k.shape
    if n < MIN_KEYS or d == 0 or not np.isfinite(k).all():
        return None
    codes = [_codes(k[:, c]) for c in range(d)]
    limit = n // CODES_LIMIT
    slow = [c for c in range(d) if np.count_nonzero(np.diff(codes[c])) <= limit]
    few = [c for c in range(d) if len(np.unique(codes[c])) <= limit]
    best = None
    for F in {tuple(slow), tuple(few)}:
        plan = _plan(k, codes, list(F))
        if plan is not None and (best is None or plan[0] < best[0]):
            best = plan
    if best is None or best[0] > n / 4:
        return None
    return _build(k, k if same is None else same, *best[1:])


def _plan(k: np.ndarray, codes: list[np.ndarray], F: list[int]):
    """(estimated work per query, F, V, group ids, U ids, U) of grouping on F, or None."""
    n, d = k.shape
    V = [c for c in range(d) if c not in F]
    if not F:
        return None
    gid = _ids([codes[c] for c in F])
    groups = int(gid.max()) + 1
    if len(V) == 1:  # "box": about log2(n / WINDOW) stretches per group
        stretches = max(1, int(np.log2(n / WINDOW)) + 1)
        return groups * stretches + n / groups / stretches, F, V, gid, None, None
    if not V:
        U, uid = np.zeros((1, 0)), np.zeros(n, dtype=np.int64)
    else:
        U, uid = np.unique(k[:, V], axis=0, return_inverse=True)
    if len(U) > n // CODES_LIMIT:
        return None
    return groups + len(U) + 9, F, V, gid, uid.reshape(-1), U


def _build(k, same, F, V, gid, uid, U) -> KeyGroups:
    n = k.shape[0]
    positions = np.arange(n, dtype=np.int64)
    groups = int(gid.max()) + 1
    if U is None:  # "box"
        sort_key = gid * n + positions
    else:
        sort_key = (gid * len(U) + uid) * n + positions
    order = np.argsort(sort_key, kind="stable")
    sort_key = sort_key[order]
    g_sorted = gid[order]
    starts = np.searchsorted(g_sorted, np.arange(groups))
    first = np.minimum.reduceat(order, starts)
    sub = k[order][:, F]
    f_mid, f_rad = _outward_box(
        np.minimum.reduceat(sub, starts, axis=0), np.maximum.reduceat(sub, starts, axis=0)
    )
    v_sorted = np.zeros(0)
    monotone, v_range = False, np.zeros((groups, 2))
    if U is None:
        v_sorted = k[order, V[0]]
        steps = np.diff(v_sorted)
        same_group = np.diff(g_sorted) == 0
        monotone = bool(np.all(steps[same_group] >= 0))
        v_range = np.stack(
            [np.minimum.reduceat(v_sorted, starts), np.maximum.reduceat(v_sorted, starts)], axis=1
        )
    cell_of, cell_same = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    if U is not None:
        cell_sorted = np.unique(sort_key // n, return_inverse=True)[1].reshape(-1)
        cell_of = np.empty(n, dtype=np.int64)
        cell_of[order] = cell_sorted
        rows = same.reshape(n, -1)[order]
        differs = np.any(rows[1:] != rows[:-1], axis=1) & (cell_sorted[1:] == cell_sorted[:-1])
        cell_same = np.bincount(cell_sorted[1:][differs], minlength=int(cell_sorted[-1]) + 1) == 0
    groups_of = KeyGroups(
        "box" if U is None else "set",
        np.asarray(F, dtype=np.intp),
        np.asarray(V, dtype=np.intp),
        order,
        sort_key,
        first,
        f_mid,
        f_rad,
        np.zeros((1, 0)) if U is None else U,
        v_sorted,
        monotone,
        v_range,
        cell_of,
        cell_same,
    )
    for a in (order, sort_key, first, f_mid, f_rad, v_sorted, v_range, cell_of, cell_same):
        a.setflags(write=False)
    return groups_of


# --- per query block
# ---------------------------------------------------------------------------------------


def _slack(d: int, absolute: np.ndarray) -> np.ndarray:
    """3γ_{d+2}·Â + (d + 2)·2^-1000 (module docstring)."""
    return 3 * gamma(d + 2) * absolute + (d + 2) * 2.0**-1000


def pruned_scores(
    q: np.ndarray,
    k: np.ndarray,
    groups: KeyGroups,
    start: int,
    cut: np.ndarray,
    limit: float,
    offsets: np.ndarray | None = None,
):
    """The scores to compute for the causal queries q [rows d] at positions start + offsets (by
    default a block: offsets 0..rows−1) over the keys k [n d]: (window, w0, row, key, score,
    computed) with window [rows keys−w0] the scores of the keys w0.. (−inf where the causal mask
    hides them), and (row, key, score) the keys before w0 that survive pruning, sorted by row;
    `computed` counts every score computed. None when the block is too close to the start for
    pruning to help, or more than `limit` keys survive (the caller bounds such a block densely).
    cut [rows] (< 0): keys scoring below the row's top + cut − 1 may be left out (module
    docstring)."""
    rows, d = q.shape
    w0 = start - WINDOW
    if start < PRUNE_FROM:
        return None
    if offsets is None:
        window = q @ k[w0 : start + rows].T  # [block window+block]
        # the causal diagonal: key w0 + c is hidden from row r when w0 + c > start + r
        window[:, WINDOW:][_hidden(rows)] = -np.inf
    else:
        window = q @ k[w0 : start + int(offsets.max()) + 1].T
        window[np.arange(window.shape[1])[None, :] > (WINDOW + offsets)[:, None]] = -np.inf
    low = window.max(axis=1)  # L [block]: ≤ the row's top score
    if groups.kind == "box":
        survivors = _box_survivors(q, k, groups, w0, low, cut, limit)
    else:
        survivors = _set_survivors(q, groups, w0, low, cut, limit)
    if survivors is None:
        return None
    rows, members, computed, cells = survivors
    keys = groups.order[members]
    scores = np.einsum("cd,cd->c", q[rows], k[keys])
    c_row, c_first, c_mult = cells
    c_key = groups.order[c_first]
    c_score = np.einsum("cd,cd->c", q[c_row], k[c_key])
    c_cell = groups.cell_of[c_key] if len(c_key) else np.zeros(0, dtype=np.int64)
    computed += window.size + len(rows) + len(c_row)
    return Scored(window, w0, rows, keys, scores, computed, c_row, c_key, c_score, c_mult, c_cell)


class Scored(NamedTuple):
    """What pruned_scores computed for a block of query rows."""

    window: np.ndarray  # [rows keys−w0] the scores of keys w0.. (−inf: hidden by the mask)
    w0: int
    row: np.ndarray  # [m] (sorted) the surviving keys before w0, one entry per (row, key) ...
    key: np.ndarray
    score: np.ndarray
    computed: int  # scores computed (every entry, and the bounds' representatives)
    cell_row: np.ndarray  # [c] (sorted) ... and the surviving cells of identical keys, one entry
    cell_key: np.ndarray  # per (row, cell): a key of the cell (all score alike),
    cell_score: np.ndarray
    cell_mult: np.ndarray  # how many of its keys are before w0,
    cell: np.ndarray  # and the cell (CellSums holds its keys' value sums)

    def top(self) -> np.ndarray:
        """[rows] each row's largest score computed: over the window, its surviving keys and its
        surviving cells."""
        top = self.window.max(axis=1)
        for row, score in ((self.row, self.score), (self.cell_row, self.cell_score)):
            if len(row):  # sorted by row
                first = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
                top[row[first]] = np.maximum(top[row[first]], np.maximum.reduceat(score, first))
        return top


class CellSums:
    """Per cell of a "set" grouping, running sums of per-key columns (values, their magnitudes,
    radii) over the cell's keys before w0, added in position order: each is a float sum of m
    terms in a fixed order, within γ_m Σ|terms| of exact. Advanced block by block (w0 grows)."""

    def __init__(self, groups: KeyGroups, columns: list[np.ndarray]):
        cells = len(groups.cell_same)
        self.cell_of, self.columns, self.done = groups.cell_of, columns, 0
        self.sums = [np.zeros((cells,) + c.shape[1:]) for c in columns]

    def upto(self, w0: int) -> list[np.ndarray]:
        """The sums over keys 0..w0−1 (each [cells ..])."""
        if w0 > self.done and len(self.cell_of):  # ("box" groupings have no cells)
            ids = self.cell_of[self.done : w0]
            for total, column in zip(self.sums, self.columns):
                np.add.at(total, ids, column[self.done : w0])
            self.done = w0
        return self.sums


@functools.lru_cache(maxsize=4)
def _hidden(block: int) -> np.ndarray:
    """[block block] True above the diagonal (read-only)."""
    hidden = np.triu(np.ones((block, block), dtype=bool), 1)
    hidden.setflags(write=False)
    return hidden


def _f_bound(q: np.ndarray, groups: KeyGroups, which: np.ndarray):
    """(Ê_F, Â_F) [block len(which)] of the groups `which`."""
    q_F = q[:, groups.F]
    mid, rad = groups.f_mid[which], groups.f_rad[which]
    abs_q = np.abs(q_F)
    return q_F @ mid.T + abs_q @ rad.T, abs_q @ (np.abs(mid) + rad).T


def _expand(rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, limit: float = np.inf):
    """(row, index) of every index in lo[i]..hi[i]−1 for each pair i, in pair order; None when
    there are more than `limit`."""
    sizes = hi - lo
    keep = sizes > 0
    rows, lo, sizes = rows[keep], lo[keep], sizes[keep]
    total = int(sizes.sum())
    if total > limit:
        return None
    offsets = np.repeat(lo - (np.cumsum(sizes) - sizes), sizes)
    return np.repeat(rows, sizes), np.arange(total, dtype=np.int64) + offsets


def _box_survivors(q, k, groups: KeyGroups, w0: int, low, cut, limit: float):
    """rows and `order` indices of the members that survive, for "box" groups: first each group's
    members before w0 as one stretch, then the stretches of the groups that survive."""
    n, d = k.shape
    live = np.flatnonzero(groups.first < w0)
    cuts, step = [w0], WINDOW  # stretches end w0, w0 − W, w0 − 2W, w0 − 4W, …
    while cuts[-1] > 0:
        cuts.append(max(0, w0 - step))
        step *= 2
    idx = np.searchsorted(groups.sort_key, live[:, None] * n + np.asarray(cuts)[None, :])
    e_f, a_f = _f_bound(q, groups, live)  # [block live]
    q_v = q[:, groups.V[0]]  # [block]
    latest = q @ k[groups.order[idx[:, 0] - 1]].T  # [block live]: each group's latest key, scored
    low = np.maximum(low, latest.max(axis=1))
    need = low + cut - 1
    e, a = _v_part(groups, q_v[:, None], idx[:, -1][None, :], idx[:, 0][None, :], live[None, :])
    with np.errstate(invalid="ignore", over="ignore"):
        r, g = np.nonzero(~(e_f + e + _slack(d, a_f + a) < need[:, None]))  # NaN: kept
    # the surviving groups' stretches, each bounded on its own
    hi, lo = idx[g, :-1], idx[g, 1:]  # [pairs stretches]
    e, a = _v_part(groups, q_v[r][:, None], lo, hi, live[g][:, None])
    with np.errstate(invalid="ignore", over="ignore"):
        bound = (e_f[r, g])[:, None] + e + _slack(d, a_f[r, g][:, None] + a)
        keep = ~(bound < need[r][:, None]) & (hi > lo)
    pair, stretch = np.nonzero(keep)
    expanded = _expand(r[pair], lo[pair, stretch], hi[pair, stretch], limit)
    none = np.zeros(0, dtype=np.int64)
    return None if expanded is None else (*expanded, latest.size, (none, none, none))


def _v_part(groups: KeyGroups, q_v, lo, hi, group):
    """(Ê_V, Â_V) of the V coordinate over the members lo..hi−1 of `group` (broadcast arrays; empty
    stretches give nonsense that the caller masks): their first and last values when V never
    decreases along a group, else the group's range."""
    if groups.monotone:
        last = len(groups.v_sorted) - 1
        v_lo = groups.v_sorted[np.minimum(lo, last)]
        v_hi = groups.v_sorted[np.maximum(hi - 1, 0)]
    else:
        v_lo, v_hi = groups.v_range[group, 0], groups.v_range[group, 1]
    return np.maximum(q_v * v_lo, q_v * v_hi), np.abs(q_v) * np.maximum(np.abs(v_lo), np.abs(v_hi))


def _set_survivors(q, groups: KeyGroups, w0: int, low, cut, limit: float):
    """rows and `order` indices of the members that survive, for "set" groups (V rows)."""
    n, d = len(groups.order), q.shape[1]
    live = np.flatnonzero(groups.first < w0)
    e_f, a_f = _f_bound(q, groups, live)  # [block live]
    q_V = q[:, groups.V]
    s_u, a_u = q_V @ groups.U.T, np.abs(q_V) @ np.abs(groups.U).T  # [block u]
    need = (low + cut - 1)[:, None]
    with np.errstate(invalid="ignore", over="ignore"):
        # a group survives when its bound with V at its best row reaches the row's threshold
        g_bound = (
            e_f + s_u.max(axis=1, keepdims=True) + _slack(d, a_f + a_u.max(axis=1, keepdims=True))
        )
        g_r, g_i = np.nonzero(~(g_bound < need))
        # a V row survives for a surviving group when E_F + q_V·u (+ slack) reaches it
        slack_f = _slack(d, a_f[g_r, g_i])
        u_need = need[g_r, 0] - e_f[g_r, g_i] - slack_f  # [pairs]
        # candidate V rows per query row: those reaching the least need of the row's groups
        least = np.full(q.shape[0], np.inf)
        np.minimum.at(least, g_r, u_need)
        u_ok = ~(s_u + _slack(d, a_u) < least[:, None])
    u_r, u_i = np.nonzero(u_ok)
    # pair every surviving (row, group) with the row's candidate V rows, then test each pair
    per_row = np.bincount(u_r, minlength=q.shape[0])
    u_start = np.cumsum(per_row) - per_row
    pair_rows, pair_u = _expand(g_r, u_start[g_r], u_start[g_r] + per_row[g_r])
    pair = np.repeat(np.arange(len(g_r)), per_row[g_r])
    u = u_i[pair_u]
    with np.errstate(invalid="ignore", over="ignore"):
        ok = ~(s_u[pair_rows, u] + _slack(d, a_u[pair_rows, u]) < u_need[pair])
    pair, u, pair_rows = pair[ok], u[ok], pair_rows[ok]
    base = (live[g_i[pair]] * len(groups.U) + u) * n
    lo = np.searchsorted(groups.sort_key, base)
    hi = np.searchsorted(groups.sort_key, base + w0)
    # a cell of identical keys is one entry (CellSums adds its values); the others list their keys
    cell = groups.cell_of[groups.order[np.minimum(lo, n - 1)]]
    whole = (hi > lo) & groups.cell_same[cell]
    cells = (pair_rows[whole], lo[whole], hi[whole] - lo[whole])
    expanded = _expand(pair_rows[~whole], lo[~whole], hi[~whole], limit - len(cells[0]))
    return None if expanded is None else (*expanded, 0, cells)
