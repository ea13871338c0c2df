"""Which implementation of the evaluation passes runs: the blocked one (the default) or the
reference.

The reference is the algorithm of the first release, kept callable so that tests and benchmarks can
compare the two on the same inputs (identical certificates, and how much faster the blocked one is):
dense [batch query key] attention in the float and the rigorous passes (attention.dense_attend,
attention.dense_attention_bounds) and certify_model's four separate passes. Selected per context,
so threads started from it (evaluate._map_chunks copies the context) follow it too.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

ALGORITHMS = ("blocked", "reference")
_current = contextvars.ContextVar("headcount_algorithm", default="blocked")


def current_algorithm() -> str:
    """ "blocked" or "reference" (module docstring)."""
    return _current.get()


@contextlib.contextmanager
def use_algorithm(name: str) -> Iterator[None]:
    """Run the block under the algorithm `name` (one of ALGORITHMS)."""
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}: use one of {', '.join(ALGORITHMS)}")
    token = _current.set(name)
    try:
        yield
    finally:
        _current.reset(token)


BACKENDS = ("numpy", "torch")
DEVICES = ("cpu", "cuda", "auto")
_backend = contextvars.ContextVar("headcount_backend", default=("numpy", "cpu"))


def current_backend() -> tuple[str, str]:
    """(backend, device) the blocked attention kernels run on: ("numpy", "cpu") by default;
    ("torch", "cpu" | "cuda") under use_backend (core.attention.torch_backend)."""
    return _backend.get()


@contextlib.contextmanager
def use_backend(name: str, device: str = "cpu") -> Iterator[None]:
    """Run the block's attention kernels on `name` ("numpy" or "torch") and `device` ("cpu", "cuda",
    or "auto": cuda when torch sees a GPU, else cpu). Only the blocked algorithm has a torch
    backend."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}: use one of {', '.join(BACKENDS)}")
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}: use one of {', '.join(DEVICES)}")
    if device == "auto":
        device = "cpu"
        if name == "torch":
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
    token = _backend.set((name, device))
    try:
        yield
    finally:
        _backend.reset(token)


_pruning = contextvars.ContextVar("headcount_pruning", default=True)


def pruning_enabled() -> bool:
    """Whether the blocked passes prune keys by their groups' bounds (core.attention.pruning; on by
    default). Off: every visible key is scored, as before issue 34 (benchmarks and the soundness
    suite compare the two)."""
    return _pruning.get()


@contextlib.contextmanager
def use_pruning(on: bool) -> Iterator[None]:
    """Run the block with key pruning on or off."""
    token = _pruning.set(bool(on))
    try:
        yield
    finally:
        _pruning.reset(token)
