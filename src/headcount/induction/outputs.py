"""One input's answers: the reference solver's (`solve`) or a model's in a precision mode (`predict_input`).

Both check their input the way the command line needs (InputError naming the option), so the Python API
refuses the same things with the same words.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.core.errors import InputError
from headcount.core.evaluate import predict
from headcount.core.precision import parse_precision
from headcount.core.symbols import token_text
from headcount.induction.construction import build_or_load
from headcount.induction.task import induction_targets


@dataclass(frozen=True)
class Solution:
    """The reference answer of the `hops`-hop task at every position of `input` (BOTTOM where none)."""

    input: tuple[int, ...]
    hops: int
    outputs: tuple[int, ...]

    @property
    def outputs_text(self) -> list[str]:
        return [token_text(t) for t in self.outputs]

    def to_json(self) -> dict[str, Any]:
        return {"input": list(self.input), "hops": self.hops, "outputs": self.outputs_text}


@dataclass(frozen=True)
class Prediction:
    """A model's output at every position of `input`, evaluated in `precision` (its name)."""

    input: tuple[int, ...]
    precision: str
    outputs: tuple[int, ...]

    @property
    def outputs_text(self) -> list[str]:
        return [token_text(t) for t in self.outputs]

    def to_json(self) -> dict[str, Any]:
        return {"input": list(self.input), "precision": self.precision, "outputs": self.outputs_text}


def solve(tokens: np.ndarray, hops: int = 1) -> Solution:
    """The reference answer on one input (1-D tokens)."""
    if hops < 1:
        raise InputError(f"--hops {hops} must be ≥ 1")
    outputs = induction_targets(tokens, hops)
    return Solution(tuple(int(t) for t in tokens), hops, tuple(int(t) for t in outputs))


def predict_input(
    tokens: np.ndarray,
    precision: str = "float64",
    model_file: str | os.PathLike | None = None,
    layers: int | None = None,
    n: int | None = None,
    alphabet: int | None = None,
) -> Prediction:
    """The outputs on one input (1-D tokens) of a model file or of the `layers`-layer construction at
    (n, alphabet); n defaults to the input's length. The tokens must fit the model's context and alphabet."""
    prec = parse_precision(precision)
    if layers is not None and n is None:
        n = len(tokens)
    model = build_or_load(model_file, layers, n, alphabet)
    if len(tokens) > model.n_ctx:
        raise InputError(f"--input has {len(tokens)} tokens but the model's context length is {model.n_ctx}")
    if tokens.max() >= model.alphabet:
        raise InputError(
            f"--input token {int(tokens.max())} is outside the model's alphabet 0..{model.alphabet - 1}"
        )
    with np.errstate(all="ignore"):  # float16 overflow is that mode's behaviour, not a failure
        outputs = predict(model, tokens, prec)[0]
    return Prediction(tuple(int(t) for t in tokens), prec.name, tuple(int(t) for t in outputs))
