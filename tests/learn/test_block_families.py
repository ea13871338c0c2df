"""The block families of the learning lab (issue 32; learn.models.blocks): a SequenceModel of arch
llama or neox exports to a core Transformer with the same function (float64 logits agree to
rounding; the rotary tables are the same numbers), whose rigorous bounds enclose its float
evaluation and whose file round trip is exact; training with --arch runs, records the arch and
saves a model of the family's parts; a trained Llama-style k-hop model certifies on its sampled
inputs; bad settings are refused in one line."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from headcount.common.errors import InputError
from headcount.core.model import load_model, save_model
from headcount.core.numbers import fixed
from headcount.core.passes import residual_bounds, residual_stream
from headcount.learn.certified_runs import khop_certificates
from headcount.learn.models import SequenceConfig, SequenceModel, sequence_model_to_transformer
from headcount.learn.train import train_induction

PARTS = {
    "llama": {"rmsnorm", "rotary", "gated mlp", "silu"},
    "neox": {"layernorm", "rotary", "parallel", "gelu"},
}


def _model(arch: str, seed: int = 0, **extra) -> SequenceModel:
    torch.manual_seed(seed)
    activation = "silu" if arch == "llama" else "gelu"
    cfg = SequenceConfig(
        vocab=5, alphabet=4, n_ctx=7, layers=2, heads=2, dim=8, positional="rotary",
        mlp=True, layernorm=True, activation=activation, arch=arch, **extra,
    )  # fmt: skip
    return SequenceModel(cfg).double()


@pytest.mark.parametrize("arch", ["llama", "neox"])
def test_export_computes_the_same_function(arch, tmp_path):
    model = _model(arch)
    with torch.no_grad():  # non-trivial norm weights and MLP biases, as after training
        for name, p in model.named_parameters():
            if p.requires_grad and ("ln" in name or "b_" in name):
                p.add_(0.3 * torch.randn_like(p))
    t = sequence_model_to_transformer(model)
    assert PARTS[arch] <= set(t.extensions)
    tokens = np.random.default_rng(1).integers(0, 5, size=(6, 7))
    with torch.no_grad():
        theirs = model(torch.from_numpy(tokens)).numpy()
    ours = residual_stream(t, tokens) @ t.decoder.W_U + t.decoder.b_U
    assert np.abs(ours - theirs).max() <= 1e-12 * np.abs(theirs).max()
    mid, rad = residual_bounds(t, tokens, fixed(52))
    assert np.all(np.abs(residual_stream(t, tokens) - mid) <= rad + 1e-12)
    save_model(t, tmp_path / "m.safetensors")
    again = load_model(tmp_path / "m.safetensors")
    assert np.array_equal(residual_stream(again, tokens), residual_stream(t, tokens))


def test_neox_rotates_a_quarter_of_each_head_and_llama_all():
    heads = {
        arch: sequence_model_to_transformer(_model(arch)).layers[0] for arch in ("llama", "neox")
    }
    assert heads["llama"].rotary.dims == 4 and heads["neox"].rotary.dims == 2  # d_head 4
    assert heads["neox"].parallel and not heads["llama"].parallel


def test_bad_settings_are_refused():
    with pytest.raises(InputError, match="unknown arch"):
        SequenceConfig(vocab=3, alphabet=3, n_ctx=4, arch="falcon")
    with pytest.raises(InputError, match="rotary"):
        SequenceConfig(vocab=3, alphabet=3, n_ctx=4, arch="llama")
    with pytest.raises(InputError, match="rotary"):
        SequenceConfig(vocab=3, alphabet=3, n_ctx=4, positional="rotary")
    with pytest.raises(InputError, match="rotary positions"):
        train_induction(arch="llama", positional="learned", steps=1)
    with pytest.raises(InputError, match="unknown arch"):
        train_induction(arch="bert", steps=1)


def test_a_trained_llama_khop_model_certifies(tmp_path):
    """The rotary blocks have no absolute positions: on plain induction inputs a constant prefix
    makes every position's residual the same, so position 0 (⊥) and position 1 cannot both be
    right; k-hop's hop token first breaks that symmetry."""
    run = train_induction(
        arch="llama", hops=2, layers=2, heads=2, dim=16, n=8, alphabet=3, steps=4000,
        out=tmp_path / "m.safetensors",
    )  # fmt: skip
    assert run.arch == "llama" and run.to_json()["arch"] == "llama"
    model = load_model(tmp_path / "m.safetensors")
    assert PARTS["llama"] <= set(model.extensions)
    certs = khop_certificates(model, 8, 3, 2, samples=64)
    assert all(c["certified"] for c in certs.values()), certs


def test_gpt2_runs_keep_their_json():
    run = train_induction(layers=1, dim=4, n=4, alphabet=2, steps=2)
    assert "arch" not in run.to_json() and run.positional == "learned"
