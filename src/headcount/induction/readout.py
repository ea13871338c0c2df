"""ψ_out of the one-layer models: read the whole prefix back from the averaged vector, then
answer the induction query on it. The seed's ψ_out may be any function of (position, vector); this
one is fixed and documented so saved models stay data, not code.

Layout (d_model = n_ctx + 1): ψ_in(i, σ) = (σ+1)·e_{n+1} and Ṽ[j, σ] = (σ+1)·e_j with uniform causal
attention, so position i (1-based) reads y_j = (σ_j+1)/i for every j ≤ i. Rule: σ_j = ⌊i·y_j + ½⌋ −
1 (round half up), then answer = σ_{j+1} for the latest j < i with σ_j = σ_i, else ⊥.

Packed layout (decoder kind "packed_induction_readout", the family of the minimal one-layer search,
induction.lower_bound.minimal): `slots` coordinates, d_model = slots. Position j (0-based) is digit
j mod L of slot ⌊j/L⌋, L = ⌈n_ctx/slots⌉, in base B = alphabet + offset (offset 0 or 1):
Ṽ[j, σ] = (σ + offset)·B^(j mod L)·e_⌊j/L⌋ and uniform causal attention, so position i reads
X_c = ⌊i·y_c + ½⌋ = Σ (σ_j + offset)·B^(j mod L) over its slot's j ≤ i, and σ_j = digit − offset
(position i knows which j ≤ i it has read, so offset 0 loses nothing). Fewer slots, larger numbers:
the precision needed grows as the width shrinks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from headcount.common.errors import InputError
from headcount.common.validate import check_int
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


def _one_integer(y: np.ndarray, r: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Whether every value in [y − r, y + r]·scale reads the same integer ⌊·+ ½⌋ (scale: integers
    ≤ n + 1). Products of a dyadic value by an integer ≤ n are exact when they fit 53 bits; else
    the ends are widened by two ulps (the ± and the product each round by half an ulp of a value ≤
    the product)."""
    with np.errstate(invalid="ignore", over="ignore"):
        lo, hi = (y - r) * scale, (y + r) * scale
        magnitude_bits = float(np.ceil(np.log2(np.abs(y).max(initial=0) * (scale.max() + 1) + 2)))
    exact = bool(np.isfinite(magnitude_bits)) and fraction_bits(y) + magnitude_bits + 1 < 53
    widen = (r > 0) | (not exact)
    wide_lo, wide_hi = outward(lo, hi, ulps=2)
    lo, hi = np.where(widen, wide_lo, lo), np.where(widen, wide_hi, hi)
    return round_half_up(lo) == round_half_up(hi)


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
        same = _one_integer(mid[..., :n], rad[..., :n], scale)
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


MAX_PACKED_BITS = 52  # B^L (a slot's largest reading) must stay exact in float64


@register_decoder
@dataclass(frozen=True, eq=False)
class PackedInductionReadout:
    """The packed layout (module docstring): `slots` coordinates, base `base` digits, token
    codes σ + `offset`."""

    n_ctx: int
    slots: int
    base: int
    offset: int = 1
    kind: ClassVar[str] = "packed_induction_readout"

    def __post_init__(self) -> None:
        n = check_int("n_ctx", self.n_ctx, 1)
        check_int("slots", self.slots, 1, n)
        check_int("base", self.base, 2, 1 << 16)
        check_int("offset", self.offset, 0, 1)
        if self.length * np.log2(self.base) > MAX_PACKED_BITS:
            raise InputError(
                f"a slot of {self.length} base-{self.base} digits exceeds 2^{MAX_PACKED_BITS}: "
                "use more slots or a smaller alphabet"
            )

    @property
    def length(self) -> int:
        """L: positions per slot."""
        return -(-self.n_ctx // self.slots)

    def _check(self, x: np.ndarray) -> None:
        if x.shape[-1] != self.slots or x.shape[-2] > self.n_ctx:
            raise InputError(
                f"packed_induction_readout needs d_model = slots = {self.slots} and at most "
                f"{self.n_ctx} positions, got {x.shape[-2]} × {x.shape[-1]}"
            )

    def _prefixes(self, X: np.ndarray) -> np.ndarray:
        """X [… pos slots] integer readings: prefix [… pos pos] of σ_j = digit − offset."""
        n = X.shape[-2]
        j = np.arange(n)
        digits = (X[..., j // self.length] // self.base ** (j % self.length)) % self.base
        return digits.astype(np.int64) - self.offset

    def decode(self, x: np.ndarray) -> np.ndarray:
        self._check(x)
        i = np.arange(1, x.shape[-2] + 1, dtype=np.float64)[:, None]
        X = round_half_up(x.astype(np.float64) * i).astype(np.int64)
        return _answer_from_prefixes(self._prefixes(X))

    def decode_bounds(self, mid: np.ndarray, rad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self._check(mid)
        scale = np.broadcast_to(np.arange(1.0, mid.shape[-2] + 1)[:, None], mid.shape[-2:])
        decided = np.all(_one_integer(mid, rad, scale), axis=-1)
        return self.decode(mid), decided

    def decode_grid(self, x: np.ndarray, bits: int, positions) -> np.ndarray:
        """The fixed:`bits` outputs at `positions` from the exact residual x [pos slots] (integers:
        the values times 2^bits): X_c = ⌊(i+1)·x_c/2^bits + ½⌋ exactly, then the digits."""
        self._check(x)
        n = x.shape[0]
        X = np.zeros((n, self.slots), dtype=object)
        half = 1 << (bits - 1)
        for i in positions:
            for c in range(self.slots):
                X[i, c] = ((i + 1) * int(x[i, c]) + half) >> bits
        j = np.arange(n)
        prefix = np.array(
            [[(int(X[i, jj // self.length]) // self.base ** (jj % self.length)) % self.base
              - self.offset for jj in j] for i in range(n)],
            dtype=np.int64,
        )  # fmt: skip
        return _answer_from_prefixes(prefix[None])[0]

    def tensors(self) -> dict[str, np.ndarray]:
        return {}

    def config(self) -> dict[str, Any]:
        return {"n_ctx": self.n_ctx, "slots": self.slots, "base": self.base, "offset": self.offset}

    @classmethod
    def from_parts(
        cls, tensors: dict[str, np.ndarray], config: dict[str, Any]
    ) -> PackedInductionReadout:
        return cls(
            config.get("n_ctx"), config.get("slots"), config.get("base"), config.get("offset")
        )
