"""The reference pair for the Hugging Face families of issue 32, for tests: an independent float64
evaluator written from hf_architecture's reading of a config (plain NumPy, top to bottom), and
transformers made float64 throughout.

Why the second: transformers' llama-style modules compute RMSNorm in float32 (`hidden_states.to(
torch.float32)`, gemma's `x.float()`) and the rotary tables from a float32 inv_freq and float32
angles, even in a model converted with .double(); its "float64" hidden states then differ from the
float64 function by ~1e-7 relative. `float64_transformers` replaces those modules' forward with the
same formulas in float64, so agreement can be asked at 1e-10.
"""

from __future__ import annotations

import math
import types

import numpy as np
from scipy import special

from headcount.interop.hf_architecture import Architecture
from headcount.interop.hf_layout import HfLayout


def float64_transformers(model) -> None:
    """Make `model` (a transformers model, converted to float64) compute its RMSNorms and rotary
    tables in float64 (module docstring). In place."""
    import torch

    def rms_forward(self, x):
        offset = 1.0 if type(self).__name__.startswith("Gemma") else 0.0
        x = x.double()
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon_)
        return y * (offset + self.weight.double())

    def rotary_forward(self, x, position_ids):
        dims = 2 * self.inv_freq.shape[0]
        theta = self.config.rope_parameters["rope_theta"]
        exponent = torch.arange(0, dims, 2, dtype=torch.float64) / dims
        inv = 1.0 / (torch.tensor(float(theta), dtype=torch.float64) ** exponent)
        freqs = position_ids[..., None].double() * inv
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    for module in model.modules():
        name = type(module).__name__
        if name.endswith("RMSNorm"):
            module.variance_epsilon_ = getattr(module, "variance_epsilon", None) or module.eps
            module.forward = types.MethodType(rms_forward, module)
        elif name.endswith("RotaryEmbedding"):
            module.forward = types.MethodType(rotary_forward, module)


def _activation(kind: str):
    if kind == "silu":
        return lambda x: x / (1 + np.exp(-x))
    if kind == "gelu":
        return lambda x: 0.5 * x * special.erfc(-x / math.sqrt(2))
    if kind == "gelu_tanh":
        return lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return lambda x: np.maximum(x, 0)


class Reference:
    """The network of `arch` with the weights `tensors` (name → float64 array) found by `layout`."""

    def __init__(self, arch: Architecture, layout: HfLayout, tensors: dict[str, np.ndarray]):
        self.arch, self.layout, self.t = arch, layout, tensors
        self.act = _activation(arch.activation)

    def _w(self, layer: int, part: str) -> np.ndarray | None:
        return self.t.get(self.layout.layer(layer, part))

    def _linear(self, x: np.ndarray, layer: int, name: str) -> np.ndarray:
        w, b = self._w(layer, f"{name}.weight"), self._w(layer, f"{name}.bias")
        return x @ w.T + (0 if b is None else b)

    def _norm(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        a = self.arch
        if a.norm == "layernorm":
            c = x - x.mean(-1, keepdims=True)
            return c / np.sqrt((c * c).mean(-1, keepdims=True) + a.norm_eps) * w + b
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + a.norm_eps) * (a.norm_offset + w)

    def _layer_norm(self, x: np.ndarray, layer: int, name: str) -> np.ndarray:
        return self._norm(x, self._w(layer, f"{name}.weight"), self._w(layer, f"{name}.bias"))

    def _rotate(self, x: np.ndarray) -> np.ndarray:
        """x [heads n d_head] with rotate_half on its first rotary.dims entries."""
        rotary = self.arch.rotary
        half = rotary.dims // 2
        inv = 1.0 / rotary.theta ** (np.arange(0, rotary.dims, 2) / rotary.dims)
        angles = np.arange(x.shape[1])[:, None] * inv  # [n half]
        cos, sin = np.cos(angles), np.sin(angles)
        x1, x2 = x[..., :half], x[..., half : rotary.dims]
        turned = np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
        return np.concatenate([turned, x[..., rotary.dims :]], axis=-1)

    def _qkv(self, x: np.ndarray, layer: int) -> tuple[np.ndarray, ...]:
        a, n = self.arch, x.shape[0]
        if a.family == "gpt_neox":  # per head: its q, k and v rows one after another
            qkv = self._linear(x, layer, "attention.query_key_value").reshape(n, a.heads, 3, -1)
            return tuple(qkv[:, :, i].transpose(1, 0, 2) for i in range(3))
        q = self._linear(x, layer, "self_attn.q_proj").reshape(n, a.heads, -1).transpose(1, 0, 2)
        k = self._linear(x, layer, "self_attn.k_proj").reshape(n, a.kv_heads, -1).transpose(1, 0, 2)
        v = self._linear(x, layer, "self_attn.v_proj").reshape(n, a.kv_heads, -1).transpose(1, 0, 2)
        group = a.heads // a.kv_heads  # head h reads key/value head h // group
        return q, np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)

    def _attention(self, x: np.ndarray, layer: int) -> np.ndarray:
        a, n = self.arch, x.shape[0]
        q, k, v = self._qkv(x, layer)
        q, k = self._rotate(q), self._rotate(k)
        scores = q @ k.transpose(0, 2, 1) * a.attn_scale  # [heads n n]
        visible = np.tril(np.ones((n, n), dtype=bool))
        if a.window is not None:
            visible &= np.subtract.outer(np.arange(n), np.arange(n)) < a.window
        scores = np.where(visible, scores, -np.inf)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        out = (weights / weights.sum(-1, keepdims=True)) @ v  # [heads n d_head]
        out = out.transpose(1, 0, 2).reshape(n, -1)
        return self._linear(
            out, layer, "attention.dense" if a.family == "gpt_neox" else "self_attn.o_proj"
        )

    def _mlp(self, x: np.ndarray, layer: int) -> np.ndarray:
        if self.arch.gated:
            gate = self.act(self._linear(x, layer, "mlp.gate_proj"))
            return self._linear(
                gate * self._linear(x, layer, "mlp.up_proj"), layer, "mlp.down_proj"
            )
        hidden = self.act(self._linear(x, layer, "mlp.dense_h_to_4h"))
        return self._linear(hidden, layer, "mlp.dense_4h_to_h")

    def run(self, tokens: list[int]) -> tuple[list[np.ndarray], np.ndarray]:
        """(the residual stream after the embedding and after each layer, the last one normed as
        transformers' hidden_states are; the logits), each [n …]."""
        a, prefix = self.arch, self.layout.prefix
        embedding = "embed_in.weight" if a.family == "gpt_neox" else "embed_tokens.weight"
        E = self.t[prefix + embedding]
        x = E[np.asarray(tokens)] * a.embedding_scale
        states = [x]
        for layer in range(a.layers):
            attn = self._attention(self._layer_norm(x, layer, "input_layernorm"), layer)
            if a.parallel:
                x = (
                    x
                    + attn
                    + self._mlp(self._layer_norm(x, layer, "post_attention_layernorm"), layer)
                )
            else:
                x = x + attn
                x = x + self._mlp(self._layer_norm(x, layer, "post_attention_layernorm"), layer)
            states.append(x)
        final = "final_layer_norm" if a.family == "gpt_neox" else "norm"
        states[-1] = self._norm(
            x, self.t[f"{prefix}{final}.weight"], self.t.get(f"{prefix}{final}.bias")
        )
        W_U = self.t[self.layout.readout] if self.layout.readout else E
        return states, states[-1] @ W_U.T
