"""Run a model against a task's reference on an input set and certify what it does.

The input set is a callable returning an iterator of (family, tokens) chunks, so exhaustive sets of
millions of sequences are streamed and re-streamed, never held in memory. One certificate is four passes:

1. float64: errors, per-family counts, the first counterexample (this is "checked").
2. fixed:p search: the smallest p with zero errors. Candidate p starts at 1 and rises whenever a chunk
   still has errors at it, so every p below the answer was rejected by a concrete error.
3. certification at that p with the rigorous bounds of headcount.core.bounds: every position's output is
   proven for the real-arithmetic model with the fixed:p rounding points. If some chunk errs at p after
   all (the error count need not be monotone in p), p rises and the pass restarts.
4. IEEE dtypes: which of float16, bfloat16, float32, float64 give zero errors (stops at a type's first error).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from headcount.core.evaluate import Model, certified_predict, predict
from headcount.core.precision import FLOAT64, IEEE_DTYPES, Precision, fixed
from headcount.core.symbols import token_text

InputStream = Callable[[], Iterator[tuple[str, np.ndarray]]]
Reference = Callable[[np.ndarray], np.ndarray]
MAX_BITS = 60


@dataclass
class Certificate:
    inputs_checked: int = 0
    positions_checked: int = 0
    errors: int = 0
    errors_bottom: int = 0
    errors_token: int = 0
    bottom_positions: int = 0
    families: dict[str, int] = field(default_factory=dict)
    first_counterexample: dict[str, Any] | None = None
    precision_bits: int | None = None
    errors_at_precision_bits: int | None = None
    certified: bool = False
    uncertified_positions: int | None = None
    dtypes_exact: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        token_positions = self.positions_checked - self.bottom_positions
        return {
            "inputs_checked": self.inputs_checked,
            "positions_checked": self.positions_checked,
            "errors": self.errors,
            "errors_bottom": self.errors_bottom,
            "errors_token": self.errors_token,
            "accuracy": 1.0 if token_positions == 0 else (token_positions - self.errors_token) / token_positions,
            "accuracy_bottom": 1.0 if self.bottom_positions == 0 else (self.bottom_positions - self.errors_bottom) / self.bottom_positions,
            "families": self.families,
            "first_counterexample": self.first_counterexample,
            "precision_bits": self.precision_bits,
            "errors_at_precision_bits": self.errors_at_precision_bits,
            "certified": self.certified,
            "uncertified_positions": self.uncertified_positions,
            "dtypes_exact": self.dtypes_exact,
            "float32_exact": "float32" in self.dtypes_exact,
            "bfloat16_exact": "bfloat16" in self.dtypes_exact,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }


def _counterexample(tokens: np.ndarray, target: np.ndarray, got: np.ndarray, family: str) -> dict[str, Any]:
    row, pos = map(int, np.argwhere(target != got)[0])
    return {
        "family": family,
        "input": [int(t) for t in tokens[row]],
        "position": pos + 1,
        "expected": token_text(target[row, pos]),
        "model_output": token_text(got[row, pos]),
    }


def _progress(label: str, done: int) -> None:
    if sys.stderr.isatty():
        print(f"\r{label}: {done} inputs", end="", file=sys.stderr, flush=True)


def minimal_precision_bits(model: Model, tokens: np.ndarray, target: np.ndarray, start: int = 1) -> int | None:
    """Smallest p ≥ start at which the fixed:p model reproduces `target` on `tokens` (None if p > 60)."""
    p = start
    while p <= MAX_BITS and np.any(predict(model, tokens, fixed(p)) != target):
        p += 1
    return p if p <= MAX_BITS else None


def certify_model(model: Model, inputs: InputStream, reference: Reference, *, dtypes: bool = True) -> Certificate:
    """The four passes of the module docstring; see Certificate for what is reported."""
    cert = Certificate()
    clock = time.perf_counter()
    candidate = 1
    for family, tokens in inputs():
        target = reference(tokens)
        got = predict(model, tokens, FLOAT64)
        wrong = got != target
        bottom = target < 0
        cert.inputs_checked += len(tokens)
        cert.positions_checked += tokens.size
        cert.bottom_positions += int(bottom.sum())
        cert.errors += int(wrong.sum())
        cert.errors_bottom += int((wrong & bottom).sum())
        cert.errors_token += int((wrong & ~bottom).sum())
        cert.families[family] = cert.families.get(family, 0) + len(tokens)
        if cert.first_counterexample is None and wrong.any():
            cert.first_counterexample = _counterexample(tokens, target, got, family)
        candidate = minimal_precision_bits(model, tokens, target, candidate) or MAX_BITS + 1
        _progress("float64 + precision search", cert.inputs_checked)
    cert.seconds["float64_and_search"] = time.perf_counter() - clock

    clock = time.perf_counter()
    while candidate <= MAX_BITS:
        uncertified = 0
        for _, tokens in inputs():
            target = reference(tokens)
            got, proven = certified_predict(model, tokens, fixed(candidate))
            if np.any(got != target):
                break
            uncertified += int((~proven).sum())
        else:
            cert.precision_bits = candidate
            cert.errors_at_precision_bits = 0
            cert.uncertified_positions = uncertified
            cert.certified = uncertified == 0 and cert.errors == 0
            break
        candidate += 1
    cert.seconds["certify_at_precision_bits"] = time.perf_counter() - clock

    if dtypes:
        clock = time.perf_counter()
        cert.dtypes_exact = [name for name in IEEE_DTYPES if _exact_in(model, inputs, reference, Precision(name))]
        cert.seconds["dtypes"] = time.perf_counter() - clock
    if sys.stderr.isatty():
        print(file=sys.stderr)
    return cert


def _exact_in(model: Model, inputs: InputStream, reference: Reference, prec: Precision) -> bool:
    with np.errstate(all="ignore"):  # float16 overflow is that type's behaviour, not a failure here
        return all(not np.any(predict(model, tokens, prec) != reference(tokens)) for _, tokens in inputs())
