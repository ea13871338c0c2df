"""Run a model against a task's reference on an input set and certify what it does.

The input set is a callable returning an iterator of (family, tokens) chunks, so exhaustive sets of
millions of sequences are streamed and re-streamed, never held in memory. One certificate is four passes:

1. float64: errors, per-family counts, the first counterexample (this is "checked").
2. fixed:p search: the smallest p with no *confirmed* error. Candidate p starts at 1; the fast float64
   emulation of fixed:p points at inputs that may be wrong, and p is rejected only when the exact fixed:p
   model (rigorous bounds, else the exact evaluator of headcount.core.exact) is proven wrong on one of
   them. Every rejected p is reported with that input (``rejected``: {p, family, input, position,
   expected, got}; for a causal model the input is the prefix up to the wrong position).
3. certification at that p: every position's output of the exact fixed:p model is proven — by the
   rigorous bounds of headcount.core.bounds, or, where they leave it open, by the exact evaluator (within
   a work limit). A position proven wrong rejects p (reported too) and the pass restarts at p + 1 (the
   error count need not be monotone in p); positions left open are counted as ``uncertified_positions``.
4. IEEE dtypes: which of float16, bfloat16, float32, float64 give zero errors (stops at a type's first error).

So `precision_bits` is the smallest p not rejected by a proven error; with `certified` true, the exact
fixed:p model is proven right on every input checked at that p.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from headcount.core.evaluate import Model, WorkBudget, certified_predict, emulate, fixed_predict
from headcount.core.precision import FLOAT64, IEEE_DTYPES, Precision, fixed
from headcount.core.symbols import token_text

InputStream = Callable[[], Iterator[tuple[str, np.ndarray]]]
Reference = Callable[[np.ndarray], np.ndarray]
MAX_BITS = 60
CONFIRM_ROWS = 16  # inputs of a chunk the search tries to confirm an emulated error on, per p


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
    rejected: list[dict[str, Any]] = field(default_factory=list)
    errors_at_precision_bits: int | None = None
    exact_positions: int = 0
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
            "accuracy": 1.0
            if token_positions == 0
            else (token_positions - self.errors_token) / token_positions,
            "accuracy_bottom": 1.0
            if self.bottom_positions == 0
            else (self.bottom_positions - self.errors_bottom) / self.bottom_positions,
            "families": self.families,
            "first_counterexample": self.first_counterexample,
            "precision_bits": self.precision_bits,
            "rejected": self.rejected,
            "errors_at_precision_bits": self.errors_at_precision_bits,
            "certified": self.certified,
            "uncertified_positions": self.uncertified_positions,
            "exact_positions": self.exact_positions,
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


def _wrong_record(
    p: int, tokens: np.ndarray, target: np.ndarray, got: np.ndarray, wrong: np.ndarray, family: str | None
) -> dict[str, Any]:
    row, pos = map(int, np.argwhere(wrong)[0])
    return {
        "p": p,
        "family": family,
        "input": [int(t) for t in tokens[row]],
        "position": pos + 1,
        "expected": token_text(target[row, pos]),
        "got": token_text(got[row, pos]),
    }


def confirmed_error(
    model: Model, tokens: np.ndarray, target: np.ndarray, p: int, family: str | None = None
) -> dict[str, Any] | None:
    """An input on which the exact fixed:p model is proven wrong, among those whose float64 emulation is
    wrong (at most CONFIRM_ROWS of them, earliest first error first); None if none is proven (the
    emulation's errors were its own). A causal model's output at position i depends on the first i tokens
    only, so each suspect is confirmed on its prefix up to its first emulated error — cheap at any n — and
    that prefix is the input reported (the full input errs at the same position)."""
    wrong = emulate(model, tokens, fixed(p)) != target
    suspects = np.flatnonzero(wrong.any(axis=1))
    if suspects.size == 0:
        return None
    first = wrong[suspects].argmax(axis=1)
    for row, position in zip(
        suspects[np.argsort(first, kind="stable")][:CONFIRM_ROWS], np.sort(first, kind="stable")
    ):
        end = tokens.shape[1] if model.mask == "full" else int(position) + 1
        prefix, expected = tokens[row : row + 1, :end], target[row : row + 1, :end]
        got, decided = fixed_predict(model, prefix, p)
        proven_wrong = decided & (got != expected)
        if proven_wrong.any():
            return _wrong_record(p, prefix, expected, got, proven_wrong, family)
    return None


def minimal_precision_bits(
    model: Model, tokens: np.ndarray, target: np.ndarray, start: int = 1
) -> int | None:
    """Smallest p ≥ start at which the exact fixed:p model reproduces `target` on `tokens` (None if p > 60).
    A p is passed over as soon as an error is proven (cheaply, by confirmed_error or the bounds); the
    exact evaluator runs without a work limit only at a p where nothing is proven wrong: small input sets."""
    for p in range(start, MAX_BITS + 1):
        if confirmed_error(model, tokens, target, p) is not None:
            continue
        got, proven = certified_predict(model, tokens, fixed(p))
        if np.any(proven & (got != target)):
            continue
        got, decided = fixed_predict(model, tokens, p, budget=WorkBudget(None), proven_in=(got, proven))
        if decided.all() and np.array_equal(got, target):
            return p
    return None


def _search_pass(model: Model, inputs: InputStream, reference: Reference, cert: Certificate) -> int:
    """Passes 1 and 2 of the module docstring; returns the candidate p (MAX_BITS + 1 if none is left)."""
    candidate = 1
    for family, tokens in inputs():
        target = reference(tokens)
        got = emulate(model, tokens, FLOAT64)
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
        while candidate <= MAX_BITS and (found := confirmed_error(model, tokens, target, candidate, family)):
            cert.rejected.append(found)
            candidate += 1
        _progress("float64 + precision search", cert.inputs_checked)
    return candidate


def _certify_pass(model: Model, inputs: InputStream, reference: Reference, cert: Certificate, p: int) -> bool:
    """Pass 3 at p: True when no position is proven wrong (counts filled in), False after recording the
    proven error that rejects p."""
    uncertified = exact = 0
    budget = WorkBudget()
    for family, tokens in inputs():
        target = reference(tokens)
        got, proven = certified_predict(model, tokens, fixed(p))
        wrong = proven & (got != target)
        if not wrong.any() and (~proven).any():  # open positions: the exact evaluator decides them
            open_rows = np.flatnonzero(~proven.all(axis=1))
            before = int((~proven[open_rows]).sum())
            sub, sub_proven = fixed_predict(
                model, tokens[open_rows], p, budget=budget, proven_in=(got[open_rows], proven[open_rows])
            )
            got[open_rows], proven[open_rows] = sub, sub_proven
            exact += before - int((~sub_proven).sum())
            wrong = proven & (got != target)
        if wrong.any():
            cert.rejected.append(_wrong_record(p, tokens, target, got, wrong, family))
            return False
        uncertified += int((~proven).sum())
    cert.precision_bits = p
    cert.errors_at_precision_bits = 0
    cert.uncertified_positions = uncertified
    cert.exact_positions = exact
    cert.certified = uncertified == 0 and cert.errors == 0
    return True


def certify_model(
    model: Model, inputs: InputStream, reference: Reference, *, dtypes: bool = True
) -> Certificate:
    """The four passes of the module docstring; see Certificate for what is reported."""
    cert = Certificate()
    clock = time.perf_counter()
    candidate = _search_pass(model, inputs, reference, cert)
    cert.seconds["float64_and_search"] = time.perf_counter() - clock

    clock = time.perf_counter()
    while candidate <= MAX_BITS and not _certify_pass(model, inputs, reference, cert, candidate):
        candidate += 1
    cert.seconds["certify_at_precision_bits"] = time.perf_counter() - clock

    if dtypes:
        clock = time.perf_counter()
        cert.dtypes_exact = [
            name for name in IEEE_DTYPES if _exact_in(model, inputs, reference, Precision(name))
        ]
        cert.seconds["dtypes"] = time.perf_counter() - clock
    if sys.stderr.isatty():
        print(file=sys.stderr)
    return cert


def _exact_in(model: Model, inputs: InputStream, reference: Reference, prec: Precision) -> bool:
    with np.errstate(all="ignore"):  # float16 overflow is that type's behaviour, not a failure here
        return all(not np.any(emulate(model, tokens, prec) != reference(tokens)) for _, tokens in inputs())
