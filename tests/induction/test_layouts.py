"""Task layouts (issue 14, points 5 and 6): hop-prefix and plain inputs and labels, per-hop
evaluation with exact counts, certify in the hop-prefix layout, imported-style models (decoder
"vocab") and the checks."""

from __future__ import annotations

import dataclasses
import inspect
import re

import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.common.resources import memory_limit_of
from headcount.core.certify.certify import IGNORE
from headcount.core.certify.evaluate import predict
from headcount.core.model import MLP, AttentionHead, Layer, LayerNorm, Transformer
from headcount.core.model.symbols import BOTTOM
from headcount.core.model.vocab import VocabDecoder, VocabMap
from headcount.core.numbers.precision import IEEE_DTYPES, fixed
from headcount.induction import layouts, task
from headcount.induction.certification import certify_induction
from headcount.induction.construction import two_layer_induction
from headcount.induction.layouts import (
    EVAL_SAMPLES,
    EVAL_SEED,
    MAX_HOPS,
    evaluate_model,
    lay_out,
    layout_reference,
    layout_targets,
    parse_hops,
)


def heldout(
    n: int, alphabet: int, generator: str = "no_adjacent_repeats", samples: int = EVAL_SAMPLES
):
    """The characters evaluate draws (the learning lab's held-out set at the default seed)."""
    rng = np.random.default_rng([EVAL_SEED, n, alphabet])
    return task.GENERATORS[generator](rng, samples, n, alphabet)


def imported(
    model: Transformer, alphabet: int, hops: int, extra: int = 5, seed: int = 0
) -> Transformer:
    """`model` (plain, tokens 0..alphabet+hops−1, a linear decoder) as an imported model speaks: its
    tokens at scattered ids of a larger vocabulary that a vocabulary map names, logits over that
    vocabulary (lm-head), the ids the task does not use never winning."""
    rng = np.random.default_rng(seed)
    vocab = alphabet + hops + 1 + extra
    ids = rng.permutation(vocab)
    symbols, hop_ids, none = (
        ids[:alphabet],
        ids[alphabet : alphabet + hops],
        int(ids[alphabet + hops]),
    )
    W_E = rng.standard_normal((vocab, model.d_model))
    W_E[symbols], W_E[hop_ids] = model.W_E[:alphabet], model.W_E[alphabet : alphabet + hops]
    W_U, b_U = np.zeros((model.d_model, vocab)), np.full(vocab, -1e12)
    W_U[:, symbols], b_U[symbols] = model.decoder.W_U[:, :alphabet], model.decoder.b_U[:alphabet]
    W_U[:, none], b_U[none] = model.decoder.W_U[:, -1], model.decoder.b_U[-1]
    vmap = VocabMap.from_json(
        {"symbols": symbols.tolist(), "hops": hop_ids.tolist(), "hops_from": 1, "none": none}
    )
    return dataclasses.replace(model, W_E=W_E, decoder=VocabDecoder(W_U, b_U, "lm-head", vmap))


def gpt2_style(seed: int = 0, d: int = 8, vocab: int = 9, n_ctx: int = 7) -> Transformer:
    """A small random model with the GPT-2 block (LayerNorms, biases, scale, GELU MLP, tied readout)
    and a vocabulary map: symbols 0..2 at ids 4..6, hop tokens at 1, 2, 3, none at 8."""
    rng = np.random.default_rng(seed)

    def ln():
        return LayerNorm(1 + 0.1 * rng.standard_normal(d), 0.1 * rng.standard_normal(d), 1e-5)

    heads = tuple(
        AttentionHead(*(rng.standard_normal(s) for s in ((d, 4), (d, 4), (d, 4), (4, d), 4, 4, 4)))
        for _ in range(2)
    )
    mlp = MLP(
        rng.standard_normal((d, 2 * d)),
        rng.standard_normal(2 * d),
        rng.standard_normal((2 * d, d)),
        rng.standard_normal(d),
        "gelu_tanh",
    )
    layer = Layer(heads, mlp, ln(), ln(), rng.standard_normal(d), 0.5)
    W_E = rng.standard_normal((vocab, d))
    vmap = VocabMap.from_json({"symbols": [4, 5, 6], "hops": [1, 2, 3], "hops_from": 1, "none": 8})
    decoder = VocabDecoder(W_E.T.copy(), None, "tied", vmap)
    return Transformer(W_E, rng.standard_normal((n_ctx, d)), (layer,), decoder, ln_final=ln())


# ---------------------------------------------------------------------------------------------
# Layouts
# ---------------------------------------------------------------------------------------------


def test_constants_agree_with_the_learning_lab_and_the_cli():
    from headcount.cli.evaluate import evaluate
    from headcount.learn import evaluate as lab

    assert (EVAL_SEED, EVAL_SAMPLES) == (lab.EVAL_SEED, lab.EVAL_SIZE)
    defaults = {p.name: p.default.default for p in inspect.signature(evaluate).parameters.values()}
    assert (defaults["seed"], defaults["samples"]) == (EVAL_SEED, EVAL_SAMPLES)
    assert MAX_HOPS == 16


@pytest.mark.parametrize(
    "text, hops",
    [
        ("3", (3,)),
        ("1..4", (1, 2, 3, 4)),
        (" 2..2 ", (2,)),
        ("16", (16,)),
        ("1 .. 16", tuple(range(1, 17))),
        ("0", (0,)),
        ("0..16", tuple(range(17))),
    ],
)
def test_parse_hops(text, hops):
    assert parse_hops(text) == hops


@pytest.mark.parametrize(
    "text",
    [
        "17",
        "3..1",
        "1..17",
        "a",
        "",
        "1...3",
        "1..",
        "..3",
        "-1",
        "1e3",
        "٣",
        "1,2",
        "9" * 5000,
    ],
)
def test_parse_hops_refuses_with_the_allowed_forms(text):
    with pytest.raises(InputError, match=r"give K or a range a\.\.b with 0 ≤ a ≤ b ≤ 16"):
        parse_hops(text)


def test_hop_prefix_input_and_labels():
    sigma = np.array([[0, 1, 0, 2, 0, 1], [2, 1, 2, 1, 2, 1]])
    tokens = lay_out(sigma, "hop-prefix", 3, 2)
    assert tokens.tolist() == [[4, 0, 1, 0, 2, 0, 1], [4, 2, 1, 2, 1, 2, 1]]
    target = layout_targets(sigma, "hop-prefix", 2)
    for row, chars in zip(target, sigma):  # position 0 not scored, then hop_2 of the characters
        assert row[0] == IGNORE and row[1:].tolist() == task.induction_targets_literal(
            chars.tolist(), 2
        )
    assert np.array_equal(layout_reference("hop-prefix", 2)(tokens), target)
    assert lay_out(sigma, "plain", 3, 2) is sigma
    assert np.array_equal(layout_targets(sigma, "plain", 2), task.induction_targets(sigma, 2))
    assert np.array_equal(layout_reference("plain", 3)(sigma), task.induction_targets(sigma, 3))


# ---------------------------------------------------------------------------------------------
# evaluate: exact counts
# ---------------------------------------------------------------------------------------------


def test_plain_construction_has_no_errors():
    result = evaluate_model(two_layer_induction(12, 4), "induction", 12, 4)
    (hop,) = result.per_hop
    target = task.induction_targets(heldout(12, 4, "uniform"))
    assert (result.layout, hop.hops, hop.errors, hop.errors_none) == ("plain", 1, 0, 0)
    assert (hop.positions, hop.positions_none) == (
        int((target >= 0).sum()),
        int((target == BOTTOM).sum()),
    )
    assert result.model == {
        "layers": 2,
        "heads": [2, 1],
        "d_model": 19,
        "n_ctx": 12,
        "vocab": 4,
        "decoder": "linear",
        "extensions": [],
    }


def test_hop_prefix_counts_are_exact():
    """The construction over S + 2 tokens at n + 1 reads the hop token as a fresh symbol, so on the
    hop-prefix layout it answers hop 1 exactly: no errors at k = 1, and at k = 2 exactly the
    positions where hop 2's answer differs from hop 1's."""
    n, S = 9, 3
    result = evaluate_model(two_layer_induction(n + 1, S + 2), "khop", n, S, (1, 2))
    assert result.layout == "hop-prefix" and [h.hops for h in result.per_hop] == [1, 2]
    sigma = heldout(n, S)
    one, two = task.induction_targets(sigma, 1), task.induction_targets(sigma, 2)
    first, second = result.per_hop
    assert (first.errors, first.errors_none) == (0, 0)
    assert (
        first.positions == int((one >= 0).sum())
        and first.positions + first.positions_none == sigma.size
    )
    assert second.positions == int((two >= 0).sum())
    assert second.errors == int(((two >= 0) & (one != two)).sum()) > 0
    assert second.errors_none == int(((two == BOTTOM) & (one != two)).sum()) > 0
    assert second.error == 1.0 - (second.positions - second.errors) / second.positions


def test_plain_khop_uses_one_sigma_for_every_k():
    n, S = 8, 3
    result = evaluate_model(
        two_layer_induction(n, S), "khop", n, S, (1, 2, 3), layout="plain", samples=50
    )
    sigma = heldout(n, S, samples=50)
    got = predict(two_layer_induction(n, S), sigma)
    for hop in result.per_hop:
        target = task.induction_targets(sigma, hop.hops)
        assert hop.errors == int(((got != target) & (target >= 0)).sum())
        assert hop.errors_none == int(((got != target) & (target < 0)).sum())


def test_imported_style_model_answers_like_the_model_it_wraps():
    n, S = 9, 3
    plain = two_layer_induction(n + 1, S + 2)
    wrapped = imported(plain, S, 2)
    a = evaluate_model(plain, "khop", n, S, (1, 2), samples=300)
    b = evaluate_model(wrapped, "khop", n, S, (1, 2), samples=300)
    assert [h.to_json() for h in a.per_hop] == [h.to_json() for h in b.per_hop]
    assert (
        b.model["decoder"] == "vocab" and b.model["readout"] == "lm-head" and b.model["vocab"] == 11
    )


def test_fixed_precision_is_the_exact_fixed_model():
    n, S = 10, 3
    model = two_layer_induction(n + 1, S + 1)
    result = evaluate_model(
        model, "induction", n, S, layout="hop-prefix", samples=40, precision="fixed:4"
    )
    sigma = heldout(n, S, "uniform", samples=40)
    got = predict(model, lay_out(sigma, "hop-prefix", S, 1), fixed(4))[:, 1:]
    target = task.induction_targets(sigma)
    (hop,) = result.per_hop
    assert hop.undecided == 0 and result.precision == "fixed:4"
    assert (hop.errors, hop.errors_none) == (
        int(((got != target) & (target >= 0)).sum()),
        int(((got != target) & (target < 0)).sum()),
    )
    assert hop.errors + hop.errors_none > 0  # 4 bits are too few for this construction


def test_markdown_table():
    text = evaluate_model(two_layer_induction(6, 3), "induction", 6, 3, samples=10).to_markdown()
    lines = text.splitlines()
    assert (
        lines[0] == "induction, plain layout: n=6, alphabet=3, 10 samples (seed 20240601), float64"
    )
    assert lines[2] == "| hops | error | positions | error (⊥) | positions (⊥) |"
    assert lines[4].startswith("| 1 | 0.0000 | ") and len(lines) == 5


def test_gpt2_style_model_evaluates():
    result = evaluate_model(gpt2_style(), "khop", 6, 3, (1, 2, 3), samples=64, precision="float32")
    assert result.model["extensions"] == [
        "attention biases",
        "attention scale",
        "gelu",
        "layernorm",
    ]
    for hop in result.per_hop:
        assert hop.positions + hop.positions_none == 64 * 6 and 0 <= hop.error <= 1


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(task_name="induction", hops=(2,)), "task induction is hop count 1"),
        (dict(task_name="copy"), "task 'copy' is not available: use khop or induction"),
        (dict(layout="prefix"), "layout 'prefix' is not available: use plain or hop-prefix"),
        (dict(hops=(17,)), "hops must be ≤ 16"),
        (dict(hops=()), "give at least one hop count"),
        (
            dict(n=7),
            "the model's context holds 7 tokens; n 7 with layout hop-prefix needs n \\+ 1 = 8",
        ),
        (dict(n=0), "n must be ≥ 1"),
        (dict(alphabet=1), "alphabet must be ≥ 2"),
        (dict(alphabet=4), "the vocabulary map has 3 symbols; alphabet 4 needs 4"),
        (
            dict(hops=(1, 2, 3, 4)),
            "the vocabulary map has no token for hop count 4; it names hop counts 1..3",
        ),
        (dict(samples=0), "samples must be ≥ 1"),
        (dict(seed=-1), "seed must be ≥ 0"),
        (dict(precision="fixed:61"), "fixed:p needs an integer p in 1..60"),
        (dict(samples=10**12), "multiply-adds .* allowed up to .* \\(lower samples, hops or n\\)"),
    ],
)
def test_evaluate_refuses_with_one_line(kwargs, message):
    args = dict(task_name="khop", n=6, alphabet=3, hops=(1,)) | kwargs
    with pytest.raises(InputError, match=message) as refused:
        evaluate_model(gpt2_style(), **args)
    named = re.match(
        r"([a-z_]+) ", message
    )  # a message that starts with the parameter at fault names it
    if named and named.group(1) in args:
        assert refused.value.param == named.group(1)


def test_evaluate_is_bounded_by_memory():
    with (
        memory_limit_of("8M"),
        pytest.raises(InputError, match="evaluate at n 6 .* memory; the limit is"),
    ):
        evaluate_model(gpt2_style(), "khop", 6, 3, samples=1_000_000)


# ---------------------------------------------------------------------------------------------
# certify in the hop-prefix layout
# ---------------------------------------------------------------------------------------------


def test_certify_hop_prefix_on_a_construction():
    n, S = 6, 3
    result = certify_induction(two_layer_induction(n + 1, S + 1), n, S, layout="hop-prefix")
    out = result.to_json()
    assert (out["layout"], out["hops"], out["scope"]) == ("hop-prefix", 1, "exhaustive")
    assert out["inputs_checked"] == S**n and out["positions_checked"] == S**n * n
    assert (out["errors"], out["certified"], out["uncertified_positions"]) == (0, True, 0)
    targets = task.induction_targets(task.all_sequences(n, S))
    assert result.certificate.bottom_positions == int((targets == BOTTOM).sum())
    assert all(r["position"] >= 2 and r["input"][0] == S for r in out["rejected"])


def test_certify_hop_prefix_counterexample_counts_the_hop_token():
    n, S = 6, 3
    cert = certify_induction(
        two_layer_induction(n + 1, S + 2), n, S, hops=2, layout="hop-prefix"
    ).certificate
    sigma = task.all_sequences(n, S)
    one, two = task.induction_targets(sigma, 1), task.induction_targets(sigma, 2)
    assert cert.errors == int((one != two).sum()) and not cert.certified
    first = cert.first_counterexample
    assert (
        first.input[0] == S + 1 and first.position >= 2
    )  # 1-based over the whole input, hop token first
    chars = list(first.input[1:])
    assert first.expected == str(
        task.induction_targets_literal(chars, 2)[first.position - 2]
    ).replace("-1", "⊥")


def test_certify_plain_json_is_unchanged_and_hop_prefix_needs_hop_tokens():
    out = certify_induction(two_layer_induction(6, 3), 6, 3).to_json()
    assert "layout" not in out and out["hops"] == 1
    with pytest.raises(
        InputError, match="the model reads 3 input tokens; 3 symbols and 1 hop tokens need 4"
    ):
        certify_induction(two_layer_induction(7, 3), 6, 3, layout="hop-prefix")
    with pytest.raises(InputError, match="hops must be ≤ 16") as refused:
        certify_induction(two_layer_induction(6, 3), 6, 3, hops=17)
    assert refused.value.param == "hops"


def test_certify_an_imported_gpt2_style_model():
    result = certify_induction(
        gpt2_style(), 6, 3, samples=16, hops=2, layout="hop-prefix", from_file=True
    )
    out = result.to_json()
    assert (out["layout"], out["hops"], out["scope"], out["dim"]) == (
        "hop-prefix",
        2,
        "exhaustive",
        8,
    )
    assert out["positions_checked"] == out["inputs_checked"] * 6 == 3**6 * 6
    assert out["errors"] > 0 and out["certified"] is False  # random weights
    assert out["precision_bits"] is None or 1 <= out["precision_bits"] <= 60
    assert set(out["dtypes_exact"]) <= set(IEEE_DTYPES)
    assert (
        out["uncertified_positions"] is None
        or out["uncertified_positions"] <= out["positions_checked"]
    )


def test_certify_imported_style_construction_matches_the_plain_one():
    n, S = 5, 3
    plain = certify_induction(
        two_layer_induction(n + 1, S + 1), n, S, layout="hop-prefix"
    ).to_json()
    wrapped = certify_induction(
        imported(two_layer_induction(n + 1, S + 1), S, 1), n, S, layout="hop-prefix"
    )
    out = wrapped.to_json()
    for key in (
        "inputs_checked",
        "positions_checked",
        "errors",
        "bottom_positions",
        "dtypes_exact",
    ):
        assert out.get(key) == plain.get(key), key
    assert out["errors"] == 0 and out["precision_bits"] is not None
    assert out["precision_bits"] <= plain["precision_bits"]


def test_layout_helpers_refuse_unknown_layouts():
    with pytest.raises(InputError, match="layout 'Plain' is not available"):
        layouts.prefix_length("Plain")
