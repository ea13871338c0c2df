"""ψ_out of the one-layer construction: read the whole prefix back from the averaged vector, then
answer the induction query on it. The seed's ψ_out may be any function of (position, vector); this
one is fixed and documented so saved models stay data, not code.

Layout (d_model = n_ctx + 1): ψ_in(i, σ) = (σ+1)·e_{n+1} and Ṽ[j, σ] = (σ+1)·e_j with uniform causal
attention, so position i (1-based) reads y_j = (σ_j+1)/i for every j ≤ i. Rule: σ_j = ⌊i·y_j + ½⌋ −
1 (round half up), then answer = σ_{j+1} for the latest j < i with σ_j = σ_i, else ⊥.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from headcount.common.errors import InputError
from headcount.core.model import BOTTOM, register_decoder
from headcount.core.numbers import fraction_bits, outward


def _readout_scale(n: int) -> np.ndarray:
    """[pos coord] factor turning y_j into σ_j + 1: the position i for j ≤ i, 0 beyond."""
    i = np.arange(1, n + 1, dtype=np.float64)[:, None]
    return np.where(np.arange(1, n + 1)[None, :] <= i, i, 0.0)


def round_half_up(x: np.ndarray) -> np.ndarray:
    """⌊x + ½⌋ without rounding x + ½ (which can carry a value just below a half up to the next
    integer)."""
    whole = np.floor(x)
    return whole + (x - whole >= 0.5)  # x − ⌊x⌋ is exact in float64


def _answer_from_prefixes(prefix: np.ndarray) -> np.ndarray:
    """prefix [batch pos pos]: row i holds the recovered σ_1..σ_i; the induction answer at each
    i."""
    n = prefix.shape[-1]
    own = np.diagonal(prefix, axis1=-2, axis2=-1)[..., None]  # [batch pos 1]
    match = (prefix == own) & np.tri(n, k=-1, dtype=bool)  # j < i
    last = n - 1 - np.argmax(match[..., ::-1], axis=-1)  # latest matching j (0-based)
    answer = np.take_along_axis(prefix, np.minimum(last + 1, n - 1)[..., None], axis=-1)[..., 0]
    return np.where(match.any(axis=-1), answer, BOTTOM).astype(np.int64)


@register_decoder
@dataclass(frozen=True, eq=False)
class InductionReadoutDecoder:
    n_ctx: int
    kind: ClassVar[str] = "induction_readout"

    def _check(self, x: np.ndarray) -> None:
        if x.shape[-1] != self.n_ctx + 1:
            raise InputError(
                f"induction_readout needs d_model = n_ctx + 1 = {self.n_ctx + 1}, got {x.shape[-1]}"
            )

    def decode(self, x: np.ndarray) -> np.ndarray:
        self._check(x)
        n = x.shape[-2]
        scaled = x[..., :n].astype(np.float64) * _readout_scale(n)
        return _answer_from_prefixes(round_half_up(scaled).astype(np.int64) - 1)

    def decode_bounds(self, mid: np.ndarray, rad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self._check(mid)
        n = mid.shape[-2]
        scale = _readout_scale(n)
        y, r = mid[..., :n], rad[..., :n]
        with np.errstate(invalid="ignore", over="ignore"):
            lo, hi = (y - r) * scale, (y + r) * scale
            # Products of a dyadic value by an integer ≤ n are exact when they fit 53 bits; else
            # widen by two ulps (the ± and the product each round by half an ulp of a value ≤ the
            # product).
            magnitude_bits = float(np.ceil(np.log2(np.abs(y).max(initial=0) * (n + 1) + 2)))
        exact = bool(np.isfinite(magnitude_bits)) and fraction_bits(y) + magnitude_bits + 1 < 53
        widen = (r > 0) | (not exact)
        wide_lo, wide_hi = outward(lo, hi, ulps=2)
        lo, hi = np.where(widen, wide_lo, lo), np.where(widen, wide_hi, hi)
        same = round_half_up(lo) == round_half_up(hi)  # the whole interval reads one integer
        decided = np.all(same | (scale == 0), axis=-1)
        return self.decode(mid), decided

    def decode_grid(self, x: np.ndarray, bits: int, positions) -> np.ndarray:
        """The fixed:`bits` outputs at `positions` of one sequence from its exact residual x [pos
        d_model] (integers: the values times 2^bits): σ_j = ⌊i·y_j + ½⌋ − 1 exactly (i 1-based, y_j
        = x_j / 2^p). core.passes.exact_fixed calls it; other positions come back as whatever the
        prefixes give (ignored)."""
        n, d_model = x.shape
        if d_model != self.n_ctx + 1:
            raise InputError(
                f"induction_readout needs d_model = n_ctx + 1 = {self.n_ctx + 1}, got {d_model}"
            )
        prefix = np.full((1, n, n), -1, dtype=np.int64)
        half = 1 << (bits - 1)
        for i in positions:
            for j in range(i + 1):
                prefix[0, i, j] = (((i + 1) * int(x[i, j]) + half) >> bits) - 1
        return _answer_from_prefixes(prefix)[0]

    def tensors(self) -> dict[str, np.ndarray]:
        return {}

    def config(self) -> dict[str, Any]:
        return {"n_ctx": self.n_ctx}

    @classmethod
    def from_parts(
        cls, tensors: dict[str, np.ndarray], config: dict[str, Any]
    ) -> InductionReadoutDecoder:
        return cls(int(config["n_ctx"]))
