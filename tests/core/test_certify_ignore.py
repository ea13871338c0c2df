"""core.certify.certify's IGNORE target (issue 14, point 6): a position the reference does not score
is skipped by every pass — not counted, never a counterexample or a rejection, never open, never
sent to the exact evaluator — and a reference without IGNORE certifies exactly as before."""

from __future__ import annotations

import numpy as np
import pytest

from headcount.core.certify import certify as core_certify
from headcount.core.certify import evaluate as core_evaluate
from headcount.core.certify.certify import (
    IGNORE,
    certify_model,
    confirmed_error,
    minimal_precision_bits,
)
from headcount.core.model.symbols import BOTTOM, OTHER
from headcount.core.numbers.precision import IEEE_DTYPES
from headcount.induction import task
from headcount.induction.construction import two_layer_induction

N, S = 6, 3
MODEL = two_layer_induction(N, S)
TOKENS = task.all_sequences(N, S)
TRUTH = task.induction_targets(TOKENS)


def stream(tokens: np.ndarray = TOKENS, chunk: int = 200):
    def inputs():
        for start in range(0, len(tokens), chunk):
            yield "all", tokens[start : start + chunk]

    return inputs


def reference(column_zero: int | None, truth_at=TRUTH, tokens: np.ndarray = TOKENS):
    """The true answers, with column 0 replaced by `column_zero` (None: left as it is)."""
    by_input = {tuple(row): target for row, target in zip(tokens.tolist(), truth_at)}

    def answer(chunk: np.ndarray) -> np.ndarray:
        out = np.array([by_input[tuple(row)] for row in chunk.tolist()])
        if column_zero is not None:
            out[:, 0] = column_zero
        return out

    return answer


def test_ignore_is_distinct_from_every_label():
    assert IGNORE not in (BOTTOM, OTHER) and IGNORE < 0


@pytest.fixture(scope="module")
def certificates():
    return {
        "truth": certify_model(MODEL, stream(), reference(None)),
        "wrong": certify_model(
            MODEL, stream(), reference(0)
        ),  # column 0 is always ⊥: 0 is wrong there
        "ignored": certify_model(MODEL, stream(), reference(IGNORE)),
    }


def test_a_wrong_reference_at_column_zero_is_seen(certificates):
    wrong = certificates[
        "wrong"
    ]  # the reference says 0 at column 0, where the model (rightly) says ⊥
    assert (wrong.errors, wrong.errors_token, wrong.errors_bottom) == (len(TOKENS), len(TOKENS), 0)
    assert wrong.first_counterexample.position == 1 and not wrong.certified
    assert wrong.dtypes_exact == ()


def test_ignored_positions_are_not_counted(certificates):
    truth, ignored = certificates["truth"], certificates["ignored"]
    assert ignored.inputs_checked == truth.inputs_checked == len(TOKENS)
    assert (
        ignored.positions_checked == truth.positions_checked - len(TOKENS) == len(TOKENS) * (N - 1)
    )
    assert ignored.bottom_positions == truth.bottom_positions - len(
        TOKENS
    )  # column 0 is ⊥ in the truth
    assert (ignored.errors, ignored.first_counterexample) == (0, None)
    assert (
        ignored.certified
        and ignored.uncertified_positions == 0
        and ignored.errors_at_precision_bits == 0
    )
    assert ignored.dtypes_exact == truth.dtypes_exact
    assert all(r.position >= 2 for r in ignored.rejected)
    target = reference(IGNORE)(TOKENS)
    assert ignored.precision_bits == minimal_precision_bits(MODEL, TOKENS, target)
    assert ignored.precision_bits <= truth.precision_bits


def test_without_ignore_nothing_changes(certificates):
    truth = certificates["truth"].to_json()
    again = certify_model(MODEL, stream(chunk=729), reference(None)).to_json()
    truth.pop("seconds"), again.pop("seconds")
    assert again == truth and truth["positions_checked"] == TOKENS.size


def test_everything_ignored():
    cert = certify_model(MODEL, stream(), reference(IGNORE, np.full_like(TRUTH, IGNORE)))
    assert (cert.positions_checked, cert.errors, cert.bottom_positions) == (0, 0, 0)
    assert (cert.precision_bits, cert.rejected, cert.certified, cert.uncertified_positions) == (
        1,
        (),
        True,
        0,
    )
    assert cert.dtypes_exact == IEEE_DTYPES
    assert (cert.accuracy, cert.accuracy_bottom) == (1.0, 1.0)


def test_the_search_never_rejects_at_an_ignored_position():
    wrong_everywhere = np.where(
        TRUTH == 0, 1, 0
    )  # a token the model never answers at that position
    assert confirmed_error(MODEL, TOKENS, wrong_everywhere, 1) is not None
    ignored = np.full_like(TRUTH, IGNORE)
    assert confirmed_error(MODEL, TOKENS, ignored, 1) is None
    assert minimal_precision_bits(MODEL, TOKENS, ignored) == 1
    partly = TRUTH.copy()
    partly[:, :3] = IGNORE
    found = confirmed_error(MODEL, TOKENS, np.where(partly >= 0, 99, partly), 1)
    assert found is not None and found.position == 4 and found.expected == "99"


def test_the_exact_evaluator_never_sees_an_ignored_position(monkeypatch):
    """With the bounds proving nothing, every scored position goes to the exact evaluator, never
    column 0."""
    seen: list[list[int]] = []
    exact = core_evaluate.exact_fixed_predict

    def recording(model, tokens, bits, positions):
        seen.append(list(positions))
        return exact(model, tokens, bits, positions=positions)

    def nothing_proven(model, tokens, prec):
        out, proven = core_evaluate.certified_predict(model, tokens, prec)
        return out, np.zeros_like(proven)

    monkeypatch.setattr(core_evaluate, "exact_fixed_predict", recording)
    monkeypatch.setattr(core_certify, "certified_predict", nothing_proven)
    tokens = task.all_sequences(4, 2)
    model = two_layer_induction(4, 2)
    target = task.induction_targets(tokens)
    target[:, 0] = IGNORE
    inputs = lambda: iter([("all", tokens)])  # noqa: E731
    cert = certify_model(model, inputs, lambda chunk: target, dtypes=False)
    assert seen and all(0 not in positions for positions in seen)
    assert cert.certified and cert.exact_positions == tokens.size - len(tokens)
    assert cert.positions_checked == tokens.size - len(tokens)
