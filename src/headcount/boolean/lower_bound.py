"""Theorem 2 (lower bound D·H ≥ T) as a program (spec/boolean.md, Lemmas 7–8).

For any model, ``theorem2_polynomial`` computes R(t) = Q(t)^D·g(P(t)/Q(t)) = Σ_K c_K P^K Q^{D−|K|}
exactly (univariate in t, since the outputs depend on x only through t); ``theorem2_check`` confirms
deg R ≤ D·H and sign R(t) = model sign at every t = 0..n. Because Q > 0, a correct model makes R a
degree-≤ D·H sign-representation of f, hence D·H ≥ T: ``check_feasible`` refuses D·H < T with that
reason (InputError), and ``find_wrong_input`` names an input that a given (too small) model gets
wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from flint import fmpq_mpoly_ctx, fmpq_poly

from headcount.boolean.model import (
    BooleanLayer,
    Readout,
    as_mpoly,
    check_dims,
    dense_coefficients,
    model_sign_exact,
    rational_form,
    sign_of,
)
from headcount.boolean.task import check_values
from headcount.common.errors import InputError
from headcount.common.jsonable import JsonResult
from headcount.common.validate import check_int


def theorem2_polynomial(layer: BooleanLayer, readout: Readout, n: int) -> fmpq_poly:
    """R(t) = Σ_K c_K P(t)^K Q(t)^{D−|K|} with (P, Q) the layer's rational form (Lemma 7),
    exactly."""
    check_dims(layer, readout)
    P, Q = rational_form(layer, n)
    D, d = readout.degree, readout.dim
    if not readout.terms:
        return fmpq_poly([])
    # homogenize g with an extra variable for Q, then compose with the univariate P_i, Q (flint, in
    # C)
    hctx = fmpq_mpoly_ctx.get(("z", d + 1), "lex")
    gh = hctx.from_dict({K + (D - sum(K),): c for K, c in readout.terms.items()})
    tctx = fmpq_mpoly_ctx.get(("t", 1), "lex")
    R = gh.compose(*[as_mpoly(p, tctx) for p in P], as_mpoly(Q, tctx), ctx=tctx)
    return fmpq_poly(dense_coefficients(R.to_dict()))


@dataclass(frozen=True)
class Theorem2Check:
    """Lemma 8 checked on one model: deg R ≤ D·H (``bound``) and sign R(t) = the model's exact sign
    at every t = 0..n. ``to_json()`` leaves out ``mismatches`` (empty whenever ``signs_match``) and
    the polynomial itself (big rationals): the JSON is the four verdict fields `boolean check`
    prints."""

    degree_R: int
    bound: int
    degree_ok: bool
    signs_match: bool
    mismatches: tuple[int, ...] = ()
    polynomial: fmpq_poly | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, int | bool]:
        return {
            "degree_R": self.degree_R,
            "bound": self.bound,
            "degree_ok": self.degree_ok,
            "signs_match": self.signs_match,
        }


def theorem2_check(layer: BooleanLayer, readout: Readout, n: int) -> Theorem2Check:
    """Compute R and check Lemma 8: deg R ≤ D·H and sign R(t) = the model's exact sign, t = 0..n."""
    R = theorem2_polynomial(layer, readout, n)
    bound = readout.degree * layer.n_heads
    model = model_sign_exact(layer, readout, n)
    mismatches = tuple(t for t in range(n + 1) if sign_of(R(t)) != model[t])
    return Theorem2Check(R.degree(), bound, R.degree() <= bound, not mismatches, mismatches, R)


def min_heads(T: int, D: int) -> int:
    """Smallest H with D·H ≥ T (at least 1)."""
    return max(1, -(-T // D))


def check_feasible(
    T: int, D: int, H: int, function: str = "the function", n: int | None = None
) -> None:
    """InputError (one line, with the bound and the fix) when D·H < T: no model exists, by Theorem
    2."""
    for name, v in (("degree", D), ("heads", H)):
        if not isinstance(v, int) or v < 1:
            raise InputError(f"{name} must be an integer ≥ 1, got {v!r}")
    if D * H < T:
        on = f" on {n} bits" if n is not None else ""
        raise InputError(
            f"degree·heads = {D * H} < threshold degree {T} of {function}{on}: impossible by "
            "Theorem 2 "
            f"of the multi-head paper; use heads ≥ {min_heads(T, D)}"
        )


def check_sizes(n: int, D: int, H: int) -> None:
    """InputError unless n, D (degree) and H (heads) are integers ≥ 1."""
    for name, v in (("n", n), ("degree", D), ("heads", H)):
        check_int(name, v, low=1)


@dataclass(frozen=True)
class WrongInput(JsonResult):
    """An input x = 1^t 0^{n−t} (a bit string) the model answers with ``model_sign`` ≠ ``target`` =
    F(t)."""

    t: int
    x: str
    model_sign: int
    target: int


def first_wrong_input(signs: Sequence[int], F: Sequence[int]) -> WrongInput | None:
    """The first weight t with signs[t] ≠ F(t) (sign 0 is always wrong) as a WrongInput, or None."""
    n = len(F) - 1
    for t in range(n + 1):
        if signs[t] != F[t]:
            return WrongInput(t, "1" * t + "0" * (n - t), signs[t], F[t])
    return None


def find_wrong_input(layer: BooleanLayer, readout: Readout, F: Sequence[int]) -> WrongInput | None:
    """The first weight t where the model's exact sign differs from F(t) (sign 0 is always wrong),
    with a concrete input x = 1^t 0^{n−t}; None when the model is right on all 2^n inputs."""
    F = check_values(F)
    return first_wrong_input(model_sign_exact(layer, readout, len(F) - 1), F)
