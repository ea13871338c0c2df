"""The INDEX reduction (seed 000 §3 and Appendix A) as a program: Alice's message, Bob's decoding, a
check that Bob reproduces the model, and a counterexample finder built on the pigeonhole argument.

Setting. A one-layer model in table form at fixed:p, k ≥ 1, n = 2k+1, and the INDEX input
σ(f, i*) = (e_1, f_1, …, e_k, f_k, ?) (token 2 is '?', e_i = ? iff i = i*, else 0). At the last position
N = n, head h reads the query q = round_p(Q̃[h, N, ?]); position j contributes the score
s_j = ⟨q, round_p(K̃[h, j, σ_j])⟩ and the value v_j = round_p(Ṽ[h, j, σ_j]) ∈ R^m (m = d_model). The head
output is Y = Σ_j e^{s_j} v_j / Σ_j e^{s_j}, rounded to the 2^-p grid (round_p); the decoder reads
round_p(ψ_in(N, ?)) + Σ_h round_p(Y_h). These are exactly the rounding points of
:func:`headcount.core.table.table_residual`, so Bob's computation mirrors the model's, op for op, from
the head outputs on.

Protocol. Alice's positions are the even j = 2, 4, …, 2k (she knows f); Bob's are the odd j = 1, …, 2k−1
(he knows i*, hence every e_i) and N (known to both). Per head Alice computes Z_A = Σ_A e^{s_j},
A_A = Σ_A e^{s_j} v_j, r = A_A/Z_A ∈ R^m and s = log Z_A, and sends r̂, ŝ: r and s rounded to the nearest
multiple of ε = 2^{-3p}. Bob computes b = A_B/Z_B over his positions, λ̂ = e^ŝ/(e^ŝ + Z_B) and
Ỹ = λ̂ r̂ + (1−λ̂) b = (r̂ e^ŝ + A_B)/(e^ŝ + Z_B), rounds it like a head output, adds round_p(ψ_in(N, ?)),
sums the heads in the model's order and applies ψ_out at N. All of it in log-sum-exp form (λ̂ is a
logistic function of ŝ − log Z_B), so large scores neither overflow nor underflow.

Bob's error (per head, per coordinate). With λ = e^s/(e^s + Z_B), the exact head output is
Y = λ r + (1−λ) b, and

    Y − Ỹ = λ̂ (r − r̂) + (λ − λ̂)(r − b).

Rounding to nearest gives |r − r̂| ≤ ε/2 and |s − ŝ| ≤ ε/2; λ = sigmoid(s − log Z_B) and the logistic
function is 1/4-Lipschitz, so |λ − λ̂| ≤ ε/8. Hence

    |Y − Ỹ| ≤ λ̂·ε/2 + (ε/8)·|r − b| ≤ (ε/2)·(1 + |r − b|/4),

and Bob can evaluate a bound himself from what he knows, using |r − b| ≤ |r̂ − b| + ε/2:
E = λ̂·ε/2 + (ε/8)(|r̂ − b| + ε/2). This is a little sharper than the seed's
Appendix A (|T1| + |T2| + |T3| ≤ 2^p ε/4 + ε + 1.25·2^p ε); with |v| ≤ 2^p (fixed:p clips) it is at most
2^{-3p-1} + 2^{-2p-2}, far below the 2^{-p} grid. So round_p(Ỹ) = round_p(Y) unless Y lies within the bound
of a rounding tie point (an odd multiple of 2^{-p-1}): only then can Bob's output differ from the model's.

Float evaluation. Everything above runs in float64, so three more errors enter, each bounded rigorously
(u = 2^-53, γ_d = d·u/(1 − d·u), |fl(a∘b) − a∘b| ≤ u|fl(a∘b)|; libm's exp and log within 4 ulp and scipy's
expit = 1/(1 + e^{−x}) within 16u relative — the assumptions of :mod:`headcount.core.bounds`):

* a weighted average Σ_j w̃_j v_j / Σ_j w̃_j over N terms with w̃_j = exp(fl(s̃_j − s̃_top)) (Alice's r and
  Bob's b, N = k and k+1): each float score errs by σ ≤ γ_d·Σ|q_i k_i|, so each weight
  by a factor e^{±η}(1 ± 8u), η = 2σ + u·min(spread, 746), ρ = that factor − 1; weights that underflow are
  off by < 2^-1070 absolutely against a total ≥ 1 (the top weight is exactly 1). Then, with V the largest
  |v_j| and Z the exact total, the average errs by ≤ 2V·((1+ρ)γ_N + ρ + N·2^-1069)/(1 − ρ − γ_N − N·2^-1069)
  + u·|result|, and log Z̃ by ≤ (ρ + γ_N + ργ_N + N·2^-1069)/(1 − ρ − γ_N − N·2^-1069). (Unusable — +∞ — once
  η > 1/2: scores too large for float64 to weigh.) So s = log Z_A and log Z_B err by σ + that + 8u(log N + 1)
  + u(max|s| + log N + 2); Alice's s bound also covers the float ends of the layout interval (+2σ).
* the mix Y = b + λ(r − b) with λ = expit(s − log Z_B): from input errors δ_r, δ_s, δ_b, δ_{log Z_B},
  |fl Y − Y| ≤ u(|Y| + |λ(r−b)| + λ|r−b|) + max(δ_b, δ_r) + Δλ·(|r−b|(1+u) + δ_r + δ_b) with
  Δλ = (δ_s + δ_{log Z_B} + u|s − log Z_B|)/4 + 16uλ + 2^-1020 (the logistic function is 1/4-Lipschitz).
* Alice rounds her float r̃, s̃, so |r − r̂| ≤ ε/2 + δ_r and |s − ŝ| ≤ ε/2 + δ_s, which adds
  Φ_A = λ̂δ_r + (δ_s/4)(|r̂ − b| + ε/2 + δ_r) + (ε/8)δ_r to E; Bob's own float error is Φ_B (the mix bound
  with exact inputs r̂, ŝ). Bob's proven bound on |Y − fl Ỹ| is T_Bob = E + Φ_A + Φ_B, all evaluated from what
  Bob knows (λ̂ and |r̂ − b| from his float values plus their error bounds, capped by 1 and |r̂| + max|v_Bob|).

Explained disagreements. check_protocol compares Bob with predict at fixed:p, which is the exact model
(core.exact), so Bob's answer can legitimately differ only where his rounding of fl Ỹ differs from the
model's rounding of Y. A disagreement is *explained* when some coordinate of the model's exact head output Y
provably lies within T of a tie point, where T = T_Bob while its float part Φ_A + Φ_B is at most
2^-p·2^-10 (_FLOAT_SHARE), and T = E (the protocol's own ε error only) where it is larger: a float error
that is not small against the 2^-p grid could not tell a tie from a real disagreement, so it never explains
one. The decision is made from check_protocol's float Y (its own error δ_Y is the mix bound with Alice's
input errors) when that settles it, and otherwise *exactly*: the scores are exact rationals, python-flint
arb balls at rising precision give Y, and Lindemann–Weierstrass (core.expsum.sign_exp_poly) settles a
boundary case |Y − t| = T. At most EXACT_BUDGET disagreeing pairs are re-decided exactly per call; beyond
that (or if arb cannot settle one) the pair counts as unexplained (`disagreements_undecided`). An unexplained
disagreement where the float part was too large is also counted in `disagreements_float_limited`: the
report is then not exact, and the cause may be float64 (large p or large values) rather than the protocol.
Bob decodes his float64 residual with the decoder's float64 decode; a disagreement that comes from that
(a logit tie) is unexplained too — never explained by mistake.

Bit accounting (the exact message length). Bob knows the model, so before any message he knows an interval
that each transmitted number lies in, and Alice sends the index of the rounded number in the grid of
multiples of ε inside that interval: ⌈log₂(#grid points)⌉ bits, 0 for a single point. The intervals:

* r_c (head h, coordinate c): r is a convex combination of Alice's values, so
  r_c ∈ [min, max] of v_c over Alice's positions and tokens {0, 1};
* s: with a_j = min_t s_{j,t}, c_j = max_t s_{j,t} over t ∈ {0, 1}, log-sum-exp is monotone, so
  s ∈ [LSE_j a_j, LSE_j c_j] ⊆ [log k + min score, log k + max score].

(The plainer interval [log k + min score, log k + max score] is also sound; the LSE one lies inside it,
needs no more knowledge from Bob and never costs more bits, so the code uses it.) Rounding is monotone, so r̂_c
and ŝ land on grid points between the rounded ends; Alice clamps to them anyway, which moves a number
only when float64 rounding pushed it over an end. message_bits = Σ over heads and the m+1 numbers; it does
not depend on f (a fixed-length code), which is what the pigeonhole step needs.

The seed accounts h·(m+1)·3p bits ("3p bits of precision" per number) and says "up to a constant": its
count covers the fractional bits only. This encoding's worst case, from |v|, |q_c|, |k_c| ≤ 2^p:
r_c spans ≤ 2^{p+1}, so ≤ 2^{4p+1}+1 grid points, ≤ 4p+2 bits; s spans
≤ max_j (c_j − a_j) ≤ 2·d_head·2^{2p}, so ≤ d_head·2^{5p+1}+2 points, ≤ 5p+2+⌈log₂ d_head⌉ bits. Total

    message_bits ≤ h·( m·(4p+2) + 5p + 2 + ⌈log₂ d_head⌉ ),

which exceeds the seed's h·(m+1)·3p by about a factor 4/3 for large m (the integer parts). Measured
lengths sit below the worst case but can exceed the seed's count: the one-layer construction takes
k·(3p+2) bits (the k coordinates Alice's values can move, each over [0, 2]; about half the seed's count,
since its other m−k+1 numbers are fixed), a Gaussian table with h = 2, m = 4, k = 8, p = 6 takes 202 bits
(seed count 180, worst case 276).

Scope and assumptions. A one-layer weight-form model is converted with table_from_weights and the
protocol follows the *table's* fixed:p rounding points (ψ_in, Q̃, K̃, Ṽ, head outputs); check_protocol
compares with predict on that table, while refute confirms counterexamples on the model as given.
Decoders are taken to be positionwise (ψ_out(i, x_i), as the Decoder protocol says): Bob decodes his
vector at position N of an otherwise zero block.

Counterexamples. If message_bits < k, two f ≠ f' share a message (pigeonhole); at an i* where they differ
Bob answers both inputs alike, so the model is wrong on one of them. :func:`refute` searches for such a
collision, else searches the INDEX family exhaustively or by a guided random/local search, and reports an
input only after ``predict(model, σ, fixed(p))`` at position N has been seen to get it wrong.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import flint
import numpy as np
from scipy.special import expit

from headcount.core.bounds import U, _gamma
from headcount.core.evaluate import predict
from headcount.core.expsum import as_fmpq, sign_exp_poly
from headcount.core.model import LinearDecoder, Transformer
from headcount.core.precision import fixed, round_fixed
from headcount.core.symbols import BOTTOM, BOTTOM_TEXT
from headcount.core.table import OneLayerTable, table_from_weights
from headcount.induction.task import INDEX_QUERY, all_sequences, index_input

__all__ = [
    "AliceMessage",
    "BobHeads",
    "DEFAULT_BUDGET",
    "EXACT_BUDGET",
    "EXHAUSTIVE_K",
    "MAX_PRECISION_BITS",
    "MessageLayout",
    "ProtocolReport",
    "Refutation",
    "alice_message",
    "bob_heads",
    "bob_output",
    "check_protocol",
    "exact_heads",
    "message_layout",
    "refute",
    "worst_case_bits",
]

# check_protocol and refute are exhaustive over all 2^k·k pairs up to this k (≈ 10^6 pairs at 16).
EXHAUSTIVE_K = 16
# Pairs check_protocol samples (seeded) when k > EXHAUSTIVE_K and no `pairs` is given.
DEFAULT_SAMPLES = 1 << 16
# refute: the most Alice messages computed and, separately, the most INDEX inputs evaluated.
DEFAULT_BUDGET = 1 << 20
# Largest k for which refute's collision search enumerates all 2^k strings f.
COLLISION_ENUMERATE_K = 20
# Largest p: Alice's s·2^{3p} (|s| up to d_head·2^{2p}) must stay within float64's range.
MAX_PRECISION_BITS = 200
# Working-set size (float64 elements) that the vectorized steps aim for per chunk.
_CHUNK_ELEMENTS = 1 << 21


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class MessageLayout:
    """Where each transmitted number can lie (Bob knows this from the model alone) and its bit width.

    Ends are grid indices (integers, as floats) of the ε = 2^{-3p} grid: number = index·ε. The widths
    depend only on (model, k, p), so every message has the same length `bits`.
    """

    k: int
    p: int
    r_lo: np.ndarray  # [h m] grid index of the lowest possible r̂_c
    r_hi: np.ndarray  # [h m]
    s_lo: np.ndarray  # [h]
    s_hi: np.ndarray  # [h]
    r_bits: np.ndarray  # [h m] int
    s_bits: np.ndarray  # [h] int

    @property
    def bits(self) -> int:
        return int(self.r_bits.sum()) + int(self.s_bits.sum())

    @property
    def heads(self) -> int:
        return self.r_bits.shape[0]

    @property
    def dim(self) -> int:
        return self.r_bits.shape[1]

    @property
    def seed_bits(self) -> int:
        """The seed's accounting: h·(m+1) numbers at 3p bits each."""
        return self.heads * (self.dim + 1) * 3 * self.p


@dataclass(frozen=True, eq=False)
class AliceMessage:
    """Alice's message for one f: per head r̂ [h m] and ŝ [h] (multiples of ε = 2^{-3p}).

    `codes` is the message as sent: for each number (heads in order, r̂ coordinates then ŝ) its offset in
    the grid of its interval, written in that number's field of the fixed-length code; `bits` is the
    code's total length (the same for every f)."""

    k: int
    p: int
    r_hat: np.ndarray  # [h m]
    s_hat: np.ndarray  # [h]
    codes: tuple[int, ...]
    bits: int

    def digest(self) -> str:
        """A short hash of the message (equal messages, equal digests)."""
        data = np.concatenate([self.r_hat.ravel(), self.s_hat.ravel()]) + 0.0  # +0.0 folds −0.0 into 0.0
        return hashlib.sha1(data.astype(np.float64).tobytes()).hexdigest()[:16]


@dataclass(frozen=True, eq=False)
class BobHeads:
    """Bob's view of each head at N: Ỹ [h m], his proven bound T_Bob on |Y − Ỹ| [h m] (the protocol's ε error
    plus every float64 error, module docstring; +inf where float64 cannot bound it), λ̂ [h], b [h m]."""

    y_tilde: np.ndarray
    bound: np.ndarray
    lam_hat: np.ndarray
    b: np.ndarray


@dataclass(frozen=True)
class ProtocolReport:
    """check_protocol's result; `as_dict()` is the JSON form."""

    k: int
    n: int
    heads: int
    dim: int
    d_head: int
    precision_bits: int
    message_bits: int
    seed_message_bits: int
    worst_case_message_bits: int
    model_form: str
    exhaustive: bool
    seed: int | None
    pairs_checked: int
    agreements: int
    disagreements: int
    disagreements_explained: int
    model_correct: int
    bound_violations: int
    max_bob_error: float
    max_error_bound: float  # largest T_Bob; +inf (null in JSON) where float64 cannot bound Bob's error
    seconds: float
    first_unexplained: dict[str, Any] | None = None
    # Unexplained disagreements where a float64 error bound was too large (not ≤ 2^-p·_FLOAT_SHARE) to
    # count as an explanation: a float artifact is possible there (large p or large values).
    disagreements_float_limited: int = 0
    # Disagreements the float check could not classify, re-decided exactly (arb balls).
    disagreements_decided_exactly: int = 0
    # Disagreements left unexplained because the exact re-decision budget ran out or could not settle them.
    disagreements_undecided: int = 0

    @property
    def exact(self) -> bool:
        """True when every disagreement is provably explained by a rounding tie (and none violated the bound)."""
        return self.disagreements == self.disagreements_explained and self.bound_violations == 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "n": self.n,
            "heads": self.heads,
            "dim": self.dim,
            "d_head": self.d_head,
            "precision_bits": self.precision_bits,
            "message_bits": self.message_bits,
            "seed_message_bits": self.seed_message_bits,
            "worst_case_message_bits": self.worst_case_message_bits,
            "model_form": self.model_form,
            "exhaustive": self.exhaustive,
            "seed": self.seed,
            "pairs_checked": self.pairs_checked,
            "agreements": self.agreements,
            "disagreements": self.disagreements,
            "disagreements_explained": self.disagreements_explained,
            "exact": self.exact,
            "model_correct": self.model_correct,
            "bound_violations": self.bound_violations,
            "max_bob_error": self.max_bob_error,
            "max_error_bound": self.max_error_bound if math.isfinite(self.max_error_bound) else None,
            "disagreements_float_limited": self.disagreements_float_limited,
            "disagreements_decided_exactly": self.disagreements_decided_exactly,
            "disagreements_undecided": self.disagreements_undecided,
            "seconds": round(self.seconds, 3),
            "first_unexplained": self.first_unexplained,
        }


@dataclass(frozen=True)
class Refutation:
    """refute's result. When found, `input` is σ as text ("0"/"1"/"?"), `position` is N (1-based), and
    the model — run by predict at fixed:p — outputs `model_output` there instead of `expected`."""

    found: bool
    method: str | None
    k: int
    n: int
    precision_bits: int
    message_bits: int
    model_form: str
    searched: dict[str, Any]
    input: list[str] | None = None
    position: int | None = None
    expected: str | None = None
    model_output: str | None = None
    evidence: dict[str, Any] | None = None
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "found": self.found,
            "method": self.method,
            "k": self.k,
            "n": self.n,
            "precision_bits": self.precision_bits,
            "message_bits": self.message_bits,
            "model_form": self.model_form,
            "searched": self.searched,
            "input": self.input,
            "position": self.position,
            "expected": self.expected,
            "model_output": self.model_output,
            "evidence": self.evidence,
            "seconds": round(self.seconds, 3),
        }


# ---------------------------------------------------------------------------------------------
# Setup: what the protocol reads from the model
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Setup:
    """Everything the protocol needs at length n = 2k+1, precomputed once (all rounded as the model does).

    Alice's tables index (head, i, bit) for her position 2i (1-based); Bob's part (log Z_B, b) is
    tabulated for every i* since it depends on nothing else."""

    table: OneLayerTable
    model: Any  # the model as given: confirmations run on it
    form: str
    k: int
    p: int
    score_alice: np.ndarray  # [h k 2]
    value_alice: np.ndarray  # [h k 2 m]
    log_zb: np.ndarray  # [k h]   (row i*-1)
    b: np.ndarray  # [k h m]
    x_final: np.ndarray  # [m]    round_p(ψ_in(N, ?))
    layout: MessageLayout

    @property
    def n(self) -> int:
        return 2 * self.k + 1

    @property
    def heads(self) -> int:
        return self.score_alice.shape[0]

    @property
    def dim(self) -> int:
        return self.value_alice.shape[-1]

    @property
    def eps(self) -> float:
        return 2.0 ** (-3 * self.p)


def _as_table(model: Any) -> tuple[OneLayerTable, str]:
    if isinstance(model, OneLayerTable):
        return model, "table"
    if isinstance(model, Transformer):
        if len(model.layers) != 1:
            raise ValueError(
                f"the INDEX reduction is for one-layer models; this model has {len(model.layers)} layers"
            )
        if model.layers[0].mlp is not None:
            raise ValueError(
                "the INDEX reduction is for one-layer attention-only models; this layer has an MLP"
            )
        return table_from_weights(model), "weights (converted with table_from_weights)"
    raise ValueError(f"expected a OneLayerTable or a one-layer Transformer, got {type(model).__name__}")


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer ≥ {low}, got {value!r}")
    return int(value)


def _lse(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """log Σ exp along `axis`, shifted by the max (finite scores only)."""
    top = x.max(axis=axis, keepdims=True)
    return np.squeeze(top, axis) + np.log(np.exp(x - top).sum(axis=axis))


def _grid_bits(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """⌈log₂(#grid points)⌉ for index ranges [lo, hi] (integral floats, possibly beyond 2^63)."""
    # ⌈log₂(count)⌉ = (count − 1).bit_length(), in Python ints (exact at any p).
    flat = [(int(top) - int(bottom)).bit_length() for bottom, top in zip(lo.ravel(), hi.ravel())]
    return np.array(flat, dtype=np.int64).reshape(lo.shape)


def _setup(model: Any, k: Any, p: Any) -> _Setup:
    k = _check_int("k", k, 1)
    p = _check_int("p (precision bits)", p, 1)
    if p > MAX_PRECISION_BITS:
        raise ValueError(
            f"p (precision bits) must be at most {MAX_PRECISION_BITS} for the INDEX protocol "
            f"(its float64 message grid 2^-3p), got {p}"
        )
    table, form = _as_table(model)
    n = 2 * k + 1
    if n > table.n_ctx:
        raise ValueError(
            f"INDEX with k={k} needs n = 2k+1 = {n} positions; the model's context is {table.n_ctx}"
        )
    if table.alphabet < 3:
        raise ValueError(
            f"INDEX needs the tokens 0, 1, ? (alphabet ≥ 3); the model's alphabet is {table.alphabet}"
        )
    rp = lambda a: round_fixed(a, p)  # noqa: E731 — the model's rounding point
    last = n - 1
    q = rp(table.Q[:, last, INDEX_QUERY])  # [h d_head]
    keys = rp(table.K[:, :n, :3])  # [h n 3 d_head]
    values = rp(table.V[:, :n, :3])  # [h n 3 m]
    scores = np.einsum("hd,hjtd->hjt", q, keys)  # [h n 3]
    alice, bob = np.arange(1, 2 * k, 2), np.arange(0, 2 * k, 2)
    score_alice, value_alice = scores[:, alice, :2], values[:, alice, :2]
    heads, m = values.shape[0], values.shape[-1]

    # Bob's part for every i*: his positions carry 0 except e_{i*} = ?, plus the final ? at N.
    bob_zero, bob_query = scores[:, bob, 0], scores[:, bob, INDEX_QUERY]  # [h k]
    vzero, vquery = values[:, bob, 0], values[:, bob, INDEX_QUERY]  # [h k m]
    log_zb, b = np.empty((k, heads)), np.empty((k, heads, m))
    step = max(1, _CHUNK_ELEMENTS // max(1, heads * (k + 1) * m))
    for start in range(0, k, step):
        stars = np.arange(start, min(k, start + step))  # 0-based i*
        c = len(stars)
        s = np.empty((c, heads, k + 1))
        v = np.empty((c, heads, k + 1, m))
        s[:, :, :k], v[:, :, :k] = bob_zero[None], vzero[None]
        s[np.arange(c), :, stars] = bob_query[:, stars].T
        v[np.arange(c), :, stars] = np.transpose(vquery[:, stars], (1, 0, 2))
        s[:, :, k], v[:, :, k] = scores[None, :, last, INDEX_QUERY], values[None, :, last, INDEX_QUERY]
        top = s.max(axis=-1, keepdims=True)
        w = np.exp(s - top)
        z = w.sum(axis=-1)
        log_zb[stars] = top[..., 0] + np.log(z)
        b[stars] = np.einsum("chj,chjm->chm", w, v) / z[..., None]

    scale = 2.0 ** (3 * p)
    r_lo, r_hi = (
        np.round(value_alice.min(axis=(1, 2)) * scale),
        np.round(value_alice.max(axis=(1, 2)) * scale),
    )
    s_lo, s_hi = (
        np.round(_lse(score_alice.min(axis=2)) * scale),
        np.round(_lse(score_alice.max(axis=2)) * scale),
    )
    layout = MessageLayout(k, p, r_lo, r_hi, s_lo, s_hi, _grid_bits(r_lo, r_hi), _grid_bits(s_lo, s_hi))
    return _Setup(
        table,
        model,
        form,
        k,
        p,
        score_alice,
        value_alice,
        log_zb,
        b,
        rp(table.embed[last, INDEX_QUERY]),
        layout,
    )


# ---------------------------------------------------------------------------------------------
# Vectorized protocol steps
# ---------------------------------------------------------------------------------------------


def _alice_exact(st: _Setup, F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(r [B h m], s [B h]) for bit strings F [B k]: Alice's exact quantities, log-sum-exp style."""
    idx = np.arange(st.k)[None, :]
    s = np.transpose(st.score_alice[:, idx, F], (1, 0, 2))  # [B h k]
    v = np.transpose(st.value_alice[:, idx, F], (1, 0, 2, 3))  # [B h k m]
    top = s.max(axis=-1, keepdims=True)
    w = np.exp(s - top)
    z = w.sum(axis=-1)
    return np.einsum("bhk,bhkm->bhm", w, v) / z[..., None], top[..., 0] + np.log(z)


def _quantize(
    st: _Setup, r: np.ndarray, s: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(r̂, ŝ, r grid index, s grid index): round to the ε grid, clamped into the layout's intervals."""
    scale, lay = 2.0 ** (3 * st.p), st.layout
    ri = np.clip(np.round(r * scale), lay.r_lo, lay.r_hi)
    si = np.clip(np.round(s * scale), lay.s_lo, lay.s_hi)
    return ri / scale + 0.0, si / scale + 0.0, ri, si  # + 0.0: no −0.0 (messages compare by bits)


def _mix(
    st: _Setup, r: np.ndarray, s: np.ndarray, stars: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Y [B h m], λ [B h], b [B h m]) with Y = λ r + (1−λ) b, λ = sigmoid(s − log Z_B): the head output
    at N given Alice's (r, s) — exact ones give the model's head, rounded ones give Bob's Ỹ."""
    lam = expit(s - st.log_zb[stars - 1])
    b = st.b[stars - 1]
    return b + lam[..., None] * (r - b), lam, b


def _residual(st: _Setup, heads: np.ndarray) -> np.ndarray:
    """x_N + Σ_h round_p(head_h), summed in the same order as table_residual ([B h m] -> [B m])."""
    rounded = round_fixed(heads, st.p)
    update = np.zeros(rounded.shape[:1] + rounded.shape[2:])
    for h in range(rounded.shape[1]):
        update = update + rounded[:, h]
    return st.x_final[None, :] + update


def _decode_final(st: _Setup, residual: np.ndarray) -> np.ndarray:
    """ψ_out(N, x) for rows x [B m]. Decoders take [batch pos d_model] and are positionwise (ψ_out(i, x_i)),
    so each row goes in at position N of an otherwise zero block and only position N is read."""
    n, m = st.n, residual.shape[-1]
    rows = max(1, _CHUNK_ELEMENTS // (n * max(n, m)))
    out = np.empty(len(residual), dtype=np.int64)
    for start in range(0, len(residual), rows):
        part = residual[start : start + rows]
        block = np.zeros((len(part), n, m))
        block[:, n - 1] = part
        out[start : start + rows] = st.table.decoder.decode(block)[:, n - 1]
    return out


def _model_at_n(st: _Setup, F: np.ndarray, stars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(outputs [B], exact heads [B h m]) of the table model at N, from the closed form (fast path for
    search; reported counterexamples are always re-run through predict)."""
    r, s = _alice_exact(st, F)
    y, _, _ = _mix(st, r, s, stars)
    return _decode_final(st, _residual(st, y)), y


def _confirm_wrong(st: _Setup, F: np.ndarray, stars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(wrong [B], outputs [B]): predict(model as given, σ(f, i*), fixed:p) at N versus f_{i*}."""
    out = predict(st.model, index_input(F, stars), fixed(st.p))[:, st.n - 1]
    return out != F[np.arange(len(F)), stars - 1], out


# ---------------------------------------------------------------------------------------------
# Proven float64 error bounds and the "explained" test (module docstring, "Float evaluation")
# ---------------------------------------------------------------------------------------------

_EXP_REL = 8 * U  # libm exp and log within 4 ulp, i.e. 8u relative (the assumption of core.bounds)
_EXPIT_REL = 16 * U  # scipy's expit = 1/(1 + exp(−x)): an exp, an add and a divide
_UNDERFLOW = 2.0**-1069  # per weight: weights that underflow, absolutely, with their summation error
_INFLATE = 1 + 2.0**-20  # relative margin over the rounding of a bound's own computation
# The float part of a tolerance explains a disagreement only while it is at most this share of 2^-p.
_FLOAT_SHARE = 2.0**-10
# Disagreeing pairs check_protocol re-decides exactly (arb balls) per call, at most.
EXACT_BUDGET = 1 << 15
# Largest arb precision (bits) tried before the Lindemann–Weierstrass fallback.
_MAX_ARB_PREC = 1 << 13


@dataclass(frozen=True, eq=False)
class _FloatErrors:
    """Proven bounds on float64 evaluation errors, the same for every (f, i*): per head [h] or per head
    and coordinate [h m]. r, s: Alice's r̃, s̃ (s also covers the layout's float ends); b, log_zb: Bob's
    tabulated b̃, log Z̃_B; bob_span: max |v| over Bob's values (so |b| ≤ bob_span)."""

    r: np.ndarray
    s: np.ndarray
    b: np.ndarray
    log_zb: np.ndarray
    bob_span: np.ndarray


def _average_error(
    terms: int, sigma: np.ndarray, spread: np.ndarray, vmax: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(bound [h m] on |fl(Σ w̃v / Σ w̃) − Σ wv / Σ w|, bound [h] on |log Z̃ − log Z|) for `terms` weights
    w̃_j = exp(fl(s̃_j − s̃_top)), float scores within sigma [h] of the exact ones and spread [h] apart,
    |v_j| ≤ vmax [h m]. +∞ where the scores are too large for float64 to weigh (η > 1/2)."""
    eta = 2 * sigma + U * np.minimum(spread, 746.0)
    rho = np.expm1(np.minimum(eta, 1.0)) * (1 + _EXP_REL) + _EXP_REL  # past η = 1/2 it is unusable anyway
    g, tiny = _gamma(terms), terms * _UNDERFLOW
    den = 1 - rho - g - tiny
    usable = (eta <= 0.5) & (den >= 0.5)
    ratio = np.where(usable, ((1 + rho) * g + rho + tiny) / den, np.inf)[:, None]
    with np.errstate(invalid="ignore"):  # 0·∞ where a coordinate's values are all 0: exact, error 0
        avg = 2 * vmax * ratio
        avg = np.where(vmax == 0, 0.0, avg + U * (vmax + avg))
    log_z = np.where(usable, (rho + g + rho * g + tiny) / den, np.inf)
    return avg * _INFLATE, log_z * _INFLATE


def _lse_error(terms: int, sigma: np.ndarray, log_z: np.ndarray, score_abs: np.ndarray) -> np.ndarray:
    """Bound [h] on |fl(s̃_top + log Z̃) − log Z|: the top score, log Z̃, log's 4 ulp and the final add."""
    logs = math.log(terms) + 1
    return (sigma + log_z + _EXP_REL * logs + U * (score_abs + logs + 1)) * _INFLATE


def _float_errors(st: _Setup) -> _FloatErrors:
    """The uniform float error bounds for st's model, k and p (module docstring, "Float evaluation")."""
    table, p, n, k = st.table, st.p, st.n, st.k
    last = n - 1
    q = round_fixed(table.Q[:, last, INDEX_QUERY], p)  # [h d_head]
    keys, values = round_fixed(table.K[:, :n, :3], p), round_fixed(table.V[:, :n, :3], p)
    scores = np.einsum("hd,hjtd->hjt", q, keys)
    sigma = (
        _gamma(q.shape[-1]) * np.einsum("hd,hjtd->hjt", np.abs(q), np.abs(keys)).max(axis=(1, 2)) * _INFLATE
    )
    spread = scores.max(axis=(1, 2)) - scores.min(axis=(1, 2)) + 2 * sigma
    score_abs = np.abs(scores).max(axis=(1, 2)) + sigma
    absv = np.abs(values)
    v_alice = absv[:, 1 : 2 * k : 2, :2].max(axis=(1, 2))  # [h m]
    v_bob = np.maximum(
        absv[:, 0 : 2 * k : 2][:, :, [0, INDEX_QUERY]].max(axis=(1, 2)), absv[:, last, INDEX_QUERY]
    )
    r, log_za = _average_error(k, sigma, spread, v_alice)
    b, log_zb = _average_error(k + 1, sigma, spread, v_bob)
    s = (
        _lse_error(k, sigma, log_za, score_abs) + 2 * sigma
    )  # + 2σ: the layout's ends use float min/max scores
    return _FloatErrors(r, s, b, _lse_error(k + 1, sigma, log_zb, score_abs), v_bob)


def _mix_error(
    st: _Setup,
    fe: _FloatErrors,
    r: np.ndarray,
    s: np.ndarray,
    stars: np.ndarray,
    lam: np.ndarray,
    b: np.ndarray,
    y: np.ndarray,
    d_r: Any,
    d_s: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """(bound [B h m] on |y − Y|, bound [B h] on |λ − λ_exact|) for y = _mix(st, r, s, stars), whose inputs
    r [B h m], s [B h] are within d_r, d_s of the exact ones (0 for Bob's r̂, ŝ, which are exact)."""
    x = s - st.log_zb[stars - 1]
    diff = np.abs(r - b)
    lam3 = lam[..., None]
    dl = np.minimum((d_s + fe.log_zb + U * np.abs(x)) / 4 + _EXPIT_REL * lam + 2.0**-1020, 1.0)
    err = (
        U * (np.abs(y) + 2 * lam3 * diff)
        + np.maximum(fe.b, d_r)
        + dl[..., None] * (diff * (1 + U) + d_r + fe.b)
    )
    return err * _INFLATE, dl * _INFLATE


def _bob_bound(
    st: _Setup,
    fe: _FloatErrors,
    r_hat: np.ndarray,
    s_hat: np.ndarray,
    stars: np.ndarray,
    lam_hat: np.ndarray,
    b: np.ndarray,
    y_bob: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(E, Φ) [B h m]: the protocol's own ε error bound E and the float part Φ = Φ_A + Φ_B of Bob's proven
    bound T_Bob = E + Φ on |Y − fl Ỹ| (module docstring), from Bob's float λ̂, b and their error bounds."""
    eps = st.eps
    phi_bob, dl = _mix_error(st, fe, r_hat, s_hat, stars, lam_hat, b, y_bob, 0.0, 0.0)
    lam = np.minimum(lam_hat + dl, 1.0)[..., None]
    gap = np.minimum(np.abs(r_hat - b) + fe.b, np.abs(r_hat) + fe.bob_span)  # ≥ |r̂ − b| (b averages Bob's v)
    e = (lam * eps / 2 + eps / 8 * (gap + eps / 2)) * _INFLATE
    phi_alice = (lam * fe.r + fe.s[:, None] / 4 * (gap + eps / 2 + fe.r) + eps / 8 * fe.r) * _INFLATE
    return e, phi_alice + phi_bob


def _tie_distance(st: _Setup, y: np.ndarray) -> np.ndarray:
    """|y − t| for t the tie point of y's 2^-p cell (the nearest tie), exact up to a factor 1 ± u."""
    x = y / 2.0**-st.p  # exact: a power of two
    return np.abs((x - np.floor(x)) - 0.5) * 2.0**-st.p  # x − ⌊x⌋ is exact; the − 0.5 errs by ≤ u relative


def _ball_verdict(y: flint.arb, tol: float, p: int) -> bool | None:
    """Is the exact number in ball y within tol of a tie point (an odd multiple of 2^{-p-1})? None when the
    ball is too wide to tell. Only the ties of y's cell and its two neighbours can be that close."""
    if not y.is_finite() or y.rad() >= flint.arb(flint.fmpq(1, 1 << (p + 2))):
        return None
    man, exp = (int(z) for z in y.mid().man_exp())
    shift = exp + p
    cell = man << shift if shift >= 0 else man >> -shift  # ⌊mid / 2^-p⌋ (>> floors)
    bound = flint.arb(tol)
    far = True
    for c in (cell - 1, cell, cell + 1):
        gap = abs(y - flint.arb(flint.fmpq(2 * c + 1, 1 << (p + 1))))
        if gap <= bound:
            return True
        far = far and bool(gap > bound)
    return False if far else None


class _ExactHeads:
    """The model's exact head outputs at N for single pairs, for the disagreements float64 cannot classify.

    Scores are exact rationals (q and k are float64 numbers); the weights e^{s − M_h} (M_h the head's largest
    score) are arb balls cached per position, token and precision; values are exact. Why: at large p or
    large values no float64 bound is small against 2^-p, and only an exact Y tells a tie from an error."""

    def __init__(self, st: _Setup):
        table, p, n = st.table, st.p, st.n
        q = round_fixed(table.Q[:, n - 1, INDEX_QUERY], p)
        keys, values = round_fixed(table.K[:, :n, :3], p), round_fixed(table.V[:, :n, :3], p)
        self.p, self.heads = p, q.shape[0]
        self.scores = [
            [
                [
                    sum((as_fmpq(a) * as_fmpq(c) for a, c in zip(q[h], keys[h, j, t])), flint.fmpq(0))
                    for t in range(3)
                ]
                for j in range(n)
            ]
            for h in range(self.heads)
        ]
        self.top = [max(max(row) for row in head) for head in self.scores]
        self.values = values
        self.value_balls = [
            [[[flint.arb(float(x)) for x in values[h, j, t]] for t in range(3)] for j in range(n)]
            for h in range(self.heads)
        ]
        span = max(
            int(abs(self.scores[h][j][t] - self.top[h]).ceil())
            for h in range(self.heads)
            for j in range(n)
            for t in range(3)
        )
        vmax = int(math.ceil(float(np.abs(values).max(initial=0.0))))
        self.base_prec = 64 + p + vmax.bit_length() + span.bit_length() + n.bit_length()
        self._weights: dict[int, list] = {}

    def _heads(self, tokens: np.ndarray, prec: int, wanted: set[int]) -> dict[int, list]:
        """{h: [arb Y_hc for each c]} at flint.ctx.prec = prec (set by the caller)."""
        if prec not in self._weights:
            self._weights[prec] = [
                [[flint.arb(s - self.top[h]).exp() for s in row] for row in self.scores[h]]
                for h in range(self.heads)
            ]
        weights, out = self._weights[prec], {}
        for h in wanted:
            den, num = flint.arb(0), [flint.arb(0)] * self.values.shape[-1]
            for j, t in enumerate(tokens):
                w = weights[h][j][t]
                den += w
                num = [acc + w * v for acc, v in zip(num, self.value_balls[h][j][t])]
            out[h] = [acc / den for acc in num]
        return out

    def explained(self, tokens: np.ndarray, coords: list[tuple[int, int, float]]) -> bool | None:
        """Does some (head h, coordinate c, tolerance) in coords have |Y_hc − tie| ≤ tolerance, exactly?
        None when neither arb (up to _MAX_ARB_PREC bits) nor Lindemann–Weierstrass settles it."""
        pending, prec, old = list(coords), self.base_prec, flint.ctx.prec
        last: dict[int, list] = {}
        try:
            while pending and prec <= max(_MAX_ARB_PREC, self.base_prec):
                flint.ctx.prec = prec
                last = self._heads(tokens, prec, {h for h, _, _ in pending})
                still = []
                for h, c, tol in pending:
                    verdict = _ball_verdict(last[h][c], tol, self.p)
                    if verdict:
                        return True
                    if verdict is None:
                        still.append((h, c, tol))
                pending, prec = still, 2 * prec
        finally:
            flint.ctx.prec = old
        settled = True
        for h, c, tol in pending:
            verdict = self._lindemann(tokens, h, c, tol, last.get(h, [None] * (c + 1))[c])
            if verdict:
                return True
            settled = settled and verdict is not None
        return False if settled else None

    def _lindemann(self, tokens: np.ndarray, h: int, c: int, tol: float, ball: Any) -> bool | None:
        """Exact fallback: |Y − t| ≤ tol ⟺ Σ_j e^{s_j}(v_j − t − tol) ≤ 0 ≤ Σ_j e^{s_j}(v_j − t + tol), signs of
        exponential sums with rational exponents and coefficients (core.expsum.sign_exp_poly)."""
        if ball is None or not ball.is_finite() or ball.rad() >= flint.arb(flint.fmpq(1, 1 << (self.p + 2))):
            return None
        man, exp = (int(z) for z in ball.mid().man_exp())
        shift = exp + self.p
        cell = man << shift if shift >= 0 else man >> -shift
        exps = [
            Fraction(int(self.scores[h][j][t].p), int(self.scores[h][j][t].q)) for j, t in enumerate(tokens)
        ]
        vals = [Fraction(float(self.values[h, j, t, c])) for j, t in enumerate(tokens)]
        try:
            for cc in (cell - 1, cell, cell + 1):
                tie = Fraction(2 * cc + 1, 1 << (self.p + 1))
                above = sign_exp_poly(_collect(exps, [v - tie - Fraction(tol) for v in vals]))
                below = sign_exp_poly(_collect(exps, [v - tie + Fraction(tol) for v in vals]))
                if above <= 0 <= below:
                    return True
        except ArithmeticError:
            return None
        return False


def _collect(exps: list[Fraction], coefs: list[Fraction]) -> dict:
    """{exponent: summed coefficient} of Σ_j coef_j·e^{exp_j} (equal exponents merged)."""
    out: dict = {}
    for a, coef in zip(exps, coefs):
        out[a] = out.get(a, Fraction(0)) + coef
    return out


@dataclass
class _Explanations:
    """check_protocol's running verdicts on disagreements (counts) and its exact re-decision state."""

    explained: int = 0
    decided_exactly: int = 0
    undecided: int = 0
    float_limited: int = 0
    exact: _ExactHeads | None = None


def _explain(
    st: _Setup,
    tally: _Explanations,
    F: np.ndarray,
    stars: np.ndarray,
    y: np.ndarray,
    delta_y: np.ndarray,
    tol: np.ndarray,
    float_ok: np.ndarray,
) -> np.ndarray:
    """[D] True where a disagreeing pair (F [D k], stars [D]) is explained: some coordinate of its exact head
    output lies within tol [D h m] of a tie. Decided from the float y [D h m] (within delta_y of the exact Y)
    when that settles it, else exactly (_ExactHeads), at most EXACT_BUDGET pairs per call; updates tally."""
    dist = _tie_distance(st, y)
    surely = dist * (1 + 2 * U) + delta_y <= tol
    maybe = ~(dist * (1 - 2 * U) - delta_y > tol)
    flat = lambda a: a.reshape(len(a), -1)  # noqa: E731
    explained = flat(surely).any(axis=1)
    for t in np.flatnonzero(~explained & flat(maybe).any(axis=1)):
        if tally.decided_exactly >= EXACT_BUDGET:
            tally.undecided += 1
            continue
        if tally.exact is None:
            tally.exact = _ExactHeads(st)
        coords = [(int(h), int(c), float(tol[t, h, c])) for h, c in zip(*np.nonzero(maybe[t]))]
        verdict = tally.exact.explained(index_input(F[t], int(stars[t])), coords)
        tally.decided_exactly += 1
        tally.undecided += verdict is None
        explained[t] = bool(verdict)
    tally.explained += int(explained.sum())
    tally.float_limited += int((~explained & ~flat(float_ok).all(axis=1)).sum())
    return explained


# ---------------------------------------------------------------------------------------------
# Public protocol
# ---------------------------------------------------------------------------------------------


def _bits_of(f: Any, k: int | None = None) -> np.ndarray:
    arr = np.asarray(f)
    if (
        arr.ndim != 1
        or len(arr) < 1
        or (k is not None and arr.shape[0] != k)
        or not np.isin(arr, (0, 1)).all()
    ):
        want = f"length {k} " if k is not None else ""
        raise ValueError(f"f must be a {want}bit vector (entries 0 or 1), got {arr.tolist()!r}")
    return arr.astype(np.int64)


def message_layout(model: Any, k: int, p: int) -> MessageLayout:
    """The fixed-length code Alice uses for (model, k, p): intervals and bit widths (module docstring)."""
    return _setup(model, k, p).layout


def worst_case_bits(heads: int, dim: int, d_head: int, p: int) -> int:
    """The encoding's worst case over all models of this shape: h·(m·(4p+2) + 5p + 2 + ⌈log₂ d_head⌉)."""
    return heads * (dim * (4 * p + 2) + 5 * p + 2 + math.ceil(math.log2(max(1, d_head))))


def _message_from(
    st: _Setup, r_hat: np.ndarray, s_hat: np.ndarray, ri: np.ndarray, si: np.ndarray
) -> AliceMessage:
    lay = st.layout
    codes = []
    for h in range(st.heads):
        codes += [int(x) - int(lo) for x, lo in zip(ri[h], lay.r_lo[h])]
        codes.append(int(si[h]) - int(lay.s_lo[h]))
    return AliceMessage(st.k, st.p, r_hat, s_hat, tuple(codes), lay.bits)


def alice_message(model: Any, f: Any, p: int) -> AliceMessage:
    """Alice's message for bit string f (k = len(f)) against `model` at fixed:p."""
    bits = _bits_of(f)
    st = _setup(model, len(bits), p)
    r, s = _alice_exact(st, bits[None])
    r_hat, s_hat, ri, si = _quantize(st, r, s)
    return _message_from(st, r_hat[0], s_hat[0], ri[0], si[0])


def _check_message(st: _Setup, message: AliceMessage, i_star: Any) -> int:
    if message.p != st.p:
        raise ValueError(f"the message was made at p={message.p}, not p={st.p}")
    if message.r_hat.shape != (st.heads, st.dim):
        raise ValueError(
            f"the message has r̂ of shape {message.r_hat.shape}; this model needs {(st.heads, st.dim)}"
        )
    i_star = _check_int("i_star", i_star, 1)
    if i_star > st.k:
        raise ValueError(f"i_star must be in 1..{st.k}, got {i_star}")
    return i_star


def bob_heads(model: Any, message: AliceMessage, i_star: int, p: int) -> BobHeads:
    """Bob's head outputs Ỹ at N (before rounding) and his proven error bound on each coordinate."""
    st = _setup(model, message.k, p)
    i_star = _check_message(st, message, i_star)
    stars = np.array([i_star])
    y, lam, b = _mix(st, message.r_hat[None], message.s_hat[None], stars)
    e, phi = _bob_bound(st, _float_errors(st), message.r_hat[None], message.s_hat[None], stars, lam, b, y)
    return BobHeads(y[0], (e + phi)[0], lam[0], b[0])


def bob_output(model: Any, message: AliceMessage, i_star: int, p: int) -> int:
    """Bob's answer at N: ψ_out(N, round_p(ψ_in(N, ?)) + Σ_h round_p(Ỹ_h)); a token or BOTTOM (⊥)."""
    st = _setup(model, message.k, p)
    i_star = _check_message(st, message, i_star)
    y, _, _ = _mix(st, message.r_hat[None], message.s_hat[None], np.array([i_star]))
    return int(_decode_final(st, _residual(st, y))[0])


def exact_heads(model: Any, f: Any, i_star: int, p: int) -> np.ndarray:
    """The model's head outputs at N on σ(f, i*) before the head-output rounding, [h m] (float64)."""
    bits = _bits_of(f)
    st = _setup(model, len(bits), p)
    i_star = _check_int("i_star", i_star, 1)
    if i_star > st.k:
        raise ValueError(f"i_star must be in 1..{st.k}, got {i_star}")
    r, s = _alice_exact(st, bits[None])
    return _mix(st, r, s, np.array([i_star]))[0][0]


Chunk = tuple[np.ndarray, np.ndarray, np.ndarray]


def _pair_chunks(st: _Setup, pairs: int | None, seed: int) -> tuple[Iterator[Chunk], bool]:
    """Chunks (F [C k], owner [P], stars [P]) of (f, i*) pairs; pair t is (F[owner[t]], stars[t]).
    Exhaustive (f outer, lexicographic; i* inner) when k ≤ EXHAUSTIVE_K and pairs is None, or when pairs
    covers the whole family; otherwise `pairs` seeded uniform samples."""
    k = st.k
    family = (1 << k) * k
    per_pair = max(st.heads * st.dim * 4, st.n * 2)
    rows = max(1, _CHUNK_ELEMENTS // per_pair)
    if (pairs is None and k <= EXHAUSTIVE_K) or (pairs is not None and pairs >= family):
        per = max(1, rows // k)

        def exhaustive():
            for start in range(0, 1 << k, per):
                F = all_sequences(k, 2, start, min(1 << k, start + per))
                yield F, np.repeat(np.arange(len(F)), k), np.tile(np.arange(1, k + 1), len(F))

        return exhaustive(), True
    total = DEFAULT_SAMPLES if pairs is None else int(pairs)

    def sampled():
        rng = np.random.default_rng(seed)
        for start in range(0, total, rows):
            c = min(rows, total - start)
            yield rng.integers(0, 2, size=(c, k)), np.arange(c), rng.integers(1, k + 1, size=c)

    return sampled(), False


def check_protocol(model: Any, k: int, p: int, pairs: int | None = None, seed: int = 0) -> ProtocolReport:
    """Run the protocol on every (f, i*) (all 2^k·k pairs for k ≤ EXHAUSTIVE_K; else `pairs` seeded
    samples, default DEFAULT_SAMPLES) and compare Bob's output with predict(model, σ, fixed:p) at N.

    A disagreement is *explained* only when some coordinate of the model's exact head output Y provably lies
    within the tolerance T of a tie point of the 2^-p grid (module docstring, "Explained disagreements"):
    there the model's rounded head output may legitimately differ from Bob's. T comes from the proven bounds
    and shrinks with 2^-p; a float64 error that is not small against 2^-p never explains anything. Alice's
    work depends only on f and Bob's only on i*, so each f's message is computed once and reused for all its
    i*. For a weight-form model the comparison is with its table form (table_from_weights), whose rounding
    points the protocol follows."""
    if pairs is not None:
        pairs = _check_int("pairs", pairs, 1)
    st = _setup(model, k, p)
    fe = _float_errors(st)
    share = _FLOAT_SHARE * 2.0**-st.p
    began = time.perf_counter()
    chunks, exhaustive = _pair_chunks(st, pairs, seed)
    checked = agree = correct = violations = 0
    max_err = max_bound = 0.0
    tally = _Explanations()
    first_unexplained = None
    for F, owner, stars in chunks:
        r, s = _alice_exact(st, F)
        r_hat, s_hat, _, _ = _quantize(st, r, s)
        r, s, r_hat, s_hat = r[owner], s[owner], r_hat[owner], s_hat[owner]
        y_bob, lam_hat, b = _mix(st, r_hat, s_hat, stars)
        y_exact, lam, _ = _mix(st, r, s, stars)
        e, phi = _bob_bound(st, fe, r_hat, s_hat, stars, lam_hat, b, y_bob)
        delta_y, _ = _mix_error(st, fe, r, s, stars, lam, b, y_exact, fe.r, fe.s)
        err = np.abs(y_exact - y_bob)
        violations += int((err > (e + phi + delta_y) * (1 + 4 * U)).sum())  # |fl Y − fl Ỹ| ≤ T_Bob + δ_Y
        max_err, max_bound = max(max_err, float(err.max())), max(max_bound, float((e + phi).max()))
        bob = _decode_final(st, _residual(st, y_bob))
        pairs_f = F[owner]
        model_out = predict(st.table, index_input(pairs_f, stars), fixed(st.p))[:, st.n - 1]
        expected = pairs_f[np.arange(len(stars)), stars - 1]
        same = bob == model_out
        differ = np.flatnonzero(~same)
        if len(differ):
            float_ok = phi[differ] <= share
            tol = np.where(float_ok, e[differ] + phi[differ], e[differ])
            near = _explain(
                st, tally, pairs_f[differ], stars[differ], y_exact[differ], delta_y[differ], tol, float_ok
            )
            if first_unexplained is None and (~near).any():
                w = int(np.flatnonzero(~near)[0])
                t = differ[w]
                first_unexplained = {
                    "f": "".join(map(str, pairs_f[t])),
                    "i_star": int(stars[t]),
                    "bob_output": _token_text(int(bob[t])),
                    "model_output": _token_text(int(model_out[t])),
                    "float_limited": not bool(float_ok[w].all()),
                }
        checked += len(stars)
        agree += int(same.sum())
        correct += int((model_out == expected).sum())
    lay = st.layout
    return ProtocolReport(
        k=st.k,
        n=st.n,
        heads=st.heads,
        dim=st.dim,
        d_head=st.table.Q.shape[-1],
        precision_bits=st.p,
        message_bits=lay.bits,
        seed_message_bits=lay.seed_bits,
        worst_case_message_bits=worst_case_bits(st.heads, st.dim, st.table.Q.shape[-1], st.p),
        model_form=st.form,
        exhaustive=exhaustive,
        seed=None if exhaustive else seed,
        pairs_checked=checked,
        agreements=agree,
        disagreements=checked - agree,
        disagreements_explained=tally.explained,
        model_correct=correct,
        bound_violations=violations,
        max_bob_error=max_err,
        max_error_bound=max_bound,
        seconds=time.perf_counter() - began,
        first_unexplained=first_unexplained,
        disagreements_float_limited=tally.float_limited,
        disagreements_decided_exactly=tally.decided_exactly,
        disagreements_undecided=tally.undecided,
    )


# ---------------------------------------------------------------------------------------------
# Refuter
# ---------------------------------------------------------------------------------------------

_TEXT = {0: "0", 1: "1", INDEX_QUERY: "?", BOTTOM: BOTTOM_TEXT}


def _token_text(token: int) -> str:
    return _TEXT.get(int(token), str(int(token)))


def _found(
    st: _Setup,
    method: str,
    searched: dict,
    f: np.ndarray,
    i_star: int,
    output: int,
    evidence: dict,
    began: float,
) -> Refutation:
    sigma = index_input(f, i_star)
    return Refutation(
        True,
        method,
        st.k,
        st.n,
        st.p,
        st.layout.bits,
        st.form,
        searched,
        input=[_token_text(t) for t in sigma],
        position=st.n,
        expected=_token_text(int(f[i_star - 1])),
        model_output=_token_text(output),
        evidence=evidence,
        seconds=time.perf_counter() - began,
    )


def _hash_rows(keys: np.ndarray) -> np.ndarray:
    """64-bit hashes of float64 rows (by bit pattern); equal rows, equal hashes."""
    bits = np.ascontiguousarray(keys).view(np.uint64)
    h = np.full(len(bits), np.uint64(0xCBF29CE484222325))
    mult = np.uint64(0x100000001B3)
    for c in range(bits.shape[1]):
        h = (h ^ bits[:, c]) * mult
        h ^= h >> np.uint64(29)
    return h


def _message_keys(st: _Setup, F: np.ndarray) -> np.ndarray:
    r, s = _alice_exact(st, F)
    r_hat, s_hat, _, _ = _quantize(st, r, s)
    return np.concatenate([r_hat.reshape(len(F), -1), s_hat], axis=1)


def _collision(
    st: _Setup, rng: np.random.Generator, budget: int, began: float, searched: dict
) -> Refutation | None:
    """Pigeonhole search: hash the messages of many f; for f ≠ f' with equal messages and i* where they
    differ, Bob answers σ(f, i*) and σ(f', i*) alike, so (up to rounding ties) the model errs on one.

    Strings are streamed in chunks; a dict from message hash to the first string with it finds repeats
    across chunks in one pass. Equal hashes are re-checked as equal messages before use."""
    k = st.k
    enumerate_all = k <= COLLISION_ENUMERATE_K and (1 << k) <= budget
    total = (1 << k) if enumerate_all else budget
    per = max(1024, _CHUNK_ELEMENTS // max(1, st.heads * k * st.dim))
    info: dict[str, Any] = {
        "strings": "all 2^k" if enumerate_all else "seeded random",
        "messages": 0,
        "colliding_pairs_tried": 0,
        "inputs_confirmed": 0,
    }
    searched["collision"] = info
    seen: dict[int, int] = {}
    strings: list[np.ndarray] = []
    for start in range(0, total, per):
        c = min(per, total - start)
        F = all_sequences(k, 2, start, start + c) if enumerate_all else rng.integers(0, 2, size=(c, k))
        strings.append(F.astype(np.int8))
        info["messages"] += c
        pairs = []
        for offset, code in enumerate(_hash_rows(_message_keys(st, F)).tolist()):
            first = seen.setdefault(code, start + offset)
            if first != start + offset and len(pairs) < 64:
                pairs.append((first, start + offset))
        if not pairs:
            continue
        all_f = np.concatenate(strings)
        for ia, ib in pairs:
            f1, f2 = all_f[ia].astype(np.int64), all_f[ib].astype(np.int64)
            if np.array_equal(f1, f2):
                continue  # the same random string drawn twice
            keys = _message_keys(st, np.stack([f1, f2]))
            if not np.array_equal(keys[0].view(np.uint64), keys[1].view(np.uint64)):
                continue  # a hash collision, not a message collision
            info["colliding_pairs_tried"] += 1
            stars = np.flatnonzero(f1 != f2)[:16] + 1
            both = np.concatenate([np.repeat(f1[None], len(stars), 0), np.repeat(f2[None], len(stars), 0)])
            both_stars = np.concatenate([stars, stars])
            wrong, out = _confirm_wrong(st, both, both_stars)
            info["inputs_confirmed"] += len(both)
            if not wrong.any():
                continue  # right on both: only possible at a rounding tie
            t = int(np.flatnonzero(wrong)[0])
            i_star = int(both_stars[t])
            msg = _message_from(st, *[part[0] for part in _quantize(st, *_alice_exact(st, f1[None]))])
            evidence = {
                "f": "".join(map(str, f1)),
                "f_prime": "".join(map(str, f2)),
                "i_star": i_star,
                "wrong_input": "f" if t < len(stars) else "f_prime",
                "message_bits": msg.bits,
                "k": k,
                "message_digest": msg.digest(),
                "message_first_values": [float(x) for x in np.concatenate([msg.r_hat[0, :4], msg.s_hat[:1]])],
                "bob_output": _token_text(bob_output(st.table, msg, i_star, st.p)),
            }
            return _found(st, "collision", searched, both[t], i_star, int(out[t]), evidence, began)
    return None


def _exhaustive(st: _Setup, began: float, searched: dict) -> Refutation | None:
    """Run the model (predict, fixed:p) on all 2^k·k INDEX inputs in lexicographic order; first wrong one."""
    k = st.k
    per = max(1, (1 << 15) // k)
    info = {"inputs": 0, "family": (1 << k) * k}
    searched["exhaustive"] = info
    for start in range(0, 1 << k, per):
        F = all_sequences(k, 2, start, min(1 << k, start + per))
        Fp, stars = np.repeat(F, k, axis=0), np.tile(np.arange(1, k + 1), len(F))
        wrong, out = _confirm_wrong(st, Fp, stars)
        info["inputs"] += len(stars)
        if wrong.any():
            t = int(np.flatnonzero(wrong)[0])
            evidence = {"f": "".join(map(str, Fp[t])), "i_star": int(stars[t])}
            return _found(st, "exhaustive", searched, Fp[t], int(stars[t]), int(out[t]), evidence, began)
    return None


def _margins(st: _Setup, y: np.ndarray, expected: np.ndarray) -> np.ndarray | None:
    """Logit of the right answer minus the best other logit, from the unrounded heads (a smooth guide
    for local search); None when the decoder is not linear."""
    dec = st.table.decoder
    if not isinstance(dec, LinearDecoder):
        return None
    logits = (st.x_final[None] + y.sum(axis=1)) @ dec.W_U + dec.b_U
    rows = np.arange(len(y))
    right = logits[rows, expected].copy()
    logits[rows, expected] = -np.inf
    return right - logits.max(axis=1)


def _guided(
    st: _Setup, rng: np.random.Generator, budget: int, began: float, searched: dict
) -> Refutation | None:
    """Seeded random (f, i*) first (a quarter of the budget for linear decoders, all of it otherwise),
    then greedy local search from the 64 lowest-margin inputs seen. Candidates come from the closed-form
    evaluation at N; each is confirmed by predict before it is reported."""
    k = st.k
    info = {"inputs": 0, "random_inputs": 0, "local_search_steps": 0, "restarts": 0, "confirmations": 0}
    searched["guided"] = info
    linear = isinstance(st.table.decoder, LinearDecoder)
    batch = 4096
    random_share = max(batch, budget // 4) if linear else budget
    best_F, best_stars, best_margin = np.empty((0, k), np.int64), np.empty(0, np.int64), np.empty(0)
    while info["inputs"] < min(budget, random_share):
        c = min(batch, budget - info["inputs"])
        F, stars = rng.integers(0, 2, size=(c, k)), rng.integers(1, k + 1, size=c)
        found, margin = _evaluate(st, F, stars, info, searched, began)
        info["random_inputs"] += c
        if found:
            return found
        if margin is not None:
            best_F, best_stars = np.concatenate([best_F, F]), np.concatenate([best_stars, stars])
            best_margin = np.concatenate([best_margin, margin])
            keep = np.argsort(best_margin, kind="stable")[:64]
            best_F, best_stars, best_margin = best_F[keep], best_stars[keep], best_margin[keep]
    if not linear or not len(best_F):
        return None
    return _local_search(st, rng, best_F, best_stars, best_margin, budget, info, searched, began)


def _evaluate(
    st: _Setup, F: np.ndarray, stars: np.ndarray, info: dict, searched: dict, began: float
) -> tuple[Refutation | None, np.ndarray | None]:
    """Closed-form outputs at N for a batch; confirm up to 64 apparent errors with predict. Returns
    (confirmed refutation or None, margins or None)."""
    out, y = _model_at_n(st, F, stars)
    info["inputs"] += len(F)
    expected = F[np.arange(len(F)), stars - 1]
    idx = np.flatnonzero(out != expected)[:64]
    if len(idx):
        wrong, got = _confirm_wrong(st, F[idx], stars[idx])
        info["confirmations"] += len(idx)
        if wrong.any():
            t = int(np.flatnonzero(wrong)[0])
            f, i_star = F[idx[t]], int(stars[idx[t]])
            return _found(
                st,
                "guided",
                searched,
                f,
                i_star,
                int(got[t]),
                {"f": "".join(map(str, f)), "i_star": i_star},
                began,
            ), None
    return None, _margins(st, y, expected)


def _local_search(
    st: _Setup,
    rng: np.random.Generator,
    F: np.ndarray,
    stars: np.ndarray,
    margin: np.ndarray,
    budget: int,
    info: dict,
    searched: dict,
    began: float,
) -> Refutation | None:
    """Greedy descent on the right answer's logit margin (linear decoders): each candidate moves to its
    best single-bit neighbour, never flipping f_{i*} (that would change the right answer); a candidate
    with no improving neighbour restarts at a random (f, i*)."""
    k = st.k
    if k < 2:
        return None
    F, stars, margin = F.copy(), stars.copy(), margin.copy()
    while info["inputs"] + len(F) * k <= budget:
        P = len(F)
        flips = np.repeat(F, k, axis=0)
        pos = np.tile(np.arange(k), P)
        flips[np.arange(P * k), pos] ^= 1
        nstars = np.repeat(stars, k)
        keep = pos != nstars - 1
        flips, nstars = flips[keep], nstars[keep]
        found, nmargin = _evaluate(st, flips, nstars, info, searched, began)
        info["local_search_steps"] += 1
        if found:
            return found
        nmargin = nmargin.reshape(P, k - 1)
        best = nmargin.argmin(axis=1)
        improved = nmargin[np.arange(P), best] < margin
        moved = flips.reshape(P, k - 1, k)[np.arange(P), best]
        F = np.where(improved[:, None], moved, F)
        margin = np.where(improved, nmargin[np.arange(P), best], margin)
        stuck = np.flatnonzero(~improved)
        if len(stuck):
            info["restarts"] += len(stuck)
            F[stuck] = rng.integers(0, 2, size=(len(stuck), k))
            stars[stuck] = rng.integers(1, k + 1, size=len(stuck))
            found, fresh = _evaluate(st, F[stuck], stars[stuck], info, searched, began)
            if found:
                return found
            margin[stuck] = fresh
    return None


def refute(model: Any, k: int, p: int, *, seed: int = 0, budget: int = DEFAULT_BUDGET) -> Refutation:
    """Find an INDEX input σ(f, i*) that the model at fixed:p answers wrongly at N = 2k+1.

    Methods, in order: (a) "collision" when message_bits < k (pigeonhole: a collision must exist among all
    2^k strings; enumerated for k ≤ COLLISION_ENUMERATE_K when 2^k ≤ budget, else `budget` seeded random
    strings); (b) "exhaustive" when k ≤ EXHAUSTIVE_K or 2^k·k ≤ budget: the whole family through
    predict — if it finds nothing the model is correct on INDEX at this (k, p) and the search stops;
    (c) "guided": seeded random restarts and local search, `budget` inputs. Every reported input has
    been run through predict(model as given, σ, fixed(p)) and seen to be wrong at N."""
    st = _setup(model, k, p)
    seed = _check_int("seed", seed, 0)
    budget = _check_int("budget", budget, 1)
    began = time.perf_counter()
    rng = np.random.default_rng(seed)
    searched: dict[str, Any] = {
        "seed": seed,
        "budget": budget,
        "message_bits": st.layout.bits,
        "k": st.k,
        "methods": [],
    }
    if st.layout.bits < st.k:
        searched["methods"].append("collision")
        found = _collision(st, rng, budget, began, searched)
        if found:
            return found
    family = (1 << st.k) * st.k
    if st.k <= EXHAUSTIVE_K or family <= budget:
        searched["methods"].append("exhaustive")
        found = _exhaustive(st, began, searched)
        if found:
            return found
    else:
        searched["methods"].append("guided")
        found = _guided(st, rng, budget, began, searched)
        if found:
            return found
    return Refutation(
        False, None, st.k, st.n, st.p, st.layout.bits, st.form, searched, seconds=time.perf_counter() - began
    )
