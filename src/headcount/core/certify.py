"""Run a model against a task's reference on an input set and certify what it does.

The input set is a callable returning an iterator of (family, tokens) chunks, so exhaustive sets of
millions of sequences are streamed and re-streamed, never held in memory. One certificate is four passes:

1. float64: errors, per-family counts, the first counterexample (this is "checked").
2. fixed:p search: the smallest p with no *confirmed* error. Candidate p starts at 1; the fast float64
   emulation of fixed:p points at inputs that may be wrong, and p is rejected only when the exact fixed:p
   model (rigorous bounds, else the exact evaluator of headcount.core.exact) is proven wrong on one of
   them. Every rejected p is reported with that input (``rejected``: Rejection records of p, family,
   input, position, expected, got; for a causal model the input is the prefix up to the wrong position).
3. certification at that p: every position's output of the exact fixed:p model is proven — by the
   rigorous bounds of headcount.core.bounds, or, where they leave it open, by the exact evaluator (within
   a work limit). A position proven wrong rejects p (reported too) and the pass restarts at p + 1 (the
   error count need not be monotone in p); positions left open are counted as ``uncertified_positions``.
4. IEEE dtypes: which of float16, bfloat16, float32, float64 give zero errors (stops at a type's first error).

So `precision_bits` is the smallest p not rejected by a proven error; with `certified` true, the exact
fixed:p model is proven right on every input checked at that p.

A reference may answer IGNORE at a position that is not scored (the hop-count token of the k-hop layout,
headcount.induction.layouts): every pass skips it — it is not counted in positions_checked or the errors,
never a counterexample or a rejection, never open (not in uncertified_positions), and the exact evaluator
never spends work on it.
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
IGNORE = -3  # a reference's answer at a position not scored (module docstring); BOTTOM is -1, OTHER -2
CONFIRM_ROWS = 16  # inputs of a chunk the search tries to confirm an emulated error on, per p


@dataclass(frozen=True)
class Counterexample:
    """The first input the float64 model answers wrongly: `input` (tokens), the 1-based `position`, the
    reference's answer `expected` and the model's `model_output` (both as printed: a token or ⊥)."""

    family: str
    input: tuple[int, ...]
    position: int
    expected: str
    model_output: str

    def to_json(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "input": list(self.input),
            "position": self.position,
            "expected": self.expected,
            "model_output": self.model_output,
        }


@dataclass(frozen=True)
class Rejection:
    """Why precision p was rejected: the exact fixed:p model is proven to answer `got` instead of `expected`
    at `position` of `input` (for a causal model, the prefix up to that position)."""

    p: int
    family: str | None
    input: tuple[int, ...]
    position: int
    expected: str
    got: str

    def to_json(self) -> dict[str, Any]:
        return {
            "p": self.p,
            "family": self.family,
            "input": list(self.input),
            "position": self.position,
            "expected": self.expected,
            "got": self.got,
        }


@dataclass(frozen=True)
class Certificate:
    """What certify_model found (module docstring): counts of the float64 pass, the precision search and
    its rejections, the proof at `precision_bits`, and the IEEE dtypes with zero errors."""

    inputs_checked: int = 0
    positions_checked: int = 0
    errors: int = 0
    errors_bottom: int = 0
    errors_token: int = 0
    bottom_positions: int = 0
    families: dict[str, int] = field(default_factory=dict)
    first_counterexample: Counterexample | None = None
    precision_bits: int | None = None
    rejected: tuple[Rejection, ...] = ()
    errors_at_precision_bits: int | None = None
    exact_positions: int = 0
    certified: bool = False
    uncertified_positions: int | None = None
    dtypes_exact: tuple[str, ...] = ()
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def accuracy(self) -> float:
        """Share of non-⊥ target positions answered right in float64."""
        token_positions = self.positions_checked - self.bottom_positions
        return 1.0 if token_positions == 0 else (token_positions - self.errors_token) / token_positions

    @property
    def accuracy_bottom(self) -> float:
        """Share of ⊥ target positions answered right in float64."""
        if self.bottom_positions == 0:
            return 1.0
        return (self.bottom_positions - self.errors_bottom) / self.bottom_positions

    def to_json(self) -> dict[str, Any]:
        """The JSON form (derived accuracies and dtype flags included; seconds to the millisecond)."""
        return {
            "inputs_checked": self.inputs_checked,
            "positions_checked": self.positions_checked,
            "errors": self.errors,
            "errors_bottom": self.errors_bottom,
            "errors_token": self.errors_token,
            "accuracy": self.accuracy,
            "accuracy_bottom": self.accuracy_bottom,
            "families": dict(self.families),
            "first_counterexample": None
            if self.first_counterexample is None
            else self.first_counterexample.to_json(),
            "precision_bits": self.precision_bits,
            "rejected": [r.to_json() for r in self.rejected],
            "errors_at_precision_bits": self.errors_at_precision_bits,
            "certified": self.certified,
            "uncertified_positions": self.uncertified_positions,
            "exact_positions": self.exact_positions,
            "dtypes_exact": list(self.dtypes_exact),
            "float32_exact": "float32" in self.dtypes_exact,
            "bfloat16_exact": "bfloat16" in self.dtypes_exact,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }


@dataclass
class _Tally:
    """certify_model's running counts while the passes stream the inputs (frozen into a Certificate)."""

    inputs_checked: int = 0
    positions_checked: int = 0
    errors: int = 0
    errors_bottom: int = 0
    errors_token: int = 0
    bottom_positions: int = 0
    families: dict[str, int] = field(default_factory=dict)
    first_counterexample: Counterexample | None = None
    rejected: list[Rejection] = field(default_factory=list)
    precision_bits: int | None = None  # pass 3's fields, set once a p is not rejected
    errors_at_precision_bits: int | None = None
    uncertified_positions: int | None = None
    exact_positions: int = 0
    certified: bool = False
    dtypes_exact: tuple[str, ...] = ()
    seconds: dict[str, float] = field(default_factory=dict)

    def count(self, family: str, tokens: np.ndarray, target: np.ndarray, got: np.ndarray) -> None:
        """Pass 1 on one chunk: float64 errors, per family, and the first counterexample (IGNORE positions
        are not counted)."""
        scored = target != IGNORE
        got = _settled(target, got)[0]
        wrong = got != target
        bottom = (target < 0) & scored
        self.inputs_checked += len(tokens)
        self.positions_checked += int(scored.sum())
        self.bottom_positions += int(bottom.sum())
        self.errors += int(wrong.sum())
        self.errors_bottom += int((wrong & bottom).sum())
        self.errors_token += int((wrong & ~bottom).sum())
        self.families[family] = self.families.get(family, 0) + len(tokens)
        if self.first_counterexample is None and wrong.any():
            self.first_counterexample = _counterexample(tokens, target, got, family)

    def freeze(self) -> Certificate:
        return Certificate(
            inputs_checked=self.inputs_checked,
            positions_checked=self.positions_checked,
            errors=self.errors,
            errors_bottom=self.errors_bottom,
            errors_token=self.errors_token,
            bottom_positions=self.bottom_positions,
            families=dict(self.families),
            first_counterexample=self.first_counterexample,
            rejected=tuple(self.rejected),
            dtypes_exact=self.dtypes_exact,
            seconds=dict(self.seconds),
            precision_bits=self.precision_bits,
            errors_at_precision_bits=self.errors_at_precision_bits,
            uncertified_positions=self.uncertified_positions,
            exact_positions=self.exact_positions,
            certified=self.certified,
        )


def _settled(
    target: np.ndarray, got: np.ndarray, proven: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """(got, proven) with every IGNORE position of `target` answered as the target and proven: an ignored
    position is never wrong and never open. The arrays themselves when nothing is ignored."""
    ignored = target == IGNORE
    if not ignored.any():
        return got, proven
    return np.where(ignored, target, got), None if proven is None else proven | ignored


def _counterexample(tokens: np.ndarray, target: np.ndarray, got: np.ndarray, family: str) -> Counterexample:
    row, pos = map(int, np.argwhere(target != got)[0])
    return Counterexample(
        family,
        tuple(int(t) for t in tokens[row]),
        pos + 1,
        token_text(target[row, pos]),
        token_text(got[row, pos]),
    )


def _progress(label: str, done: int) -> None:
    if sys.stderr.isatty():
        print(f"\r{label}: {done} inputs", end="", file=sys.stderr, flush=True)


def _rejection(
    p: int, tokens: np.ndarray, target: np.ndarray, got: np.ndarray, wrong: np.ndarray, family: str | None
) -> Rejection:
    row, pos = map(int, np.argwhere(wrong)[0])
    return Rejection(
        p,
        family,
        tuple(int(t) for t in tokens[row]),
        pos + 1,
        token_text(target[row, pos]),
        token_text(got[row, pos]),
    )


def confirmed_error(
    model: Model, tokens: np.ndarray, target: np.ndarray, p: int, family: str | None = None
) -> Rejection | None:
    """An input on which the exact fixed:p model is proven wrong, among those whose float64 emulation is
    wrong (at most CONFIRM_ROWS of them, earliest first error first); None if none is proven (the
    emulation's errors were its own). A causal model's output at position i depends on the first i tokens
    only, so each suspect is confirmed on its prefix up to its first emulated error — cheap at any n — and
    that prefix is the input reported (the full input errs at the same position)."""
    wrong = _settled(target, emulate(model, tokens, fixed(p)))[0] != target
    suspects = np.flatnonzero(wrong.any(axis=1))
    if suspects.size == 0:
        return None
    first = wrong[suspects].argmax(axis=1)
    for row, position in zip(
        suspects[np.argsort(first, kind="stable")][:CONFIRM_ROWS], np.sort(first, kind="stable")
    ):
        end = tokens.shape[1] if model.mask == "full" else int(position) + 1
        prefix, expected = tokens[row : row + 1, :end], target[row : row + 1, :end]
        bounded = _settled(expected, *certified_predict(model, prefix, fixed(p)))
        got, decided = fixed_predict(model, prefix, p, proven_in=bounded)
        proven_wrong = decided & (got != expected)
        if proven_wrong.any():
            return _rejection(p, prefix, expected, got, proven_wrong, family)
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
        got, proven = _settled(target, *certified_predict(model, tokens, fixed(p)))
        if np.any(proven & (got != target)):
            continue
        got, decided = fixed_predict(model, tokens, p, budget=WorkBudget(None), proven_in=(got, proven))
        if decided.all() and np.array_equal(got, target):
            return p
    return None


def _search_pass(model: Model, inputs: InputStream, reference: Reference, tally: _Tally) -> int:
    """Passes 1 and 2 of the module docstring; returns the candidate p (MAX_BITS + 1 if none is left)."""
    candidate = 1
    for family, tokens in inputs():
        target = reference(tokens)
        tally.count(family, tokens, target, emulate(model, tokens, FLOAT64))
        while candidate <= MAX_BITS and (found := confirmed_error(model, tokens, target, candidate, family)):
            tally.rejected.append(found)
            candidate += 1
        _progress("float64 + precision search", tally.inputs_checked)
    return candidate


def _certify_pass(model: Model, inputs: InputStream, reference: Reference, tally: _Tally, p: int) -> bool:
    """Pass 3 at p: True when no position is proven wrong (the proof's fields filled in), False after
    recording the proven error that rejects p."""
    uncertified = exact = 0
    budget = WorkBudget()
    for family, tokens in inputs():
        target = reference(tokens)
        got, proven = _settled(target, *certified_predict(model, tokens, fixed(p)))
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
            tally.rejected.append(_rejection(p, tokens, target, got, wrong, family))
            return False
        uncertified += int((~proven).sum())
    # 0 errors at p is known only where every position is proven; open positions leave it unknown (None)
    tally.precision_bits, tally.errors_at_precision_bits = p, 0 if uncertified == 0 else None
    tally.uncertified_positions, tally.exact_positions = uncertified, exact
    tally.certified = uncertified == 0 and tally.errors == 0
    return True


def certify_model(
    model: Model, inputs: InputStream, reference: Reference, *, dtypes: bool = True
) -> Certificate:
    """The four passes of the module docstring; see Certificate for what is reported."""
    tally = _Tally()
    clock = time.perf_counter()
    candidate = _search_pass(model, inputs, reference, tally)
    tally.seconds["float64_and_search"] = time.perf_counter() - clock

    clock = time.perf_counter()
    while candidate <= MAX_BITS and not _certify_pass(model, inputs, reference, tally, candidate):
        candidate += 1
    tally.seconds["certify_at_precision_bits"] = time.perf_counter() - clock

    if dtypes:
        clock = time.perf_counter()
        tally.dtypes_exact = tuple(
            name for name in IEEE_DTYPES if _exact_in(model, inputs, reference, Precision(name))
        )
        tally.seconds["dtypes"] = time.perf_counter() - clock
    if sys.stderr.isatty():
        print(file=sys.stderr)
    return tally.freeze()


def _exact_in(model: Model, inputs: InputStream, reference: Reference, prec: Precision) -> bool:
    with np.errstate(all="ignore"):  # float16 overflow is that type's behaviour, not a failure here
        for _, tokens in inputs():
            target = reference(tokens)
            if np.any(_settled(target, emulate(model, tokens, prec))[0] != target):
                return False
        return True
