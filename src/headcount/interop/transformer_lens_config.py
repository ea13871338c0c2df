"""The config a TransformerLens-native model is read from, checked (issue 15): the fields its
function depends on (TLFields), what headcount's model cannot do refused by name, the state dict
those fields imply (expected_tensors), and headcount's record under "headcount" checked against them
(check_record). headcount.interop.transformer_lens_state builds the model from them; the mapping and
the record are in its docstring. Every check reads JSON values of any type (a hostile config.json)
and refuses, on one line, what does not fit: fail(why) or error(…) makes the exception.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from headcount.common.errors import InputError
from headcount.common.files import MAX_HEADS_PER_LAYER, check_json_types, short_repr
from headcount.core.model import Rotary
from headcount.core.model.files import MAX_LAYERS
from headcount.core.model.vocab import READOUTS

RECORD_FORMAT, RECORD_VERSION = "headcount-transformer-lens", 1
TL_ACT = {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_new", "silu": "silu"}
TL_DIR = {"causal": "causal", "full": "bidirectional"}
BIASES = ("b_Q", "b_K", "b_V")
# The JSON types of the TL config's and the record's fields read (common.files.check_json_types),
# checked first
TL_CONFIG_TYPES = dict.fromkeys(("architecture", "normalization_type", "act_fn"), "string?")
TL_CONFIG_TYPES |= dict.fromkeys(("positional_embedding_type", "attention_dir"), "string")
_HEAD_TYPES = {"biases": ["string"], "d_head": "integer", "d_value": "integer"}
_LAYER_TYPES = {
    "heads": [_HEAD_TYPES],
    "b_O": "boolean",
    "attn_scale": "number",
    "q_factor": "number",
}
_DECODER_TYPES = {"kind": "string", "readout": "string", "b_U": "boolean", "labels": ["integer"]}
RECORD_TYPES = {
    "format": "string",
    "version": "integer",
    "info": "object",
    "decoder": _DECODER_TYPES,
    "rotary_layout": "string?",
}
RECORD_TYPES["layers"] = [_LAYER_TYPES | {"mlp": "integer?"}]
MAX_WIDTH = (
    1 << 20
)  # d_model, d_head, d_mlp, vocab, n_ctx of a file: far beyond any model headcount reads


@dataclass(frozen=True)
class TLFields:
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
    rms: bool = False  # the norms are RMSNorms (interop.transformer_lens_blocks)
    rotary: Rotary | None = None  # TL's own (interleaved) layout
    gated: bool = False
    kv_heads: int = 0  # key/value heads (0: n_heads)


@dataclass(frozen=True)
class _Config:
    """A TL config read by get(name, default) (TransformerBridgeConfig's defaults); fail(why) makes
    the exception. Each reader checks one field's type and range, or refuses it by name."""

    get: Callable[[str, Any], Any]
    fail: Callable[[str], Exception]

    def integer(self, name: str, low: int, high: int, default: Any = None) -> int:
        value = self.get(name, default)
        if type(value) is not int or not low <= value <= high:
            raise self.fail(f"{name} must be an integer in {low}..{high}, got {short_repr(value)}")
        return value

    def flag(self, name: str, default: bool) -> bool:
        if type(value := self.get(name, default)) is not bool:
            raise self.fail(f"{name} must be true or false, got {short_repr(value)}")
        return value

    def text(self, name: str, default: str | None, allowed: dict) -> Any:
        value = self.get(name, default)
        key = value.lower() if isinstance(value, str) else value
        if key not in allowed:
            raise self.fail(
                f"{name} {short_repr(value)} is not read: headcount reads "
                f"{', '.join(map(str, allowed))}"
            )
        return allowed[key]

    def number(self, name: str, default: float, positive: bool) -> float:
        """A finite number (not a bool), also > 0 when `positive`."""
        value = self.get(name, default)
        real = (
            isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        )
        if not real or (positive and not value > 0):
            what = "positive" if positive else "finite"
            raise self.fail(f"{name} must be a {what} number, got {short_repr(value)}")
        return value


def _refuse_unread(config: _Config) -> None:
    """Refuse by name what the TL-native model does differently from headcount's model: another
    architecture or positional embedding, rope scaling, soft caps (RMSNorm, rotary positions, gated
    MLPs and grouped key/value heads are read: interop.transformer_lens_blocks)."""
    get, fail = config.get, config.fail
    config.text("architecture", None, {None: 0, "transformerlensnative": 0})
    config.text("positional_embedding_type", "standard", {"standard": 0, "rotary": 0})
    if get("rope_scaling", None) is not None:
        raise fail(f"rope_scaling = {short_repr(get('rope_scaling', None))}: not read (plain RoPE)")
    for cap in ("attn_scores_soft_cap", "output_logits_soft_cap"):
        if not isinstance(value := get(cap, -1.0), int | float) or value > 0:
            raise fail(
                f"{cap} = {short_repr(value)}: soft caps have no headcount counterpart (≤ 0: off)"
            )


def _fields(get, fail) -> TLFields:
    """Check the TL config read by get(name, default) (TransformerBridgeConfig's defaults);
    fail(why) makes the exception. What the TL-native model does differently from headcount's model
    is refused by name."""
    config = _Config(get, fail)
    _refuse_unread(config)
    d_model, d_head = (
        config.integer("d_model", 1, MAX_WIDTH),
        config.integer("d_head", 1, MAX_WIDTH),
    )
    d_vocab = config.integer("d_vocab", 1, MAX_WIDTH)
    d_vocab_out = config.integer("d_vocab_out", -1, MAX_WIDTH, -1)
    d_mlp = get("d_mlp", None)
    d_mlp = 4 * d_model if d_mlp in (None, 0) else config.integer("d_mlp", 1, MAX_WIDTH)
    norm = config.text("normalization_type", "LN", {None: None, "ln": "ln", "rms": "rms"})
    ln = norm is not None
    if config.flag("final_rms", False) != (norm == "rms"):
        raise fail("final_rms must be true exactly when normalization_type is RMS")
    eps = config.number("eps", 1e-5, positive=True)
    use_scale, scale = (
        config.flag("use_attn_scale", True),
        config.number("attn_scale", -1.0, positive=False),
    )
    attn_only = config.flag("attn_only", False)
    activation = (
        "relu" if attn_only else config.text("act_fn", "relu", {v: k for k, v in TL_ACT.items()})
    )
    return TLFields(
        d_model,
        d_head,
        config.integer("n_heads", 1, MAX_HEADS_PER_LAYER),
        config.integer("n_layers", 0, MAX_LAYERS),
        config.integer("n_ctx", 1, MAX_WIDTH),
        d_vocab,
        d_vocab if d_vocab_out <= 0 else d_vocab_out,
        d_mlp,
        attn_only,
        activation,
        ln,
        float(eps),
        float(scale) if use_scale and scale > 0 else math.sqrt(d_head),
        config.text("attention_dir", "causal", {v: k for k, v in TL_DIR.items()}),
        norm == "rms",
        _rotary(config, d_head),
        config.flag("gated_mlp", False),
        _kv_heads(config),
    )


def _rotary(config: _Config, d_head: int) -> Rotary | None:
    """TL's rotary part (interleaved pairs), or None for learned positions."""
    if config.get("positional_embedding_type", "standard").lower() != "rotary":
        return None
    dims = (
        d_head
        if config.get("rotary_dim", None) is None
        else config.integer("rotary_dim", 2, d_head)
    )
    base = config.number("rotary_base", 10000.0, positive=True)
    if dims % 2:
        raise config.fail(f"rotary_dim must be even, got {dims}")
    return Rotary(float(base), dims, "interleaved")


def _kv_heads(config: _Config) -> int:
    heads = config.get("n_heads", 1)
    if config.get("n_key_value_heads", None) is None:
        return 0
    kv = config.integer("n_key_value_heads", 1, MAX_HEADS_PER_LAYER)
    if type(heads) is int and heads % kv:
        raise config.fail(f"n_key_value_heads = {kv} does not divide n_heads = {heads}")
    return kv


def expected_tensors(f: TLFields) -> dict[str, tuple[int, ...]]:
    """name → shape of every tensor of a TL-native state dict with these fields."""
    d, HD = f.d_model, f.n_heads * f.d_head
    KD = (f.kv_heads or f.n_heads) * f.d_head
    out = {"embed.weight": (f.d_vocab, d)}
    out |= {} if f.rotary else {"pos_embed.weight": (f.n_ctx, d)}
    norms = ["ln_final"] if f.ln else []
    for l in range(f.n_layers):
        p = f"blocks.{l}."
        widths = {"q": HD, "k": KD, "v": KD}
        out |= {f"{p}attn.{n}.weight": (w, d) for n, w in widths.items()}
        out |= {f"{p}attn.{n}.bias": (w,) for n, w in widths.items()}
        out |= {f"{p}attn.o.weight": (d, HD), f"{p}attn.o.bias": (d,)}
        if f.ln:
            norms += [f"{p}ln1"] if f.attn_only else [f"{p}ln1", f"{p}ln2"]
        if not f.attn_only and f.gated:
            out |= {f"{p}mlp.{n}.weight": (f.d_mlp, d) for n in ("gate", "in")}
            out[f"{p}mlp.out.weight"] = (d, f.d_mlp)
        elif not f.attn_only:
            out |= {f"{p}mlp.in.weight": (f.d_mlp, d), f"{p}mlp.in.bias": (f.d_mlp,)}
            out |= {f"{p}mlp.out.weight": (d, f.d_mlp), f"{p}mlp.out.bias": (d,)}
    parts = ("weight",) if f.rms else ("weight", "bias")
    out |= {f"{n}.{part}": (d,) for n in norms for part in parts}
    return out | {"unembed.weight": (f.d_vocab_out, d), "unembed.bias": (f.d_vocab_out,)}


def _number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value != 0
    )


def check_record(rec: Any, f: TLFields, fail) -> dict[str, Any] | None:
    """The record (transformer_lens_state's docstring) checked against the fields, or None when
    there is none: its version, its types, one entry per layer and the decoder's entry, each fitting
    the fields."""
    if rec is None:
        return None
    version = (rec.get("format"), rec.get("version")) if isinstance(rec, dict) else None
    if version != (RECORD_FORMAT, RECORD_VERSION):
        raise fail(
            f"its 'headcount' record is not a {RECORD_FORMAT} version {RECORD_VERSION} object"
        )
    check_json_types(rec, RECORD_TYPES, "its record", error=fail)
    layers = rec.get("layers")
    if not isinstance(layers, list) or len(layers) != f.n_layers:
        raise fail(
            f"its record lists {short_repr(layers)[:20]} layers; the config has {f.n_layers}"
        )
    for l, entry in enumerate(layers):
        if not _layer_record_fits(entry, f):
            raise fail(
                f"its record of layer {l} is not valid (heads ≤ n_heads, widths ≤ d_head, scales "
                "≠ 0)"
            )
    if not _decoder_record_fits(rec.get("decoder"), f):
        raise fail(
            "its record's decoder is not valid (kind linear, or vocab with a readout, b_U and "
            "labels)"
        )
    return rec


def _layer_record_fits(entry: Any, f: TLFields) -> bool:
    """Whether a layer's record fits the fields: at most n_heads heads (each fitting:
    _head_record_fits), a b_O flag, nonzero scales, and an MLP width in 1..d_mlp (none when the
    model is attention-only)."""
    heads = entry.get("heads") if isinstance(entry, dict) else None
    if not isinstance(heads, list) or len(heads) > f.n_heads or type(entry.get("b_O")) is not bool:
        return False
    if not (_number(entry.get("attn_scale")) and _number(entry.get("q_factor"))):
        return False
    mlp = entry.get("mlp")
    if mlp is not None and (f.attn_only or type(mlp) is not int or not 1 <= mlp <= f.d_mlp):
        return False
    return all(_head_record_fits(spec, f) for spec in heads)


def _head_record_fits(spec: Any, f: TLFields) -> bool:
    """Whether a head's record fits: widths d_head and d_value in 0..d_head, biases among b_Q, b_K,
    b_V."""
    if not isinstance(spec, dict) or not isinstance(spec.get("biases"), list):
        return False
    if not all(
        type(spec.get(k)) is int and 0 <= spec[k] <= f.d_head for k in ("d_head", "d_value")
    ):
        return False
    return set(spec["biases"]) <= set(BIASES)


def _decoder_record_fits(dec: Any, f: TLFields) -> bool:
    """Whether the decoder's record fits: kind linear, or vocab with a known readout and a b_U flag;
    labels (where given) one task label (a symbol, BOTTOM or OTHER: ≥ −2) per output id of the
    unembedding."""
    if not isinstance(dec, dict):
        return False
    kind = dec.get("kind")
    vocab = kind == "vocab" and dec.get("readout") in READOUTS and type(dec.get("b_U")) is bool
    if kind != "linear" and not vocab:
        return False
    labels = dec.get("labels", [])
    if "labels" in dec and not (isinstance(labels, list) and len(labels) == f.d_vocab_out):
        return False
    return all(type(v) is int and -2 <= v < 2**31 for v in labels)


def check_fields(
    config: dict[str, Any], where: str, error: type[InputError] = InputError
) -> TLFields:
    """The checked fields of a TL config (a dict, as config.json or vars(bridge.cfg) hold it);
    `error`(one line naming `where`) for what headcount cannot read."""
    check_json_types(config, TL_CONFIG_TYPES, where, error=error)
    return _fields(lambda k, default: config.get(k, default), lambda why: error(f"{where}: {why}"))
