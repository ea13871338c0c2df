"""Hugging Face checkpoints of the families of issue 32 for tests, without transformers: a Llama
config.json and a random state dict with exactly the tensors interop.hf_layout expects, written as
save_pretrained writes them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from headcount.interop.hf_architecture import architecture
from headcount.interop.hf_layout import expected_weights


def llama_config(**changes) -> dict:
    """A small LlamaForCausalLM config.json (4 heads sharing 2 key/value heads, untied readout)."""
    return {
        "model_type": "llama",
        "vocab_size": 11,
        "hidden_size": 16,
        "intermediate_size": 24,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 32,
        "rms_norm_eps": 1e-6,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
        "tie_word_embeddings": False,
    } | changes


def llama_state(config: dict, seed: int = 0) -> dict[str, np.ndarray]:
    """Random float32 tensors for every weight the config's network has, and its lm_head."""
    rng = np.random.default_rng(seed)
    arch = architecture(config, "config")
    shapes = expected_weights(arch, "model.") | {"lm_head.weight": (arch.vocab, arch.d_model)}
    return {k: (0.4 * rng.standard_normal(s)).astype(np.float32) for k, s in shapes.items()}


def write_hf_folder(folder: Path, state: dict[str, np.ndarray], config: dict) -> Path:
    """A save_pretrained-style folder: model.safetensors and config.json."""
    folder.mkdir(parents=True, exist_ok=True)
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def hostile_hf_folders(root: Path) -> dict[str, Path]:
    """Llama checkpoints `import hf` must refuse (label → folder): absurd θ, key/value heads that do
    not divide the heads, a missing, an extra and a mis-shaped tensor, NaN and infinite weights, an
    unknown family, rope scaling."""
    good = llama_config()
    state = llama_state(good)
    nan = dict(state)
    nan["model.layers.1.mlp.up_proj.weight"] = np.full((24, 16), np.nan, np.float32)
    inf = dict(state)
    inf["model.norm.weight"] = np.full(16, np.inf, np.float32)
    cases = {
        "theta 1e300": (state, llama_config(rope_parameters={"rope_theta": 1e300})),
        "theta 0": (state, llama_config(rope_parameters={"rope_theta": 0})),
        "kv heads 3 of 4": (state, llama_config(num_key_value_heads=3)),
        "missing tensor": ({k: v for k, v in state.items() if "layers.1.mlp.down" not in k}, good),
        "extra tensor": (
            state | {"model.layers.0.self_attn.x.weight": np.zeros(2, np.float32)},
            good,
        ),
        "wrong shape": (state | {"model.norm.weight": np.zeros(15, np.float32)}, good),
        "NaN weights": (nan, good),
        "infinite weights": (inf, good),
        "family falcon": (state, llama_config(model_type="falcon")),
        "rope scaling": (state, llama_config(rope_scaling={"rope_type": "linear", "factor": 2.0})),
        "layers 10^9": (state, llama_config(num_hidden_layers=10**9)),
        "layers 200 of 2": (state, llama_config(num_hidden_layers=200)),
    }
    return {
        label: write_hf_folder(root / label.replace(" ", "-").replace("^", ""), tensors, cfg)
        for label, (tensors, cfg) in cases.items()
    }
