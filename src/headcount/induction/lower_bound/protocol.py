"""Seed 000's INDEX protocol (§3 and Appendix A) as a program: Alice's message, Bob's decoding, and
check_protocol, which runs it on every (f, i*) and compares Bob with the model. The setting (INDEX
input, rounding points) is in the docstring of .setup; the float64 error bounds and the exact
re-decision of disagreements are in .error_bounds.

Protocol. Alice's positions are the even j = 2, 4, …, 2k (she knows f); Bob's are the odd j = 1, …,
2k−1 (he knows i*, hence every e_i) and N (known to both). Per head Alice computes Z_A = Σ_A
e^{s_j}, A_A = Σ_A e^{s_j} v_j, r = A_A/Z_A ∈ R^m and s = log Z_A, and sends r̂, ŝ: r and s rounded
to the nearest multiple of ε = 2^{-3p}. Bob computes b = A_B/Z_B over his positions, λ̂ = e^ŝ/(e^ŝ +
Z_B) and Ỹ = λ̂ r̂ + (1−λ̂) b = (r̂ e^ŝ + A_B)/(e^ŝ + Z_B), rounds it like a head output, adds
round_p(ψ_in(N, ?)), sums the heads in the model's order and applies ψ_out at N. All of it in
log-sum-exp form (λ̂ is a logistic function of ŝ − log Z_B), so large scores neither overflow nor
underflow.

Bob's error (per head, per coordinate). With λ = e^s/(e^s + Z_B), the exact head output is
Y = λ r + (1−λ) b, and

    Y − Ỹ = λ̂ (r − r̂) + (λ − λ̂)(r − b).

Rounding to nearest gives |r − r̂| ≤ ε/2 and |s − ŝ| ≤ ε/2; λ = sigmoid(s − log Z_B) and the
logistic function is 1/4-Lipschitz, so |λ − λ̂| ≤ ε/8. Hence

    |Y − Ỹ| ≤ λ̂·ε/2 + (ε/8)·|r − b| ≤ (ε/2)·(1 + |r − b|/4),

and Bob can evaluate a bound himself from what he knows, using |r − b| ≤ |r̂ − b| + ε/2: E = λ̂·ε/2
+ (ε/8)(|r̂ − b| + ε/2). This is a little sharper than the seed's Appendix A (|T1| + |T2| + |T3| ≤
2^p ε/4 + ε + 1.25·2^p ε); with |v| ≤ 2^p (fixed:p clips) it is at most 2^{-3p-1} + 2^{-2p-2}, far
below the 2^{-p} grid. So round_p(Ỹ) = round_p(Y) unless Y lies within the bound of a rounding tie
point (an odd multiple of 2^{-p-1}): only then can Bob's output differ from the model's.

Bit accounting (the exact message length). Bob knows the model, so before any message he knows an
interval that each transmitted number lies in, and Alice sends the index of the rounded number in
the grid of multiples of ε inside that interval: ⌈log₂(#grid points)⌉ bits, 0 for a single point.
The intervals:

* r_c (head h, coordinate c): r is a convex combination of Alice's values, so
  r_c ∈ [min, max] of v_c over Alice's positions and tokens {0, 1};
* s: with a_j = min_t s_{j,t}, c_j = max_t s_{j,t} over t ∈ {0, 1}, log-sum-exp is monotone, so
  s ∈ [LSE_j a_j, LSE_j c_j] ⊆ [log k + min score, log k + max score].

(The plainer interval [log k + min score, log k + max score] is also sound; the LSE one lies inside
it, needs no more knowledge from Bob and never costs more bits, so the code uses it.) Rounding is
monotone, so r̂_c and ŝ land on grid points between the rounded ends; Alice clamps to them anyway,
which moves a number only when float64 rounding pushed it over an end. message_bits = Σ over heads
and the m+1 numbers; it does not depend on f (a fixed-length code), which is what the pigeonhole
step needs.

The seed accounts h·(m+1)·3p bits ("3p bits of precision" per number) and says "up to a constant":
its count covers the fractional bits only. This encoding's worst case, from |v|, |q_c|, |k_c| ≤ 2^p:
r_c spans ≤ 2^{p+1}, so ≤ 2^{4p+1}+1 grid points, ≤ 4p+2 bits; s spans ≤ max_j (c_j − a_j) ≤
2·d_head·2^{2p}, so ≤ d_head·2^{5p+1}+2 points, ≤ 5p+2+⌈log₂ d_head⌉ bits. Total

    message_bits ≤ h·( m·(4p+2) + 5p + 2 + ⌈log₂ d_head⌉ ),

which exceeds the seed's h·(m+1)·3p by about a factor 4/3 for large m (the integer parts). Measured
lengths sit below the worst case but can exceed the seed's count: the one-layer construction takes
k·(3p+2) bits (the k coordinates Alice's values can move, each over [0, 2]; about half the seed's
count, since its other m−k+1 numbers are fixed), a Gaussian table with h = 2, m = 4, k = 8, p = 6
takes 202 bits (seed count 180, worst case 276).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.common.errors import InputError
from headcount.common.progress import Progress, progress_bar
from headcount.common.validate import check_int
from headcount.core.certify import Model, WorkBudget, certified_predict, fixed_predict
from headcount.core.numbers import U, fixed
from headcount.induction.lower_bound.error_bounds import (
    FLOAT_SHARE,
    Explanations,
    bob_bound,
    explain,
    float_errors,
    mix_error,
)
from headcount.induction.lower_bound.resources import CHUNK_ELEMENTS, check_protocol_resources
from headcount.induction.lower_bound.results import ProtocolCheck, UnexplainedPair
from headcount.induction.lower_bound.setup import (
    IndexSetup,
    MessageLayout,
    alice_exact,
    decode_final,
    index_setup,
    load_index_model,
    mix,
    quantize,
    residual,
)
from headcount.induction.source import ModelSource
from headcount.induction.task import all_sequences, index_input, index_token_text

# check_protocol (and refute) are exhaustive over all 2^k·k pairs up to this k (≈ 10^6 pairs at 16).
EXHAUSTIVE_K = 16
# Pairs check_protocol samples (seeded) when k > EXHAUSTIVE_K and no `pairs` is given.
DEFAULT_SAMPLES = 1 << 16


@dataclass(frozen=True, eq=False)
class AliceMessage:
    """Alice's message for one f: per head r̂ [h m] and ŝ [h] (multiples of ε = 2^{-3p}).

    `codes` is the message as sent: for each number (heads in order, r̂ coordinates then ŝ) its
    offset in the grid of its interval, written in that number's field of the fixed-length code;
    `bits` is the code's total length (the same for every f)."""

    k: int
    p: int
    r_hat: np.ndarray  # [h m]
    s_hat: np.ndarray  # [h]
    codes: tuple[int, ...]
    bits: int

    def digest(self) -> str:
        """A short hash of the message (equal messages, equal digests)."""
        data = (
            np.concatenate([self.r_hat.ravel(), self.s_hat.ravel()]) + 0.0
        )  # +0.0 folds −0.0 into 0.0
        return hashlib.sha1(data.astype(np.float64).tobytes()).hexdigest()[:16]


@dataclass(frozen=True, eq=False)
class BobHeads:
    """Bob's view of each head at N: Ỹ [h m], his proven bound T_Bob on |Y − Ỹ| [h m] (the
    protocol's ε error plus every float64 error, docstring of .error_bounds; +inf where float64
    cannot bound it), λ̂ [h], b [h m]."""

    y_tilde: np.ndarray
    bound: np.ndarray
    lam_hat: np.ndarray
    b: np.ndarray


# ---------------------------------------------------------------------------------------------
# Alice and Bob, one pair at a time
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
        raise InputError(f"f must be a {want}bit vector (entries 0 or 1), got {arr.tolist()!r}")
    return arr.astype(np.int64)


def _check_i_star(st: IndexSetup, i_star: Any) -> int:
    return check_int("i_star", i_star, 1, st.k)


def message_layout(model: Model, k: int, p: int) -> MessageLayout:
    """The fixed-length code Alice uses for (model, k, p): intervals and bit widths (module
    docstring)."""
    return index_setup(model, k, p).layout


def worst_case_bits(heads: int, d_model: int, d_head: int, p: int) -> int:
    """The encoding's worst case over all models of this shape: h·(m·(4p+2) + 5p + 2 + ⌈log₂
    d_head⌉)."""
    return heads * (d_model * (4 * p + 2) + 5 * p + 2 + math.ceil(math.log2(max(1, d_head))))


def message_from(
    st: IndexSetup, r_hat: np.ndarray, s_hat: np.ndarray, ri: np.ndarray, si: np.ndarray
) -> AliceMessage:
    """The AliceMessage of one f from its rounded numbers and their grid indices (quantize)."""
    lay = st.layout
    codes = []
    for h in range(st.n_heads):
        codes += [int(x) - int(lo) for x, lo in zip(ri[h], lay.r_lo[h])]
        codes.append(int(si[h]) - int(lay.s_lo[h]))
    return AliceMessage(st.k, st.p, r_hat, s_hat, tuple(codes), lay.bits)


def alice_message(model: Model, f: Any, p: int) -> AliceMessage:
    """Alice's message for bit string f (k = len(f)) against `model` at fixed:p."""
    bits = _bits_of(f)
    st = index_setup(model, len(bits), p)
    r, s = alice_exact(st, bits[None])
    r_hat, s_hat, ri, si = quantize(st, r, s)
    return message_from(st, r_hat[0], s_hat[0], ri[0], si[0])


def _check_message(st: IndexSetup, message: AliceMessage, i_star: Any) -> int:
    if message.p != st.p:
        raise InputError(f"the message was made at p={message.p}, not p={st.p}")
    if message.r_hat.shape != (st.n_heads, st.d_model):
        raise InputError(
            f"the message has r̂ of shape {message.r_hat.shape}; this model needs "
            f"{(st.n_heads, st.d_model)}"
        )
    return _check_i_star(st, i_star)


def bob_heads(model: Model, message: AliceMessage, i_star: int, p: int) -> BobHeads:
    """Bob's head outputs Ỹ at N (before rounding) and his proven error bound on each coordinate."""
    st = index_setup(model, message.k, p)
    i_star = _check_message(st, message, i_star)
    stars = np.array([i_star])
    y, lam, b = mix(st, message.r_hat[None], message.s_hat[None], stars)
    e, phi = bob_bound(
        st, float_errors(st), message.r_hat[None], message.s_hat[None], stars, lam, b, y
    )
    return BobHeads(y[0], (e + phi)[0], lam[0], b[0])


def bob_output(model: Model, message: AliceMessage, i_star: int, p: int) -> int:
    """Bob's answer at N: ψ_out(N, round_p(ψ_in(N, ?)) + Σ_h round_p(Ỹ_h)); a token or BOTTOM
    (⊥)."""
    st = index_setup(model, message.k, p)
    i_star = _check_message(st, message, i_star)
    y, _, _ = mix(st, message.r_hat[None], message.s_hat[None], np.array([i_star]))
    return int(decode_final(st, residual(st, y))[0])


def exact_heads(model: Model, f: Any, i_star: int, p: int) -> np.ndarray:
    """The model's head outputs at N on σ(f, i*) before the head-output rounding, [h m]
    (float64)."""
    bits = _bits_of(f)
    st = index_setup(model, len(bits), p)
    i_star = _check_i_star(st, i_star)
    r, s = alice_exact(st, bits[None])
    return mix(st, r, s, np.array([i_star]))[0][0]


# ---------------------------------------------------------------------------------------------
# check_protocol: every pair, vectorized
# ---------------------------------------------------------------------------------------------

Chunk = tuple[np.ndarray, np.ndarray, np.ndarray]


def _pair_chunks(st: IndexSetup, pairs: int | None, seed: int) -> tuple[Iterator[Chunk], bool]:
    """Chunks (F [C k], owner [P], stars [P]) of (f, i*) pairs; pair t is (F[owner[t]], stars[t]).
    Exhaustive (f outer, lexicographic; i* inner) when k ≤ EXHAUSTIVE_K and pairs is None, or when
    pairs covers the whole family; otherwise `pairs` seeded uniform samples."""
    k = st.k
    family = (1 << k) * k
    per_pair = max(st.n_heads * st.d_model * 4, st.n * 2)
    rows = max(1, CHUNK_ELEMENTS // per_pair)
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


def predict_last(st: IndexSetup, tokens: np.ndarray) -> np.ndarray:
    """predict(table, tokens, fixed:p) at the last position only [B]: the bounds, then the exact
    evaluator only where they leave position N open (the other positions' ties are never settled:
    not needed)."""
    out, proven = certified_predict(st.table, tokens, fixed(st.p))
    proven[:, :-1] = True
    return fixed_predict(st.table, tokens, st.p, budget=WorkBudget(None), proven_in=(out, proven))[
        0
    ][:, -1]


class _Tally:
    """check_protocol's running counts over the chunks of pairs, and the first unexplained
    disagreement."""

    def __init__(self, st: IndexSetup):
        self.st, self.fe = st, float_errors(st)
        self.share = FLOAT_SHARE * 2.0**-st.p  # the most a float error may weigh and still explain
        self.checked = self.agree = self.correct = self.bob_correct = self.violations = 0
        self.max_err = self.max_bound = 0.0
        self.explanations = Explanations()
        self.first_unexplained: UnexplainedPair | None = None

    def add(self, F: np.ndarray, owner: np.ndarray, stars: np.ndarray) -> None:
        """One chunk: Alice once per f, Bob and the model once per pair; every bound checked."""
        st, fe = self.st, self.fe
        r, s = alice_exact(st, F)
        r_hat, s_hat, _, _ = quantize(st, r, s)
        r, s, r_hat, s_hat = r[owner], s[owner], r_hat[owner], s_hat[owner]
        y_bob, lam_hat, b = mix(st, r_hat, s_hat, stars)
        y_exact, lam, _ = mix(st, r, s, stars)
        e, phi = bob_bound(st, fe, r_hat, s_hat, stars, lam_hat, b, y_bob)
        delta_y, _ = mix_error(st, fe, r, s, stars, lam, b, y_exact, fe.r, fe.s)
        err = np.abs(y_exact - y_bob)
        self.violations += int(
            (err > (e + phi + delta_y) * (1 + 4 * U)).sum()
        )  # |fl Y − fl Ỹ| ≤ T_Bob + δ_Y
        self.max_err = max(self.max_err, float(err.max()))
        self.max_bound = max(self.max_bound, float((e + phi).max()))
        bob = decode_final(st, residual(st, y_bob))
        pairs_f = F[owner]
        model_out = predict_last(st, index_input(pairs_f, stars))
        differ = np.flatnonzero(bob != model_out)
        if len(differ):
            self._disagreements(differ, pairs_f, stars, y_exact, delta_y, e, phi, bob, model_out)
        self.checked += len(stars)
        self.agree += len(stars) - len(differ)
        answers = pairs_f[np.arange(len(stars)), stars - 1]  # f_{i*}
        self.correct += int((model_out == answers).sum())
        self.bob_correct += int((bob == answers).sum())

    def _disagreements(self, differ: np.ndarray, *arrays: np.ndarray) -> None:
        """Explain the disagreeing pairs (rows `differ` of F, stars, Y, δ_Y, E, Φ, Bob's and the
        model's outputs; tolerance E + Φ while Φ is small against 2^-p, else E alone)."""
        F, stars, y, delta_y, e, phi, bob, model_out = (a[differ] for a in arrays)
        float_ok = phi <= self.share
        tol = np.where(float_ok, e + phi, e)
        near = explain(self.st, self.explanations, F, stars, y, delta_y, tol, float_ok)
        if self.first_unexplained is None and (~near).any():
            t = int(np.flatnonzero(~near)[0])
            self.first_unexplained = UnexplainedPair(
                "".join(map(str, F[t])),
                int(stars[t]),
                index_token_text(int(bob[t])),
                index_token_text(int(model_out[t])),
                not bool(float_ok[t].all()),
            )

    def result(self, exhaustive: bool, seed: int, seconds: float) -> ProtocolCheck:
        st, lay, tally = self.st, self.st.layout, self.explanations
        return ProtocolCheck(
            k=st.k,
            n=st.n,
            heads=st.n_heads,
            d_model=st.d_model,
            d_head=st.d_head,
            precision_bits=st.p,
            message_bits=lay.bits,
            seed_message_bits=lay.seed_bits,
            worst_case_message_bits=worst_case_bits(st.n_heads, st.d_model, st.d_head, st.p),
            model_form=st.form,
            exhaustive=exhaustive,
            seed=None if exhaustive else seed,
            pairs_checked=self.checked,
            agreements=self.agree,
            disagreements=self.checked - self.agree,
            disagreements_explained=tally.explained,
            model_correct=self.correct,
            protocol_correct=self.bob_correct,
            bound_violations=self.violations,
            max_bob_error=self.max_err,
            max_error_bound=self.max_bound,
            seconds=seconds,
            first_unexplained=self.first_unexplained,
            disagreements_float_limited=tally.float_limited,
            disagreements_decided_exactly=tally.decided_exactly,
            disagreements_undecided=tally.undecided,
        )


def check_protocol(
    model: Model | ModelSource,
    k: int,
    p: int,
    pairs: int | None = None,
    seed: int = 0,
    progress: Progress = False,
) -> ProtocolCheck:
    """Run the protocol on every (f, i*) (all 2^k·k pairs for k ≤ EXHAUSTIVE_K; else `pairs` seeded
    samples, default DEFAULT_SAMPLES) and compare Bob's output with predict(model, σ, fixed:p) at N.
    The model may be given by where it comes from (ModelSource: a one-layer model file or a seeded
    random table model, setup.load_index_model), read or drawn first.

    A disagreement is *explained* only when some coordinate of the model's exact head output Y
    provably lies within the tolerance T of a tie point of the 2^-p grid (docstring of
    .error_bounds, "Explained disagreements"): there the model's rounded head output may
    legitimately differ from Bob's. T comes from the proven bounds and shrinks with 2^-p; a float64
    error that is not small against 2^-p never explains anything. Alice's work depends only on f and
    Bob's only on i*, so each f's message is computed once and reused for all its i*. A weight-form
    model runs as the exact table of its own fixed:p rounding points (setup.as_table: its answers
    are the model's; InputError where no table has them); `model_form` says which form was checked.
    progress: a bar over the pairs on stderr (common.progress)."""
    if isinstance(model, ModelSource):
        model = load_index_model(model, k)
    if pairs is not None:
        pairs = check_int("pairs", pairs, 1)
    seed = check_int("seed", seed, 0)
    check_protocol_resources(model, check_int("k", k, 1), pairs, EXHAUSTIVE_K, DEFAULT_SAMPLES)
    st = index_setup(model, k, p)
    began = time.perf_counter()
    chunks, exhaustive = _pair_chunks(st, pairs, seed)
    tally = _Tally(st)
    total = (1 << st.k) * st.k if exhaustive else (pairs or DEFAULT_SAMPLES)
    with progress_bar(progress, f"protocol k={st.k}: pairs", total=total, unit="pair") as bar:
        for F, owner, stars in chunks:
            tally.add(F, owner, stars)
            bar.update(advance=len(stars))
    return tally.result(exhaustive, seed, time.perf_counter() - began)
