"""The floor-depth k-hop construction (induction/multihop/floor.py): ⌊log₂ k⌋ + 2 layers, one head
per binary level of the position in layer 1; exact on all of Σ^n at small sizes, on random and
k-hop-hard inputs at n = 256, certified exhaustively; the residual state layer by layer is what its
module docstring says."""

import dataclasses
import json
import math

import numpy as np
import pytest

from headcount.core.certify.evaluate import predict
from headcount.core.model.files import load_model
from headcount.core.passes.forward import residual_stream
from headcount.induction import task
from headcount.induction.certification import certify_induction
from headcount.induction.construction import ModelShape
from headcount.induction.multihop.construction import (
    G_HI,
    G_LO,
    H_BOT,
    H_HI,
    H_LO,
    KHOP_DIM,
    khop_layers,
)
from headcount.induction.multihop.floor import (
    floor_construction,
    floor_layers,
    floor_levels,
    floor_shape,
)
from headcount.induction.source import ModelSource
from tests.cli_run import refused, run
from tests.induction.test_khop_construction import _arrays, chase, hard_inputs


def test_depth_is_floor_log2_k_plus_2():
    for k in range(1, 70):
        assert floor_layers(k) == math.floor(math.log2(k)) + 2
        assert floor_layers(k) <= khop_layers(k)  # equal exactly at powers of two
        assert (floor_layers(k) == khop_layers(k)) == (k & (k - 1) == 0)


@pytest.mark.parametrize("n", [2, 3, 8, 9, 100, 1024, 1025])
def test_shape_heads_one_per_level(n):
    levels = max(1, math.ceil(math.log2(n)))
    assert floor_levels(n) == levels
    for k in (1, 3, 12):
        model = floor_construction(n, 2, k)
        shape = floor_shape(n, k)
        assert model.heads_per_layer == [levels] + [1] * (floor_layers(k) - 1)
        assert ModelShape.of(model) == shape
        assert model.d_model == KHOP_DIM + 2 + 5 * levels


@pytest.mark.parametrize("n,S", [(7, 3), (9, 2), (6, 4)])
def test_exact_on_all_of_sigma_n(n, S):
    tokens = task.all_sequences(n, S)
    for k in range(1, 10):
        got = predict(floor_construction(n, S, k), tokens)
        assert np.array_equal(got, task.induction_targets(tokens, k)), k


@pytest.mark.parametrize("k", [3, 5, 6, 7, 12, 13])
def test_random_and_hard_inputs_at_n256(k):
    rng = np.random.default_rng(k)
    tokens = np.concatenate([task.uniform(rng, 6, 256, 16), hard_inputs(rng, 256, 16, k, 2)])
    got = predict(floor_construction(256, 16, k), tokens)
    assert np.array_equal(got, task.induction_targets(tokens, k))


@pytest.mark.parametrize("n,S,k", [(7, 3, 3), (9, 2, 5), (8, 2, 6), (8, 3, 7)])
def test_certified_on_all_of_sigma_n(n, S, k):
    cert = certify_induction(floor_construction(n, S, k), n, S, hops=k, dtypes=False)
    c = cert.certificate
    assert cert.exhaustive and c.inputs_checked == S**n and c.errors == 0 and c.certified
    assert c.uncertified_positions == 0 and cert.layers == math.floor(math.log2(k)) + 2


def test_weights_are_dyadic():
    for a in _arrays(floor_construction(1000, 64, 13)):
        assert np.array_equal(a * 2**12, np.round(a * 2**12))


def test_info_says_what_the_model_is():
    info = floor_construction(40, 5, 6).info
    assert info["depth"] == "floor" and info["hops"] == 6 and info["layers"] == 4
    assert info["construction"] == "khop_floor_levels" and info["parameters"]["levels"] == 6


@pytest.mark.parametrize("k", [1, 3, 6, 11])
def test_state_layer_by_layer(k):
    """After layer 1: G = find (⊥ → position 1), H = σ_i, H_BOT = 1 at position 1 only. After layer
    t ≥ 2: G = find^{2^{t−1}} (find^{2^{t−2}} after the last), H = hop a with a = k mod 2^{t−1} and
    H_BOT its ⊥ flag (1 at position 1 while a = 0), within 1/16."""
    rng = np.random.default_rng(k)
    tokens = np.concatenate([task.uniform(rng, 6, 60, 4), hard_inputs(rng, 60, 4, k, 1)])
    model = floor_construction(60, 4, k)
    L = len(model.layers)
    tb, pb = (model.info["parameters"][f] for f in ("token_base", "pos_base"))
    for t in range(1, L + 1):
        x = residual_stream(dataclasses.replace(model, layers=model.layers[:t]), tokens)
        g_hops = 2 ** (t - 1) if t < L else 2 ** (t - 2)
        pointer = np.maximum(chase(tokens, g_hops), 0)  # ⊥ is position 1 (0-based 0)
        assert np.abs(x[..., G_HI] - pointer // pb).max() <= 1 / 16, t
        assert np.abs(x[..., G_LO] - pointer % pb).max() <= 1 / 16, t
        a = k % 2 ** (t - 1)
        h = chase(tokens, a)
        bottom = (h < 0) | ((a == 0) & (np.arange(tokens.shape[1]) == 0))
        assert np.abs(x[..., H_BOT] - bottom).max() <= 1 / 16, t
        token = np.take_along_axis(tokens, np.maximum(h, 0), axis=1)
        for col, digit in ((H_HI, token // tb), (H_LO, token % tb)):
            assert np.abs(x[..., col] - digit)[~bottom].max(initial=0) <= 1 / 16, t


# ---------------------------------------------------------------------------------------------
# Picked by name: `construct --depth`, `certify --layers auto --depth`, ModelSource(depth=…)
# ---------------------------------------------------------------------------------------------


def test_construct_and_certify_pick_the_depth_by_name(capsys, tmp_path):
    out = tmp_path / "floor.safetensors"
    code, text, _ = run(capsys, "induction", "construct", "--hops", "5", "--depth", "floor",
                        "--n", "20", "--alphabet", "4", "--out", str(out), "--json")  # fmt: skip
    written = json.loads(text)
    assert code == 0 and written["depth"] == "floor" and written["layers"] == 4
    assert written["heads"] == [5, 1, 1, 1] and written["dim"] == KHOP_DIM + 2 + 5 * 5
    sigma = task.uniform(np.random.default_rng(1), 8, 20, 4)
    assert np.array_equal(predict(load_model(out), sigma), task.induction_targets(sigma, 5))
    for depth, layers in (("floor", 3), ("ceil", 4)):
        code, text, _ = run(capsys, "induction", "certify", "--layers", "auto", "--depth", depth,
                            "--hops", "3", "--n", "6", "--alphabet", "3", "--json")  # fmt: skip
        cert = json.loads(text)
        assert code == 0 and cert["certified"] and cert["layers"] == layers
        want = "khop_floor_levels" if depth == "floor" else "khop_pointer_doubling"
        assert cert["construction"] == want
    source = ModelSource(layers="auto", depth="floor")
    assert source.check(30, 4, hops=6) == floor_shape(30, 6)
    assert source.load(30, 4, hops=6).info["depth"] == "floor"
    assert ModelSource(layers=2, depth="floor").load(9, 2, hops=1).info["depth"] == "floor"


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["construct", "--hops", "3", "--depth", "flor"], "--depth 'flor': give ceil"),
        (["construct", "--layers", "2", "--depth", "floor"], "--depth names the construction"),
        (
            ["construct", "--max-hops", "3", "--layout", "hop-prefix", "--depth", "floor"],
            "--depth names the construction",
        ),  # fmt: skip
        (
            ["construct", "--hops", "6", "--layers", "5", "--depth", "floor"],
            "--layers 5 does not fit --hops 6 --depth floor: its construction has 4 layers",
        ),  # fmt: skip
        (["certify", "--layers", "3", "--hops", "4", "--depth", "floor"], "has 4 layers"),
        (
            ["certify", "--model", "m.safetensors", "--hops", "4", "--depth", "floor"],
            "--depth names a construction: with --model FILE",
        ),  # fmt: skip
    ],
)
def test_depth_refusals_are_one_line(capsys, tmp_path, argv, needle):
    sizes = ["--n", "8", "--alphabet", "3"]
    out = ["--out", str(tmp_path / "x.safetensors")] if argv[0] == "construct" else []
    line = refused(capsys, "induction", *argv, *sizes, *out)
    assert needle in line
