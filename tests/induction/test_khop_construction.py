"""The k-hop constructions (induction/multihop/construction.py) answer hop_k exactly: exhaustive
over small Σ^n, random and k-hop-hard inputs at n = 256, the hop-prefix model for every k ≤ 16;
depth ⌈log₂ k⌉ + 2, at most two heads a layer, d_model independent of n and S; the residual state
layer by layer is what the module docstring says (pointers find^{2^{t−2}}, the partial hop count, ⊥
flags), within its error budget; the `construct` options and their refusals; certify runs on both
models."""

import dataclasses
import json
import math
import re
import time

import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.core.certify.evaluate import certified_predict, predict
from headcount.core.model.files import load_model
from headcount.core.model.symbols import BOTTOM
from headcount.core.numbers.precision import EXACT
from headcount.core.passes.forward import residual_stream
from headcount.induction import task
from headcount.induction.certification import certify_induction
from headcount.induction.construction import digit_base, two_layer_induction
from headcount.induction.layouts import lay_out, layout_targets
from headcount.induction.multihop.construction import (
    G_HI,
    G_LO,
    H_BOT,
    H_HI,
    H_LO,
    KHOP_DIM,
    MAX_CONSTRUCTION_HOPS,
    READ_G,
    READ_H,
    khop_construction,
    khop_layers,
    variable_hop_construction,
)
from headcount.induction.multihop.families import KHOP_FAMILIES
from headcount.induction.multihop.request import construction_request, write_requested_construction
from tests.cli_run import refused, run

RANDOM_HOPS = (1, 2, 3, 4, 5, 7, 8, 15, 16)


def depth(k: int) -> int:
    return math.ceil(math.log2(k)) + 2


# ---------------------------------------------------------------------------------------------
# k-hop-hard inputs: certify's families (induction/multihop/families.py), all-equal inputs, and the
# last position's k-th hop falling off the start
# ---------------------------------------------------------------------------------------------


def bottom_at_last_step(rng, n, S, k):
    """Other tokens, then a b a b … (k + 1 tokens) at the end: the last position's chain has k − 1
    hops and hop k is ⊥ (needs S ≥ 3 unless n = k + 1)."""
    a, b = rng.choice(S, 2, replace=False)
    others = np.setdiff1d(np.arange(S), [a, b])
    head = rng.choice(others, n - (k + 1)) if n > k + 1 else np.zeros(0, dtype=np.int64)
    return np.concatenate([head, np.array([a, b] * (k + 1))[: k + 1]]).astype(np.int64)


def hard_inputs(rng, n, S, k, per_family=4):
    parts = [generate(rng, per_family, n, S, k) for generate in KHOP_FAMILIES.values()]
    parts += [
        task.all_equal(rng, 2, n, S),
        np.stack([bottom_at_last_step(rng, n, S, k) for _ in range(per_family)]),
    ]
    return np.concatenate(parts)


def test_bottom_at_last_step():
    rng = np.random.default_rng(0)
    for k in (1, 2, 5, 16):
        sigma = np.stack([bottom_at_last_step(rng, 40, 5, k) for _ in range(3)])
        assert (task.induction_targets(sigma, k)[:, -1] == BOTTOM).all()
        if k > 1:
            assert (task.induction_targets(sigma, k - 1)[:, -1] != BOTTOM).all()


# ---------------------------------------------------------------------------------------------
# Shape
# ---------------------------------------------------------------------------------------------


def test_depth_heads_and_width():
    for k in range(1, 34):
        assert khop_layers(k) == depth(k)
        widths = set()
        for n, S in [(34, 2), (64, 64), (300, 7)]:
            model = khop_construction(n, S, k)
            assert len(model.layers) == depth(k)
            assert max(model.heads_per_layer) <= 2
            widths.add(model.d_model)
        assert widths == {19 if k == 1 else KHOP_DIM}  # independent of n and S
    for K in (1, 2, 3, 4, 5, 8, 9, 16):
        widths = set()
        for n, S in [(16, 2), (40, 16)]:
            model = variable_hop_construction(n, S, K)
            assert len(model.layers) == depth(K)
            assert model.heads_per_layer == [2] + ([2] if K > 1 else [1]) + [1] * (depth(K) - 2)
            assert (model.n_ctx, model.alphabet, model.decoder.alphabet) == (n + 1, S + K, S)
            widths.add(model.d_model)
        assert widths == {KHOP_DIM + math.ceil(math.log2(K))}


def test_hops_1_is_the_two_layer_construction():
    for n, S in [(2, 2), (17, 5), (256, 16)]:
        one, two = khop_construction(n, S, 1), two_layer_induction(n, S)
        assert one.info == two.info
        for a, b in zip(_arrays(one), _arrays(two), strict=True):
            assert np.array_equal(a, b)


def _arrays(model):
    yield from (model.W_E, model.W_pos, model.decoder.W_U, model.decoder.b_U)
    for layer in model.layers:
        for head in layer.heads:
            yield from (head.W_Q, head.W_K, head.W_V, head.W_O)
        if layer.mlp is not None:
            yield from (layer.mlp.W_in, layer.mlp.b_in, layer.mlp.W_out, layer.mlp.b_out)


@pytest.mark.parametrize(
    "build",
    [lambda: khop_construction(1000, 64, 11), lambda: variable_hop_construction(500, 9, 16)],
)
def test_weights_are_dyadic(build):
    # integers and powers of two (times integers): fixed:p rounding of q, k, v and the MLP outputs
    # is exact
    for a in _arrays(build()):
        assert np.array_equal(a * 2**12, np.round(a * 2**12))


def test_info_says_what_the_model_is():
    model = khop_construction(20, 3, 5)
    assert {
        k: model.info[k]
        for k in ("construction", "task", "hops", "layers", "layout", "n", "alphabet")
    } == {
        "construction": "khop_pointer_doubling",
        "task": "khop",
        "hops": 5,
        "layers": 5,
        "layout": "plain",
        "n": 20,
        "alphabet": 3,
    }
    assert model.info["parameters"]["token_base"] == digit_base(3)
    variable = variable_hop_construction(20, 3, 6)
    assert variable.info["layout"] == "hop-prefix" and variable.info["max_hops"] == 6
    assert (
        variable.info["construction"] == "variable_hop_pointer_doubling"
        and variable.info["layers"] == 5
    )


# ---------------------------------------------------------------------------------------------
# Exact answers
# ---------------------------------------------------------------------------------------------

SMALL = [(2, 2), (3, 2), (6, 2), (10, 2), (3, 3), (5, 3), (7, 3), (4, 4), (6, 4), (5, 5)]


@pytest.mark.parametrize("n,S", SMALL)
def test_exhaustive_small_sizes(n, S):
    tokens = task.all_sequences(n, S)
    for k in range(1, 5):
        model = khop_construction(n, S, k)
        assert np.array_equal(predict(model, tokens), task.induction_targets(tokens, k)), k


@pytest.mark.parametrize("n,S,k", [(6, 3, 2), (5, 4, 3), (8, 2, 4), (7, 3, 5)])
def test_exhaustive_proven_in_real_arithmetic(n, S, k):
    model = khop_construction(n, S, k)
    tokens = task.all_sequences(n, S)
    got, proven = certified_predict(model, tokens, EXACT)
    assert np.array_equal(got, task.induction_targets(tokens, k)) and proven.all()


def _random_inputs(rng, count, n, S):
    half = count // 2
    return np.concatenate(
        [task.uniform(rng, half, n, S), task.no_adjacent_repeats(rng, count - half, n, S)]
    )


def test_random_inputs_at_n256_quick():
    rng = np.random.default_rng(256)
    for k in RANDOM_HOPS:
        tokens = _random_inputs(rng, 8, 256, 16)
        assert np.array_equal(
            predict(khop_construction(256, 16, k), tokens), task.induction_targets(tokens, k)
        ), k


@pytest.mark.slow
def test_random_and_adversarial_inputs_at_n256():
    rng = np.random.default_rng(2560)
    for k in RANDOM_HOPS:
        model = khop_construction(256, 16, k)
        tokens = np.concatenate(
            [_random_inputs(rng, 256, 256, 16)]
            + [task.GENERATORS[name](rng, 8, 256, 16) for name in task.ADVERSARIAL_FAMILIES]
        )
        assert np.array_equal(predict(model, tokens), task.induction_targets(tokens, k)), k


@pytest.mark.parametrize("n,S", [(40, 3), (256, 16)])
def test_khop_hard_inputs(n, S):
    rng = np.random.default_rng(n)
    for k in RANDOM_HOPS:
        tokens = hard_inputs(rng, n, S, k)
        assert np.array_equal(
            predict(khop_construction(n, S, k), tokens), task.induction_targets(tokens, k)
        ), k


def test_variable_hops_every_k_at_n128():
    rng = np.random.default_rng(128)
    model = variable_hop_construction(128, 16, 16)
    sigma = np.concatenate(
        [_random_inputs(rng, 8, 128, 16), hard_inputs(rng, 128, 16, 9, per_family=1)]
    )
    for k in range(1, 17):
        got = predict(model, lay_out(sigma, "hop-prefix", 16, k))
        target = layout_targets(sigma, "hop-prefix", k)
        assert np.array_equal(got[:, 1:], target[:, 1:]), k


@pytest.mark.parametrize("K", [1, 3, 4])
def test_variable_hops_exhaustive_small(K):
    sigma = task.all_sequences(6, 3)
    model = variable_hop_construction(6, 3, K)
    for k in range(1, K + 1):
        got = predict(model, lay_out(sigma, "hop-prefix", 3, k))
        assert np.array_equal(got[:, 1:], task.induction_targets(sigma, k)), k


# ---------------------------------------------------------------------------------------------
# The residual state, layer by layer (module docstring)
# ---------------------------------------------------------------------------------------------


def chase(tokens: np.ndarray, hops: int) -> np.ndarray:
    """0-based find^hops [batch pos], −1 for ⊥."""
    find = task.find_positions(tokens)
    pos = np.broadcast_to(np.arange(tokens.shape[1]), tokens.shape).copy()
    for _ in range(hops):
        pos = np.where(pos >= 0, np.take_along_axis(find, np.maximum(pos, 0), axis=1), -1)
    return pos


def check_state(model, tokens, hops, bits_base=None):
    """After every layer t ≥ 2: G = find^{2^{t−2}} (find^{2^{t−3}} after the last; ⊥ → position 1),
    H = find^a with a = 1 + ((k − 1) mod 2^{t−2}), H_BOT its ⊥ flag, all within 1/16; read slots
    cleared."""
    L, tb = len(model.layers), model.info["parameters"]["token_base"]
    pb = model.info["parameters"]["pos_base"]
    for t in range(2, L + 1):
        x = residual_stream(dataclasses.replace(model, layers=model.layers[:t]), tokens)
        g_hops = 1 if t == 2 else 2 ** (t - 2) if t < L else 2 ** (t - 3)
        pointer = np.maximum(chase(tokens, g_hops), 0)  # ⊥ is position 1 (0-based 0)
        assert np.abs(x[..., G_HI] - pointer // pb).max() <= 1 / 16
        assert np.abs(x[..., G_LO] - pointer % pb).max() <= 1 / 16
        a = 1 + (hops - 1) % 2 ** (t - 2)
        h = chase(tokens, a)
        bottom = h < 0
        assert np.abs(x[..., H_BOT] - bottom).max() <= 1 / 16
        token = np.take_along_axis(tokens, np.maximum(h, 0), axis=1)
        for col, digit in ((H_HI, token // tb), (H_LO, token % tb)):
            assert np.abs(x[..., col] - digit)[~bottom].max(initial=0) <= 1 / 16
        if t >= 3:
            assert not x[..., [*READ_G, *READ_H]].any()
        if (
            bits_base is not None and t >= 2
        ):  # hop-prefix: the bits of k − 1, exactly 0/1, everywhere
            for m in range(L - 2):
                assert np.array_equal(
                    x[..., bits_base + m], np.full(x.shape[:2], ((hops - 1) >> m) & 1)
                )


@pytest.mark.parametrize("k", [2, 3, 6, 11, 16])
def test_state_layer_by_layer(k):
    rng = np.random.default_rng(k)
    tokens = np.concatenate(
        [_random_inputs(rng, 6, 60, 4), hard_inputs(rng, 60, 4, k, per_family=1)]
    )
    check_state(khop_construction(60, 4, k), tokens, k)


@pytest.mark.parametrize("k", [1, 2, 5, 8])
def test_variable_state_layer_by_layer(k):
    rng = np.random.default_rng(k)
    sigma = np.concatenate(
        [_random_inputs(rng, 6, 50, 5), hard_inputs(rng, 50, 5, k, per_family=1)]
    )
    check_state(
        variable_hop_construction(50, 5, 8), lay_out(sigma, "hop-prefix", 5, k), k, KHOP_DIM
    )


# ---------------------------------------------------------------------------------------------
# Requests, checks, files, the command line
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call,needle",
    [
        (lambda: khop_construction(8, 3, 0), "hops must be ≥ 1"),
        (lambda: khop_construction(8, 3, MAX_CONSTRUCTION_HOPS + 1), f"≤ {MAX_CONSTRUCTION_HOPS}"),
        (lambda: khop_construction(8, 9, 2), "alphabet ≤ n"),
        (lambda: khop_construction(0, 2, 2), "n 0 is too small"),
        (lambda: variable_hop_construction(8, 1, 2), "alphabet 1 is too small"),
        (lambda: variable_hop_construction(8, 3, 0), "max_hops must be ≥ 1"),
        (
            lambda: construction_request(None, None, "plain", None, 8, 3),
            "give layers {1,2} or hops k",
        ),
        (lambda: construction_request(2, 3, "plain", None, 8, 3), "layers 2 does not fit hops 3"),
        (lambda: construction_request(None, 3, "hop-prefix", 4, 8, 3), "hops is for layout plain"),
        (lambda: construction_request(None, None, "hop-prefix", None, 8, 3), "needs max_hops K"),
        (
            lambda: construction_request(None, 2, "plain", 4, 8, 3),
            "max_hops is for layout hop-prefix",
        ),
        (
            lambda: construction_request(3, None, "hop-prefix", 4, 8, 3),
            "layers 3 does not fit max_hops 4",
        ),
        (
            lambda: construction_request(None, 2, "prefix", None, 8, 3),
            "layout 'prefix' is not available",
        ),
    ],
)
def test_refusals_say_what_is_wrong(call, needle):
    with pytest.raises(InputError, match=None) as err:
        call()
    assert needle in str(err.value)
    named = re.match(
        r"(?:give )?([a-z_]+)", needle
    )  # the parameter at fault, where the needle starts with it
    if named and named.group(1) in ("hops", "n", "alphabet", "max_hops", "layers", "layout"):
        assert err.value.param == named.group(1)


def test_requests():
    assert construction_request(1, None, "plain", None, 8, 3).kind == "layers"
    assert construction_request(None, 1, "plain", None, 8, 3) == construction_request(
        2, 1, "plain", None, 8, 3
    )
    assert construction_request(1, 1, "plain", None, 8, 3).layers == 1
    request = construction_request(None, 9, "plain", None, 8, 3)
    assert (request.kind, request.layers, request.hops) == ("khop", 6, 9)
    request = construction_request(6, None, "hop-prefix", 16, 8, 3)
    assert (request.kind, request.layers, request.max_hops) == ("variable", 6, 16)


def test_written_files_load_with_the_same_answers(tmp_path):
    rng = np.random.default_rng(5)
    sigma = _random_inputs(rng, 16, 12, 3)
    result = write_requested_construction(tmp_path / "k3.safetensors", 12, 3, hops=3)
    assert result.to_json() == {
        "path": str(tmp_path / "k3.safetensors"),
        "layers": 4,
        "heads": [2, 1, 1, 1],
        "dim": KHOP_DIM,
        "n": 12,
        "alphabet": 3,
        "hops": 3,
        "depth": "ceil",
    }
    assert np.array_equal(predict(load_model(result.path), sigma), task.induction_targets(sigma, 3))
    result = write_requested_construction(
        tmp_path / "v.safetensors", 12, 3, layout="hop-prefix", max_hops=5
    )
    assert (result.layers, result.layout, result.max_hops, result.hops) == (
        5,
        "hop-prefix",
        5,
        None,
    )
    model = load_model(result.path)
    for k in range(1, 6):
        assert np.array_equal(
            predict(model, lay_out(sigma, "hop-prefix", 3, k))[:, 1:],
            task.induction_targets(sigma, k),
        )


def test_construct_command(capsys, tmp_path):
    path = str(tmp_path / "m.safetensors")
    code, out, _ = run(
        capsys,
        "induction",
        "construct",
        "--hops",
        "5",
        "--n",
        "16",
        "--alphabet",
        "4",
        "--out",
        path,
        "--json",
    )
    assert code == 0
    assert json.loads(out) | {"path": None} == {
        "path": None,
        "layers": 5,
        "heads": [2, 1, 1, 1, 1],
        "dim": KHOP_DIM,
        "n": 16,
        "alphabet": 4,
        "hops": 5,
        "depth": "ceil",
    }
    code, out, _ = run(
        capsys,
        "induction",
        "construct",
        "--layout",
        "hop-prefix",
        "--max-hops",
        "16",
        "--n",
        "16",
        "--alphabet",
        "4",
        "--out",
        path,
        "--json",
    )
    assert code == 0 and json.loads(out)["layers"] == 6 and json.loads(out)["max_hops"] == 16
    # --hops 1 writes today's two-layer file, byte for byte
    two = str(tmp_path / "two.safetensors")
    assert (
        run(
            capsys,
            "induction",
            "construct",
            "--layers",
            "2",
            "--n",
            "9",
            "--alphabet",
            "3",
            "--out",
            two,
        )[0]
        == 0
    )
    code, out, _ = run(
        capsys,
        "induction",
        "construct",
        "--hops",
        "1",
        "--n",
        "9",
        "--alphabet",
        "3",
        "--out",
        path,
        "--json",
    )
    assert code == 0 and json.loads(out)["hops"] == 1 and json.loads(out)["dim"] == 19
    assert (tmp_path / "two.safetensors").read_bytes() == (tmp_path / "m.safetensors").read_bytes()


def test_construct_command_refusals(capsys, tmp_path):
    path = str(tmp_path / "m.safetensors")
    base = ("induction", "construct", "--n", "16", "--alphabet", "4", "--out", path)
    refused(
        capsys, *base, "--hops", "3", "--layers", "2", needles=("--layers 2 does not fit --hops 3",)
    )
    refused(capsys, *base, needles=("give --layers {1,2} or --hops k",))
    refused(capsys, *base, "--hops", "0", needles=("--hops must be ≥ 1",))
    refused(capsys, *base, "--layout", "hop-prefix", needles=("--max-hops K",))
    refused(
        capsys,
        *base,
        "--layout",
        "hop-prefix",
        "--max-hops",
        "99999",
        needles=("--max-hops must be ≤",),
    )
    line = refused(
        capsys,
        "induction",
        "construct",
        "--hops",
        "3",
        "--n",
        "1000000000",
        "--alphabet",
        "4",
        "--out",
        path,
    )
    assert line.startswith(
        "error: the 4-layer k-hop construction at --n 1000000000 --alphabet 4 needs about"
    )
    assert not (tmp_path / "m.safetensors").exists()
    code, out, _ = run(capsys, "induction", "construct", "--help")
    text = " ".join(out.replace("│", " ").split())
    assert code == 0 and text.count(f"1 ≤ k ≤ {MAX_CONSTRUCTION_HOPS}") == 1
    assert f"1 ≤ K ≤ {MAX_CONSTRUCTION_HOPS}" in text and "⌈log₂ k⌉ + 2" in text


# ---------------------------------------------------------------------------------------------
# certify runs on both models
# ---------------------------------------------------------------------------------------------


def test_certify_exhaustive_small():
    model = khop_construction(8, 3, 3)
    cert = certify_induction(model, 8, 3, hops=3, dtypes=False)
    c = cert.certificate
    assert cert.exhaustive and c.inputs_checked == 3**8 and c.errors == 0 and c.certified
    assert cert.layers == 4 and cert.construction == "khop_pointer_doubling"
    variable = variable_hop_construction(6, 3, 4)
    for k in (1, 4):
        c = certify_induction(variable, 6, 3, hops=k, layout="hop-prefix", dtypes=False).certificate
        assert c.errors == 0 and c.certified and c.inputs_checked == 3**6


@pytest.mark.slow
@pytest.mark.parametrize("k", [4, 16])
def test_certify_sampled_at_n256(k):
    start = time.perf_counter()
    cert = certify_induction(khop_construction(256, 16, k), 256, 16, hops=k, dtypes=False)
    c = cert.certificate
    assert not cert.exhaustive and c.errors == 0 and c.certified and c.uncertified_positions == 0
    assert c.precision_bits is not None and c.precision_bits <= 12
    assert time.perf_counter() - start < 600
