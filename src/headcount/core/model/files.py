"""Model files of the weight form and the table form: one safetensors file, weights as float64
tensors, the model's JSON config in the safetensors metadata under the key "headcount". Loading
never executes code (no pickle) and is bounded (headcount.common.files). Tensor names: W_E, W_pos,
layers.{l}.heads.{h}.{W_Q,W_K,W_V, W_O,b_Q,b_K,b_V}, layers.{l}.{b_O,ln1.w,ln1.b,ln2.w,ln2.b},
layers.{l}.mlp.{W_in,b_in,W_out,b_out,W_gate}, ln_final.{w,b}, decoder.{name} (the optional parts
only where the config's layer entry says so; core.model.file_parts has the Llama / NeoX entries).
Writes are atomic (temporary file in the same folder, then rename).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.common.files import (
    FORMAT,
    MAX_HEADS_PER_LAYER,
    TABLE_FORMAT,
    ModelFileError,
    TensorShapes,
    atomic_write_safetensors,
    check_version,
    config_info,
    config_int,
    invalid,
    load_tensors,
    one_line,
    read_config,
    short_repr,
)
from headcount.core.model.file_parts import NormSpec, norm_entry, norm_spec, rotary_spec
from headcount.core.model.parts import (
    ACTIVATIONS,
    MASKS,
    MLP,
    POSITIONS,
    AttentionHead,
    Layer,
    Rotary,
    decoder_class,
)
from headcount.core.model.table import OneLayerTable
from headcount.core.model.transformer import Transformer

VERSION = 1
SUPPORTED_VERSIONS = (1,)  # the versions of FORMAT and TABLE_FORMAT this headcount reads
MAX_LAYERS = (
    256  # layers of a weight-form model: headcount's constructions have 2, trained models ≤ 8
)

__all__ = ["FORMAT", "TABLE_FORMAT", "ModelFileError", "load_model", "read_config", "save_model"]


def _write(tensors: dict[str, np.ndarray], config: dict[str, Any], path: str | os.PathLike) -> None:
    tensors = {k: np.ascontiguousarray(v, dtype=np.float64) for k, v in tensors.items()}
    atomic_write_safetensors(path, tensors, {"headcount": json.dumps(config)})


def _layer_entry(l: int, layer: Layer, tensors: dict[str, np.ndarray]) -> dict[str, Any]:
    """The config entry of layer l (the optional GPT-2 parts only where used: plain models' files
    are unchanged), its tensors added to `tensors`."""
    entry: dict[str, Any] = {"heads": len(layer.heads), "mlp": layer.mlp is not None}
    biased = any(head.has_bias for head in layer.heads)
    for h, head in enumerate(layer.heads):
        for name in _HEAD_TENSORS:
            tensors[f"layers.{l}.heads.{h}.{name}"] = getattr(head, name)
        if biased:  # all three biases of every head (zeros where a head has none)
            for name, width in (
                ("b_Q", head.W_Q.shape[1]),
                ("b_K", head.W_K.shape[1]),
                ("b_V", head.W_V.shape[1]),
            ):
                value = getattr(head, name)
                tensors[f"layers.{l}.heads.{h}.{name}"] = (
                    np.zeros(width) if value is None else value
                )
    if layer.mlp is not None:
        for name in _MLP_TENSORS:
            tensors[f"layers.{l}.mlp.{name}"] = getattr(layer.mlp, name)
        if layer.mlp.activation != "relu":
            entry["activation"] = layer.mlp.activation
        if layer.mlp.W_gate is not None:
            entry["gated"] = True
            tensors[f"layers.{l}.mlp.W_gate"] = layer.mlp.W_gate
        if layer.mlp.b_gate is not None:
            entry["gate_bias"] = True
            tensors[f"layers.{l}.mlp.b_gate"] = layer.mlp.b_gate
    if biased:
        entry["head_biases"] = True
    if layer.b_O is not None:
        entry["b_O"] = True
        tensors[f"layers.{l}.b_O"] = layer.b_O
    for name in ("ln1", "ln2"):
        ln = getattr(layer, name)
        if ln is not None:
            entry[name] = norm_entry(f"layers.{l}.{name}", ln, tensors)
    if layer.attn_scale != 1.0:
        entry["attn_scale"] = layer.attn_scale
    if layer.rotary is not None:
        entry["rotary"] = layer.rotary.config()
    if layer.parallel:
        entry["parallel"] = True
    return entry


def save_model(model: Transformer | OneLayerTable, path: str | os.PathLike) -> None:
    """Write a weight-form or table-form model to one safetensors file (atomic)."""
    _write(*model_parts(model), path)


def model_parts(
    model: Transformer | OneLayerTable,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """(tensors, config): what save_model writes."""
    decoder_cfg = {"kind": model.decoder.kind, "config": model.decoder.config()}
    decoder_tensors = {f"decoder.{k}": v for k, v in model.decoder.tensors().items()}
    if isinstance(model, OneLayerTable):
        config = {
            "format": TABLE_FORMAT,
            "version": VERSION,
            "mask": model.mask,
            "decoder": decoder_cfg,
        }
        config["info"] = model.info
        tables = {"embed": model.embed, "Q": model.Q, "K": model.K, "V": model.V}
        return tables | decoder_tensors, config
    tensors: dict[str, np.ndarray] = {"W_E": model.W_E, "W_pos": model.W_pos}
    layers_cfg = [_layer_entry(l, layer, tensors) for l, layer in enumerate(model.layers)]
    config: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "mask": model.mask,
        "layers": layers_cfg,
    }
    if model.ln_final is not None:
        config["ln_final"] = norm_entry("ln_final", model.ln_final, tensors)
    if model.positions != "residual":
        config["positions"] = model.positions
    config |= {"decoder": decoder_cfg, "info": model.info}
    return tensors | decoder_tensors, config


def model_digest(model: Transformer | OneLayerTable) -> str:
    """sha256 of what save_model would write (the config but its "info", each tensor's name,
    shape and float64 bytes): equal for a model and its file read back, different for any other
    weight."""
    tensors, config = model_parts(model)
    h = hashlib.sha256(json.dumps({**config, "info": None}, sort_keys=True).encode())
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name], dtype=np.float64)
        h.update(f"{name}{array.shape}".encode())
        h.update(array.tobytes())
    return h.hexdigest()


# --- loading weight-form and table-form models
# -----------------------------------------------------------

_MODEL = "headcount"
_HEAD_TENSORS = ("W_Q", "W_K", "W_V", "W_O")
_HEAD_BIASES = ("b_Q", "b_K", "b_V")
_MLP_TENSORS = ("W_in", "b_in", "W_out", "b_out")


@dataclass(frozen=True)
class _LayerSpec:
    """What a config's layer entry says: head count, MLP (and its activation), and the optional
    GPT-2 parts (LayerNorm eps values, biases, attention scale)."""

    heads: int
    mlp: bool
    activation: str = "relu"
    head_biases: bool = False
    b_O: bool = False
    ln1: NormSpec | None = None
    ln2: NormSpec | None = None
    attn_scale: float = 1.0
    gated: bool = False
    gate_bias: bool = False
    parallel: bool = False
    rotary: Rotary | None = None

    def tensor_names(self, l: int) -> list[str]:
        names = [f"layers.{l}.heads.{h}.{t}" for h in range(self.heads) for t in _HEAD_TENSORS]
        if self.head_biases:
            names += [f"layers.{l}.heads.{h}.{t}" for h in range(self.heads) for t in _HEAD_BIASES]
        names += [f"layers.{l}.mlp.{t}" for t in _MLP_TENSORS if self.mlp]
        names += [f"layers.{l}.mlp.W_gate"] if self.gated else []
        names += [f"layers.{l}.mlp.b_gate"] if self.gate_bias else []
        names += [f"layers.{l}.b_O"] if self.b_O else []
        for ln in ("ln1", "ln2"):
            if (spec := getattr(self, ln)) is not None:
                names += spec.tensor_names(f"layers.{l}.{ln}")
        return names


def _layer_spec(l: int, layer: Any, path) -> _LayerSpec:
    if not isinstance(layer, dict):
        raise invalid(
            path, _MODEL, f"layer {l} must be a {{heads, mlp}} object, got {short_repr(layer)}"
        )
    heads = config_int(layer, "heads", path, _MODEL, 0, MAX_HEADS_PER_LAYER)
    flags = {}
    for key in ("mlp", "head_biases", "b_O", "gated", "gate_bias", "parallel"):
        flags[key] = layer.get(key, False)
        if not isinstance(flags[key], bool):
            raise invalid(
                path,
                _MODEL,
                f"layer {l}: {key!r} must be true or false, got {short_repr(flags[key])}",
            )
    activation = layer.get("activation", "relu")
    if activation not in ACTIVATIONS or (activation != "relu" and not flags["mlp"]):
        raise invalid(
            path,
            _MODEL,
            f"layer {l}: 'activation' must be one of {list(ACTIVATIONS)} on an MLP layer",
        )
    scale = layer.get("attn_scale", 1.0)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
        raise invalid(
            path,
            _MODEL,
            f"layer {l}: 'attn_scale' must be a finite number, got {short_repr(scale)}",
        )
    lns = {
        name: norm_spec(layer[name], f"layer {l}: {name!r}", path) if name in layer else None
        for name in ("ln1", "ln2")
    }
    if flags["gate_bias"] and not flags["gated"]:
        raise invalid(path, _MODEL, f"layer {l}: 'gate_bias' needs 'gated'")
    if (lns["ln2"] is not None or flags["gated"]) and not flags["mlp"]:
        raise invalid(
            path, _MODEL, f"layer {l}: 'ln2' and 'gated' belong to an MLP, and the layer has none"
        )
    rotary = None
    if "rotary" in layer:
        rotary = rotary_spec(layer["rotary"], f"layer {l}: 'rotary'", path)
    return _LayerSpec(
        heads,
        flags["mlp"],
        activation,
        flags["head_biases"],
        flags["b_O"],
        **lns,
        attn_scale=float(scale),
        gated=flags["gated"],
        gate_bias=flags["gate_bias"],
        parallel=flags["parallel"],
        rotary=rotary,
    )


def _layer_specs(config: dict[str, Any], path) -> list[_LayerSpec]:
    """The layers the config lists, within MAX_LAYERS and MAX_HEADS_PER_LAYER."""
    layers = config.get("layers")
    if not isinstance(layers, list):
        raise invalid(
            path, _MODEL, f"'layers' must be a list of layer objects, got {short_repr(layers)}"
        )
    if len(layers) > MAX_LAYERS:
        raise invalid(
            path, _MODEL, f"{len(layers):,} layers; model files hold at most {MAX_LAYERS}"
        )
    return [_layer_spec(l, layer, path) for l, layer in enumerate(layers)]


def _decoder_config(config: dict[str, Any], path) -> tuple[str, dict[str, Any]]:
    """The decoder's kind (one headcount knows: never imported by a name from the file) and
    config."""
    decoder = config.get("decoder")
    if not isinstance(decoder, dict) or not isinstance(decoder.get("kind"), str):
        raise invalid(
            path, _MODEL, f"'decoder' must be an object with a 'kind', got {short_repr(decoder)}"
        )
    dec_config = decoder.get("config", {})
    if not isinstance(dec_config, dict):
        raise invalid(
            path, _MODEL, f"the decoder's 'config' must be an object, got {short_repr(dec_config)}"
        )
    try:
        decoder_class(decoder["kind"])
    except ValueError as err:
        raise invalid(path, _MODEL, one_line(err)) from None
    return decoder["kind"], dec_config


def _check_decoder(
    shapes: TensorShapes, kind: str, config: dict, n_ctx: int, alphabet: int, d_model: int
):
    """The decoder's tensors and config against the model's sizes; its tensor names."""
    if kind == "linear":
        _, classes = shapes.expect(
            "decoder.W_U", (d_model, None), "[d_model classes]"
        )  # tokens + ⊥ (k-hop
        if classes < 2:  # inputs add hop tokens: the classes need not be the input alphabet + 1)
            raise shapes.error(f"tensor 'decoder.W_U' has {classes} class: a token and ⊥ need ≥ 2")
        shapes.expect("decoder.b_U", (classes,), "[classes] (the columns of decoder.W_U)")
        return ["decoder.W_U", "decoder.b_U"]
    if kind == "vocab":
        readout = config.get("readout")
        if readout == "hidden":
            classes = d_model
        else:
            classes = shapes.expect("decoder.W_U", (d_model, None), "[d_model vocab]")[1]
        names = [] if readout == "hidden" else ["decoder.W_U"]
        if "decoder.b_U" in shapes.listed:
            shapes.expect("decoder.b_U", (classes,), "[vocab] (the logits' width)")
            names.append("decoder.b_U")
        return names
    if kind == "induction_readout":
        readout_n = config_int(config, "n_ctx", shapes.path, _MODEL, 1, n_ctx)
        if readout_n != n_ctx or d_model != n_ctx + 1:
            raise shapes.error(
                f"the induction_readout decoder reads n_ctx = {readout_n} from d_model = n_ctx + "
                "1; "
                f"the model has n_ctx = {n_ctx}, d_model = {d_model}"
            )
        return []
    if kind == "packed_induction_readout":
        readout_n = config_int(config, "n_ctx", shapes.path, _MODEL, 1, n_ctx)
        slots = config_int(config, "slots", shapes.path, _MODEL, 1, n_ctx)
        if readout_n != n_ctx or d_model != slots:
            raise shapes.error(
                f"the packed_induction_readout decoder reads n_ctx = {readout_n} positions from "
                f"d_model = slots = {slots}; the model has n_ctx = {n_ctx}, d_model = {d_model}"
            )
        return []
    return [
        name for name in shapes.listed if name.startswith("decoder.")
    ]  # a kind registered in-process


def _tensor_names(specs: list[_LayerSpec], ln_final: NormSpec | None):
    yield from ("W_E", "W_pos")
    for l, spec in enumerate(specs):
        yield from spec.tensor_names(l)
    yield from ([] if ln_final is None else ln_final.tensor_names("ln_final"))


def _check_transformer(
    shapes: TensorShapes,
    specs: list[_LayerSpec],
    ln_final: NormSpec | None,
    kind: str,
    dec_config,
) -> None:
    """Every tensor of a weight-form file against the config: W_E [alphabet d_model], W_pos [n_ctx
    d_model], each head's W_Q, W_K [d_model d_head], W_V [d_model d_value], W_O [d_value d_model]
    (biases b_Q, b_K [d_head], b_V [d_value]), each MLP's W_in [d_model d_mlp], b_in [d_mlp], W_out
    [d_mlp d_model], b_out [d_model], b_O and LayerNorm w, b [d_model], and the decoder."""
    names = list(_tensor_names(specs, ln_final))
    held = sum(not name.startswith("decoder.") for name in shapes.listed)
    if (
        len(names) > held
    ):  # counts against the tensor list first: a 1 KB config cannot ask for 80,000 heads
        missing = next(name for name in names if name not in shapes.listed)
        raise shapes.error(
            f"its config describes {len(names):,} tensors besides the decoder's, the file holds "
            f"{held:,} "
            f"(tensor {missing!r} is missing)"
        )
    alphabet, d_model = shapes.expect("W_E", (None, None), "[alphabet d_model]")
    n_ctx = shapes.expect("W_pos", (None, d_model), "[n_ctx d_model]")[0]
    for l, spec in enumerate(specs):
        for h in range(spec.heads):
            q, k, v, o = (f"layers.{l}.heads.{h}.{t}" for t in _HEAD_TENSORS)
            d_head = shapes.expect(q, (d_model, None), "[d_model d_head]")[1]
            shapes.expect(k, (d_model, d_head), "[d_model d_head] (the shape of W_Q)")
            d_value = shapes.expect(v, (d_model, None), "[d_model d_value]")[1]
            shapes.expect(o, (d_value, d_model), "[d_value d_model]")
            if spec.head_biases:
                for t, width, what in (
                    ("b_Q", d_head, "d_head"),
                    ("b_K", d_head, "d_head"),
                    ("b_V", d_value, "d_value"),
                ):
                    shapes.expect(f"layers.{l}.heads.{h}.{t}", (width,), f"[{what}]")
        if spec.mlp:
            w_in, b_in, w_out, b_out = (f"layers.{l}.mlp.{t}" for t in _MLP_TENSORS)
            d_mlp = shapes.expect(w_in, (d_model, None), "[d_model d_mlp]")[1]
            shapes.expect(b_in, (d_mlp,), "[d_mlp]")
            shapes.expect(w_out, (d_mlp, d_model), "[d_mlp d_model]")
            shapes.expect(b_out, (d_model,), "[d_model]")
            if spec.gated:
                shapes.expect(f"layers.{l}.mlp.W_gate", (d_model, d_mlp), "[d_model d_mlp]")
            if spec.gate_bias:
                shapes.expect(f"layers.{l}.mlp.b_gate", (d_mlp,), "[d_mlp]")
    for name in names:
        if name.endswith(("b_O", ".w", ".b")):
            shapes.expect(name, (d_model,), "[d_model]")
    shapes.only(names + _check_decoder(shapes, kind, dec_config, n_ctx, alphabet, d_model))


def _check_table(shapes: TensorShapes, kind: str, dec_config: dict) -> None:
    """Every tensor of a table-form file: embed [n_ctx alphabet d_model], Q, K [heads n_ctx alphabet
    d_head], V [heads n_ctx alphabet d_model], and the decoder."""
    n_ctx, alphabet, d_model = shapes.expect("embed", (None,) * 3, "[n_ctx alphabet d_model]")
    heads, _, _, d_head = shapes.expect(
        "Q", (None, n_ctx, alphabet, None), "[heads n_ctx alphabet d_head]"
    )
    if heads > MAX_HEADS_PER_LAYER:
        raise shapes.error(
            f"{heads:,} heads; model files hold at most {MAX_HEADS_PER_LAYER} a layer"
        )
    shapes.expect(
        "K", (heads, n_ctx, alphabet, d_head), "[heads n_ctx alphabet d_head] (the shape of Q)"
    )
    shapes.expect("V", (heads, n_ctx, alphabet, d_model), "[heads n_ctx alphabet d_model]")
    shapes.only(
        ["embed", "Q", "K", "V"]
        + _check_decoder(shapes, kind, dec_config, n_ctx, alphabet, d_model)
    )


def _build_layer(l: int, spec: _LayerSpec, tensors: dict[str, np.ndarray]) -> Layer:
    def head(h: int) -> AttentionHead:
        names = _HEAD_TENSORS + (_HEAD_BIASES if spec.head_biases else ())
        return AttentionHead(**{t: tensors[f"layers.{l}.heads.{h}.{t}"] for t in names})

    mlp = None
    if spec.mlp:
        mlp = MLP(
            *(tensors[f"layers.{l}.mlp.{t}"] for t in _MLP_TENSORS),
            activation=spec.activation,
            W_gate=tensors[f"layers.{l}.mlp.W_gate"] if spec.gated else None,
            b_gate=tensors[f"layers.{l}.mlp.b_gate"] if spec.gate_bias else None,
        )
    ln1, ln2 = (
        None if norm is None else norm.build(f"layers.{l}.{name}", tensors)
        for name, norm in (("ln1", spec.ln1), ("ln2", spec.ln2))
    )
    b_O = tensors[f"layers.{l}.b_O"] if spec.b_O else None
    heads = tuple(head(h) for h in range(spec.heads))
    return Layer(heads, mlp, ln1, ln2, b_O, spec.attn_scale, spec.rotary, spec.parallel)


def load_model(path: str | os.PathLike) -> Transformer | OneLayerTable:
    """Read a model file written by save_model; ModelFileError (a ValueError) if it is not one:
    every count, shape and dtype is checked against the config from the header before a tensor is
    loaded."""
    config = read_config(path)
    path = os.fsdecode(path)
    fmt = config["format"]
    check_version(config, path, fmt, SUPPORTED_VERSIONS)
    mask = config.get("mask")
    if mask not in MASKS:
        raise invalid(path, _MODEL, f"'mask' must be one of {list(MASKS)}, got {short_repr(mask)}")
    positions = config.get("positions", "residual")
    if positions not in POSITIONS:
        raise invalid(
            path,
            _MODEL,
            f"'positions' must be one of {list(POSITIONS)}, got {short_repr(positions)}",
        )
    info = config_info(config, path, _MODEL)
    kind, dec_config = _decoder_config(config, path)
    shapes = TensorShapes(path, _MODEL)
    if fmt == TABLE_FORMAT:
        _check_table(shapes, kind, dec_config)
    else:
        specs = _layer_specs(config, path)
        ln_final = (
            norm_spec(config["ln_final"], "'ln_final'", path) if "ln_final" in config else None
        )
        _check_transformer(shapes, specs, ln_final, kind, dec_config)
    tensors = load_tensors(shapes)
    try:
        dec_tensors = {
            k.split(".", 1)[1]: v for k, v in tensors.items() if k.startswith("decoder.")
        }
        decoder = decoder_class(kind).from_parts(dec_tensors, dec_config)
        if fmt == TABLE_FORMAT:
            tables = (tensors[name] for name in ("embed", "Q", "K", "V"))
            return OneLayerTable(*tables, decoder, mask, info)
        layers = tuple(_build_layer(l, spec, tensors) for l, spec in enumerate(specs))
        final = None if ln_final is None else ln_final.build("ln_final", tensors)
        W_E, W_pos = tensors["W_E"], tensors["W_pos"]
        return Transformer(W_E, W_pos, layers, decoder, mask, info, final, positions)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as err:
        raise invalid(path, _MODEL, f"{type(err).__name__}: {one_line(err)}") from None
