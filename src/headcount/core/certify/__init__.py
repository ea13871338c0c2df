"""Running a model against a task's reference and certifying what it does: evaluate (any model on a
token batch: emulated, exact or proven outputs, chunked and threaded), certificate (what a
certificate reports), certify (certify_model: the float, rigorous and exact passes over a streamed
input set, and the smallest precision that is proven right), checkpoint (a certificate's state after
every chunk, so a killed run resumes).
"""

from headcount.core.certify.certificate import Certificate, Counterexample, Rejection
from headcount.core.certify.certify import (
    IGNORE,
    InputStream,
    Reference,
    certify_model,
    confirmed_error,
    minimal_precision_bits,
)
from headcount.core.certify.checkpoint import Checkpoint
from headcount.core.certify.evaluate import (
    WORKERS,
    Model,
    WorkBudget,
    attention_patterns,
    certified_predict,
    chunk_rows,
    emulate,
    fixed_predict,
    output_classes,
    predict,
    prefix_parts,
)

__all__ = [
    "IGNORE",
    "WORKERS",
    "Certificate",
    "Checkpoint",
    "Counterexample",
    "InputStream",
    "Model",
    "Reference",
    "Rejection",
    "WorkBudget",
    "attention_patterns",
    "certified_predict",
    "certify_model",
    "chunk_rows",
    "confirmed_error",
    "emulate",
    "fixed_predict",
    "minimal_precision_bits",
    "output_classes",
    "predict",
    "prefix_parts",
]
