"""The weights dict of the public API (Transformer.from_weights, Transformer.weights): a model's
arrays under TransformerLens's names and shapes, stacked per layer ([n_heads, d_model, d_head]),
read into the parts of the weight form and written back from them, bit for bit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from headcount.common.errors import InputError
from headcount.core.model.parts import (
    ACTIVATIONS,
    MLP,
    AttentionHead,
    Layer,
    LayerNorm,
    LinearDecoder,
    RMSNorm,
    Rotary,
    decoder_class,
)

BOTTOM_LAST = "bottom-last"  # the readout whose last logit is ⊥: W_U [d_model, alphabet + 1]
_LAYER_KEY = re.compile(r"blocks\.(\d+)\.(attn|ln1|ln2|mlp)\.(\w+)")
_ATTN = ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")
_MLP = ("W_in", "b_in", "W_out", "b_out")
_GATE = ("W_gate", "b_gate")
# the parts of the Llama / NeoX blocks (issue 32), beyond GPT-2's
BEYOND_GPT2 = {"rmsnorm", "rotary", "gated mlp", "parallel", "silu", "shortformer"}


def _weights_of(weights: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], int]:
    """The dict as float64 arrays and its number of layers; InputError for an unknown key, a gap in
    the layers or a value that is not a finite array."""
    arrays, layers = {}, set()
    for key, value in weights.items():
        match = _LAYER_KEY.fullmatch(str(key))
        known = key in ("W_E", "W_pos", "W_U", "b_U", "ln_final.w", "ln_final.b") or (
            match is not None
            and match[3]
            in {"attn": _ATTN, "ln1": ("w", "b"), "ln2": ("w", "b"), "mlp": _MLP + _GATE}[match[2]]
        )
        if not known:
            raise InputError(
                f"weights: unknown key {str(key)[:80]!r}; keys are W_E, W_pos, W_U, b_U, "
                "ln_final.w|b and blocks.{l}.attn.W_Q|W_K|W_V|W_O|b_Q|b_K|b_V|b_O, "
                "blocks.{l}.ln1|ln2.w|b, blocks.{l}.mlp.W_in|b_in|W_out|b_out|W_gate|b_gate"
            )
        try:
            array = np.array(value, dtype=np.float64)  # a copy: the model never shares the caller's
        except (TypeError, ValueError, RuntimeError) as err:
            raise InputError(f"weights: {key} is not a numeric array ({err})") from None
        if not np.isfinite(array).all():
            raise InputError(f"weights: {key} holds NaN or infinite values; weights are finite")
        arrays[key] = array
        if match is not None:
            layers.add(int(match[1]))
    for key in ("W_E", "W_pos", "W_U"):
        if key not in arrays:
            raise InputError(f"weights: {key} is missing")
    if layers != set(range(len(layers))):
        raise InputError(f"weights: the blocks are numbered {sorted(layers)}; expected 0..L−1")
    return arrays, len(layers)


def _stacked(arrays: dict[str, np.ndarray], key: str, ndim: int, heads: int | None) -> np.ndarray:
    value = arrays.get(key)
    if value is None or value.ndim != ndim or (heads is not None and value.shape[0] != heads):
        got = "missing" if value is None else f"of shape {list(value.shape)}"
        raise InputError(f"weights: {key} is {got}; expected {ndim} axes, one per head first")
    return value


def _norm(w: np.ndarray | None, b: np.ndarray | None, eps: float, offset: float):
    """LayerNorm with a bias, RMSNorm without one (TransformerLens's RMS norms have only w)."""
    if w is None:
        return None
    return RMSNorm(w, eps, offset) if b is None else LayerNorm(w, b, eps)


def _layer_of(arrays: dict, l: int, scale: float, activation: str, options: dict) -> Layer:
    """Block l of the weights dict (TransformerLens's names and shapes)."""
    get = lambda part: arrays.get(f"blocks.{l}.{part}")  # noqa: E731
    W_Q = _stacked(arrays, f"blocks.{l}.attn.W_Q", 3, None)
    n = W_Q.shape[0]
    W_K, W_V = (_stacked(arrays, f"blocks.{l}.attn.{k}", 3, n) for k in ("W_K", "W_V"))
    W_O = _stacked(arrays, f"blocks.{l}.attn.W_O", 3, n)
    bias = {k: get(f"attn.{k}") for k in ("b_Q", "b_K", "b_V")}
    for k, b in bias.items():
        if b is not None:
            _stacked(arrays, f"blocks.{l}.attn.{k}", 2, n)
    try:
        heads = tuple(
            AttentionHead(
                W_Q[h],
                W_K[h],
                W_V[h],
                W_O[h],
                *(None if b is None else b[h] for b in bias.values()),
            )
            for h in range(n)
        )
        eps, offset = options["ln_eps"], options["norm_offset"]
        ln = {k: _norm(get(f"{k}.w"), get(f"{k}.b"), eps, offset) for k in ("ln1", "ln2")}
        mlp = None
        if get("mlp.W_in") is not None:
            W_in, W_out = get("mlp.W_in"), get("mlp.W_out")
            b_in = get("mlp.b_in") if get("mlp.b_in") is not None else np.zeros(W_in.shape[-1])
            b_out = get("mlp.b_out") if get("mlp.b_out") is not None else np.zeros(W_in.shape[0])
            mlp = MLP(W_in, b_in, W_out, b_out, activation, get("mlp.W_gate"), get("mlp.b_gate"))
        b_O, rotary, parallel = get("attn.b_O"), options["rotary"], options["parallel"]
        return Layer(heads, mlp, ln["ln1"], ln["ln2"], b_O, scale, rotary, parallel)
    except (ValueError, TypeError, AttributeError, IndexError) as err:
        raise InputError(f"weights: block {l}: {err}") from None


def parts_from_weights(
    weights: Mapping[str, Any],
    *,
    readout: str | Mapping[str, Any],
    attn_scale: float | Sequence[float] = 1.0,
    activation: str = "relu",
    ln_eps: float = 1e-5,
    rotary: Rotary | Mapping[str, Any] | None = None,
    parallel: bool = False,
    norm_offset: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, tuple[Layer, ...], Any, LayerNorm | RMSNorm | None]:
    """(W_E, W_pos, layers, decoder, ln_final) of a weights dict (Transformer.from_weights's
    docstring says what it holds); InputError naming the first key that does not fit."""
    options = _block_options(ln_eps, rotary, parallel, norm_offset)
    arrays, L = _weights_of(weights)
    scales = [attn_scale] * L if isinstance(attn_scale, (int, float)) else list(attn_scale)
    if len(scales) != L:
        raise InputError(f"attn_scale: {len(scales)} scales for {L} layers")
    if activation not in ACTIVATIONS:
        raise InputError(f"activation {activation!r} is not one of {', '.join(ACTIVATIONS)}")
    W_U, b_U = arrays["W_U"], arrays.get("b_U")
    if b_U is None:
        b_U = np.zeros(W_U.shape[-1])
    try:
        layers = [_layer_of(arrays, l, float(scales[l]), activation, options) for l in range(L)]
        if readout == BOTTOM_LAST:
            if W_U.ndim != 2 or W_U.shape[1] != arrays["W_E"].shape[0] + 1:
                raise InputError(
                    f"readout {BOTTOM_LAST!r}: W_U must be [d_model, d_vocab + 1] (the last logit "
                    "is ⊥),"
                    f" got {list(W_U.shape)} with d_vocab {arrays['W_E'].shape[0]}"
                )
            decoder = LinearDecoder(W_U, b_U)
        elif isinstance(readout, Mapping):
            config = {"readout": "lm-head", "vocab_map": dict(readout)}
            decoder = decoder_class("vocab").from_parts({"W_U": W_U, "b_U": b_U}, config)
        else:
            raise InputError(
                f"readout must be {BOTTOM_LAST!r} or a vocabulary map such as "
                f"{{'none': id of the ⊥ logit}}, got {str(readout)[:60]!r}"
            )
        ln_final = _norm(arrays.get("ln_final.w"), arrays.get("ln_final.b"), ln_eps, norm_offset)
        return arrays["W_E"], arrays["W_pos"], tuple(layers), decoder, ln_final
    except (ValueError, TypeError, AttributeError) as err:
        if isinstance(err, InputError):
            raise
        raise InputError(f"weights: {err}") from None


def _block_options(ln_eps: float, rotary: Any, parallel: Any, norm_offset: Any) -> dict[str, Any]:
    """from_weights's options for the Llama / NeoX parts, checked (InputError)."""
    if not isinstance(parallel, bool):
        raise InputError(f"parallel must be true or false, got {str(parallel)[:40]}")
    if norm_offset not in (0, 1) or isinstance(norm_offset, bool):
        raise InputError(f"norm_offset must be 0 or 1 (Gemma), got {str(norm_offset)[:40]}")
    if isinstance(rotary, Mapping):
        try:
            rotary = Rotary(**rotary)
        except (TypeError, ValueError) as err:
            raise InputError(f"rotary: {err} (keys: theta, dims, layout)") from None
    if rotary is not None and not isinstance(rotary, Rotary):
        raise InputError("rotary must be a Rotary, a {theta, dims, layout} map or None")
    return {"ln_eps": ln_eps, "rotary": rotary, "parallel": parallel, "norm_offset": norm_offset}


def _uniform(values: set, what: str, default: Any) -> Any:
    if len(values) > 1:
        raise ValueError(
            f"the model's {what} differ by part ({sorted(map(str, values))}): no one option"
        )
    return next(iter(values), default)


def _padded(value: np.ndarray | None, key: str, widths: dict[str, int], head: Any) -> np.ndarray:
    """One head's array at the layer's widths: zero where the head has no bias or fewer columns."""
    if key == "W_O":
        out = np.zeros((widths["W_V"], head.W_O.shape[1]))
        out[: head.W_O.shape[0]] = head.W_O
        return out
    width = widths[key]
    shape = (width,) if key.startswith("b") else (head.W_Q.shape[0], width)
    out = np.zeros(shape)
    if value is not None:
        out[..., : value.shape[-1]] = value
    return out


def transformer_weights(model: Any) -> dict[str, np.ndarray]:
    """Transformer.weights (its docstring) of `model`, a Transformer."""
    if model.readout is None:
        raise ValueError(
            f"the model's readout ({model.decoder.kind}) is not a linear unembedding: it has no W_U"
        )
    out = {"W_E": model.W_E.copy(), "W_pos": model.W_pos.copy()}
    for l, layer in enumerate(model.layers):
        heads, pre = layer.heads, f"blocks.{l}."
        # heads of one layer may differ in width; the dict stacks them padded with zero columns
        # (and rows of W_O), which add exactly 0 to every score and value
        d_head = max(h.W_Q.shape[1] for h in heads)
        d_value = max(h.W_V.shape[1] for h in heads)
        widths = {"W_Q": d_head, "W_K": d_head, "W_V": d_value, "b_Q": d_head, "b_K": d_head}
        widths["b_V"] = d_value
        for k in ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V"):
            values = [getattr(h, k) for h in heads]
            if k.startswith("b") and all(v is None for v in values):
                continue
            out[pre + "attn." + k] = np.stack(
                [_padded(v, k, widths, h) for v, h in zip(values, heads)]
            )
        if layer.b_O is not None:
            out[pre + "attn.b_O"] = layer.b_O.copy()
        for k in ("ln1", "ln2"):
            out |= _norm_weights(pre + k, getattr(layer, k))
        if layer.mlp is not None:
            for k in _MLP + _GATE:
                if (value := getattr(layer.mlp, k)) is not None:
                    out[pre + "mlp." + k] = value.copy()
    out |= _norm_weights("ln_final", model.ln_final)
    dec = model.decoder
    out["W_U"] = np.eye(model.d_model) if dec.W_U is None else dec.W_U.copy()  # "hidden": x itself
    if dec.b_U is not None:
        out["b_U"] = dec.b_U.copy()
    return out


def _norm_weights(name: str, ln: LayerNorm | RMSNorm | None) -> dict[str, np.ndarray]:
    if ln is None:
        return {}
    out = {name + ".w": ln.w.copy()}
    return out if isinstance(ln, RMSNorm) else out | {name + ".b": ln.b.copy()}


def transformer_options(model: Any) -> dict[str, Any]:
    """Transformer.weight_options (its docstring) of `model`, a Transformer."""
    lns = [model.ln_final] + [ln for layer in model.layers for ln in (layer.ln1, layer.ln2)]
    mlps = [layer.mlp for layer in model.layers if layer.mlp is not None]
    scales = [layer.attn_scale for layer in model.layers]
    out = {
        "readout": model.readout,
        "mask": model.mask,
        "attn_scale": scales[0] if len(set(scales)) == 1 else scales,
        "activation": _uniform({m.activation for m in mlps}, "MLP activations", "relu"),
        "ln_eps": _uniform({ln.eps for ln in lns if ln is not None}, "LayerNorm eps", 1e-5),
        "info": dict(model.info),
    }
    # the Llama / NeoX options only where a model has the part (a GPT-2 model's are unchanged)
    rotary = _uniform({layer.rotary for layer in model.layers}, "rotary parts", None)
    if rotary is not None:
        out["rotary"] = rotary.config()
    if parallel := _uniform({layer.parallel for layer in model.layers}, "residuals", False):
        out["parallel"] = parallel
    offsets = {ln.offset for ln in lns if isinstance(ln, RMSNorm)}
    if offset := _uniform(offsets, "RMSNorm offsets", 0.0):
        out["norm_offset"] = offset
    if model.positions != "residual":
        out["positions"] = model.positions
    return out
