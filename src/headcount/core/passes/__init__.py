"""Whole-model passes over token batches: the float forward pass in any precision mode (forward),
rigorous boxes around the real-arithmetic fixed:p model (bounds, with the LayerNorm and GELU
enclosures of activations), both over a prefix trie that evaluates each distinct prefix once
(prefix), the one-layer table form's passes (table_form), and the fixed:p model evaluated exactly
(exact_fixed, with one head's exact rounding in head_rounding, and the exact table at one precision
in fixed_table).
"""

from headcount.core.passes.activations import GELU_SHAPES, X_POS, gelu_interval, layer_norm_interval
from headcount.core.passes.bounds import activation_bounds, residual_bounds, settle_ties
from headcount.core.passes.exact_fixed import (
    exact_fixed_predict,
    exact_fixed_residual,
    exact_round_fixed,
    exact_supported,
)
from headcount.core.passes.fixed_table import (
    NoExactTable,
    table_at_precision,
    table_at_precision_bytes,
)
from headcount.core.passes.forward import CHUNK_BYTES, residual_stream, rows_per_chunk
from headcount.core.passes.head_rounding import exact_head_row, grid_box
from headcount.core.passes.prefix import (
    PrefixTrie,
    prefix_residual_bounds,
    prefix_residual_stream,
    prefix_trie,
    prefix_worthwhile,
)
from headcount.core.passes.table_form import table_residual, table_residual_bounds

__all__ = [
    "CHUNK_BYTES",
    "GELU_SHAPES",
    "X_POS",
    "NoExactTable",
    "PrefixTrie",
    "activation_bounds",
    "exact_fixed_predict",
    "exact_fixed_residual",
    "exact_head_row",
    "exact_round_fixed",
    "exact_supported",
    "gelu_interval",
    "grid_box",
    "layer_norm_interval",
    "prefix_residual_bounds",
    "prefix_residual_stream",
    "prefix_trie",
    "prefix_worthwhile",
    "residual_bounds",
    "residual_stream",
    "rows_per_chunk",
    "settle_ties",
    "table_at_precision",
    "table_at_precision_bytes",
    "table_residual",
    "table_residual_bounds",
]
