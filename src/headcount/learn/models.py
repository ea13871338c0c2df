"""PyTorch models for the learning experiments (spec/learning.md), and exact conversions to and from the
theory's models, so a construction can be loaded, fine-tuned or probed, and a trained model can be run
through the same certificates, verifiers and lower-bound tools as a construction.

* SequenceModel — causal multi-head attention over token sequences, TransformerLens weight names.
  Loads any core Transformer with a linear decoder (headcount.core.model) and exports to one; scores are
  plain ⟨q, k⟩ exactly as in core/forward.py (no 1/√d_head in forward: W_Q is *initialised* ×1/√d_head so
  training starts like a standard transformer, and a loaded construction keeps its own scale).
* MinMaxNet — position-free heads over tokens 1..M plus two linear classifiers (headcount.minmax.model).
* BooleanNet — heads over {0, 1} plus a degree-D polynomial readout (headcount.boolean.model); its files
  (format "headcount-boolean") hold the exact rationals as strings, so constructions round-trip exactly.

All modules run in float32 (training) and float64 (`.double()`, used for exact comparisons).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from headcount.boolean.model import BooleanHead, BooleanLayer, Readout, fmpq_to_float, to_fmpq
from headcount.core.model import MLP, AttentionHead, Layer, LinearDecoder, Transformer
from headcount.core.table import OneLayerTable
from headcount.minmax.model import Classifier, MinMaxModel, TokenHead, TokenLayer

POSITIONAL = ("learned", "sinusoidal", "circle", "fixed")


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer ≥ {low}, got {value!r}")
    return int(value)


def _as_tokens(tokens: Any, low: int, high: int, n_max: int | None = None) -> torch.Tensor:
    """tokens as a [batch pos] int64 tensor with entries in low..high (ValueError saying what is wrong)."""
    t = tokens if isinstance(tokens, torch.Tensor) else torch.as_tensor(np.asarray(tokens))
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise ValueError(f"tokens must be integers, got dtype {t.dtype}")
    if t.ndim == 1:
        t = t[None, :]
    if t.ndim != 2 or t.shape[1] < 1:
        raise ValueError(f"tokens must have shape [batch pos] with pos ≥ 1, got {tuple(t.shape)}")
    if n_max is not None and t.shape[1] > n_max:
        raise ValueError(f"input length {t.shape[1]} exceeds the model's context length {n_max}")
    if t.numel() and (int(t.min()) < low or int(t.max()) > high):
        raise ValueError(f"tokens must lie in {low}..{high}")
    return t.long()


# ---------------------------------------------------------------------------------------------
# Sequence models (induction heads, k-hop)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SequenceConfig:
    """Shape of a SequenceModel. Output classes are 0..alphabet−1 and a last ⊥ class (index alphabet);
    `vocab` input tokens may exceed `alphabet` (k-hop puts a hop-count token first).

    positional: "learned" (a trained W_pos), "sinusoidal" (the fixed Vaswani et al. table), "circle"
    (position i ↦ √dim·(cos 2πi/n_ctx, sin 2πi/n_ctx) in coordinates 0 and 1, zero elsewhere: a constant
    norm √dim, the expected norm of an initial W_E row, so neither swamps the other), "fixed" (a frozen W_pos
    buffer, filled when a construction is loaded). d_head defaults to dim // heads; d_mlp to 4·dim."""

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

    def __post_init__(self) -> None:
        for name, low in (
            ("vocab", 1),
            ("alphabet", 1),
            ("n_ctx", 1),
            ("layers", 1),
            ("heads", 1),
            ("dim", 1),
        ):
            _check_int(name, getattr(self, name), low)
        if self.positional not in POSITIONAL:
            raise ValueError(f"unknown positional {self.positional!r}: use one of {POSITIONAL}")
        if self.positional == "circle" and self.dim < 2:
            raise ValueError(f"the circle positional encoding needs dim ≥ 2, got dim={self.dim}")
        d_head = max(1, self.dim // self.heads) if self.d_head is None else self.d_head
        object.__setattr__(self, "d_head", _check_int("d_head", d_head, 1))
        object.__setattr__(
            self, "d_mlp", _check_int("d_mlp", 4 * self.dim if self.d_mlp is None else self.d_mlp, 1)
        )
        for name in ("mlp", "layernorm"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")


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
        table[:, 0], table[:, 1] = math.sqrt(dim) * torch.cos(angle), math.sqrt(dim) * torch.sin(angle)
    else:
        raise ValueError(f"no fixed table for positional {kind!r}: use 'sinusoidal' or 'circle'")
    return table.float()


class Attention(nn.Module):
    """One layer's heads: Σ_h softmax(causal ⟨x W_Q, x W_K⟩) (x W_V) W_O."""

    def __init__(self, cfg: SequenceConfig):
        super().__init__()
        h, d, e = cfg.heads, cfg.dim, cfg.d_head
        # Unit-variance residual entries give unit-variance q, k; the 1/√d_head on W_Q makes the scores
        # ⟨q, k⟩ unit-variance too, as the usual 1/√d_head in forward would.
        self.W_Q = nn.Parameter(torch.randn(h, d, e) / math.sqrt(d) / math.sqrt(e))  # [heads d_model d_head]
        self.W_K = nn.Parameter(torch.randn(h, d, e) / math.sqrt(d))  # [heads d_model d_head]
        self.W_V = nn.Parameter(torch.randn(h, d, e) / math.sqrt(d))  # [heads d_model d_head]
        self.W_O = nn.Parameter(torch.randn(h, e, d) / math.sqrt(e * h))  # [heads d_head d_model]

    def forward(self, x: torch.Tensor, allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q = torch.einsum("bpd,hde->bhpe", x, self.W_Q)  # [batch heads pos d_head]
        k = torch.einsum("bpd,hde->bhpe", x, self.W_K)
        v = torch.einsum("bpd,hde->bhpe", x, self.W_V)
        scores = (q @ k.transpose(-1, -2)).masked_fill(~allowed, float("-inf"))  # [batch heads query key]
        pattern = torch.softmax(scores, dim=-1)
        out = torch.einsum("bhpe,hed->bpd", pattern @ v, self.W_O)  # [batch pos d_model]
        return out, pattern


class FeedForward(nn.Module):
    """ReLU MLP with biases, as core.model.MLP: relu(x W_in + b_in) W_out + b_out."""

    def __init__(self, cfg: SequenceConfig):
        super().__init__()
        d, m = cfg.dim, cfg.d_mlp
        self.W_in = nn.Parameter(torch.randn(d, m) * math.sqrt(2.0 / d))  # [d_model d_mlp]
        self.b_in = nn.Parameter(torch.zeros(m))  # [d_mlp]
        self.W_out = nn.Parameter(torch.randn(m, d) / math.sqrt(m * 2 * cfg.layers))  # [d_mlp d_model]
        self.b_out = nn.Parameter(torch.zeros(d))  # [d_model]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ self.W_in + self.b_in) @ self.W_out + self.b_out


class Block(nn.Module):
    """x += attn(LN(x)); x += mlp(LN(x)) — pre-LN when layernorm, else the identity in place of LN."""

    def __init__(self, cfg: SequenceConfig):
        super().__init__()
        self.attn = Attention(cfg)
        self.mlp = FeedForward(cfg) if cfg.mlp else None
        self.ln_attn = nn.LayerNorm(cfg.dim) if cfg.layernorm else nn.Identity()
        self.ln_mlp = nn.LayerNorm(cfg.dim) if cfg.layernorm and cfg.mlp else nn.Identity()

    def forward(self, x: torch.Tensor, allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        update, pattern = self.attn(self.ln_attn(x), allowed)
        x = x + update
        if self.mlp is not None:
            x = x + self.mlp(self.ln_mlp(x))
        return x, pattern


class SequenceModel(nn.Module):
    """Token + positional embedding, `layers` causal attention blocks, linear decoder over alphabet + 1
    classes (the last is ⊥). forward(tokens [batch pos]) -> logits [batch pos alphabet+1]."""

    def __init__(self, cfg: SequenceConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.dim
        self.W_E = nn.Parameter(torch.randn(cfg.vocab, d))  # [vocab d_model]
        if cfg.positional == "learned":
            self.W_pos = nn.Parameter(torch.randn(cfg.n_ctx, d))  # [n_ctx d_model]
        elif cfg.positional == "fixed":
            self.register_buffer("W_pos", torch.zeros(cfg.n_ctx, d))  # [n_ctx d_model], filled by a loader
        else:
            self.register_buffer("W_pos", positional_table(cfg.positional, cfg.n_ctx, d))  # [n_ctx d_model]
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.ln_final = nn.LayerNorm(d) if cfg.layernorm else nn.Identity()
        self.W_U = nn.Parameter(torch.randn(d, cfg.alphabet + 1) / math.sqrt(d))  # [d_model alphabet+1]
        self.b_U = nn.Parameter(torch.zeros(cfg.alphabet + 1))  # [alphabet+1]
        self.register_buffer(
            "allowed", torch.tril(torch.ones(cfg.n_ctx, cfg.n_ctx, dtype=torch.bool)), persistent=False
        )

    def forward(self, tokens: Any, return_patterns: bool = False):
        tokens = _as_tokens(tokens, 0, self.cfg.vocab - 1, self.cfg.n_ctx).to(self.W_E.device)
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
    """a zero-padded at the end of each axis to `shape` (zero columns leave every output unchanged)."""
    return np.pad(a, [(0, s - t) for s, t in zip(shape, a.shape)])


def sequence_model_from_transformer(t: Transformer) -> SequenceModel:
    """A float64 SequenceModel (positional "fixed") with the same outputs as the core model `t`.

    Heads of different widths are zero-padded to a common d_head, layers with fewer heads get all-zero
    heads, layers without an MLP (when another has one) an all-zero MLP: each adds exactly 0 to the
    residual (and an all-zero head has zero gradient, so fine-tuning leaves it zero).
    sequence_model_to_transformer drops that padding again."""
    if not isinstance(t, Transformer):
        raise ValueError(f"expected a headcount.core.model.Transformer, got {type(t).__name__}")
    if not isinstance(t.decoder, LinearDecoder):
        raise ValueError(
            f"only models with a linear decoder load into a SequenceModel, not {t.decoder.kind!r}"
        )
    if t.mask != "causal":
        raise ValueError(f"SequenceModel is causal; this model's mask is {t.mask!r}")
    if not t.layers:
        raise ValueError("a model with no layers cannot be loaded into a SequenceModel (layers ≥ 1)")
    heads = max(max(1, len(layer.heads)) for layer in t.layers)
    d_head = max((max(h.W_Q.shape[1], h.W_V.shape[1]) for layer in t.layers for h in layer.heads), default=1)
    mlps = [layer.mlp for layer in t.layers if layer.mlp is not None]
    d_mlp = max((m.W_in.shape[1] for m in mlps), default=None)
    d = t.d_model
    cfg = SequenceConfig(
        vocab=t.alphabet,
        alphabet=t.decoder.alphabet,
        n_ctx=t.n_ctx,
        layers=len(t.layers),
        heads=heads,
        dim=d,
        d_head=max(1, d_head),
        positional="fixed",
        mlp=bool(mlps),
        layernorm=False,
        d_mlp=d_mlp,
    )
    model = SequenceModel(cfg).double()
    e = cfg.d_head
    tensors: dict[str, np.ndarray] = {
        "W_E": t.W_E,
        "W_pos": t.W_pos,
        "W_U": t.decoder.W_U,
        "b_U": t.decoder.b_U,
    }
    for l, layer in enumerate(t.layers):
        zero = np.zeros((d, 1))
        padded = [(h.W_Q, h.W_K, h.W_V, h.W_O) for h in layer.heads]
        padded += [(zero, zero, zero, zero.T)] * (heads - len(padded))
        for i, name in enumerate(("W_Q", "W_K", "W_V")):
            tensors[f"blocks.{l}.attn.{name}"] = np.stack([_pad(p[i], (d, e)) for p in padded])
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
    state = model.state_dict()
    with torch.no_grad():
        for name, value in tensors.items():
            state[name].copy_(torch.from_numpy(np.asarray(value, dtype=np.float64)))
    return model


def _np(p: torch.Tensor) -> np.ndarray:
    return p.detach().cpu().double().numpy().copy()


def _keep(used: np.ndarray) -> np.ndarray:
    """Column mask: the used ones, or the first column when none is (the core model wants width ≥ 1)."""
    keep = used.copy()
    if not keep.any():
        keep[0] = True
    return keep


def sequence_model_to_transformer(m: SequenceModel, info: dict[str, Any] | None = None) -> Transformer:
    """The core Transformer (float64 weights, LinearDecoder) with the same outputs as `m`, for certificates,
    core io and the INDEX tools. Zero padding is dropped: all-zero heads (keeping ≥ 1 per layer), all-zero
    MLPs, and d_head coordinates that are zero in both W_Q and W_K (or both W_V and W_O) — each contributes
    exactly 0, so a loaded construction exports with its own shapes."""
    if not isinstance(m, SequenceModel):
        raise ValueError(f"expected a SequenceModel, got {type(m).__name__}")
    if m.cfg.layernorm:
        raise ValueError(
            "LayerNorm models cannot be exported to the certifiable weight form (the core model has no "
            "LayerNorm); train with layernorm=False"
        )
    layers = []
    for block in m.blocks:
        a = block.attn
        heads = []
        for h in range(m.cfg.heads):
            W_Q, W_K, W_V, W_O = (_np(w[h]) for w in (a.W_Q, a.W_K, a.W_V, a.W_O))
            if not (W_Q.any() or W_K.any() or W_V.any() or W_O.any()):
                continue
            qk = _keep(W_Q.any(axis=0) | W_K.any(axis=0))  # [d_head]
            vo = _keep(W_V.any(axis=0) | W_O.any(axis=1))  # [d_head]
            heads.append(AttentionHead(W_Q[:, qk], W_K[:, qk], W_V[:, vo], W_O[vo]))
        if not heads:  # an all-zero layer still needs one head: keep a zero one of width 1
            zero = np.zeros((m.cfg.dim, 1))
            heads.append(AttentionHead(zero, zero, zero, zero.T))
        mlp = None
        if block.mlp is not None:
            parts = [_np(getattr(block.mlp, name)) for name in ("W_in", "b_in", "W_out", "b_out")]
            if any(p.any() for p in parts):
                mlp = MLP(*parts)
        layers.append(Layer(tuple(heads), mlp))
    meta = {"source": "headcount.learn", "config": asdict(m.cfg)} | dict(info or {})
    return Transformer(
        _np(m.W_E), _np(m.W_pos), tuple(layers), LinearDecoder(_np(m.W_U), _np(m.b_U)), "causal", meta
    )


# ---------------------------------------------------------------------------------------------
# Min / max
# ---------------------------------------------------------------------------------------------


class TableModel(nn.Module):
    """The one-layer table form (core/table.py) in PyTorch: ψ_in, Q̃, K̃, Ṽ looked up per (position, token),
    causal softmax attention, residual x_i + Σ_h head_h(i). forward(tokens) -> that residual (ψ_out is the
    table's decoder, kept as data: `predict` applies it); so the one-layer construction loads here with
    identical outputs and can be probed or perturbed with torch (its readout is not differentiable)."""

    def __init__(self, table: OneLayerTable):
        super().__init__()
        self.embed = nn.Parameter(torch.from_numpy(table.embed.copy()))  # [n_ctx alphabet d_model]
        self.Q = nn.Parameter(torch.from_numpy(table.Q.copy()))  # [heads n_ctx alphabet d_head]
        self.K = nn.Parameter(torch.from_numpy(table.K.copy()))  # [heads n_ctx alphabet d_head]
        self.V = nn.Parameter(torch.from_numpy(table.V.copy()))  # [heads n_ctx alphabet d_model]
        self.decoder, self.mask, self.info = table.decoder, table.mask, dict(table.info)

    def forward(self, tokens: Any, return_patterns: bool = False):
        n_ctx, alphabet = self.embed.shape[:2]
        tokens = _as_tokens(tokens, 0, alphabet - 1, n_ctx)
        n = tokens.shape[1]
        pos = torch.arange(n)[None, :]  # [1 pos]
        x = self.embed[pos, tokens]  # [batch pos d_model]
        q, k, v = (
            self.Q[:, pos, tokens],
            self.K[:, pos, tokens],
            self.V[:, pos, tokens],
        )  # [heads batch pos *]
        scores = q @ k.transpose(-1, -2)  # [heads batch query key]
        if self.mask == "causal":
            scores = scores.masked_fill(~torch.tril(torch.ones(n, n, dtype=torch.bool)), float("-inf"))
        pattern = torch.softmax(scores, dim=-1)
        out = x + (pattern @ v).sum(dim=0)  # [batch pos d_model]
        return (out, [pattern.transpose(0, 1)]) if return_patterns else out  # patterns [batch heads q k]

    def predict(self, tokens: Any) -> np.ndarray:
        """ψ_out of the residual: tokens [batch pos] with BOTTOM for ⊥ (the table's own decoder)."""
        with torch.no_grad():
            return self.decoder.decode(self(tokens).double().numpy())


def table_model_to_table(m: TableModel) -> OneLayerTable:
    """The core table model with `m`'s (possibly fine-tuned) tables and the same decoder."""
    return OneLayerTable(_np(m.embed), _np(m.Q), _np(m.K), _np(m.V), m.decoder, m.mask, dict(m.info))


class MinMaxNet(nn.Module):
    """H position-free heads over tokens 1..M (a score and a d-vector per token) summed into z, and two
    linear classifiers without bias: logits_min = θ_min z, logits_max = θ_max z, class i ↔ token i+1.
    forward(x [batch n], tokens 1..M) -> (logits_min [batch M], logits_max [batch M])."""

    def __init__(self, M: int, heads: int = 1, dim: int = 4):
        super().__init__()
        self.M, self.heads, self.dim = (
            _check_int("M", M, 2),
            _check_int("heads", heads, 1),
            _check_int("dim", dim, 1),
        )
        self.scores = nn.Parameter(torch.randn(heads, M))  # [heads M]
        self.values = nn.Parameter(torch.randn(heads, M, dim))  # [heads M d]
        self.theta_min = nn.Parameter(torch.randn(M, dim) / math.sqrt(dim))  # [M d]
        self.theta_max = nn.Parameter(torch.randn(M, dim) / math.sqrt(dim))  # [M d]

    def layer(self, x: Any) -> torch.Tensor:
        """z = Σ_h Σ_j softmax_j(score_h[x_j]) value_h[x_j]: [batch d]."""
        idx = _as_tokens(x, 1, self.M).to(self.scores.device) - 1  # [batch n], 0-based
        weights = torch.softmax(self.scores[:, idx], dim=-1)  # [heads batch n]
        return torch.einsum("hbn,hbnd->bd", weights, self.values[:, idx])

    def forward(self, x: Any) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.layer(x)
        return z @ self.theta_min.T, z @ self.theta_max.T


def minmax_net_from_model(model: MinMaxModel) -> MinMaxNet:
    """A float64 MinMaxNet with the same layer output and logits as `model`."""
    if not isinstance(model, MinMaxModel):
        raise ValueError(f"expected a headcount.minmax.model.MinMaxModel, got {type(model).__name__}")
    layer = model.layer
    net = MinMaxNet(layer.M, len(layer.heads), layer.dim).double()
    with torch.no_grad():
        net.scores.copy_(torch.from_numpy(np.stack([h.scores for h in layer.heads])))
        net.values.copy_(torch.from_numpy(np.stack([h.values for h in layer.heads])))
        net.theta_min.copy_(torch.from_numpy(model.classifier_min.theta))
        net.theta_max.copy_(torch.from_numpy(model.classifier_max.theta))
    return net


def minmax_net_to_model(net: MinMaxNet, info: dict[str, Any] | None = None) -> MinMaxModel:
    """The float64 MinMaxModel of `net`, for the exact verifiers and save_minmax."""
    scores, values = _np(net.scores), _np(net.values)
    heads = tuple(TokenHead(scores[h], values[h]) for h in range(net.heads))
    meta = {"source": "headcount.learn", "M": net.M, "heads": net.heads, "dim": net.dim} | dict(info or {})
    return MinMaxModel(
        TokenLayer(heads), Classifier(_np(net.theta_min)), Classifier(_np(net.theta_max)), meta
    )


# ---------------------------------------------------------------------------------------------
# Boolean
# ---------------------------------------------------------------------------------------------


def monomial_exponents(dim: int, degree: int) -> list[tuple[int, ...]]:
    """All exponent tuples K ∈ N^dim with |K| ≤ degree, the constant first, then by degree, lexicographic."""
    out = []
    for total in range(degree + 1):
        for combo in itertools.combinations_with_replacement(range(dim), total):
            out.append(tuple(combo.count(i) for i in range(dim)))
    return out


class BooleanNet(nn.Module):
    """H heads over {0, 1}^n (log-weights, so w_0, w_1 > 0, and values v_0, v_1 ∈ R^d) summed into z, then
    g = Σ_K c_K z^K over all monomials of degree ≤ D (constant included). The answer is sign g (true ↔ −1).

    A head's output depends on x only through t = |x|: z_h(t) = v_0 + λ(t)(v_1 − v_0) with
    λ(t) = t·w_1 / ((n−t)w_0 + t·w_1) = sigmoid(log w_1 − log w_0 + log t − log(n−t)), which is exactly 0 at
    t = 0 and 1 at t = n and never overflows. forward(x [batch n] bits) -> g [batch]; score(t) -> g [batch]."""

    def __init__(self, n: int, heads: int = 1, dim: int = 2, degree: int = 2):
        super().__init__()
        self.n, self.heads = _check_int("n", n, 1), _check_int("heads", heads, 1)
        self.dim, self.degree = _check_int("dim", dim, 1), _check_int("degree", degree, 1)
        exps = monomial_exponents(dim, degree)
        self.logw = nn.Parameter(torch.randn(heads, 2))  # [heads 2]: log w_0, log w_1
        self.values = nn.Parameter(torch.randn(heads, 2, dim))  # [heads 2 d]: v_0, v_1
        self.register_buffer("exponents", torch.tensor(exps, dtype=torch.long))  # [monomials d]
        self.coef = nn.Parameter(torch.randn(len(exps)) / math.sqrt(len(exps)))  # [monomials]

    def layer(self, t: Any) -> torch.Tensor:
        """z(t) for weights t [batch] in 0..n: [batch d]."""
        t = _as_tokens(torch.as_tensor(t).reshape(1, -1), 0, self.n)[0].to(self.logw)
        r = self.logw[:, 1] - self.logw[:, 0]  # [heads]
        lam = torch.sigmoid(
            r[:, None] + torch.log(t)[None, :] - torch.log(self.n - t)[None, :]
        )  # [heads batch]
        v0, v1 = self.values[:, 0], self.values[:, 1]  # [heads d]
        return (v0[:, None, :] + lam[..., None] * (v1 - v0)[:, None, :]).sum(dim=0)

    def readout(self, z: torch.Tensor) -> torch.Tensor:
        """g(z) = Σ_K c_K z^K: [batch]. Powers by repeated products (no 0^0 in the gradient)."""
        powers = [torch.ones_like(z)]
        for _ in range(self.degree):
            powers.append(powers[-1] * z)
        powers = torch.stack(powers)  # [degree+1 batch d]
        picked = powers[self.exponents, :, torch.arange(self.dim)[None, :]]  # [monomials d batch]
        return self.coef @ picked.prod(dim=1)

    def score(self, t: Any) -> torch.Tensor:
        return self.readout(self.layer(t))

    def forward(self, x: Any) -> torch.Tensor:
        x = _as_tokens(x, 0, 1)
        if x.shape[1] != self.n:
            raise ValueError(f"inputs must have n = {self.n} bits, got {x.shape[1]}")
        return self.score(x.sum(dim=1))


def _log_rational(q) -> float:
    """log of a positive fmpq, fine for numbers far outside float64's range (math.log takes big ints)."""
    return math.log(int(q.p)) - math.log(int(q.q))


def boolean_net_from_model(layer: BooleanLayer, readout: Readout, n: int) -> BooleanNet:
    """A float64 BooleanNet for the exact (layer, readout) of headcount.boolean.model, at input length n.
    Weights and coefficients are rounded to float64 (exact for dyadic rationals); log w from the exact w."""
    if readout.dim != layer.dim:
        raise ValueError(f"readout has d = {readout.dim} but the layer outputs d = {layer.dim}")
    net = BooleanNet(n, layer.num_heads, layer.dim, readout.degree).double()
    index = {K: i for i, K in enumerate(monomial_exponents(layer.dim, readout.degree))}
    coef = np.zeros(len(index))
    for K, c in readout.terms.items():
        coef[index[tuple(K)]] = fmpq_to_float(c)
    with torch.no_grad():
        net.logw.copy_(
            torch.tensor(
                [[_log_rational(h.w0), _log_rational(h.w1)] for h in layer.heads], dtype=torch.float64
            )
        )
        net.values.copy_(
            torch.tensor(
                [[[fmpq_to_float(x) for x in h.v0], [fmpq_to_float(x) for x in h.v1]] for h in layer.heads],
                dtype=torch.float64,
            )
        )
        net.coef.copy_(torch.from_numpy(coef))
    return net


def boolean_net_to_model(net: BooleanNet) -> tuple[BooleanLayer, Readout]:
    """The exact (layer, readout) of `net`'s float64 parameters (floats are dyadic rationals, so exact).
    Only w_1/w_0 matters, so w = exp(log w − max(log w_0, log w_1)): the larger is 1, nothing overflows;
    a weight that underflows to 0 is stored as the smallest positive float64 (w must be > 0)."""
    logw, values, coef = _np(net.logw), _np(net.values), _np(net.coef)
    heads = []
    for h in range(net.heads):
        w = np.maximum(np.exp(logw[h] - logw[h].max()), np.nextafter(0.0, 1.0))
        heads.append(
            BooleanHead(
                to_fmpq(float(w[0])),
                to_fmpq(float(w[1])),
                tuple(map(float, values[h, 0])),
                tuple(map(float, values[h, 1])),
            )
        )
    terms = {K: to_fmpq(float(c)) for K, c in zip(monomial_exponents(net.dim, net.degree), coef) if c != 0}
    return BooleanLayer(tuple(heads)), Readout(terms, net.degree, net.dim)
