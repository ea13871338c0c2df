"""Certificates for induction-heads models: which inputs, and the JSON the CLI prints.

Inputs: all of Σ^n when S^n ≤ EXHAUSTIVE_LIMIT (streamed in lexicographic chunks); otherwise `samples`
seeded random sequences (half uniform, half no-adjacent-repeats) plus every adversarial family of
headcount.induction.task (each max(2, samples // 8) sequences; the INDEX family where S ≥ 3 and n ≥ 3).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from headcount.core.certify import certify_model
from headcount.core.evaluate import Model
from headcount.induction import task

EXHAUSTIVE_LIMIT = 2_000_000
EXHAUSTIVE_CHUNK = 1 << 15


def default_samples(n: int) -> int:
    """Random sequences checked when not exhaustive: many for short inputs, fewer for long ones."""
    return max(8, min(512, (1 << 17) // max(n, 1)))


def induction_inputs(
    n: int, alphabet: int, samples: int | None = None, seed: int = 0, exhaustive: bool | None = None
):
    """(stream, exhaustive): a re-playable stream of (family, tokens) chunks for certify_model."""
    if exhaustive is None:
        exhaustive = task.count_sequences(n, alphabet) <= EXHAUSTIVE_LIMIT
    if exhaustive:
        total = task.count_sequences(n, alphabet)

        def stream() -> Iterator[tuple[str, np.ndarray]]:
            for start in range(0, total, EXHAUSTIVE_CHUNK):
                yield (
                    "exhaustive",
                    task.all_sequences(n, alphabet, start, min(total, start + EXHAUSTIVE_CHUNK)),
                )

        return stream, True

    samples = default_samples(n) if samples is None else samples
    per_family = max(2, samples // 8)
    families: list[tuple[str, int]] = [
        ("uniform", samples - samples // 2),
        ("no_adjacent_repeats", samples // 2),
    ]
    for name in task.ADVERSARIAL_FAMILIES:
        if name == "index" and (alphabet < 3 or n < 3):
            continue
        families.append((name, per_family))
    chunk = 256

    def stream() -> Iterator[tuple[str, np.ndarray]]:
        rng = np.random.default_rng(seed)  # same seed, same inputs, every replay
        for name, count in families:
            generate = task.GENERATORS[name]
            for start in range(0, count, chunk):
                yield name, generate(rng, min(chunk, count - start), n, alphabet)

    return stream, False


def certify_induction(
    model: Model,
    n: int,
    alphabet: int,
    samples: int | None = None,
    seed: int = 0,
    hops: int = 1,
    exhaustive: bool | None = None,
    dtypes: bool = True,
) -> dict[str, Any]:
    """Certificate of `model` on induction heads (hop `hops`) at length n over `alphabet` tokens
    (dtypes=False skips the IEEE-dtype passes: dtypes_exact is then empty)."""
    if n > model.n_ctx:
        raise ValueError(f"n = {n} exceeds the model's context length {model.n_ctx}")
    if alphabet > model.alphabet:
        raise ValueError(f"alphabet = {alphabet} exceeds the model's alphabet {model.alphabet}")
    stream, is_exhaustive = induction_inputs(n, alphabet, samples, seed, exhaustive)
    cert = certify_model(model, stream, lambda tokens: task.induction_targets(tokens, hops), dtypes=dtypes)
    p = cert.precision_bits
    return {
        "task": "induction",
        "hops": hops,
        "layers": len(model.layers),
        "heads": model.heads,
        "dim": model.d_model,
        "n": n,
        "alphabet": alphabet,
        "construction": model.info.get("construction"),
        "exhaustive": is_exhaustive,
        "scope": "exhaustive" if is_exhaustive else "sampled",
        "seed": None if is_exhaustive else seed,
        **cert.as_dict(),
        "size": None if p is None else model.size(p),
    }
