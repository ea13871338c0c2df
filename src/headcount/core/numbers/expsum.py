"""Exact signs of exponential polynomials Σ_a c_a·e^a with rational exponents a and coefficients
c_a.

Why it is exact: after collecting equal exponents, Lindemann–Weierstrass (e^{a_1}, …, e^{a_k} for
distinct algebraic a_i are linearly independent over the algebraic numbers) says the sum is zero iff
every collected coefficient is zero. Otherwise it is non-zero, and python-flint ball (arb)
arithmetic at doubling precision proves its sign: a ball that excludes 0 decides it. So the sign
returned is never a guess.

This is the mathematics the exact evaluator (core/passes/exact_fixed.py) needs to decide rounding
ties of attention outputs, and the one minmax/exact_signs.py uses for near-ties; it lives in core so
both can import it (core never imports a scenario package).
"""

from __future__ import annotations

from fractions import Fraction

import flint

MAX_PREC = 1 << 16  # bits; a non-zero sum of the sizes headcount builds resolves far below this


class UndecidedError(ArithmeticError, ValueError):
    """A sign exact arithmetic could not settle within MAX_PREC bits: undecided, never a wrong
    answer.

    An ArithmeticError (what it is) and a ValueError (callers that catch ValueError keep working);
    the CLI reports it on one line and exits 2, as for input beyond what can be decided."""


def as_fmpq(x) -> flint.fmpq:
    """The exact value of an int, Fraction, fmpz or fmpq as an fmpq (floats: their exact dyadic
    value)."""
    if isinstance(x, flint.fmpq):
        return x
    if isinstance(x, (int, flint.fmpz)):
        return flint.fmpq(x)
    if isinstance(x, float):
        x = Fraction(x)
    if isinstance(x, Fraction):
        return flint.fmpq(x.numerator, x.denominator)
    raise TypeError(f"expected an exact rational, got {type(x).__name__}")


def collect(p: dict) -> dict[flint.fmpq, flint.fmpq]:
    """{exponent: coefficient} with exponents and coefficients as fmpq, equal exponents summed,
    zeros dropped.

    Why a separate step: Fraction(1, 2) and fmpq(1, 2) hash alike but compare unequal, so a dict
    mixing the two types may hold one exponent twice; Lindemann–Weierstrass only applies to
    collected sums."""
    out: dict[flint.fmpq, flint.fmpq] = {}
    for a, c in p.items():
        a, c = as_fmpq(a), as_fmpq(c)
        out[a] = out.get(a, flint.fmpq(0)) + c
    return {a: c for a, c in out.items() if c != 0}


def sign_exp_poly(p: dict, max_prec: int = MAX_PREC) -> int:
    """Exact sign (−1, 0, +1) of Σ_a c_a·e^a for p = {a: c_a} (rational a, c_a: fmpq, Fraction or
    int).

    Zero iff every collected coefficient is zero; otherwise the sign of an arb ball at 64, 128, …
    bits (exponents shifted by the largest, so nothing overflows). UndecidedError past `max_prec`
    bits, which a non-zero sum of moderate size never reaches."""
    terms = collect(p)
    if not terms:
        return 0
    if len(terms) == 1:
        return 1 if next(iter(terms.values())) > 0 else -1
    top = max(terms)
    shifted = [(a - top, c) for a, c in terms.items()]
    old = flint.ctx.prec
    prec = 64
    try:
        while prec <= max_prec:
            flint.ctx.prec = prec
            total = flint.arb(0)
            for a, c in shifted:
                total += flint.arb(c) * (flint.arb(a).exp() if a != 0 else flint.arb(1))
            if total > 0:
                return 1
            if total < 0:
                return -1
            prec *= 2
    finally:
        flint.ctx.prec = old
    raise UndecidedError(
        f"undecided: the sign of a non-zero exponential sum is not resolved at {max_prec} bits"
    )
