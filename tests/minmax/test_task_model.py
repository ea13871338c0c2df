"""minmax/task.py and minmax/model.py: reference answers, enumeration, forward pass, model files."""

from __future__ import annotations

import json
from math import comb

import numpy as np
import pytest
from safetensors.numpy import save_file

from headcount.common.errors import InputError
from headcount.common.files import ModelFileError, read_config
from headcount.core.model.symbols import BOTTOM
from headcount.minmax.construction import compact_code, two_head_layer
from headcount.minmax.model import (
    Classifier,
    MinMaxModel,
    TokenHead,
    TokenLayer,
    forward,
    load_minmax,
    predict,
    save_minmax,
)
from headcount.minmax.task import all_multisets, check_sizes, count_multisets, histograms, min_max


@pytest.mark.parametrize("M,n", [(2, 2), (3, 4), (5, 3), (6, 5)])
def test_all_multisets(M, n):
    X = all_multisets(M, n)
    assert X.shape == (count_multisets(M, n), n) and count_multisets(M, n) == comb(n + M - 1, n)
    assert np.all(np.diff(X, axis=1) >= 0) and X.min() >= 1 and X.max() <= M
    assert len({tuple(r) for r in X}) == X.shape[0]
    h = histograms(X, M)
    assert np.all(h.sum(axis=1) == n)
    lo, hi = min_max(X)
    assert np.all(h[np.arange(len(X)), lo - 1] > 0) and np.all(h[np.arange(len(X)), hi - 1] > 0)


def test_count_is_python_int():
    big = count_multisets(4096, 4096)
    assert isinstance(big, int) and big == comb(8191, 4096)


def _naive(head, lst):
    a = np.array([np.exp(head.scores[t - 1]) for t in lst])
    return (a[:, None] * head.values[np.array(lst) - 1]).sum(0) / a.sum()


def test_forward_matches_definition_and_is_stable():
    rng = np.random.default_rng(1)
    head = TokenHead(rng.normal(size=5), rng.normal(size=(5, 3)))
    X = rng.integers(1, 6, size=(50, 4))
    z = forward(head, X)
    assert np.allclose(z, [_naive(head, r) for r in X], rtol=1e-12, atol=1e-12)
    z_perm = forward(head, X[:, ::-1])  # no positions: order does not matter
    assert np.allclose(z, z_perm, rtol=1e-13, atol=1e-13)
    big = TokenHead(head.scores * 1e4, head.values)  # would overflow without the max shift
    assert np.all(np.isfinite(forward(big, X)))


def test_layer_sums_heads_and_ties_give_bottom():
    code = compact_code(4)
    model = two_head_layer(4, 3, code)
    X = all_multisets(4, 3)
    z = forward(model, X)
    assert np.allclose(z, forward(model.layer.heads[0], X) + forward(model.layer.heads[1], X))
    pmin, pmax = predict(model, X)
    lo, hi = min_max(X)
    assert np.array_equal(pmin, lo) and np.array_equal(pmax, hi)
    flat = Classifier(np.ones((4, 2)))
    assert np.all(flat.decide(np.ones((3, 2))) == BOTTOM)


def test_save_load_round_trip(tmp_path):
    model = two_head_layer(7, 5, compact_code(7))
    path = tmp_path / "m.safetensors"
    save_minmax(model, path)
    back = load_minmax(path)
    assert back.info == model.info and len(back.layer.heads) == 2
    for a, b in zip(model.layer.heads, back.layer.heads):
        assert a.scores.tobytes() == b.scores.tobytes() and a.values.tobytes() == b.values.tobytes()
    assert back.classifier_min.theta.tobytes() == model.classifier_min.theta.tobytes()
    assert back.classifier_max.theta.tobytes() == model.classifier_max.theta.tobytes()
    save_minmax(back, tmp_path / "again.safetensors")
    assert (tmp_path / "again.safetensors").read_bytes() == path.read_bytes()
    with pytest.raises(
        ModelFileError
    ):  # the default formats of core/model/files.py do not include ours
        read_config(path)


def test_bad_files(tmp_path):
    with pytest.raises(ModelFileError, match="does not exist"):
        load_minmax(tmp_path / "nope.safetensors")
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a safetensors file")
    with pytest.raises(ModelFileError):
        load_minmax(junk)
    other = tmp_path / "other.safetensors"
    save_file(
        {"W_E": np.zeros((2, 2))},
        str(other),
        metadata={"headcount": json.dumps({"format": "headcount-transformer"})},
    )
    with pytest.raises(ModelFileError, match="expected 'headcount-minmax'"):
        load_minmax(other)
    broken = tmp_path / "broken.safetensors"
    cfg = {"format": "headcount-minmax", "version": 1, "M": 3, "dim": 2, "heads": 1, "info": {}}
    save_file({"heads.0.scores": np.zeros(3)}, str(broken), metadata={"headcount": json.dumps(cfg)})
    with pytest.raises(ModelFileError, match="not a valid headcount-minmax model"):
        load_minmax(broken)


def test_bad_model_shapes():
    with pytest.raises(InputError, match="M ≥ 2"):
        TokenHead(np.zeros(1), np.zeros((1, 2)))
    with pytest.raises(InputError, match="finite"):
        TokenHead(np.array([0.0, np.inf]), np.zeros((2, 2)))
    head = TokenHead(np.zeros(3), np.zeros((3, 2)))
    with pytest.raises(InputError, match="expected"):
        MinMaxModel(TokenLayer((head,)), Classifier(np.zeros((3, 2))), Classifier(np.zeros((4, 2))))
    with pytest.raises(InputError, match="tokens must be integers in 1..3"):
        forward(head, np.array([[0, 1]]))
    assert TokenLayer((head, head)).n_heads == 2


@pytest.mark.parametrize(
    "M, n, needle",
    [
        (1, 2, "bad M=1: the token range [M] = {1..M} needs an integer M ≥ 2"),
        (2, 1, "bad n=1"),
        (2.0, 2, "bad M=2.0"),
    ],
)
def test_the_size_rule_is_one_input_error(M, n, needle):
    with pytest.raises(InputError) as err:
        check_sizes(M, n)
    assert str(err.value).startswith(needle)
    check_sizes(2, 2)
