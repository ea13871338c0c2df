"""One input's answers: the reference solver's (`solve`) or a model's in a precision mode
(`predict_input`).

Both check their input the way the command line needs (InputError naming the parameter:
common.errors.param), so the Python API refuses the same things with the same words. A prediction's
model is a Model or where one comes from (induction/source.py's ModelSource: a model file or a
construction).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.common.errors import InputError, param
from headcount.common.resources import check_memory, check_work
from headcount.core.certify import Model, WorkBudget, fixed_predict, predict
from headcount.core.model import token_text
from headcount.core.numbers import parse_precision
from headcount.induction.construction import evaluation_bytes, evaluation_work
from headcount.induction.source import ModelSource
from headcount.induction.task import induction_targets

# The input (`input`: the tokens of solve and predict) holds at most this many tokens. solve runs in
# O(n log n) (about a second at 200,000 tokens) and this many tokens are already ~20 MB of text;
# predict is bounded far below by its own work and memory.
MAX_INPUT_TOKENS = 10_000_000
# Tokens are int64 (0..2^63 − 1): only equality matters to the task, and models index their
# embedding.
MAX_TOKEN = 2**63 - 1
# Memory solve takes per input token: the int64 arrays of the solver (tokens, transposed, find, hop
# positions, gathers, output), the Python ints of the parsed text and of the result.
SOLVE_BYTES_PER_TOKEN = 256
# predict: at most this many score entries (heads · n²) for its one input. The float64 pass takes
# about a minute at the limit (two-layer construction, n ≈ 6,700); fixed:p may add exact evaluation
# of open positions.
PREDICT_MAX_WORK = 2**27


@dataclass(frozen=True)
class Solution:
    """The reference answer of the `hops`-hop task at every position of `input` (BOTTOM where
    none)."""

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
    """A model's output at every position of `input`, evaluated in `precision` (its name).
    `undecided`: the 1-based positions whose fixed:p output neither the bounds nor the exact
    evaluator proved (only a model with GPT-2 parts has any: its output there is the bounds' best
    guess); in the JSON when any."""

    input: tuple[int, ...]
    precision: str
    outputs: tuple[int, ...]
    undecided: tuple[int, ...] = ()

    @property
    def outputs_text(self) -> list[str]:
        return [token_text(t) for t in self.outputs]

    def to_json(self) -> dict[str, Any]:
        out = {"input": list(self.input), "precision": self.precision, "outputs": self.outputs_text}
        return out | ({"undecided": list(self.undecided)} if self.undecided else {})


_PLAIN_TOKENS = re.compile(r"[0-9,\s]*")


def tokens_from_text(text: str) -> np.ndarray:
    """The input text as int64 tokens: integers 0..MAX_TOKEN separated by spaces or commas, at most
    MAX_INPUT_TOKENS of them (InputError naming the parameter `input` otherwise)."""
    parts = str(text).replace(",", " ").split()
    input_ = param("input")
    if not parts:
        raise InputError(
            f'{input_} is empty: give tokens as integers separated by spaces, e.g. {input_} "3 0 '
            '2 3"'
        )
    if len(parts) > MAX_INPUT_TOKENS:
        raise InputError(f"{input_} has {len(parts)} tokens: allowed up to {MAX_INPUT_TOKENS}")
    if (
        _PLAIN_TOKENS.fullmatch(text) and max(map(len, parts)) <= 18
    ):  # the usual case, fast: < 10^18
        return np.array(list(map(int, parts)), dtype=np.int64)
    values = []
    for part in parts:
        digits = part[1:] if part[:1] in "+-" else part
        if not (digits.isascii() and digits.isdigit()):
            raise InputError(
                f"{input_} has a non-integer token {part[:40]!r}: "
                "tokens are integers 0..S-1 separated by spaces"
            )
        if part.startswith("-") and digits.strip("0"):
            raise InputError(f"{input_} has a negative token: tokens are integers 0..S-1")
        if len(digits.lstrip("0")) > 19 or int(digits) > MAX_TOKEN:
            shown = part if len(part) <= 40 else part[:40] + "…"
            raise InputError(f"{input_} token {shown} is too large: tokens are integers 0..2^63-1")
        values.append(int(digits))
    return np.array(values, dtype=np.int64)


def solve(tokens: np.ndarray, hops: int = 1) -> Solution:
    """The reference answer on one input (1-D tokens). Any hops ≥ 0 (0: the input itself, the
    k-hop paper's hop-0 task); beyond the input's length it answers like hops = n
    (task.effective_hops), at once."""
    if isinstance(hops, bool) or not isinstance(hops, (int, np.integer)):
        raise InputError(f"{param('hops')} must be an integer, got {hops!r}")
    if hops < 0:
        raise InputError(f"{param('hops')} {hops} must be ≥ 0")
    check_memory(
        SOLVE_BYTES_PER_TOKEN * float(np.size(tokens)),
        f"induction solve on {np.size(tokens)} tokens",
    )
    outputs = induction_targets(tokens, hops)
    return Solution(tuple(int(t) for t in tokens), hops, tuple(int(t) for t in outputs))


def predict_input(
    tokens: np.ndarray,
    source: ModelSource | Model,
    precision: str = "float64",
    n: int | None = None,
    alphabet: int | None = None,
) -> Prediction:
    """The outputs on one input (1-D tokens) of a model, or of the model `source` names: a model
    file, or a construction at (n, alphabet), n defaulting to the input's length (its sizes and this
    prediction's resources checked before it is built). The tokens must fit the model's context and
    alphabet."""
    prec = parse_precision(precision)
    model = source
    if isinstance(source, ModelSource):
        if source.layers is not None and n is None:
            n = len(tokens)
        shape = source.check(
            n, alphabet
        )  # the construction's shape, before it is built; None for a file
        if shape is not None:
            check_predict_resources(len(tokens), shape.heads, shape.d_model)
        model = source.load(n, alphabet)
    if len(tokens) > model.n_ctx:
        raise InputError(
            f"{param('input')} has {len(tokens)} tokens but the model's context length is "
            f"{model.n_ctx}"
        )
    if tokens.max() >= model.alphabet:
        raise InputError(
            f"{param('input')} token {int(tokens.max())} is outside the model's alphabet "
            f"0..{model.alphabet - 1}"
        )
    check_predict_resources(len(tokens), sum(model.heads_per_layer), model.d_model)
    undecided: tuple[int, ...] = ()
    with np.errstate(all="ignore"):  # float16 overflow is that mode's behaviour, not a failure
        if prec.kind == "fixed":
            out, decided = fixed_predict(model, tokens, prec.bits, budget=WorkBudget(None))
            outputs, undecided = out[0], tuple(int(i) + 1 for i in np.flatnonzero(~decided[0]))
        else:
            outputs = predict(model, tokens, prec)[0]
    return Prediction(
        tuple(int(t) for t in tokens), prec.name, tuple(int(t) for t in outputs), undecided
    )


def check_predict_resources(n: int, heads: int, d_model: int) -> None:
    """predict's bounds on one input of n tokens: the evaluation's memory within the guard's limit,
    and PREDICT_MAX_WORK score entries."""
    check_memory(evaluation_bytes(n, d_model), f"induction predict on {n} tokens")
    check_work(
        evaluation_work(1, heads, n),
        PREDICT_MAX_WORK,
        f"induction predict on {n} tokens ({heads} heads)",
        "score entries (heads · n²)",
        f"the number of {param('input')} tokens",
    )
