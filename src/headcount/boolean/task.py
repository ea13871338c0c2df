"""Named symmetric Boolean functions F : {0..n} → {−1, +1} and their threshold degree.

Convention (used for every name): Boolean *true* ↔ −1, *false* ↔ +1, as for XOR in the spec's worked
example where odd parity ↔ −1, i.e. F(t) = (−1)^t. With t = |x| the number of ones:

- ``xor``          true iff t is odd                       F(t) = (−1)^t
- ``and``          true iff t = n
- ``or``           true iff t ≥ 1
- ``majority``     true iff t > n/2 (strict; a tie is false)
- ``threshold:k``  true iff t ≥ k, 1 ≤ k ≤ n
- ``exact:k``      true iff t = k, 0 ≤ k ≤ n
- ``mod:m``        true iff t is not a multiple of m, m ≥ 2; so F(t) = +1 iff t ≡ 0 (mod m), mod:2 =
                   xor
- ``F:<signs>``    an explicit F given as n + 1 characters '+' / '-' for t = 0..n, e.g. ``F:+-+`` is
                   2-bit XOR.

The threshold degree of a symmetric f is the number of sign changes of F (spec, "Model"). Bad names,
parameters and sizes raise InputError (one line: what is wrong, what is allowed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from flint import fmpq

from headcount.common.errors import InputError, param

NAMES = ("xor", "and", "or", "majority", "threshold:k", "exact:k", "mod:m", "F:<+/- for t = 0..n>")

MAX_BITS = 1_000_000
"""Most input bits n of any symmetric function here (every command's n). F is n + 1 Python ints, and
an exact certificate evaluates the model at every weight t = 0..n (about 10 µs each, before its
big-integer work): 10⁶ bits is ~10 s and ~0.5 GB; 10⁹ would need ~40 GB before any work."""

# name → (truth(t, n)) for the functions without a parameter
_PLAIN: dict[str, Callable[[int, int], bool]] = {
    "xor": lambda t, n: t % 2 == 1,
    "and": lambda t, n: t == n,
    "or": lambda t, n: t >= 1,
    "majority": lambda t, n: 2 * t > n,
}


def _threshold(k: int, n: int) -> Callable[[int], bool]:
    if not 1 <= k <= n:
        raise InputError(f"threshold:k needs 1 ≤ k ≤ n = {n}, got k = {k}")
    return lambda t: t >= k


def _exact(k: int, n: int) -> Callable[[int], bool]:
    if not 0 <= k <= n:
        raise InputError(f"exact:k needs 0 ≤ k ≤ n = {n}, got k = {k}")
    return lambda t: t == k


def _mod(m: int, n: int) -> Callable[[int], bool]:
    if m < 2:
        raise InputError(f"mod:m needs m ≥ 2, got m = {m}")
    return lambda t: t % m != 0


# name → (parameter's name, truth(t) for that parameter and n, checking the parameter's range)
_WITH_PARAM: dict[str, tuple[str, Callable[[int, int], Callable[[int], bool]]]] = {
    "threshold": ("threshold:k", _threshold),
    "exact": ("exact:k", _exact),
    "mod": ("mod:m", _mod),
}


def _int_param(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InputError(f"{name} needs an integer parameter, got {_short(text)}") from None


def _short(text: object) -> str:
    """repr of user text for a message, at most ~60 characters (a 200k-character option stays one
    line)."""
    r = repr(text)
    return r if len(r) <= 60 else r[:57] + "…"


def _check_n(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"n must be an integer ≥ 1, got {n!r}")
    if n > MAX_BITS:
        raise InputError(
            f"n = {n} bits is more than the {MAX_BITS} allowed (F and the exact checks grow with "
            "n); "
            f"lower {param('n')}"
        )


def symmetric_values(name: str, n: int) -> tuple[int, ...]:
    """F(0..n) ∈ {−1, +1} for a named symmetric function (true ↔ −1, see the module docstring)."""
    _check_n(n)
    key, _, param = str(name).strip().lower().partition(":")
    if key in _PLAIN and not param:
        return tuple(-1 if _PLAIN[key](t, n) else 1 for t in range(n + 1))
    if key in _WITH_PARAM and param:
        label, make = _WITH_PARAM[key]
        truth = make(_int_param(label, param), n)
        return tuple(-1 if truth(t) else 1 for t in range(n + 1))
    raise InputError(f"unknown function {_short(name)}; allowed: {', '.join(NAMES)}")


def parse_function(text: str, n: int) -> tuple[int, ...]:
    """F(0..n) from a name (see ``symmetric_values``) or an explicit ``F:+-+...`` of n + 1 signs."""
    _check_n(n)
    s = str(text).strip()
    if s[:2] in ("F:", "f:"):
        signs = s[2:]
        if len(signs) != n + 1 or set(signs) - {"+", "-"}:
            raise InputError(
                f"explicit F needs exactly n + 1 = {n + 1} characters '+' or '-', "
                f"got {_short(signs)} ({len(signs)} characters)"
            )
        return tuple(1 if c == "+" else -1 for c in signs)
    return symmetric_values(s, n)


def format_function(F: Sequence[int]) -> str:
    """The explicit ``F:+-...`` spelling of F (inverse of ``parse_function`` for explicit F)."""
    return "F:" + "".join("+" if v > 0 else "-" for v in check_values(F))


def function_and_label(name_or_F: str | Sequence[int], n: int) -> tuple[tuple[int, ...], str]:
    """(F, its label): a name or F:+-… is parsed at n; explicit values must number n + 1."""
    if isinstance(name_or_F, str):
        return parse_function(name_or_F, n), name_or_F.strip()
    F = check_values(name_or_F)
    if len(F) != n + 1:
        raise InputError(f"F needs n + 1 = {n + 1} values, got {len(F)}")
    return F, format_function(F)


def check_values(F: Sequence[int]) -> tuple[int, ...]:
    """F as a tuple of ±1 with at least two entries (n ≥ 1), or a one-line InputError."""
    F = tuple(int(v) for v in F)
    if len(F) < 2 or any(v not in (-1, 1) for v in F):
        raise InputError("F must list values ±1 for t = 0..n with n ≥ 1")
    return F


def sign_changes(F: Sequence[int]) -> int:
    """Number of t in 0..n−1 with F(t) ≠ F(t + 1)."""
    F = check_values(F)
    return sum(F[t] != F[t + 1] for t in range(len(F) - 1))


def threshold_degree_symmetric(F: Sequence[int]) -> int:
    """Threshold degree of the symmetric f with f(x) = F(|x|): the number of sign changes of F
    (Minsky–Papert symmetrization gives ≥, the product over change points gives ≤)."""
    return sign_changes(F)


def change_points(F: Sequence[int]) -> list[fmpq]:
    """The half-integer points r_j = t + ½ where F(t) ≠ F(t + 1), increasing."""
    F = check_values(F)
    return [fmpq(2 * t + 1, 2) for t in range(len(F) - 1) if F[t] != F[t + 1]]
