"""Which implementation of the evaluation passes runs: the blocked one (the default) or the reference.

The reference is the algorithm of the first release, kept callable so that tests and benchmarks can
compare the two on the same inputs (identical certificates, and how much faster the blocked one is):
dense [batch query key] attention in the float and the rigorous passes (forward.dense_attend,
softmax_bounds.dense_attention_bounds) and certify_model's four separate passes. Selected per context,
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
