"""Running a model against a task's reference and certifying what it does: evaluate (any model on a
token batch: emulated, exact or proven outputs, chunked and threaded), certificate (what a
certificate reports), certify (certify_model: the float, rigorous and exact passes over a streamed
input set, and the smallest precision that is proven right), checkpoint (a certificate's state after
every chunk, so a killed run resumes), distributed (the streaming pass's chunks computed by workers,
replayed in stream order: the one process's certificate), cluster (where they run: this process,
or Ray).
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
from headcount.core.certify.cluster import (
    EXECUTORS,
    RayExecutor,
    make_executor,
    same_certificate,
    task_worker_pids,
)
from headcount.core.certify.distributed import (
    InProcess,
    SpreadStats,
    certify_spread,
    check_spread,
)
from headcount.core.certify.evaluate import (
    WORKERS,
    Model,
    WorkBudget,
    attention_patterns,
    certified_predict,
    chunk_rows,
    emulate,
    fixed_predict,
    logit_bytes,
    output_classes,
    predict,
    prefix_parts,
)

__all__ = [
    "EXECUTORS",
    "IGNORE",
    "WORKERS",
    "Certificate",
    "Checkpoint",
    "InProcess",
    "RayExecutor",
    "SpreadStats",
    "Counterexample",
    "InputStream",
    "Model",
    "Reference",
    "Rejection",
    "WorkBudget",
    "attention_patterns",
    "certified_predict",
    "certify_model",
    "certify_spread",
    "check_spread",
    "chunk_rows",
    "confirmed_error",
    "emulate",
    "fixed_predict",
    "make_executor",
    "minimal_precision_bits",
    "logit_bytes",
    "output_classes",
    "predict",
    "prefix_parts",
    "same_certificate",
    "task_worker_pids",
]
