"""Minimal one-layer induction models (headcount.induction.lower_bound.minimal): the packed readout
against the plain construction and the task, every smaller member's wrong input re-run here, the
INDEX bound's arithmetic against brute force, and bad input refused in one line."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.core.certify.evaluate import predict
from headcount.core.numbers import fixed
from headcount.induction.certification import certify_induction
from headcount.induction.construction import one_layer_induction
from headcount.induction.lower_bound.minimal import (
    INDEX_C,
    index_min_size,
    minimal_one_layer,
    packed_one_layer_induction,
)
from headcount.induction.readout import PackedInductionReadout
from headcount.induction.task import all_sequences, induction_targets


@pytest.mark.parametrize("n, S", [(5, 2), (6, 3), (7, 3)])
def test_every_packed_member_answers_the_task_in_float64(n, S):
    tokens = all_sequences(n, S)
    target = induction_targets(tokens)
    plain = predict(one_layer_induction(n, S), tokens)
    assert np.array_equal(plain, target)
    for slots, offset in itertools.product(range(1, n + 1), (0, 1)):
        got = predict(packed_one_layer_induction(n, S, slots, offset), tokens)
        assert np.array_equal(got, target), (slots, offset)


def test_a_miscoded_readout_is_not_certified():
    """The same values read in the wrong base: certify must reject it, not certify it."""
    model = packed_one_layer_induction(5, 3, 1, 0)
    wrong = PackedInductionReadout(5, 1, 4, 0)  # values are base 3
    bad = type(model)(*(getattr(model, f) for f in ("embed", "Q", "K", "V")), wrong, "causal", {})
    cert = certify_induction(bad, 5, 3, exhaustive=True, dtypes=False).certificate
    assert not cert.certified and cert.errors > 0


def test_the_minimal_member_and_every_smaller_members_wrong_input():
    r = minimal_one_layer(7, 3)
    assert r.verdict == "minimal in the family" and not r.uncovered
    best = r.minimal
    assert (best.slots, best.offset, best.size) == (1, 0, 11)
    smaller = {(m.slots, m.offset, p) for m in r.members for p in range(1, 12) if m.slots * p < 11}
    assert {(x.slots, x.offset, x.p) for x in r.refuted} == smaller
    for x in r.refuted:
        model = packed_one_layer_induction(7, 3, x.slots, x.offset)
        tokens = np.array([x.input])
        got = predict(model, tokens, fixed(x.p))[0, x.position - 1]
        assert got != induction_targets(tokens)[0, x.position - 1]  # re-run here: wrong
    cert = certify_induction(
        packed_one_layer_induction(7, 3, 1, 0), 7, 3, exhaustive=True, dtypes=False
    ).certificate
    assert cert.certified and cert.precision_bits == 11
    index = [x.index for x in r.refuted]
    assert all(i is not None for i in index) and sum(bool(i.get("found")) for i in index) >= 40
    record = r.to_json()
    assert record["index_bound"] == {
        "k": 3, "C": INDEX_C, "size_at_least": 3 / 13, "message_min_size": 1
    }  # fmt: skip


def test_index_min_size_matches_brute_force():
    for k in range(1, 80):
        brute = min(
            m * p for m in range(1, 40) for p in range(1, 40) if m * (4 * p + 2) + 5 * p + 2 >= k
        )
        assert index_min_size(k) == brute
        assert k / INDEX_C <= brute  # the C = 13 form is the weaker statement


def test_bad_input_is_refused():
    with pytest.raises(InputError, match="n must be ≤ 16"):
        minimal_one_layer(17, 2)
    with pytest.raises(InputError, match="allowed up to 200,000"):
        minimal_one_layer(12, 3)
    with pytest.raises(InputError, match="alphabet must be ≥ 2"):
        minimal_one_layer(4, 1)
    with pytest.raises(InputError, match="exceeds 2"):
        PackedInductionReadout(60, 1, 16, 0)
    with pytest.raises(InputError, match="slots must be"):
        PackedInductionReadout.from_parts({}, {"n_ctx": 4, "slots": "2", "base": 3, "offset": 0})


def test_a_packed_model_round_trips_through_its_file(tmp_path):
    from headcount.core.model import load_model, save_model

    model = packed_one_layer_induction(5, 3, 2, 0)
    save_model(model, tmp_path / "m.safetensors")
    back = load_model(tmp_path / "m.safetensors")
    assert back.decoder.config() == {"n_ctx": 5, "slots": 2, "base": 3, "offset": 0}
    tokens = all_sequences(5, 3)
    assert np.array_equal(predict(back, tokens, fixed(5)), predict(model, tokens, fixed(5)))
