"""A weight-form model as a TransformerLens-native config and state dict, and back (issue 15), in
numpy alone: headcount.interop.transformer_lens_io boots a ``TransformerBridge`` from these parts,
reads one back through them, and writes and reads them as files;
headcount.interop.transformer_lens_config checks the config and the record a model is read from.
Nothing here imports transformer_lens.

The mapping (TL-native state dict; nn.Linear weights are [out in], so a head's block is transposed):

    W_E [vocab d] → embed.weight          W_pos [n_ctx d] → pos_embed.weight (TL's pos_embed)
    head h of layer l (TL width D, block h·D … h·D + width):
      a_l·W_Q, W_K, W_V → blocks.l.attn.{q,k,v}.weight rows;  a_l·b_Q, b_K, b_V → .bias (zeros if
      none)
      W_O → blocks.l.attn.o.weight columns;  b_O → blocks.l.attn.o.bias (zeros if none)
    ln1, ln2 → blocks.l.ln1/ln2.{weight,bias}; ln_final → ln_final.{weight,bias} (normalization
    "LN")
    MLP W_in, b_in, W_out, b_out → blocks.l.mlp.in/out.{weight,bias}; relu/gelu/gelu_tanh →
    relu/gelu/gelu_new
    decoder W_U [d out], b_U → unembed.weight [out d], unembed.bias (zeros when there is none: a
    strict
      load needs it); a "hidden" readout → W_U = identity
    mask causal → attention_dir "causal", full → "bidirectional"

Traps of TL 4.x, and what is done: (1) TL divides scores by one positive scale for every layer, even
with use_attn_scale off (then √d_head), and refuses attn_scale ≈ 1.0: headcount's scores are s_l·⟨q,
k⟩, so TL's scale is c = a_0/s_0 with a_0 = ±1 (±2 when 1/|s_0| ≈ 1, so plain models get c = 2) and
W_Q, b_Q are multiplied by a_l = c·s_l — a power of two, hence exact, whenever s_l/s_0 is one (every
construction, trained and GPT-2 model; otherwise a_l = c·s_l rounds W_Q once). (2) Weight processing
folds LayerNorm and casts to float32: never called, and a processed bridge is refused. (3) The
unembedding bias is a buffer a strict load requires: zeros are written when the model has none. (4)
TL has one n_heads and one d_head (its native model cannot hold a head count per layer): heads are
zero-padded to the widest (Q/K and V alike) and layers to the most heads; padded parts are zero, so
they add exactly 0 (zero W_V, W_O). A padded ("phantom") head has zero W_Q and W_K, so its pattern
in ``run_with_cache`` is the uniform causal average 1/(i+1), and detect_head scores it like any
other head: the config says which heads are real (`head_flags`: ``headcount_heads_per_layer``, and
``headcount_padded_heads`` the phantom [layer, head] pairs, both on ``bridge.cfg``). Likewise one
d_mlp (zero hidden units: act(0) = 0) and an MLP in every layer (a zero one where headcount has
none) unless the model is attention-only.

What TL cannot hold is refused with the reason: table models (OneLayerTable), decoders that are not
a linear unembedding, LayerNorm in some places but not others (TL has one normalization type),
different LayerNorm eps or MLP activations by layer, an attention scale of 0. The Llama-family
parts (RMSNorm, rotary, gated MLPs, grouped key/value heads) and what of them TL cannot hold are in
interop.transformer_lens_blocks.

The record: what undoes padding and scaling — each head's widths and biases, each layer's b_O, MLP
width, attention scale and factor a_l, the decoder kind (readout, vocabulary map, b_U), `info` — is
a JSON object kept as ``bridge.cfg.headcount`` and under the key "headcount" of the exported
config.json (which TransformerBridgeConfig.from_dict ignores). With it the round trip headcount → TL
→ headcount is bit-identical (the parts it drops must be exactly zero, else the record is refused as
stale); a bridge without one gets the plain reading: every padded head and width kept, attn_scale =
1/c, an all-zero bias read as none, an MLP in every layer, and an "lm-head" vocab decoder over all
d_vocab_out ids.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from headcount.common.errors import InputError
from headcount.core.model import (
    MLP,
    AttentionHead,
    Layer,
    LayerNorm,
    LinearDecoder,
    OneLayerTable,
    RMSNorm,
    Transformer,
    VocabDecoder,
    VocabMap,
)
from headcount.interop.transformer_lens_blocks import blocks_of, export_blocks, import_blocks
from headcount.interop.transformer_lens_config import (  # noqa: F401 — the *_TYPES are re-exported
    BIASES,
    RECORD_FORMAT,
    RECORD_TYPES,
    RECORD_VERSION,
    TL_ACT,
    TL_CONFIG_TYPES,
    TL_DIR,
    TLFields,
    check_fields,
    check_record,
    expected_tensors,
)


def _pow2(x: float) -> bool:
    return x != 0 and math.isfinite(x) and math.frexp(abs(x))[0] == 0.5


# --- headcount → TransformerLens
# -------------------------------------------------------------------------


def _check_holdable(model: Any) -> None:
    """InputError unless TransformerLens can hold `model` (module docstring: what is refused, and
    why)."""
    if isinstance(model, OneLayerTable):
        raise InputError(
            "a one-layer table model cannot go to TransformerLens: its values Ṽ[j, σ] tie each "
            "token to its "
            "position, which W_E + W_pos followed by linear maps cannot express (use a "
            "weight-form model)"
        )
    if not isinstance(model, Transformer):
        raise InputError(f"expected a weight-form Transformer, got {type(model).__name__}")
    if not isinstance(model.decoder, LinearDecoder | VocabDecoder):
        raise InputError(
            f"the decoder {model.decoder.kind!r} is not a linear unembedding: TransformerLens "
            "ends in logits "
            "x W_U + b_U, so it cannot hold it (linear and vocab decoders can go)"
        )
    if model.mask not in TL_DIR:
        raise InputError(f"mask {model.mask!r}: TransformerLens holds {' or '.join(TL_DIR)}")
    norms = [("ln_final", model.ln_final)]
    for l, layer in enumerate(model.layers):
        norms += [(f"layers[{l}].ln1", layer.ln1)] + (
            [(f"layers[{l}].ln2", layer.ln2)] if layer.mlp else []
        )
    missing = [name for name, ln in norms if ln is None]
    if len(missing) not in (0, len(norms)):
        raise InputError(
            f"the model has LayerNorm in some places but not in {', '.join(missing[:4])}: "
            "TransformerLens "
            "has one normalization for every block and the final one (all LayerNorm or none)"
        )
    if len({ln.eps for _, ln in norms if ln is not None}) > 1:
        raise InputError(
            "the LayerNorms have different eps: TransformerLens has one eps for all of them"
        )
    if len({layer.mlp.activation for layer in model.layers if layer.mlp}) > 1:
        raise InputError(
            "the MLPs have different activations: TransformerLens has one act_fn for all"
        )


def _scales(model: Transformer) -> tuple[float, list[float]]:
    """(TL's scale c, the factor a_l of each layer's W_Q and b_Q): a_l / c = attn_scale_l (module
    docstring), a_l a power of two whenever attn_scale_l / attn_scale_0 is one."""
    scales = [layer.attn_scale for layer in model.layers]
    for l, s in enumerate(scales):
        if s == 0:
            raise InputError(
                f"layer {l} has attention scale 0: TransformerLens divides scores by a positive "
                "scale, so 0 "
                "would need W_Q = 0 and lose the weights"
            )
    s0 = scales[0] if scales else 1.0
    a0 = math.copysign(2.0 if math.isclose(1 / abs(s0), 1.0, abs_tol=1e-6) else 1.0, s0)
    c = a0 / s0
    if not (math.isfinite(c) and 0 < c < 2.0**1000):
        raise InputError(
            f"attention scale {s0!r} is too small for TransformerLens's divisor (1/scale)"
        )
    factors = []
    for s in scales:
        ratio = s / s0
        factors.append(a0 * ratio if _pow2(ratio) and s0 * ratio == s else s * c)
    return c, factors


def _widths(model: Transformer) -> tuple[int, int, int]:
    """(n_heads, d_head, d_mlp) of TL: the most heads of a layer, the widest head, the widest MLP (≥
    1)."""
    heads = [h for layer in model.layers for h in layer.heads]
    d_head = max([1] + [max(h.W_Q.shape[1], h.W_V.shape[1]) for h in heads])
    d_mlp = max([1] + [layer.mlp.W_in.shape[1] for layer in model.layers if layer.mlp])
    return max([1] + model.heads_per_layer), d_head, d_mlp


def _scaled(W: np.ndarray, a: float, l: int) -> np.ndarray:
    """W·a; InputError where that overflows float64 (a scale factor is ≤ 2 unless the scales are
    extreme)."""
    with np.errstate(over="ignore"):
        out = W * a
    if (np.isinf(out) & np.isfinite(W)).any():
        raise InputError(f"layer {l}: W_Q times its scale factor {a!r} overflows float64")
    return out


def _layer_state(
    l: int, layer: Layer, a: float, shape: tuple[int, int, int, int], ln: bool, attn_only: bool
):
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
        for name, bias, end, factor in zip(
            "qkv", (head.b_Q, head.b_K, head.b_V), (e, e, width), (a, 1, 1)
        ):
            if bias is not None:
                b[name][s : s + end] = _scaled(bias, factor, l)
        heads.append(
            {
                "d_head": e,
                "d_value": width,
                "biases": [n for n in BIASES if getattr(head, n) is not None],
            }
        )
    p = f"blocks.{l}."
    out = {f"{p}attn.{n}.weight": w[n] for n in "qkv"} | {f"{p}attn.{n}.bias": b[n] for n in "qkv"}
    out |= {
        f"{p}attn.o.weight": o,
        f"{p}attn.o.bias": np.zeros(d) if layer.b_O is None else layer.b_O,
    }
    if ln:  # an RMSNorm's zero bias is dropped again by transformer_lens_blocks
        out |= {f"{p}ln1.weight": layer.ln1.w, f"{p}ln1.bias": getattr(layer.ln1, "b", np.zeros(d))}
        ln2 = layer.ln2 if layer.mlp else LayerNorm(np.ones(d), np.zeros(d))
        if not attn_only:
            out |= {f"{p}ln2.weight": ln2.w, f"{p}ln2.bias": getattr(ln2, "b", np.zeros(d))}
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
        raise InputError(
            f"the decoder's W_U reads {W_U.shape[0]} coordinates; the model has d_model = {d}"
        )
    entry = {"kind": "vocab", "readout": dec.readout, "vocab_map": dec.vocab_map.to_json()}
    entry["b_U"] = dec.b_U is not None
    if dec.labels is not None:
        entry["labels"] = [int(v) for v in dec.labels]
    return W_U, np.zeros(W_U.shape[1]) if dec.b_U is None else dec.b_U, entry


def head_flags(heads: list[int], n_heads: int) -> dict[str, list]:
    """The config keys (also set on ``bridge.cfg``) that say which of TL's n_heads heads per layer
    are headcount's: "headcount_heads_per_layer" (the true count of each layer) and
    "headcount_padded_heads" (the zero-padded phantom heads, as [layer, head] pairs: head h of layer
    l for h ≥ that count). Informational: the record, not these, is read back."""
    padded = [[l, h] for l, count in enumerate(heads) for h in range(count, n_heads)]
    return {"headcount_heads_per_layer": list(heads), "headcount_padded_heads": padded}


def transformer_lens_parts(model: Transformer) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(TL config fields with the record under "headcount", state dict as float64 arrays) of
    `model`: what the bridge is booted and loaded from, and what the files hold. InputError for what
    TL cannot hold."""
    _check_holdable(model)
    blocks = blocks_of(model)
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
        tensors["ln_final.weight"] = model.ln_final.w
        tensors["ln_final.bias"] = getattr(model.ln_final, "b", np.zeros(d))
    tensors |= {"unembed.weight": W_U.T, "unembed.bias": b_U}
    export_blocks(tensors, blocks, model, D, d_mlp)
    acts = {layer.mlp.activation for layer in model.layers if layer.mlp}
    config = {
        "architecture": "TransformerLensNative",
        "model_name": "headcount",
        "d_model": d,
        "d_head": D,
    }
    config |= {
        "n_heads": H,
        "n_layers": len(model.layers),
        "n_ctx": model.n_ctx,
        "d_vocab": model.alphabet,
    }
    config |= {
        "d_vocab_out": W_U.shape[1],
        "attn_only": attn_only,
        "act_fn": TL_ACT[acts.pop() if acts else "relu"],
    }
    config |= {
        "normalization_type": "LN" if ln else None,
        "eps": model.ln_final.eps if ln else 1e-5,
    }
    config |= {"use_attn_scale": True, "attn_scale": c, "attention_dir": TL_DIR[model.mask]}
    config |= {
        "positional_embedding_type": "standard",
        "default_prepend_bos": False,
        "init_weights": False,
    }
    config["tokenizer_prepends_bos"] = False  # no BOS: transformer_lens_tokens' docstring
    config |= blocks.config(H)
    config |= head_flags(model.heads_per_layer, H)
    if not attn_only:
        config["d_mlp"] = d_mlp
    record = {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "layers": layers,
        "decoder": decoder,
    }
    if blocks.rotary is not None:
        record["rotary_layout"] = blocks.rotary.layout
    tensors = {k: np.ascontiguousarray(v, dtype=np.float64) for k, v in tensors.items()}
    return config | {"headcount": record | {"info": model.info}}, tensors


# --- TransformerLens → headcount
# -------------------------------------------------------------------------


def _read_heads(
    l: int, f: TLFields, t: dict, entry: dict | None, dropped: list
) -> tuple[AttentionHead, ...]:
    """Layer l's heads: under a record, its widths and biases (the rest must be zero: `dropped`);
    without one, every head at width d_head, a bias that is all zero read as none."""
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
        q, k, v, o = (
            W["q"][rows["q"]].T / a,
            W["k"][rows["k"]].T,
            W["v"][rows["v"]].T,
            W["o"][:, rows["v"]].T,
        )
        heads.append(AttentionHead(q, k, v, o, **biases))
    for n in "qkv":
        dropped += [(f"{p}{n}.weight", W[n][~used[n]]), (f"{p}{n}.bias", B[n][~biased[n]])]
    dropped.append((f"{p}o.weight", W["o"][:, ~used["v"]]))
    return tuple(heads)


def _read_layer(l: int, f: TLFields, t: dict, entry: dict | None, dropped: list) -> Layer:
    p = f"blocks.{l}."
    heads = _read_heads(l, f, t, entry, dropped)
    b_O = t[f"{p}attn.o.bias"]
    if entry is not None and not entry["b_O"]:
        dropped.append((f"{p}attn.o.bias", b_O))
    keep_b_O = entry["b_O"] if entry else b_O.any()
    ln1 = _norm(f, t, f"{p}ln1")
    mlp = ln2 = None
    k = None if f.attn_only else entry["mlp"] if entry else f.d_mlp
    if not f.attn_only:
        w_in, w_out = t[f"{p}mlp.in.weight"], t[f"{p}mlp.out.weight"]
        b_in = t.get(f"{p}mlp.in.bias", np.zeros(w_in.shape[0]))
        b_out, k0 = t.get(f"{p}mlp.out.bias", np.zeros(w_out.shape[0])), k or 0
        gate = t.get(f"{p}mlp.gate.weight")
        dropped += [
            (f"{p}mlp.in", w_in[k0:]),
            (f"{p}mlp.in.bias", b_in[k0:]),
            (f"{p}mlp.out", w_out[:, k0:]),
        ]
        if k is None:
            dropped.append((f"{p}mlp.out.bias", b_out))
        else:
            W_gate = None if gate is None else gate[:k].T
            mlp = MLP(w_in[:k].T, b_in[:k], w_out[:, :k].T, b_out, f.activation, W_gate)
            ln2 = _norm(f, t, f"{p}ln2")
        if gate is not None:
            dropped.append((f"{p}mlp.gate", gate[k0:]))
    scale = entry["attn_scale"] if entry else 1.0 / f.scale
    return Layer(heads, mlp, ln1, ln2, b_O if keep_b_O else None, scale, f.rotary)


def _norm(f: TLFields, t: dict, name: str) -> LayerNorm | RMSNorm | None:
    if not f.ln:
        return None
    if f.rms:
        return RMSNorm(t[f"{name}.weight"], f.eps)
    return LayerNorm(t[f"{name}.weight"], t[f"{name}.bias"], f.eps)


def _read_decoder(
    f: TLFields, t: dict, dec: dict | None, dropped: list, fail
) -> LinearDecoder | VocabDecoder:
    W_U, b_U = t["unembed.weight"].T, t["unembed.bias"]
    if dec is None:
        return VocabDecoder(W_U, b_U if b_U.any() else None, "lm-head")
    if dec["kind"] == "linear":
        return LinearDecoder(W_U, b_U)
    if not dec["b_U"]:
        dropped.append(("unembed.bias", b_U))
    hidden = dec["readout"] == "hidden"
    square = W_U.shape[0] == W_U.shape[1]
    if hidden and not (
        square and np.count_nonzero(W_U) == len(W_U) and (np.diagonal(W_U) == 1).all()
    ):
        raise fail(
            "its record says the readout is 'hidden', but unembed.weight is not the identity"
        )
    return VocabDecoder(
        None if hidden else W_U,
        b_U if dec["b_U"] else None,
        dec["readout"],
        VocabMap.from_json(dec.get("vocab_map")),
        np.array(dec["labels"], dtype=np.int64) if "labels" in dec else None,
    )


def _build(f: TLFields, t: dict[str, np.ndarray], rec: dict | None, fail) -> Transformer:
    """The headcount model of a checked TL-native state dict (module docstring: record or plain
    reading)."""
    dropped: list[tuple[str, np.ndarray]] = []
    layers = [
        _read_layer(l, f, t, rec["layers"][l] if rec else None, dropped) for l in range(f.n_layers)
    ]
    decoder = _read_decoder(f, t, rec["decoder"] if rec else None, dropped, fail)
    if stale := [name for name, rest in dropped if rest.any()]:
        raise fail(
            f"its headcount record says {stale[0]} holds padding, but it is not zero (weights "
            "edited after "
            "the export?): drop the record (bridge.cfg.headcount, or the 'headcount' key) to read "
            "it plainly"
        )
    ln_final = _norm(f, t, "ln_final")
    info = rec.get("info", {}) if rec else {}
    W_E = t["embed.weight"]
    W_pos = np.zeros((f.n_ctx, f.d_model)) if f.rotary else t["pos_embed.weight"]
    return Transformer(W_E, W_pos, tuple(layers), decoder, f.mask, info, ln_final)


def model_from_parts(
    config: dict[str, Any],
    tensors: dict[str, np.ndarray],
    where: str = "the TransformerLens config",
    error: type[InputError] = InputError,
) -> Transformer:
    """The inverse of transformer_lens_parts: the model of a TL config (with or without the record
    under "headcount") and its state dict (float64 arrays)."""
    f = check_fields(config, where, error)
    fail = lambda why: error(f"{where}: {why}")  # noqa: E731
    want = expected_tensors(f)
    if bad := sorted(set(want) ^ set(tensors)) or [
        k for k in want if tuple(tensors[k].shape) != want[k]
    ]:
        raise fail(
            f"state dict entry {bad[0]!r} does not fit the config ({len(want)} TL-native tensors "
            "expected)"
        )
    record = check_record(config.get("headcount"), f, fail)
    if f.rotary is not None and record and record.get("rotary_layout") == "rotate_half":
        f = dataclasses.replace(f, rotary=dataclasses.replace(f.rotary, layout="rotate_half"))
    tensors = import_blocks(tensors, f.kv_heads or f.n_heads, f.n_heads, f.d_head, f.rotary)
    return _build(f, tensors, record, fail)
