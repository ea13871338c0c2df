"""What certify_model reports, and the running tally it fills while it streams the inputs.

A reference may answer IGNORE at a position that is not scored (the hop-count token of the k-hop
layout, headcount.induction.layouts): such a position is never counted, never wrong and never open
(settled).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from headcount.core.model import token_text

InputStream = Callable[[], Iterator[tuple[str, np.ndarray]]]
Reference = Callable[[np.ndarray], np.ndarray]
MAX_BITS = 60
IGNORE = (
    -3
)  # a reference's answer at a position not scored (module docstring); BOTTOM is -1, OTHER -2


@dataclass(frozen=True)
class Counterexample:
    """The first input the float64 model answers wrongly: `input` (tokens), the 1-based `position`,
    the reference's answer `expected` and the model's `model_output` (both as printed: a token or
    ⊥)."""

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
    """Why precision p was rejected: the exact fixed:p model is proven to answer `got` instead of
    `expected` at `position` of `input` (for a causal model, the prefix up to that position)."""

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
    """What certify_model found (module docstring): counts of the float64 pass, the precision search
    and its rejections, the proof at `precision_bits`, and the IEEE dtypes with zero errors.

    Two separate verdicts, and one rule that joins them (`certified`, checked here and nowhere
    else):

    * `errors` — the float64 model's errors on the inputs checked (a float64 evaluation: "checked");
    * `proven_at_precision_bits` — the exact fixed:p model, p = precision_bits, is proven right at
      every position of the inputs checked (rigorous bounds or the exact evaluator; no position left
      open);
    * `certified` = proven_at_precision_bits and errors == 0: the model is right on the inputs
      checked both as the seed's fixed:p model (proven) and as the float64 model it is run as."""

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
    proven_at_precision_bits: bool = False
    uncertified_positions: int | None = None
    dtypes_exact: tuple[str, ...] = ()
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def certified(self) -> bool:
        """The class docstring's rule: proven at precision_bits, and no float64 error."""
        return self.proven_at_precision_bits and self.errors == 0

    @property
    def accuracy(self) -> float:
        """Share of non-⊥ target positions answered right in float64."""
        token_positions = self.positions_checked - self.bottom_positions
        return (
            1.0 if token_positions == 0 else (token_positions - self.errors_token) / token_positions
        )

    @property
    def accuracy_bottom(self) -> float:
        """Share of ⊥ target positions answered right in float64."""
        if self.bottom_positions == 0:
            return 1.0
        return (self.bottom_positions - self.errors_bottom) / self.bottom_positions

    def to_json(self) -> dict[str, Any]:
        """The JSON form (derived accuracies and dtype flags included; seconds to the
        millisecond)."""
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
            "proven_at_precision_bits": self.proven_at_precision_bits,
            "certified": self.certified,
            "uncertified_positions": self.uncertified_positions,
            "exact_positions": self.exact_positions,
            "dtypes_exact": list(self.dtypes_exact),
            "float32_exact": "float32" in self.dtypes_exact,
            "bfloat16_exact": "bfloat16" in self.dtypes_exact,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }


@dataclass
class Tally:
    """certify_model's running counts while the passes stream the inputs (frozen into a
    Certificate)."""

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
    proven_at_precision_bits: bool = False
    dtypes_exact: tuple[str, ...] = ()
    seconds: dict[str, float] = field(default_factory=dict)

    def count(self, family: str, tokens: np.ndarray, target: np.ndarray, got: np.ndarray) -> None:
        """Pass 1 on one chunk: float64 errors, per family, and the first counterexample (IGNORE
        positions are not counted)."""
        scored = target != IGNORE
        got = settled(target, got)[0]
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

    def add(self, other: Tally) -> None:
        """Pass 1's counts of `other`, a tally of the chunks streamed after this one's (its first
        counterexample counts only when this one has none); the same as counting its chunks here."""
        for name in ("inputs_checked", "positions_checked", "bottom_positions", "errors"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.errors_bottom += other.errors_bottom
        self.errors_token += other.errors_token
        for family, count in other.families.items():
            self.families[family] = self.families.get(family, 0) + count
        if self.first_counterexample is None:
            self.first_counterexample = other.first_counterexample

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
            proven_at_precision_bits=self.proven_at_precision_bits,
        )


def settled(
    target: np.ndarray, got: np.ndarray, proven: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """(got, proven) with every IGNORE position of `target` answered as the target and proven: an
    ignored position is never wrong and never open. The arrays themselves when nothing is
    ignored."""
    ignored = target == IGNORE
    if not ignored.any():
        return got, proven
    return np.where(ignored, target, got), None if proven is None else proven | ignored


def _counterexample(
    tokens: np.ndarray, target: np.ndarray, got: np.ndarray, family: str
) -> Counterexample:
    row, pos = map(int, np.argwhere(target != got)[0])
    return Counterexample(
        family,
        tuple(int(t) for t in tokens[row]),
        pos + 1,
        token_text(target[row, pos]),
        token_text(got[row, pos]),
    )


def rejection(
    p: int,
    tokens: np.ndarray,
    target: np.ndarray,
    got: np.ndarray,
    wrong: np.ndarray,
    family: str | None,
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
