"""A causal model's passes over a batch, each distinct prefix evaluated once.

In a causal Transformer every value at position i — the residual, each q, k, v, each head's output —
depends only on the prefix σ_0..σ_i. Rows of an exhaustive enumeration
(induction.task.all_sequences) share long prefixes: a chunk of 32768 lexicographic rows of length 20
over S = 2 has about 2·32768 distinct prefixes, not 20·32768 positions. The passes here walk the
prefixes level by level (level i: the distinct prefixes of length i + 1, in the PrefixTrie) and run
each one's newest position through the same steps, with the same helper functions, as
forward.residual_stream and bounds.residual_bounds: a head's query at level i attends to the keys
and values stored, level by level, for the prefix's ancestors (its own prefixes of length 1..i + 1).
Results are scattered back to [batch pos d_model].

* ``prefix_trie`` — the distinct prefixes of a token batch, level by level (np.unique, no loop over
  rows).
* ``prefix_worthwhile`` — the trie when it pays (a causal weight-form model, at most a third of the
  batch's positions distinct), else None.
* ``prefix_residual_stream`` / ``prefix_residual_bounds`` — residual_stream / residual_bounds over
  the trie.

Each level is carried as [blocks rows ..] (_Level), so every product with a weight matrix has
residual_stream's shape and, measured, its bits. What differs is attention: one query row against
its i + 1 keys (a matrix–vector product, and sums over i + 1 keys where residual_stream sums n with
the masked ones as exact zeros) can change the last bit of a score or a softmax sum, and a sensitive
model grows that (tests/core/test_prefix.py: at most 2 ulps of a row's largest value on the
two-layer construction, the same bits at fixed:p there; up to ~10³ ulps on random models, where
residual_stream itself is that far from the exact residual). The rigorous pass is sound on its own
terms: each box comes from the bounds module's own steps over exactly the keys and values the
position sees (attention_bounds with the "full" mask on the gathered ancestors). bounds.settle_ties
runs once per level and head, so its TIE_ROWS budget applies per level here, per chunk there: a
prefix pass may settle (prove) more head outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.core.attention import attend, attention_bounds
from headcount.core.model import Transformer, check_tokens
from headcount.core.numbers import FLOAT64, Precision, affine_bounds
from headcount.core.passes.bounds import (
    embed_bounds,
    normed_bounds,
    rounding_point_bounds,
    run_layer_bounds,
    settle_ties,
    ties_settle,
)
from headcount.core.passes.forward import embed, normed, run_layers

WORTHWHILE_SHARE = 3  # the trie pays when it has at most 1/3 of the batch's positions


@dataclass(frozen=True, eq=False)
class PrefixTrie:
    """The distinct prefixes of a token batch [batch n], level by level: level i holds the U_i
    distinct prefixes of length i + 1, sorted lexicographically (np.unique over (parent, token)
    pairs).

    parent[i]   [U_i] index of each prefix's length-i prefix among level i − 1's (zeros at level 0)
    token[i]    [U_i] its last token
    row_node[i] [batch] index of each row's length-(i + 1) prefix among level i's"""

    parent: tuple[np.ndarray, ...]
    token: tuple[np.ndarray, ...]
    row_node: tuple[np.ndarray, ...]

    @property
    def batch(self) -> int:
        return len(self.row_node[0]) if self.row_node else 0

    @property
    def n(self) -> int:
        return len(self.parent)

    @property
    def sizes(self) -> tuple[int, ...]:
        """U_i of every level."""
        return tuple(len(t) for t in self.token)

    @property
    def offsets(self) -> np.ndarray:
        """[n + 1] where each level starts when every prefix is numbered level after level."""
        return np.concatenate([[0], np.cumsum(self.sizes, dtype=np.int64)])

    def positions(self) -> int:
        """Σ_i U_i: the positions a prefix pass evaluates (batch·n for the plain pass)."""
        return int(sum(self.sizes))

    def ancestors(self, i: int) -> np.ndarray:
        """[U_i, i + 1]: column j holds, for each level-i prefix, the index of its length-(j + 1)
        prefix among level j's (the last column is the prefix itself), following the parent
        arrays."""
        if not 0 <= i < self.n:
            raise ValueError(f"level {i} is outside the trie's levels 0..{self.n - 1}")
        out = np.empty((len(self.token[i]), i + 1), dtype=np.int64)
        out[:, i] = np.arange(len(self.token[i]))
        for j in range(i, 0, -1):
            out[:, j - 1] = self.parent[j][out[:, j]]
        return out


def _checked_batch(tokens: Any) -> np.ndarray:
    tokens = np.asarray(tokens)
    if tokens.ndim != 2 or (tokens.size and not np.issubdtype(tokens.dtype, np.integer)):
        raise ValueError(
            f"tokens must be an integer array [batch pos], got {tokens.dtype} {tokens.shape}"
        )
    if tokens.size and tokens.min() < 0:
        raise ValueError("tokens must be non-negative")
    return tokens.astype(np.int64, copy=False)


def _build(tokens: np.ndarray, limit: int | None) -> PrefixTrie | None:
    """The trie of `tokens`, or None as soon as it is sure to exceed `limit` positions (U_i never
    shrinks with i, so levels 0..i already force Σ_{j≤i} U_j + (n − 1 − i)·U_i)."""
    batch, n = tokens.shape
    width = int(tokens.max()) + 1 if tokens.size else 1
    node = np.zeros(batch, dtype=np.int64)
    parents, last, rows = [], [], []
    total = 0
    for i in range(n):
        keys, node = np.unique(node * width + tokens[:, i], return_inverse=True)
        node = node.reshape(-1).astype(np.int64, copy=False)
        parent, token = np.divmod(keys, width)
        parents.append(parent)
        last.append(token)
        rows.append(node)
        total += len(keys)
        if limit is not None and total + (n - 1 - i) * len(keys) > limit:
            return None
    return PrefixTrie(tuple(parents), tuple(last), tuple(rows))


def prefix_trie(tokens: np.ndarray) -> PrefixTrie:
    """The PrefixTrie of a token batch [batch n] (non-negative integers): level by level, np.unique
    over the (parent, token) pairs of every row (return_inverse gives row_node); Python loops only
    over levels."""
    trie = _build(_checked_batch(tokens), None)
    assert trie is not None
    return trie


def prefix_worthwhile(model: Any, tokens: np.ndarray) -> PrefixTrie | None:
    """The trie of `tokens` when a prefix pass pays for `model` — a weight-form Transformer with the
    causal mask (a table model or the full mask: None) whose batch has at most 1/WORTHWHILE_SHARE of
    its batch·n positions distinct — else None. Building stops as soon as the trie is sure to be too
    big, so a batch of random long rows costs a few levels."""
    if not isinstance(model, Transformer) or model.mask != "causal":
        return None
    tokens = _checked_batch(tokens)
    if tokens.size == 0:
        return None
    return _build(tokens, tokens.size // WORTHWHILE_SHARE)


def _setup(
    model: Any, tokens: np.ndarray, trie: PrefixTrie | None
) -> tuple[np.ndarray, PrefixTrie]:
    """The checked tokens and their trie (the one given, checked against them: each row's chain of
    prefixes, linked by parent, spells the row)."""
    if not isinstance(model, Transformer) or model.mask != "causal":
        raise ValueError("a prefix pass needs a weight-form Transformer with the causal mask")
    tokens = check_tokens(model, tokens)
    if trie is None:
        return tokens, prefix_trie(tokens)
    if (trie.batch, trie.n) != tokens.shape or not all(
        np.array_equal(trie.token[i][trie.row_node[i]], tokens[:, i])
        and (i == 0 or np.array_equal(trie.parent[i][trie.row_node[i]], trie.row_node[i - 1]))
        for i in range(trie.n)
    ):
        raise ValueError(f"the trie given is not the trie of these tokens {tokens.shape}")
    return tokens, trie


class _Stored:
    """Every prefix's keys and values (or their boxes) per (layer, head), numbered level after level
    (PrefixTrie.offsets): Σ_i U_i rows of each array."""

    def __init__(self, trie: PrefixTrie):
        self.total = trie.positions()
        self.arrays: dict[tuple[int, int], tuple[np.ndarray, ...]] = {}

    def keep_and_gather(self, key: tuple[int, int], level: _Level, values: tuple[np.ndarray, ...]):
        """Store the level's own rows of `values` [blocks rows ..], then return each array gathered
        over the ancestors of every (padded) row: [blocks·rows, i + 1, ..]."""
        if key not in self.arrays:
            self.arrays[key] = tuple(
                np.empty((self.total,) + v.shape[2:], dtype=v.dtype) for v in values
            )
        stored = self.arrays[key]
        for array, v in zip(stored, values):
            array[level.rows] = level.own(v)
        return tuple(np.take(array, level.ancestors, axis=0) for array in stored)

    def nbytes(self) -> int:
        return sum(a.nbytes for arrays in self.arrays.values() for a in arrays)


BLOCK_ROWS = 64  # a level's U_i prefixes are carried as [blocks BLOCK_ROWS ..] (module docstring)


@dataclass(frozen=True, eq=False)
class _Level:
    """Level i's U_i prefixes laid out as [blocks rows ..] — rows = BLOCK_ROWS, or U_i (at least 2)
    on a small level; the last block is padded by repeating the last prefix. Every product with a
    weight matrix then has residual_stream's shape, [batch pos d] @ [d e] with a few rows per slice,
    and NumPy runs the kernel it runs there: measured, the same bits (a single row per slice takes
    the matrix–vector kernel, whose sums round differently; one tall [U_i d] matrix takes OpenBLAS's
    multithreaded path, which rounds differently again and is several times slower on a busy
    machine)."""

    i: int
    count: int  # U_i
    shape: tuple[int, int]  # (blocks, rows)
    take: np.ndarray  # [blocks·rows] the prefix each padded row holds
    rows: slice  # the level's rows in the stored arrays
    ancestors: np.ndarray  # [blocks·rows, i + 1] stored row numbers of each padded row's ancestors

    def blocks(self, a: np.ndarray) -> np.ndarray:
        """[U_i ..] → [blocks rows ..]."""
        return a[self.take].reshape(self.shape + a.shape[1:])

    def flat(self, a: np.ndarray) -> np.ndarray:
        """[blocks rows ..] → [blocks·rows ..]."""
        return a.reshape((-1,) + a.shape[2:])

    def own(self, a: np.ndarray) -> np.ndarray:
        """[blocks rows ..] → [U_i ..]: the level's own rows, padding dropped."""
        return self.flat(a)[: self.count]


def _levels(trie: PrefixTrie):
    """The trie's levels in order, each as a _Level (its ancestors as stored row numbers)."""
    offsets = trie.offsets
    for i, size in enumerate(trie.sizes):
        rows = min(BLOCK_ROWS, max(2, size))
        blocks = -(-size // rows)
        take = np.minimum(np.arange(blocks * rows), size - 1)
        ancestors = (trie.ancestors(i) + offsets[: i + 1])[take]
        yield _Level(
            i, size, (blocks, rows), take, slice(int(offsets[i]), int(offsets[i + 1])), ancestors
        )


def _scatter(trie: PrefixTrie, per_level: list[np.ndarray]) -> np.ndarray:
    """[batch n ..] from each level's [U_i ..] values: one gather of every row's prefixes (row_node,
    as stored row numbers) from all levels' values, written in order."""
    nodes = np.stack(trie.row_node, axis=1) + trie.offsets[:-1]  # [batch n]
    return np.take(np.concatenate(per_level), nodes, axis=0)


def _float_level(
    model: Transformer, trie: PrefixTrie, level: _Level, prec: Precision, stored: _Stored
):
    """forward.residual_stream at position i for level i's prefixes [U_i d_model], on the level's
    [blocks rows ..] layout (forward.run_layers); each head's query [blocks·rows 1 d_head] attends
    to its own i + 1 ancestors' keys and values (attend without a mask)."""

    def attention(index, h, layer, q, k, v):
        keys, values = stored.keep_and_gather((index, h), level, (k, v))  # [blocks·rows i+1 ..]
        z = attend(level.flat(q)[:, None, :], keys, values, None, prec, layer.attn_scale)
        return z.reshape(v.shape)  # [blocks rows d_value]

    x = embed(model, level.blocks(trie.token[level.i]), level.i, prec)  # [blocks rows d_model]
    x = run_layers(model, x, prec, attention, level.i)  # every row at position i
    return level.own(normed(x, model.ln_final, prec))


def prefix_residual_stream(
    model: Transformer,
    tokens: np.ndarray,
    prec: Precision = FLOAT64,
    trie: PrefixTrie | None = None,
    stats: dict[str, int] | None = None,
) -> np.ndarray:
    """forward.residual_stream [batch pos d_model] of a causal weight-form model, each distinct
    prefix evaluated once (module docstring). `trie`: the tokens' PrefixTrie when already built
    (e.g. by prefix_worthwhile); `stats`, when given, receives "positions" (Σ U_i) and
    "stored_bytes" (the keys and values kept for every prefix)."""
    tokens, trie = _setup(model, tokens, trie)
    if trie.batch == 0:
        return np.zeros(tokens.shape + (model.d_model,), dtype=prec.compute_dtype)
    stored = _Stored(trie)
    finals = [_float_level(model, trie, level, prec, stored) for level in _levels(trie)]
    if stats is not None:
        stats.update(positions=trie.positions(), stored_bytes=stored.nbytes())
    return _scatter(trie, finals)


def _bounds_level(
    model: Transformer, trie: PrefixTrie, level: _Level, prec: Precision, stored: _Stored
):
    """bounds.residual_bounds at position i for level i's prefixes, (mid, rad) [U_i d_model], on the
    level's [blocks rows ..] layout (bounds.run_layer_bounds); each head's box is
    attention_bounds(…, "full") of the query [blocks·rows 1 d_head] over exactly its ancestors' keys
    and values."""

    def head_output(index, h, layer, head, q, k, v):
        km, kr, vm, vr = stored.keep_and_gather((index, h), level, (*k, *v))  # [blocks·rows i+1 ..]
        query = tuple(level.flat(part)[:, None, :] for part in q)  # [blocks·rows 1 d_head]
        z = attention_bounds(query, (km, kr), (vm, vr), "full")  # [blocks·rows 1 d_value]
        z = tuple(part.reshape(v[0].shape) for part in z)  # [blocks rows d_value]
        out = rounding_point_bounds(*affine_bounds(*z, head.W_O), prec)
        if not ties_settle(layer, prec):
            return out
        flat = tuple(level.flat(part)[:, None, :] for part in out)
        flat = settle_ties(flat, query, (km, kr), (vm, vr), head.W_O, prec.bits, "full")
        return tuple(part.reshape(out[0].shape) for part in flat)

    x = embed_bounds(model, level.blocks(trie.token[level.i]), level.i, prec)
    return tuple(
        level.own(part)
        for part in normed_bounds(
            run_layer_bounds(model, x, prec, head_output, level.i), model.ln_final, prec
        )
    )


def prefix_residual_bounds(
    model: Transformer,
    tokens: np.ndarray,
    prec: Precision,
    trie: PrefixTrie | None = None,
    stats: dict[str, int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """bounds.residual_bounds (mid, rad) [batch pos d_model] of a causal weight-form model, each
    distinct prefix bounded once (module docstring); sound on its own terms: every box is built by
    the bounds module's steps over exactly the keys and values the position sees. `trie` and `stats`
    as for prefix_residual_stream."""
    tokens, trie = _setup(model, tokens, trie)
    if trie.batch == 0:
        empty = np.zeros(tokens.shape + (model.d_model,))
        return empty, empty.copy()
    stored = _Stored(trie)
    boxes = [_bounds_level(model, trie, level, prec, stored) for level in _levels(trie)]
    if stats is not None:
        stats.update(positions=trie.positions(), stored_bytes=stored.nbytes())
    return _scatter(trie, [b[0] for b in boxes]), _scatter(trie, [b[1] for b in boxes])
