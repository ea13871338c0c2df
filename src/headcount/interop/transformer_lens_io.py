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

HookedTransformer state dicts (TransformerLens 2 and 3; issue 32): `read_hooked_transformer` reads
one (a .pt / .pth / .bin saved with torch.save, read only with weights_only=True, or .safetensors)
with its HookedTransformerConfig as JSON. Its property names are the weights dict's
(Transformer.from_weights) once embed.W_E, pos_embed.W_pos, unembed.W_U / b_U lose their module
name; grouped key/value heads (attn._W_K, _W_V, _b_K, _b_V) give each head its group's copy; the
buffers HookedTransformer saves (attn.mask, IGNORE, rotary_sin, rotary_cos) are skipped. The config
gives the rest: scores divided by attn_scale (√d_head by default) when use_attn_scale; LN, RMS and
their parameter-free Pre forms (w = 1); rotary positions rotate_half, or interleaved with
rotary_adjacent_pairs; shortformer positions (W_pos added to the q and k inputs after ln1, as
HookedTransformer adds them); gated_mlp; parallel_attn_mlp; final_rms. Rope scaling, soft caps, QK
norms, experts and other activations are refused by name.
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
    MAX_HEADS_PER_LAYER,
    ModelFileError,
    TensorShapes,
    atomic_write_bytes,
    atomic_write_safetensors,
    check_json_types,
    load_tensors,
    show_path,
)
from headcount.common.jsonable import JsonResult, jsonable
from headcount.common.resources import check_memory
from headcount.common.validate import check_not_read, check_writable, filling_folder
from headcount.core.model import Rotary, Transformer, load_model, save_model
from headcount.core.model.files import MAX_LAYERS
from headcount.interop.checkpoints import locate, open_state_dict, read_json_file
from headcount.interop.transformer_lens_config import MAX_WIDTH, check_fields, expected_tensors
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
    folder: str | os.PathLike, out: str | os.PathLike, config: str | os.PathLike | None = None
) -> TransformerLensImport:
    """`headcount import transformer-lens`: a TransformerLens export folder, or a HookedTransformer
    state dict with its `config` (module docstring), as a headcount model file."""
    check_writable(out)
    if config is not None or os.path.isfile(os.fsdecode(folder)):
        if config is None:
            raise InputError(
                f"{show_path(os.fsdecode(folder))} is not a folder (a TransformerLens export is "
                f"one); a HookedTransformer state dict needs {param('config')} with its config"
            )
        check_not_read([out], [os.fsdecode(folder), os.fsdecode(config)])
        model, record = read_hooked_transformer(folder, config), False
    else:
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


# --- HookedTransformer state dicts (module docstring)
# ---------------------------------------------------------------

HOOKED_TYPES = dict.fromkeys(
    ("n_layers", "d_model", "n_ctx", "d_head", "n_heads", "d_vocab", "d_mlp"), "integer?"
)
HOOKED_TYPES |= dict.fromkeys(
    ("act_fn", "normalization_type", "positional_embedding_type", "attention_dir"), "string?"
)
HOOKED_TYPES |= dict.fromkeys(("eps", "attn_scale", "rotary_base"), "number?")
HOOKED_TYPES |= dict.fromkeys(("rotary_dim", "n_key_value_heads", "d_vocab_out"), "integer?")
HOOKED_TYPES |= dict.fromkeys(
    ("use_attn_scale", "rotary_adjacent_pairs", "gated_mlp", "parallel_attn_mlp", "final_rms"),
    "boolean?",
)
HOOKED_ACT = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh", "silu": "silu"}
HOOKED_ACT |= {"gelu_pytorch_tanh": "gelu_tanh", "swish": "silu"}
HOOKED_BUFFERS = (".attn.mask", ".attn.IGNORE", ".attn.rotary_sin", ".attn.rotary_cos")
HOOKED_REFUSED = (
    "use_NTK_by_parts_rope",
    "use_qk_norm",
    "num_experts",
    "use_local_attn",
    "attn_scores_soft_cap",
    "output_logits_soft_cap",
    "rotary_scaling",
)


def _hooked_sizes(cfg: dict[str, Any], where: str) -> dict[str, int]:
    """The sizes a HookedTransformerConfig states, each an integer in range (InputError)."""
    out = {}
    for key, low, high in (
        ("n_layers", 1, MAX_LAYERS),
        ("d_model", 1, MAX_WIDTH),
        ("d_head", 1, MAX_WIDTH),
        ("n_heads", 1, MAX_HEADS_PER_LAYER),
        ("n_ctx", 1, 1 << 16),
    ):
        value = cfg.get(key)
        if type(value) is not int or not low <= value <= high:
            raise InputError(
                f"{where}: {key} must be an integer in {low}..{high}, got {str(value)[:40]}"
            )
        out[key] = value
    kv = cfg.get("n_key_value_heads") or out["n_heads"]
    if type(kv) is not int or kv < 1 or out["n_heads"] % kv:
        raise InputError(f"{where}: n_key_value_heads = {str(kv)[:40]} does not divide n_heads")
    return out | {"kv_heads": kv}


def _hooked_options(cfg: dict[str, Any], where: str) -> dict[str, Any]:
    """from_weights's options of a HookedTransformerConfig (module docstring)."""
    check_json_types(cfg, HOOKED_TYPES, where)
    for key in HOOKED_REFUSED:
        value = cfg.get(key)
        if value not in (None, False, 0, -1, -1.0):
            raise InputError(f"{where}: {key} = {str(value)[:40]} is not read (no counterpart)")
    positional = cfg.get("positional_embedding_type") or "standard"
    if positional not in ("standard", "rotary", "shortformer"):
        raise InputError(f"{where}: positional_embedding_type {positional[:40]!r} is not read")
    act = cfg.get("act_fn") or "relu"
    if act not in HOOKED_ACT:
        raise InputError(f"{where}: act_fn {act[:40]!r} is not read: {', '.join(HOOKED_ACT)}")
    d_head = _hooked_sizes(cfg, where)["d_head"]
    scale = cfg.get("attn_scale") or d_head**0.5
    rotary = None
    if positional == "rotary":
        layout = "interleaved" if cfg.get("rotary_adjacent_pairs") else "rotate_half"
        try:
            rotary = Rotary(
                float(cfg.get("rotary_base") or 10000.0), cfg.get("rotary_dim") or d_head, layout
            )
        except ValueError as err:
            raise InputError(f"{where}: {err}") from None
    return {
        "readout": {},
        "mask": "full" if cfg.get("attention_dir") == "bidirectional" else "causal",
        "attn_scale": 1.0 / scale if cfg.get("use_attn_scale", True) else 1.0,
        "activation": HOOKED_ACT[act],
        "ln_eps": float(cfg.get("eps") or 1e-5),
        "rotary": rotary,
        "parallel": bool(cfg.get("parallel_attn_mlp")),
        "positions": "qk" if positional == "shortformer" else "residual",
        "info": {"imported": "transformer_lens HookedTransformer"},
    }


def _hooked_weights(tensors: dict[str, np.ndarray], cfg: dict, where: str) -> dict[str, Any]:
    """The weights dict of a HookedTransformer state dict (module docstring)."""
    sizes = _hooked_sizes(cfg, where)
    out: dict[str, Any] = {}
    renames = {"embed.W_E": "W_E", "pos_embed.W_pos": "W_pos", "unembed.W_U": "W_U"}
    renames["unembed.b_U"] = "b_U"
    group = sizes["n_heads"] // sizes["kv_heads"]
    for name, value in tensors.items():
        if name.endswith(HOOKED_BUFFERS):
            continue
        if ".attn.b_" in name or ".attn._b_" in name:  # HookedTransformer always has them
            if not value.any():  # an all-zero bias adds exactly 0: read as none, as TL's
                continue
        if ".attn._" in name:  # grouped key/value heads: each head's own copy
            name, value = name.replace(".attn._", ".attn."), np.repeat(value, group, axis=0)
        out[renames.get(name, name)] = value
    if "W_pos" not in out and cfg.get("positional_embedding_type") == "rotary":
        out["W_pos"] = np.zeros((sizes["n_ctx"], sizes["d_model"]))
    norm = cfg.get("normalization_type")
    if norm in ("LNPre", "RMSPre"):  # parameter-free: w = 1 (and b = 0)
        parts = ("ln1",) if cfg.get("attn_only") else ("ln1", "ln2")
        layers = range(sizes["n_layers"])
        names = ["ln_final"] + [f"blocks.{l}.{n}" for l in layers for n in parts]
        for n in names:
            out[n + ".w"] = np.ones(sizes["d_model"])
            if norm == "LNPre":
                out[n + ".b"] = np.zeros(sizes["d_model"])
    elif norm not in ("LN", "RMS", None):
        raise InputError(f"{where}: normalization_type {str(norm)[:40]!r} is not read")
    return out


def read_hooked_transformer(path: str | os.PathLike, config: str | os.PathLike) -> Transformer:
    """The model of a HookedTransformer state dict and its config (module docstring)."""
    weights, _ = locate(path, None)
    cfg = read_json_file(config, "config")
    where = f"HookedTransformer config {show_path(os.fsdecode(config))}"
    if not isinstance(cfg, dict):
        raise InputError(f"{where} must hold a JSON object")
    options = _hooked_options(cfg, where)
    source = open_state_dict(weights)
    elements = sum(int(np.prod(shape)) for shape, _ in source.listed.values())
    check_memory(64 * elements, f"reading {show_path(weights)}")
    tensors = source.load(list(source.listed))
    return Transformer.from_weights(_hooked_weights(tensors, cfg, where), **options)
