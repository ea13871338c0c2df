"""Run any model (weight form or one-layer table form) on a token batch: plain predictions in a
precision mode, or certified predictions from the rigorous bounds. Chunks the batch to bound memory."""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from headcount.core.bounds import residual_bounds
from headcount.core.forward import residual_stream, rows_per_chunk
from headcount.core.model import Transformer
from headcount.core.precision import FLOAT64, Precision
from headcount.core.table import OneLayerTable, table_residual, table_residual_bounds

Model = Transformer | OneLayerTable


def check_tokens(model: Model, tokens: np.ndarray) -> np.ndarray:
    """A [batch pos] int64 array of valid tokens for `model` (ValueError saying what is wrong)."""
    tokens = np.asarray(tokens)
    if tokens.size and not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"tokens must be integers, got dtype {tokens.dtype}")
    if tokens.ndim == 1:
        tokens = tokens[None, :]
    if tokens.ndim != 2 or tokens.shape[1] < 1:
        raise ValueError(f"tokens must have shape [batch pos], got {tokens.shape}")
    if tokens.shape[1] > model.n_ctx:
        raise ValueError(f"input length {tokens.shape[1]} exceeds the model's context length {model.n_ctx}")
    if tokens.size and (tokens.min() < 0 or tokens.max() >= model.alphabet):
        raise ValueError(f"tokens must lie in 0..{model.alphabet - 1}")
    return tokens.astype(np.int64, copy=False)


def _chunks(model: Model, tokens: np.ndarray, shrink: int = 1) -> Iterator[np.ndarray]:
    chunk = max(1, rows_per_chunk(tokens.shape[1], model.d_model) // shrink)
    for start in range(0, len(tokens), chunk):
        yield tokens[start : start + chunk]


WORKERS = max(1, min(4, os.cpu_count() or 1))


def _map_chunks(fn: Callable[[np.ndarray], object], parts: list[np.ndarray]) -> list:
    """fn over the chunks, on WORKERS threads: NumPy releases the GIL in its kernels, so chunks overlap.
    Each task runs in a copy of the caller's context, so np.errstate and the like carry over."""
    if len(parts) <= 1 or WORKERS == 1:
        return [fn(part) for part in parts]
    caller = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return list(pool.map(lambda part: caller.copy().run(fn, part), parts))


def predict(model: Model, tokens: np.ndarray, prec: Precision = FLOAT64) -> np.ndarray:
    """Outputs [batch pos] (tokens, BOTTOM for ⊥) with the model evaluated in mode `prec`."""
    tokens = check_tokens(model, tokens)
    if len(tokens) == 0:
        return np.zeros(tokens.shape, dtype=np.int64)
    residual = table_residual if isinstance(model, OneLayerTable) else residual_stream
    outs = _map_chunks(lambda part: model.decoder.decode(residual(model, part, prec)), list(_chunks(model, tokens)))
    return np.concatenate(outs)


def certified_predict(model: Model, tokens: np.ndarray, prec: Precision) -> tuple[np.ndarray, np.ndarray]:
    """(outputs, certified): outputs of the real-arithmetic model with the rounding points of `prec`
    (fixed:p or exact) and where they are proven (rigorous bounds), [batch pos] each."""
    if prec.kind not in ("fixed", "exact"):
        raise ValueError(f"certified evaluation is for fixed:p and exact modes, not {prec.name}")
    tokens = check_tokens(model, tokens)
    if len(tokens) == 0:
        return np.zeros(tokens.shape, dtype=np.int64), np.zeros(tokens.shape, dtype=bool)
    bounds = table_residual_bounds if isinstance(model, OneLayerTable) else residual_bounds
    results = _map_chunks(lambda part: model.decoder.decode_bounds(*bounds(model, part, prec)),
                          list(_chunks(model, tokens, shrink=4)))
    return np.concatenate([r[0] for r in results]), np.concatenate([r[1] for r in results])
