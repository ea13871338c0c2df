"""The INDEX reduction on weight-form models follows the model's own fixed:p rounding points (issue
27, finding 3): setup.as_table converts a one-layer weight-form model with
core.passes.fixed_table.table_at_precision into the table of its exact rounded values, whose fixed:p
model is the weight model's, or refuses the model where no table can be (v·W_O off the 2^-p grid, or
outside the clip range); the JSON says which form was checked. refute alone does not refuse such a
model: the real-arithmetic table (table_from_weights) only guides its search, every input it reports
is confirmed on the weight model, and what rests on the table alone (the message length, a
collision's shared message) is withheld (model_form GUIDE_FORM).

The model's answers here always come from the weight model itself (core.certify.evaluate.predict and
the exact evaluator core.passes.exact_fixed.exact_fixed_predict), never from a table."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.core.certify.evaluate import predict
from headcount.core.model import AttentionHead, Layer, LinearDecoder, Transformer
from headcount.core.model.files import save_model
from headcount.core.model.table import table_from_weights
from headcount.core.numbers.precision import fixed
from headcount.core.passes.exact_fixed import exact_fixed_predict, exact_round_fixed
from headcount.core.passes.fixed_table import table_at_precision
from headcount.induction.lower_bound import setup as lb_setup
from headcount.induction.lower_bound.protocol import check_protocol, predict_last
from headcount.induction.lower_bound.refute import refute
from headcount.induction.task import index_family, index_input
from tests.cli_run import refused, run

WEIGHTS_FORM = "weights (exact table of its fixed:p rounding points)"
GUIDE_FORM = (
    "weights (search guided by its real-arithmetic table; every input confirmed on the model)"
)


def issue_model(
    W_O: float = 1.0, W_V: float = 3.0, alphabet: int = 3, n_ctx: int = 5
) -> Transformer:
    """Issue 27's model: one layer, d = 1, W_E = 0.3, W_pos = 0, W_V = 3, W_O given, scores 0
    (uniform attention); the decoder answers class 0 iff x > 1.75, else ⊥ (logits x and 1.75; ties
    to class 0 only at x = 1.75, which no grid value at p = 1 is)."""
    W_U = np.zeros((1, alphabet + 1))
    W_U[0, 0] = 1.0
    b_U = np.zeros(alphabet + 1)
    b_U[:] = -100.0
    b_U[0], b_U[alphabet] = 0.0, 1.75
    head = AttentionHead(np.zeros((1, 1)), np.zeros((1, 1)), np.array([[W_V]]), np.array([[W_O]]))
    return Transformer(
        np.full((alphabet, 1), 0.3),
        np.zeros((n_ctx, 1)),
        (Layer((head,)),),
        LinearDecoder(W_U, b_U),
    )


def model_error(model, k: int, p: int) -> tuple[int, int]:
    """(wrong, pairs) of the weight model itself at fixed:p over the whole INDEX family at N,
    counted twice independently: predict and the exact evaluator must agree."""
    tokens, F, stars = index_family(k)
    answers = F[np.arange(len(F)), stars - 1]
    by_predict = predict(model, tokens, fixed(p))[:, -1]
    by_exact = exact_fixed_predict(model, tokens, p, positions=[2 * k])[:, -1]
    assert np.array_equal(by_predict, by_exact)
    return int((by_predict != answers).sum()), len(answers)


# ---------------------------------------------------------------------------------------------
# The issue's recipe
# ---------------------------------------------------------------------------------------------


def test_issue_recipe_model_error_is_half():
    """round_1(0.3) = 0.5, v = round_1(1.5) = 1.5, head output 1.5, residual 2 > 1.75: always class
    0, so the model is wrong exactly where f_{i*} = 1, 4 of the 8 pairs. (The real-arithmetic table,
    rounding Ṽ = 0.9 to 1 and the embedding 0.3 to 0.5, reads 1.5 < 1.75 and is wrong on all 8.)"""
    model = issue_model()
    assert model_error(model, 2, 1) == (4, 8)
    tokens, F, stars = index_family(2)
    assert (
        predict(table_from_weights(model), tokens, fixed(1))[:, -1] != F[np.arange(8), stars - 1]
    ).all()


def test_protocol_reports_the_models_own_error():
    model = issue_model()
    wrong, pairs = model_error(model, 2, 1)
    report = check_protocol(model, 2, 1)
    assert report.pairs_checked == pairs == 8
    assert report.pairs_checked - report.model_correct == wrong == 4
    assert report.floor.index_error == 0.5
    assert report.model_form == lb_setup.WEIGHTS_FORM == WEIGHTS_FORM
    assert report.exact


def test_refute_reports_the_weights_form_and_a_real_error():
    model = issue_model()
    result = refute(model, 2, 1)
    assert result.model_form == WEIGHTS_FORM and result.to_json()["model_form"] == WEIGHTS_FORM
    assert result.found
    tokens = np.array(result.tokens)
    assert int(predict(model, tokens[None], fixed(1))[0, -1]) != int(result.expected)


def test_table_form_model_keeps_its_form():
    table = table_at_precision(issue_model(), 1)
    assert check_protocol(table, 2, 1).model_form == "table"
    assert refute(table, 2, 1).model_form == "table"


def test_protocol_cli_on_a_weight_file(tmp_path, capsys):
    path = tmp_path / "issue27.safetensors"
    save_model(issue_model(), path)
    code, out, err = run(
        capsys,
        "induction",
        "protocol",
        "--model",
        str(path),
        "--k",
        "2",
        "--precision-bits",
        "1",
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["index_error"] == 0.5 and data["model_form"] == WEIGHTS_FORM
    assert data["pairs_checked"] == 8 and data["model_correct"] == 4
    code, out, err = run(
        capsys,
        "induction",
        "refute",
        "--model",
        str(path),
        "--k",
        "2",
        "--precision-bits",
        "1",
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["model_form"] == WEIGHTS_FORM and json.loads(out)["found"]


# ---------------------------------------------------------------------------------------------
# Refusals
# ---------------------------------------------------------------------------------------------


def test_off_grid_value_is_refused():
    """W_O = 0.3: v·W_O = 1.5·0.3 = 0.45 is off the 2^-1 grid; a table would round it, the model
    does not."""
    with pytest.raises(InputError) as info:
        check_protocol(issue_model(W_O=0.3), 2, 1)
    message = str(info.value)
    assert "\n" not in message
    assert (
        "v·W_O of head 0" in message and "not on the 2^-1 grid" in message and "W_O = I" in message
    )
    with pytest.raises(InputError, match="not on the 2\\^-1 grid"):
        lb_setup.index_setup(issue_model(W_O=0.3), 2, 1)  # the protocol's setup: no guide


def test_nan_weights_are_refused_by_refute_too():
    """Not a rounding-point mismatch: no fixed:p model at all, so there is nothing to confirm inputs
    on."""
    model = issue_model()
    bad = Transformer(np.full((3, 1), np.nan), model.W_pos, model.layers, model.decoder)
    for call in (check_protocol, refute):
        with pytest.raises(InputError, match="NaN"):
            call(bad, 2, 1)


# ---------------------------------------------------------------------------------------------
# refute on a weight model no table can follow: guided by its real-arithmetic table
# ---------------------------------------------------------------------------------------------


def wrong_on_the_model(model, result, p: int) -> bool:
    """The reported input is wrong on the weight model itself, by predict and by the exact
    evaluator, and the model's output is the one reported."""
    tokens = np.array(result.tokens)[None]
    got = int(predict(model, tokens, fixed(p))[0, -1])
    assert got == int(
        exact_fixed_predict(model, tokens, p, positions=[len(result.tokens) - 1])[0, -1]
    )
    shown = {0: "0", 1: "1", 2: "?", -1: "⊥"}[got]
    expected = int(
        result.tokens[result.tokens.index(2) + 1]
    )  # f_{i*}: the token after the first '?'
    return (
        result.position == len(result.tokens) and got != expected and shown == result.model_output
    )


def test_refute_off_grid_model_is_guided_and_confirmed_on_the_model():
    """W_O = 0.3 at p = 1: the model reads 0.5 + round_1(0.45) = 1 < 1.75 and answers ⊥ everywhere.
    The guide table has a 0-bit message (a collision at once), but its shared message and Bob's
    answer are the guide's: the JSON withholds them and the message length, and says which form was
    searched."""
    model = issue_model(W_O=0.3)
    result = refute(model, 2, 1)
    assert result.found and wrong_on_the_model(model, result, 1)
    assert result.model_form == lb_setup.GUIDE_FORM == GUIDE_FORM
    data = result.to_json()
    assert data["model_form"] == GUIDE_FORM and data["message_bits"] is None
    assert data["method"] == "collision" and set(data["evidence"]) == {"f", "i_star"}
    assert data["input"] == result.input and result.model_output == "⊥"
    json.dumps(data)


def test_refute_reports_the_models_error_not_the_guides():
    """W_O = 0.7 at p = 1, the decoder answering 0 iff x > 1.25 else 1: the model reads 0.5 +
    round_1(1.05) = 1.5 and answers 0 everywhere; the guide table reads 0.5 + round_1(0.63) = 1 and
    answers 1 everywhere. The reported input is one the model gets wrong (f_{i*} = 1) and the guide
    gets right."""
    base = issue_model(W_O=0.7)
    decoder = LinearDecoder(np.array([[1.0, 0.0, 0.0, 0.0]]), np.array([0, 1.25, -100, -100]))
    model = Transformer(base.W_E, base.W_pos, base.layers, decoder)
    tokens, _, _ = index_family(2)
    assert (predict(model, tokens, fixed(1))[:, -1] == 0).all()
    guide = table_from_weights(model)
    assert (predict(guide, tokens, fixed(1))[:, -1] == 1).all()
    result = refute(model, 2, 1)
    assert result.found and wrong_on_the_model(model, result, 1) and result.model_form == GUIDE_FORM
    assert (result.expected, result.model_output) == ("1", "0")
    assert (
        int(predict(guide, np.array(result.tokens)[None], fixed(1))[0, -1]) == 1
    )  # the guide is right here


def gaussian_model(seed: int, n_ctx: int, d: int = 2, heads: int = 1) -> Transformer:
    """A one-layer model with Gaussian weights (W_O off every grid: never an exact table)."""
    rng = np.random.default_rng(seed)
    w = lambda *shape: rng.normal(size=shape)  # noqa: E731
    layer = Layer(tuple(AttentionHead(w(d, d), w(d, d), w(d, d), w(d, d)) for _ in range(heads)))
    return Transformer(w(3, d), w(n_ctx, d), (layer,), LinearDecoder(w(d, 4), np.zeros(4)))


@pytest.mark.parametrize("seed", range(6))
def test_refute_guided_exhaustive_verdicts_are_the_models(seed):
    """k = 3 (exhaustive): refute's verdict is the weight model's, counted independently — the first
    wrong input of the family in its order when there is one, "nothing found" only when the model is
    right on every INDEX input — whatever the guide table answers."""
    k, p = 3, 4
    model = gaussian_model(seed, 2 * k + 1)
    with pytest.raises(InputError):
        check_protocol(model, k, p)
    result = refute(model, k, p, seed=seed)
    assert result.model_form == GUIDE_FORM and result.message_bits is None
    tokens, F, stars = index_family(k)
    wrong = (
        exact_fixed_predict(model, tokens, p, positions=[2 * k])[:, -1]
        != F[np.arange(len(F)), stars - 1]
    )
    if not result.found:
        assert result.searched.exhaustive.inputs == len(F) and not wrong.any()
    else:
        assert wrong_on_the_model(model, result, p)
        if result.method == "exhaustive":
            first = int(np.flatnonzero(wrong)[0])
            assert result.tokens == tuple(int(t) for t in tokens[first])


def test_refute_guided_search_beyond_the_exhaustive_range():
    """k = 20 (2^k·k > the budget): the guided or collision search, every reported input
    confirmed."""
    k, p = 20, 6
    model = gaussian_model(0, 2 * k + 1, d=2, heads=2)
    result = refute(model, k, p, seed=1, budget=1 << 14)
    assert result.model_form == GUIDE_FORM and result.message_bits is None
    assert result.method in ("collision", "guided") or not result.found
    assert result.found and wrong_on_the_model(model, result, p)


def test_value_outside_the_clip_range_is_refused():
    """W_O = 2: v·W_O = 3 is on the grid but outside [−2, 2]; a table would clip it, the model does
    not."""
    with pytest.raises(InputError, match=r"outside \[−2\^p, 2\^p\]"):
        check_protocol(issue_model(W_O=2.0), 2, 1)
    report = check_protocol(issue_model(W_O=2.0, W_V=1.0), 2, 1)  # v = 0.5, v·W_O = 1: allowed
    assert report.model_form == WEIGHTS_FORM
    assert (
        report.pairs_checked - report.model_correct
        == model_error(issue_model(W_O=2.0, W_V=1.0), 2, 1)[0]
    )


def test_grid_value_beyond_float64_is_refused():
    """At p = 30 round_p(2^29 + 2^-30) = (2^59 + 1)/2^30 is exact for the model but not a float64
    number."""
    model = issue_model()
    W_E = np.full((3, 1), 2.0**29)
    W_pos = np.full((5, 1), 2.0**-30)
    big = Transformer(W_E, W_pos, model.layers, model.decoder)
    with pytest.raises(InputError, match="over 53 significant bits") as info:
        check_protocol(big, 2, 30)
    assert "576460752303423489/2^30" in str(info.value) and "p ≤ 26" in str(info.value)
    assert (
        check_protocol(big, 2, 26).model_form == WEIGHTS_FORM
    )  # every grid value fits a float64 at p ≤ 26


def test_cli_refuses_an_off_grid_weight_file(tmp_path, capsys):
    """protocol refuses the file (exit 2, one line); refute searches it, guided, and confirms on the
    model."""
    path = tmp_path / "off_grid.safetensors"
    save_model(issue_model(W_O=0.3), path)
    argv = ("--model", str(path), "--k", "2", "--precision-bits", "1", "--json")
    line = refused(
        capsys,
        "induction",
        "protocol",
        *argv,
        needles=("not on the 2^-1 grid", "allowed: a table-form model"),
    )
    assert line.startswith("error: INDEX reduction: v·W_O of head 0 at position 1, token 0 is 0.45")
    assert "…" not in line  # short enough for the CLI's one line (400 characters)
    code, out, err = run(capsys, "induction", "refute", *argv)
    assert code == 0, err
    data = json.loads(out)
    assert data["found"] and data["model_form"] == GUIDE_FORM and data["message_bits"] is None
    tokens = np.array([{"0": 0, "1": 1, "?": 2}[t] for t in data["input"]])
    got = int(predict(issue_model(W_O=0.3), tokens[None], fixed(1))[0, -1])
    assert got == -1 and data["model_output"] == "⊥" and data["expected"] != "⊥"


def test_table_at_precision_refuses_what_has_no_table():
    model = issue_model()
    two = Transformer(model.W_E, model.W_pos, model.layers * 2, model.decoder)
    with pytest.raises(InputError, match="one-layer"):
        table_at_precision(two, 1)
    with pytest.raises(InputError):
        table_at_precision(model, 0)
    with pytest.raises(InputError):
        table_at_precision(model, 1, n_ctx=6)  # beyond the model's context


# ---------------------------------------------------------------------------------------------
# Differential: the table's fixed:p model is the weight model's
# ---------------------------------------------------------------------------------------------


def edge_values(p: int) -> np.ndarray:
    """Weights at the grid's edges: ties (odd multiples of 2^-(p+1)), ties nudged by amounts a
    float64 sum loses (1e-17 next to 0.25, 2^-(p+62)), grid points, the clip limit 2^p and just past
    it."""
    g = 2.0**-p
    tiny = 2.0 ** -(p + 62)
    base = [0.0, g, g / 2, 1.5 * g, 0.25, 0.5, 1e-17, tiny, 0.3, 1.0, 2.0**p, 2.0**p + g / 2]
    return np.array(base + [-v for v in base if v])


def edge_model(seed: int, p: int, n_ctx: int) -> Transformer:
    """A random one-layer model over 3 tokens: W_E, W_pos from edge_values (so W_E + W_pos is often
    a tie missed or made by a float64 sum), W_Q, W_K, W_V from small multiples of 1/2 (ties in
    x·W_V), W_O the identity or a small integer matrix, a LinearDecoder with small integer logits
    (argmax ties)."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 3))
    heads = int(rng.integers(1, 3))
    edges = edge_values(p)
    W_E, W_pos = rng.choice(edges, size=(3, d)), rng.choice(edges, size=(n_ctx, d))
    if seed % 3 == 0:  # exact sums needed: a tie plus an amount float64 drops
        W_pos[:, 0] = rng.choice([2.0**-p / 2, 0.25, -(2.0**-p) / 2], size=n_ctx)
        W_E[:, 0] = rng.choice([1e-17, -1e-17, 2.0 ** -(p + 62)], size=3)
    halves = lambda *shape: rng.integers(-3, 4, size=shape) * 0.5  # noqa: E731
    layer = []
    for _ in range(heads):
        d_head, d_value = int(rng.integers(1, 3)), d if seed % 2 else int(rng.integers(1, 3))
        W_O = (
            np.eye(d_value, d) if seed % 2 else rng.integers(-1, 2, size=(d_value, d)).astype(float)
        )
        layer.append(AttentionHead(halves(d, d_head), halves(d, d_head), halves(d, d_value), W_O))
    decoder = LinearDecoder(
        rng.integers(-2, 3, size=(d, 4)).astype(float), rng.integers(-1, 2, 4) * 0.5
    )
    mask = ("causal", "full")[int(rng.integers(0, 2))]
    return Transformer(W_E, W_pos, (Layer(tuple(layer)),), decoder, mask)


@pytest.mark.parametrize("p", [1, 2, 3, 5, 8])
def test_table_answers_as_the_weight_model_on_every_index_pair(p):
    k = 3
    n = 2 * k + 1
    tokens, F, stars = index_family(k)
    checked = refused_count = 0
    for seed in range(24):
        model = edge_model(seed, p, n + int(seed % 2))
        try:
            table = table_at_precision(model, p, n, 3)
        except InputError as error:
            assert (
                "outside [−2^p, 2^p]" in str(error) and not seed % 2
            )  # only integer W_O can leave it
            refused_count += 1
            continue
        expected = exact_fixed_predict(model, tokens, p, positions=[n - 1])[:, -1]
        assert np.array_equal(
            exact_fixed_predict(table, tokens, p, positions=[n - 1])[:, -1], expected
        )
        assert np.array_equal(predict(table, tokens, fixed(p))[:, -1], expected), (seed, p)
        st = lb_setup.index_setup(model, k, p)
        assert np.array_equal(predict_last(st, index_input(F, stars)), expected)
        checked += 1
    assert checked >= 16, (checked, refused_count)


@pytest.mark.parametrize("p", [1, 2, 4])
def test_protocol_counts_the_weight_models_errors(p):
    """check_protocol's model_correct is the weight model's own count (independently evaluated)."""
    k = 3
    for seed in (1, 3, 5, 7):  # W_O = I: never refused
        model = edge_model(seed, p, 2 * k + 1)
        wrong, pairs = model_error(model, k, p)
        report = check_protocol(model, k, p)
        assert report.model_form == WEIGHTS_FORM
        assert (report.pairs_checked, report.pairs_checked - report.model_correct) == (pairs, wrong)
        assert report.disagreements == report.disagreements_explained


@pytest.mark.parametrize("p", [1, 3, 8])
def test_table_entries_are_the_models_rounded_values(p):
    """Every entry recomputed in Fractions (core.passes.exact_fixed.exact_round_fixed rounds one
    rational): ψ_in = round_p(W_E + W_pos), Q̃ = round_p(ψ_in W_Q), K̃ = round_p(ψ_in W_K), Ṽ =
    round_p(ψ_in W_V) W_O."""
    n = 5
    for seed in range(8):
        model = edge_model(seed, p, n)
        try:
            table = table_at_precision(model, p, n, 3)
        except InputError:
            continue
        F = lambda a: np.vectorize(Fraction, otypes=[object])(a)  # noqa: E731
        rnd = np.vectorize(lambda v: Fraction(str(exact_round_fixed(v, p))), otypes=[object])
        x = rnd(F(model.W_pos[:n])[:, None, :] + F(model.W_E)[None, :, :])  # [n 3 d]
        assert np.array_equal(F(table.embed), x)
        for h, head in enumerate(model.layers[0].heads):
            width = head.W_Q.shape[1]
            assert np.array_equal(F(table.Q[h][..., :width]), rnd(x.dot(F(head.W_Q))))
            assert np.array_equal(F(table.K[h][..., :width]), rnd(x.dot(F(head.W_K))))
            assert not table.Q[h][..., width:].any()
            assert np.array_equal(F(table.V[h]), rnd(x.dot(F(head.W_V))).dot(F(head.W_O)))
