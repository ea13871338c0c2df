"""A weight-form model as a TransformerLens-native config and state dict, and back (issue 15), in numpy
alone: headcount.interop.transformer_lens_io boots a ``TransformerBridge`` from these parts, reads one back
through them, and writes and reads them as files. Nothing here imports transformer_lens.

The mapping (TL-native state dict; nn.Linear weights are [out in], so a head's block is transposed):

    W_E [vocab d] → embed.weight          W_pos [n_ctx d] → pos_embed.weight (TL's pos_embed)
    head h of layer l (TL width D, block h·D … h·D + width):
      a_l·W_Q, W_K, W_V → blocks.l.attn.{q,k,v}.weight rows;  a_l·b_Q, b_K, b_V → .bias (zeros if none)
      W_O → blocks.l.attn.o.weight columns;  b_O → blocks.l.attn.o.bias (zeros if none)
    ln1, ln2 → blocks.l.ln1/ln2.{weight,bias}; ln_final → ln_final.{weight,bias} (normalization "LN")
    MLP W_in, b_in, W_out, b_out → blocks.l.mlp.in/out.{weight,bias}; relu/gelu/gelu_tanh → relu/gelu/gelu_new
    decoder W_U [d out], b_U → unembed.weight [out d], unembed.bias (zeros when there is none: a strict
      load needs it); a "hidden" readout → W_U = identity
    mask causal → attention_dir "causal", full → "bidirectional"

Traps of TL 4.x, and what is done: (1) TL divides scores by one positive scale for every layer, even with
use_attn_scale off (then √d_head), and refuses attn_scale ≈ 1.0: headcount's scores are s_l·⟨q, k⟩, so TL's
scale is c = a_0/s_0 with a_0 = ±1 (±2 when 1/|s_0| ≈ 1, so plain models get c = 2) and W_Q, b_Q are
multiplied by a_l = c·s_l — a power of two, hence exact, whenever s_l/s_0 is one (every construction,
trained and GPT-2 model; otherwise a_l = c·s_l rounds W_Q once). (2) Weight processing folds LayerNorm
and casts to float32: never called, and a processed bridge is refused. (3) The unembedding bias is a
buffer a strict load requires: zeros are written when the model has none. (4) TL has one n_heads and one
d_head: heads are zero-padded to the widest (Q/K and V alike) and layers to the most heads; padded parts
are zero, so they add exactly 0 (zero W_V, W_O). Likewise one d_mlp (zero hidden units: act(0) = 0) and an
MLP in every layer (a zero one where headcount has none) unless the model is attention-only.

What TL cannot hold is refused with the reason: table models (OneLayerTable), decoders that are not a
linear unembedding, LayerNorm in some places but not others (TL has one normalization type), different
LayerNorm eps or MLP activations by layer, an attention scale of 0.

The record: what undoes padding and scaling — each head's widths and biases, each layer's b_O, MLP width,
attention scale and factor a_l, the decoder kind (readout, vocabulary map, b_U), `info` — is a JSON object
kept as ``bridge.cfg.headcount`` and under the key "headcount" of the exported config.json (which
TransformerBridgeConfig.from_dict ignores). With it the round trip headcount → TL → headcount is
bit-identical (the parts it drops must be exactly zero, else the record is refused as stale); a bridge
without one gets the plain reading: every padded head and width kept, attn_scale = 1/c, an all-zero bias
read as none, an MLP in every layer, and an "lm-head" vocab decoder over all d_vocab_out ids.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.common.errors import InputError
from headcount.common.files import MAX_HEADS_PER_LAYER, check_json_types, short_repr
from headcount.core.model import (
    MLP,
    AttentionHead,
    Layer,
    LayerNorm,
    LinearDecoder,
    OneLayerTable,
    Transformer,
    VocabDecoder,
    VocabMap,
)
from headcount.core.model.files import MAX_LAYERS
from headcount.core.model.vocab import READOUTS

RECORD_FORMAT, RECORD_VERSION = "headcount-transformer-lens", 1
TL_ACT = {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_new"}
TL_DIR = {"causal": "causal", "full": "bidirectional"}
BIASES = ("b_Q", "b_K", "b_V")
# The JSON types of the TL config's and the record's fields read (common.files.check_json_types), checked first
TL_CONFIG_TYPES = dict.fromkeys(("architecture", "normalization_type", "act_fn"), "string?")
TL_CONFIG_TYPES |= dict.fromkeys(("positional_embedding_type", "attention_dir"), "string")
_HEAD_TYPES = {"biases": ["string"], "d_head": "integer", "d_value": "integer"}
_LAYER_TYPES = {"heads": [_HEAD_TYPES], "b_O": "boolean", "attn_scale": "number", "q_factor": "number"}
_DECODER_TYPES = {"kind": "string", "readout": "string", "b_U": "boolean", "labels": ["integer"]}
RECORD_TYPES = {"format": "string", "version": "integer", "info": "object", "decoder": _DECODER_TYPES}
RECORD_TYPES["layers"] = [_LAYER_TYPES | {"mlp": "integer?"}]
MAX_WIDTH = 1 << 20  # d_model, d_head, d_mlp, vocab, n_ctx of a file: far beyond any model headcount reads


def _pow2(x: float) -> bool:
    return x != 0 and math.isfinite(x) and math.frexp(abs(x))[0] == 0.5


# --- headcount → TransformerLens -------------------------------------------------------------------------


def _check_holdable(model: Any) -> None:
    """InputError unless TransformerLens can hold `model` (module docstring: what is refused, and why)."""
    if isinstance(model, OneLayerTable):
        raise InputError(
            "a one-layer table model cannot go to TransformerLens: its values Ṽ[j, σ] tie each token to its "
            "position, which W_E + W_pos followed by linear maps cannot express (use a weight-form model)"
        )
    if not isinstance(model, Transformer):
        raise InputError(f"expected a weight-form Transformer, got {type(model).__name__}")
    if not isinstance(model.decoder, LinearDecoder | VocabDecoder):
        raise InputError(
            f"the decoder {model.decoder.kind!r} is not a linear unembedding: TransformerLens ends in logits "
            "x W_U + b_U, so it cannot hold it (linear and vocab decoders can go)"
        )
    if model.mask not in TL_DIR:
        raise InputError(f"mask {model.mask!r}: TransformerLens holds {' or '.join(TL_DIR)}")
    norms = [("ln_final", model.ln_final)]
    for l, layer in enumerate(model.layers):
        norms += [(f"layers[{l}].ln1", layer.ln1)] + ([(f"layers[{l}].ln2", layer.ln2)] if layer.mlp else [])
    missing = [name for name, ln in norms if ln is None]
    if len(missing) not in (0, len(norms)):
        raise InputError(
            f"the model has LayerNorm in some places but not in {', '.join(missing[:4])}: TransformerLens "
            "has one normalization for every block and the final one (all LayerNorm or none)"
        )
    if len({ln.eps for _, ln in norms if ln is not None}) > 1:
        raise InputError("the LayerNorms have different eps: TransformerLens has one eps for all of them")
    if len({layer.mlp.activation for layer in model.layers if layer.mlp}) > 1:
        raise InputError("the MLPs have different activations: TransformerLens has one act_fn for all")


def _scales(model: Transformer) -> tuple[float, list[float]]:
    """(TL's scale c, the factor a_l of each layer's W_Q and b_Q): a_l / c = attn_scale_l (module
    docstring), a_l a power of two whenever attn_scale_l / attn_scale_0 is one."""
    scales = [layer.attn_scale for layer in model.layers]
    for l, s in enumerate(scales):
        if s == 0:
            raise InputError(
                f"layer {l} has attention scale 0: TransformerLens divides scores by a positive scale, so 0 "
                "would need W_Q = 0 and lose the weights"
            )
    s0 = scales[0] if scales else 1.0
    a0 = math.copysign(2.0 if math.isclose(1 / abs(s0), 1.0, abs_tol=1e-6) else 1.0, s0)
    c = a0 / s0
    if not (math.isfinite(c) and 0 < c < 2.0**1000):
        raise InputError(f"attention scale {s0!r} is too small for TransformerLens's divisor (1/scale)")
    factors = []
    for s in scales:
        ratio = s / s0
        factors.append(a0 * ratio if _pow2(ratio) and s0 * ratio == s else s * c)
    return c, factors


def _widths(model: Transformer) -> tuple[int, int, int]:
    """(n_heads, d_head, d_mlp) of TL: the most heads of a layer, the widest head, the widest MLP (≥ 1)."""
    heads = [h for layer in model.layers for h in layer.heads]
    d_head = max([1] + [max(h.W_Q.shape[1], h.W_V.shape[1]) for h in heads])
    d_mlp = max([1] + [layer.mlp.W_in.shape[1] for layer in model.layers if layer.mlp])
    return max([1] + model.heads_per_layer), d_head, d_mlp


def _scaled(W: np.ndarray, a: float, l: int) -> np.ndarray:
    """W·a; InputError where that overflows float64 (a scale factor is ≤ 2 unless the scales are extreme)."""
    with np.errstate(over="ignore"):
        out = W * a
    if (np.isinf(out) & np.isfinite(W)).any():
        raise InputError(f"layer {l}: W_Q times its scale factor {a!r} overflows float64")
    return out


def _layer_state(l: int, layer: Layer, a: float, shape: tuple[int, int, int, int], ln: bool, attn_only: bool):
    """(state-dict tensors, record entry) of one layer (module docstring: the mapping)."""
    H, D, d, d_mlp = shape
    w = {name: np.zeros((H * D, d)) for name in "qkv"}
    b = {name: np.zeros(H * D) for name in "qkv"}
    o = np.zeros((d, H * D))
    heads = []
    for h, head in enumerate(layer.heads):
        e, width, s = head.W_Q.shape[1], head.W_V.shape[1], h * D
        w["q"][s : s + e], w["k"][s : s + e] = _scaled(head.W_Q, a, l).T, head.W_K.T
        w["v"][s : s + width], o[:, s : s + width] = head.W_V.T, head.W_O.T
        for name, bias, end, factor in zip("qkv", (head.b_Q, head.b_K, head.b_V), (e, e, width), (a, 1, 1)):
            if bias is not None:
                b[name][s : s + end] = _scaled(bias, factor, l)
        heads.append(
            {"d_head": e, "d_value": width, "biases": [n for n in BIASES if getattr(head, n) is not None]}
        )
    p = f"blocks.{l}."
    out = {f"{p}attn.{n}.weight": w[n] for n in "qkv"} | {f"{p}attn.{n}.bias": b[n] for n in "qkv"}
    out |= {f"{p}attn.o.weight": o, f"{p}attn.o.bias": np.zeros(d) if layer.b_O is None else layer.b_O}
    if ln:
        out |= {f"{p}ln1.weight": layer.ln1.w, f"{p}ln1.bias": layer.ln1.b}
        ln2 = layer.ln2 if layer.mlp else LayerNorm(np.ones(d), np.zeros(d))
        out |= {f"{p}ln2.weight": ln2.w, f"{p}ln2.bias": ln2.b} if not attn_only else {}
    if not attn_only:
        m, k = layer.mlp, layer.mlp.W_in.shape[1] if layer.mlp else 0
        w_in, b_in, w_out = np.zeros((d_mlp, d)), np.zeros(d_mlp), np.zeros((d, d_mlp))
        if m is not None:
            w_in[:k], b_in[:k], w_out[:, :k] = m.W_in.T, m.b_in, m.W_out.T
        b_out = np.zeros(d) if m is None else m.b_out
        out |= {f"{p}mlp.in.weight": w_in, f"{p}mlp.in.bias": b_in, f"{p}mlp.out.weight": w_out}
        out[f"{p}mlp.out.bias"] = b_out
    entry = {
        "heads": heads,
        "b_O": layer.b_O is not None,
        "mlp": layer.mlp.W_in.shape[1] if layer.mlp else None,
    }
    return out, entry | {"attn_scale": layer.attn_scale, "q_factor": a}


def _decoder_state(model: Transformer) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """(W_U [d out], b_U [out], record entry) of a linear or vocab decoder."""
    dec, d = model.decoder, model.d_model
    if isinstance(dec, LinearDecoder) and dec.W_U.shape[0] == d:
        return dec.W_U, dec.b_U, {"kind": "linear"}
    W_U = np.eye(d) if dec.W_U is None else dec.W_U
    if W_U.shape[0] != d:
        raise InputError(f"the decoder's W_U reads {W_U.shape[0]} coordinates; the model has d_model = {d}")
    entry = {"kind": "vocab", "readout": dec.readout, "vocab_map": dec.vocab_map.to_json()}
    entry["b_U"] = dec.b_U is not None
    if dec.labels is not None:
        entry["labels"] = [int(v) for v in dec.labels]
    return W_U, np.zeros(W_U.shape[1]) if dec.b_U is None else dec.b_U, entry


def transformer_lens_parts(model: Transformer) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(TL config fields with the record under "headcount", state dict as float64 arrays) of `model`: what
    the bridge is booted and loaded from, and what the files hold. InputError for what TL cannot hold."""
    _check_holdable(model)
    c, factors = _scales(model)
    H, D, d_mlp = _widths(model)
    ln = model.ln_final is not None
    attn_only = all(layer.mlp is None for layer in model.layers)
    W_U, b_U, decoder = _decoder_state(model)
    d = model.d_model
    tensors = {"embed.weight": model.W_E, "pos_embed.weight": model.W_pos}
    layers = []
    for l, (layer, a) in enumerate(zip(model.layers, factors)):
        state, entry = _layer_state(l, layer, a, (H, D, d, d_mlp), ln, attn_only)
        tensors |= state
        layers.append(entry)
    if ln:
        tensors |= {"ln_final.weight": model.ln_final.w, "ln_final.bias": model.ln_final.b}
    tensors |= {"unembed.weight": W_U.T, "unembed.bias": b_U}
    acts = {layer.mlp.activation for layer in model.layers if layer.mlp}
    config = {"architecture": "TransformerLensNative", "model_name": "headcount", "d_model": d, "d_head": D}
    config |= {"n_heads": H, "n_layers": len(model.layers), "n_ctx": model.n_ctx, "d_vocab": model.alphabet}
    config |= {
        "d_vocab_out": W_U.shape[1],
        "attn_only": attn_only,
        "act_fn": TL_ACT[acts.pop() if acts else "relu"],
    }
    config |= {"normalization_type": "LN" if ln else None, "eps": model.ln_final.eps if ln else 1e-5}
    config |= {"use_attn_scale": True, "attn_scale": c, "attention_dir": TL_DIR[model.mask]}
    config |= {"positional_embedding_type": "standard", "default_prepend_bos": False, "init_weights": False}
    config["tokenizer_prepends_bos"] = False
    if not attn_only:
        config["d_mlp"] = d_mlp
    record = {"format": RECORD_FORMAT, "version": RECORD_VERSION, "layers": layers, "decoder": decoder}
    tensors = {k: np.ascontiguousarray(v, dtype=np.float64) for k, v in tensors.items()}
    return config | {"headcount": record | {"info": model.info}}, tensors


# --- TransformerLens → headcount -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Fields:
    """The TL config fields a TL-native model's function depends on, checked."""

    d_model: int
    d_head: int
    n_heads: int
    n_layers: int
    n_ctx: int
    d_vocab: int
    d_vocab_out: int
    d_mlp: int
    attn_only: bool
    activation: str
    ln: bool
    eps: float
    scale: float  # TL divides scores by it
    mask: str


def _fields(get, fail) -> _Fields:
    """Check the TL config read by get(name, default) (TransformerBridgeConfig's defaults); fail(why) makes
    the exception. What the TL-native model does differently from headcount's model is refused by name."""

    def integer(name: str, low: int, high: int, default: Any = None) -> int:
        value = get(name, default)
        if type(value) is not int or not low <= value <= high:
            raise fail(f"{name} must be an integer in {low}..{high}, got {short_repr(value)}")
        return value

    def flag(name: str, default: bool) -> bool:
        if type(value := get(name, default)) is not bool:
            raise fail(f"{name} must be true or false, got {short_repr(value)}")
        return value

    def text(name: str, default: str | None, allowed: dict) -> Any:
        value = get(name, default)
        key = value.lower() if isinstance(value, str) else value
        if key not in allowed:
            raise fail(
                f"{name} {short_repr(value)} is not read: headcount reads {', '.join(map(str, allowed))}"
            )
        return allowed[key]

    text("architecture", None, {None: 0, "transformerlensnative": 0})
    text("positional_embedding_type", "standard", {"standard": 0})
    if name := next((n for n in ("gated_mlp", "final_rms") if get(n, False) is not False), None):
        raise fail(
            f"{name} = {short_repr(get(name, False))}: headcount's model has neither gated MLPs nor RMS"
        )
    if get("n_key_value_heads", None) not in (None, get("n_heads", -1)):
        raise fail("grouped key/value heads (n_key_value_heads < n_heads) have no headcount counterpart")
    for cap in ("attn_scores_soft_cap", "output_logits_soft_cap"):
        if not isinstance(value := get(cap, -1.0), int | float) or value > 0:
            raise fail(f"{cap} = {short_repr(value)}: soft caps have no headcount counterpart (≤ 0: off)")
    d_model, d_head = integer("d_model", 1, MAX_WIDTH), integer("d_head", 1, MAX_WIDTH)
    d_vocab = integer("d_vocab", 1, MAX_WIDTH)
    d_vocab_out = integer("d_vocab_out", -1, MAX_WIDTH, -1)
    d_mlp = get("d_mlp", None)
    d_mlp = 4 * d_model if d_mlp in (None, 0) else integer("d_mlp", 1, MAX_WIDTH)
    ln = text("normalization_type", "LN", {None: False, "ln": True})
    eps = get("eps", 1e-5)
    if not isinstance(eps, int | float) or isinstance(eps, bool) or not (math.isfinite(eps) and eps > 0):
        raise fail(f"eps must be a positive number, got {short_repr(eps)}")
    use_scale, scale = flag("use_attn_scale", True), get("attn_scale", -1.0)
    if not isinstance(scale, int | float) or isinstance(scale, bool) or not math.isfinite(scale):
        raise fail(f"attn_scale must be a finite number, got {short_repr(scale)}")
    attn_only = flag("attn_only", False)
    activation = "relu" if attn_only else text("act_fn", "relu", {v: k for k, v in TL_ACT.items()})
    return _Fields(
        d_model,
        d_head,
        integer("n_heads", 1, MAX_HEADS_PER_LAYER),
        integer("n_layers", 0, MAX_LAYERS),
        integer("n_ctx", 1, MAX_WIDTH),
        d_vocab,
        d_vocab if d_vocab_out <= 0 else d_vocab_out,
        d_mlp,
        attn_only,
        activation,
        ln,
        float(eps),
        float(scale) if use_scale and scale > 0 else math.sqrt(d_head),
        text("attention_dir", "causal", {v: k for k, v in TL_DIR.items()}),
    )


def expected_tensors(f: _Fields) -> dict[str, tuple[int, ...]]:
    """name → shape of every tensor of a TL-native state dict with these fields."""
    d, HD = f.d_model, f.n_heads * f.d_head
    out = {"embed.weight": (f.d_vocab, d), "pos_embed.weight": (f.n_ctx, d)}
    norms = ["ln_final"] if f.ln else []
    for l in range(f.n_layers):
        p = f"blocks.{l}."
        out |= {f"{p}attn.{n}.weight": (HD, d) for n in "qkv"} | {f"{p}attn.{n}.bias": (HD,) for n in "qkv"}
        out |= {f"{p}attn.o.weight": (d, HD), f"{p}attn.o.bias": (d,)}
        if f.ln:
            norms += [f"{p}ln1"] if f.attn_only else [f"{p}ln1", f"{p}ln2"]
        if not f.attn_only:
            out |= {f"{p}mlp.in.weight": (f.d_mlp, d), f"{p}mlp.in.bias": (f.d_mlp,)}
            out |= {f"{p}mlp.out.weight": (d, f.d_mlp), f"{p}mlp.out.bias": (d,)}
    out |= {f"{n}.{part}": (d,) for n in norms for part in ("weight", "bias")}
    return out | {"unembed.weight": (f.d_vocab_out, d), "unembed.bias": (f.d_vocab_out,)}


def _number(value: Any) -> bool:
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value != 0
    )


def _check_record(rec: Any, f: _Fields, fail) -> dict[str, Any] | None:
    """The record (module docstring) checked against the fields, or None when there is none."""
    if rec is None:
        return None
    version = (rec.get("format"), rec.get("version")) if isinstance(rec, dict) else None
    if version != (RECORD_FORMAT, RECORD_VERSION):
        raise fail(f"its 'headcount' record is not a {RECORD_FORMAT} version {RECORD_VERSION} object")
    check_json_types(rec, RECORD_TYPES, "its record", error=fail)
    layers, dec = rec.get("layers"), rec.get("decoder")
    if not isinstance(layers, list) or len(layers) != f.n_layers:
        raise fail(f"its record lists {short_repr(layers)[:20]} layers; the config has {f.n_layers}")
    for l, e in enumerate(layers):
        heads = e.get("heads") if isinstance(e, dict) else None
        ok = isinstance(heads, list) and len(heads) <= f.n_heads and type(e.get("b_O")) is bool
        ok = ok and _number(e.get("attn_scale")) and _number(e.get("q_factor"))
        mlp = e.get("mlp") if ok else None
        ok = ok and (mlp is None or (not f.attn_only and type(mlp) is int and 1 <= mlp <= f.d_mlp))
        for spec in heads if ok else []:
            ok = ok and isinstance(spec, dict) and isinstance(spec.get("biases"), list)
            ok = ok and all(
                type(spec.get(k)) is int and 0 <= spec[k] <= f.d_head for k in ("d_head", "d_value")
            )
            ok = ok and set(spec["biases"]) <= set(BIASES)
        if not ok:
            raise fail(f"its record of layer {l} is not valid (heads ≤ n_heads, widths ≤ d_head, scales ≠ 0)")
    labels = dec.get("labels", []) if isinstance(dec, dict) else None
    ok = isinstance(dec, dict) and (
        dec.get("kind") == "linear"
        or (dec.get("kind") == "vocab" and dec.get("readout") in READOUTS and type(dec.get("b_U")) is bool)
    )
    ok = ok and ("labels" not in dec or (isinstance(labels, list) and len(labels) == f.d_vocab_out))
    if not ok or not all(type(v) is int and -2 <= v < 2**31 for v in labels):
        raise fail("its record's decoder is not valid (kind linear, or vocab with a readout, b_U and labels)")
    return rec


def _read_heads(l: int, f: _Fields, t: dict, entry: dict | None, dropped: list) -> tuple[AttentionHead, ...]:
    """Layer l's heads: under a record, its widths and biases (the rest must be zero: `dropped`); without one,
    every head at width d_head, a bias that is all zero read as none."""
    p, D = f"blocks.{l}.attn.", f.d_head
    W = {n: t[f"{p}{n}.weight"] for n in "qkvo"}
    B = {n: t[f"{p}{n}.bias"] for n in "qkv"}
    plain = {"d_head": D, "d_value": D, "biases": None}
    specs, a = (entry["heads"], entry["q_factor"]) if entry else ([plain] * f.n_heads, 1.0)
    used = {n: np.zeros(f.n_heads * D, dtype=bool) for n in "qkv"}
    biased = {n: np.zeros(f.n_heads * D, dtype=bool) for n in "qkv"}
    heads = []
    for h, spec in enumerate(specs):
        s = h * D
        rows = {"q": slice(s, s + spec["d_head"]), "k": slice(s, s + spec["d_head"])}
        rows["v"] = slice(s, s + spec["d_value"])
        biases = {}
        for name, n in zip(BIASES, "qkv"):
            used[n][rows[n]] = True
            value = B[n][rows[n]] / (a if n == "q" else 1.0)
            if spec["biases"] is None or name in spec["biases"]:
                biased[n][rows[n]] = True
                biases[name] = value if spec["biases"] is not None or value.any() else None
        q, k, v, o = W["q"][rows["q"]].T / a, W["k"][rows["k"]].T, W["v"][rows["v"]].T, W["o"][:, rows["v"]].T
        heads.append(AttentionHead(q, k, v, o, **biases))
    for n in "qkv":
        dropped += [(f"{p}{n}.weight", W[n][~used[n]]), (f"{p}{n}.bias", B[n][~biased[n]])]
    dropped.append((f"{p}o.weight", W["o"][:, ~used["v"]]))
    return tuple(heads)


def _read_layer(l: int, f: _Fields, t: dict, entry: dict | None, dropped: list) -> Layer:
    p = f"blocks.{l}."
    heads = _read_heads(l, f, t, entry, dropped)
    b_O = t[f"{p}attn.o.bias"]
    if entry is not None and not entry["b_O"]:
        dropped.append((f"{p}attn.o.bias", b_O))
    keep_b_O = entry["b_O"] if entry else b_O.any()
    ln1 = LayerNorm(t[f"{p}ln1.weight"], t[f"{p}ln1.bias"], f.eps) if f.ln else None
    mlp = ln2 = None
    k = None if f.attn_only else entry["mlp"] if entry else f.d_mlp
    if not f.attn_only:
        w_in, b_in, w_out = t[f"{p}mlp.in.weight"], t[f"{p}mlp.in.bias"], t[f"{p}mlp.out.weight"]
        b_out, k0 = t[f"{p}mlp.out.bias"], k or 0
        dropped += [(f"{p}mlp.in", w_in[k0:]), (f"{p}mlp.in.bias", b_in[k0:]), (f"{p}mlp.out", w_out[:, k0:])]
        if k is None:
            dropped.append((f"{p}mlp.out.bias", b_out))
        else:
            mlp = MLP(w_in[:k].T, b_in[:k], w_out[:, :k].T, b_out, f.activation)
            ln2 = LayerNorm(t[f"{p}ln2.weight"], t[f"{p}ln2.bias"], f.eps) if f.ln else None
    scale = entry["attn_scale"] if entry else 1.0 / f.scale
    return Layer(heads, mlp, ln1, ln2, b_O if keep_b_O else None, scale)


def _read_decoder(f: _Fields, t: dict, dec: dict | None, dropped: list, fail) -> LinearDecoder | VocabDecoder:
    W_U, b_U = t["unembed.weight"].T, t["unembed.bias"]
    if dec is None:
        return VocabDecoder(W_U, b_U if b_U.any() else None, "lm-head")
    if dec["kind"] == "linear":
        return LinearDecoder(W_U, b_U)
    if not dec["b_U"]:
        dropped.append(("unembed.bias", b_U))
    hidden = dec["readout"] == "hidden"
    square = W_U.shape[0] == W_U.shape[1]
    if hidden and not (square and np.count_nonzero(W_U) == len(W_U) and (np.diagonal(W_U) == 1).all()):
        raise fail("its record says the readout is 'hidden', but unembed.weight is not the identity")
    return VocabDecoder(
        None if hidden else W_U,
        b_U if dec["b_U"] else None,
        dec["readout"],
        VocabMap.from_json(dec.get("vocab_map")),
        np.array(dec["labels"], dtype=np.int64) if "labels" in dec else None,
    )


def _build(f: _Fields, t: dict[str, np.ndarray], rec: dict | None, fail) -> Transformer:
    """The headcount model of a checked TL-native state dict (module docstring: record or plain reading)."""
    dropped: list[tuple[str, np.ndarray]] = []
    layers = [_read_layer(l, f, t, rec["layers"][l] if rec else None, dropped) for l in range(f.n_layers)]
    decoder = _read_decoder(f, t, rec["decoder"] if rec else None, dropped, fail)
    if stale := [name for name, rest in dropped if rest.any()]:
        raise fail(
            f"its headcount record says {stale[0]} holds padding, but it is not zero (weights edited after "
            "the export?): drop the record (bridge.cfg.headcount, or the 'headcount' key) to read it plainly"
        )
    ln_final = LayerNorm(t["ln_final.weight"], t["ln_final.bias"], f.eps) if f.ln else None
    info = rec.get("info", {}) if rec else {}
    W_E, W_pos = t["embed.weight"], t["pos_embed.weight"]
    return Transformer(W_E, W_pos, tuple(layers), decoder, f.mask, info, ln_final)


def check_fields(config: dict[str, Any], where: str, error: type[InputError] = InputError) -> _Fields:
    """The checked fields of a TL config (a dict, as config.json or vars(bridge.cfg) hold it); `error`(one
    line naming `where`) for what headcount cannot read."""
    check_json_types(config, TL_CONFIG_TYPES, where, error=error)
    return _fields(lambda k, default: config.get(k, default), lambda why: error(f"{where}: {why}"))


def model_from_parts(
    config: dict[str, Any],
    tensors: dict[str, np.ndarray],
    where: str = "the TransformerLens config",
    error: type[InputError] = InputError,
) -> Transformer:
    """The inverse of transformer_lens_parts: the model of a TL config (with or without the record under
    "headcount") and its state dict (float64 arrays)."""
    f = check_fields(config, where, error)
    fail = lambda why: error(f"{where}: {why}")  # noqa: E731
    want = expected_tensors(f)
    if bad := sorted(set(want) ^ set(tensors)) or [k for k in want if tuple(tensors[k].shape) != want[k]]:
        raise fail(
            f"state dict entry {bad[0]!r} does not fit the config ({len(want)} TL-native tensors expected)"
        )
    return _build(f, tensors, _check_record(config.get("headcount"), f, fail), fail)
