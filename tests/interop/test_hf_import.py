"""`import hf` (issue 32): random-init transformers models of every shape of test_hf_families,
saved with save_pretrained, import as headcount models whose float64 residual stream matches
transformers made float64 throughout to 1e-10 relative and whose outputs equal the argmax of
transformers' own float32 logits; the live model object imports the same; the model file round
trip is bit-identical; the rigorous bounds enclose the float64 evaluation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.core.model import load_model, save_model
from headcount.core.numbers import EXACT, FLOAT64, fixed
from headcount.core.passes import residual_bounds, residual_stream
from headcount.interop.hf import hf_from_module, import_hf, import_hf_model
from tests.interop.hf_checkpoints import hostile_hf_folders
from tests.interop.hf_reference import float64_transformers
from tests.interop.test_hf_families import SHAPES, _model
from tests.learn.test_sweep_hostile import cli

torch = pytest.importorskip("torch")
TOKENS = [3, 1, 4, 1, 5, 9, 2, 6]  # n = 8: within mistral's window of 8


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.fixture(scope="module", params=SHAPES, ids=[f"{s[0]}-{i}" for i, s in enumerate(SHAPES)])
def saved(request, tmp_path_factory):
    family, config_class, model_class, extra, _ = request.param
    config, model = _model(config_class, model_class, extra)
    folder = tmp_path_factory.mktemp(family)
    model.save_pretrained(folder)
    return family, model.eval(), folder


def test_imports_match_transformers(saved, tmp_path):
    family, model, folder = saved
    result = import_hf(folder, tmp_path / "m.safetensors")
    assert result.family == family
    ours = load_model(tmp_path / "m.safetensors")
    tokens = np.array([TOKENS])
    with torch.no_grad():
        float32 = model(torch.tensor(tokens)).logits[0].numpy()
        double = model.double()
        float64_transformers(double)
        out = double(torch.tensor(tokens), output_hidden_states=True)
        model.float()
    final = residual_stream(ours, tokens)[0]  # after the final norm, as hidden_states[-1]
    assert _relative(final, out.hidden_states[-1][0].numpy()) <= 1e-10
    logits = final @ ours.decoder.W_U
    assert _relative(logits, out.logits[0].numpy()) <= 1e-10
    assert np.array_equal(ours.decoder.decode(final[None])[0], float32.argmax(-1))
    # the live object reads the same, and the file holds the model bit for bit
    live = hf_from_module(model.double())
    model.float()
    for name in ("W_E", "W_pos"):
        assert np.array_equal(getattr(live, name), getattr(ours, name))
    assert np.array_equal(residual_stream(live, tokens), residual_stream(ours, tokens))
    save_model(ours, tmp_path / "again.safetensors")
    again = load_model(tmp_path / "again.safetensors")
    assert np.array_equal(residual_stream(again, tokens), residual_stream(ours, tokens))
    assert again.extensions == ours.extensions


def test_bounds_enclose_the_float_evaluation(saved):
    family, model, folder = saved
    ours = import_hf_model(folder)
    tokens = np.array([TOKENS, TOKENS[::-1]])
    x = residual_stream(ours, tokens, FLOAT64)
    mid, rad = residual_bounds(ours, tokens, fixed(52))
    # fixed:52 rounds at its points by ≤ 2^-53 of unit scale: the float64 run lies within the box
    # up to that rounding, and the box is tight on these small models
    assert np.all(np.abs(x - mid) <= rad + 1e-12)
    assert np.isfinite(rad).all() and float(rad.max()) < 1e-6
    exact_mid, exact_rad = residual_bounds(ours, tokens, EXACT)
    assert np.all(np.abs(x - exact_mid) <= exact_rad + 1e-12)


def test_cli_import_hf(saved, tmp_path, capsys):
    family, _, folder = saved
    code, out, err = cli(
        ["import", "hf", str(folder), "--out", str(tmp_path / "m"), "--json"], capsys
    )
    assert code == 0, err
    assert json.loads(out)["family"] == family
    argv = ["evaluate", "--model", str(tmp_path / "m"), "--n", "6", "--samples", "64", "--json"]
    code, out, err = cli(argv, capsys)
    assert code == 0, err
    assert "error" not in json.loads(out) or json.loads(out)["error"] is not None


def test_hostile_checkpoints_exit_2(tmp_path, capsys):
    for name, folder in hostile_hf_folders(tmp_path).items():
        with pytest.raises(InputError):
            import_hf_model(folder)
        code, out, err = cli(["import", "hf", str(folder), "--out", str(folder / "m")], capsys)
        assert (code, out) == (2, ""), (name, err)
        assert err.startswith("error: ") and err.count("\n") == 1, (name, err)
        assert not (folder / "m").exists()


@pytest.mark.parametrize("index", [0, 3], ids=["llama", "gpt_neox"])
def test_imported_models_run_through_the_commands(index, tmp_path, capsys):
    """evaluate, analyze heads and patterns, and induction certify --model on an imported model:
    one JSON object each; the random-init model is wrong, so the certificate is not certified."""
    _, config_class, model_class, extra, _ = SHAPES[index]
    _, model = _model(config_class, model_class, extra)
    model.save_pretrained(tmp_path / "ckpt")
    m = str(tmp_path / "m.safetensors")
    assert cli(["import", "hf", str(tmp_path / "ckpt"), "--out", m, "--json"], capsys)[0] == 0
    sizes = ["--n", "8", "--alphabet", "3", "--samples", "16", "--json"]
    code, out, err = cli(["analyze", "heads", "--model", m, *sizes], capsys)
    assert code == 0, err
    heads = json.loads(out)["heads"]
    assert len(heads) == extra["num_hidden_layers"] * extra["num_attention_heads"]
    assert all(0 <= h[score] <= 1 for h in heads for score in ("previous_token", "induction"))
    code, out, err = cli(
        ["analyze", "patterns", "--model", m, "--out", str(tmp_path / "p"), *sizes], capsys
    )
    assert code == 0 and (tmp_path / "p" / "attention.png").exists(), err
    code, out, err = cli(["induction", "certify", "--model", m, *sizes], capsys)
    assert code == 0, err
    cert = json.loads(out)
    assert cert["certified"] is False and cert["errors"] > 0


def test_the_weights_dict_rebuilds_every_family(saved):
    """Transformer.weights() / from_weights carry RMSNorm (a norm without b), W_gate, rotary,
    parallel and Gemma's offset: the rebuilt model is the same, bit for bit."""
    from headcount.core.model import Transformer

    _, _, folder = saved
    model = import_hf_model(folder)
    weights, options = model.weights(), model.weight_options()
    again = Transformer.from_weights(weights, **options)
    tokens = np.array([TOKENS])
    assert np.array_equal(residual_stream(again, tokens), residual_stream(model, tokens))
    assert again.extensions == model.extensions
    # (from_weights gives a readout without b_U a zero one: the same logits)
    assert again.weights().keys() - {"b_U"} == weights.keys()
    assert all(np.array_equal(again.weights()[k], v) for k, v in weights.items())
    with pytest.raises(InputError, match="rotary"):
        Transformer.from_weights(weights, **options | {"rotary": {"theta": -1.0, "dims": 2}})


def test_gpt2_goes_through_the_gpt2_reader(tmp_path):
    from tests.core.gpt2_checkpoints import config, state_dict, write_folder

    folder = write_folder(tmp_path / "g", state_dict(), config())
    result = import_hf(folder, tmp_path / "m.safetensors")
    model = load_model(tmp_path / "m.safetensors")
    assert result.family == "gpt2" and list(result.extensions) == model.extensions
    assert result.rotary is None and result.norm == "layernorm" and model.n_ctx == result.n_ctx
    relu = write_folder(tmp_path / "r", state_dict(), config(activation_function="relu"))
    assert "gelu" not in import_hf(relu, tmp_path / "r.safetensors").extensions
