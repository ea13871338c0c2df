"""The formal model as data (seed 000 §2): the weight form (Transformer and its parts), the
one-layer table form, the decoders ψ_out (linear; "vocab" for imported models), the output symbols,
and the model file format. It depends on core.numbers and core.attention only: a pass over a model
lives in core.passes.
"""

from headcount.core.model.files import load_model, model_digest, save_model
from headcount.core.model.parts import (
    ACTIVATIONS,
    LOGIT_ROWS,
    MASKS,
    MLP,
    AttentionHead,
    Decoder,
    Layer,
    LayerNorm,
    LinearDecoder,
    Norm,
    RMSNorm,
    Rotary,
    argmax_bounds,
    decoder_class,
    register_decoder,
)
from headcount.core.model.symbols import BOTTOM, OTHER, check_tokens, token_text
from headcount.core.model.table import OneLayerTable, check_plain, random_table, table_from_weights
from headcount.core.model.transformer import Transformer
from headcount.core.model.vocab import VocabDecoder, VocabMap, bind_task
from headcount.core.model.weights import BEYOND_GPT2

__all__ = [
    "LOGIT_ROWS",
    "ACTIVATIONS",
    "BOTTOM",
    "MASKS",
    "MLP",
    "BEYOND_GPT2",
    "OTHER",
    "AttentionHead",
    "Decoder",
    "Layer",
    "LayerNorm",
    "LinearDecoder",
    "Norm",
    "RMSNorm",
    "Rotary",
    "OneLayerTable",
    "Transformer",
    "VocabDecoder",
    "VocabMap",
    "argmax_bounds",
    "bind_task",
    "check_plain",
    "check_tokens",
    "decoder_class",
    "load_model",
    "model_digest",
    "random_table",
    "register_decoder",
    "save_model",
    "table_from_weights",
    "token_text",
]
