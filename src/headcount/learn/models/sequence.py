"""SequenceModel: causal multi-head attention over token sequences in TransformerLens weight names,
and exact conversions from and to a core Transformer (headcount.core.model.transformer) with a
linear decoder.

Scores are plain ⟨q, k⟩ exactly as in core/passes/forward.py (no 1/√d_head in forward: W_Q is
*initialised* ×1/√d_head so training starts like a standard transformer, and a loaded construction
keeps its own scale). `dim` here is the residual width d_model (the name the training configs and
stored runs use).

With layernorm=True the blocks are GPT-2's pre-LN blocks (x += attn(LN(x)); x += mlp(LN(x)); a final
LN before the unembedding), and the MLP's activation is one of core.model.transformer.ACTIVATIONS.
They export to the core model's ln1 / ln2 / ln_final and MLP.activation (the same real-arithmetic
function; float64 logits agree to rounding). What a SequenceModel cannot hold — q/k/v biases, an
output bias b_O — is refused on import; a stored attention scale is folded into W_Q (scale·⟨q, k⟩ =
⟨scale·q, k⟩).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from headcount.common.errors import InputError, param
from headcount.common.validate import check_int
from headcount.core.model import (
    ACTIVATIONS,
    BEYOND_GPT2,
    MLP,
    AttentionHead,
    Layer,
    LayerNorm,
    LinearDecoder,
    RMSNorm,
    Transformer,
)
from headcount.learn.models.blocks import ARCHS, Attention, Block, norm_module
from headcount.learn.models.blocks import RMSNorm as TorchRMSNorm
from headcount.learn.models.tokens import as_tokens, to_numpy

POSITIONAL = ("learned", "sinusoidal", "circle", "fixed", "rotary")


@dataclass(frozen=True)
class SequenceConfig:
    """Shape of a SequenceModel. Output classes are 0..alphabet−1 and a last ⊥ class (index
    alphabet); `vocab` input tokens may exceed `alphabet` (k-hop puts a hop-count token first).

    positional: "learned" (a trained W_pos), "sinusoidal" (the fixed Vaswani et al. table), "circle"
    (position i ↦ √dim·(cos 2πi/n_ctx, sin 2πi/n_ctx) in coordinates 0 and 1, zero elsewhere: a
    constant norm √dim, the expected norm of an initial W_E row, so neither swamps the other),
    "fixed" (a frozen W_pos buffer, filled when a construction is loaded). d_head defaults to dim //
    heads; d_mlp to 4·dim. activation: the MLP's, one of core.model.transformer.ACTIVATIONS ("gelu"
    exact erf, "gelu_tanh" GPT-2's form, "silu"). arch: the block family (learn.models.blocks):
    "gpt2", or "llama" / "neox", which need positional "rotary" (no W_pos: rotary positions in the
    heads). `stored()` is the dict run files keep: asdict without keys that have their default and
    were added later (activation, arch), so configs stored before they existed read the same."""

    vocab: int
    alphabet: int
    n_ctx: int
    layers: int = 2
    heads: int = 1
    dim: int = 32
    d_head: int | None = None
    positional: str = "learned"
    mlp: bool = False
    layernorm: bool = False
    d_mlp: int | None = None
    activation: str = "relu"
    arch: str = "gpt2"

    def __post_init__(self) -> None:
        for name, low in (
            ("vocab", 1),
            ("alphabet", 1),
            ("n_ctx", 1),
            ("layers", 1),
            ("heads", 1),
            ("dim", 1),
        ):
            check_int(name, getattr(self, name), low)
        if self.positional not in POSITIONAL:
            raise InputError(f"unknown positional {self.positional!r}: use one of {POSITIONAL}")
        if self.positional == "circle" and self.dim < 2:
            raise InputError(f"the circle positional encoding needs dim ≥ 2, got dim={self.dim}")
        d_head = max(1, self.dim // self.heads) if self.d_head is None else self.d_head
        object.__setattr__(self, "d_head", check_int("d_head", d_head, 1))
        object.__setattr__(
            self, "d_mlp", check_int("d_mlp", 4 * self.dim if self.d_mlp is None else self.d_mlp, 1)
        )
        for name in ("mlp", "layernorm"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.activation not in ACTIVATIONS:
            raise InputError(f"unknown activation {self.activation!r}: use one of {ACTIVATIONS}")
        if self.activation != "relu" and not self.mlp:
            raise InputError(
                f"activation {self.activation!r} is the MLP's: it needs mlp ({param('mlp')})"
            )
        if self.arch not in ARCHS:
            raise InputError(f"unknown arch {self.arch!r}: use one of {', '.join(ARCHS)}")
        if (self.arch == "gpt2") == (self.positional == "rotary"):
            raise InputError(
                f"positional 'rotary' goes with arch llama or neox and only with them; got arch "
                f"{self.arch!r}, positional {self.positional!r}"
            )

    def stored(self) -> dict[str, Any]:
        """asdict(self) without the later-added keys that have their default (see the class
        docstring)."""
        out = asdict(self)
        if out["activation"] == "relu":
            del out["activation"]
        if out["arch"] == "gpt2":
            del out["arch"]
        return out


def positional_table(kind: str, n_ctx: int, dim: int) -> torch.Tensor:
    """The fixed W_pos [n_ctx dim] of a "sinusoidal" or "circle" encoding (see SequenceConfig)."""
    pos = torch.arange(n_ctx, dtype=torch.float64)[:, None]
    table = torch.zeros(n_ctx, dim, dtype=torch.float64)
    if kind == "sinusoidal":
        freq = torch.exp(-math.log(10000.0) * torch.arange(0, dim, 2, dtype=torch.float64) / dim)
        table[:, 0::2] = torch.sin(pos * freq)
        table[:, 1::2] = torch.cos(pos * freq)[:, : dim // 2]
    elif kind == "circle":
        angle = 2 * math.pi * pos[:, 0] / n_ctx
        table[:, 0], table[:, 1] = (
            math.sqrt(dim) * torch.cos(angle),
            math.sqrt(dim) * torch.sin(angle),
        )
    else:
        raise InputError(f"no fixed table for positional {kind!r}: use 'sinusoidal' or 'circle'")
    return table.float()


class SequenceModel(nn.Module):
    """Token + positional embedding, `layers` causal attention blocks, linear decoder over alphabet
    + 1 classes (the last is ⊥). forward(tokens [batch pos]) -> logits [batch pos alphabet+1]."""

    def __init__(self, cfg: SequenceConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.dim
        self.W_E = nn.Parameter(torch.randn(cfg.vocab, d))  # [vocab d_model]
        if cfg.positional == "learned":
            self.W_pos = nn.Parameter(torch.randn(cfg.n_ctx, d))  # [n_ctx d_model]
        elif cfg.positional in ("fixed", "rotary"):
            self.register_buffer(
                "W_pos", torch.zeros(cfg.n_ctx, d)
            )  # [n_ctx d_model], filled by a loader (rotary: stays 0)
        else:
            self.register_buffer(
                "W_pos", positional_table(cfg.positional, cfg.n_ctx, d)
            )  # [n_ctx d_model]
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.ln_final = norm_module(cfg)
        self.W_U = nn.Parameter(
            torch.randn(d, cfg.alphabet + 1) / math.sqrt(d)
        )  # [d_model alphabet+1]
        self.b_U = nn.Parameter(torch.zeros(cfg.alphabet + 1))  # [alphabet+1]
        self.register_buffer(
            "allowed",
            torch.tril(torch.ones(cfg.n_ctx, cfg.n_ctx, dtype=torch.bool)),
            persistent=False,
        )

    def forward(self, tokens: Any, return_patterns: bool = False):
        tokens = as_tokens(tokens, 0, self.cfg.vocab - 1, self.cfg.n_ctx).to(self.W_E.device)
        n = tokens.shape[1]
        x = self.W_E[tokens] + self.W_pos[:n]  # [batch pos d_model]
        allowed = self.allowed[:n, :n]
        patterns = []
        for block in self.blocks:
            x, pattern = block(x, allowed)
            patterns.append(pattern)  # [batch heads query key]
        logits = self.ln_final(x) @ self.W_U + self.b_U  # [batch pos alphabet+1]
        return (logits, patterns) if return_patterns else logits


def _pad(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """a zero-padded at the end of each axis to `shape` (zero columns leave every output
    unchanged)."""
    return np.pad(a, [(0, s - t) for s, t in zip(shape, a.shape)])


def _check_loadable(t: Transformer) -> None:
    if not isinstance(t, Transformer):
        raise InputError(
            f"expected a headcount.core.model.transformer.Transformer, got {type(t).__name__}"
        )
    if not isinstance(t.decoder, LinearDecoder):
        raise InputError(
            f"only models with a linear decoder load into a SequenceModel, not {t.decoder.kind!r}"
        )
    if t.mask != "causal":
        raise InputError(f"SequenceModel is causal; this model's mask is {t.mask!r}")
    if not t.layers:
        raise InputError(
            "a model with no layers cannot be loaded into a SequenceModel (layers ≥ 1)"
        )
    if beyond := sorted(set(t.extensions) & BEYOND_GPT2):
        raise InputError(
            f"the model uses {', '.join(beyond)}: models of the llama / neox blocks are trained "
            f"from scratch ({param('arch')}), not loaded into a SequenceModel"
        )
    for l, layer in enumerate(t.layers):
        if layer.b_O is not None or any(h.has_bias for h in layer.heads):
            raise InputError(
                f"layer {l} has attention biases (b_Q, b_K, b_V or b_O); a SequenceModel has "
                "none: only "
                "models without them load"
            )
    activations = sorted({layer.mlp.activation for layer in t.layers if layer.mlp is not None})
    if len(activations) > 1:
        raise InputError(
            f"the MLPs use different activations {activations}; a SequenceModel has one"
        )


def _layernorm_eps(t: Transformer) -> float | None:
    """The models' common LayerNorm eps, or None without LayerNorm. A SequenceModel has LayerNorm
    everywhere or nowhere: ln1 in every layer, ln2 in every layer with an MLP, ln_final, all with
    one eps."""
    parts = [("ln_final", t.ln_final)]
    for l, layer in enumerate(t.layers):
        parts.append((f"layer {l} ln1", layer.ln1))
        if layer.mlp is not None:
            parts.append((f"layer {l} ln2", layer.ln2))
    present = [name for name, ln in parts if ln is not None]
    if not present:
        return None
    if len(present) < len(parts):
        missing = [name for name, ln in parts if ln is None]
        raise InputError(
            f"LayerNorm in {', '.join(present[:4])} but not in {', '.join(missing[:4])}: a "
            "SequenceModel has "
            "LayerNorm before every attention and MLP and before the decoder, or none"
        )
    eps = sorted({ln.eps for _, ln in parts if ln is not None})
    if len(eps) > 1:
        raise InputError(f"the LayerNorms use different eps {eps[:4]}; a SequenceModel has one")
    return eps[0]


def _config_of(t: Transformer) -> SequenceConfig:
    """The SequenceConfig that holds `t`: the most heads of any layer, the widest head, the widest
    MLP."""
    d_head = max(
        (max(h.W_Q.shape[1], h.W_V.shape[1]) for layer in t.layers for h in layer.heads), default=1
    )
    mlps = [layer.mlp for layer in t.layers if layer.mlp is not None]
    return SequenceConfig(
        vocab=t.alphabet,
        alphabet=t.decoder.alphabet,
        n_ctx=t.n_ctx,
        layers=len(t.layers),
        heads=max(max(1, len(layer.heads)) for layer in t.layers),
        dim=t.d_model,
        d_head=max(1, d_head),
        positional="fixed",
        mlp=bool(mlps),
        layernorm=_layernorm_eps(t) is not None,
        d_mlp=max((m.W_in.shape[1] for m in mlps), default=None),
        activation=mlps[0].activation if mlps else "relu",
    )


def _layer_tensors(l: int, layer: Layer, cfg: SequenceConfig) -> dict[str, np.ndarray]:
    """Layer l's heads (zero-padded to cfg.heads heads of width cfg.d_head; the layer's attention
    scale folded into W_Q), MLP (zero when it has none and cfg.mlp) and LayerNorms, under the
    SequenceModel's parameter names."""
    d, e, d_mlp = cfg.dim, cfg.d_head, cfg.d_mlp
    zero = np.zeros((d, 1))
    padded = [(h.W_Q * layer.attn_scale, h.W_K, h.W_V, h.W_O) for h in layer.heads]
    padded += [(zero, zero, zero, zero.T)] * (cfg.heads - len(padded))
    tensors = {
        f"blocks.{l}.attn.{name}": np.stack([_pad(p[i], (d, e)) for p in padded])
        for i, name in enumerate(("W_Q", "W_K", "W_V"))
    }
    tensors[f"blocks.{l}.attn.W_O"] = np.stack([_pad(p[3], (e, d)) for p in padded])
    if cfg.mlp:
        m = layer.mlp
        if m is None:
            parts = (np.zeros((d, 1)), np.zeros(1), np.zeros((1, d)), np.zeros(d))
        else:
            parts = (m.W_in, m.b_in, m.W_out, m.b_out)
        shapes = ((d, d_mlp), (d_mlp,), (d_mlp, d), (d,))
        for name, a, shape in zip(("W_in", "b_in", "W_out", "b_out"), parts, shapes):
            tensors[f"blocks.{l}.mlp.{name}"] = _pad(a, shape)
    for name, ln in (("ln_attn", layer.ln1), ("ln_mlp", layer.ln2)):
        if (
            ln is not None
        ):  # a padded zero MLP keeps nn.LayerNorm's own (w = 1, b = 0): it adds 0 anyway
            tensors[f"blocks.{l}.{name}.weight"], tensors[f"blocks.{l}.{name}.bias"] = ln.w, ln.b
    return tensors


def sequence_model_from_transformer(t: Transformer) -> SequenceModel:
    """A float64 SequenceModel (positional "fixed") with the same outputs as the core model `t`.

    Heads of different widths are zero-padded to a common d_head, layers with fewer heads get
    all-zero heads, layers without an MLP (when another has one) an all-zero MLP: each adds exactly
    0 to the residual (and an all-zero head has zero gradient, so fine-tuning leaves it zero).
    sequence_model_to_transformer drops that padding again. LayerNorm (everywhere or nowhere, one
    eps), GELU MLPs and attention scales load (see the module docstring); attention biases are an
    InputError."""
    _check_loadable(t)
    cfg = _config_of(t)
    model = SequenceModel(cfg).double()
    eps = _layernorm_eps(t)
    if eps is not None:
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                module.eps = eps
    tensors: dict[str, np.ndarray] = {
        "W_E": t.W_E,
        "W_pos": t.W_pos,
        "W_U": t.decoder.W_U,
        "b_U": t.decoder.b_U,
    }
    if t.ln_final is not None:
        tensors["ln_final.weight"], tensors["ln_final.bias"] = t.ln_final.w, t.ln_final.b
    for l, layer in enumerate(t.layers):
        tensors.update(_layer_tensors(l, layer, cfg))
    state = model.state_dict()
    with torch.no_grad():
        for name, value in tensors.items():
            state[name].copy_(torch.from_numpy(np.asarray(value, dtype=np.float64)))
    return model


def _keep(used: np.ndarray) -> np.ndarray:
    """Column mask: the used ones, or the first column when none is (the core model wants width ≥
    1)."""
    keep = used.copy()
    if not keep.any():
        keep[0] = True
    return keep


def _export_head(a: Attention, h: int) -> AttentionHead | None:
    """Head h without its all-zero d_head coordinates (q and k keep all of theirs under a rotation,
    which mixes them); None when the whole head is zero."""
    W_Q, W_K, W_V, W_O = (to_numpy(w[h]) for w in (a.W_Q, a.W_K, a.W_V, a.W_O))
    if not (W_Q.any() or W_K.any() or W_V.any() or W_O.any()):
        return None
    qk = _keep(W_Q.any(axis=0) | W_K.any(axis=0) | (a.rotary is not None))  # [d_head]
    vo = _keep(W_V.any(axis=0) | W_O.any(axis=1))  # [d_head]
    return AttentionHead(W_Q[:, qk], W_K[:, qk], W_V[:, vo], W_O[vo])


def _export_layernorm(ln: nn.Module) -> LayerNorm | RMSNorm | None:
    """The core LayerNorm or RMSNorm of an nn.LayerNorm or blocks.RMSNorm (None for the
    nn.Identity of a model without normalisation)."""
    if isinstance(ln, TorchRMSNorm):
        return RMSNorm(to_numpy(ln.weight), float(ln.eps))
    if not isinstance(ln, nn.LayerNorm):
        return None
    return LayerNorm(to_numpy(ln.weight), to_numpy(ln.bias), float(ln.eps))


def _export_layer(block: Block, cfg: SequenceConfig) -> Layer:
    heads = [head for h in range(cfg.heads) if (head := _export_head(block.attn, h)) is not None]
    rotary = block.attn.rotary
    if not heads:  # an all-zero layer still needs one head: keep a zero one (rotary's width)
        zero = np.zeros((cfg.dim, 1 if rotary is None else cfg.d_head))
        heads.append(AttentionHead(zero, zero, zero[:, :1], zero[:, :1].T))
    mlp = None
    if block.mlp is not None:
        parts = [to_numpy(getattr(block.mlp, name)) for name in ("W_in", "b_in", "W_out", "b_out")]
        gate = None if block.mlp.W_gate is None else to_numpy(block.mlp.W_gate)
        if any(p.any() for p in parts):
            mlp = MLP(*parts, activation=cfg.activation, W_gate=gate)
    ln2 = (
        _export_layernorm(block.ln_mlp) if mlp is not None else None
    )  # no MLP: nothing to normalise
    ln1 = _export_layernorm(block.ln_attn)
    return Layer(tuple(heads), mlp, ln1, ln2, rotary=rotary, parallel=block.parallel and bool(mlp))


def sequence_model_to_transformer(
    m: SequenceModel, info: dict[str, Any] | None = None
) -> Transformer:
    """The core Transformer (float64 weights, LinearDecoder) with the same outputs as `m`, for
    certificates, core io and the INDEX tools. Zero padding is dropped: all-zero heads (keeping ≥ 1
    per layer), all-zero MLPs (with their LayerNorm), and d_head coordinates that are zero in both
    W_Q and W_K (or both W_V and W_O) — each contributes exactly 0, so a loaded construction exports
    with its own shapes. LayerNorms become ln1 / ln2 / ln_final (weight, bias, eps), the activation
    MLP.activation."""
    if not isinstance(m, SequenceModel):
        raise InputError(f"expected a SequenceModel, got {type(m).__name__}")
    layers = tuple(_export_layer(block, m.cfg) for block in m.blocks)
    meta = {"source": "headcount.learn", "config": m.cfg.stored()} | dict(info or {})
    return Transformer(
        to_numpy(m.W_E),
        to_numpy(m.W_pos),
        layers,
        LinearDecoder(to_numpy(m.W_U), to_numpy(m.b_U)),
        "causal",
        meta,
        ln_final=_export_layernorm(m.ln_final),
    )
