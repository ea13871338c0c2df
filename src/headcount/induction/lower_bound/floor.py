"""The INDEX error floor (issue 17, spec/frontiers.md): how often a one-layer model whose protocol
message has b bits must err on the INDEX family, and the check that a measured error respects it.

Derivation. check_protocol turns a one-layer model into a one-way protocol (.protocol): Alice holds
f ∈ {0,1}^k and sends a message M of b bits (a fixed-length code, message_bits), Bob holds i* and
outputs the model's answer at the last position of σ(f, i*) from M and i* alone. Let f be uniform on
{0,1}^k and let δ_i be the probability (over f) that Bob's output at i* = i is not f_i; δ̄ = (1/k)
Σ_i δ_i is Bob's error over all (f, i*) pairs, i* uniform.

* M takes at most 2^b values, so H(M) ≤ b and H(f | M) = H(f) − I(f; M) ≥ k − H(M) ≥ k − b.
* Chain rule (conditioning never raises entropy): H(f | M) = Σ_i H(f_i | M, f_1, …, f_{i−1}) ≤ Σ_i
  H(f_i | M).
* Fano's inequality for a binary guess: Bob's answer at i is a function g_i(M); read any answer that
  is not a bit (⊥, '?', another token) as the bit 0, which can only turn errors into hits, so
  P(g_i(M) ≠ f_i) ≤ δ_i, and H(f_i | M) ≤ h(P(g_i(M) ≠ f_i)) ≤ h(δ_i) when δ_i ≤ 1/2 (and ≤ 1 =
  h(1/2) always), h(x) = −x log₂ x − (1−x) log₂ (1−x) the binary entropy.
* Concavity of h (Jensen): (1/k) Σ_i h(min(δ_i, 1/2)) ≤ h(min(δ̄, 1/2)).

Together h(min(δ̄, 1/2)) ≥ (k − b)/k = 1 − b/k, and since h increases on [0, 1/2],

    δ̄ ≥ δ* = h⁻¹(1 − b/k)  on [0, 1/2]  when b < k,   δ* = 0  when b ≥ k.

(b = 0: δ* = 1/2, Bob guesses blind.) The model agrees with Bob except on the disagreements, a
fraction r of the pairs, so the model's own INDEX error is at least δ* − r. `error_floor` is δ*
rounded *down*, rigorously: bisection on [0, 1/2] keeping a lower end δ_lo with h(δ_lo) < 1 − b/k
proven by an Arb ball (the ball's upper end below the exact rational target), stopped when the
bracket is FLOOR_WIDTH wide — a floor a measured error can be held to without float slop. It is a
lower bound for *every* model with this message length, not a prediction for one: random models
usually err far above it, correct models need b ≥ k (the theorem of .protocol).

The check (`floor_holds`). Exhaustive (every (f, i*)): index_error ≥ δ* − r, i.e. model_errors +
disagreements ≥ δ*·pairs, compared exactly (counts as integers, δ* as the rational its float is).
Sampled: a consistency test at CONFIDENCE (99 %): the upper ends of the two-sided Clopper–Pearson
intervals of the model's error rate and of the disagreement rate must sum to at least δ* (each upper
end lies below its true rate with probability ≤ 0.5 %). `protocol_floor_holds` is the theorem
itself, Bob's error ≥ δ* (sampled: its upper end ≥ δ*).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import flint

from headcount.common.errors import InputError
from headcount.common.jsonable import JsonResult
from headcount.common.validate import check_int

CONFIDENCE = 0.99  # two-sided Clopper–Pearson intervals of sampled rates
FLOOR_WIDTH = 1e-12  # the bisection stops when its bracket around δ* is this narrow
_ARB_PREC = 128  # bits of the Arb balls the bisection evaluates h at


def binary_entropy(x: float) -> float:
    """h(x) = −x log₂ x − (1−x) log₂ (1−x) in float64 (h(0) = h(1) = 0); InputError outside [0,
    1]."""
    x = float(x)
    if not 0.0 <= x <= 1.0:
        raise InputError(f"the binary entropy takes a probability in [0, 1], got {x!r}")
    return sum(-t * math.log2(t) for t in (x, 1.0 - x) if t > 0.0)


def _entropy_ball(x: float) -> flint.arb:
    """h(x) as an Arb ball at the current precision (0 < x < 1; x is a float, so exact as a ball
    centre)."""
    a = flint.arb(x)
    return -(a * a.log() + (1 - a) * (1 - a).log()) / flint.arb(2).log()


@lru_cache(maxsize=4096)
def error_floor(message_bits: int, k: int) -> float:
    """δ* = h⁻¹(1 − b/k) on [0, 1/2] for b = message_bits < k, 0.0 for b ≥ k, 0.5 for b = 0, rounded
    down: a float δ_lo ≤ δ* with h(δ_lo) < 1 − b/k proven, within FLOOR_WIDTH of δ* (module
    docstring)."""
    b, k = check_int("message_bits", message_bits, 0), check_int("k", k, 1)
    if b >= k:
        return 0.0
    if b == 0:
        return 0.5
    target = flint.arb(flint.fmpq(k - b, k))
    lo, hi = 0.0, 0.5  # h(lo) < target (lo = 0: h(0) = 0 < target); δ* ≤ hi
    old = flint.ctx.prec
    try:
        flint.ctx.prec = _ARB_PREC
        while hi - lo > FLOOR_WIDTH:
            mid = (lo + hi) / 2  # exact: a dyadic number far above the float range's bottom
            if _entropy_ball(mid) < target:  # True only when the whole ball lies below the target
                lo = mid
            else:
                hi = mid
    finally:
        flint.ctx.prec = old
    return lo


def clopper_pearson(count: int, trials: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The two-sided Clopper–Pearson interval (lo, hi) of a rate from `count` events in `trials`
    trials."""
    trials = check_int("trials", trials, 1)
    count = check_int("count", count, 0, trials)
    # imported here: scipy.stats takes a second to import, and every command would pay it
    from scipy.stats import beta

    tail = (1.0 - confidence) / 2
    lo = 0.0 if count == 0 else float(beta.ppf(tail, count, trials - count + 1))
    hi = 1.0 if count == trials else float(beta.ppf(1.0 - tail, count + 1, trials - count))
    return lo, hi


def _check_floor(floor: float) -> float:
    floor = float(floor)
    if not 0.0 <= floor <= 0.5:  # NaN fails too
        raise InputError(f"an INDEX error floor lies in [0, 1/2], got {floor!r}")
    return floor


def floor_holds(
    errors: int, disagreements: int, pairs: int, floor: float, exhaustive: bool
) -> bool:
    """Whether `errors` wrong answers and `disagreements` protocol disagreements among `pairs` pairs
    respect the floor: error ≥ floor − disagreement rate. Exhaustive: errors + disagreements ≥
    floor·pairs exactly; sampled: the Clopper–Pearson upper ends (CONFIDENCE) of the two rates sum
    to at least the floor."""
    pairs = check_int("pairs", pairs, 1)
    errors = check_int("errors", errors, 0, pairs)
    disagreements = check_int("disagreements", disagreements, 0, pairs)
    floor = _check_floor(floor)
    if exhaustive:
        return Fraction(errors + disagreements) >= Fraction(floor) * pairs
    return clopper_pearson(errors, pairs)[1] + clopper_pearson(disagreements, pairs)[1] >= floor


@dataclass(frozen=True)
class IndexFloor(JsonResult):
    """The error floor of a protocol check and where the model and Bob stand against it: error rates
    over the pairs checked, their intervals ([e, e] when exhaustive, Clopper–Pearson at `confidence`
    when sampled), and the two checks (module docstring). confidence is None for an exhaustive
    (exact) check."""

    error_floor: float
    index_error: float
    index_error_interval: tuple[float, float]
    protocol_error: float
    protocol_error_interval: tuple[float, float]
    disagreement_rate: float
    floor_holds: bool
    protocol_floor_holds: bool
    floor_confidence: float | None


def index_floor(
    message_bits: int,
    k: int,
    pairs: int,
    model_errors: int,
    protocol_errors: int,
    disagreements: int,
    exhaustive: bool,
) -> IndexFloor:
    """The IndexFloor of a check of `pairs` (f, i*) pairs with these counts (every pair when
    exhaustive)."""
    floor = error_floor(message_bits, k)

    def interval(count: int) -> tuple[float, float]:
        return (count / pairs, count / pairs) if exhaustive else clopper_pearson(count, pairs)

    return IndexFloor(
        error_floor=floor,
        index_error=model_errors / pairs,
        index_error_interval=interval(model_errors),
        protocol_error=protocol_errors / pairs,
        protocol_error_interval=interval(protocol_errors),
        disagreement_rate=disagreements / pairs,
        floor_holds=floor_holds(model_errors, disagreements, pairs, floor, exhaustive),
        protocol_floor_holds=floor_holds(protocol_errors, 0, pairs, floor, exhaustive),
        floor_confidence=None if exhaustive else CONFIDENCE,
    )
