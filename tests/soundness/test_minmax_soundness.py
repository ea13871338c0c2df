"""Soundness of the min/max verifiers (issue 11, findings 5 and 6): fuzzed tiny layers against an
independent exact brute force.

The oracle below shares no code with headcount.minmax.exact_verify or headcount.minmax.exact_signs.
For a layer of heads (scores s^k, values v^k) and a classifier θ it takes every inner product
c^k_iω = ⟨θ_i, v^k_ω⟩ as a Fraction (float64 weights are exact dyadic rationals) and decides, for
every multiset of [M]^n, the sign of each logit difference ⟨θ_i − θ_j, z⟩ = Σ_k N_k/D_k:
  * its sign is that of the exponential polynomial Σ_k N_k Π_{l≠k} D_l (every D_k > 0), collected by
    exponent in exact rationals; it is zero exactly iff every collected coefficient is zero
    (Lindemann–Weierstrass: e^a for distinct rationals a are linearly independent);
  * otherwise its sign is that of Σ c·e^{a − a_top} evaluated in flint arb balls at rising precision
    until
    the ball excludes zero (evaluating Σ_k N_k/D_k directly is not enough: two heads' leading terms
    can
    cancel exactly, leaving e^-10^6-size remainders no ball resolves).
The decision is the unique top class, or ⊥ on an exact tie at the top (⊥ is always wrong).

Properties checked on every model (one head; two heads; two heads in blocks), both tasks:
  * verify_exact_one_head's verdict (one head) and verify_block_layer's (block layers) = the
    oracle's;
  * verify_brute's error count = the oracle's, its counterexample is one the oracle calls wrong;
  * decide_exact = the oracle's decision on every multiset;
  * nothing but a one-line ValueError (documented: undecided) ever escapes.
Weights come from adversarial palettes: odd multiples of 2^-(p+1), ±2^p from subnormal to 2^1023,
1/2 ± 2^-m, subnormals, 2^-1020-scale, 700–745, 1e6…1e300 and 1e308 / the largest float, 1/3, zeros,
and
exact ties (a model draws most weights from a small pool of values, so equal weights are common).

Two more properties check the float64 bounds themselves (not only the decisions built on them):
every logit verify computes is within its bound of the exact logit, and every gap of the one-head
scan is within its bound of the exact gap (arb at 4096 bits; these use float_bounds.py and verify's
private scan helpers).

Fast set: the default run (≈ 13 s of CPU). Slow set, 20,000 models per family, prints the counts:
    python -m pytest -m slow -s tests/soundness/test_minmax_soundness.py
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction

import flint
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headcount.core.model.symbols import BOTTOM
from headcount.minmax.brute import verify_brute
from headcount.minmax.exact_verify import decide_exact, verify_block_layer, verify_exact_one_head
from headcount.minmax.model import Classifier, TokenHead, TokenLayer

MAX_ORACLE_PREC = 1 << 15
FMAX = float(np.finfo(np.float64).max)

# ---------------------------------------------------------------- the independent exact oracle


class Oracle:
    """Exact decisions of a layer + classifier (see the module docstring)."""

    def __init__(self, heads: list[tuple[np.ndarray, np.ndarray]], theta: np.ndarray):
        self.M = theta.shape[0]
        self.s = [[Fraction(float(a)) for a in scores] for scores, _ in heads]
        tq = [[Fraction(float(a)) for a in row] for row in theta]
        self.c = [
            [
                [
                    sum((t * Fraction(float(v)) for t, v in zip(tq[i], values[w])), Fraction(0))
                    for w in range(self.M)
                ]
                for i in range(self.M)
            ]
            for _, values in heads
        ]

    def _deltas(self, i: int, j: int) -> list[list[Fraction]]:
        return [[ck[i][w] - ck[j][w] for w in range(self.M)] for ck in self.c]

    def _collected(self, hist: dict[int, int], deltas) -> dict[Fraction, Fraction]:
        """Σ_k N_k Π_{l≠k} D_l (the sign of Σ_k N_k/D_k, as every D_k > 0) as {exponent:
        coefficient}, zero coefficients dropped: a sum over one token per head of Π h·e^{Σ s}·Σ_k
        δ^k, collected exactly."""
        coef: dict[Fraction, Fraction] = defaultdict(Fraction)
        H = len(self.s)
        for combo in itertools.product(list(hist), repeat=H):
            weight = 1
            for w in combo:
                weight *= hist[w]
            expo = sum((self.s[k][combo[k]] for k in range(H)), Fraction(0))
            coef[expo] += weight * sum((deltas[k][combo[k]] for k in range(H)), Fraction(0))
        return {a: c for a, c in coef.items() if c != 0}

    @staticmethod
    def _ball(terms: dict[Fraction, Fraction]):
        """Σ c·e^{a − a_top} as an arb ball at the current precision (the top term is exactly
        c_top)."""
        top = max(terms)
        total = flint.arb(0)
        for a, c in terms.items():
            d = a - top
            total += (
                flint.arb(flint.fmpq(c.numerator, c.denominator))
                * flint.arb(flint.fmpq(d.numerator, d.denominator)).exp()
            )
        return total

    def sign(self, hist: dict[int, int], i: int, j: int) -> int:
        """Exact sign of ⟨θ_i − θ_j, z(h)⟩ (0-based classes, hist {0-based token: count}): 0 iff
        every collected coefficient is 0 (Lindemann–Weierstrass), else the sign of an arb ball that
        excludes 0."""
        terms = self._collected(hist, self._deltas(i, j))
        if not terms:
            return 0
        old, prec = flint.ctx.prec, 64
        try:
            while prec <= MAX_ORACLE_PREC:
                flint.ctx.prec = prec
                ball = self._ball(terms)
                if ball > 0:
                    return 1
                if ball < 0:
                    return -1
                prec *= 2
        finally:
            flint.ctx.prec = old
        raise RuntimeError(f"oracle: sign unresolved at {MAX_ORACLE_PREC} bits")

    def decision(self, lst: tuple[int, ...]) -> int:
        """1-based top class of the list, or BOTTOM when the top is tied."""
        hist: dict[int, int] = defaultdict(int)
        for t in lst:
            hist[t - 1] += 1
        best, tied = 0, False
        for c in range(1, self.M):
            sgn = self.sign(hist, c, best)
            if sgn > 0:
                best, tied = c, False
            elif sgn == 0:
                tied = True
        return BOTTOM if tied else best + 1


# ---------------------------------------------------------------- adversarial models

_MAGNITUDES = st.one_of(
    st.builds(lambda k, p: (2 * k + 1) * 2.0 ** -(p + 1), st.integers(0, 15), st.integers(0, 60)),
    st.builds(lambda p: 2.0**p, st.integers(-1074, 1023)),
    st.builds(lambda m, sg: 0.5 + sg * 2.0**-m, st.integers(1, 53), st.sampled_from([-1, 1])),
    st.builds(lambda k: k * 2.0**-1074, st.integers(1, 2**52 - 1)),  # subnormals
    st.builds(
        lambda k, e: (1 + k * 2.0**-52) * 2.0**e,
        st.integers(0, 2**52 - 1),
        st.integers(-1022, -1016),
    ),
    st.floats(700, 745),
    st.builds(lambda e, m: m * 10.0**e, st.integers(6, 300), st.sampled_from([1.0, 1.5, 9.99])),
    st.sampled_from([1e308, FMAX, 1 / 3, 2 / 3, 0.0, 1.0]),
)
WEIGHT = st.builds(lambda m, sg: sg * m, _MAGNITUDES, st.sampled_from([1.0, -1.0]))


@dataclass
class Model:
    heads: list[tuple[np.ndarray, np.ndarray]]  # (scores [M], values [M d]) per head
    theta: np.ndarray  # [M d]
    n: int
    block: bool = False  # only head 0 meets θ's support

    def layer(self) -> TokenLayer:
        return TokenLayer(tuple(TokenHead(s, v) for s, v in self.heads))


@st.composite
def _array(draw, shape, pool):
    """Entries from the model's pool (± and 0 included: ties and cancellations) or fresh palette
    values."""
    entry = st.one_of(st.sampled_from(pool), st.sampled_from([-p for p in pool] + [0.0]), WEIGHT)
    return np.array(
        draw(st.lists(entry, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    ).reshape(shape)


BETA = st.sampled_from([1.0, 2.0, 5.0, 30.0, 700.0, 745.0, 1e6, 1e300, None]).flatmap(
    lambda b: _MAGNITUDES if b is None else st.just(b)
)


@st.composite
def _head(draw, M, d, pool, structured):
    if structured:  # the construction's shape: scores ±β·rank, distinct ±c codes (while 2^d ≥ M)
        beta = draw(BETA) or 1.0
        sign = draw(st.sampled_from([-1.0, 1.0]))
        with np.errstate(over="ignore"):
            scores = np.clip(sign * beta * np.arange(1, M + 1), -1e308, 1e308)
        codes = draw(st.permutations(list(itertools.product([-1.0, 1.0], repeat=d))))
        c = abs(draw(st.sampled_from(pool))) or 1.0
        return scores, c * np.array([codes[i % len(codes)] for i in range(M)])
    return draw(_array((M,), pool)), draw(_array((M, d), pool))


@st.composite
def models(draw, heads: int, block: bool = False) -> Model:
    M, n, d = draw(st.integers(2, 4)), draw(st.integers(2, 4)), draw(st.integers(1, 3))
    pool = draw(st.lists(WEIGHT, min_size=1, max_size=4))
    structured = draw(st.sampled_from([True, True, False]))
    hs = [draw(_head(M, d, pool, structured)) for _ in range(heads)]
    if structured:  # θ = the first head's codes, sometimes scaled or with one entry perturbed
        scale = abs(draw(st.sampled_from(pool))) or 1.0 if draw(st.booleans()) else 1.0
        with np.errstate(over="ignore", under="ignore"):
            theta = np.clip(hs[0][1] * scale, -FMAX, FMAX)
            if draw(st.sampled_from([True, False, False])):
                i, j = draw(st.integers(0, M - 1)), draw(st.integers(0, d - 1))
                theta[i, j] = np.clip(
                    theta[i, j] + draw(WEIGHT) if draw(st.booleans()) else draw(WEIGHT), -FMAX, FMAX
                )
    else:
        theta = draw(_array((M, d), pool))
    if block:  # head 0 reads the first d coordinates, head 1 the next d; θ lives on head 0's block
        zeros = np.zeros((M, d))
        hs = [(hs[0][0], np.hstack([hs[0][1], zeros])), (hs[1][0], np.hstack([zeros, hs[1][1]]))]
        theta = np.hstack([theta, zeros])
    return Model(hs, theta, n, block)


# ---------------------------------------------------------------- the property


@dataclass
class Stats:
    models: int = 0
    verdicts: dict = field(default_factory=lambda: {"correct": 0, "wrong": 0})
    value_errors: int = 0


def _call(stats: Stats, fn, *args):
    """Run a verifier on args; only a one-line ValueError (documented: undecided) may escape it."""
    try:
        return fn(*args)
    except ValueError as err:
        assert "\n" not in str(err)
        stats.value_errors += 1
        return None


def check_model(model: Model, stats: Stats) -> None:
    layer, M, n = model.layer(), model.theta.shape[0], model.n
    oracle = Oracle(model.heads, model.theta)
    lists = list(itertools.combinations_with_replacement(range(1, M + 1), n))
    decisions = [oracle.decision(lst) for lst in lists]
    stats.models += 1
    for task in ("min", "max"):
        clf = Classifier(model.theta)
        truth = [min(lst) if task == "min" else max(lst) for lst in lists]
        wrong = {lst: dec for lst, dec, t in zip(lists, decisions, truth) if dec != t}
        stats.verdicts["wrong" if wrong else "correct"] += 1
        if task == "min":
            got = _call(stats, decide_exact, layer, clf, np.array(lists))
            assert got is None or list(got) == decisions, (model, task)
        bf = _call(stats, verify_brute, layer, clf, task, n)
        if bf is not None:
            assert bf.errors == len(wrong) and bf.correct == (not wrong), (model, task, bf)
            assert bf.correct or (
                bf.worst_input in wrong and bf.decision == wrong[bf.worst_input]
            ), (
                model,
                bf,
            )
        verdicts = []
        if len(model.heads) == 1:
            verdicts.append(_call(stats, verify_exact_one_head, layer.heads[0], clf, task, n))
        if model.block:
            verdicts.append(_call(stats, verify_block_layer, layer, clf, task, n))
        for v in verdicts:
            if v is not None:
                assert v.correct == (not wrong), (model, task, v)
                assert v.correct or (
                    v.worst_input in wrong and v.decision == wrong[v.worst_input]
                ), (
                    model,
                    v,
                )


FAMILIES = {
    "one-head": models(1),
    "two-head": models(2),
    "two-head-block": models(2, block=True),
}
HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def _run(family: str, examples: int) -> Stats:
    stats = Stats()

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=HEALTH,
    )
    @given(model=FAMILIES[family])
    def prop(model):
        check_model(model, stats)

    prop()
    return stats


@pytest.mark.parametrize(
    "family, examples", [("one-head", 400), ("two-head", 200), ("two-head-block", 200)]
)
def test_verifiers_match_independent_exact_brute_force(family, examples):
    stats = _run(family, examples)
    assert stats.models >= examples and stats.value_errors == 0
    assert stats.verdicts["correct"] > 0 and stats.verdicts["wrong"] > 0  # both verdicts exercised


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_verifiers_match_independent_exact_brute_force_slow(family):
    stats = _run(family, 20_000)
    print(
        f"\n{family}: {stats.models} models, verdicts {stats.verdicts}, disagreements 0, "
        f"ValueErrors {stats.value_errors}, other exceptions 0"
    )
    assert stats.models >= 20_000


# ---------------------------------------------------------------- hand-picked regimes


def _fixed(scores, values, theta, n, heads2=None):
    heads = [(np.array(scores, float), np.array(values, float))]
    if heads2 is not None:
        heads.append((np.array(heads2[0], float), np.array(heads2[1], float)))
    return Model(heads, np.array(theta, float), n)


REGIMES = {
    "finding-5 overflow 1e200": _fixed(
        [0, 0], [[3, 1e200], [1, 1e200]], [[3, 1e200], [1, 1e200]], 2
    ),
    "finding-6 rounded difference": _fixed(
        [0, -1e4], [[1, 1 + 2**-52], [0, 1]], [[1, 0], [2**-54, 1 - 2**-52]], 2
    ),
    "1e300 values and theta": _fixed(
        [0, 1, 2],
        [[1e300, 1], [-1e300, 1], [1e300, -1]],
        [[1e300, 1e300], [1e300, -1e300], [-1e300, 1e300]],
        3,
    ),
    "largest float": _fixed(
        [0, 0, 0],
        [[1.7976931348623157e308], [-1.7976931348623157e308], [1e308]],
        [[1.7976931348623157e308], [1.0], [-1e308]],
        3,
    ),
    "subnormal values": _fixed(
        [0, 0, 0], [[5e-324, 1], [1e-323, 1], [0, 1]], [[1, 0.5], [-1, 0.5], [0, 0.5]], 4
    ),
    "2^-1020 scale": _fixed(
        [1, 0, -1], [[2**-1020], [3 * 2**-1021], [2**-1019]], [[2**-1020], [-(2**-1020)], [0]], 3
    ),
    "scores ±745": _fixed(
        [745, -745, 0], [[1, 0], [0, 1], [1, 1]], [[1, 0], [0, 1], [1, 1 + 2**-52]], 4
    ),
    "scores 700..745 near ties": _fixed(
        [700, 744.5, 745], [[1], [-1], [0.5]], [[1], [-1], [0.5]], 3
    ),
    "scores ±1e6": _fixed(
        [1e6, -1e6, 1e6 - 1], [[1, 0], [0, 1], [1, 1]], [[1, 0], [0, 1], [0.5, 0.5]], 3
    ),
    "scores ±1e300": _fixed([1e300, -1e300, 0], [[1], [2], [3]], [[1], [2], [3]], 4),
    "exact tie 1/3": _fixed([0, 0], [[1 / 3], [2 / 3]], [[1], [-0.5]], 3),
    "two heads, 1e300 and subnormal": _fixed(
        [0, 1], [[1e300], [-1e300]], [[1], [-1]], 3, heads2=([745, -745], [[5e-324], [1e-323]])
    ),
}


@pytest.mark.parametrize("name", list(REGIMES))
def test_hand_picked_regimes(name):
    stats = Stats()
    check_model(REGIMES[name], stats)
    assert stats.models == 1 and stats.value_errors == 0


# ---------------------------------------------------------------- the float bounds themselves


def _exact_scaled_logits(model: Model, lst: tuple[int, ...], shift: int, prec: int = 4096) -> list:
    """arb balls of every logit ⟨θ_i, z⟩·2^-shift on one list (every head shifted by its top
    score)."""
    M = model.theta.shape[0]
    old = flint.ctx.prec
    try:
        flint.ctx.prec = prec
        out = [flint.arb(0)] * M
        for scores, values in model.heads:
            s = [Fraction(float(scores[t - 1])) for t in lst]
            top = max(s)
            e = [flint.arb(flint.fmpq((a - top).numerator, (a - top).denominator)).exp() for a in s]
            den = sum(e, flint.arb(0))
            for i in range(M):
                c = [
                    sum(
                        (
                            Fraction(float(a)) * Fraction(float(b))
                            for a, b in zip(model.theta[i], values[t - 1])
                        ),
                        Fraction(0),
                    )
                    * Fraction(2) ** -shift
                    for t in lst
                ]
                num = sum(
                    (
                        ej * flint.arb(flint.fmpq(cj.numerator, cj.denominator))
                        for ej, cj in zip(e, c)
                    ),
                    flint.arb(0),
                )
                out[i] = out[i] + num / den
        return out
    finally:
        flint.ctx.prec = old


@settings(
    max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=HEALTH
)
@given(model=st.one_of(models(1), models(2)))
def test_logit_bounds_contain_the_exact_logits(model):
    """verify's float64 logits are within their rigorous bound R of the exact ones on every list
    (this checks the bound itself, not just the decisions built on it; uses float_bounds.py
    directly)."""
    from headcount.minmax import float_bounds as fb

    M = model.theta.shape[0]
    prod = fb.scaled_products(model.theta, [v for _, v in model.heads])
    lists = np.array(list(itertools.combinations_with_replacement(range(M), model.n)))
    L, R = fb.logit_bounds(model.layer(), prod, lists)
    assert np.all(np.isfinite(L)) and np.all(np.isfinite(R))
    old = flint.ctx.prec
    for b, lst in enumerate(lists):
        exact = _exact_scaled_logits(model, tuple(int(t) + 1 for t in lst), prod.shift)
        flint.ctx.prec = 4096
        try:
            for i in range(M):
                mid, rad = Fraction(float(L[b, i])), Fraction(float(R[b, i]))
                lo, hi = mid - rad, mid + rad
                assert exact[i] >= flint.arb(flint.fmpq(lo.numerator, lo.denominator)), (
                    model,
                    lst,
                    i,
                )
                assert exact[i] <= flint.arb(flint.fmpq(hi.numerator, hi.denominator)), (
                    model,
                    lst,
                    i,
                )
        finally:
            flint.ctx.prec = old


@settings(
    max_examples=80, deadline=None, derandomize=True, database=None, suppress_health_check=HEALTH
)
@given(model=models(1), task=st.sampled_from(["min", "max"]))
def test_scan_bounds_contain_the_exact_gaps(model, task):
    """Every float G̃ of the one-head scan is within its own bound of the exact G = (α_x D_x + (n−1)
    α_ω D_ω) / (α_x + (n−1) α_ω), and the column bound dominates the entries' bounds (this checks
    the bounds themselves; uses float_bounds.py and verify's private scan helpers)."""
    from math import log

    from headcount.minmax import exact_verify as vm
    from headcount.minmax import float_bounds as fb

    (scores, values), theta, n = model.heads[0], model.theta, model.n
    if task == "max":
        scores, values, theta = scores[::-1], values[::-1], theta[::-1]
    M = theta.shape[0]
    prod = fb.scaled_products(theta, [values])
    B = fb.gap_bound_matrix(prod, fb.rho_weights(n))
    floor = fb.scan_floor(prod)
    c = [
        [
            sum(
                (Fraction(float(a)) * Fraction(float(b)) for a, b in zip(theta[i], values[w])),
                Fraction(0),
            )
            * Fraction(2) ** -prod.shift
            for w in range(M)
        ]
        for i in range(M)
    ]
    old = flint.ctx.prec
    try:
        flint.ctx.prec = 4096
        for x in range(M):
            gap, tol_col, w, wc = vm._scan_x(
                prod.C[0], B, B.max(axis=0), scores, x, log(n - 1), floor
            )
            ys, oms = np.nonzero(np.ones((M, M - x), dtype=bool))
            tol = vm._entry_tol(B, x, ys, oms, w, wc, floor)
            for y, om, t in zip(ys, oms, tol):
                if y == x:
                    continue
                assert t <= tol_col[om]
                d = Fraction(float(scores[x + om])) - Fraction(float(scores[x]))
                r = (n - 1) * flint.arb(
                    flint.fmpq(d.numerator, d.denominator)
                ).exp()  # (n−1)α_ω/α_x
                dx, dw = c[x][x] - c[y][x], c[x][x + om] - c[y][x + om]
                exact = (
                    flint.arb(flint.fmpq(dx.numerator, dx.denominator))
                    + r * flint.arb(flint.fmpq(dw.numerator, dw.denominator))
                ) / (1 + r)
                g, t = Fraction(float(gap[y, om])), Fraction(float(t))
                assert exact >= flint.arb(flint.fmpq((g - t).numerator, (g - t).denominator)), (
                    model,
                    task,
                    x,
                    y,
                    om,
                )
                assert exact <= flint.arb(flint.fmpq((g + t).numerator, (g + t).denominator)), (
                    model,
                    task,
                    x,
                    y,
                    om,
                )
    finally:
        flint.ctx.prec = old
