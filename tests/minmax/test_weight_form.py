"""minmax/weight_form.py: the min/max layer as a weight-form Transformer answers like the
classifiers on every list (small sizes: all of [M]^n; the zoo's M = n = 8: every multiset, in a
shuffled order), its residual stream carries the layer output itself, and the roles of the
construction (two_head_roles)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.core.certify.evaluate import predict
from headcount.core.model.symbols import BOTTOM
from headcount.core.passes.forward import residual_stream
from headcount.minmax.construction import build_construction, two_head_roles
from headcount.minmax.model import Classifier, MinMaxModel, TokenHead, TokenLayer, forward
from headcount.minmax.model import predict as minmax_predict
from headcount.minmax.task import all_multisets
from headcount.minmax.weight_form import bottom_bias, minmax_to_transformer


def _answers(model, n: int, x: np.ndarray) -> dict[str, np.ndarray]:
    """The weight form's last-position answers (as tokens 1..M) for both tasks."""
    return {
        t: predict(minmax_to_transformer(model, n, t), x - 1)[:, -1] + 1 for t in ("min", "max")
    }


@pytest.mark.parametrize(
    ("M", "n", "heads", "code"), [(4, 5, 2, "sign"), (5, 4, 2, "compact"), (3, 6, 1, "sign")]
)
def test_every_list_of_small_sizes(M, n, heads, code):
    model = build_construction(M, n, heads, code)
    x = np.array(list(itertools.product(range(1, M + 1), repeat=n)))
    fmin, fmax = minmax_predict(model, x)
    got = _answers(model, n, x)
    assert np.array_equal(got["min"], fmin) and np.array_equal(got["max"], fmax)
    assert np.array_equal(
        fmin, x.min(axis=1)
    )  # the construction does min, and with two heads max too
    assert heads == 1 or np.array_equal(fmax, x.max(axis=1))


def test_every_multiset_of_the_zoo_sizes_in_any_order():
    model = build_construction(8, 8, 2, "sign", 0)
    x = all_multisets(8, 8)
    rng = np.random.default_rng(0)
    x = np.stack([rng.permutation(row) for row in x])
    got = _answers(model, 8, x)
    assert np.array_equal(got["min"], x.min(axis=1)) and np.array_equal(got["max"], x.max(axis=1))


def test_the_residual_stream_holds_the_layer_output():
    model = build_construction(8, 8, 2, "sign", 0)
    x = all_multisets(8, 8)
    tr = minmax_to_transformer(model, 8, "min")
    out = tr.info["coordinates"]["out"]
    z = residual_stream(tr, x - 1)[:, -1, out[0] : out[1] + 1]
    assert np.allclose(z, forward(model, x), rtol=0, atol=1e-15)
    head = tr.layers[0].heads[1]  # the max head: query ONE, key its score coordinate, d_head 1
    assert head.W_Q.shape == (tr.d_model, 1) and head.W_Q[0, 0] == 1 and head.W_K[2, 0] == 1
    assert np.array_equal(tr.W_E[:, 2], model.layer.heads[1].scores) and not tr.W_pos.any()
    assert (tr.n_ctx, tr.alphabet, tr.d_model, tr.mask) == (8, 8, 1 + 2 + 3 * 34, "causal")


def test_bottom_is_below_every_class():
    rng = np.random.default_rng(1)
    head = TokenHead(rng.standard_normal(5) * 3, rng.standard_normal((5, 3)) * 4)
    model = MinMaxModel(
        TokenLayer((head,)), Classifier(rng.standard_normal((5, 3))), Classifier(-head.values)
    )
    x = np.array(list(itertools.product(range(1, 6), repeat=3)))
    for task, clf in (("min", model.classifier_min), ("max", model.classifier_max)):
        assert bottom_bias(model, clf) < -np.abs(clf.logits(forward(model, x))).max()
        got = predict(minmax_to_transformer(model, 3, task), x - 1)[:, -1]
        assert (got != BOTTOM).all()
        assert np.array_equal(
            got + 1, clf.decide(forward(model, x))
        )  # random weights: no exact ties


def test_refusals():
    model = build_construction(4, 3, 2)
    with pytest.raises(InputError, match="task 'median' is not available: use min or max"):
        minmax_to_transformer(model, 3, "median")
    with pytest.raises(InputError):
        minmax_to_transformer(model, 1, "min")


def test_two_head_roles():
    roles = two_head_roles(8, 8, 17)
    assert [(h["layer"], h["head"], h["role"]) for h in roles["heads"]] == [
        (0, 0, "min"),
        (0, 1, "max"),
    ]
    assert "0..16" in roles["heads"][0]["value"] and "17..33" in roles["heads"][1]["value"]
    assert roles["beta"] == -build_construction(8, 8, 2).layer.heads[0].scores[0]
    with pytest.raises(InputError):
        two_head_roles(8, 8, 0)
