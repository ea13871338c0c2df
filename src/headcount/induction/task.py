"""The induction task, its k-hop generalization, input generators and the INDEX embedding (how a
prediction scores against these answers: induction/metrics.py).

Math is 1-based; arrays are 0-based. For σ ∈ Σ^n, τ_i = σ_{j_i+1} with j_i the latest earlier
position holding σ_i, or ⊥ (BOTTOM) if σ_i has not occurred before. find(σ, i) = j_i + 1 and
hop_k(σ)_i = σ_{find^k(i)}; hop_1 is the plain task.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from headcount.common.errors import InputError
from headcount.common.resources import check_memory
from headcount.core.model import BOTTOM, token_text

__all__ = [
    "ADVERSARIAL_FAMILIES",
    "GENERATORS",
    "all_equal",
    "all_sequences",
    "bottom_heavy",
    "count_sequences",
    "effective_hops",
    "find_positions",
    "index_family",
    "index_family_for_length",
    "index_input",
    "index_token_text",
    "induction_targets",
    "induction_targets_literal",
    "latest_match_far_back",
    "no_adjacent_repeats",
    "repeated_block",
    "sample",
    "uniform",
]

# Token id of the INDEX query symbol '?' and how it prints; bits use 0 and 1.
INDEX_QUERY = 2
INDEX_QUERY_TEXT = "?"
# The number of tokens INDEX inputs use: 0, 1 and '?' (= INDEX_QUERY).
INDEX_TOKENS = 3

# Largest k for which index_family enumerates all 2^k·k pairs.
_MAX_EXHAUSTIVE_INDEX_K = 20


# ---------------------------------------------------------------------------------------------
# Reference solvers
# ---------------------------------------------------------------------------------------------


def _as_token_batch(tokens) -> tuple[np.ndarray, bool]:
    """Return (tokens as 2-D int64, was_1d), checking they are non-negative integers."""
    arr = np.asarray(tokens)
    if arr.dtype == bool or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise InputError(f"tokens must be an integer array, got dtype {arr.dtype}")
    if arr.ndim not in (1, 2):
        raise InputError(f"tokens must be 1-D or 2-D, got shape {arr.shape}")
    was_1d = arr.ndim == 1
    arr = arr.astype(np.int64, copy=False)
    if was_1d:
        arr = arr.reshape(1, -1)
    if arr.size and arr.min() < 0:
        raise InputError("tokens must be non-negative (BOTTOM is an output symbol, not an input)")
    return arr, was_1d


def _smallest_index_dtype(n: int) -> type:
    # Stored values are 0..n; the narrowest dtype keeps the (batch·S) table in cache
    # (int8 runs ~3x faster than int32 at batch=1e6, n=20).
    for dtype in (np.int8, np.int16, np.int32):
        if n <= np.iinfo(dtype).max:
            return dtype
    return np.int64


def _find_plus_one_t(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(tokens.T, find.T) with find stored as j_i + 1 (>= 1) and 0 for ⊥.

    Transposed so every per-position step reads and writes contiguous memory. 0 can encode ⊥
    because j_i + 1 >= 1 always, and since position 0 is always ⊥ its entry is 0, so composing
    find through a ⊥ stays ⊥ without any masking.
    """
    batch, n = tokens.shape
    index_dtype = _smallest_index_dtype(n)
    tokens_t = np.ascontiguousarray(tokens.T)
    find_t = np.zeros((n, batch), dtype=index_dtype)
    if tokens.size == 0:
        return tokens_t, find_t
    if (
        batch == 1
    ):  # one long input (`induction solve`): a dict pass beats n vectorized steps of width 1
        last: dict[int, int] = {}
        for i, t in enumerate(tokens[0].tolist()):
            find_t[i, 0], last[t] = last.get(t, 0), i + 1
        return tokens_t, find_t
    alphabet = int(tokens.max()) + 1
    # Only equality matters, so huge token ids are compacted rather than sizing the table by them.
    if alphabet > 4 * n + 16:
        _, inverse = np.unique(tokens_t, return_inverse=True)
        keys_t = inverse.reshape(n, batch).astype(np.int64)
        alphabet = int(keys_t.max()) + 1
    else:
        keys_t = tokens_t
    # Flat (batch·S) last-occurrence table holding (last index + 1), 0 = not seen yet.
    last = np.zeros(batch * alphabet, dtype=index_dtype)
    base = np.arange(batch, dtype=np.int64) * alphabet
    slot = np.empty(batch, dtype=np.int64)
    for i in range(n):
        np.add(base, keys_t[i], out=slot)
        np.take(last, slot, out=find_t[i])
        last[slot] = i + 1
    return tokens_t, find_t


def find_positions(tokens) -> np.ndarray:
    """The find() map: 0-based index of j_i + 1 for each position, or -1 where σ_i is new."""
    arr, was_1d = _as_token_batch(tokens)
    _, find_t = _find_plus_one_t(arr)
    find = find_t.T.astype(np.int64)
    find[find == 0] = -1
    return find[0] if was_1d else find


def effective_hops(hops: int, n: int) -> int:
    """min(hops, n): it answers like `hops` on length-n inputs. Why: find(i) ≤ i, with equality only
    when σ_{i−1} = σ_i (then the chain stays put; ⊥ stays ⊥), so the chain settles within i ≤ n − 1
    hops and find^k = find^(n−1) for every k ≥ n − 1 (tests/induction/test_limits.py checks it on
    the definition)."""
    return min(_check_hops(hops), max(1, int(n)))


def _hop_positions(find_t: np.ndarray, hops: int) -> np.ndarray:
    """find^hops as stored positions [pos batch] (0 = ⊥) by repeated squaring, O(n log hops) per
    row: flat gathers where element (p, row) lives at p·batch + row; find_t[0] = 0, so composing
    through ⊥ stays ⊥."""
    batch = find_t.shape[1]
    rows = np.arange(batch, dtype=np.int64)
    result, power = None, find_t
    while hops:
        if hops & 1:  # powers of one map commute: the order of composition does not matter
            result = (
                power if result is None else power.ravel()[result.astype(np.int64) * batch + rows]
            )
        hops >>= 1
        if hops:
            power = power.ravel()[power.astype(np.int64) * batch + rows]
    return result


def induction_targets(tokens, hops: int = 1) -> np.ndarray:
    """hop_k answers (k = hops ≥ 0, see effective_hops; hop_0(X)_i = X_i) as int64, BOTTOM where ⊥;
    (batch, n) or (n,)."""
    hops = _check_hops(hops, lowest=0)
    arr, was_1d = _as_token_batch(tokens)
    if hops == 0:
        return (arr[0] if was_1d else arr).astype(np.int64, copy=True)
    batch, n = arr.shape
    tokens_t, find_t = _find_plus_one_t(arr)
    if arr.size == 0:
        out = np.empty(arr.shape, dtype=np.int64)
        return out[0] if was_1d else out
    rows = np.arange(batch, dtype=np.int64)
    pos = _hop_positions(find_t, effective_hops(hops, n))
    gathered = tokens_t.ravel()[pos.astype(np.int64) * batch + rows]
    out = np.empty((batch, n), dtype=np.int64)
    np.copyto(out.T, np.where(pos > 0, gathered, BOTTOM))
    return out[0] if was_1d else out


def induction_targets_literal(seq: Sequence[int], hops: int = 1) -> list[int]:
    """Definition-literal hop_k for one sequence (quadratic; for testing the fast solver)."""
    hops = _check_hops(hops, lowest=0)
    seq = [int(t) for t in seq]

    def find(i: int) -> int | None:
        earlier = [j for j in range(i) if seq[j] == seq[i]]
        if not earlier:
            return None
        return max(earlier) + 1

    out: list[int] = []
    for i in range(len(seq)):
        p: int | None = i
        for _ in range(hops):
            p = find(p)
            if p is None:
                break
        out.append(BOTTOM if p is None else seq[p])
    return out


def _check_hops(hops: int, lowest: int = 1) -> int:
    try:
        ok = not isinstance(hops, bool) and int(hops) == hops and hops >= lowest
    except (TypeError, ValueError, OverflowError):  # None, NaN, ±inf, strings
        ok = False
    if not ok:
        what = "a positive integer" if lowest == 1 else f"an integer ≥ {lowest}"
        raise InputError(f"hops must be {what}, got {hops!r}")
    return int(hops)


# ---------------------------------------------------------------------------------------------
# Exhaustive enumeration
# ---------------------------------------------------------------------------------------------


def count_sequences(n: int, S: int) -> int:
    """|Σ^n| = S**n as a Python int (no overflow)."""
    return int(S) ** int(n)


def all_sequences(n: int, S: int, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Rows start..stop-1 of the lexicographic enumeration of Σ^n (row r = base-S digits of r)."""
    n, S = int(n), int(S)
    if n < 0 or S < 1:
        raise InputError(f"need n >= 0 and S >= 1, got n={n}, S={S}")
    total = count_sequences(n, S)
    start = int(start)
    stop = total if stop is None else int(stop)
    if not 0 <= start <= stop <= total:
        raise InputError(
            f"need 0 <= start <= stop <= S**n = {total}, got start={start}, stop={stop}"
        )
    rows = stop - start
    out = np.empty((rows, n), dtype=np.int64)
    if rows == 0 or n == 0:
        return out
    # start may exceed int64 (e.g. 6**30), so take its digits in Python and add the small
    # in-slice offsets digit by digit with a carry; everything per row stays vectorized.
    start_digits = []
    rest = start
    for _ in range(n):
        rest, d = divmod(rest, S)
        start_digits.append(d)  # least significant first
    offset = np.arange(rows, dtype=np.int64)
    carry = np.zeros(rows, dtype=np.int64)
    for pos in range(n - 1, -1, -1):
        value = start_digits[n - 1 - pos] + offset % S + carry
        offset //= S
        out[:, pos] = value % S
        carry = value // S
    return out


# ---------------------------------------------------------------------------------------------
# Generators: (rng, batch, n, S) -> (batch, n) int64
# ---------------------------------------------------------------------------------------------


def _check_shape(batch: int, n: int, S: int, min_S: int = 1) -> tuple[int, int, int]:
    batch, n, S = int(batch), int(n), int(S)
    if batch < 0 or n < 0:
        raise InputError(f"need batch >= 0 and n >= 0, got batch={batch}, n={n}")
    if S < min_S:
        raise InputError(f"need S >= {min_S}, got S={S}")
    return batch, n, S


def uniform(rng: np.random.Generator, batch: int, n: int, S: int) -> np.ndarray:
    """Uniform over Σ^n."""
    batch, n, S = _check_shape(batch, n, S)
    return rng.integers(0, S, size=(batch, n), dtype=np.int64)


def no_adjacent_repeats(rng: np.random.Generator, batch: int, n: int, S: int) -> np.ndarray:
    """First token uniform, each next uniform over the other S-1 (the k-hop experiment inputs)."""
    batch, n, S = _check_shape(batch, n, S, min_S=2)
    if n == 0:
        return np.empty((batch, 0), dtype=np.int64)
    first = rng.integers(0, S, size=(batch, 1), dtype=np.int64)
    # A step of 1..S-1 mod S is uniform over the S-1 tokens different from the previous one.
    steps = rng.integers(1, S, size=(batch, n - 1), dtype=np.int64)
    offsets = np.concatenate([np.zeros((batch, 1), np.int64), np.cumsum(steps, axis=1)], axis=1)
    return (first + offsets) % S


def repeated_block(rng: np.random.Generator, batch: int, n: int, S: int) -> np.ndarray:
    """A uniform random block of random length L ∈ [1, n], tiled to length n."""
    batch, n, S = _check_shape(batch, n, S)
    if n == 0:
        return np.empty((batch, 0), dtype=np.int64)
    lengths = rng.integers(1, n + 1, size=(batch, 1), dtype=np.int64)
    block = rng.integers(0, S, size=(batch, n), dtype=np.int64)
    return np.take_along_axis(block, np.arange(n, dtype=np.int64)[None, :] % lengths, axis=1)


def latest_match_far_back(rng: np.random.Generator, batch: int, n: int, S: int) -> np.ndarray:
    """Queries whose latest earlier match is as far back as possible, with older matches too.

    Each row picks a token t and places it at 0-based positions 0, 1 and n-1 (so the last query
    has an older match and its latest match is n-2 back); every other position holds a random
    cyclic order of Σ∖{t}, tiled, so every filler repeat is exactly S-1 back (the farthest any
    sequence can make all its repeats) and the filler is all distinct when S-1 >= n-3.
    """
    batch, n, S = _check_shape(batch, n, S)
    if n == 0:
        return np.empty((batch, 0), dtype=np.int64)
    t = rng.integers(0, S, size=(batch, 1), dtype=np.int64)
    if S == 1:
        # Nothing differs from t; the only sequence is constant.
        return np.zeros((batch, n), dtype=np.int64)
    # Random order of the other S-1 tokens per row: a permutation of 0..S-2 shifted past t.
    order = np.argsort(rng.random((batch, S - 1)), axis=1).astype(np.int64)
    others = order + (order >= t)
    filler_len = max(n - 3, 0)
    filler = others[:, np.arange(filler_len) % (S - 1)]
    if n == 1:
        return t.copy()
    if n == 2:
        return np.concatenate([t, t], axis=1)
    return np.concatenate([t, t, filler, t], axis=1)


def all_equal(rng: np.random.Generator, batch: int, n: int, S: int) -> np.ndarray:
    """Constant rows; row b is token b mod S (rng unused, kept for the common signature)."""
    batch, n, S = _check_shape(batch, n, S)
    row_token = np.arange(batch, dtype=np.int64) % S
    return np.broadcast_to(row_token[:, None], (batch, n)).copy()


# Per-position chance that bottom_heavy turns a first occurrence into a repeat.
_BOTTOM_HEAVY_REPEAT_P = 0.125


def bottom_heavy(rng: np.random.Generator, batch: int, n: int, S: int) -> np.ndarray:
    """Mostly first occurrences (⊥ answers): a random arrangement of distinct tokens, few repeats.

    The first min(n, S) positions are distinct tokens in random order; beyond S positions
    repeats are unavoidable and those positions are uniform. Each position after the first
    becomes, with probability 1/8, a copy of a uniformly chosen earlier token.
    """
    batch, n, S = _check_shape(batch, n, S)
    if n == 0:
        return np.empty((batch, 0), dtype=np.int64)
    m = min(n, S)
    out = np.empty((batch, n), dtype=np.int64)
    out[:, :m] = np.argsort(rng.random((batch, S)), axis=1)[:, :m]
    if n > m:
        out[:, m:] = rng.integers(0, S, size=(batch, n - m), dtype=np.int64)
    repeat = rng.random((batch, n)) < _BOTTOM_HEAVY_REPEAT_P
    source_u = rng.random((batch, n))
    rows = np.arange(batch)
    # Left to right, so a copied token is the final value at its source: a genuine repeat.
    for i in range(1, n):
        src = np.minimum((source_u[:, i] * i).astype(np.int64), i - 1)
        out[:, i] = np.where(repeat[:, i], out[rows, src], out[:, i])
    return out


# ---------------------------------------------------------------------------------------------
# INDEX embedding
# ---------------------------------------------------------------------------------------------


def index_input(f, i_star) -> np.ndarray:
    """σ(f, i*) = (e_1, f_1, …, e_k, f_k, ?) with ? = 2, e_i = 2 iff i = i* (1-based).

    f of shape (k,) with scalar i_star gives (2k+1,); f of shape (batch, k) with i_star of
    shape (batch,) (or scalar) gives (batch, 2k+1).
    """
    f_arr = np.asarray(f, dtype=np.int64)
    was_1d = f_arr.ndim == 1
    f2 = f_arr.reshape(1, -1) if was_1d else f_arr
    if f2.ndim != 2:
        raise InputError(f"f must be 1-D or 2-D, got shape {f_arr.shape}")
    batch, k = f2.shape
    if k < 1:
        raise InputError("INDEX needs k >= 1")
    if f2.size and not np.isin(f2, (0, 1)).all():
        raise InputError("f must be a bit vector (entries 0 or 1)")
    stars = np.broadcast_to(np.asarray(i_star, dtype=np.int64), (batch,))
    if batch and (stars.min() < 1 or stars.max() > k):
        raise InputError(f"i_star must be in 1..{k} (1-based)")
    out = np.empty((batch, 2 * k + 1), dtype=np.int64)
    out[:, 0 : 2 * k : 2] = np.where(np.arange(1, k + 1)[None, :] == stars[:, None], INDEX_QUERY, 0)
    out[:, 1 : 2 * k : 2] = f2
    out[:, 2 * k] = INDEX_QUERY
    return out[0] if was_1d else out


def index_token_text(token: int) -> str:
    """How a token of an INDEX input or answer prints: '?' for INDEX_QUERY, else core's
    token_text."""
    return INDEX_QUERY_TEXT if int(token) == INDEX_QUERY else token_text(token)


def index_family(
    k: int, rng: np.random.Generator | None = None, samples: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """INDEX inputs (N, 2k+1), f bits (N, k) and 1-based i* (N,).

    samples=None: all 2^k·k pairs, f outer in lexicographic order (f_1 most significant), i*
    inner 1..k. Otherwise `samples` pairs drawn uniformly from rng (default_rng(0) if None).
    """
    k = int(k)
    if k < 1:
        raise InputError(f"INDEX needs k >= 1, got {k}")
    if samples is None:
        if k > _MAX_EXHAUSTIVE_INDEX_K:
            raise InputError(
                f"exhaustive INDEX family for k={k} has 2^k·k pairs; pass samples= (k <= "
                f"{_MAX_EXHAUSTIVE_INDEX_K} only)"
            )
        fs = all_sequences(k, 2)
        f_bits = np.repeat(fs, k, axis=0)
        i_stars = np.tile(np.arange(1, k + 1, dtype=np.int64), fs.shape[0])
    else:
        samples = int(samples)
        if samples < 0:
            raise InputError(f"samples must be >= 0, got {samples}")
        rng = np.random.default_rng(0) if rng is None else rng
        f_bits = rng.integers(0, 2, size=(samples, k), dtype=np.int64)
        i_stars = rng.integers(1, k + 1, size=samples, dtype=np.int64)
    return index_input(f_bits, i_stars), f_bits, i_stars


def index_family_for_length(rng: np.random.Generator, batch: int, n: int, S: int) -> np.ndarray:
    """Random INDEX inputs of length n: k = (n-1)//2, plus one random trailing bit if n is even."""
    batch, n, S = _check_shape(batch, n, S)
    if S < 3 or n < 3:
        raise InputError(f"INDEX inputs need S >= 3 and n >= 3, got S={S}, n={n}")
    k = (n - 1) // 2
    f_bits = rng.integers(0, 2, size=(batch, k), dtype=np.int64)
    i_stars = rng.integers(1, k + 1, size=batch, dtype=np.int64)
    out = index_input(f_bits, i_stars).reshape(batch, 2 * k + 1)
    if n % 2 == 0:
        out = np.concatenate([out, rng.integers(0, 2, size=(batch, 1), dtype=np.int64)], axis=1)
    return out


Generator = Callable[[np.random.Generator, int, int, int], np.ndarray]

ADVERSARIAL_FAMILIES: dict[str, Generator] = {
    "latest_match_far_back": latest_match_far_back,
    "all_equal": all_equal,
    "bottom_heavy": bottom_heavy,
    "repeated_block": repeated_block,
    "index": index_family_for_length,
}

GENERATORS: dict[str, Generator] = {
    "uniform": uniform,
    "no_adjacent_repeats": no_adjacent_repeats,
    **ADVERSARIAL_FAMILIES,
}


SAMPLE_BYTES_PER_TOKEN = 32  # sample's memory estimate: four int64 arrays of the batch's shape


def sample(
    n: int, alphabet: int, count: int = 1, *, family: str = "uniform", seed: int = 0
) -> np.ndarray:
    """`count` inputs of length n over tokens 0..alphabet−1 from one of GENERATORS ("uniform",
    "no_adjacent_repeats", the adversarial families), drawn by numpy's default_rng(seed):
    an int64 array [count, n]. InputError for an unknown family or a size out of range."""
    if family not in GENERATORS:
        raise InputError(f"family {str(family)[:40]!r} is not one of {', '.join(GENERATORS)}")
    for name, value, low in (("n", n, 1), ("alphabet", alphabet, 1), ("count", count, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise InputError(f"{name} must be an integer ≥ {low}, got {value!r:.40}")
    # the generators hold a few int64 arrays of the batch's shape at once
    check_memory(
        SAMPLE_BYTES_PER_TOKEN * float(count) * float(n), f"sampling {count} inputs of {n}"
    )
    rng = np.random.default_rng(seed)
    return np.asarray(GENERATORS[family](rng, int(count), int(n), int(alphabet)), dtype=np.int64)


@dataclass(frozen=True)
class AllSequences:
    """Σ^n (all_sequences' order) as a re-playable stream of ("exhaustive", tokens) chunks of
    `chunk` rows; chunks(start, stop) makes those chunks alone (a worker of a spread certificate
    starts at its own: core.certify.distributed.RangedInputs)."""

    n: int
    alphabet: int
    chunk: int

    def __call__(self) -> Iterator[tuple[str, np.ndarray]]:
        return self.chunks(0, -(-count_sequences(self.n, self.alphabet) // self.chunk))

    def chunks(self, start: int, stop: int) -> Iterator[tuple[str, np.ndarray]]:
        total = count_sequences(self.n, self.alphabet)
        for first in range(start * self.chunk, min(total, stop * self.chunk), self.chunk):
            last = min(total, first + self.chunk)
            yield "exhaustive", all_sequences(self.n, self.alphabet, first, last)
