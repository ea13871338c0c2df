"""Build a Theorem 3 model for a symmetric function and certify it exactly on all inputs.

``construct_and_certify`` evaluates the model in exact rational arithmetic at every weight t = 0..n.
The model's output depends on x only through t = |x|, so these n + 1 checks cover all 2^n inputs.
The same weights evaluated in float64 are reported separately (``float64_errors``): the exact β's of
Lemma 11 are huge, and float64 typically fails beyond small n — the certificate is the exact one.

``scope`` is always "exhaustive": a head over {0, 1} without positions outputs a function of t = |x| only, so
the model's answer on x is its answer at weight |x|, and the n + 1 exact checks t = 0..n decide every one of
the 2^n inputs — not a sample (compare the induction certificate, whose scope is "sampled" when S^n is too
large to enumerate).

``min_abs_margin`` = min_t |g(layer output at t)|, exact, as a string: the exact rational "p/q" when it
has at most 40 characters, else a decimal in scientific notation with 30 significant digits, rounded
half up (e.g. "1.23456789012345678901234567890e-812").
"""

from __future__ import annotations

from collections.abc import Sequence

from flint import fmpq

from headcount.boolean.functions import check_values, format_function, parse_function, sign_changes
from headcount.boolean.model import BooleanLayer, Readout, model_sign_float, model_values_exact, save_boolean
from headcount.boolean.theorem2 import check_feasible, find_wrong_input
from headcount.boolean.theorem3 import construct

EXACT_MAX_CHARS = 40
DECIMAL_DIGITS = 30


def dim_bound(D: int, H: int) -> int:
    """Theorem 3's bound min{D, 2·max{1, ⌈log₂ H⌉} + 2}."""
    return min(D, 2 * max(1, (H - 1).bit_length()) + 2)


def format_rational(q: fmpq, digits: int = DECIMAL_DIGITS, max_chars: int = EXACT_MAX_CHARS) -> str:
    """Exact "p/q" if short, else a decimal with ``digits`` significant digits (no big-int str())."""
    s = str(q) if q.p.bit_length() + q.q.bit_length() < 4 * max_chars else None
    if s is not None and len(s) <= max_chars:
        return s
    p, r = int(q.p), int(q.q)
    neg, p = p < 0, abs(p)
    if p == 0:
        return "0"
    # choose e with 10^(digits−1) ≤ round(p·10^−e / r) < 10^digits
    e = int((p.bit_length() - r.bit_length()) * 0.30102999566398120) - digits + 1
    lo, hi = 10 ** (digits - 1), 10**digits

    def scaled(e: int) -> int:
        num, den = (p, r * 10**e) if e >= 0 else (p * 10 ** (-e), r)
        return (2 * num + den) // (2 * den)

    m = scaled(e)
    while m >= hi:
        e += 1
        m = scaled(e)
    while m < lo:
        e -= 1
        m = scaled(e)
    if m >= hi:  # rounding carried to one more digit
        e += 1
        m = scaled(e)
    ds = str(m)
    return f"{'-' if neg else ''}{ds[0]}.{ds[1:]}e{e + digits - 1:+d}"


def construct_and_certify(
    name_or_F: str | Sequence[int],
    n: int,
    D: int,
    H: int,
    use_search: bool = True,
    out: str | None = None,
) -> dict:
    """Construct (Theorem 3) and certify exactly; D·H < T raises check_feasible's ValueError. `out`: also
    save the model (boolean.model.save_boolean, exact)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer ≥ 1, got {n!r}")
    for name, v in (("degree", D), ("heads", H)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be an integer ≥ 1, got {v!r}")
    if isinstance(name_or_F, str):
        F = parse_function(name_or_F, n)
        label = name_or_F.strip()
    else:
        F = check_values(name_or_F)
        if len(F) != n + 1:
            raise ValueError(f"F needs n + 1 = {n + 1} values, got {len(F)}")
        label = format_function(F)
    T = sign_changes(F)
    check_feasible(T, D, H, function=label, n=n)
    layer, readout, route, d = construct(F, n, D, H, use_search=use_search)
    if out is not None:
        save_boolean(layer, readout, out, {"construction": route, "function": label, "n": n})
    return {
        "function": label,
        "n": n,
        "threshold_degree": T,
        "degree": D,
        "heads": H,
        "dim": d,
        "dim_bound": dim_bound(D, H),
        "route": route,
        **certify_boolean_model(layer, readout, F),
        **({"model_path": str(out)} if out is not None else {}),
    }


def certify_boolean_model(layer: BooleanLayer, readout: Readout, F: Sequence[int]) -> dict:
    """Exact check of any layer + readout against F on every weight t = 0..n (so on all 2^n inputs):
    certified, errors, the first wrong input (Theorem 2 says one exists whenever D·H < T), the smallest
    |g| as an exact string, and how many weights the same model gets wrong in float64. ``scope`` is
    "exhaustive": the output depends on x only through t = |x|, so t = 0..n covers all 2^n inputs."""
    F = check_values(F)
    n = len(F) - 1
    values = model_values_exact(layer, readout, n)
    signs = [(v > 0) - (v < 0) for v in values]
    wrong = [t for t in range(n + 1) if signs[t] != F[t]]
    fsigns = model_sign_float(layer, readout, n)
    return {
        "certified": not wrong,
        "scope": "exhaustive",
        "weights_checked": n + 1,
        "errors": len(wrong),
        "wrong_input": find_wrong_input(layer, readout, F) if wrong else None,
        "min_abs_margin": format_rational(min((abs(v) for v in values), key=lambda v: v)),
        "float64_errors": sum(s != f for s, f in zip(fsigns, F)),
    }
