"""Certificates for induction-heads models: which inputs, and the typed result the CLI prints.

Inputs: all of Σ^n when S^n ≤ EXHAUSTIVE_LIMIT (streamed in lexicographic chunks); otherwise `samples`
seeded random sequences (half uniform, half no-adjacent-repeats) plus every adversarial family of
headcount.induction.task (each max(2, samples // 8) sequences; the INDEX family where S ≥ 3 and n ≥ 3).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.core.certify import Certificate, certify_model
from headcount.core.errors import InputError
from headcount.core.evaluate import Model
from headcount.induction import task
from headcount.induction.construction import build_or_load, check_sizes

EXHAUSTIVE_LIMIT = 2_000_000
EXHAUSTIVE_CHUNK = 1 << 15


def exhaustive_cases(limit: int = EXHAUSTIVE_LIMIT) -> list[tuple[int, int]]:
    """Every (S, n) with 2 ≤ S ≤ n and S^n ≤ limit, smallest first: the sizes certified on all of Σ^n."""
    cases = []
    S = 2
    while S**S <= limit:
        n = S
        while S**n <= limit:
            cases.append((S, n))
            n += 1
        S += 1
    return cases


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


@dataclass(frozen=True)
class InductionCertificate:
    """certify_model's Certificate of a model on induction heads, with what was certified: the hop, the
    model's shape (heads per layer, residual width), the task size, and the input set (exhaustive or
    sampled with `seed`). `size` = Σ heads·d_model·precision_bits (None without a precision)."""

    hops: int
    layers: int
    heads_per_layer: tuple[int, ...]
    d_model: int
    n: int
    alphabet: int
    construction: str | None
    exhaustive: bool
    seed: int | None
    certificate: Certificate
    size: int | None

    @property
    def scope(self) -> str:
        """What "checked" covers: "exhaustive" (all of Σ^n) or "sampled" (only the inputs checked)."""
        return "exhaustive" if self.exhaustive else "sampled"

    def shortfalls(self, need_exhaustive: bool = False) -> list[str]:
        """Why this certificate does not show that the model answers every input checked right, proven at
        precision_bits (with need_exhaustive: every input of Σ^n), one line each; empty when it does."""
        c, case, total = self.certificate, f"n={self.n} S={self.alphabet}", self.alphabet**self.n
        out = []
        if c.errors:
            first = c.first_counterexample and c.first_counterexample.to_json()
            out.append(f"{case}: {c.errors} float64 errors (first: {first})")
        if c.precision_bits is None:
            out.append(f"{case}: no precision ≤ 60 bits is error-free")
        elif not c.certified:
            out.append(
                f"{case}: not certified at p={c.precision_bits} "
                f"({c.uncertified_positions} positions not proven by the interval bounds)"
            )
        if need_exhaustive and (not self.exhaustive or c.inputs_checked != total):
            out.append(
                f"{case}: not checked on all of Σ^n (scope {self.scope}, {c.inputs_checked} inputs, "
                f"S^n = {total})"
            )
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "task": "induction",
            "hops": self.hops,
            "layers": self.layers,
            "heads": list(self.heads_per_layer),
            "dim": self.d_model,
            "n": self.n,
            "alphabet": self.alphabet,
            "construction": self.construction,
            "exhaustive": self.exhaustive,
            "scope": self.scope,
            "seed": self.seed,
            **self.certificate.to_json(),
            "size": self.size,
        }


def _check_request(n: int, alphabet: int, samples: int | None) -> None:
    check_sizes(n, alphabet)
    if samples is not None and samples < 1:
        raise InputError(f"--samples {samples} must be ≥ 1")


def certify_induction(
    model: Model,
    n: int,
    alphabet: int,
    samples: int | None = None,
    seed: int = 0,
    hops: int = 1,
    exhaustive: bool | None = None,
    dtypes: bool = True,
) -> InductionCertificate:
    """Certificate of `model` on induction heads (hop `hops`) at length n over `alphabet` tokens
    (dtypes=False skips the IEEE-dtype passes: dtypes_exact is then empty)."""
    _check_request(n, alphabet, samples)
    if n > model.n_ctx or alphabet > model.alphabet:
        raise InputError(
            f"the model handles n ≤ {model.n_ctx} and alphabet ≤ {model.alphabet}; "
            f"got --n {n} --alphabet {alphabet}"
        )
    stream, is_exhaustive = induction_inputs(n, alphabet, samples, seed, exhaustive)
    cert = certify_model(model, stream, lambda tokens: task.induction_targets(tokens, hops), dtypes=dtypes)
    p = cert.precision_bits
    return InductionCertificate(
        hops=hops,
        layers=len(model.layers),
        heads_per_layer=tuple(model.heads_per_layer),
        d_model=model.d_model,
        n=n,
        alphabet=alphabet,
        construction=model.info.get("construction"),
        exhaustive=is_exhaustive,
        seed=None if is_exhaustive else seed,
        certificate=cert,
        size=None if p is None else model.size(p),
    )


def certify_file_or_construction(
    model_file: str | os.PathLike | None,
    layers: int | None,
    n: int,
    alphabet: int,
    samples: int | None = None,
    seed: int = 0,
) -> InductionCertificate:
    """certify_induction of a model file or of the `layers`-layer construction at (n, alphabet); the sizes
    are checked before anything is built or loaded."""
    check_sizes(n, alphabet, layers)
    _check_request(n, alphabet, samples)
    return certify_induction(build_or_load(model_file, layers, n, alphabet), n, alphabet, samples, seed)
