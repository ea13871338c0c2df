"""ψ_out of the one-layer construction: read the whole prefix back from the averaged vector, then
answer the induction query on it. The seed's ψ_out may be any function of (position, vector); this one is
fixed and documented so saved models stay data, not code.

Layout (d_model = n_ctx): ψ_in(i, σ) = (σ+1)·e_i and uniform causal attention, so position i (1-based)
reads y_j = (σ_j+1)/i for j < i and y_i = (σ_i+1)·(1 + 1/i). Rule: σ_j = round(i·y_j) − 1 (j < i),
σ_i = round(y_i·i/(i+1)) − 1; answer = σ_{j+1} for the latest j < i with σ_j = σ_i, else ⊥.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from headcount.core.model import register_decoder
from headcount.core.symbols import BOTTOM


def _readout_scale(n: int) -> np.ndarray:
    """[pos coord] factor turning y into (σ+1): i off the diagonal, i/(i+1) on it; 0 beyond i."""
    i = np.arange(1, n + 1, dtype=np.float64)[:, None]
    j = np.arange(1, n + 1)[None, :]
    return np.where(j < i, i, np.where(j == i, i / (i + 1), 0.0))


def _answer_from_prefixes(prefix: np.ndarray) -> np.ndarray:
    """prefix [batch pos pos]: row i holds the recovered σ_1..σ_i; the induction answer at each i."""
    n = prefix.shape[-1]
    own = np.diagonal(prefix, axis1=-2, axis2=-1)[..., None]  # [batch pos 1]
    earlier = np.tri(n, k=-1, dtype=bool)  # j < i
    match = (prefix == own) & earlier
    last = n - 1 - np.argmax(match[..., ::-1], axis=-1)  # latest matching j (0-based)
    nxt = np.minimum(last + 1, n - 1)
    answer = np.take_along_axis(prefix, nxt[..., None], axis=-1)[..., 0]
    return np.where(match.any(axis=-1), answer, BOTTOM).astype(np.int64)


@register_decoder
@dataclass(frozen=True, eq=False)
class InductionReadoutDecoder:
    n_ctx: int
    kind: ClassVar[str] = "induction_readout"

    def _check(self, x: np.ndarray) -> None:
        if x.shape[-1] != self.n_ctx:
            raise ValueError(f"induction_readout needs d_model = n_ctx = {self.n_ctx}, got {x.shape[-1]}")

    def decode(self, x: np.ndarray) -> np.ndarray:
        self._check(x)
        n = x.shape[-2]
        scaled = x[..., :n].astype(np.float64) * _readout_scale(n)
        return _answer_from_prefixes(np.rint(scaled).astype(np.int64) - 1)

    def decode_bounds(self, mid: np.ndarray, rad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self._check(mid)
        n = mid.shape[-2]
        scale = _readout_scale(n)
        lo = np.nextafter((mid[..., :n] - rad[..., :n]) * scale, -np.inf)
        hi = np.nextafter((mid[..., :n] + rad[..., :n]) * scale, np.inf)
        # decided where the whole interval rounds to one integer, away from the half-way points
        same = np.floor(lo + 0.5) == np.floor(hi + 0.5)
        used = scale > 0
        decided = np.all(same | ~used, axis=-1)
        return self.decode(mid), decided

    def tensors(self) -> dict[str, np.ndarray]:
        return {}

    def config(self) -> dict[str, Any]:
        return {"n_ctx": self.n_ctx}

    @classmethod
    def from_parts(cls, tensors: dict[str, np.ndarray], config: dict[str, Any]) -> InductionReadoutDecoder:
        return cls(int(config["n_ctx"]))
