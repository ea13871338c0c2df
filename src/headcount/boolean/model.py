"""Exact one-layer models for symmetric Boolean functions (spec/boolean.md, "Model").

A head is stored by its exp-weights w_0, w_1 > 0 (not the scores s_b = log w_b) and values v_0, v_1
∈ Q^d, all as exact python-flint rationals (fmpq), so that rational weights give exact rational
outputs. On x ∈ {0,1}^n with t = |x| a head outputs

    Att_h(t) = ((n−t)·w_0·v_0 + t·w_1·v_1) / ((n−t)·w_0 + t·w_1),

the layer outputs the sum over heads, and the model answers sign g(layer output) for a d-variate
polynomial readout g; g = 0 is an error (sign 0). Outputs depend on x only through t, so checking
the n + 1 weights t = 0..n checks all 2^n inputs.

Speed: the exact batch evaluation goes through Lemma 7's rational form P(t)/Q(t) (fmpq_poly,
evaluated in C) and the readout as a flint fmpq_mpoly, so n = 1024 stays fast;
``layer_output_exact`` is the direct per-t formula the batch path is tested against.

A ``BooleanModel`` is what a file holds (layer, readout, info); the file format itself
(``save_boolean`` / ``load_boolean``: safetensors + exact rationals in the JSON metadata, bounded)
is model_file.py's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mpoly_ctx, fmpq_poly, fmpz, fmpz_mpoly_ctx, fmpz_poly

from headcount.common.errors import InputError
from headcount.common.validate import check_choice

MAX_RATIONAL_DIGITS = 10_000
# Digits of a numerator or a denominator in a rational string (a file's or the API's). The largest
# exact number headcount's constructions write (xor at n = H = 1024, D = 1) has 6,154 digits; the
# bound leaves room and caps what one string can cost. No exponent syntax: "1e10000000" is 10 bytes
# for ten million digits.
_RATIONAL = re.compile(r"([+-]?)(\d+)(?:/(\d+))?", re.ASCII)


def _rational_string(x: str) -> fmpq:
    """ "p" or "p/q" (an optional sign, ASCII digits, each part ≤ MAX_RATIONAL_DIGITS) as an exact
    fmpq; InputError for anything else: exponents, decimals, whitespace, "inf", "nan", a zero
    denominator."""
    m = _RATIONAL.fullmatch(x)
    shown = repr(x) if len(x) <= 40 else f"{x[:40]!r}… ({len(x):,} characters)"
    if m is None or (m.group(3) is not None and not m.group(3).strip("0")):
        raise InputError(f"not a rational number: {shown} (write p or p/q in digits, no exponent)")
    sign, p, q = m.groups()
    if (longest := max(len(p), len(q or ""))) > MAX_RATIONAL_DIGITS:
        raise InputError(
            f"rational {shown} has {longest:,} digits; allowed at most {MAX_RATIONAL_DIGITS:,}"
        )
    return fmpq(fmpz(p) * (-1 if sign == "-" else 1), fmpz(q or 1))


def to_fmpq(x) -> fmpq:
    """An exact rational from an int, Fraction, fmpz/fmpq, finite float (its exact value) or a
    string like "3/4" or "-2"; InputError for anything else (a bool included)."""
    if isinstance(x, fmpq):
        return x
    if isinstance(x, bool):
        raise InputError(f"not a number: {x!r}")
    if isinstance(x, (int, fmpz, np.integer)):
        return fmpq(int(x))
    if isinstance(x, float):
        if not np.isfinite(x):
            raise InputError(f"not a finite number: {x!r}")
        x = Fraction(x)
    if isinstance(x, str):
        return _rational_string(x)
    if isinstance(x, Fraction):
        return fmpq(x.numerator, x.denominator)
    raise InputError(f"not a rational number: {x!r}")


def fmpq_to_float(q: fmpq) -> float:
    """float64 value of q, ±inf on overflow and 0 on underflow (huge exact β's do overflow)."""
    try:
        return int(q.p) / int(q.q)
    except OverflowError:
        p, r = int(q.p), int(q.q)
        return float("inf") if (p > 0) else float("-inf") if abs(p) > r else 0.0


@dataclass(frozen=True)
class BooleanHead:
    """One head: exp-weights w0, w1 > 0 for tokens 0 and 1 and values v0, v1 ∈ Q^d (exact)."""

    w0: fmpq
    w1: fmpq
    v0: tuple[fmpq, ...]
    v1: tuple[fmpq, ...]

    def __post_init__(self):
        w0, w1 = to_fmpq(self.w0), to_fmpq(self.w1)
        if w0 <= 0 or w1 <= 0:
            raise InputError(f"head weights w0, w1 must be > 0, got {w0}, {w1}")
        v0, v1 = tuple(map(to_fmpq, self.v0)), tuple(map(to_fmpq, self.v1))
        if not v0 or len(v0) != len(v1):
            raise InputError(
                f"values v0, v1 need the same dimension d ≥ 1, got {len(v0)} and {len(v1)}"
            )
        for k, v in (("w0", w0), ("w1", w1), ("v0", v0), ("v1", v1)):
            object.__setattr__(self, k, v)

    @property
    def dim(self) -> int:
        return len(self.v0)

    def output(self, n: int, t: int) -> list[fmpq]:
        """Att_h at weight t, by the formula (exact)."""
        a, b = (n - t) * self.w0, t * self.w1
        z = a + b
        return [(a * x0 + b * x1) / z for x0, x1 in zip(self.v0, self.v1)]


@dataclass(frozen=True)
class BooleanLayer:
    """H ≥ 1 heads with a common value dimension d; the layer outputs the sum of the heads."""

    heads: tuple[BooleanHead, ...]

    def __post_init__(self):
        heads = tuple(self.heads)
        if not heads or len({h.dim for h in heads}) != 1:
            raise InputError("a layer needs at least one head, all with the same value dimension d")
        object.__setattr__(self, "heads", heads)

    @property
    def n_heads(self) -> int:
        """H, the number of heads."""
        return len(self.heads)

    @property
    def num_heads(self) -> int:
        """Old name of ``n_heads`` (learn/models.py still uses it); this alias goes in the next
        release."""
        return self.n_heads

    @property
    def dim(self) -> int:
        return self.heads[0].dim


@dataclass(frozen=True)
class Readout:
    """A d-variate polynomial g of degree ≤ ``degree`` (D): {exponent tuple K: coefficient c_K}.

    ``degree`` is the declared D (what Theorem 2 multiplies by); the terms may have lower total
    degree. Zero coefficients are dropped.
    """

    terms: Mapping[tuple[int, ...], fmpq]
    degree: int
    dim: int

    def __post_init__(self):
        if not isinstance(self.dim, int) or self.dim < 1:
            raise InputError(f"readout dimension d must be ≥ 1, got {self.dim!r}")
        if not isinstance(self.degree, int) or self.degree < 1:
            raise InputError(f"readout degree D must be ≥ 1, got {self.degree!r}")
        terms: dict[tuple[int, ...], fmpq] = {}
        for K, c in dict(self.terms).items():
            K = self._exponent(K)
            terms[K] = terms.get(K, fmpq(0)) + to_fmpq(c)
        object.__setattr__(self, "terms", {K: c for K, c in terms.items() if c != 0})

    def _exponent(self, K) -> tuple[int, ...]:
        K = tuple(int(k) for k in K)
        if len(K) != self.dim or min(K) < 0 or sum(K) > self.degree:
            raise InputError(
                f"exponent {K} needs {self.dim} entries ≥ 0 with total ≤ D = {self.degree}"
            )
        return K

    @property
    def homogeneous(self) -> bool:
        return len({sum(K) for K in self.terms}) <= 1

    def mpoly(self):
        """g as a flint fmpq_mpoly in variables z0..z{d−1}."""
        ctx = fmpq_mpoly_ctx.get(("z", self.dim), "lex")
        return ctx.from_dict(dict(self.terms))

    def __call__(self, z: Sequence[fmpq]) -> fmpq:
        if len(z) != self.dim:
            raise InputError(f"readout needs {self.dim} values, got {len(z)}")
        if not self.terms:
            return fmpq(0)
        return self.mpoly()(*z)


def _check_n_t(n: int, t: int | None = None) -> None:
    if not isinstance(n, int) or n < 1:
        raise InputError(f"n must be an integer ≥ 1, got {n!r}")
    if t is not None and not (isinstance(t, int) and 0 <= t <= n):
        raise InputError(f"t must be an integer in 0..n = 0..{n}, got {t!r}")


def check_dims(layer: BooleanLayer, readout: Readout) -> None:
    """InputError unless the readout takes the layer's d outputs."""
    if readout.dim != layer.dim:
        raise InputError(f"readout has d = {readout.dim} but the layer outputs d = {layer.dim}")


def layer_output_exact(layer: BooleanLayer, n: int, t: int) -> list[fmpq]:
    """Σ_h Att_h at weight t by the spec's formula, exactly."""
    _check_n_t(n, t)
    out = [fmpq(0)] * layer.dim
    for h in layer.heads:
        out = [a + b for a, b in zip(out, h.output(n, t))]
    return out


def rational_form(layer: BooleanLayer, n: int) -> tuple[list[fmpq_poly], fmpq_poly]:
    """Lemma 7 in t: the layer output is (P_1(t), …, P_d(t))/Q(t) with Q = Π_h Z_h and
    P = Σ_h A_h Π_{h'≠h} Z_h', where Z_h = (n−t)w_0 + t w_1 and A_h = (n−t)w_0 v_0 + t w_1 v_1."""
    _check_n_t(n)
    Z = [fmpq_poly([n * h.w0, h.w1 - h.w0]) for h in layer.heads]
    A = [
        [fmpq_poly([n * h.w0 * a, h.w1 * b - h.w0 * a]) for a, b in zip(h.v0, h.v1)]
        for h in layer.heads
    ]
    H = len(Z)
    # prefix/suffix products give Π_{h'≠h} Z_h' without division
    pre = [fmpq_poly([1])]
    for z in Z:
        pre.append(pre[-1] * z)
    suf = [fmpq_poly([1])] * (H + 1)
    for h in range(H - 1, -1, -1):
        suf[h] = suf[h + 1] * Z[h]
    others = [pre[h] * suf[h + 1] for h in range(H)]
    P = [sum((A[h][i] * others[h] for h in range(H)), fmpq_poly([])) for i in range(layer.dim)]
    return P, pre[H]


def layer_outputs_exact(layer: BooleanLayer, n: int) -> list[list[fmpq]]:
    """Exact layer outputs for t = 0..n (via the rational form, equal to ``layer_output_exact``)."""
    P, Q = rational_form(layer, n)
    out = []
    for t in range(n + 1):
        q = Q(t)
        out.append([p(t) / q for p in P])
    return out


def model_values_exact(
    layer: BooleanLayer, readout: Readout, n: int, method: str = "integer"
) -> list[fmpq]:
    """g(layer output) for t = 0..n, exactly.

    ``method="direct"`` evaluates g at the exact rational outputs P_i(t)/Q(t). ``"integer"``
    (default, same values, much faster at large n) scales P and Q by a common positive denominator L
    to integer polynomials P̃ = L·P, Q̃ = L·Q and the homogenized g_hom(z, z_0) = Σ_K c_K z^K
    z_0^{D−|K|} by the common denominator δ of its coefficients, composes once into the integer
    polynomial N(t) = g_hom(P̃(t), Q̃(t)) (flint, in C) and uses g(P̃/Q̃) = N(t) / (δ·Q̃(t)^D) —
    big-integer evaluation of one univariate polynomial, no rational arithmetic per term."""
    check_dims(layer, readout)
    check_choice("method", method, ("integer", "direct"))
    if not readout.terms:
        return [fmpq(0)] * (n + 1)
    if method == "direct":
        g = readout.mpoly()
        return [g(*z) for z in layer_outputs_exact(layer, n)]
    return _integer_values(layer, readout, n)


def as_mpoly(p, ctx):
    """A univariate flint polynomial as an mpoly in the one variable of ctx."""
    return ctx.from_dict({(k,): c for k, c in enumerate(p.coeffs()) if c != 0})


def dense_coefficients(coeffs: Mapping[tuple[int, ...], Any]) -> list:
    """Dense coefficients (constant first) of an mpoly in one variable, given by its to_dict()."""
    out = [0] * (max((K[0] for K in coeffs), default=-1) + 1)
    for K, c in coeffs.items():
        out[K[0]] = c
    return out


def _integer_values(layer: BooleanLayer, readout: Readout, n: int) -> list[fmpq]:
    """``model_values_exact``'s "integer" method (see there)."""
    P, Q = rational_form(layer, n)
    L = math.lcm(*(int(p.denom()) for p in P + [Q]))
    Pi = [(p * L).numer() for p in P]
    Qi = (Q * L).numer()
    D, d = readout.degree, readout.dim
    delta = math.lcm(*(int(c.q) for c in readout.terms.values()))
    ctx = fmpz_mpoly_ctx.get(("z", d + 1), "lex")
    gh = ctx.from_dict(
        {K + (D - sum(K),): int(c.p) * (delta // int(c.q)) for K, c in readout.terms.items()}
    )
    tctx = fmpz_mpoly_ctx.get(("t", 1), "lex")
    N = gh.compose(*[as_mpoly(p, tctx) for p in Pi + [Qi]], ctx=tctx).to_dict()
    numerator = fmpz_poly(dense_coefficients(N) or [0])
    return [fmpq(numerator(t), delta * Qi(t) ** D) for t in range(n + 1)]


def sign_of(x) -> int:
    """−1, 0 or +1: the sign of an exact number."""
    return (x > 0) - (x < 0)


def model_sign_exact(layer: BooleanLayer, readout: Readout, n: int) -> list[int]:
    """sign g(layer output) ∈ {−1, 0, +1} for t = 0..n (0: g is zero there, an error)."""
    return [sign_of(v) for v in model_values_exact(layer, readout, n)]


def layer_outputs_float(layer: BooleanLayer, n: int) -> np.ndarray:
    """[n+1, d] float64 layer outputs by the formula evaluated in float64 (weights rounded to
    float64)."""
    _check_n_t(n)
    t = np.arange(n + 1, dtype=np.float64)[:, None]
    out = np.zeros((n + 1, layer.dim))
    with np.errstate(all="ignore"):
        for h in layer.heads:
            w0, w1 = fmpq_to_float(h.w0), fmpq_to_float(h.w1)
            v0 = np.array([fmpq_to_float(x) for x in h.v0])[None, :]
            v1 = np.array([fmpq_to_float(x) for x in h.v1])[None, :]
            a, b = (n - t) * w0, t * w1
            out += (a * v0 + b * v1) / (a + b)
    return out


def model_values_float(layer: BooleanLayer, readout: Readout, n: int) -> np.ndarray:
    """g(layer output) for t = 0..n with everything in float64."""
    check_dims(layer, readout)
    z = layer_outputs_float(layer, n)
    D = readout.degree
    with np.errstate(all="ignore"):
        powers = np.ones((D + 1,) + z.shape)
        for k in range(1, D + 1):
            powers[k] = powers[k - 1] * z
        g = np.zeros(n + 1)
        for K, c in readout.terms.items():
            term = np.full(n + 1, fmpq_to_float(c))
            for i, k in enumerate(K):
                if k:
                    term = term * powers[k][:, i]
            g = g + term
    return g


def model_sign_float(layer: BooleanLayer, readout: Readout, n: int) -> list[int]:
    """float64 sign for t = 0..n; NaN counts as 0 (an error)."""
    g = model_values_float(layer, readout, n)
    return [0 if not np.isfinite(v) and np.isnan(v) else int(np.sign(v)) for v in g]


@dataclass(frozen=True)
class BooleanModel:
    """An exact Boolean model as a file holds it: the layer, its readout and free-form ``info``
    (e.g. the function and n it was built for)."""

    layer: BooleanLayer
    readout: Readout
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        check_dims(self.layer, self.readout)
        object.__setattr__(self, "info", dict(self.info))

    def __iter__(self) -> Iterator[Any]:
        """Unpacks as (layer, readout, info), the tuple load_boolean returned before, for callers
        not yet moved to the fields (tests/learn); this goes in the next release."""
        return iter((self.layer, self.readout, self.info))
