"""`headcount import gpt2` on the command line: one JSON object on success; exit 2 with one line
naming what is wrong for a missing, unexpected or mis-shaped tensor, an unsupported feature, a bad
vocabulary map, and a pickle that would run code (refused without running it)."""

from __future__ import annotations

import json
import pickle
import zipfile

import numpy as np
import pytest
from safetensors.numpy import save_file

from headcount.core.model.files import load_model
from tests.cli_run import refused, run
from tests.core.gpt2_checkpoints import Payload, config, state_dict, write_folder, write_json


@pytest.fixture
def ckpt(tmp_path):
    """A valid checkpoint folder (GPT2LMHeadModel layout, 2 layers, d 8, 2 heads, vocab 11, n_ctx
    6)."""
    return write_folder(
        tmp_path / "ckpt", state_dict(prefix="transformer.", lm_head=True), config()
    )


def _bare(tmp_path, state, name="sd.safetensors"):
    save_file(state, str(tmp_path / name))
    return str(tmp_path / name)


def _import(*args: str) -> tuple[str, ...]:
    return ("import", "gpt2", *args)


def test_import_prints_one_json_object_and_writes_a_model(capsys, tmp_path, ckpt):
    out = tmp_path / "m.safetensors"
    code, stdout, err = run(capsys, *_import(str(ckpt), "--out", str(out), "--json"))
    assert code == 0, err
    result = json.loads(stdout)
    assert result == {
        "path": str(out),
        "source": str(ckpt / "model.safetensors"),
        "config": str(ckpt / "config.json"),
        "layers": 2,
        "heads": [2, 2],
        "d_head": 4,
        "d_model": 8,
        "d_mlp": 32,
        "vocab": 11,
        "n_ctx": 6,
        "activation": "gelu_tanh",
        "activation_function": "gelu_new",
        "layer_norm_epsilon": 1e-5,
        "attn_scale": [0.5, 0.5],
        "readout": "lm-head",
        "lm_head": "separate",
        "prefix": "transformer.",
        "ignored_buffers": [],
        "vocab_map": {},
        "dtypes": ["F32"],
    }
    model = load_model(out)
    assert model.extensions == ["attention biases", "attention scale", "gelu", "layernorm"]
    code, stdout, _ = run(capsys, *_import(str(ckpt), "--out", str(out)))
    assert code == 0 and stdout.startswith(f"wrote {out}: GPT-2, 2 layer(s) × 2 heads")


def _missing(state):
    del state["h.1.mlp.c_fc.bias"]


def _unexpected(state):
    state["h.0.attn.rotary.inv_freq"] = np.ones(4, np.float32)


def _misshaped(state):
    state["h.0.attn.c_attn.weight"] = np.ascontiguousarray(state["h.0.attn.c_attn.weight"].T)


def _cross(state):
    state["h.0.crossattention.c_attn.weight"] = np.ones((8, 16), np.float32)


def _nan(state):
    state["ln_f.bias"][3] = np.nan


def _int_weights(state):
    state["wpe.weight"] = state["wpe.weight"].astype(np.int32)


def _gap(state):
    for key in [k for k in state if k.startswith("h.1.")]:
        state[key.replace("h.1.", "h.2.")] = state.pop(key)


def _stray_buffer(state):
    state["h.5.attn.masked_bias"] = np.array(-1e4, np.float32)


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        (_missing, ("lacks 1 tensor", "'h.1.mlp.c_fc.bias'")),
        (_unexpected, ("not part of a GPT-2 model", "'h.0.attn.rotary.inv_freq'")),
        (_misshaped, ("'h.0.attn.c_attn.weight' has shape [24, 8], expected [8, 24]", "Conv1D")),
        (_cross, ("cross-attention is not supported", "crossattention")),
        (_nan, ("'ln_f.bias' holds NaN",)),
        (_int_weights, ("'wpe.weight' has dtype I32",)),
        (_gap, ("lacks 12 tensor(s)", "'h.1.ln_1.weight'")),
        (_stray_buffer, ("not part of a GPT-2 model", "'h.5.attn.masked_bias'")),
    ],
    ids=[
        "missing",
        "unexpected",
        "mis-shaped",
        "cross-attention keys",
        "NaN",
        "int",
        "layer gap",
        "buffer",
    ],
)
def test_bad_state_dicts_are_refused_naming_the_tensor(capsys, tmp_path, change, needles):
    state = state_dict()
    change(state)
    cfg = write_json(tmp_path / "c.json", config())
    out = tmp_path / "m.safetensors"
    refused(
        capsys,
        *_import(_bare(tmp_path, state), "--config", str(cfg), "--out", str(out)),
        needles=needles,
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("fields", "needles"),
    [
        (
            {"add_cross_attention": True},
            ("add_cross_attention", "cross-attention is not supported"),
        ),
        (
            {"activation_function": "gelu_fast"},
            ("activation_function 'gelu_fast' is not supported", "gelu_new"),
        ),
        ({"activation_function": "silu"}, ("'silu' is not supported",)),
        ({"rotary_dim": 4}, ("rotary positions is not supported",)),
        ({"use_parallel_residual": True}, ("parallel blocks is not supported",)),
        ({"model_type": "gpt_neox"}, ("model_type 'gpt_neox' is not 'gpt2'",)),
        ({"n_head": 3}, ("n_embd = 8 is not divisible by n_head = 3",)),
        ({"n_head": 0}, ("n_head must be an integer in 1..1024",)),
        ({"n_head": None}, ("has no n_head",)),
        ({"n_layer": 3}, ("n_layer = 3, but the weights have 2",)),
        ({"vocab_size": 50257}, ("vocab_size = 50257, but the weights have 11",)),
        ({"n_inner": 16}, ("n_inner = 16, but the weights have 32",)),
        ({"layer_norm_epsilon": -1}, ("layer_norm_epsilon must be a positive number",)),
        ({"scale_attn_weights": "yes"}, ("'scale_attn_weights' must be true or false",)),
    ],
)
def test_unsupported_or_inconsistent_configs_are_refused(capsys, tmp_path, fields, needles):
    cfg = write_json(tmp_path / "c.json", config() | fields)
    args = _import(
        _bare(tmp_path, state_dict()), "--config", str(cfg), "--out", str(tmp_path / "m")
    )
    refused(capsys, *args, needles=needles)


def test_a_pickle_payload_is_refused_without_running_it(capsys, tmp_path):
    torch = pytest.importorskip("torch")
    marker = tmp_path / "MARKER"
    cfg = str(write_json(tmp_path / "c.json", config()))
    state = {k: torch.from_numpy(v) for k, v in state_dict().items()}
    torch.save(
        state | {"h.0.attn.bias": Payload(str(marker))}, tmp_path / "evil.pt"
    )  # inside a state dict
    torch.save(Payload(str(marker)), tmp_path / "evil.bin")  # the whole file
    (tmp_path / "raw.bin").write_bytes(pickle.dumps(Payload(str(marker))))  # a bare pickle
    with zipfile.ZipFile(tmp_path / "packed.pt", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", pickle.dumps(Payload(str(marker))))
    for name, needle in (
        ("evil.pt", "weights_only=True) cannot read it"),
        ("evil.bin", "weights_only=True) cannot read it"),
        ("raw.bin", "not the zip archive torch.save writes"),
        ("packed.pt", "is compressed"),
    ):
        args = _import(str(tmp_path / name), "--config", cfg, "--out", str(tmp_path / "m"))
        refused(capsys, *args, needles=(needle,))
        assert not marker.exists()


def test_torch_files_that_are_not_plain_state_dicts_are_refused(capsys, tmp_path):
    torch = pytest.importorskip("torch")
    cfg = str(write_json(tmp_path / "c.json", config()))
    state = {k: torch.from_numpy(v) for k, v in state_dict().items()}
    odd = {
        "meta": state | {"wte.weight": torch.empty(11, 8, device="meta")},
        "nested": {"model": state, "step": 3},
        "list": list(state.values()),
    }
    for name, value in odd.items():
        torch.save(value, tmp_path / f"{name}.pt")
        args = _import(str(tmp_path / f"{name}.pt"), "--config", cfg, "--out", str(tmp_path / "m"))
        needle = "not a state dict" if name == "list" else "not a dense tensor"
        refused(capsys, *args, needles=(needle,))


def test_a_torch_state_dict_with_prefix_and_old_buffers_imports(capsys, tmp_path):
    torch = pytest.importorskip("torch")
    state = {
        k: torch.from_numpy(v) for k, v in state_dict(prefix="transformer.", lm_head=True).items()
    }
    for l in range(2):
        state[f"transformer.h.{l}.attn.bias"] = torch.tril(
            torch.ones(6, 6, dtype=torch.uint8)
        ).view(1, 1, 6, 6)
        state[f"transformer.h.{l}.attn.masked_bias"] = torch.tensor(-1e4)
    torch.save(state, tmp_path / "sd.pt")
    cfg = str(write_json(tmp_path / "c.json", config()))
    code, out, err = run(
        capsys,
        *_import(str(tmp_path / "sd.pt"), "--config", cfg, "--out", str(tmp_path / "m"), "--json"),
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["prefix"] == "transformer." and len(result["ignored_buffers"]) == 4
    assert result["ignored_buffers"][0] == "transformer.h.0.attn.bias"


@pytest.mark.parametrize(
    ("content", "needles"),
    [
        ("{not json", ("--vocab-map", "is not JSON")),
        ("[1, 2]", ("must be a JSON object",)),
        ('{"symbols": [0, 11]}', ("token id 11 is outside the model's vocabulary 0..10",)),
        ('{"hops": [99], "hops_from": 1}', ("token id 99 is outside",)),
        ('{"hops": [9]}', ('"hops_from": 0', '"hops_from": 1', "ambiguous")),
        ('{"none": 11}', ("output id 11 is not scored by readout",)),
        ('{"symbols": [-1]}', ("must be a token id",)),
        ('{"symbols": [1, 1]}', ("distinct",)),
        ('{"colour": 1}', ("unknown keys ['colour']",)),
        ("[" * 100_000, ("nests",)),
    ],
)
def test_bad_vocabulary_maps_are_refused(capsys, tmp_path, ckpt, content, needles):
    (tmp_path / "map.json").write_text(content, encoding="utf-8")
    args = _import(
        str(ckpt), "--vocab-map", str(tmp_path / "map.json"), "--out", str(tmp_path / "m")
    )
    refused(capsys, *args, needles=needles)


def test_hidden_readout_scores_only_d_model_ids(capsys, tmp_path, ckpt):
    write_json(tmp_path / "map.json", {"symbols": [1, 9], "none": 0})
    args = _import(
        str(ckpt), "--vocab-map", str(tmp_path / "map.json"), "--out", str(tmp_path / "m")
    )
    refused(
        capsys,
        *args,
        "--readout",
        "hidden",
        needles=("output id 9 is not scored by readout 'hidden'",),
    )
    code, _, err = run(capsys, *args, "--readout", "tied")
    assert code == 0, err


def test_paths_configs_and_options_are_checked(capsys, tmp_path, ckpt):
    out = str(tmp_path / "m")
    bare = _bare(tmp_path, state_dict())
    refused(capsys, *_import(bare, "--out", out), needles=("pass --config config.json", "n_head"))
    refused(
        capsys,
        *_import(str(tmp_path / "x.onnx"), "--out", out),
        needles=("ending in .safetensors",),
    )
    refused(capsys, *_import(str(tmp_path / "none.pt"), "--out", out), needles=("does not exist",))
    refused(capsys, *_import(str(tmp_path), "--out", out), needles=("neither model.safetensors",))
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "model.safetensors.index.json").write_text("{}")
    refused(
        capsys, *_import(str(tmp_path / "shards"), "--out", out), needles=("sharded checkpoint",)
    )
    refused(
        capsys,
        *_import(str(ckpt), "--prefix", "", "--out", out),
        needles=("--prefix '' does not match",),
    )
    refused(
        capsys,
        *_import(str(ckpt), "--readout", "logits", "--out", out),
        needles=("--readout 'logits'",),
    )
    refused(
        capsys,
        *_import(str(ckpt), "--config", str(tmp_path), "--out", out),
        needles=("is a folder",),
    )
    refused(capsys, *_import(str(ckpt), "--out", str(tmp_path)), needles=("--out",))
    plain = write_folder(tmp_path / "plain", state_dict(), config())
    refused(
        capsys,
        *_import(str(plain), "--readout", "lm-head", "--out", out),
        needles=("no lm_head.weight",),
    )
    twice = state_dict() | {f"student.{k}": v for k, v in state_dict().items()}
    refused(
        capsys,
        *_import(
            _bare(tmp_path, twice, "two.safetensors"),
            "--config",
            str(tmp_path / "plain" / "config.json"),
            "--out",
            out,
        ),
        needles=("several tensors end in wte.weight",),
    )
    (tmp_path / "hc.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    refused(
        capsys,
        *_import(
            str(tmp_path / "hc.safetensors"),
            "--config",
            str(tmp_path / "plain" / "config.json"),
            "--out",
            out,
        ),
        needles=("no token embedding 'wte.weight'",),
    )
