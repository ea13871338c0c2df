"""Hugging Face checkpoints of every family headcount reads → the formal model (issue 32):
`import_hf` reads a checkpoint (a save_pretrained folder, or a state-dict file with its config.json)
and writes a headcount model file of the same network; `hf_from_module` reads a live transformers
model. GPT-2 configs go to interop.gpt2 (``import gpt2`` is the same reading); GPT-NeoX (Pythia),
Llama, Mistral, Qwen2 and Gemma configs are read by interop.hf_architecture and their tensors
checked by interop.hf_layout before any is loaded. Any other model_type is refused by name.

How each family becomes the formal model (core.model.transformer; docs/families.md):

* heads: q_proj / k_proj / v_proj (NeoX: query_key_value, per head its q, k, v rows) split per head;
  with grouped-query attention head h reads key/value head h // (heads / kv_heads), stored as its
  own copy of those weights (the same function); o_proj (NeoX: dense) split by rows → W_O, its bias
  → b_O. Scores times d_head^-½ (a stored float64, as transformers computes it).
* rotary: θ and the rotated part of each head as the config states, rotate_half; the model has
  W_pos = 0 over n_ctx positions (n_ctx: `n_ctx`, else max_position_embeddings capped at
  N_CTX_CAP, and never past Mistral's sliding window, so the window never binds).
* norms: RMSNorm (Gemma's 1 + w) or LayerNorm (NeoX); MLPs gated (gate_proj → W_gate, up_proj →
  W_in, down_proj → W_out; SiLU or GELU gate) or plain (NeoX); NeoX's parallel residual.
* Gemma scales its embeddings by √d_model: W_E holds embed_tokens · √d (each product rounded once,
  as transformers rounds it); a tied readout reads the unscaled table.
* readouts "tied", "lm-head", "hidden" as for GPT-2; default lm-head when the checkpoint stores a
  readout that differs from the embedding, else tied.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.common.errors import InputError, param
from headcount.common.files import DTYPE_BYTES, check_model_path, show_path
from headcount.common.jsonable import JsonResult
from headcount.common.resources import check_memory
from headcount.common.validate import check_choice, check_not_read, check_writable
from headcount.core.model import (
    MLP,
    AttentionHead,
    Layer,
    LayerNorm,
    RMSNorm,
    Transformer,
    VocabDecoder,
    VocabMap,
    save_model,
)
from headcount.core.model.vocab import READOUTS
from headcount.core.numbers.rotary import MAX_ENTRIES
from headcount.interop import gpt2
from headcount.interop.checkpoints import (
    StateDict,
    locate,
    open_state_dict,
    read_json_file,
    state_dict_of,
)
from headcount.interop.hf_architecture import Architecture, architecture
from headcount.interop.hf_layout import HfLayout, hf_layout

N_CTX_CAP = 4096  # positions of a rotary model when `n_ctx` is not given (W_pos = 0 is stored)
BYTES_PER_WEIGHT = 40  # float64 copies: read, split into heads (K/V copied per group), stored


def _split(w: np.ndarray, count: int) -> list[np.ndarray]:
    """[count·d_head, d] (nn.Linear rows) → count arrays [d, d_head] (headcount's W = weightᵀ)."""
    return [part.T for part in np.split(w, count, axis=0)]


def _heads(arch: Architecture, get) -> tuple[AttentionHead, ...]:
    """The layer's heads (module docstring), K/V of grouped-query attention copied per head."""
    H, KV = arch.heads, arch.kv_heads
    if arch.family == "gpt_neox":  # rows per head: q, k, v, d_head each
        w = get("attention.query_key_value.weight").reshape(H, 3, arch.d_head, -1)
        b = get("attention.query_key_value.bias")
        b = None if b is None else b.reshape(H, 3, arch.d_head)
        W = [[w[h, i].T for h in range(H)] for i in range(3)]
        B = [[None if b is None else b[h, i] for h in range(H)] for i in range(3)]
        W_O = get("attention.dense.weight")
    else:
        W = [
            _split(get(f"self_attn.{n}_proj.weight"), c)
            for n, c in (("q", H), ("k", KV), ("v", KV))
        ]
        B = [
            [None] * c if (bias := get(f"self_attn.{n}_proj.bias")) is None else np.split(bias, c)
            for n, c in (("q", H), ("k", KV), ("v", KV))
        ]
        W_O = get("self_attn.o_proj.weight")
    group = H // len(W[1])
    W_Os = np.split(W_O, H, axis=1)  # [d, H·d_head] columns per head → W_O [d_head, d]
    return tuple(
        AttentionHead(
            W[0][h],
            W[1][h // group],
            W[2][h // group],
            W_Os[h].T,
            B[0][h],
            B[1][h // group],
            B[2][h // group],
        )  # fmt: skip
        for h in range(H)
    )


def _norm(arch: Architecture, w: np.ndarray, b: np.ndarray | None):
    if arch.norm == "rmsnorm":
        return RMSNorm(w, arch.norm_eps, arch.norm_offset)
    return LayerNorm(w, b, arch.norm_eps)


def _mlp(arch: Architecture, get) -> MLP:
    d, act = arch.d_model, arch.activation
    if not arch.gated:
        return MLP(
            get("mlp.dense_h_to_4h.weight").T,
            get("mlp.dense_h_to_4h.bias"),
            get("mlp.dense_4h_to_h.weight").T,
            get("mlp.dense_4h_to_h.bias"),
            act,
        )
    up_b, down_b = get("mlp.up_proj.bias"), get("mlp.down_proj.bias")
    return MLP(
        get("mlp.up_proj.weight").T,
        np.zeros(arch.d_mlp) if up_b is None else up_b,
        get("mlp.down_proj.weight").T,
        np.zeros(d) if down_b is None else down_b,
        act,
        W_gate=get("mlp.gate_proj.weight").T,
        b_gate=get("mlp.gate_proj.bias"),
    )


def n_ctx_of(arch: Architecture, n_ctx: int | None) -> int:
    """The positions the formal model covers (module docstring)."""
    stated = arch.n_ctx if arch.n_ctx is not None else N_CTX_CAP
    top = min(stated, arch.window) if arch.window is not None else stated
    if arch.rotary is not None:  # the rotary table's n_ctx · dims/2 entries are bounded
        top = min(top, max(1, MAX_ENTRIES // (arch.rotary.dims // 2)))
    if n_ctx is None:
        return min(top, N_CTX_CAP)
    if isinstance(n_ctx, bool) or not isinstance(n_ctx, int) or not 1 <= n_ctx <= top:
        raise InputError(
            f"{param('n_ctx')} must be an integer in 1..{top} (the config's positions"
            f"{', within its sliding window' if arch.window is not None else ''}), got "
            f"{str(n_ctx)[:40]}"
        )
    return n_ctx


def build_hf(
    arch: Architecture,
    layout: HfLayout,
    tensors: dict[str, np.ndarray],
    readout: str,
    vocab_map: VocabMap,
    n_ctx: int,
    info: dict[str, Any],
) -> Transformer:
    """The Transformer of a checked checkpoint's tensors (module docstring)."""
    neox = arch.family == "gpt_neox"
    layers = []
    for l in range(arch.layers):
        get = lambda part, l=l: tensors.get(layout.layer(l, part))  # noqa: E731
        norms = [
            _norm(arch, get(f"{name}.weight"), get(f"{name}.bias"))
            for name in ("input_layernorm", "post_attention_layernorm")
        ]
        b_O = get("attention.dense.bias" if neox else "self_attn.o_proj.bias")
        layers.append(
            Layer(
                _heads(arch, get),
                _mlp(arch, get),
                *norms,
                b_O,
                arch.attn_scale,
                arch.rotary,
                arch.parallel,
            )  # fmt: skip
        )
    top = layout.prefix + ("final_layer_norm" if neox else "norm")
    final = _norm(arch, tensors[top + ".weight"], tensors.get(top + ".bias"))
    E = tensors[layout.prefix + ("embed_in.weight" if neox else "embed_tokens.weight")]
    W_U = None if readout == "hidden" else E.T if readout == "tied" else tensors[layout.readout].T
    W_E = E * arch.embedding_scale if arch.embedding_scale != 1.0 else E
    decoder = VocabDecoder(W_U, None, readout, vocab_map)
    W_pos = np.zeros((n_ctx, arch.d_model))
    return Transformer(W_E, W_pos, tuple(layers), decoder, "causal", info, final)


@dataclass(frozen=True)
class HfImport(JsonResult):
    """A checkpoint imported to `path`: the `headcount import hf` JSON (its help lists the
    fields)."""

    path: str
    source: str
    config: str
    family: str
    layers: int
    heads: int
    kv_heads: int
    d_head: int
    d_model: int
    d_mlp: int | None
    vocab: int
    n_ctx: int
    norm: str
    rotary: dict[str, Any] | None
    gated: bool
    parallel: bool
    activation: str
    readout: str
    lm_head: str  # "absent" | "tied" | "separate"
    prefix: str
    ignored_buffers: tuple[str, ...]
    vocab_map: dict[str, Any]
    dtypes: tuple[str, ...]
    extensions: tuple[str, ...]


def _checked_tensors(source: StateDict, layout: HfLayout, n_ctx: int, arch, where: str):
    names = list(layout.weights)
    elements = {n: math.prod(source.listed[n][0]) for n in names}
    raw = sum(count * DTYPE_BYTES[source.listed[n][1]] for n, count in elements.items())
    copies = (arch.heads // arch.kv_heads) * sum(elements.values())
    need = BYTES_PER_WEIGHT * copies + raw + 8 * n_ctx * arch.d_model
    check_memory(need, f"importing {where}")
    tensors = source.load(names)
    for name, value in tensors.items():
        if not np.isfinite(value).all():
            raise InputError(
                f"{where}: tensor {name!r} holds NaN or infinite values; weights must be finite"
            )
    return tensors


def _read(source: StateDict, arch, where, prefix, readout, mapping, n_ctx, label):
    """(model, layout, lm_head kind, readout) of a listed state dict and its Architecture."""
    layout = hf_layout({k: v[0] for k, v in source.listed.items()}, arch, where, prefix)
    n_ctx = n_ctx_of(arch, n_ctx)
    tensors = _checked_tensors(source, layout, n_ctx, arch, where)
    embedding = layout.prefix + (
        "embed_in.weight" if arch.family == "gpt_neox" else "embed_tokens.weight"
    )
    lm_head = "absent"
    if layout.readout:
        same = np.array_equal(tensors[layout.readout], tensors[embedding])
        lm_head = "tied" if same else "separate"
    readout = readout or ("lm-head" if lm_head == "separate" else "tied")
    if readout == "lm-head" and lm_head == "absent":
        raise InputError(
            f"{param('readout')} lm-head: {where} stores no readout; use tied or hidden"
        )
    gpt2.check_vocab_map(
        mapping, arch.vocab, arch.d_model if readout == "hidden" else arch.vocab, readout
    )
    info = {"imported": f"huggingface {arch.family}", "source": label[:200]}
    model = build_hf(arch, layout, tensors, readout, mapping, n_ctx, info)
    return model, layout, lm_head, readout


def _family(config: Any) -> str | None:
    return config.get("model_type") if isinstance(config, dict) else None


def import_hf_model(
    path: str | os.PathLike,
    *,
    config: str | os.PathLike | None = None,
    prefix: str | None = None,
    readout: str | None = None,
    vocab_map: VocabMap | None = None,
    n_ctx: int | None = None,
) -> Transformer:
    """The Transformer of the checkpoint at `path` (module docstring), in memory."""
    if readout is not None:
        check_choice("readout", readout, READOUTS)
    weights, config_path = locate(path, config)
    obj = _config(path, weights, config_path)
    mapping = VocabMap() if vocab_map is None else vocab_map
    if _family(obj) == "gpt2":
        return gpt2.import_gpt2_model(
            path, config=config_path, prefix=prefix, readout=readout, vocab_map=mapping
        )
    arch = architecture(obj, f"config {show_path(config_path)}")
    source = open_state_dict(weights)
    label = os.path.basename(weights)
    return _read(source, arch, show_path(weights), prefix, readout, mapping, n_ctx, label)[0]


def _config(path, weights: str, config_path: str | None) -> Any:
    check_model_path(weights)
    if config_path is None:
        raise InputError(
            f"{show_path(path)} comes without config.json: pass {param('config')} config.json "
            "(the family, head counts and rotary θ are not in the weights)"
        )
    return read_json_file(config_path, "config")


def import_hf(
    path: str | os.PathLike,
    out: str | os.PathLike,
    *,
    config: str | os.PathLike | None = None,
    prefix: str | None = None,
    readout: str | None = None,
    vocab_map: str | os.PathLike | None = None,
    n_ctx: int | None = None,
) -> HfImport:
    """Read the checkpoint at `path` (module docstring) and write it as a headcount model file at
    `out`."""
    if readout is not None:
        check_choice("readout", readout, READOUTS)
    check_writable(out)
    weights, config_path = locate(path, config)
    check_not_read([out], [weights, config_path, vocab_map])
    obj = _config(path, weights, config_path)
    if _family(obj) == "gpt2":
        if n_ctx is not None:
            raise InputError(f"{param('n_ctx')}: a GPT-2 model's positions are its wpe rows")
        done = gpt2.import_gpt2(
            path, out, config=config_path, prefix=prefix, readout=readout, vocab_map=vocab_map
        )
        return _from_gpt2(done)
    mapping = VocabMap() if vocab_map is None else gpt2.read_vocab_map(vocab_map)
    arch = architecture(obj, f"config {show_path(config_path)}")
    source = open_state_dict(weights)
    model, layout, lm_head, readout = _read(
        source, arch, show_path(weights), prefix, readout, mapping, n_ctx, os.path.basename(weights)
    )
    try:
        save_model(model, out)
    except OSError as err:
        raise InputError(f"cannot write {str(out)[:200]!r}: {err.strerror or err}") from None
    return HfImport(
        str(out), weights, config_path, arch.family, arch.layers, arch.heads, arch.kv_heads,
        arch.d_head, arch.d_model, arch.d_mlp, arch.vocab, model.n_ctx, arch.norm,
        None if arch.rotary is None else arch.rotary.config(), arch.gated, arch.parallel,
        arch.activation, readout, lm_head, layout.prefix, layout.ignored, mapping.to_json(),
        tuple(sorted({source.listed[n][1] for n in layout.weights})), tuple(model.extensions),
    )  # fmt: skip


def _from_gpt2(done: gpt2.Gpt2Import) -> HfImport:
    heads = done.heads[0] if done.heads else 0
    return HfImport(
        done.path, done.source, done.config, "gpt2", done.layers, heads, heads, done.d_head,
        done.d_model, done.d_mlp, done.vocab, done.n_ctx, "layernorm", None, False, False,
        done.activation, done.readout, done.lm_head, done.prefix, done.ignored_buffers,
        done.vocab_map, done.dtypes, _gpt2_extensions(done),
    )  # fmt: skip


def _gpt2_extensions(done: gpt2.Gpt2Import) -> tuple[str, ...]:
    """The parts a GPT-2 import's model uses (Transformer.extensions), from its import record:
    LayerNorm and biases always (interop.gpt2 reads them), a scale ≠ 1, a GELU."""
    parts = {"attention biases", "layernorm"}
    parts |= {"attention scale"} if any(s != 1.0 for s in done.attn_scale) else set()
    parts |= {"gelu"} if done.activation != "relu" else set()
    return tuple(sorted(parts))


def hf_from_module(
    module: Any,
    *,
    readout: str | None = None,
    vocab_map: VocabMap | None = None,
    n_ctx: int | None = None,
) -> Transformer:
    """The headcount model of a live transformers model of a family headcount reads (GPT-2,
    GPT-NeoX, Llama, Mistral, Qwen2, Gemma; bare or *ForCausalLM): its config and state dict read
    exactly as import_hf reads a checkpoint's."""
    if readout is not None:
        check_choice("readout", readout, READOUTS)
    config, state_dict = getattr(module, "config", None), getattr(module, "state_dict", None)
    if config is None or not callable(state_dict) or not hasattr(config, "to_json_string"):
        raise InputError(
            f"expected a transformers model (with .config and .state_dict()), got "
            f"{type(module).__name__}"
        )
    obj = json.loads(config.to_json_string())
    if _family(obj) == "gpt2":
        return gpt2.gpt2_from_module(module, readout=readout, vocab_map=vocab_map)
    name = f"the {type(module).__name__}"
    arch = architecture(obj, f"{name}'s config")
    state = {k: v.detach().cpu() for k, v in state_dict().items()}
    source = state_dict_of(state, name, type(module).__name__)
    mapping = VocabMap() if vocab_map is None else vocab_map
    return _read(source, arch, name, None, readout, mapping, n_ctx, type(module).__name__)[0]
