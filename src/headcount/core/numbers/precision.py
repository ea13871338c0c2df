"""Precision modes (spec/README.md, "Precision semantics").

* ``fixed:p`` — the seed's notion: every *embedding output* (the residual vector ψ_in(i, σ_i), every
  query/key/value vector, every MLP output) and every *attention-head output* is rounded to the
  nearest multiple of 2^-p (ties to even) and clipped to [-2^p, 2^p]. Everything between those
  points (scores, softmax, sums) is real arithmetic, evaluated in float64 (and bounded rigorously by
  :mod:`headcount.core.passes.bounds` when a certificate is asked for). The GPT-2 block adds
  rounding points where a vector is handed on, as the seed's are: every LayerNorm output (ln1 before
  the heads, ln2 before the MLP, ln_final before the decoder) is rounded like the embedding. Biases
  are weights: q = round(LN1(x) W_Q + b_Q) (likewise k, v) and an MLP output is round(act(LN2(x)
  W_in + b_in) W_out + b_out) — the hidden layer act(·) itself is real; b_O is added once,
  unrounded, to the heads' sum of rounded outputs; the attention scale multiplies the exact product
  ⟨q, k⟩ of the rounded q and k (the score is real, as in the seed); GELU is the exact real
  function.
* ``float16`` / ``bfloat16`` / ``float32`` / ``float64`` — the whole forward pass in that type:
  weights and every intermediate tensor are rounded to the type after each operation. float16 and
  bfloat16 accumulate in float32 (as tensor hardware does) and round each result.
* ``exact`` — no rounding points: the real-arithmetic model, evaluated in float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from headcount.common.errors import InputError

IEEE_DTYPES = ("float16", "bfloat16", "float32", "float64")


@dataclass(frozen=True)
class Precision:
    """A precision mode: ``kind`` is "fixed", "exact" or an IEEE dtype name; ``bits`` is p for
    fixed."""

    kind: str
    bits: int | None = None

    @property
    def name(self) -> str:
        return f"fixed:{self.bits}" if self.kind == "fixed" else self.kind

    @property
    def compute_dtype(self) -> type:
        """The numpy type the arithmetic runs in."""
        return np.float64 if self.kind in ("fixed", "exact", "float64") else np.float32

    def at_rounding_point(self, x: np.ndarray) -> np.ndarray:
        """Apply the seed's rounding at an embedding/head output (fixed:p), else the dtype cast."""
        if self.kind == "fixed":
            return round_fixed(x, self.bits)
        return self.after_op(x)

    def after_op(self, x: np.ndarray) -> np.ndarray:
        """Round the result of any operation to the mode's storage type."""
        if self.kind == "float16":
            return x.astype(np.float16).astype(np.float32)
        if self.kind == "bfloat16":
            return round_bfloat16(x)
        return x


def parse_precision(text: str) -> Precision:
    """Parse "fixed:p", "exact" or an IEEE dtype name; InputError with the allowed forms
    otherwise."""
    text = text.strip()
    if text in IEEE_DTYPES or text == "exact":
        return Precision(text)
    if text.startswith("fixed:"):
        try:
            bits = int(text.split(":", 1)[1])
        except ValueError:
            bits = -1
        if 1 <= bits <= 60:
            return Precision("fixed", bits)
        raise InputError(f"bad precision {text!r}: fixed:p needs an integer p in 1..60")
    raise InputError(
        f"unknown precision {text!r}: use fixed:p (1 ≤ p ≤ 60), exact, {', '.join(IEEE_DTYPES)}"
    )


FLOAT64 = Precision("float64")
EXACT = Precision("exact")


def fixed(bits: int) -> Precision:
    return Precision("fixed", bits)


def round_fixed(x: np.ndarray, bits: int) -> np.ndarray:
    """Nearest multiple of 2^-bits (ties to even), clipped to [-2^bits, 2^bits]. Exact in
    float64."""
    scale = float(2.0**bits)
    return np.clip(np.round(np.asarray(x, dtype=np.float64) * scale) / scale, -scale, scale)


def round_bfloat16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 (round to nearest even on the top 16 bits), kept as
    float32."""
    x32 = np.ascontiguousarray(x, dtype=np.float32)
    bits = x32.view(np.uint32).astype(np.uint64)
    rounding = 0x7FFF + ((bits >> 16) & 1)
    rounded = ((bits + rounding) >> 16) << 16
    out = rounded.astype(np.uint32).view(np.float32)
    # NaN/inf pass through unchanged (the bias above could turn a NaN payload into inf).
    return np.where(np.isfinite(x32), out, x32)
