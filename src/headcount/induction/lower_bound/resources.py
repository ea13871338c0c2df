"""The INDEX tools' resource bounds (issue 13), checked before any work: the memory of the
reduction's setup (setup.index_setup) and of its chunked vectorized steps, and the work
check_protocol and refute may do (common.resources). The model's context must hold the INDEX input
before any estimate at k is made (check_context)."""

from __future__ import annotations

import math

from headcount.common.errors import InputError, param
from headcount.common.resources import check_memory, check_work
from headcount.core.certify import Model
from headcount.core.model import OneLayerTable, Transformer
from headcount.core.passes import table_at_precision_bytes
from headcount.induction.construction import PER_INPUT_WORK, evaluation_bytes
from headcount.induction.task import INDEX_TOKENS

# Working-set size (float64 elements) that the vectorized steps aim for per chunk.
CHUNK_ELEMENTS = 1 << 21
# Resource bounds (issue 13). Every INDEX tool runs the one-layer model on inputs of length n = 2k+1
# through predict at fixed:p, all n positions: heads · n² score entries per input (plus Alice's
# h·k·m and a fixed cost per input), about 6·10⁶ a second on 2 cores. check_protocol may do
# PROTOCOL_MAX_WORK of them: all 2^16·16 pairs at k = 16 (the report's largest exhaustive check, one
# head) are 1.2·10⁹, ~3 minutes; the limit is ~12 minutes. k, pairs and the model's heads set the
# amount.
PROTOCOL_MAX_WORK = 2**32
# refute may do REFUTE_MAX_WORK: its budget of Alice messages or closed-form inputs (h·k·m each), or
# the whole INDEX family through predict when that fits the budget; measured ~2·10⁷ a second (k =
# 1000: 2 min).
REFUTE_MAX_WORK = 2**32
# Float64 arrays of CHUNK_ELEMENTS the protocol's vectorized steps hold at once (r, s, Y, bounds…).
CHUNK_ARRAYS = 16


def check_context(model: Model, k: int) -> None:
    """InputError when the model's context is shorter than the INDEX input (before any estimate at
    k)."""
    n_ctx = model.n_ctx if isinstance(model, (OneLayerTable, Transformer)) else math.inf
    if 2 * k + 1 > n_ctx:
        raise InputError(
            f"INDEX with k={k} needs n = 2k+1 = {2 * k + 1} positions; the model's context is "
            f"{n_ctx}"
        )


def table_bytes(n: int, alphabet: int, heads: int, d_model: int, d_head: int) -> float:
    """Bytes of a one-layer table model: ψ_in [n S m], Q̃ and K̃ [h n S d_head], Ṽ [h n S m] in
    float64."""
    return 8.0 * n * alphabet * (d_model + heads * (2.0 * d_head + d_model))


def model_shape(model: Model) -> tuple[int, int, int]:
    """(heads, d_model, d_head) of the first layer of a model, read without converting it."""
    if not isinstance(model, (OneLayerTable, Transformer)):
        return 1, 1, 1  # setup.as_table refuses it
    if isinstance(model, OneLayerTable):
        return int(model.Q.shape[0]), int(model.d_model), int(model.Q.shape[-1])
    layer_heads = model.layers[0].heads if model.layers else ()
    d_head = max((int(h.W_Q.shape[1]) for h in layer_heads), default=1)
    return max(1, len(layer_heads)), int(model.d_model), d_head


def setup_bytes(model: Model, k: int) -> float:
    """Memory of setup.index_setup: a weight-form model's exact table of its fixed:p rounding points
    at n = 2k+1 over the 3 INDEX tokens (core.passes.fixed_table.table_at_precision_bytes: the exact
    grid values while it is built and the float64 table), the setup's rounded copies of the tables
    at n over 3 tokens, and Bob's [k h m]."""
    heads, m, d_head = model_shape(model)
    n = 2 * k + 1
    own = 0.0
    # setup.as_table refuses any other model
    if isinstance(model, Transformer) and len(model.layers) == 1:
        own = table_at_precision_bytes(model, n, min(INDEX_TOKENS, model.alphabet))
    return own + 2 * table_bytes(n, 3, heads, m, d_head) + 8.0 * k * heads * (m + 1)


def check_index_resources(
    model: Model,
    k: int,
    inputs: float,
    work: float,
    limit: float,
    what: str,
    option: str,
    more: float = 0,
) -> None:
    """An INDEX tool's bounds: memory (setup, `inputs` runs of the model at length 2k+1 through
    predict, the chunked steps, and `more` bytes), then `work` + inputs · (heads · n² +
    PER_INPUT_WORK) against `limit`."""
    check_context(model, k)
    heads, m, _ = model_shape(model)
    n = 2.0 * k + 1
    chunk = 8.0 * CHUNK_ARRAYS * CHUNK_ELEMENTS
    check_memory(setup_bytes(model, k) + evaluation_bytes(n, m) + chunk + more, what)
    amount = work + float(inputs) * (heads * n * n + PER_INPUT_WORK)
    check_work(amount, limit, what, "score entries (model runs × heads × n², n = 2k+1)", option)


def index_family_size(k: int) -> float:
    """2^k·k, the number of (f, i*) pairs (a float, +inf beyond k = 1000: never enumerated
    anyway)."""
    return float((1 << k) * k) if k <= 1000 else math.inf


def check_protocol_resources(
    model: Model, k: int, pairs: int | None, exhaustive_k: int, default: int
) -> None:
    """check_protocol's bounds: all 2^k·k pairs when k ≤ exhaustive_k and no pairs are given (or
    pairs covers the family), else `pairs` (default `default`) sampled; each pair runs the model
    once."""
    heads, m, _ = model_shape(model)
    family = index_family_size(k)
    exhaustive = (pairs is None and k <= exhaustive_k) or (pairs is not None and pairs >= family)
    count = family if exhaustive else float(default if pairs is None else pairs)
    what = f"induction protocol at {param('k')} {k} on {count:.3g} (f, i*) pairs"
    option = f"{param('k')} or {param('pairs')}"
    check_index_resources(model, k, count, count * heads * k * m, PROTOCOL_MAX_WORK, what, option)


def check_refute_resources(model: Model, k: int, budget: int, exhaustive_k: int) -> None:
    """refute's bounds: `budget` Alice messages and closed-form inputs (h·k·m each; the collision
    search keeps up to `budget` strings of k bytes, local search 64·k neighbours of k bits), or,
    when the whole family fits (k ≤ exhaustive_k or 2^k·k ≤ budget), every INDEX input through the
    model."""
    heads, m, _ = model_shape(model)
    family = index_family_size(k)
    runs = family if (k <= exhaustive_k or family <= budget) else 0.0
    hkm = float(heads) * k * m
    collision = min(family / max(k, 1), float(budget)) * k + 16 * max(1024 * hkm, CHUNK_ELEMENTS)
    local_search = (
        8.0 * 64 * k * k * (1 + heads * m)
    )  # 64·k neighbours of k bits, Alice's gathers on them
    more = max(collision, 16 * 4096 * hkm, local_search)  # the methods run one after another
    what = f"induction refute at {param('k')} {k}"
    check_index_resources(
        model, k, runs, float(budget) * hkm, REFUTE_MAX_WORK, what, param("k"), more
    )
