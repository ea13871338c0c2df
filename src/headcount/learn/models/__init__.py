"""PyTorch models for the learning experiments (spec/learning.md), and exact conversions to and from
the theory's models, so a construction can be loaded, fine-tuned or probed, and a trained model can
be run through the same certificates, verifiers and lower-bound tools as a construction.

    sequence.py  SequenceModel — causal multi-head attention over token sequences, TransformerLens
                 weight
                 names; loads any core Transformer with a linear decoder and exports to one
    table.py     TableModel — the one-layer table form (core/model/table.py), the one-layer
                 construction's form
    minmax.py    MinMaxNet — position-free heads over tokens 1..M plus two linear classifiers
                 (minmax.model)
    boolean.py   BooleanNet — heads over {0, 1} plus a degree-D polynomial readout (boolean.model)
    tokens.py    token input checks and float64 copies of parameters, shared by the above
    costs.py     what a training run needs (memory, compute) and the bounds every run is held to,
                 checked
                 by learn/train.py before a model is built

All modules run in float32 (training) and float64 (`.double()`, used for exact comparisons). Every
name is importable from this package.
"""

from headcount.learn.models.blocks import ARCHS, Attention, Block, FeedForward
from headcount.learn.models.boolean import (
    BooleanNet,
    boolean_net_from_model,
    boolean_net_to_model,
    monomial_exponents,
)
from headcount.learn.models.minmax import MinMaxNet, minmax_net_from_model, minmax_net_to_model
from headcount.learn.models.sequence import (
    POSITIONAL,
    SequenceConfig,
    SequenceModel,
    positional_table,
    sequence_model_from_transformer,
    sequence_model_to_transformer,
)
from headcount.learn.models.table import TableModel, table_model_to_table

__all__ = [
    "ARCHS",
    "POSITIONAL",
    "Attention",
    "Block",
    "BooleanNet",
    "FeedForward",
    "MinMaxNet",
    "SequenceConfig",
    "SequenceModel",
    "TableModel",
    "boolean_net_from_model",
    "boolean_net_to_model",
    "minmax_net_from_model",
    "minmax_net_to_model",
    "monomial_exponents",
    "positional_table",
    "sequence_model_from_transformer",
    "sequence_model_to_transformer",
    "table_model_to_table",
]
