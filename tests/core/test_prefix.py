"""Prefix passes (headcount.core.passes.prefix): the trie against a brute-force dict of tuples; the
float pass against forward.residual_stream (same decoded outputs, residuals equal up to the last
bits of the softmax sums); the rigorous pass sound against exact references (test_bounds' ball
evaluator for plain models, tests/soundness/arb_reference for the GPT-2 parts) and proving exactly
certified_predict's positions on the two-layer construction; when a prefix pass is worthwhile."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from flint import ctx

from headcount.core.certify import evaluate
from headcount.core.certify.evaluate import certified_predict, emulate
from headcount.core.model import Transformer
from headcount.core.numbers.precision import EXACT, FLOAT64, Precision, fixed
from headcount.core.passes import bounds
from headcount.core.passes.forward import residual_stream
from headcount.core.passes.prefix import (
    prefix_residual_bounds,
    prefix_residual_stream,
    prefix_trie,
    prefix_worthwhile,
)
from headcount.induction.construction import one_layer_induction, two_layer_induction
from headcount.induction.task import all_sequences
from tests.core.gpt2_models import gpt2_like
from tests.core.test_bounds import NearTie, assert_contains, random_model, reference_residual
from tests.soundness import arb_reference
from tests.soundness.test_gpt2_soundness import FAMILIES, random_gpt2_case


@pytest.fixture(autouse=True)
def _arb_precision():
    # finer than the 10^-300 floor of a computed radius (inflate_radius): a value the bounds round
    # exactly gets a box that narrow, and only a narrower reference ball counts it as checked
    old = ctx.prec
    ctx.prec = 1100
    yield
    ctx.prec = old


# --------------------------------------------------------------------------------------------------
# The trie


def brute_force_levels(tokens: np.ndarray) -> list[dict[tuple, int]]:
    """Level i: {distinct prefix of length i + 1: its index in lexicographic order}."""
    return [
        {p: j for j, p in enumerate(sorted({tuple(row[: i + 1]) for row in tokens.tolist()}))}
        for i in range(tokens.shape[1])
    ]


def check_trie(tokens: np.ndarray) -> None:
    trie = prefix_trie(tokens)
    levels = brute_force_levels(tokens)
    assert (trie.batch, trie.n) == tokens.shape
    assert trie.sizes == tuple(len(level) for level in levels)
    assert trie.positions() == sum(len(level) for level in levels)
    np.testing.assert_array_equal(trie.offsets, np.cumsum([0] + [len(level) for level in levels]))
    for i, level in enumerate(levels):
        prefixes = list(level)  # in index order
        np.testing.assert_array_equal(trie.token[i], [p[-1] for p in prefixes])
        parents = [0] * len(prefixes) if i == 0 else [levels[i - 1][p[:-1]] for p in prefixes]
        np.testing.assert_array_equal(trie.parent[i], parents)
        np.testing.assert_array_equal(
            trie.row_node[i], [level[tuple(row[: i + 1])] for row in tokens.tolist()]
        )
        want = [[levels[j][p[: j + 1]] for j in range(i + 1)] for p in prefixes]
        np.testing.assert_array_equal(
            trie.ancestors(i), np.array(want).reshape(len(prefixes), i + 1)
        )


@pytest.mark.parametrize(
    "seed, batch, n, alphabet",
    [(0, 60, 6, 2), (1, 200, 8, 3), (2, 1, 5, 4), (3, 30, 1, 5), (4, 50, 10, 60), (5, 7, 3, 1)],
)
def test_trie_matches_a_brute_force_dict_of_prefixes(seed, batch, n, alphabet):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, alphabet, size=(batch, n))
    tokens = tokens[rng.integers(0, batch, size=batch)]  # repeated rows, in no order
    tokens[: batch // 3, : n // 2] = tokens[0, : n // 2]  # long shared prefixes
    check_trie(tokens)


def test_trie_of_an_exhaustive_enumeration():
    trie = prefix_trie(all_sequences(6, 3))
    assert trie.sizes == (3, 9, 27, 81, 243, 729)
    assert trie.positions() == 1092
    np.testing.assert_array_equal(trie.parent[5], np.arange(729) // 3)
    np.testing.assert_array_equal(
        trie.row_node[5], np.arange(729)
    )  # lexicographic rows: node = row
    np.testing.assert_array_equal(trie.ancestors(5)[-1], [2, 8, 26, 80, 242, 728])
    check_trie(all_sequences(4, 2, 3, 11))


def test_trie_refuses_what_is_not_a_token_batch():
    for bad, message in (
        (np.zeros(4, dtype=int), "integer array"),
        (np.zeros((2, 3)), "integer array"),
        (np.array([[0, -1]]), "non-negative"),
    ):
        with pytest.raises(ValueError, match=message):
            prefix_trie(bad)
    trie = prefix_trie(np.zeros((2, 3), dtype=int))
    for level in (-1, 3):
        with pytest.raises(ValueError, match="outside the trie's levels 0..2"):
            trie.ancestors(level)


# --------------------------------------------------------------------------------------------------
# The float pass


def gpt2_style(
    seed: int, n: int, alphabet: int = 3, d: int = 8, activation: str = "gelu_tanh"
) -> Transformer:
    """Two layers with every GPT-2 part (ln1, ln2, ln_final, head biases, b_O, attn_scale 1/√d_head,
    a GELU MLP of width 4d), a linear decoder over the alphabet and ⊥."""
    return gpt2_like(seed, d=d, vocab=alphabet, n_ctx=n, activation=activation, readout="linear")


def ulps(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a − b| in units of the last place of its row's largest |a|."""
    scale = np.abs(a).max(axis=-1, keepdims=True)
    return float((np.abs(a - b) / np.spacing(scale.astype(a.dtype))).max(initial=0))


def compare_streams(
    model: Transformer, tokens: np.ndarray, prec: Precision, max_ulps: float
) -> float:
    plain = residual_stream(model, tokens, prec)
    prefix = prefix_residual_stream(model, tokens, prec)
    assert prefix.shape == plain.shape and prefix.dtype == plain.dtype
    np.testing.assert_array_equal(model.decoder.decode(prefix), model.decoder.decode(plain))
    difference = ulps(plain, prefix)
    assert difference <= max_ulps, f"{prec.name}: {difference} ulps"
    return difference


def shared_prefix_batch(seed: int, rows: int, n: int, alphabet: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, alphabet, size=(rows, n))
    tokens[: rows // 2, : n // 2] = tokens[0, : n // 2]
    return tokens


CONSTRUCTION_MODES = [FLOAT64, Precision("float32"), fixed(8), EXACT]


@pytest.mark.parametrize("prec", CONSTRUCTION_MODES, ids=lambda p: p.name)
def test_float_pass_matches_residual_stream_on_the_construction(prec):
    for n, alphabet, tokens in (
        (8, 2, all_sequences(8, 2)),
        (6, 3, all_sequences(6, 3)),
        (24, 4, shared_prefix_batch(0, 300, 24, 4)),
    ):
        compare_streams(two_layer_induction(n, alphabet), tokens, prec, max_ulps=4)
    if prec.kind == "fixed":  # dyadic weights, every value exact: the very same bits
        model = two_layer_induction(8, 2)
        tokens = all_sequences(8, 2)
        np.testing.assert_array_equal(
            prefix_residual_stream(model, tokens, prec), residual_stream(model, tokens, prec)
        )


GPT2_MODES = [
    FLOAT64,
    Precision("float32"),
    Precision("bfloat16"),
    Precision("float16"),
    fixed(10),
    EXACT,
]


@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh", "relu"])
def test_float_pass_matches_residual_stream_on_gpt2_style_models(activation):
    """LayerNorm, biases, b_O, attn_scale ≠ 1, GELU: decoded outputs equal in every mode; the
    residuals within 2^10 ulps (a last-bit difference in an attention sum, grown through three
    LayerNorms; measured ≤ 12 at n = 6, ≤ 32 at n = 12, ≤ 100 at n = 40; fixed:10 the same bits). In
    the 16-bit modes such a difference can move a rounding by a whole step, so only the outputs are
    compared there."""
    for seed, n, tokens in (
        (0, 6, all_sequences(6, 3)),
        (1, 12, shared_prefix_batch(1, 100, 12, 3)),
    ):
        model = gpt2_style(seed, n, activation=activation)
        for prec in GPT2_MODES:
            compare_streams(
                model,
                tokens,
                prec,
                max_ulps=np.inf if prec.kind in ("bfloat16", "float16") else 2**10,
            )


@pytest.mark.parametrize("seed", range(8))
def test_float_pass_matches_residual_stream_on_random_plain_models(seed):
    """test_bounds' random models (1–2 layers, 1–3 heads, sometimes an MLP, scores O(1..10)) with
    the causal mask. A last-bit difference in one score grows with the model's sensitivity: measured
    up to 1612 ulps (seed 4, residual up to 1950), where residual_stream itself is 1332 ulps from
    the exact residual and the prefix pass 280. So: the same outputs, residuals within 2^12 ulps,
    and the prefix pass about as close to the exact residual (test_bounds' ball evaluator) as
    residual_stream."""
    model = dataclasses.replace(random_model(seed), mask="causal")
    tokens = shared_prefix_batch(seed, 12, model.n_ctx, model.alphabet)
    for prec in (FLOAT64, fixed(6), EXACT):
        compare_streams(model, tokens, prec, max_ulps=2**12)
    exact = np.array(
        [
            [[float(v.mid()) for v in row] for row in reference_residual(model, seq, EXACT)]
            for seq in tokens.tolist()
        ]
    )
    plain, prefix = (
        residual_stream(model, tokens, EXACT),
        prefix_residual_stream(model, tokens, EXACT),
    )
    assert ulps(exact, prefix) <= 4 * ulps(exact, plain) + 16


# --------------------------------------------------------------------------------------------------
# The rigorous pass


def prefix_certified(model: Transformer, tokens: np.ndarray, prec: Precision):
    """certified_predict's decision, from the prefix pass's boxes."""
    with np.errstate(all="ignore"):
        mid, rad = prefix_residual_bounds(model, tokens, prec)
        out, proven = model.decoder.decode_bounds(mid, rad)
    return out, proven & np.isfinite(mid).all(axis=-1) & np.isfinite(rad).all(axis=-1)


PLAIN_MODES = [EXACT, fixed(3), fixed(6), fixed(10)]


@pytest.mark.parametrize("seed", range(10))
def test_prefix_bounds_contain_the_exact_residual_of_random_plain_models(seed):
    model = dataclasses.replace(random_model(seed, dyadic=seed % 2 == 1), mask="causal")
    tokens = shared_prefix_batch(seed, 4, model.n_ctx, model.alphabet)
    checked = 0
    for prec in PLAIN_MODES:
        with np.errstate(all="ignore"):
            mid, rad = prefix_residual_bounds(model, tokens, prec)
        out, proven = prefix_certified(model, tokens, prec)
        for b, seq in enumerate(tokens.tolist()):
            try:
                ref = reference_residual(model, seq, prec)
            except NearTie:
                continue
            assert_contains(ref, mid[b], rad[b], f"seed {seed} {prec.name} seq {seq}")
            exact = np.array([[float(v.mid()) for v in row] for row in ref])
            real = model.decoder.decode(exact[None])[0]
            np.testing.assert_array_equal(out[b][proven[b]], real[proven[b]])
            checked += 1
    assert checked >= len(tokens)  # exact mode has no rounding ties: every row is checked there


def contains_where_bounded(ref: list, mid: np.ndarray, rad: np.ndarray, label: str) -> int:
    """No finite box coordinate lies certainly apart from the reference ball (a false bound);
    returns how many are certainly inside it (adversarial weights: some boxes are unbounded, some
    balls too wide)."""
    inside = 0
    for i, row in enumerate(ref):
        for c, value in enumerate(row):
            if not (np.isfinite(mid[i, c]) and np.isfinite(rad[i, c])):
                continue
            distance, radius = abs(value - arb_reference.A(mid[i, c])), arb_reference.A(rad[i, c])
            assert not distance > radius, (
                f"{label}: pos {i} coord {c}: {value} not in {mid[i, c]!r} ± {rad[i, c]!r}"
            )
            inside += bool(distance <= radius)
    return inside


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.label)
def test_prefix_bounds_contain_the_exact_residual_of_gpt2_style_models(family):
    """The soundness suite's adversarial GPT-2-style models (tests/soundness), with the causal
    mask."""
    rng = np.random.default_rng(18)
    checked = 0
    for _ in range(4):
        case, bits = random_gpt2_case(rng, family)
        model = dataclasses.replace(case, mask="causal")
        tokens = all_sequences(model.n_ctx, model.alphabet)
        for prec in (EXACT, fixed(bits)):
            with np.errstate(all="ignore"):
                mid, rad = prefix_residual_bounds(model, tokens, prec)
            for b, seq in enumerate(tokens.tolist()):
                try:
                    ref = arb_reference.residual(model, seq, prec)
                except arb_reference.Undecided:
                    continue
                checked += contains_where_bounded(
                    ref, mid[b], rad[b], f"{family.label} {prec.name} {seq}"
                )
    assert checked > 0


def test_prefix_bounds_contain_the_exact_residual_of_a_gpt2_style_model():
    model = gpt2_style(2, 4, alphabet=2, d=4, activation="gelu")
    tokens = all_sequences(4, 2)
    for prec in (EXACT, fixed(12)):
        mid, rad = prefix_residual_bounds(model, tokens, prec)
        assert np.isfinite(rad).all()
        for b, seq in enumerate(tokens.tolist()):
            assert contains_where_bounded(
                arb_reference.residual(model, seq, prec), mid[b], rad[b], prec.name
            )


def check_construction_certificates(n: int, alphabet: int, monkeypatch) -> None:
    """The prefix pass proves what certified_predict proves, with the same outputs.
    bounds.settle_ties decides at most TIE_ROWS straddling head outputs per call: once per chunk and
    head there, once per level and head here, so with the default budget the prefix pass may prove
    more (a superset, measured at fixed:1); with the budget out of the way both prove the same
    positions."""
    model = two_layer_induction(n, alphabet)
    tokens = all_sequences(n, alphabet)
    budgeted = {prec.name: prefix_certified(model, tokens, prec) for prec in (fixed(1), fixed(2))}
    monkeypatch.setattr(
        evaluate, "prefix_parts", lambda model, tokens: None
    )  # certified_predict row by row
    monkeypatch.setattr(bounds, "TIE_ROWS", 10**9)
    for prec in (fixed(1), fixed(2), fixed(8), EXACT):
        out, proven = certified_predict(model, tokens, prec)
        prefix_out, prefix_proven = prefix_certified(model, tokens, prec)
        np.testing.assert_array_equal(prefix_proven, proven)
        np.testing.assert_array_equal(prefix_out[proven], out[proven])
        if prec.name in budgeted:
            some_out, some = budgeted[prec.name]
            assert not (some & ~proven).any()
            np.testing.assert_array_equal(some_out[some], out[some])
    monkeypatch.undo()
    monkeypatch.setattr(evaluate, "prefix_parts", lambda model, tokens: None)
    open_positions = ~certified_predict(model, tokens, fixed(1))[1]
    assert open_positions.any() and not (open_positions & ~budgeted["fixed:1"][1]).all()


@pytest.mark.parametrize("n, alphabet", [(8, 2), (6, 3)])
def test_prefix_bounds_prove_what_certified_predict_proves_on_the_construction(
    n, alphabet, monkeypatch
):
    check_construction_certificates(n, alphabet, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("n", [9, 10, 11, 12])
def test_prefix_bounds_prove_what_certified_predict_proves_on_the_construction_long(n, monkeypatch):
    check_construction_certificates(n, 2, monkeypatch)


# --------------------------------------------------------------------------------------------------
# When a prefix pass pays, and what the passes refuse


def test_prefix_worthwhile_returns_the_trie_of_an_exhaustive_batch():
    model = two_layer_induction(8, 2)
    tokens = all_sequences(8, 2)
    trie = prefix_worthwhile(model, tokens)
    assert trie is not None and trie.positions() == 2**9 - 2  # ≤ 256·8 / 3
    check = prefix_trie(tokens)
    for field in ("parent", "token", "row_node"):
        for got, want in zip(getattr(trie, field), getattr(check, field)):
            np.testing.assert_array_equal(got, want)
    stats: dict[str, int] = {}
    given = prefix_residual_stream(model, tokens, FLOAT64, trie=trie, stats=stats)
    np.testing.assert_array_equal(given, prefix_residual_stream(model, tokens, FLOAT64))
    widths = sum(h.W_K.shape[1] + h.W_V.shape[1] for layer in model.layers for h in layer.heads)
    assert stats == {"positions": 510, "stored_bytes": 510 * widths * 8}
    box_stats: dict[str, int] = {}
    prefix_residual_bounds(model, tokens, fixed(8), trie=trie, stats=box_stats)
    assert box_stats == {"positions": 510, "stored_bytes": 2 * 510 * widths * 8}


def test_prefix_worthwhile_is_none_where_a_prefix_pass_does_not_pay_or_does_not_apply():
    tokens = all_sequences(8, 2)
    assert prefix_worthwhile(one_layer_induction(8, 2), tokens) is None  # table form
    assert (
        prefix_worthwhile(dataclasses.replace(two_layer_induction(8, 2), mask="full"), tokens)
        is None
    )
    assert prefix_worthwhile(two_layer_induction(8, 2), tokens[:0]) is None  # nothing to share
    random_rows = np.random.default_rng(0).integers(0, 2, size=(2000, 40))
    assert prefix_worthwhile(two_layer_induction(40, 2), random_rows) is None
    assert prefix_trie(random_rows).positions() * 3 > random_rows.size
    # the bound is "at most a third": 4 rows of length 3 sharing nothing but the first token
    rows = np.array([[0, 0, 0], [0, 1, 1], [0, 2, 2], [0, 3, 3]])
    assert (
        prefix_trie(rows).positions() == 9
        and prefix_worthwhile(gpt2_style(0, 3, alphabet=4), rows) is None
    )
    assert prefix_worthwhile(gpt2_style(0, 3, alphabet=4), np.repeat(rows, 3, axis=0)) is not None


def test_prefix_passes_refuse_what_they_cannot_evaluate():
    tokens = all_sequences(6, 2)
    for model in (
        one_layer_induction(6, 2),
        dataclasses.replace(two_layer_induction(6, 2), mask="full"),
    ):
        with pytest.raises(ValueError, match="causal mask"):
            prefix_residual_stream(model, tokens)
        with pytest.raises(ValueError, match="causal mask"):
            prefix_residual_bounds(model, tokens, EXACT)
    model = two_layer_induction(6, 2)
    with pytest.raises(ValueError, match="not the trie of these tokens"):
        prefix_residual_stream(model, tokens, trie=prefix_trie(tokens[::-1]))
    with pytest.raises(ValueError, match="exceeds the model's context length"):
        prefix_residual_stream(model, all_sequences(7, 2))
    assert prefix_residual_stream(model, tokens[:0]).shape == (0, 6, model.d_model)
    mid, rad = prefix_residual_bounds(model, tokens[:0], EXACT)
    assert mid.shape == rad.shape == (0, 6, model.d_model)


def test_emulate_and_certified_predict_use_the_prefix_pass_on_shared_prefixes(monkeypatch):
    """evaluate.emulate / certified_predict take the prefix pass on an exhaustive batch
    (prefix_parts), with the row-by-row pass's answers; under the reference algorithm, or when it
    does not pay, they do not."""
    from headcount.core.attention import use_algorithm

    model = two_layer_induction(10, 2)
    tokens = all_sequences(10, 2)
    parts = evaluate.prefix_parts(model, tokens)
    assert parts is not None and sum(len(part) for part, _ in parts) == len(tokens)
    with use_algorithm("reference"):
        assert evaluate.prefix_parts(model, tokens) is None
    assert evaluate.prefix_parts(model, np.random.default_rng(0).integers(0, 2, (8, 10))) is None
    got = emulate(model, tokens, FLOAT64), certified_predict(model, tokens, fixed(8))
    monkeypatch.setattr(evaluate, "prefix_parts", lambda model, tokens: None)
    want = emulate(model, tokens, FLOAT64), certified_predict(model, tokens, fixed(8))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1][0], want[1][0])
    np.testing.assert_array_equal(got[1][1], want[1][1])
