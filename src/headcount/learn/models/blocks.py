"""The blocks a SequenceModel stacks, by family (SequenceConfig.arch; issue 32):

* "gpt2": x += attn(LN(x)); x += mlp(LN(x)) — pre-LayerNorm when layernorm, else no norm; learned
  or fixed positions added to the embedding; a plain MLP act(x W_in + b_in) W_out + b_out.
* "llama": RMSNorm before the heads, the MLP and the decoder; rotary positions on whole heads (θ =
  ROTARY_THETA, rotate_half); a gated MLP act(x W_gate)·(x W_in) W_out without biases (SwiGLU with
  the default SiLU).
* "neox": LayerNorm; rotary positions on a quarter of each head (at least 2 entries, as Pythia);
  the parallel residual x += attn(LN1(x)) + mlp(LN2(x)); a plain MLP with biases (GELU default).

The rotary tables are core.numbers.rotary_table's midpoints (Arb-evaluated), so a trained model's
float evaluation in core.passes reads the very numbers it was trained with. Each part exports to the
core model's part of the same name (core.model.parts) and computes the same real function.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F_nn
from torch import nn

from headcount.core.model import Rotary
from headcount.core.numbers import rotary_table

ARCHS = ("gpt2", "llama", "neox")
ROTARY_THETA = 10000.0


def rotary_of(arch: str, d_head: int) -> Rotary | None:
    """The rotary part of a block family at head width d_head (None: positions are embedded)."""
    if arch == "gpt2" or d_head < 2:
        return None
    dims = d_head if arch == "llama" else max(2, d_head // 4)
    return Rotary(ROTARY_THETA, dims - dims % 2)


class RMSNorm(nn.Module):
    """x / √(mean x² + eps) · w (core.model.RMSNorm with offset 0)."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))  # [d_model]
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    """One layer's heads: Σ_h softmax(causal ⟨rot(x W_Q), rot(x W_K)⟩) (x W_V) W_O, rot the
    rotation of `rotary` (the identity without one)."""

    def __init__(self, cfg, rotary: Rotary | None = None):
        super().__init__()
        h, d, e = cfg.heads, cfg.dim, cfg.d_head
        # Unit-variance residual entries give unit-variance q, k; the 1/√d_head on W_Q makes the
        # scores ⟨q, k⟩ unit-variance too, as the usual 1/√d_head in forward would.
        self.W_Q = nn.Parameter(
            torch.randn(h, d, e) / math.sqrt(d) / math.sqrt(e)
        )  # [heads d_model d_head]
        self.W_K = nn.Parameter(torch.randn(h, d, e) / math.sqrt(d))  # [heads d_model d_head]
        self.W_V = nn.Parameter(torch.randn(h, d, e) / math.sqrt(d))  # [heads d_model d_head]
        self.W_O = nn.Parameter(torch.randn(h, e, d) / math.sqrt(e * h))  # [heads d_head d_model]
        self.rotary = rotary
        if rotary is not None:
            table = rotary_table(rotary.theta, rotary.dims, cfg.n_ctx)
            cos = torch.tensor(table.cos.mid, dtype=torch.float64)  # [n_ctx dims/2]
            sin = torch.tensor(table.sin.mid, dtype=torch.float64)
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)

    def rotate(self, q: torch.Tensor) -> torch.Tensor:
        """q [batch heads pos d_head] turned by rotate_half on its first rotary.dims entries."""
        n, half = q.shape[-2], self.rotary.dims // 2
        cos, sin = self.cos[:n].to(q.dtype), self.sin[:n].to(q.dtype)  # [pos half]
        a, b, rest = q[..., :half], q[..., half : 2 * half], q[..., 2 * half :]
        return torch.cat([a * cos - b * sin, b * cos + a * sin, rest], dim=-1)

    def forward(self, x: torch.Tensor, allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q = torch.einsum("bpd,hde->bhpe", x, self.W_Q)  # [batch heads pos d_head]
        k = torch.einsum("bpd,hde->bhpe", x, self.W_K)
        v = torch.einsum("bpd,hde->bhpe", x, self.W_V)
        if self.rotary is not None:
            q, k = self.rotate(q), self.rotate(k)
        scores = (q @ k.transpose(-1, -2)).masked_fill(
            ~allowed, float("-inf")
        )  # [batch heads query key]
        pattern = torch.softmax(scores, dim=-1)
        out = torch.einsum("bhpe,hed->bpd", pattern @ v, self.W_O)  # [batch pos d_model]
        return out, pattern


def activate(h: torch.Tensor, kind: str) -> torch.Tensor:
    """The MLP activation `kind` (core.model.ACTIVATIONS): relu, gelu = x·Φ(x), gelu_tanh
    (GPT-2's), silu = x·σ(x)."""
    if kind == "relu":
        return torch.relu(h)
    if kind == "silu":
        return F_nn.silu(h)
    return F_nn.gelu(h, approximate="tanh" if kind == "gelu_tanh" else "none")


class FeedForward(nn.Module):
    """MLP with biases, as core.model.MLP: act(x W_in + b_in) W_out + b_out, act = cfg.activation;
    gated (llama): act(x W_gate) · (x W_in + b_in), the biases zero and frozen."""

    def __init__(self, cfg, gated: bool = False):
        super().__init__()
        self.activation = cfg.activation
        d, m = cfg.dim, cfg.d_mlp
        self.W_in = nn.Parameter(torch.randn(d, m) * math.sqrt(2.0 / d))  # [d_model d_mlp]
        self.b_in = nn.Parameter(torch.zeros(m), requires_grad=not gated)  # [d_mlp]
        self.W_out = nn.Parameter(
            torch.randn(m, d) / math.sqrt(m * 2 * cfg.layers)
        )  # [d_mlp d_model]
        self.b_out = nn.Parameter(torch.zeros(d), requires_grad=not gated)  # [d_model]
        self.W_gate = nn.Parameter(torch.randn(d, m) * math.sqrt(2.0 / d)) if gated else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = x @ self.W_in + self.b_in
        if self.W_gate is None:
            hidden = activate(hidden, self.activation)
        else:
            hidden = activate(x @ self.W_gate, self.activation) * hidden
        return hidden @ self.W_out + self.b_out


def norm_module(cfg) -> nn.Module:
    """The block family's normalisation (nn.Identity without one)."""
    if not cfg.layernorm:
        return nn.Identity()
    return RMSNorm(cfg.dim) if cfg.arch == "llama" else nn.LayerNorm(cfg.dim)


class Block(nn.Module):
    """One block of the family cfg.arch (module docstring)."""

    def __init__(self, cfg):
        super().__init__()
        self.attn = Attention(cfg, rotary_of(cfg.arch, cfg.d_head))
        self.mlp = FeedForward(cfg, gated=cfg.arch == "llama") if cfg.mlp else None
        self.parallel = cfg.arch == "neox" and cfg.mlp
        self.ln_attn = norm_module(cfg)
        self.ln_mlp = norm_module(cfg) if cfg.mlp else nn.Identity()

    def forward(self, x: torch.Tensor, allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        update, pattern = self.attn(self.ln_attn(x), allowed)
        if self.parallel:
            return x + update + self.mlp(self.ln_mlp(x)), pattern
        x = x + update
        if self.mlp is not None:
            x = x + self.mlp(self.ln_mlp(x))
        return x, pattern
