"""TransformerLens in and out (issue 15): a weight-form model as a TransformerLens 4.x
``TransformerBridge`` (``TransformerBridge.boot_native`` on a ``TransformerBridgeConfig``, the state
dict loaded with a strict ``load_state_dict``, float64, never processed) and back, in memory or as
files. The mapping, the traps of TL 4.x and the record that makes the round trip bit-identical are
in headcount.interop.transformer_lens_state, which builds and reads the parts in numpy alone.

What TransformerLens's own tools see (issue 30). The bridge carries a tokenizer whose words are the
task's symbols (token id i ↔ "i"; headcount.interop.transformer_lens_tokens, which also says why no
BOS is ever prepended), so ``bridge.to_tokens("0 1 2 0")``, ``run_with_cache`` on text and
``transformer_lens.head_detector.detect_head(bridge, text, "induction_head")`` work unchanged (TL's
to_tokens, hence detect_head, takes strings only: for a token tensor pass
``bridge.to_string(tokens)``). TL holds one head count for every layer, so layers with fewer heads
are zero-padded: the padded heads are phantoms (uniform causal attention, zero output), and
``bridge.cfg.headcount_heads_per_layer`` (the true counts) and ``bridge.cfg.headcount_padded_heads``
(the phantom [layer, head] pairs) say so; ``detect_head(…, heads={l: list(range(k)) for l, k in
enumerate(bridge.cfg.headcount_heads_per_layer)})`` scores the real heads only (TL gives the others
−1). The phantoms' pattern stays uniform: it is what their zero W_Q and W_K compute, and a pattern
rewritten by a hook would not survive TL's hook resets nor the files (and all-zero rows would make
detect_head's "mul" score NaN, which torch.argmax ranks first).

This is the only module that imports transformer_lens, and only inside `to_transformer_lens` and
`from_transformer_lens`, so ``import headcount…`` never needs the extra (missing: InputError naming
``pip install 'headcount[tl]'``). Files need no TransformerLens (nor transformers) at all:

    write_transformer_lens(model, out_dir)   config.json  TL's config fields, the head flags, and
                                                          the record under the key "headcount"
                                                          (TransformerBridgeConfig.from_dict
                                                          ignores keys it does not know)
                                             model.safetensors  the state dict, float64
                                             tokenizer.json, tokenizer_config.json  the symbols'
                                                          tokenizer (JSON data)
                                             load.py      four lines that boot the bridge from
                                                          them (``python load.py`` or
                                                          ``runpy.run_path`` leaves it in
                                                          ``bridge``, the tokenizer attached, the
                                                          record and head flags on bridge.cfg)
    read_transformer_lens(folder)            the model back from config.json and model.safetensors
                                             alone (bounded reading: common.files,
                                             interop.checkpoints); the tokenizer files and load.py
                                             are never read

`export_transformer_lens` (`headcount export transformer-lens`) and `import_transformer_lens`
(`headcount import transformer-lens`) are the command line's one call each.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from headcount.common.errors import InputError, param
from headcount.common.files import (
    ModelFileError,
    TensorShapes,
    atomic_write_bytes,
    atomic_write_safetensors,
    load_tensors,
    show_path,
)
from headcount.common.jsonable import JsonResult, jsonable
from headcount.common.validate import check_not_read, check_writable, filling_folder
from headcount.core.model import Transformer, load_model, save_model
from headcount.interop.checkpoints import read_json_file
from headcount.interop.transformer_lens_config import check_fields, expected_tensors
from headcount.interop.transformer_lens_state import model_from_parts, transformer_lens_parts
from headcount.interop.transformer_lens_tokens import (
    TOKENIZER_CONFIG_FILE,
    TOKENIZER_FILE,
    symbol_tokenizer,
    tokenizer_files,
)

TL_MISSING = "TransformerLens is not installed: pip install 'headcount[tl]'"
CONFIG_FILE, WEIGHTS_FILE, SNIPPET_FILE = "config.json", "model.safetensors", "load.py"
# The files of an export in the order written (load.py last), and the config keys set on bridge.cfg
FILES = (CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE, TOKENIZER_CONFIG_FILE, SNIPPET_FILE)
CFG_KEYS = ("headcount", "headcount_heads_per_layer", "headcount_padded_heads")
SNIPPET = (
    "import json, torch; from pathlib import Path; from safetensors.torch import load_file; "
    "from transformers import PreTrainedTokenizerFast; "
    "from transformer_lens.config import TransformerBridgeConfig; "
    "from transformer_lens.model_bridge import TransformerBridge\n"
    "here = Path(__file__).resolve().parent; config = json.loads((here / "
    '"config.json").read_text()); tokenizer = PreTrainedTokenizerFast.from_pretrained(here)\n'
    "bridge = TransformerBridge.boot_native(TransformerBridgeConfig.from_dict(config | "
    '{"dtype": torch.float64}), tokenizer, dtype=torch.float64); bridge.load_state_dict('
    'load_file(here / "model.safetensors"), strict=True)\n'
    f"for key in {CFG_KEYS!r}: setattr(bridge.cfg, key, config.get(key))\n"
)


def _tl() -> tuple[Any, Any]:
    """(TransformerBridge, TransformerBridgeConfig), or InputError naming the extra."""
    try:
        from transformer_lens.config import TransformerBridgeConfig
        from transformer_lens.model_bridge import TransformerBridge
    except ImportError:
        raise InputError(TL_MISSING) from None
    return TransformerBridge, TransformerBridgeConfig


def to_transformer_lens(model: Transformer) -> Any:
    """A TL-native TransformerBridge computing `model`: float64 weights, never processed, the
    symbols' tokenizer attached (``bridge.to_tokens("0 1 2")`` is [[0, 1, 2]], no BOS), the record
    on ``bridge.cfg.headcount`` and the head flags on ``bridge.cfg.headcount_heads_per_layer`` /
    ``headcount_padded_heads`` (module docstring; InputError for what TransformerLens cannot hold,
    saying why)."""
    TransformerBridge, TransformerBridgeConfig = _tl()
    import torch

    config, tensors = transformer_lens_parts(model)
    model_from_parts(
        config, tensors
    )  # the parts fit together (InputError naming the first that does not)
    cfg = TransformerBridgeConfig.from_dict(config | {"dtype": torch.float64})
    tokenizer = symbol_tokenizer(config["d_vocab"], config["n_ctx"])
    bridge = TransformerBridge.boot_native(cfg, tokenizer, dtype=torch.float64)
    bridge.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=True)
    for key in CFG_KEYS:  # as load.py sets them
        setattr(bridge.cfg, key, config.get(key))
    return bridge


def from_transformer_lens(bridge: Any) -> Transformer:
    """The headcount model of a TL-native bridge (attention-only or GPT-2-style): exactly the
    exported model when the bridge carries headcount's record, else the plain reading
    (transformer_lens_state docstring)."""
    TransformerBridge, _ = _tl()
    if not isinstance(bridge, TransformerBridge):
        raise InputError(
            f"expected a TransformerLens TransformerBridge, got {type(bridge).__name__}"
        )
    if getattr(bridge, "_weights_processed", False):
        raise InputError(
            "the bridge's weights were processed (process_weights folds LayerNorm, centres "
            "weights and may "
            "cast to float32): read the bridge before processing it"
        )
    import torch

    cfg = bridge.cfg
    config = {k: v for k, v in vars(cfg).items() if not k.startswith("_")}
    state = {k: v.detach().to("cpu", torch.float64).numpy() for k, v in bridge.state_dict().items()}
    return model_from_parts(config, state, "the TransformerBridge")


@dataclass(frozen=True)
class TransformerLensExport(JsonResult):
    """The files `write_transformer_lens` wrote: `files` (paths, load.py last), `config` (TL's
    config fields and the head flags, without the record), `heads` (headcount's heads per layer; TL
    holds config n_heads in each), `padded` (whether any head, width or MLP was zero-padded) and
    `exact_round_trip` (reading the files back gives every array bit-identical: false only when
    layers' attention scales are not powers of two apart)."""

    out_dir: str
    files: tuple[str, ...]
    config: dict[str, Any]
    heads: tuple[int, ...]
    padded: bool
    exact_round_trip: bool
    snippet: str


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return (a is None) == (b is None) and (a is None or np.array_equal(a, b))


def write_transformer_lens(
    model: Transformer,
    out_dir: str | os.PathLike,
    *,
    follow: bool = True,
    reads: tuple = (),
    option: str = "out",
) -> TransformerLensExport:
    """Write `model` as a TransformerLens export (module docstring) into the folder `out_dir` (made
    if missing, and removed again if the files cannot be written; each of the five files is replaced
    atomically). `follow` False refuses an `out_dir` that is a symbolic link (a folder named inside
    the user's); `reads`: the files the command reads, which no file written may be; `option` names
    out_dir in messages."""
    config, tensors = transformer_lens_parts(
        model
    )  # what TL cannot hold is refused before out_dir is made
    back = model_from_parts(config, tensors)
    exact = all(
        _same(h.W_Q, g.W_Q) and _same(h.b_Q, g.b_Q)
        for layer, again in zip(model.layers, back.layers)
        for h, g in zip(layer.heads, again.heads)
    )
    texts = {CONFIG_FILE: json.dumps(jsonable(config), indent=2, ensure_ascii=False) + "\n"}
    for name, obj in tokenizer_files(config["d_vocab"], config["n_ctx"]).items():
        texts[name] = json.dumps(obj, ensure_ascii=False) + "\n"
    texts[SNIPPET_FILE] = SNIPPET
    check_not_read([Path(os.fsdecode(out_dir), n) for n in FILES], reads)
    with filling_folder(out_dir, option, follow) as out:
        atomic_write_safetensors(out / WEIGHTS_FILE, tensors, {"format": "pt"})
        for name, text in texts.items():
            atomic_write_bytes(
                out / name, lambda tmp, text=text: Path(tmp).write_text(text, encoding="utf-8")
            )
    return TransformerLensExport(
        str(out),
        tuple(str(out / name) for name in FILES),
        {k: v for k, v in config.items() if k != "headcount"},
        tuple(model.heads_per_layer),
        _padded(model, config),
        exact,
        SNIPPET,
    )


def _padded(model: Transformer, config: dict[str, Any]) -> bool:
    """Whether the export pads any head count, head width or MLP width of `model`."""
    widths = [
        w for layer in model.layers for h in layer.heads for w in (h.W_Q.shape[1], h.W_V.shape[1])
    ]
    mlps = [layer.mlp.W_in.shape[1] if layer.mlp else 0 for layer in model.layers]
    padded = any(h != config["n_heads"] for h in model.heads_per_layer) or any(
        w != config["d_head"] for w in widths
    )
    return padded or (not config["attn_only"] and any(m != config["d_mlp"] for m in mlps))


def read_transformer_lens(folder: str | os.PathLike) -> Transformer:
    """The model of a TransformerLens export folder (config.json + model.safetensors): exactly the
    exported model when config.json holds headcount's record, else the plain reading. Files are read
    bounded (sizes, nesting, shapes checked before anything loads, within the memory guard); a
    missing or hostile file is refused on one line (InputError / ModelFileError)."""
    return _read_export(folder)[0]


def _read_export(folder: str | os.PathLike) -> tuple[Transformer, bool]:
    """(the model of an export folder, whether its config.json holds headcount's record)."""
    text = os.fsdecode(folder)
    if not os.path.isdir(text):
        raise InputError(
            f"{show_path(text)} is not a folder: a TransformerLens export is a folder holding "
            f"{CONFIG_FILE} "
            f"and {WEIGHTS_FILE}"
        )
    where = f"TransformerLens export {show_path(text)}"
    config = read_json_file(os.path.join(text, CONFIG_FILE), CONFIG_FILE)
    if not isinstance(config, dict):
        raise ModelFileError(f"{where}: {CONFIG_FILE} must hold a JSON object")
    shapes = TensorShapes(os.path.join(text, WEIGHTS_FILE), "TransformerLens")
    want = expected_tensors(check_fields(config, where, ModelFileError))
    for name, shape in want.items():
        shapes.expect(name, shape, "the size its config.json gives")
    shapes.only(want)
    model = model_from_parts(config, load_tensors(shapes), where, ModelFileError)
    return model, config.get("headcount") is not None


def export_transformer_lens(
    model_file: str | os.PathLike, out_dir: str | os.PathLike
) -> TransformerLensExport:
    """`headcount export transformer-lens`: the model file as a TransformerLens export in
    `out_dir`."""
    text = os.fsdecode(out_dir)
    if text == "" or (os.path.lexists(text) and not os.path.isdir(text)):
        raise InputError(
            f"{param('out')} {show_path(text)} is empty or not a folder: give a folder path"
        )
    return write_transformer_lens(load_model(model_file), text, reads=(model_file,))


@dataclass(frozen=True)
class TransformerLensImport(JsonResult):
    """A TransformerLens export read into a headcount model file: `record` says whether it carried
    headcount's record (then the model is exactly the one exported), `decoder` the decoder kind."""

    path: str
    source: str
    record: bool
    layers: int
    heads: tuple[int, ...]
    d_model: int
    vocab: int
    n_ctx: int
    decoder: str
    extensions: tuple[str, ...]


def import_transformer_lens(
    folder: str | os.PathLike, out: str | os.PathLike
) -> TransformerLensImport:
    """`headcount import transformer-lens`: a TransformerLens export folder as a headcount model
    file."""
    check_writable(out)
    check_not_read(
        [out], [os.path.join(os.fsdecode(folder), n) for n in (CONFIG_FILE, WEIGHTS_FILE)]
    )
    model, record = _read_export(folder)
    save_model(model, out)
    return TransformerLensImport(
        str(out),
        os.fsdecode(folder),
        record,
        len(model.layers),
        tuple(model.heads_per_layer),
        model.d_model,
        model.alphabet,
        model.n_ctx,
        model.decoder.kind,
        tuple(model.extensions),
    )
