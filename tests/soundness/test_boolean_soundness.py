"""Soundness of the Boolean certificates (issue 11, build point 5): fuzzed tiny models with
adversarial weights, every verdict compared with an independent exact evaluation on all 2^n inputs.

The oracle below shares no code with headcount.boolean (it reads the model classes' fields and
nothing else). It evaluates the model from the definition on every bit string x ∈ {0,1}^n —
attention over the n positions, α_j = w_{x_j} / Σ_k w_{x_k}, head output Σ_j α_j·v_{x_j}, layer
output the sum over heads, answer sign g(layer output) — in Fractions. It never uses the weight t =
|x| shortcut the certificate rests on, and it checks that shortcut (all inputs of one weight get one
answer) instead of assuming it.

Why no Arb balls or Lindemann–Weierstrass here: a Boolean head is stored by its exp-weights w_0, w_1
> 0 as exact rationals (spec/boolean.md, "Store a head by w_0, w_1 > 0 (not s)"), so every quantity
of the model is rational and the sign of g is decided by rational arithmetic alone — exactly, ties
(g = 0) included. Scores s from the adversarial palette enter as the exp-weights a float64 model
would store, w = float64(e^{±s}) (e^-745 is the smallest subnormal), next to huge and tiny w given
directly (1e300, 2^±1100).

The target is a symmetric f(x) = F(|x|) (what the certificate takes), so F is read at |x|; the
model's answer is not. Sign 0 (g = 0, an exact tie) is an error for either target value:
spec/boolean.md ("g = 0 counts as an error"), boolean/model.py ("g = 0 is an error (sign 0)"),
lower_bound.find_wrong_input ("sign 0 is always wrong").

What must agree with the oracle (``disagreements``), for certify_boolean_model and for
`headcount boolean check --json` on a saved model:
  * ``certified`` ⇔ the oracle finds no wrong input among all 2^n;
  * ``errors`` = the number of weights t carrying a wrong input (the certificate counts weights, n +
    1 of them);
  * ``wrong_input`` is a bit string the oracle gets wrong, of the first wrong weight, with the
    oracle's sign and the target; ``None`` when nothing is wrong;
  * ``min_abs_margin`` = min over all x of |g|: exactly (short "p/q") or as a 30-digit decimal
    rounded half
    up; "0" exactly when some input ties.
Families: random models (palette themes), models with planted exact ties (g = 0 at chosen inputs),
Theorem 3 constructions with one adversarial perturbation, and plain Theorem 3 constructions (which
must
also be right: Theorem 3). n ≤ 6, H ≤ 3, D ≤ 3, d ≤ 3 for the random families.

Finding (fixed; test_saved_model_with_a_huge_exact_weight_loads): load_boolean could not read back
an exact weight of more than 4300 digits that save_boolean wrote (model.to_fmpq parsed strings with
Fraction, which Python's int/str digit limit stops).

Fast set: the default run (Hypothesis, derandomized, ≈ 11 s). Slow set, 20,000 models per family (or
HEADCOUNT_SOUNDNESS_MODELS), prints its counts:
    python -m pytest -m slow -s tests/soundness/test_boolean_soundness.py
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
import os
import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import headcount.boolean.certification as certify_module
from headcount.boolean.bases import (
    basis_range,
    lemma14_basis,
)  # case generation only, never the oracle
from headcount.boolean.certification import certify_boolean_model, construct_and_certify
from headcount.boolean.construction import construct
from headcount.boolean.model import BooleanHead, BooleanLayer, Readout, model_values_exact
from headcount.boolean.model_file import load_boolean, save_boolean
from headcount.cli import main
from tests.soundness.palettes import BENIGN, EXP_EDGE, HUGE, TINY, palette

SLOW_MODELS = int(os.environ.get("HEADCOUNT_SOUNDNESS_MODELS", "20000"))
CLI_EVERY = (
    200  # the slow loop also runs `boolean check` on every CLI_EVERY-th model of each family
)

# ---------------------------------------------------------------- the independent exact oracle

Bits = tuple[int, ...]


def _fraction(x) -> Fraction:
    """An fmpq (the model classes' number type) as a Fraction, through its integer
    numerator/denominator."""
    return Fraction(int(x.p), int(x.q))


@dataclass(frozen=True)
class ExactModel:
    """The model's numbers as Fractions: per head ((w0, w1), (v0, v1)); readout terms (K, c_K)."""

    heads: tuple[
        tuple[tuple[Fraction, Fraction], tuple[tuple[Fraction, ...], tuple[Fraction, ...]]], ...
    ]
    terms: tuple[tuple[tuple[int, ...], Fraction], ...]
    dim: int

    @classmethod
    def of(cls, layer: BooleanLayer, readout: Readout) -> ExactModel:
        heads = tuple(
            (
                (_fraction(h.w0), _fraction(h.w1)),
                (tuple(map(_fraction, h.v0)), tuple(map(_fraction, h.v1))),
            )
            for h in layer.heads
        )
        terms = tuple((tuple(K), _fraction(c)) for K, c in readout.terms.items())
        return cls(heads, terms, layer.dim)


def head_output(head, x: Bits) -> list[Fraction]:
    """Attention over the n positions of x: α_j = w_{x_j} / Σ_k w_{x_k}, output Σ_j α_j v_{x_j}."""
    w, v = head
    weights = [w[b] for b in x]
    total = sum(weights, Fraction(0))
    alpha = [e / total for e in weights]
    return [sum((a * v[b][i] for a, b in zip(alpha, x)), Fraction(0)) for i in range(len(v[0]))]


def layer_output(model: ExactModel, x: Bits) -> list[Fraction]:
    out = [Fraction(0)] * model.dim
    for head in model.heads:
        out = [a + b for a, b in zip(out, head_output(head, x))]
    return out


def readout_value(model: ExactModel, z: Sequence[Fraction]) -> Fraction:
    """g(z) = Σ_K c_K Π_i z_i^{K_i}."""
    total = Fraction(0)
    for K, c in model.terms:
        term = c
        for zi, k in zip(z, K):
            term *= zi**k
        total += term
    return total


def sign(v: Fraction) -> int:
    return (v > 0) - (v < 0)


@dataclass
class Oracle:
    """g on every x ∈ {0,1}^n, from the definition."""

    n: int
    values: dict[Bits, Fraction]

    @classmethod
    def evaluate(cls, layer: BooleanLayer, readout: Readout, n: int) -> Oracle:
        model = ExactModel.of(layer, readout)
        return cls(
            n,
            {
                x: readout_value(model, layer_output(model, x))
                for x in itertools.product((0, 1), repeat=n)
            },
        )

    def sign(self, x: Bits) -> int:
        return sign(self.values[x])

    def wrong_inputs(self, F: Sequence[int]) -> list[Bits]:
        """Inputs whose answer is not the target F(|x|) (sign 0 is wrong for either target)."""
        return [x for x in self.values if self.sign(x) != F[sum(x)]]

    def asymmetric_weights(self) -> list[int]:
        """Weights t whose inputs do not all get the same sign (the property the certificate relies
        on)."""
        by_t: dict[int, set[int]] = {}
        for x in self.values:
            by_t.setdefault(sum(x), set()).add(self.sign(x))
        return [t for t, signs in sorted(by_t.items()) if len(signs) > 1]

    def min_abs(self) -> Fraction:
        return min(abs(v) for v in self.values.values())


# ---------------------------------------------------------------- comparing a verdict with the
# oracle


def rational_text(v: Fraction, max_chars: int = 40) -> str | None:
    """v as "p/q" (or "p"), or None when that is longer than max_chars. Decided by bit length first:
    a string of ≤ 40 characters holds < 140 bits, and str() of a > 4300-digit int raises."""
    if abs(v.numerator).bit_length() + v.denominator.bit_length() > 4 * max_chars:
        return None
    text = str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"
    return text if len(text) <= max_chars else None


DECIMAL = re.compile(r"^-?([1-9])\.(\d{29})e([+-]\d+)$")


def margin_disagreement(text, exact: Fraction) -> str | None:
    """None when ``text`` states |g|'s minimum `exact` as documented: the exact "p/q" if it has at
    most 40 characters, else 30 significant digits rounded half up (exact − u/2 ≤ stated < exact +
    u/2 fails otherwise, u the last digit's unit)."""
    if not isinstance(text, str):
        return f"min_abs_margin {text!r} is not a string"
    short = rational_text(exact)
    if short is not None:
        return None if text == short else f"min_abs_margin {text!r}, exact {short}"
    m = DECIMAL.match(text)
    if m is None:
        return (
            f"min_abs_margin {text!r} is neither the exact value (too long) nor a 30-digit decimal"
        )
    stated, unit = Fraction(text), Fraction(10) ** (int(m.group(3)) - 29)
    if not (stated - unit / 2 <= exact < stated + unit / 2):
        return f"min_abs_margin {text!r} is not exact {float(exact)!r} rounded half up to 30 digits"
    return None


def disagreements(cert: dict, oracle: Oracle, F: Sequence[int]) -> list[str]:
    """Every way `cert` (certify_boolean_model(…).to_json() or `boolean check --json`) contradicts
    the oracle."""
    n, out = oracle.n, []
    wrong = oracle.wrong_inputs(F)
    wrong_t = sorted({sum(x) for x in wrong})
    if asym := oracle.asymmetric_weights():
        out.append(
            f"oracle: inputs of weight(s) {asym} get different answers (no longer a function of "
            "|x|)"
        )
    if cert.get("certified") is not (not wrong):
        out.append(
            f"certified = {cert.get('certified')!r}, oracle: {len(wrong)} of {2**n} inputs wrong"
        )
    if cert.get("errors") != len(wrong_t):
        out.append(f"errors = {cert.get('errors')!r}, oracle: weights {wrong_t} wrong")
    if cert.get("scope") != "exhaustive" or cert.get("weights_checked") != n + 1:
        out.append(
            f"scope {cert.get('scope')!r}, weights_checked {cert.get('weights_checked')!r} (n = "
            f"{n})"
        )
    out += _wrong_input_disagreements(cert.get("wrong_input", "missing"), oracle, F, wrong_t)
    if text := margin_disagreement(cert.get("min_abs_margin"), oracle.min_abs()):
        out.append(text)
    f64 = cert.get("float64_errors")
    if not (isinstance(f64, int) and 0 <= f64 <= n + 1):
        out.append(f"float64_errors = {f64!r} is not a count of weights in 0..{n + 1}")
    return out


def value_disagreements(values: Sequence, oracle: Oracle, method: str) -> list[str]:
    """model_values_exact's g at t = 0..n (the numbers certify decides on) against the oracle's g on
    every x."""
    if len(values) != oracle.n + 1:
        return [f"model_values_exact({method}) gave {len(values)} values for n = {oracle.n}"]
    bad = sorted({sum(x) for x, v in oracle.values.items() if _fraction(values[sum(x)]) != v})
    return (
        [f"model_values_exact({method}) differs from the oracle's g at weights {bad}"]
        if bad
        else []
    )


def _wrong_input_disagreements(
    wi, oracle: Oracle, F: Sequence[int], wrong_t: list[int]
) -> list[str]:
    if not wrong_t:
        return [] if wi is None else [f"wrong_input {wi!r} but the oracle finds every input right"]
    if (
        not isinstance(wi, dict)
        or not isinstance(wi.get("x"), str)
        or not re.fullmatch(r"[01]*", wi["x"])
    ):
        return [f"wrong_input {wi!r}: no bit string, but the oracle finds weights {wrong_t} wrong"]
    x = tuple(int(c) for c in wi["x"])
    if len(x) != oracle.n:
        return [f"wrong_input x = {wi['x']!r} does not have n = {oracle.n} bits"]
    out, t = [], sum(x)
    if oracle.sign(x) == F[t]:
        out.append(
            f"wrong_input x = {wi['x']} is right under the oracle (sign {oracle.sign(x)} = F({t}))"
        )
    if (wi.get("t"), wi.get("model_sign"), wi.get("target")) != (t, oracle.sign(x), F[t]):
        out.append(f"wrong_input {wi!r}: oracle t = {t}, sign {oracle.sign(x)}, target {F[t]}")
    if t != wrong_t[0]:
        out.append(f"wrong_input has weight {t}, the first wrong weight is {wrong_t[0]}")
    return out


# ---------------------------------------------------------------- adversarial palettes for Boolean
# models

# exact rationals no float64 holds: 1/3, 1/2 ± 2^-m past 53 bits, magnitudes past float64's range
EXACT = (
    Fraction(1, 3),
    Fraction(2, 3),
    Fraction(1, 2) + Fraction(1, 2**60),
    Fraction(1, 2) - Fraction(1, 2**100),
    Fraction(1, 2) + Fraction(1, 2**200),
    Fraction(1, 2**1100),
    Fraction(2**1100),
    Fraction(3, 2**1080),
)
# exp-weights of palette scores s as a float64 model stores them: e^-745 is subnormal, e^700 ≈ 1e304
SCORE_WEIGHTS = tuple(
    sorted(
        {math.exp(-s) for s in EXP_EDGE if math.exp(-s) > 0}
        | {math.exp(s) for s in EXP_EDGE if s < 709.78}
    )
)


def value_palette(bits: int) -> list:
    """Signed values for v and c: palettes.palette(bits) (odd multiples of 2^-(bits+1), ±2^bits, 1/2
    ± 2^-m, subnormals, 2^-1020-scale, 700–745, 1e6…1e300, 1/3, 0) and the exact extras, both
    signs."""
    return [float(v) for v in palette(bits)] + list(EXACT) + [-v for v in EXACT]


def weight_palette(bits: int) -> list:
    """Positive exp-weights: the positive values, the scores' exp-weights, huge and tiny."""
    return [v for v in value_palette(bits) if v > 0] + list(SCORE_WEIGHTS) + list(HUGE) + list(TINY)


THEMES = ("mixed", "mixed", "pool", "pool", "benign", "range")


class Draw:
    """Where one model's numbers come from, by theme: "mixed" (whole palettes), "pool" (two to four
    values per kind, so equal weights and values — exact ties — are common), "benign" (small
    numbers: models whose signs vary, so the certified branch is reached), "range" (only huge and
    tiny magnitudes)."""

    def __init__(self, rng: np.random.Generator, theme: str | None = None):
        self.rng = rng
        self.theme = theme or str(rng.choice(THEMES))
        bits = int(rng.integers(1, 61))
        if self.theme == "benign":
            self.weights = [v for v in BENIGN if v > 0] + [Fraction(1, 3)]
            self.values = list(BENIGN) + [Fraction(1, 3), Fraction(-2, 3)]
        elif self.theme == "range":
            big = (
                list(HUGE)
                + list(TINY)
                + [Fraction(2**1100), Fraction(1, 2**1100)]
                + list(SCORE_WEIGHTS)
            )
            self.weights, self.values = big, big + [-v for v in big]
        else:
            self.weights, self.values = weight_palette(bits), value_palette(bits)
        if self.theme == "pool":
            self.weights = self._pool(self.weights)
            self.values = self._pool(self.values)

    def _pool(self, values: list) -> list:
        k = int(self.rng.integers(2, 5))
        return [values[i] for i in self.rng.choice(len(values), size=k, replace=False)]

    def weight(self):
        return self.weights[int(self.rng.integers(len(self.weights)))]

    def value(self):
        return self.values[int(self.rng.integers(len(self.values)))]


def random_exponent(
    rng: np.random.Generator, d: int, D: int, total: int | None = None
) -> tuple[int, ...]:
    K = [0] * d
    for _ in range(int(rng.integers(0, D + 1)) if total is None else total):
        K[int(rng.integers(d))] += 1
    return tuple(K)


def random_model(rng: np.random.Generator, draw: Draw) -> tuple[BooleanLayer, Readout, int]:
    """n ≤ 6, H ≤ 3, d ≤ 3, D ≤ 3; weights from `draw`, with w0 = w1 or v0 = v1 sometimes forced."""
    n, H, d, D = (int(rng.integers(1, k + 1)) for k in (6, 3, 3, 3))
    heads = []
    for _ in range(H):
        w0 = draw.weight()
        w1 = w0 if rng.random() < 0.15 else draw.weight()
        v0 = tuple(draw.value() for _ in range(d))
        v1 = v0 if rng.random() < 0.1 else tuple(draw.value() for _ in range(d))
        heads.append(BooleanHead(w0, w1, v0, v1))
    terms = {random_exponent(rng, d, D): draw.value() for _ in range(int(rng.integers(1, 5)))}
    return BooleanLayer(tuple(heads)), Readout(terms, D, d), n


def random_bits(rng: np.random.Generator, n: int) -> Bits:
    return tuple(int(b) for b in rng.integers(0, 2, size=n))


def plant_tie(rng: np.random.Generator, layer: BooleanLayer, readout: Readout, n: int) -> Readout:
    """The readout minus its value at a random input x* (computed by the oracle), so g(x*) = 0
    exactly; with D ≥ 2, sometimes the product (z_i − z_i(x*))(z_j − z_j(y*)), zero at two chosen
    inputs."""
    model = ExactModel.of(layer, readout)
    z = layer_output(model, random_bits(rng, n))
    d, D = readout.dim, readout.degree
    if D >= 2 and rng.random() < 0.3:
        i, j = (int(k) for k in rng.integers(d, size=2))
        a, b = z[i], layer_output(model, random_bits(rng, n))[j]
        terms: dict[tuple[int, ...], Fraction] = {}
        for K, c in (((i, j), 1), ((i,), -b), ((j,), -a), ((), a * b)):
            E = [0] * d
            for k in K:
                E[k] += 1
            terms[tuple(E)] = terms.get(tuple(E), Fraction(0)) + c
        return Readout(terms, D, d)
    terms = {K: _fraction(c) for K, c in readout.terms.items()}
    zero = (0,) * d
    terms[zero] = terms.get(zero, Fraction(0)) - readout_value(model, z)
    return Readout(terms, D, d)


def target_for(rng: np.random.Generator, oracle: Oracle) -> tuple[int, ...]:
    """A target F: the oracle's own answers at 1^t 0^(n−t) (ties → a random sign), sometimes with
    one weight flipped, or uniformly random — so right, nearly right and wrong models all occur."""
    n = oracle.n
    kind = rng.random()
    if kind < 0.25:
        return tuple(int(v) for v in rng.choice((-1, 1), size=n + 1))
    F = [oracle.sign((1,) * t + (0,) * (n - t)) or int(rng.choice((-1, 1))) for t in range(n + 1)]
    if kind < 0.5:
        F[int(rng.integers(n + 1))] *= -1
    return tuple(F)


def random_symmetric(rng: np.random.Generator, n: int, max_T: int) -> tuple[int, ...]:
    """A random F on 0..n with at most max_T sign changes."""
    while True:
        F = tuple(int(v) for v in rng.choice((-1, 1), size=n + 1))
        if sum(F[t] != F[t + 1] for t in range(n)) <= max_T:
            return F


Construction = tuple[BooleanLayer, Readout, int, tuple[int, ...], str]


def random_construction(rng: np.random.Generator, max_dh: int = 6) -> Construction:
    """A Theorem 3 model for a random symmetric F (n ≤ 6) with D, H ≤ max_dh and D·H ≥ T: the
    automatic route choice, or a forced route (factorization; additive basis with Lemma 14's or a
    random basis)."""
    n = int(rng.integers(1, 7))
    D, H = (int(k) for k in rng.integers(1, max_dh + 1, size=2))
    F = random_symmetric(rng, n, D * H)
    T = sum(F[t] != F[t + 1] for t in range(n))
    kind = rng.random()
    if kind < 0.5:
        built = construct(F, n, D, H, use_search=bool(rng.random() < 0.5))
        return built.layer, built.readout, n, F, f"construct[{built.route}]"
    if kind < 0.7:
        return (*_factorization(F, n, D, H), n, F, "factorization")
    bases = [B for B in [lemma14_basis(D, H)] if B]
    for _ in range(8):
        B = sorted({int(b) for b in rng.integers(1, H + 1, size=int(rng.integers(1, H + 1)))})
        bases.append(B)
    for B in bases:
        if basis_range(B, D) >= T:
            built = construct(F, n, D, H, basis=B, route="additive-basis")
            return built.layer, built.readout, n, F, f"additive-basis {B}"
    return (*_factorization(F, n, D, H), n, F, "factorization")


def _factorization(F: Sequence[int], n: int, D: int, H: int) -> tuple[BooleanLayer, Readout]:
    built = construct(F, n, D, H, route="factorization")
    return built.layer, built.readout


def _nudge(rng: np.random.Generator, x: Fraction, positive: bool) -> Fraction:
    """x moved by an adversarial amount: ±2^-1074, a relative 2^-k (k = 30, 52, 53, 60, 200),
    1/3·2^-k."""
    k = int(rng.choice((30, 52, 53, 60, 200)))
    steps = [Fraction(1, 2**1074), abs(x) / 2**k if x else Fraction(1, 2**k), Fraction(1, 3 * 2**k)]
    step = steps[int(rng.integers(3))]
    y = x + step if (rng.random() < 0.5) else x - step
    return y if (y > 0 or not positive) else x + step


def perturb(
    rng: np.random.Generator, layer: BooleanLayer, readout: Readout, n: int
) -> tuple[BooleanLayer, Readout]:
    """One adversarial change to a (correct) construction: one weight or value nudged, a readout
    coefficient nudged, or the constant term moved by exactly the smallest |g| (a planted tie at the
    closest input), possibly by a hair more or less."""
    kind = rng.random()
    if kind < 0.5:
        h = int(rng.integers(layer.n_heads))
        head = layer.heads[h]
        w = [_fraction(head.w0), _fraction(head.w1)]
        v = [list(map(_fraction, head.v0)), list(map(_fraction, head.v1))]
        b = int(rng.integers(2))
        if rng.random() < 0.4:
            w[b] = _nudge(rng, w[b], positive=True)
        else:
            i = int(rng.integers(layer.dim))
            v[b][i] = _nudge(rng, v[b][i], positive=False)
        heads = list(layer.heads)
        heads[h] = BooleanHead(w[0], w[1], tuple(v[0]), tuple(v[1]))
        return BooleanLayer(tuple(heads)), readout
    terms = {K: _fraction(c) for K, c in readout.terms.items()}
    if kind < 0.7:
        K = list(terms)[int(rng.integers(len(terms)))]
        terms[K] = _nudge(rng, terms[K], positive=False)
    else:
        oracle = Oracle.evaluate(layer, readout, n)
        x = min(oracle.values, key=lambda y: abs(oracle.values[y]))
        shift = (
            oracle.values[x]
            * [1, 1, 1 + Fraction(1, 2**60), 1 - Fraction(1, 2**60)][int(rng.integers(4))]
        )
        zero = (0,) * readout.dim
        terms[zero] = terms.get(zero, Fraction(0)) - shift
    return layer, Readout(terms, readout.degree, readout.dim)


# ---------------------------------------------------------------- cases and their check


@dataclass
class Case:
    layer: BooleanLayer
    readout: Readout
    n: int
    F: tuple[int, ...]
    label: str
    constructed: bool = False  # Theorem 3 says it is right on every input

    def describe(self) -> str:
        heads = "; ".join(
            f"w=({h.w0}, {h.w1}) v0={[str(x) for x in h.v0]} v1={[str(x) for x in h.v1]}"
            for h in self.layer.heads
        )
        terms = {K: str(c) for K, c in self.readout.terms.items()}
        return (
            f"[{self.label}] n={self.n} F={list(self.F)} D={self.readout.degree} "
            f"d={self.layer.dim}\n"
            f"  heads: {heads}\n  readout: {terms}"
        )


FAMILIES = ("random", "ties", "perturbed", "constructed")


def make_case(rng: np.random.Generator, family: str) -> Case:
    if family in ("random", "ties"):
        draw = Draw(rng)
        layer, readout, n = random_model(rng, draw)
        if family == "ties":
            readout = plant_tie(rng, layer, readout, n)
        F = target_for(rng, Oracle.evaluate(layer, readout, n))
        return Case(layer, readout, n, F, f"{family}/{draw.theme}")
    layer, readout, n, F, route = random_construction(rng, max_dh=3 if family == "perturbed" else 6)
    if family == "perturbed":
        layer, readout = perturb(rng, layer, readout, n)
        return Case(layer, readout, n, F, f"perturbed {route}")
    return Case(layer, readout, n, F, route, constructed=True)


def cases(family: str):
    """Hypothesis strategy: Hypothesis draws the seed, numpy the model (uniform palette draws reach
    the edges far more often than Hypothesis's shrink-friendly value generation, see
    palettes.fuzz_cases)."""
    return st.integers(0, 2**64 - 1).map(
        lambda seed: make_case(np.random.default_rng(seed), family)
    )


@dataclass
class Counts:
    models: int = 0
    inputs: int = 0
    certified: int = 0
    ties: int = 0  # models with g = 0 on some input
    cli: int = 0
    disagreements: int = 0
    exceptions: int = 0
    examples: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        self.disagreements += 1
        if len(self.examples) < 5:
            self.examples.append(text)

    def summary(self, label: str) -> str:
        return (
            f"boolean soundness {label}: models {self.models}, inputs checked {self.inputs}, "
            "certified "
            f"{self.certified}, with ties {self.ties}, CLI checks {self.cli}, "
            f"disagreements {self.disagreements}, exceptions {self.exceptions}"
        )


def run_check_cli(path: str, F: Sequence[int], n: int | None) -> dict:
    """`headcount boolean check --model path --function F:… [--n n] --json`, in process: its one
    JSON object (without --n, check reads n from the file)."""
    function = "F:" + "".join("+" if v > 0 else "-" for v in F)
    argv = ["boolean", "check", "--model", path, "--function", function, "--json"]
    argv += [] if n is None else ["--n", str(n)]
    stdout, stderr = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            main(argv)
        except SystemExit as exit_info:
            code = exit_info.code or 0
    lines = stdout.getvalue().strip().splitlines()
    assert code == 0 and len(lines) == 1, (
        f"boolean check exited {code}: {stderr.getvalue().strip()}"
    )
    return json.loads(lines[0])


def run_saved_check(case: Case, folder: str) -> dict:
    """Save the model (save_boolean) and run `boolean check` on the file."""
    path = os.path.join(folder, "model.safetensors")
    save_boolean(case.layer, case.readout, path, {"n": case.n})
    return run_check_cli(path, case.F, case.n)


def cli_disagreements(case: Case, out: dict, oracle: Oracle) -> list[str]:
    """`boolean check`'s JSON against the oracle, plus the fields check adds to the certificate."""
    T = sum(case.F[t] != case.F[t + 1] for t in range(case.n))
    DH = case.readout.degree * case.layer.n_heads
    found = disagreements(out, oracle, case.F)
    expected = {
        "n": case.n,
        "threshold_degree": T,
        "degree": case.readout.degree,
        "heads": case.layer.n_heads,
        "dim": case.layer.dim,
        "below_bound": DH < T,
    }
    found += [
        f"check says {k} = {out.get(k)!r}, expected {v!r}"
        for k, v in expected.items()
        if out.get(k) != v
    ]
    t2 = out.get("theorem2", {})
    if not (
        t2.get("degree_ok") is True and t2.get("signs_match") is True and t2.get("bound") == DH
    ):
        found.append(
            f"theorem2 {t2!r}: Lemma 8 makes deg R ≤ D·H = {DH} and sign R = the model's sign"
        )
    return [f"CLI: {text}" for text in found]


def check_case(case: Case, counts: Counts, cli_folder: str | None = None) -> None:
    """Oracle on all 2^n inputs vs certify_boolean_model and the exact values it decides on (and
    `boolean check` plus model_values_exact's direct method when cli_folder is given). Every
    exception is counted (the slow loop reports them at the end); the fast set asserts on counts."""
    try:
        oracle = Oracle.evaluate(case.layer, case.readout, case.n)
    except Exception as error:  # noqa: BLE001 — a bug in the oracle; counted, never skipped
        counts.exceptions += 1
        if len(counts.examples) < 5:
            counts.examples.append(f"the oracle raised {error!r}:\n  {case.describe()}")
        return
    counts.models += 1
    counts.inputs += 2**case.n
    counts.ties += any(v == 0 for v in oracle.values.values())
    try:
        cert = certify_boolean_model(case.layer, case.readout, case.F).to_json()
        values = model_values_exact(case.layer, case.readout, case.n)
        direct = (
            None
            if cli_folder is None
            else model_values_exact(case.layer, case.readout, case.n, method="direct")
        )
        cli = None if cli_folder is None else run_saved_check(case, cli_folder)
    except Exception as error:  # noqa: BLE001 — certify / check must not raise on a valid model
        counts.exceptions += 1
        if len(counts.examples) < 5:
            counts.examples.append(f"the project raised {error!r}:\n  {case.describe()}")
        return
    try:
        found = disagreements(cert, oracle, case.F) + value_disagreements(values, oracle, "integer")
        if cli is not None:
            counts.cli += 1
            found += value_disagreements(direct, oracle, "direct") + cli_disagreements(
                case, cli, oracle
            )
        if case.constructed and oracle.wrong_inputs(case.F):
            found.append(
                f"Theorem 3: the construction is wrong on {oracle.wrong_inputs(case.F)[:4]}"
            )
    except Exception as error:  # noqa: BLE001 — a bug in this file's comparison; counted, never skipped
        counts.exceptions += 1
        if len(counts.examples) < 5:
            counts.examples.append(
                f"comparing with the oracle raised {error!r}:\n  {case.describe()}"
            )
        return
    counts.certified += cert["certified"] is True
    if found:
        counts.note("\n  ".join(found) + "\n  " + case.describe())


def assert_sound(counts: Counts) -> None:
    assert counts.disagreements == 0 and counts.exceptions == 0, "\n".join(counts.examples)


# ---------------------------------------------------------------- the oracle itself


def test_oracle_worked_example():
    # spec/boolean.md's worked check (n = 2, XOR, H = 2, D = 1): layer outputs 3/16, −1/48, −1/48,
    # 1/32
    layer = BooleanLayer(
        (BooleanHead(1, 2, ("-31/16",), ("-27/32",)), BooleanHead(1, 3, ("17/8",), ("7/8",)))
    )
    model = ExactModel.of(layer, Readout({(1,): 1}, 1, 1))
    outs = [layer_output(model, x)[0] for x in ((0, 0), (0, 1), (1, 0), (1, 1))]
    assert outs == [Fraction(3, 16), Fraction(-1, 48), Fraction(-1, 48), Fraction(1, 32)]
    oracle = Oracle.evaluate(layer, Readout({(1,): 1}, 1, 1), 2)
    assert oracle.wrong_inputs((1, -1, 1)) == [] and oracle.wrong_inputs((1, 1, 1)) == [
        (0, 1),
        (1, 0),
    ]


def test_oracle_ties_are_errors_and_margin_text():
    # g = z − 1/4 with one head v0 = 0, v1 = 1, w0 = w1: z = t/n, so g = 0 exactly at t = 1 of n = 4
    layer = BooleanLayer((BooleanHead(1, 1, (0,), (1,)),))
    readout = Readout({(1,): 1, (0,): "-1/4"}, 1, 1)
    oracle = Oracle.evaluate(layer, readout, 4)
    assert sorted(oracle.wrong_inputs((-1, 1, 1, 1, 1))) == [
        (0, 0, 0, 1),
        (0, 0, 1, 0),
        (0, 1, 0, 0),
        (1, 0, 0, 0),
    ]
    assert oracle.wrong_inputs((-1, -1, 1, 1, 1)) == oracle.wrong_inputs(
        (-1, 1, 1, 1, 1)
    )  # 0 wrong for ±1
    cert = certify_boolean_model(layer, readout, (-1, 1, 1, 1, 1)).to_json()
    assert (
        cert["min_abs_margin"] == "0" and cert["errors"] == 1 and cert["wrong_input"]["x"] == "1000"
    )
    assert disagreements(cert, oracle, (-1, 1, 1, 1, 1)) == []
    third = Fraction(1, 3 * 2**200)  # 2.07433842595371390238135468459|337…e-61
    assert margin_disagreement("2.07433842595371390238135468459e-61", third) is None
    assert (
        margin_disagreement("2.07433842595371390238135468460e-61", third) is not None
    )  # last digit off
    half = Fraction(10**30 + 5, 10**100)  # 1.00000000000000000000000000000|5e-70: a tie, rounded up
    assert margin_disagreement("1.00000000000000000000000000001e-70", half) is None
    assert margin_disagreement("1.00000000000000000000000000000e-70", half) is not None
    assert margin_disagreement("1/2", Fraction(1, 3)) is not None


# ---------------------------------------------------------------- the suite can fail


def test_a_corrupted_verdict_is_caught(monkeypatch):
    """Flip one exact value inside certify (as a sign bug would): the comparison must object, for a
    correct construction (then certified = False, errors = 1) and for a wrong model (the count
    moves); and each corrupted field of an honest verdict is caught."""
    F, G = (
        (1, -1, 1, -1),
        (1, 1, 1, -1),
    )  # the construction for F is right; for G it is wrong at t = 1 only
    built = construct(F, 3, 3, 1)
    layer, readout = built.layer, built.readout
    oracle = Oracle.evaluate(layer, readout, 3)
    honest_F = certify_boolean_model(layer, readout, F).to_json()
    honest_G = certify_boolean_model(layer, readout, G).to_json()
    assert disagreements(honest_F, oracle, F) == [] and disagreements(honest_G, oracle, G) == []
    assert honest_G["errors"] == 1 and honest_G["wrong_input"]["x"] == "100"
    exact = certify_module.model_values_exact

    def flipped(*args, **kwargs):  # the value at t = 0 negated
        values = exact(*args, **kwargs)
        return [-values[0]] + values[1:]

    monkeypatch.setattr(certify_module, "model_values_exact", flipped)
    found = disagreements(certify_boolean_model(layer, readout, F).to_json(), oracle, F)
    assert any(text.startswith("certified = False") for text in found)
    assert any(text.startswith("errors = 1,") for text in found)
    found = disagreements(certify_boolean_model(layer, readout, G).to_json(), oracle, G)
    assert any(text.startswith("errors = 2,") for text in found)
    monkeypatch.undo()
    for field_, bad in (
        ("wrong_input", {"t": 3, "x": "111", "model_sign": -1, "target": -1}),
        ("wrong_input", {"t": 1, "x": "100", "model_sign": 1, "target": 1}),
        ("wrong_input", None),
        ("min_abs_margin", "1/7"),
        ("errors", 2),
        ("certified", True),
    ):
        assert disagreements(honest_G | {field_: bad}, oracle, G) != [], (field_, bad)


# ---------------------------------------------------------------- fast set: Hypothesis,
# derandomized

FAST = settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("family", FAMILIES)
def test_certificate_equals_oracle_fuzzed(family):
    counts = Counts()

    @FAST
    @given(case=cases(family))
    def run(case):
        before = (counts.disagreements, counts.exceptions)
        check_case(case, counts)
        assert (counts.disagreements, counts.exceptions) == before, "\n".join(counts.examples)

    run()
    assert counts.models >= FAST.max_examples
    if family == "ties":
        assert counts.ties > counts.models // 2, "planted ties did not reach g = 0"
    if family in ("random", "perturbed"):
        assert 0 < counts.certified < counts.models, (
            "only one branch of the certificate was exercised"
        )


def test_check_command_equals_oracle(tmp_path):
    """`boolean check --json` on saved models of every family (right, wrong, tied) agrees with the
    oracle."""
    rng = np.random.default_rng(11)
    counts = Counts()
    for family in FAMILIES:
        for _ in range(4):
            check_case(make_case(rng, family), counts, cli_folder=str(tmp_path))
    assert_sound(counts)
    assert counts.cli == 16 and counts.ties > 0 and 0 < counts.certified < counts.models


def test_construct_and_certify_saved_model_equals_oracle(tmp_path):
    """construct_and_certify's own verdict and its saved file (read back) against the oracle."""
    rng = np.random.default_rng(5)
    for k in range(6):
        n = int(rng.integers(1, 7))
        D, H = (int(v) for v in rng.integers(1, 4, size=2))
        F = random_symmetric(rng, n, D * H)
        path = str(tmp_path / f"m{k}.safetensors")
        cert = construct_and_certify(F, n, D, H, out=path)
        model = load_boolean(path)
        oracle = Oracle.evaluate(model.layer, model.readout, n)
        assert (
            model.info["n"] == n
            and disagreements(cert.to_json(), oracle, F) == []
            and cert.certified
        )
        assert disagreements(run_check_cli(path, F, None), oracle, F) == []  # n read from the file


def test_saved_model_with_a_huge_exact_weight_loads(tmp_path):
    """One head, w1 = 10^4300 (4301 digits): save_boolean writes it, load_boolean must read it back,
    and `boolean check` must agree with the oracle (once: exit 2, "not a rational number: '1000…'",
    because to_fmpq parsed strings with Fraction, which Python's 4300-digit int/str limit stops)."""
    layer, readout = (
        BooleanLayer((BooleanHead(1, 10**4300, (1,), (-1,)),)),
        Readout({(1,): 1}, 1, 1),
    )
    path = str(tmp_path / "huge.safetensors")
    save_boolean(layer, readout, path, {"n": 2})
    model = load_boolean(path)
    assert (model.layer, model.readout) == (layer, readout)
    F = (1, -1, -1)
    assert disagreements(run_check_cli(path, F, 2), Oracle.evaluate(layer, readout, 2), F) == []


# ---------------------------------------------------------------- slow set: seeded numpy loop


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_certificate_equals_oracle_many_models(family):
    """SLOW_MODELS models of `family`, model k drawn from the generator seeded (40_000 + family
    index, k), so any reported case is rebuilt by make_case(np.random.default_rng([40_000 + i, k]),
    family)."""
    base = 40_000 + FAMILIES.index(family)
    counts = Counts()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for k in range(SLOW_MODELS):
            try:
                case = make_case(np.random.default_rng([base, k]), family)
            except Exception as error:  # noqa: BLE001 — a construction that fails is reported too
                counts.exceptions += 1
                counts.examples.append(f"building {family} case {k} raised {error!r}")
                continue
            case.label += f" seed [{base}, {k}]"
            check_case(case, counts, cli_folder=folder if k % CLI_EVERY == 0 else None)
    print(f"\n{counts.summary(family)}, {time.perf_counter() - start:.0f} s")
    for text in counts.examples:
        print(text)
    assert counts.models == SLOW_MODELS
    assert_sound(counts)
