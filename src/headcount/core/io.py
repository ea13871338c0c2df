"""Model files: one safetensors file, weights as float64 tensors, the model's JSON config in the
safetensors metadata under the key "headcount". Loading never executes code (no pickle).

Tensor names: W_E, W_pos, layers.{l}.heads.{h}.{W_Q,W_K,W_V,W_O}, layers.{l}.mlp.{W_in,b_in,W_out,b_out},
decoder.{name}. Writes are atomic (temporary file in the same folder, then rename).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from safetensors import SafetensorError, safe_open
from safetensors.numpy import load_file, save_file

from headcount.core.errors import InputError
from headcount.core.model import MLP, AttentionHead, Layer, Transformer, decoder_class
from headcount.core.table import OneLayerTable

FORMAT = "headcount-transformer"
TABLE_FORMAT = "headcount-one-layer-table"
VERSION = 1


class ModelFileError(InputError):
    """A model file that cannot be read as a headcount model (the message says why; the user can fix it)."""


def atomic_write_bytes(path: str | os.PathLike, write) -> None:
    """Call write(tmp_path) on a temporary file beside `path`, then rename it into place, so a reader never
    sees half a file. The file gets the permissions any new file gets (0666 less the umask), not mkstemp's
    0600: a model or report is as readable as the user's other files."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)  # the only portable way to read it is to set it
    os.umask(mask)
    return mask


def _write(tensors: dict[str, np.ndarray], config: dict[str, Any], path: str | os.PathLike) -> None:
    tensors = {k: np.ascontiguousarray(v, dtype=np.float64) for k, v in tensors.items()}
    atomic_write_bytes(path, lambda tmp: save_file(tensors, tmp, metadata={"headcount": json.dumps(config)}))


def save_model(model: Transformer | OneLayerTable, path: str | os.PathLike) -> None:
    """Write a weight-form or table-form model to one safetensors file (atomic)."""
    decoder_cfg = {"kind": model.decoder.kind, "config": model.decoder.config()}
    decoder_tensors = {f"decoder.{k}": v for k, v in model.decoder.tensors().items()}
    if isinstance(model, OneLayerTable):
        config = {
            "format": TABLE_FORMAT,
            "version": VERSION,
            "mask": model.mask,
            "decoder": decoder_cfg,
            "info": model.info,
        }
        tables = {"embed": model.embed, "Q": model.Q, "K": model.K, "V": model.V}
        _write(tables | decoder_tensors, config, path)
        return
    tensors: dict[str, np.ndarray] = {"W_E": model.W_E, "W_pos": model.W_pos}
    layers_cfg = []
    for l, layer in enumerate(model.layers):
        for h, head in enumerate(layer.heads):
            for name in ("W_Q", "W_K", "W_V", "W_O"):
                tensors[f"layers.{l}.heads.{h}.{name}"] = getattr(head, name)
        if layer.mlp is not None:
            for name in ("W_in", "b_in", "W_out", "b_out"):
                tensors[f"layers.{l}.mlp.{name}"] = getattr(layer.mlp, name)
        layers_cfg.append({"heads": len(layer.heads), "mlp": layer.mlp is not None})
    config = {
        "format": FORMAT,
        "version": VERSION,
        "mask": model.mask,
        "layers": layers_cfg,
        "decoder": decoder_cfg,
        "info": model.info,
    }
    _write(tensors | decoder_tensors, config, path)


def read_config(path: str | os.PathLike, formats: tuple[str, ...] = (FORMAT, TABLE_FORMAT)) -> dict[str, Any]:
    """The JSON config of a model file, checked to be a headcount model of one of `formats`."""
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"model file {str(path)!r} does not exist")
    try:
        with safe_open(str(path), framework="np") as f:
            meta = f.metadata() or {}
    except (SafetensorError, OSError, ValueError) as err:
        raise ModelFileError(f"{str(path)!r} is not a safetensors file ({err})") from None
    if "headcount" not in meta:
        raise ModelFileError(f"{str(path)!r} has no headcount config in its safetensors metadata")
    try:
        config = json.loads(meta["headcount"])
    except json.JSONDecodeError as err:
        raise ModelFileError(f"{str(path)!r}: headcount config is not JSON ({err})") from None
    if not isinstance(config, dict):
        raise ModelFileError(f"{str(path)!r}: headcount config must be a JSON object")
    if config.get("format") not in formats:
        expected = " or ".join(repr(f) for f in formats)
        raise ModelFileError(f"{str(path)!r} holds {config.get('format')!r}, expected {expected}")
    return config


def load_model(path: str | os.PathLike) -> Transformer | OneLayerTable:
    """Read a model file written by save_model; ModelFileError (a ValueError) if it is not one."""
    config = read_config(path)
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as err:
        raise ModelFileError(f"{str(path)!r}: cannot read its tensors ({err})") from None
    try:
        dec_cfg = config["decoder"]
        dec_tensors = {k.split(".", 1)[1]: v for k, v in tensors.items() if k.startswith("decoder.")}
        decoder = decoder_class(dec_cfg["kind"]).from_parts(dec_tensors, dec_cfg.get("config", {}))
        if config["format"] == TABLE_FORMAT:
            tables = (tensors[name] for name in ("embed", "Q", "K", "V"))
            return OneLayerTable(*tables, decoder, config["mask"], config.get("info", {}))
        layers = []
        for l, layer_cfg in enumerate(config["layers"]):
            heads = tuple(
                AttentionHead(*(tensors[f"layers.{l}.heads.{h}.{n}"] for n in ("W_Q", "W_K", "W_V", "W_O")))
                for h in range(int(layer_cfg["heads"]))
            )
            mlp = None
            if layer_cfg.get("mlp"):
                mlp = MLP(*(tensors[f"layers.{l}.mlp.{n}"] for n in ("W_in", "b_in", "W_out", "b_out")))
            layers.append(Layer(heads, mlp))
        return Transformer(
            tensors["W_E"], tensors["W_pos"], tuple(layers), decoder, config["mask"], config.get("info", {})
        )
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
        raise ModelFileError(
            f"{str(path)!r} is not a valid headcount model: {type(err).__name__}: {err}"
        ) from None
