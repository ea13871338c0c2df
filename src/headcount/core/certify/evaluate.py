"""Run any model (weight form or one-layer table form) on a token batch. Chunks the batch to bound
memory.

* ``emulate`` — the float evaluation of a precision mode: IEEE dtypes as the type computes, fixed:p
  as float64 with the rounding points applied to float64 values (fast; can miss the exact rounding
  of a value that float64 puts on a tie or the clip).
* ``certified_predict`` — outputs and where the rigorous bounds (headcount.core.passes.bounds) prove
  them.
* ``fixed_predict`` — the seed's fixed:p model exactly: proven by the bounds where they decide, else
  by the exact evaluator (headcount.core.passes.exact_fixed: rationals at every rounding point, Arb
  balls and an exact tie test for softmax outputs), within a work limit.
* ``predict`` — what a user means by "the model's output in mode prec": ``fixed_predict`` for
  fixed:p (no work limit), the float evaluation otherwise.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController

from headcount.core.attention import chunk_threads_help, current_algorithm
from headcount.core.model import (
    LOGIT_ROWS,
    LinearDecoder,
    OneLayerTable,
    Transformer,
    VocabDecoder,
    check_tokens,
)
from headcount.core.numbers import FLOAT64, Precision, fixed
from headcount.core.passes import (
    PrefixTrie,
    exact_fixed_predict,
    exact_supported,
    prefix_residual_bounds,
    prefix_residual_stream,
    prefix_worthwhile,
    residual_bounds,
    residual_stream,
    rows_per_chunk,
    table_residual,
    table_residual_bounds,
)

Model = Transformer | OneLayerTable


def output_classes(model: Model) -> int:
    """Width of the model's output logits (the whole vocabulary of an imported model's readout)."""
    decoder = model.decoder
    if callable(getattr(decoder, "classes", None)):
        return int(decoder.classes(model.d_model))
    W_U = getattr(decoder, "W_U", None)
    return int(W_U.shape[1]) if W_U is not None else model.d_model


def logit_bytes(model: Model, rows: int, n: int) -> float:
    """Bytes one worker's decoder holds while it decodes `rows` sequences of length n: LOGIT_ROWS
    positions of logits at a time (with their radius and endpoints) for the decoders that work in
    row blocks (core.model.parts.in_row_blocks), the whole [rows n classes] mid and radius for the
    others."""
    classes = float(output_classes(model))
    if isinstance(model.decoder, (LinearDecoder, VocabDecoder)):
        return 8.0 * min(float(rows) * n, LOGIT_ROWS) * classes * 8
    return 2.0 * rows * float(n) * classes * 8


def chunk_rows(model: Model, n: int) -> int:
    """Sequences of length n per chunk: the score tensor or the logits, whichever is wider, fits a
    chunk."""
    return rows_per_chunk(n, max(model.d_model, output_classes(model)))


def _chunks(model: Model, tokens: np.ndarray, shrink: int = 1) -> Iterator[np.ndarray]:
    chunk = max(1, chunk_rows(model, tokens.shape[1]) // shrink)
    for start in range(0, len(tokens), chunk):
        yield tokens[start : start + chunk]


WORKERS = max(1, min(4, os.cpu_count() or 1))
_blas: dict[str, object] = {"users": 0}
_blas_lock = threading.Lock()


@contextmanager
def _single_threaded_blas() -> Iterator[None]:
    """BLAS (OpenBLAS, numpy's and scipy's) on one thread while the chunk workers run: the workers
    fill the cores, and BLAS's own threads on top of them spin against each other (measured: the
    blocked rigorous pass at n = 4096 ran 1.8× slower with OpenBLAS's 2 threads in each of 2 workers
    on 2 cores). Counted, so overlapping callers restore the limit only when the last one leaves."""
    with _blas_lock:
        if _blas["users"] == 0:
            controller = _blas.get("controller") or ThreadpoolController()
            _blas["controller"] = controller
            _blas["limiter"] = controller.limit(limits=1, user_api="blas")
        _blas["users"] += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas["users"] -= 1
            if _blas["users"] == 0:
                _blas.pop("limiter").restore_original_limits()


def _map_chunks(fn: Callable[[np.ndarray], object], parts: list[np.ndarray]) -> list:
    """fn over the chunks, on WORKERS threads: NumPy releases the GIL in its kernels, so chunks
    overlap. Each task runs in a copy of the caller's context, so np.errstate and the like carry
    over."""
    # under the torch backend torch's own threads (or the GPU) do the work: one chunk at a time, so
    # two thread teams never compete for the cores
    if len(parts) <= 1 or WORKERS == 1 or not chunk_threads_help():
        return [fn(part) for part in parts]
    caller = contextvars.copy_context()
    with _single_threaded_blas(), ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return list(pool.map(lambda part: caller.copy().run(fn, part), parts))


def emulate(model: Model, tokens: np.ndarray, prec: Precision = FLOAT64) -> np.ndarray:
    """Outputs [batch pos] (tokens, BOTTOM for ⊥) of the float evaluation of mode `prec` (see the
    module docstring)."""
    tokens = check_tokens(model, tokens)
    if len(tokens) == 0:
        return np.zeros(tokens.shape, dtype=np.int64)
    parts = prefix_parts(model, tokens)
    if parts is not None:  # each distinct prefix once (core.passes.prefix)
        outs = _map_chunks(
            lambda part: model.decoder.decode(
                prefix_residual_stream(model, part[0], prec, part[1])
            ),
            parts,
        )
        return np.concatenate(outs)
    residual = table_residual if isinstance(model, OneLayerTable) else residual_stream
    outs = _map_chunks(
        lambda part: model.decoder.decode(residual(model, part, prec)), list(_chunks(model, tokens))
    )
    return np.concatenate(outs)


PREFIX_ROWS = 1 << 15  # rows per prefix pass (its [rows n d_model] output is held at once)


def prefix_parts(model: Model, tokens: np.ndarray) -> list[tuple[np.ndarray, PrefixTrie]] | None:
    """The batch in consecutive parts with their prefix tries, when every part pays for a prefix
    pass (a causal weight-form model on rows that share prefixes, as an exhaustive enumeration's do:
    core.passes.prefix); else None. At most PREFIX_ROWS rows a part, and one part per worker thread
    from 4096 rows. Never under the reference algorithm."""
    if (
        current_algorithm() == "reference"
        or not isinstance(model, Transformer)
        or model.mask != "causal"
    ):
        return None
    count = max(-(-len(tokens) // PREFIX_ROWS), WORKERS if len(tokens) >= 4096 else 1)
    parts = []
    for part in np.array_split(tokens, count):
        trie = prefix_worthwhile(model, part)
        if trie is None:
            return None
        parts.append((part, trie))
    return parts


def attention_patterns(
    model: Model, tokens: np.ndarray, prec: Precision = FLOAT64
) -> list[np.ndarray]:
    """Each layer's attention weights [batch heads query key] on a token batch, in mode `prec`
    (float64 by default): what every head attends to, for analysis (the same pass as emulate). A
    table model has one layer, its weights from the tables Q̃, K̃."""
    tokens = check_tokens(model, tokens)
    per_chunk = []
    for part in _chunks(model, tokens, shrink=max(1, sum(model.heads_per_layer))):
        layers: list[list[np.ndarray]] = []
        # overflow and NaN are the mode's behaviour (they show in the weights), not warnings
        with np.errstate(all="ignore"):
            if isinstance(model, OneLayerTable):
                layers.append([])
                table_residual(model, part, prec, layers[0])
            else:
                residual_stream(model, part, prec, layers)
        empty = np.zeros((len(part), 0, part.shape[1], part.shape[1]))  # a layer without heads
        per_chunk.append([np.stack(heads, axis=1) if heads else empty for heads in layers])
    return [np.concatenate([chunk[l] for chunk in per_chunk]) for l in range(len(model.layers))]


def certified_predict(
    model: Model, tokens: np.ndarray, prec: Precision
) -> tuple[np.ndarray, np.ndarray]:
    """(outputs, certified): outputs of the real-arithmetic model with the rounding points of `prec`
    (fixed:p or exact) and where they are proven (rigorous bounds), [batch pos] each."""
    if prec.kind not in ("fixed", "exact"):
        raise ValueError(f"certified evaluation is for fixed:p and exact modes, not {prec.name}")
    tokens = check_tokens(model, tokens)
    if len(tokens) == 0:
        return np.zeros(tokens.shape, dtype=np.int64), np.zeros(tokens.shape, dtype=bool)

    parts = prefix_parts(model, tokens)
    tries = {} if parts is None else {id(part): trie for part, trie in parts}

    def bounds(part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(model, OneLayerTable):
            return table_residual_bounds(model, part, prec)
        if id(part) in tries:  # each distinct prefix once (core.passes.prefix)
            return prefix_residual_bounds(model, part, prec, tries[id(part)])
        return residual_bounds(model, part, prec)

    def decide(part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with np.errstate(all="ignore"):  # overflow and NaN end as unbounded boxes, never as proofs
            mid, rad = bounds(part)
            out, proven = model.decoder.decode_bounds(mid, rad)
        finite = np.isfinite(mid).all(axis=-1) & np.isfinite(rad).all(axis=-1)
        return out, proven & finite

    chunks = (
        list(_chunks(model, tokens, shrink=4)) if parts is None else [part for part, _ in parts]
    )
    results = _map_chunks(decide, chunks)
    out, proven = np.concatenate([r[0] for r in results]), np.concatenate([r[1] for r in results])
    return out, proven


def predict(model: Model, tokens: np.ndarray, prec: Precision = FLOAT64) -> np.ndarray:
    """Outputs [batch pos] (tokens, BOTTOM for ⊥) of the model in mode `prec`: for fixed:p the
    seed's semantics exactly (fixed_predict, no work limit), otherwise the evaluation in that
    type."""
    if prec.kind != "fixed":
        return emulate(model, tokens, prec)
    return fixed_predict(model, tokens, prec.bits, budget=WorkBudget(None))[0]


EXACT_WORK_LIMIT = (
    5 * 10**7
)  # score entries (inputs × heads × queries × keys) the exact evaluator may do


@dataclass
class WorkBudget:
    """How much exact evaluation is still allowed, in score entries; None: no limit. `refused`:
    whether a take did not fit (distributed certification uses a chunk's result only when it did
    not spend differently from the stream's budget: core.certify.distributed)."""

    remaining: int | None = EXACT_WORK_LIMIT
    refused: bool = False

    def take(self, cost: int) -> bool:
        if self.remaining is None:
            return True
        if cost > self.remaining:
            self.refused = True
            return False
        self.remaining -= cost
        return True


def exact_work(model: Model, positions: int) -> int:
    """Score entries the exact evaluator computes for one input up to `positions` positions (the
    full mask needs every position)."""
    m = model.n_ctx if model.mask == "full" else positions
    return max(1, sum(model.heads_per_layer)) * m * m


def fixed_predict(
    model: Model,
    tokens: np.ndarray,
    bits: int,
    *,
    budget: WorkBudget | None = None,
    proven_in: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(outputs, decided) [batch pos] of the exact fixed:p model: rigorous bounds first, then the
    exact evaluator on the positions they leave open, input by input while `budget` lasts (default:
    a fresh EXACT_WORK_LIMIT). Where `decided` is False the output is the bounds' midpoint guess,
    not proven. `proven_in` passes a certified_predict result already computed for these tokens."""
    tokens = check_tokens(model, tokens)
    budget = WorkBudget() if budget is None else budget
    out, decided = (
        proven_in if proven_in is not None else certified_predict(model, tokens, fixed(bits))
    )
    out, decided = out.copy(), decided.copy()
    if (
        exact_supported(model) is not None
    ):  # GPT-2 parts: the bounds decide alone, the rest stays open
        return out, decided
    for row in np.flatnonzero(~decided.all(axis=1)):
        open_positions = np.flatnonzero(~decided[row])
        if not budget.take(exact_work(model, int(open_positions.max()) + 1)):
            continue

        exact = exact_fixed_predict(
            model, tokens[row : row + 1], bits, positions=[int(i) for i in open_positions]
        )
        out[row, open_positions] = exact[0, open_positions]
        decided[row, open_positions] = True
    return out, decided
