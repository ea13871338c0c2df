"""Theorem 2 (lower bound D·H ≥ T) as a program (spec/boolean.md, Lemmas 7–8).

For any model, ``theorem2_polynomial`` computes R(t) = Q(t)^D·g(P(t)/Q(t)) = Σ_K c_K P^K Q^{D−|K|}
exactly (univariate in t, since the outputs depend on x only through t); ``theorem2_check`` confirms
deg R ≤ D·H and sign R(t) = model sign at every t = 0..n. Because Q > 0, a correct model makes R a
degree-≤ D·H sign-representation of f, hence D·H ≥ T: ``check_feasible`` refuses D·H < T with that
reason, and ``find_wrong_input`` names an input that a given (too small) model gets wrong.
"""

from __future__ import annotations

from collections.abc import Sequence

from flint import fmpq_mpoly_ctx, fmpq_poly

from headcount.boolean.functions import check_values
from headcount.boolean.model import BooleanLayer, Readout, _sign, model_sign_exact, rational_form


def _to_mpoly(p: fmpq_poly, ctx):
    return ctx.from_dict({(k,): c for k, c in enumerate(p.coeffs()) if c != 0})


def theorem2_polynomial(layer: BooleanLayer, readout: Readout, n: int) -> fmpq_poly:
    """R(t) = Σ_K c_K P(t)^K Q(t)^{D−|K|} with (P, Q) the layer's rational form (Lemma 7), exactly."""
    if readout.dim != layer.dim:
        raise ValueError(f"readout has d = {readout.dim} but the layer outputs d = {layer.dim}")
    P, Q = rational_form(layer, n)
    D, d = readout.degree, readout.dim
    if not readout.terms:
        return fmpq_poly([])
    # homogenize g with an extra variable for Q, then compose with the univariate P_i, Q (flint, in C)
    hctx = fmpq_mpoly_ctx.get(("z", d + 1), "lex")
    gh = hctx.from_dict({K + (D - sum(K),): c for K, c in readout.terms.items()})
    tctx = fmpq_mpoly_ctx.get(("t", 1), "lex")
    R = gh.compose(*[_to_mpoly(p, tctx) for p in P], _to_mpoly(Q, tctx), ctx=tctx)
    coeffs = R.to_dict()
    deg = max((K[0] for K in coeffs), default=-1)
    out = [0] * (deg + 1)
    for K, c in coeffs.items():
        out[K[0]] = c
    return fmpq_poly(out)


def theorem2_check(layer: BooleanLayer, readout: Readout, n: int) -> dict:
    """Compute R and check Lemma 8: deg R ≤ D·H and sign R(t) = the model's exact sign, t = 0..n."""
    R = theorem2_polynomial(layer, readout, n)
    bound = readout.degree * layer.num_heads
    model = model_sign_exact(layer, readout, n)
    sR = [_sign(R(t)) for t in range(n + 1)]
    mismatches = [t for t in range(n + 1) if sR[t] != model[t]]
    return {
        "degree_R": R.degree(),
        "bound": bound,
        "degree_ok": R.degree() <= bound,
        "signs_match": not mismatches,
        "mismatches": mismatches,
        "polynomial": R,
    }


def min_heads(T: int, D: int) -> int:
    """Smallest H with D·H ≥ T (at least 1)."""
    return max(1, -(-T // D))


def check_feasible(T: int, D: int, H: int, function: str = "the function", n: int | None = None) -> None:
    """ValueError (one line, with the bound and the fix) when D·H < T: no model exists, by Theorem 2."""
    for name, v in (("degree", D), ("heads", H)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be an integer ≥ 1, got {v!r}")
    if D * H < T:
        on = f" on {n} bits" if n is not None else ""
        raise ValueError(
            f"degree·heads = {D * H} < threshold degree {T} of {function}{on}: impossible by Theorem 2 "
            f"of the multi-head paper; use heads ≥ {min_heads(T, D)}"
        )


def find_wrong_input(layer: BooleanLayer, readout: Readout, F: Sequence[int]) -> dict | None:
    """The first weight t where the model's exact sign differs from F(t) (sign 0 is always wrong), with
    a concrete input x = 1^t 0^{n−t} as a bit string; None when the model is right on all 2^n inputs."""
    F = check_values(F)
    n = len(F) - 1
    signs = model_sign_exact(layer, readout, n)
    for t in range(n + 1):
        if signs[t] != F[t]:
            return {"t": t, "x": "1" * t + "0" * (n - t), "model_sign": signs[t], "target": F[t]}
    return None
