"""The model file's entries for normalisations and the Llama / GPT-NeoX parts (issue 32), written
and read back by core.model.files. A plain or GPT-2 model's file is unchanged; each newer part
appears only where a model has it:

    "ln1" | "ln2" | "ln_final": {"eps": e}                       LayerNorm: tensors .w and .b
                                {"eps": e, "kind": "rmsnorm"}      RMSNorm: tensor .w only
                                (+ "offset": 1 for Gemma's 1 + w)
    "rotary": {"theta": θ, "dims": even ≥ 2, "layout": "rotate_half" | "interleaved"}
    "gated": true        the MLP's tensor layers.{l}.mlp.W_gate [d_model d_mlp]
    "gate_bias": true    and layers.{l}.mlp.b_gate [d_mlp]
    "parallel": true     attention and MLP read the same residual (GPT-NeoX)
    top level "positions": "qk"   shortformer positions (core.model.Transformer.positions)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.common.files import invalid, short_repr
from headcount.core.model.parts import ROTARY_LAYOUTS, LayerNorm, Norm, RMSNorm, Rotary

_MODEL = "headcount"


def norm_entry(prefix: str, ln: Norm, tensors: dict[str, np.ndarray]) -> dict[str, Any]:
    """The config entry of a normalisation, its tensors added to `tensors` under `prefix`."""
    tensors[f"{prefix}.w"] = ln.w
    if isinstance(ln, RMSNorm):
        entry: dict[str, Any] = {"eps": ln.eps, "kind": "rmsnorm"}
        return entry | ({"offset": ln.offset} if ln.offset else {})
    tensors[f"{prefix}.b"] = ln.b
    return {"eps": ln.eps}


@dataclass(frozen=True)
class NormSpec:
    """What a normalisation's config entry says."""

    eps: float
    rms: bool = False
    offset: float = 0.0

    def tensor_names(self, prefix: str) -> list[str]:
        return [f"{prefix}.w"] if self.rms else [f"{prefix}.w", f"{prefix}.b"]

    def build(self, prefix: str, tensors: dict[str, np.ndarray]) -> Norm:
        if self.rms:
            return RMSNorm(tensors[f"{prefix}.w"], self.eps, self.offset)
        return LayerNorm(tensors[f"{prefix}.w"], tensors[f"{prefix}.b"], self.eps)


def norm_spec(entry: Any, what: str, path) -> NormSpec:
    """A normalisation's config entry {"eps": positive number} (+ "kind": "rmsnorm", "offset")."""
    eps = entry.get("eps") if isinstance(entry, dict) else None
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not (0 < eps < math.inf):
        raise invalid(
            path,
            _MODEL,
            f'{what} must be an object {{"eps": a positive number}}, got {short_repr(entry)}',
        )
    kind = entry.get("kind", "layernorm")
    offset = entry.get("offset", 0)
    if kind not in ("layernorm", "rmsnorm") or offset not in (0, 1) or isinstance(offset, bool):
        raise invalid(
            path,
            _MODEL,
            f"{what}: 'kind' must be layernorm or rmsnorm and 'offset' 0 or 1, got "
            f"{short_repr(entry)}",
        )
    if offset and kind != "rmsnorm":
        raise invalid(path, _MODEL, f"{what}: an 'offset' belongs to an rmsnorm")
    return NormSpec(float(eps), kind == "rmsnorm", float(offset))


def rotary_spec(entry: Any, what: str, path) -> Rotary:
    """A layer's "rotary" entry as the part it describes."""
    if not isinstance(entry, dict) or set(entry) - {"theta", "dims", "layout"}:
        raise invalid(
            path, _MODEL, f"{what} must be {{theta, dims, layout}}, got {short_repr(entry)}"
        )
    theta, dims = entry.get("theta"), entry.get("dims")
    layout = entry.get("layout", "rotate_half")
    good = (
        isinstance(theta, (int, float))
        and not isinstance(theta, bool)
        and math.isfinite(theta)
        and theta > 0
        and isinstance(dims, int)
        and not isinstance(dims, bool)
        and 2 <= dims <= 2**16
        and dims % 2 == 0
        and layout in ROTARY_LAYOUTS
    )
    if not good:
        raise invalid(
            path,
            _MODEL,
            f"{what}: theta must be a positive finite number, dims an even integer 2..65536, "
            f"layout one of {list(ROTARY_LAYOUTS)}; got {short_repr(entry)}",
        )
    return Rotary(float(theta), dims, layout)
