"""Tests for the NumPy forward pass (headcount.core.passes.forward) and
headcount.core.certify.evaluate.predict."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import headcount.core.passes.forward as forward
from headcount.core.attention import causal_mask, softmax_values
from headcount.core.certify.evaluate import check_tokens, predict
from headcount.core.model import MLP, AttentionHead, Layer, LinearDecoder, Transformer
from headcount.core.model.symbols import BOTTOM
from headcount.core.numbers.precision import EXACT, FLOAT64, Precision, fixed, parse_precision
from headcount.core.passes.forward import residual_stream, rows_per_chunk
from headcount.core.passes.table_form import table_residual
from headcount.induction.construction import one_layer_induction, two_layer_induction
from headcount.induction.task import all_sequences, induction_targets

# --------------------------------------------------------------------------------------------------
# attention weights: attend(q, k, v) with k = v = I reads softmax(scores) back


def softmax_rows(scores: np.ndarray, prec) -> np.ndarray:
    """The attention weights `attend` computes for these scores ([rows keys] or [batch rows keys]):
    its softmax step (softmax_values) with v = I reads the weights back."""
    scores = np.asarray(scores)
    flat = scores.reshape(-1, scores.shape[-2], scores.shape[-1])
    eye = np.eye(flat.shape[-1], dtype=flat.dtype)
    return np.stack([softmax_values(block.copy(), eye, prec) for block in flat]).reshape(
        scores.shape
    )


@pytest.mark.parametrize("mode", ["float64", "exact", "fixed:4", "float32"])
def test_softmax_rows_is_stable_for_huge_scores(mode):
    prec = parse_precision(mode)
    dt = prec.compute_dtype
    scores = np.array(
        [
            [1e12, 1e12 - 2.0**17, -1e12] if dt == np.float32 else [1e12, 1e12 - 1.0, -1e12],
            [-1e12, -1e12, -1e12],
            [1e12, -np.inf, -1e12],
            [-np.inf, -np.inf, 1e12],
            [-1e12, -np.inf, -np.inf],
            [1e38, -1e38, 0.0] if dt == np.float32 else [5e307, -5e307, 0.0],
        ],
        dtype=dt,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # underflow of exp(very negative) to 0 is the expected behaviour; everything else must not
        # happen
        with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
            w = softmax_rows(scores, prec)
    assert w.shape == scores.shape
    assert np.all(np.isfinite(w)) and np.all(w >= 0)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=0, atol=4 * np.finfo(dt).eps)
    if dt == np.float32:
        np.testing.assert_array_equal(w[0], [1.0, 0.0, 0.0])  # a gap of 2^17 is decisive
    else:
        np.testing.assert_allclose(
            w[0], [1 / (1 + math.exp(-1)), math.exp(-1) / (1 + math.exp(-1)), 0.0], rtol=1e-6
        )
    np.testing.assert_allclose(w[1], [1 / 3] * 3, rtol=1e-6)
    np.testing.assert_array_equal(w[2], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(w[3], [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(w[4], [1.0, 0.0, 0.0])
    assert w[5, 0] == 1.0 and w[5, 1] == 0.0


def test_softmax_rows_batched_matches_formula():
    rng = np.random.default_rng(0)
    scores = rng.normal(scale=3, size=(4, 5, 6))
    w = softmax_rows(scores, FLOAT64)
    e = np.exp(scores)
    np.testing.assert_allclose(w, e / e.sum(axis=-1, keepdims=True), rtol=1e-14)
    # shift invariance: adding a constant per row changes nothing (up to rounding)
    np.testing.assert_allclose(softmax_rows(scores + 1e6, FLOAT64), w, atol=1e-9)


def test_causal_mask():
    np.testing.assert_array_equal(
        causal_mask(3), [[True, False, False], [True, True, False], [True, True, True]]
    )
    assert causal_mask(1).tolist() == [[True]]


def test_rows_per_chunk_at_least_one(monkeypatch):
    assert rows_per_chunk(100) >= 1
    monkeypatch.setattr(forward, "CHUNK_BYTES", 1)
    assert rows_per_chunk(5, 19) == 1
    assert rows_per_chunk(0) == 1


# --------------------------------------------------------------------------------------------------
# A hand-built one-layer model


def hand_model(mask: str, mlp: MLP | None = None) -> Transformer:
    """d_model 2, one head: token 0 -> (1, 0), token 1 -> (0, 2); q = x_1, k = x_0 + x_1, v = x_0;
    the head writes its output into coordinate 1."""
    W_E = np.array([[1.0, 0.0], [0.0, 2.0]])
    W_pos = np.zeros((3, 2))
    head = AttentionHead(
        W_Q=[[0.0], [1.0]], W_K=[[1.0], [1.0]], W_V=[[1.0], [0.0]], W_O=[[0.0, 1.0]]
    )
    W_U = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # logits (x0, x1, 0); ⊥ is class 2
    return Transformer(
        W_E, W_pos, (Layer((head,), mlp),), LinearDecoder(W_U, np.array([0.0, 0.0, 0.5])), mask
    )


def test_hand_model_causal_residual():
    # tokens 0 1 0: x = (1,0), (0,2), (1,0); q = 0, 2, 0; k = 1, 2, 1; v = 1, 0, 1
    x = residual_stream(hand_model("causal"), np.array([[0, 1, 0]]))
    e2 = math.exp(2)
    expected = [
        [1.0, 1.0],  # only key 0: z = v_0 = 1
        [0.0, 2.0 + 1 / (1 + e2)],  # scores 2, 4: z = e^2 / (e^2 + e^4)
        [1.0, 2 / 3],
    ]  # q = 0: uniform over three keys, z = (1 + 0 + 1)/3
    np.testing.assert_allclose(x[0], expected, rtol=0, atol=1e-15)


def test_hand_model_full_residual():
    x = residual_stream(hand_model("full"), np.array([[0, 1, 0]]))
    e2 = math.exp(2)
    expected = [
        [1.0, 2 / 3],  # q = 0: uniform over all three keys
        [0.0, 2.0 + 2 / (2 + e2)],  # scores 2, 4, 2
        [1.0, 2 / 3],
    ]
    np.testing.assert_allclose(x[0], expected, rtol=0, atol=1e-15)


def test_hand_model_mask_matters_only_where_future_keys_exist():
    tokens = np.array([[0, 1, 0], [1, 1, 0], [0, 0, 0]])
    causal = residual_stream(hand_model("causal"), tokens)
    full = residual_stream(hand_model("full"), tokens)
    np.testing.assert_array_equal(
        causal[:, 2], full[:, 2]
    )  # the last position sees every key either way
    assert not np.allclose(causal[0, 0], full[0, 0])
    # predictions: logits (x0, x1, 0.5)
    assert predict(hand_model("causal"), tokens[:1]).tolist() == [
        [0, 1, 0]
    ]  # (1,1) ties -> lowest class 0
    assert predict(hand_model("full"), tokens[:1]).tolist() == [[0, 1, 0]]
    # prefixes: the causal model's output at position i ignores later tokens
    np.testing.assert_array_equal(
        residual_stream(hand_model("causal"), tokens[:, :2]), causal[:, :2]
    )


def test_hand_model_with_mlp():
    # MLP adds 2·relu(x0 − x1 + 0.5) to coordinate 0 and 0.25 to coordinate 1
    mlp = MLP(W_in=[[1.0], [-1.0]], b_in=[0.5], W_out=[[2.0, 0.0]], b_out=[0.0, 0.25])
    x = residual_stream(hand_model("causal", mlp), np.array([[0, 1, 0]]))
    e2 = math.exp(2)
    after_attn = np.array([[1.0, 1.0], [0.0, 2.0 + 1 / (1 + e2)], [1.0, 2 / 3]])
    relu = np.maximum(after_attn[:, 0] - after_attn[:, 1] + 0.5, 0.0)
    expected = after_attn + np.stack([2 * relu, np.full(3, 0.25)], axis=1)
    np.testing.assert_allclose(x[0], expected, rtol=0, atol=1e-15)
    assert relu[1] == 0.0 and relu[0] == 0.5 and relu[2] > 0


def test_hand_model_fixed_precision_rounding_points():
    # fixed:1 (grid 1/2, clip ±2): embeddings exact; q, k, v exact; head outputs rounded.
    x = residual_stream(hand_model("causal"), np.array([[0, 1, 0]]), fixed(1))
    # z·W_O: 1 -> 1; 1/(1+e^2) = 0.119 -> 0; 2/3 -> 0.5
    np.testing.assert_array_equal(x[0], [[1.0, 1.0], [0.0, 2.0], [1.0, 0.5]])
    # fixed:1 clips k = 2 to 2 (at the limit) and q·k is real arithmetic (scores 2, 4 unchanged)


def test_residual_stream_shapes_and_dtypes():
    model = two_layer_induction(5, 3)
    tokens = np.array([[0, 1, 2, 0, 1], [2, 2, 2, 2, 2]])
    for mode, dtype in [
        ("float64", np.float64),
        ("float32", np.float32),
        ("exact", np.float64),
        ("fixed:8", np.float64),
        ("float16", np.float32),
        ("bfloat16", np.float32),
    ]:
        with np.errstate(all="ignore"):
            x = residual_stream(model, tokens, parse_precision(mode))
        assert x.shape == (2, 5, model.d_model) and x.dtype == dtype, mode


# --------------------------------------------------------------------------------------------------
# predict: batching and chunking are invisible


def random_model(
    rng: np.random.Generator, n_ctx=6, alphabet=4, d=5, layers=2, heads=2, mlp=True, mask="causal"
):
    def mat(*shape):
        return rng.normal(scale=0.8, size=shape)

    layer_list = []
    for _ in range(layers):
        hs = tuple(AttentionHead(mat(d, 3), mat(d, 3), mat(d, 2), mat(2, d)) for _ in range(heads))
        m = MLP(mat(d, 4), mat(4), mat(4, d), mat(d)) if mlp else None
        layer_list.append(Layer(hs, m))
    return Transformer(
        mat(alphabet, d),
        mat(n_ctx, d),
        tuple(layer_list),
        LinearDecoder(mat(d, alphabet + 1), mat(alphabet + 1)),
        mask,
    )


@pytest.mark.parametrize("mask", ["causal", "full"])
@pytest.mark.parametrize("mode", ["float64", "float32", "fixed:5", "bfloat16"])
def test_predict_batch_equals_row_by_row(mask, mode, monkeypatch):
    rng = np.random.default_rng(11)
    model = random_model(rng, mask=mask)
    prec = parse_precision(mode)
    tokens = rng.integers(0, model.alphabet, size=(37, 6))
    batch = predict(model, tokens, prec)
    assert batch.shape == (37, 6) and batch.dtype == np.int64
    rows = np.concatenate([predict(model, t[None, :], prec) for t in tokens])
    np.testing.assert_array_equal(batch, rows)
    residual = residual_stream(model, tokens, prec)
    for i in (0, 17, 36):
        np.testing.assert_array_equal(
            residual[i], residual_stream(model, tokens[i : i + 1], prec)[0]
        )
    # force one row per chunk, then a few rows per chunk: identical results
    for chunk_bytes in (1, 8 * 6 * 6 * 4 * 5):
        monkeypatch.setattr(forward, "CHUNK_BYTES", chunk_bytes)
        np.testing.assert_array_equal(predict(model, tokens, prec), batch)


def test_predict_chunking_on_constructions(monkeypatch):
    model = two_layer_induction(6, 3)
    tokens = all_sequences(6, 3)
    full = predict(model, tokens)
    np.testing.assert_array_equal(full, induction_targets(tokens))
    monkeypatch.setattr(forward, "CHUNK_BYTES", 8 * 6 * 19 * 4 * 7)  # 7 rows per chunk
    assert rows_per_chunk(6, 19) == 7
    np.testing.assert_array_equal(predict(model, tokens), full)
    table = one_layer_induction(6, 3)
    monkeypatch.setattr(forward, "CHUNK_BYTES", 1)
    np.testing.assert_array_equal(predict(table, tokens[:200]), induction_targets(tokens[:200]))


def test_predict_accepts_a_single_sequence_and_shorter_inputs():
    model = two_layer_induction(6, 3)
    seq = [0, 1, 2, 0, 1, 2]
    assert predict(model, seq).tolist() == [induction_targets(np.array([seq]))[0].tolist()]
    short = np.array([[1, 2, 1]])
    np.testing.assert_array_equal(predict(model, short), induction_targets(short))
    # prefix property of a causal model: the prediction on a prefix is the prefix of the prediction
    np.testing.assert_array_equal(predict(model, [seq])[:, :3], predict(model, [seq[:3]]))


def test_predict_empty_batch():
    model = two_layer_induction(4, 2)
    out = predict(model, np.zeros((0, 4), dtype=np.int64))
    assert out.shape == (0, 4)


# --------------------------------------------------------------------------------------------------
# check_tokens


def test_check_tokens_valid():
    model = two_layer_induction(5, 3)
    out = check_tokens(model, [0, 1, 2])
    assert out.shape == (1, 3) and out.dtype == np.int64
    out = check_tokens(model, np.array([[0, 1, 2, 2, 0]], dtype=np.int8))
    assert out.dtype == np.int64 and out.tolist() == [[0, 1, 2, 2, 0]]


@pytest.mark.parametrize(
    ("tokens", "fragment"),
    [
        ([[0, 1, 3]], "0..2"),  # token too large
        ([[0, -1, 2]], "0..2"),  # negative (BOTTOM is not an input token)
        ([[0, 1, 2, 0, 1, 2]], "exceeds the model's context length 5"),
        ([0, 1, 2, 0, 1, 2, 0], "input length 7"),
        (np.zeros((2, 2, 2), dtype=int), "[batch pos]"),
        (np.zeros((3, 0), dtype=int), "[batch pos]"),
        (np.int64(1), "[batch pos]"),
    ],
)
def test_check_tokens_errors(tokens, fragment):
    model = two_layer_induction(5, 3)
    with pytest.raises(ValueError) as info:
        check_tokens(model, tokens)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError):
        predict(model, tokens)


def test_check_tokens_errors_on_table_models():
    table = one_layer_induction(4, 2)
    with pytest.raises(ValueError, match="0..1"):
        check_tokens(table, [[0, 2]])
    with pytest.raises(ValueError, match="context length 4"):
        check_tokens(table, [[0, 1, 0, 1, 0]])


@pytest.mark.parametrize("tokens", [[[0.5, 1.0]], [[np.nan, 1.0]]])
def test_check_tokens_rejects_non_integer_tokens(tokens):
    model = two_layer_induction(4, 2)
    with pytest.raises(ValueError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_tokens(model, tokens)


# --------------------------------------------------------------------------------------------------
# precision modes on the two-layer construction


def test_precision_modes_on_two_layer_construction():
    model = two_layer_induction(8, 3)
    rng = np.random.default_rng(7)
    tokens = rng.integers(0, 3, size=(300, 8))
    tokens[:10] = rng.integers(0, 3, size=(10, 8)) * 0  # a few all-equal inputs
    want = induction_targets(tokens)
    p64 = predict(model, tokens, FLOAT64)
    np.testing.assert_array_equal(p64, want)
    np.testing.assert_array_equal(predict(model, tokens, Precision("float32")), p64)
    np.testing.assert_array_equal(predict(model, tokens, EXACT), p64)
    np.testing.assert_array_equal(
        residual_stream(model, tokens, EXACT), residual_stream(model, tokens, FLOAT64)
    )
    # enough fixed-point bits reproduce the real-arithmetic answers
    np.testing.assert_array_equal(predict(model, tokens, fixed(24)), p64)
    # predictions are tokens or ⊥
    assert set(np.unique(p64)) <= {BOTTOM, 0, 1, 2}


def test_one_layer_table_predictions_in_float_modes():
    table = one_layer_induction(5, 3)
    tokens = all_sequences(5, 3)
    want = induction_targets(tokens)
    for mode in ("float64", "exact", "float32", "fixed:10"):
        np.testing.assert_array_equal(
            predict(table, tokens, parse_precision(mode)), want, err_msg=mode
        )
    x64 = table_residual(table, tokens)
    np.testing.assert_array_equal(table_residual(table, tokens, EXACT), x64)
