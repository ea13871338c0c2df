"""Proven float64 error bounds of the INDEX protocol, and the exact re-decision of the disagreements
they cannot classify (is the model's exact head output within tolerance of a rounding tie?).

Float evaluation. Everything above runs in float64, so three more errors enter, each bounded
rigorously (u = 2^-53, γ_d = d·u/(1 − d·u), |fl(a∘b) − a∘b| ≤ u|fl(a∘b)|; libm's exp and log within
4 ulp and scipy's expit = 1/(1 + e^{−x}) within 16u relative — the assumptions of
:mod:`headcount.core.passes.bounds`):

* a weighted average Σ_j w̃_j v_j / Σ_j w̃_j over N terms with w̃_j = exp(fl(s̃_j − s̃_top))
  (Alice's r and Bob's b, N = k and k+1): each float score errs by σ ≤ γ_d·Σ|q_i k_i|, so each
  weight by a factor e^{±η}(1 ± 8u), η = 2σ + u·min(spread, 746), ρ = that factor − 1; weights that
  underflow are off by < 2^-1070 absolutely against a total ≥ 1 (the top weight is exactly 1). Then,
  with V the largest |v_j| and Z the exact total, the average errs by ≤ 2V·((1+ρ)γ_N + ρ +
  N·2^-1069)/(1 − ρ − γ_N − N·2^-1069) + u·|result|, and log Z̃ by ≤ (ρ + γ_N + ργ_N + N·2^-1069)/(1
  − ρ − γ_N − N·2^-1069). (Unusable — +∞ — once η > 1/2: scores too large for float64 to weigh.) So
  s = log Z_A and log Z_B err by σ + that + 8u(log N + 1) + u(max|s| + log N + 2); Alice's s bound
  also covers the float ends of the layout interval (+2σ).
* the mix Y = b + λ(r − b) with λ = expit(s − log Z_B): from input errors δ_r, δ_s, δ_b, δ_{log
  Z_B}, |fl Y − Y| ≤ u(|Y| + |λ(r−b)| + λ|r−b|) + max(δ_b, δ_r) + Δλ·(|r−b|(1+u) + δ_r + δ_b) with
  Δλ = (δ_s + δ_{log Z_B} + u|s − log Z_B|)/4 + 16uλ + 2^-1020 (the logistic function is
  1/4-Lipschitz).
* Alice rounds her float r̃, s̃, so |r − r̂| ≤ ε/2 + δ_r and |s − ŝ| ≤ ε/2 + δ_s, which adds Φ_A =
  λ̂δ_r + (δ_s/4)(|r̂ − b| + ε/2 + δ_r) + (ε/8)δ_r to E; Bob's own float error is Φ_B (the mix bound
  with exact inputs r̂, ŝ). Bob's proven bound on |Y − fl Ỹ| is T_Bob = E + Φ_A + Φ_B, all evaluated
  from what Bob knows (λ̂ and |r̂ − b| from his float values plus their error bounds, capped by 1
  and |r̂| + max|v_Bob|).

Explained disagreements. check_protocol compares Bob with predict at fixed:p, which is the exact
model (core.passes.exact_fixed), so Bob's answer can legitimately differ only where his rounding of
fl Ỹ differs from the model's rounding of Y. A disagreement is *explained* when some coordinate of
the model's exact head output Y provably lies within T of a tie point, where T = T_Bob while its
float part Φ_A + Φ_B is at most 2^-p·2^-10 (FLOAT_SHARE), and T = E (the protocol's own ε error
only) where it is larger: a float error that is not small against the 2^-p grid could not tell a tie
from a real disagreement, so it never explains one. The decision is made from check_protocol's float
Y (its own error δ_Y is the mix bound with Alice's input errors) when that settles it, and otherwise
*exactly*: the scores are exact rationals, python-flint arb balls at rising precision give Y, and
Lindemann–Weierstrass (core.numbers.expsum.sign_exp_poly) settles a boundary case |Y − t| = T. At
most EXACT_BUDGET disagreeing pairs are re-decided exactly per call; beyond that (or if arb cannot
settle one) the pair counts as unexplained (`disagreements_undecided`). An unexplained disagreement
where the float part was too large is also counted in `disagreements_float_limited`: the report is
then not exact, and the cause may be float64 (large p or large values) rather than the protocol. Bob
decodes his float64 residual with the decoder's float64 decode; a disagreement that comes from that
(a logit tie) is unexplained too — never explained by mistake.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import flint
import numpy as np

from headcount.core.numbers import U, as_fmpq, gamma, round_fixed, sign_exp_poly
from headcount.induction.lower_bound.setup import IndexSetup
from headcount.induction.task import INDEX_QUERY, index_input

_EXP_REL = (
    8 * U
)  # libm exp and log within 4 ulp, i.e. 8u relative (the assumption of core.passes.bounds)
_EXPIT_REL = 16 * U  # scipy's expit = 1/(1 + exp(−x)): an exp, an add and a divide
_UNDERFLOW = (
    2.0**-1069
)  # per weight: weights that underflow, absolutely, with their summation error
_INFLATE = 1 + 2.0**-20  # relative margin over the rounding of a bound's own computation
# The float part of a tolerance explains a disagreement only while it is at most this share of 2^-p.
FLOAT_SHARE = 2.0**-10
# Disagreeing pairs check_protocol re-decides exactly (arb balls) per call, at most.
EXACT_BUDGET = 1 << 15
# Largest arb precision (bits) tried before the Lindemann–Weierstrass fallback.
_MAX_ARB_PREC = 1 << 13


@dataclass(frozen=True, eq=False)
class FloatErrors:
    """Proven bounds on float64 evaluation errors, the same for every (f, i*): per head [h] or per
    head and coordinate [h m]. r, s: Alice's r̃, s̃ (s also covers the layout's float ends); b,
    log_zb: Bob's tabulated b̃, log Z̃_B; bob_span: max |v| over Bob's values (so |b| ≤
    bob_span)."""

    r: np.ndarray
    s: np.ndarray
    b: np.ndarray
    log_zb: np.ndarray
    bob_span: np.ndarray


def _average_error(
    terms: int, sigma: np.ndarray, spread: np.ndarray, vmax: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(bound [h m] on |fl(Σ w̃v / Σ w̃) − Σ wv / Σ w|, bound [h] on |log Z̃ − log Z|) for `terms`
    weights w̃_j = exp(fl(s̃_j − s̃_top)), float scores within sigma [h] of the exact ones and
    spread [h] apart, |v_j| ≤ vmax [h m]. +∞ where the scores are too large for float64 to weigh (η
    > 1/2)."""
    eta = 2 * sigma + U * np.minimum(spread, 746.0)
    rho = (
        np.expm1(np.minimum(eta, 1.0)) * (1 + _EXP_REL) + _EXP_REL
    )  # past η = 1/2 it is unusable anyway
    g, tiny = gamma(terms), terms * _UNDERFLOW
    den = 1 - rho - g - tiny
    usable = (eta <= 0.5) & (den >= 0.5)
    ratio = np.where(usable, ((1 + rho) * g + rho + tiny) / den, np.inf)[:, None]
    with np.errstate(invalid="ignore"):  # 0·∞ where a coordinate's values are all 0: exact, error 0
        avg = 2 * vmax * ratio
        avg = np.where(vmax == 0, 0.0, avg + U * (vmax + avg))
    log_z = np.where(usable, (rho + g + rho * g + tiny) / den, np.inf)
    return avg * _INFLATE, log_z * _INFLATE


def _lse_error(
    terms: int, sigma: np.ndarray, log_z: np.ndarray, score_abs: np.ndarray
) -> np.ndarray:
    """Bound [h] on |fl(s̃_top + log Z̃) − log Z|: the top score, log Z̃, log's 4 ulp and the final
    add."""
    logs = math.log(terms) + 1
    return (sigma + log_z + _EXP_REL * logs + U * (score_abs + logs + 1)) * _INFLATE


def float_errors(st: IndexSetup) -> FloatErrors:
    """The uniform float error bounds for st's model, k and p (module docstring, "Float
    evaluation")."""
    table, p, n, k = st.table, st.p, st.n, st.k
    last = n - 1
    q = round_fixed(table.Q[:, last, INDEX_QUERY], p)  # [h d_head]
    keys, values = round_fixed(table.K[:, :n, :3], p), round_fixed(table.V[:, :n, :3], p)
    scores = np.einsum("hd,hjtd->hjt", q, keys)
    sigma = (
        gamma(q.shape[-1])
        * np.einsum("hd,hjtd->hjt", np.abs(q), np.abs(keys)).max(axis=(1, 2))
        * _INFLATE
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
    return FloatErrors(r, s, b, _lse_error(k + 1, sigma, log_zb, score_abs), v_bob)


def mix_error(
    st: IndexSetup,
    fe: FloatErrors,
    r: np.ndarray,
    s: np.ndarray,
    stars: np.ndarray,
    lam: np.ndarray,
    b: np.ndarray,
    y: np.ndarray,
    d_r: Any,
    d_s: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """(bound [B h m] on |y − Y|, bound [B h] on |λ − λ_exact|) for y = mix(st, r, s, stars), whose
    inputs r [B h m], s [B h] are within d_r, d_s of the exact ones (0 for Bob's r̂, ŝ, which are
    exact)."""
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


def bob_bound(
    st: IndexSetup,
    fe: FloatErrors,
    r_hat: np.ndarray,
    s_hat: np.ndarray,
    stars: np.ndarray,
    lam_hat: np.ndarray,
    b: np.ndarray,
    y_bob: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(E, Φ) [B h m]: the protocol's own ε error bound E and the float part Φ = Φ_A + Φ_B of Bob's
    proven bound T_Bob = E + Φ on |Y − fl Ỹ| (module docstring), from Bob's float λ̂, b and their
    error bounds."""
    eps = st.eps
    phi_bob, dl = mix_error(st, fe, r_hat, s_hat, stars, lam_hat, b, y_bob, 0.0, 0.0)
    lam = np.minimum(lam_hat + dl, 1.0)[..., None]
    gap = np.minimum(
        np.abs(r_hat - b) + fe.b, np.abs(r_hat) + fe.bob_span
    )  # ≥ |r̂ − b| (b averages Bob's v)
    e = (lam * eps / 2 + eps / 8 * (gap + eps / 2)) * _INFLATE
    phi_alice = (
        lam * fe.r + fe.s[:, None] / 4 * (gap + eps / 2 + fe.r) + eps / 8 * fe.r
    ) * _INFLATE
    return e, phi_alice + phi_bob


def _tie_distance(st: IndexSetup, y: np.ndarray) -> np.ndarray:
    """|y − t| for t the tie point of y's 2^-p cell (the nearest tie), exact up to a factor 1 ±
    u."""
    x = y / 2.0**-st.p  # exact: a power of two
    return (
        np.abs((x - np.floor(x)) - 0.5) * 2.0**-st.p
    )  # x − ⌊x⌋ is exact; the − 0.5 errs by ≤ u relative


def _cell(y: Any, p: int) -> int | None:
    """⌊mid(y) / 2^-p⌋ for a finite ball y narrower than 2^-p/4, else None (too wide to tell its
    cell)."""
    if y is None or not y.is_finite() or y.rad() >= flint.arb(flint.fmpq(1, 1 << (p + 2))):
        return None
    man, exp = (int(z) for z in y.mid().man_exp())
    shift = exp + p
    return man << shift if shift >= 0 else man >> -shift  # (>> floors)


def _ball_verdict(y: flint.arb, tol: float, p: int) -> bool | None:
    """Is the exact number in ball y within tol of a tie point (an odd multiple of 2^{-p-1})? None
    when the ball is too wide to tell. Only the ties of y's cell and its two neighbours can be that
    close."""
    cell = _cell(y, p)
    if cell is None:
        return None
    bound = flint.arb(tol)
    far = True
    for c in (cell - 1, cell, cell + 1):
        gap = abs(y - flint.arb(flint.fmpq(2 * c + 1, 1 << (p + 1))))
        if gap <= bound:
            return True
        far = far and bool(gap > bound)
    return False if far else None


class ExactHeads:
    """The model's exact head outputs at N for single pairs, for the disagreements float64 cannot
    classify.

    Scores are exact rationals (q and k are float64 numbers); the weights e^{s − M_h} (M_h the
    head's largest score) are arb balls cached per position, token and precision; values are exact.
    Why: at large p or large values no float64 bound is small against 2^-p, and only an exact Y
    tells a tie from an error."""

    def __init__(self, st: IndexSetup):
        table, p, n = st.table, st.p, st.n
        q = round_fixed(table.Q[:, n - 1, INDEX_QUERY], p)
        keys, values = round_fixed(table.K[:, :n, :3], p), round_fixed(table.V[:, :n, :3], p)
        self.p, self.n_heads = p, q.shape[0]
        self.scores = [_exact_scores(q[h], keys[h]) for h in range(self.n_heads)]  # [h][j][t]
        self.top = [max(max(row) for row in head) for head in self.scores]
        self.values = values
        self.value_balls = [
            [[[flint.arb(float(x)) for x in vt] for vt in vj] for vj in vh] for vh in values
        ]
        span = max(
            int(abs(s - top).ceil())
            for head, top in zip(self.scores, self.top)
            for row in head
            for s in row
        )
        vmax = int(math.ceil(float(np.abs(values).max(initial=0.0))))
        self.base_prec = 64 + p + vmax.bit_length() + span.bit_length() + n.bit_length()
        self._weights: dict[int, list] = {}

    def _heads(self, tokens: np.ndarray, prec: int, wanted: set[int]) -> dict[int, list]:
        """{h: [arb Y_hc for each c]} at flint.ctx.prec = prec (set by the caller)."""
        if prec not in self._weights:
            self._weights[prec] = [
                [[flint.arb(s - self.top[h]).exp() for s in row] for row in self.scores[h]]
                for h in range(self.n_heads)
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
        """Does some (head h, coordinate c, tolerance) in coords have |Y_hc − tie| ≤ tolerance,
        exactly? None when neither arb (up to _MAX_ARB_PREC bits) nor Lindemann–Weierstrass settles
        it."""
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
        """Exact fallback: |Y − t| ≤ tol ⟺ Σ_j e^{s_j}(v_j − t − tol) ≤ 0 ≤ Σ_j e^{s_j}(v_j − t +
        tol), signs of exponential sums with rational exponents and coefficients
        (core.numbers.expsum.sign_exp_poly)."""
        cell = _cell(ball, self.p)
        if cell is None:
            return None
        exps = [
            Fraction(int(self.scores[h][j][t].p), int(self.scores[h][j][t].q))
            for j, t in enumerate(tokens)
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


def _exact_scores(q: np.ndarray, keys: np.ndarray) -> list[list[flint.fmpq]]:
    """[j][t] exact rational scores ⟨q, k[j, t]⟩ of one head (q [d_head], keys [n 3 d_head]:
    float64)."""
    return [
        [sum((as_fmpq(a) * as_fmpq(c) for a, c in zip(q, kt)), flint.fmpq(0)) for kt in kj]
        for kj in keys
    ]


def _collect(exps: list[Fraction], coefs: list[Fraction]) -> dict:
    """{exponent: summed coefficient} of Σ_j coef_j·e^{exp_j} (equal exponents merged)."""
    out: dict = {}
    for a, coef in zip(exps, coefs):
        out[a] = out.get(a, Fraction(0)) + coef
    return out


@dataclass
class Explanations:
    """check_protocol's running verdicts on disagreements (counts) and its exact re-decision
    state."""

    explained: int = 0
    decided_exactly: int = 0
    undecided: int = 0
    float_limited: int = 0
    exact: ExactHeads | None = None


def explain(
    st: IndexSetup,
    tally: Explanations,
    F: np.ndarray,
    stars: np.ndarray,
    y: np.ndarray,
    delta_y: np.ndarray,
    tol: np.ndarray,
    float_ok: np.ndarray,
) -> np.ndarray:
    """[D] True where a disagreeing pair (F [D k], stars [D]) is explained: some coordinate of its
    exact head output lies within tol [D h m] of a tie. Decided from the float y [D h m] (within
    delta_y of the exact Y) when that settles it, else exactly (ExactHeads), at most EXACT_BUDGET
    pairs per call; updates tally."""
    dist = _tie_distance(st, y)
    surely = dist * (1 + 2 * U) + delta_y <= tol
    maybe = ~(dist * (1 - 2 * U) - delta_y > tol)
    explained = _per_pair(surely).any(axis=1)
    for t in np.flatnonzero(~explained & _per_pair(maybe).any(axis=1)):
        if tally.decided_exactly >= EXACT_BUDGET:
            tally.undecided += 1
            continue
        if tally.exact is None:
            tally.exact = ExactHeads(st)
        coords = [(int(h), int(c), float(tol[t, h, c])) for h, c in zip(*np.nonzero(maybe[t]))]
        verdict = tally.exact.explained(index_input(F[t], int(stars[t])), coords)
        tally.decided_exactly += 1
        tally.undecided += verdict is None
        explained[t] = bool(verdict)
    tally.explained += int(explained.sum())
    tally.float_limited += int((~explained & ~_per_pair(float_ok).all(axis=1)).sum())
    return explained


def _per_pair(a: np.ndarray) -> np.ndarray:
    """[D h m] -> [D h·m]: one row per pair."""
    return a.reshape(len(a), -1)
