"""Build a Theorem 3 model for a symmetric function and certify it exactly on all inputs; check any
model.

``construct_and_certify`` (a ``ConstructionCertificate``) evaluates the model in exact rational
arithmetic at every weight t = 0..n. The model's output depends on x only through t = |x|, so these
n + 1 checks cover all 2^n inputs. The same weights evaluated in float64 are reported separately
(``float64_errors``): the exact β's of Lemma 11 are huge, and float64 typically fails beyond small n
— the certificate is the exact one.

``scope`` is always "exhaustive": a head over {0, 1} without positions outputs a function of t = |x|
only, so the model's answer on x is its answer at weight |x|, and the n + 1 exact checks t = 0..n
decide every one of the 2^n inputs — not a sample (compare the induction certificate, whose scope is
"sampled" when S^n is too large to enumerate).

``certify_boolean_model`` is the certificate of any layer + readout (a ``BooleanCertificate``);
``check_model`` adds what `headcount boolean check` reports on a model file: the target's threshold
degree, whether D·H is below it, and the Theorem 2 polynomial's check (a ``ModelCheck``).

``min_abs_margin`` = min_t |g(layer output at t)|, exact, as a string: the exact rational "p/q" when
it has at most 40 characters, else a decimal in scientific notation with 30 significant digits,
rounded half up (e.g. "1.23456789012345678901234567890e-812").
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flint import fmpq

from headcount.boolean.construction import construct
from headcount.boolean.lower_bound import (
    Theorem2Check,
    WrongInput,
    check_feasible,
    check_sizes,
    first_wrong_input,
    theorem2_check,
)
from headcount.boolean.model import (
    BooleanLayer,
    BooleanModel,
    Readout,
    model_sign_float,
    model_values_exact,
    sign_of,
)
from headcount.boolean.model_file import load_boolean, save_boolean
from headcount.boolean.task import check_values, function_and_label, parse_function, sign_changes
from headcount.common.errors import InputError, param
from headcount.common.jsonable import JsonResult
from headcount.common.resources import check_memory, check_work
from headcount.common.validate import check_writable

EXACT_MAX_CHARS = 40
DECIMAL_DIGITS = 30

EXACT_WORK_LIMIT = 5e9
"""Most word operations of exact arithmetic one certificate may take (``exact_cost``): about 5–15 s
on one core. Measured: n = 10⁶ bits at D = H = 1 (3·10⁹) took 9 s; xor on 8 bits with 1000 heads
(2·10¹⁰) took 49 s; D = 4000, H = 8 (5·10⁹) took 12 s; `boolean construct` at n = 10⁹ reached 3.8 GB
and died (issue 13)."""


def exact_cost(
    n: int, D: int, H: int, d: int, terms: int = 1, bits: int = 0
) -> tuple[float, float]:
    """(word operations, bytes) of evaluating a model exactly at t = 0..n (``model_values_exact``,
    and as
    much again for Theorem 2's R): H heads of value dimension d, a degree-D readout with ``terms``
    terms,
    exact rationals of at most ``bits`` bits (numerator + denominator; 0 for a construction, whose
    sizes
    the formula already covers). Floats throughout, so any argument size is estimated without
    overflow:
      L = log₂(n + H + 2) + bits     bits of one head's factor (n − t)·w0 + t·w1 (and of its values)
      B = 4·D·H·L + 64               bits of one coefficient of N(t) = g_hom(P(t), Q(t)), of degree
      ≤ D·H
      S = (D·H + 1)·B                bits of N: the big-integer polynomial the certificate evaluates
      work = (n + 1 + terms)·S/32 + 3000·(n + 1) + (d + 1)·H³·L   (Horner at every t and composing
      each
             term; Python per t; Lemma 7's products of degree-H polynomials)
      bytes = S/4 + (n + 1)·(8·(D + 1)·d + B/4 + 400)   (N twice; the float64 check's powers; the
      values)
    B overestimates the largest coefficient 2–5× on constructions (measured), the time 1–3×."""
    n, D, H, d, terms, bits = (
        float(min(v, 1e300)) for v in (n, D, H, d, terms, bits)
    )  # no overflow
    L = math.log2(n + H + 2) + bits
    B = 4 * D * H * L + 64
    S = (D * H + 1) * B
    work = (n + 1 + terms) * S / 32 + 3000 * (n + 1) + (d + 1) * H * H * H * L
    return work, S / 4 + (n + 1) * (8 * (D + 1) * d + B / 4 + 400)


def check_exact_cost(
    n: int,
    D: int,
    H: int,
    d: int,
    *,
    terms: int,
    bits: int,
    what: str,
    options: str,
    passes: int = 1,
) -> None:
    """InputError when ``exact_cost`` (times ``passes``) is beyond the memory limit or
    EXACT_WORK_LIMIT; the message names the estimate, the limit and the options that set the
    sizes."""
    work, memory = exact_cost(n, D, H, d, terms, bits)
    check_memory(memory, what)
    check_work(
        passes * work, EXACT_WORK_LIMIT, what, "word operations of exact arithmetic", options
    )


def rational_bits(layer: BooleanLayer, readout: Readout) -> int:
    """The most bits (numerator + denominator) of any exact number of the model."""
    numbers = [x for h in layer.heads for x in (h.w0, h.w1, *h.v0, *h.v1)] + list(
        readout.terms.values()
    )
    return max((int(x.p).bit_length() + int(x.q).bit_length() for x in numbers), default=0)


def dim_bound(D: int, H: int) -> int:
    """Theorem 3's bound min{D, 2·max{1, ⌈log₂ H⌉} + 2}."""
    return min(D, 2 * max(1, (H - 1).bit_length()) + 2)


def _decimal(p: int, r: int, digits: int) -> str:
    """p/r > 0 as a decimal with ``digits`` significant digits, rounded half up (no big-int
    str())."""
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
    return f"{ds[0]}.{ds[1:]}e{e + digits - 1:+d}"


def format_rational(q: fmpq, digits: int = DECIMAL_DIGITS, max_chars: int = EXACT_MAX_CHARS) -> str:
    """Exact "p/q" if short, else a decimal with ``digits`` significant digits (no big-int
    str())."""
    s = str(q) if q.p.bit_length() + q.q.bit_length() < 4 * max_chars else None
    if s is not None and len(s) <= max_chars:
        return s
    p, r = int(q.p), int(q.q)
    if p == 0:
        return "0"
    return ("-" if p < 0 else "") + _decimal(abs(p), r, digits)


@dataclass(frozen=True)
class BooleanCertificate(JsonResult):
    """The exact verdict on a model against F at every weight t = 0..n (so on all 2^n inputs):
    ``scope`` is "exhaustive", ``errors`` counts wrong weights, ``wrong_input`` is the first (None
    when certified), ``min_abs_margin`` = min_t |g| as an exact string, ``float64_errors`` the
    weights float64 gets wrong."""

    certified: bool
    scope: str
    weights_checked: int
    errors: int
    wrong_input: WrongInput | None
    min_abs_margin: str
    float64_errors: int


def certify_boolean_model(
    layer: BooleanLayer, readout: Readout, F: Sequence[int]
) -> BooleanCertificate:
    """Exact check of any layer + readout against F on every weight t = 0..n (so on all 2^n inputs):
    certified, errors, the first wrong input (Theorem 2 says one exists whenever D·H < T), the
    smallest |g| as an exact string, and how many weights the same model gets wrong in float64.
    ``scope`` is "exhaustive": the output depends on x only through t = |x|, so t = 0..n covers all
    2^n inputs."""
    F = check_values(F)
    n = len(F) - 1
    values = model_values_exact(layer, readout, n)
    signs = [sign_of(v) for v in values]
    wrong = [t for t in range(n + 1) if signs[t] != F[t]]
    fsigns = model_sign_float(layer, readout, n)
    return BooleanCertificate(
        certified=not wrong,
        scope="exhaustive",
        weights_checked=n + 1,
        errors=len(wrong),
        wrong_input=first_wrong_input(signs, F),
        min_abs_margin=format_rational(min(abs(v) for v in values)),
        float64_errors=sum(s != f for s, f in zip(fsigns, F)),
    )


@dataclass(frozen=True)
class ConstructionCertificate:
    """A Theorem 3 construction (route, value dimension ``dim`` against Theorem 3's ``dim_bound``)
    with its exact certificate, and where the model was saved (None: not saved). ``to_json()`` is
    written out: the certificate's fields sit at the top level, and model_path only when the model
    was saved."""

    function: str
    n: int
    threshold_degree: int
    degree: int
    heads: int
    dim: int
    dim_bound: int
    route: str
    certificate: BooleanCertificate
    model_path: str | None = None

    @property
    def certified(self) -> bool:
        return self.certificate.certified

    def __getitem__(self, key: str) -> Any:
        """The JSON value under ``key``, as the dict this function returned before gave it, for
        callers not yet moved to the fields (learn/experiments.py reads ["certified"]); this goes in
        the next release."""
        return self.to_json()[key]

    def to_json(self) -> dict[str, Any]:
        head = {
            "function": self.function,
            "n": self.n,
            "threshold_degree": self.threshold_degree,
            "degree": self.degree,
            "heads": self.heads,
            "dim": self.dim,
            "dim_bound": self.dim_bound,
            "route": self.route,
        }
        saved = {} if self.model_path is None else {"model_path": self.model_path}
        return head | self.certificate.to_json() | saved


def construct_and_certify(
    name_or_F: str | Sequence[int],
    n: int,
    D: int,
    H: int,
    use_search: bool = True,
    out: str | os.PathLike | None = None,
) -> ConstructionCertificate:
    """Construct (Theorem 3) and certify exactly; D·H < T raises check_feasible's InputError. `out`:
    also save the model (boolean.model.save_boolean, exact)."""
    check_sizes(n, D, H)
    F, label = function_and_label(name_or_F, n)
    T = sign_changes(F)
    check_feasible(T, D, H, function=label, n=n)
    # before any work: d ≤ the factorization's ⌈T/H⌉, the additive-basis readout has ≤ T + 1 terms
    what = f"boolean construct at n={n}, D={D}, H={H}"
    check_exact_cost(
        n,
        D,
        H,
        max(1, -(-T // H)),
        terms=T + 1,
        bits=0,
        what=what,
        options=f"{param('n')}, {param('degree')} or {param('heads')}",
    )
    if out is not None:
        check_writable(out)
    built = construct(F, n, D, H, use_search=use_search)
    if out is not None:
        save_boolean(
            built.layer,
            built.readout,
            out,
            {"construction": built.route, "function": label, "n": n},
        )
    return ConstructionCertificate(
        function=label,
        n=n,
        threshold_degree=T,
        degree=D,
        heads=H,
        dim=built.dim,
        dim_bound=dim_bound(D, H),
        route=built.route,
        certificate=certify_boolean_model(built.layer, built.readout, F),
        model_path=None if out is None else str(out),
    )


@dataclass(frozen=True)
class ModelCheck:
    """`headcount boolean check` on one model: the target, the model's D, H and d, whether D·H is
    below the target's threshold degree (then Theorem 2 says it is wrong somewhere), its exact
    certificate and the Theorem 2 polynomial's check. ``to_json()`` puts the certificate's fields at
    the top level."""

    function: str
    n: int
    threshold_degree: int
    degree: int
    heads: int
    dim: int
    below_bound: bool
    certificate: BooleanCertificate
    theorem2: Theorem2Check

    @property
    def certified(self) -> bool:
        return self.certificate.certified

    def to_json(self) -> dict[str, Any]:
        head = {
            "function": self.function,
            "n": self.n,
            "threshold_degree": self.threshold_degree,
            "degree": self.degree,
            "heads": self.heads,
            "dim": self.dim,
            "below_bound": self.below_bound,
        }
        return head | self.certificate.to_json() | {"theorem2": self.theorem2.to_json()}


def _load(model: str | os.PathLike | BooleanModel) -> BooleanModel:
    if isinstance(model, BooleanModel):
        return model
    try:
        return load_boolean(model)  # a bad file: ModelFileError, an InputError
    except OSError as err:  # a file that vanished or cannot be read while loading
        raise InputError(f"{str(model)!r}: cannot read it ({err.strerror})") from None


def check_model(
    model: str | os.PathLike | BooleanModel, function: str, n: int | None = None
) -> ModelCheck:
    """Check a model (a file or a BooleanModel) exactly against a symmetric function by name or
    F:+-… on all 2^n inputs, with its Theorem 2 polynomial; n defaults to the n the model records.
    InputError when the file cannot be read, n is unknown or below 1, or the function is not one."""
    m = _load(model)
    n = n if n is not None else m.info.get("n")
    if not isinstance(n, int) or n < 1:
        raise InputError(
            f"{param('n')} N ≥ 1 is needed: the model file does not record its number of input bits"
        )
    F = parse_function(function, n)
    T = sign_changes(F)
    layer, readout = m.layer, m.readout
    D, H, d = readout.degree, layer.n_heads, layer.dim
    what = f"boolean check at n={n} (model D={D}, H={H}, d={d})"
    bits, terms = rational_bits(layer, readout), len(readout.terms)
    check_exact_cost(
        n,
        D,
        H,
        d,
        terms=terms,
        bits=bits,
        what=what,
        options=f"{param('n')}, or check a smaller model",
        passes=2,
    )
    return ModelCheck(
        function=function,
        n=n,
        threshold_degree=T,
        degree=readout.degree,
        heads=layer.n_heads,
        dim=layer.dim,
        below_bound=readout.degree * layer.n_heads < T,
        certificate=certify_boolean_model(layer, readout, F),
        theorem2=theorem2_check(layer, readout, n),
    )
