"""An independent reference for the GPT-2 block: the real-arithmetic model in python-flint Arb
balls.

It follows the model's definition (core/model/transformer.py docstring), not the float code: weights
are float64, so exact rationals; sums and products are exact or carried as balls at the working
precision (set by the caller, ≥ 256 bits); erfc, exp, sqrt are Arb's rigorous enclosures. With
fixed:p, the rounding points are the embedding, every LayerNorm output (ln1, ln2, ln_final), q, k,
v, each head's output after W_O and each MLP output: nearest multiple of 2^-p, ties to even, clipped
to [−2^p, 2^p]. The attention scale multiplies the exact score ⟨q, k⟩; b_O is added once to the
heads' sum of rounded outputs, unrounded.

The Llama / NeoX parts (issue 32), from their definitions in core/model/parts.py: RMSNorm
x_i·(offset + w_i)/√(Σx²/d + eps); rotary positions, each pair (a, b) of q and k turned by the angle
p·θ^(−2i/dims) with Arb's own power, cos and sin (never the table headcount computes), before q
and k are rounded; gated MLPs act(m W_gate + b_gate)·(m W_in + b_in); the parallel residual, where
the MLP reads the layer's input and its rounded output joins the heads' sum; shortformer positions,
W_pos[i] added to the normalised input of q and k only (the embedding is W_E[σ_i] alone).

A ball that straddles a rounding tie (only an exact ball on the tie is a tie) raises Undecided; so
does an argmax the balls do not decide. Callers count those as skipped, never as agreement.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from flint import arb, fmpq

from headcount.core.model import LinearDecoder, RMSNorm, Transformer
from headcount.core.numbers.precision import Precision


class Undecided(Exception):
    """The balls do not decide a rounding or an argmax at this precision."""


def A(x) -> arb:
    """A float64 as an exact arb (no rounding at ≥ 64 bits)."""
    return arb(float(x))


def amat(a) -> list:
    a = np.asarray(a, dtype=np.float64)
    return [A(v) for v in a] if a.ndim == 1 else [amat(row) for row in a]


def exact_fraction(v: arb) -> Fraction:
    """The value of an exact ball as a Fraction."""
    man, exp = v.mid().man_exp()
    man, exp = int(man), int(exp)
    return Fraction(man * 2**exp) if exp >= 0 else Fraction(man, 2**-exp)


def round_fixed_ball(v: arb, bits: int) -> arb:
    """fixed:bits rounding of the real number in the ball: decided exactly for an exact ball (ties
    to even), else only when the ball lies inside one rounding cell; clipped to ±2^bits."""
    scale = 2**bits
    if v.is_exact() and v.is_finite():
        k = round(exact_fraction(v) * scale)  # Fraction rounds half to even
    else:
        t = v * scale + fmpq(1, 2)
        if not t.is_finite() or t.contains_integer():
            raise Undecided("a rounding point straddles a tie")
        k = t.floor().unique_fmpz()
        if k is None:
            raise Undecided("a rounding point straddles a tie")
        k = int(k)
    k = max(-(scale * scale), min(scale * scale, k))
    return arb(fmpq(k, scale))


def vecmat(x: list, W: list, b: list | None = None) -> list:
    out = [sum((x[i] * W[i][j] for i in range(len(x))), arb(0)) for j in range(len(W[0]))]
    return out if b is None else [o + c for o, c in zip(out, b)]


def layer_norm(x: list, ln) -> list:
    """(x − mean)/√(var + eps)·w + b with the biased variance; eps, w, b exact. Written with e_i =
    d·x_i − Σx (exact for exact x) as e_i·w_i/√(Σe_j²/d + d²·eps) + b_i, so that x of zero variance
    gives b exactly (a tie stays a tie instead of becoming a ball around it)."""
    d = len(x)
    total = sum(x, arb(0))
    e = [d * v - total for v in x]
    squares = (
        (v * v).nonnegative_part() for v in e
    )  # (python-flint's v**2 is NaN for a ball around 0)
    inv = 1 / (sum(squares, arb(0)) / d + d * d * A(ln.eps)).sqrt()
    return [ei * A(w) * inv + A(b) for ei, w, b in zip(e, ln.w, ln.b)]


def rms_norm(x: list, w, eps: float, offset: float = 0.0) -> list:
    """x_i·(offset + w_i)/√(Σx_j²/d + eps), eps, w and offset exact."""
    d = len(x)
    squares = ((v * v).nonnegative_part() for v in x)
    inv = 1 / (sum(squares, arb(0)) / d + A(eps)).sqrt()
    return [v * (A(offset) + A(wi)) * inv for v, wi in zip(x, w)]


def norm(x: list, ln) -> list:
    """LayerNorm or RMSNorm of one row."""
    if isinstance(ln, RMSNorm):
        return rms_norm(x, ln.w, ln.eps, ln.offset)
    return layer_norm(x, ln)


def rotate(rows: list, rotary) -> list:
    """Each row i of q or k [pos][d_head] turned at position i (module docstring)."""
    half = rotary.dims // 2
    if rotary.layout == "rotate_half":
        pairs = [(j, j + half) for j in range(half)]
    else:
        pairs = [(2 * j, 2 * j + 1) for j in range(half)]
    out = []
    for p, row in enumerate(rows):
        row = list(row)
        for j, (a, b) in enumerate(pairs):
            angle = p * A(rotary.theta) ** arb(fmpq(-2 * j, rotary.dims))
            c, s = angle.cos(), angle.sin()
            row[a], row[b] = rows[p][a] * c - rows[p][b] * s, rows[p][b] * c + rows[p][a] * s
        out.append(row)
    return out


def gelu(x: arb, kind: str) -> arb:
    """relu; gelu = x·Φ(x) = ½x·erfc(−x/√2); gelu_tanh = ½x(1 + tanh a) = x/(1 + e^{−2a}) =
    x·e^{2a}/(1 + e^{2a}), a = √(2/π)(x + 0.044715x³) (the same real number, without Arb's
    cancellation in 1 + tanh a); silu = x·σ(x), the same with a = x/2."""
    if kind == "relu":
        if x >= 0:
            return x
        if x <= 0:
            return arb(0)
        return x.nonnegative_part()
    if kind == "gelu":
        return x * (-x / arb(2).sqrt()).erfc() / 2
    if kind == "silu":  # x·σ(x): the formula below with a = x/2
        a = x / 2
    else:
        a = (2 / arb.pi()).sqrt() * (x + arb(fmpq(44715, 10**6)) * x * x * x)
    if a < 0:  # the same real number, with no exp that overflows
        e = (2 * a).exp()
        return x * e / (1 + e)
    return x / (1 + (-2 * a).exp())


def _attention(q: list, k: list, v: list, scale: float, keys_of) -> list:
    n = len(q)
    out = []
    for i in range(n):
        keys = keys_of(i)
        scores = [A(scale) * sum((a * b for a, b in zip(q[i], k[j])), arb(0)) for j in keys]
        top = max(scores, key=lambda s: s.mid()).mid()  # exact: shifting by it changes nothing
        weights = [(s - top).exp() for s in scores]
        total = sum(weights, arb(0))
        out.append(
            [
                sum((w * v[j][c] for w, j in zip(weights, keys)), arb(0)) / total
                for c in range(len(v[0]))
            ]
        )
    return out


def residual(model: Transformer, seq, prec: Precision) -> list:
    """The final residual (after ln_final) [pos][d_model] as balls; Undecided at a straddled tie."""
    rp = (lambda u: round_fixed_ball(u, prec.bits)) if prec.kind == "fixed" else (lambda u: u)
    n, d = len(seq), model.d_model
    keys_of = (lambda i: range(i + 1)) if model.mask == "causal" else (lambda i: range(n))
    W_E, W_pos = amat(model.W_E), amat(model.W_pos)
    shortformer = model.positions == "qk"  # W_pos joins the q and k inputs only, after ln1
    x = [
        [rp(W_E[t][c] + (0 if shortformer else W_pos[i][c])) for c in range(d)]
        for i, t in enumerate(seq)
    ]
    normed = lambda rows, ln: rows if ln is None else [[rp(u) for u in norm(r, ln)] for r in rows]  # noqa: E731
    turned = lambda rows, layer: rows if layer.rotary is None else rotate(rows, layer.rotary)  # noqa: E731
    rounded = lambda rows: [[rp(u) for u in r] for r in rows]  # noqa: E731
    bias = lambda b: None if b is None else amat(b)  # noqa: E731
    for layer in model.layers:
        a = normed(x, layer.ln1)
        qk = [[u + p for u, p in zip(r, W_pos[i])] for i, r in enumerate(a)] if shortformer else a
        update = [[arb(0)] * d for _ in range(n)]
        for head in layer.heads:
            q = rounded(turned([vecmat(r, amat(head.W_Q), bias(head.b_Q)) for r in qk], layer))
            k = rounded(turned([vecmat(r, amat(head.W_K), bias(head.b_K)) for r in qk], layer))
            v = [[rp(u) for u in vecmat(r, amat(head.W_V), bias(head.b_V))] for r in a]
            z = _attention(q, k, v, layer.attn_scale, keys_of)
            WO = amat(head.W_O)
            update = [[u + rp(o) for u, o in zip(ui, vecmat(zi, WO))] for ui, zi in zip(update, z)]
        if layer.b_O is not None:
            update = [[u + A(b) for u, b in zip(ui, layer.b_O)] for ui in update]
        if layer.mlp is not None and layer.parallel:
            outs = [_mlp(m, layer.mlp, rp) for m in normed(x, layer.ln2)]
            update = [[u + o for u, o in zip(ui, oi)] for ui, oi in zip(update, outs)]
        x = [[p + u for p, u in zip(xi, ui)] for xi, ui in zip(x, update)]
        if layer.mlp is not None and not layer.parallel:
            for i, m in enumerate(normed(x, layer.ln2)):
                x[i] = [p + o for p, o in zip(x[i], _mlp(m, layer.mlp, rp))]
    return normed(x, model.ln_final)


def _mlp(m: list, mlp, rp) -> list:
    """The MLP's rounded output on one normalised row (gated where the MLP has W_gate)."""
    hidden = vecmat(m, amat(mlp.W_in), amat(mlp.b_in))
    if mlp.W_gate is None:
        hidden = [gelu(h, mlp.activation) for h in hidden]
    else:
        b_gate = None if mlp.b_gate is None else amat(mlp.b_gate)
        gate = [gelu(g, mlp.activation) for g in vecmat(m, amat(mlp.W_gate), b_gate)]
        hidden = [g * h for g, h in zip(gate, hidden)]
    return [rp(o) for o in vecmat(hidden, amat(mlp.W_out), amat(mlp.b_out))]


def decode(model: Transformer, x: list) -> list[int | None]:
    """Each position's output (the decoder's argmax, ties to the lowest class), None where
    undecided."""
    dec = model.decoder
    W_U = None if getattr(dec, "W_U", None) is None else amat(dec.W_U)
    b_U = None if getattr(dec, "b_U", None) is None else amat(dec.b_U)
    outs: list[int | None] = []
    for xi in x:
        logits = xi if W_U is None else vecmat(xi, W_U)
        logits = logits if b_U is None else [g + b for g, b in zip(logits, b_U)]
        outs.append(_argmax(logits))
    classes = [c for c in outs if c is not None]
    if not classes:
        return outs
    mapped = (dec._classes_to_tokens if isinstance(dec, LinearDecoder) else dec._labelled)(
        np.array(classes)
    )
    it = iter(mapped.tolist())
    return [None if c is None else next(it) for c in outs]


def _argmax(logits: list) -> int | None:
    """The lowest class whose logit is ≥ every other (certainly), strictly above every earlier one;
    None when the balls leave it open."""
    for c, g in enumerate(logits):
        if all(g > h for h in logits[:c]) and all(g >= h for h in logits[c + 1 :]):
            return c
    return None
