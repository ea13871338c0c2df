"""Named symmetric Boolean functions F : {0..n} → {−1, +1} and their threshold degree.

Convention (used for every name): Boolean *true* ↔ −1, *false* ↔ +1, as for XOR in the spec's worked
example where odd parity ↔ −1, i.e. F(t) = (−1)^t. With t = |x| the number of ones:

- ``xor``          true iff t is odd                       F(t) = (−1)^t
- ``and``          true iff t = n
- ``or``           true iff t ≥ 1
- ``majority``     true iff t > n/2 (strict; a tie is false)
- ``threshold:k``  true iff t ≥ k, 1 ≤ k ≤ n
- ``exact:k``      true iff t = k, 0 ≤ k ≤ n
- ``mod:m``        true iff t is not a multiple of m, m ≥ 2; so F(t) = +1 iff t ≡ 0 (mod m), mod:2 = xor
- ``F:<signs>``    an explicit F given as n + 1 characters '+' / '-' for t = 0..n, e.g. ``F:+-+`` is
                   2-bit XOR.

The threshold degree of a symmetric f is the number of sign changes of F (spec, "Model").
"""

from __future__ import annotations

from collections.abc import Sequence

from flint import fmpq

NAMES = ("xor", "and", "or", "majority", "threshold:k", "exact:k", "mod:m", "F:<+/- for t = 0..n>")


def _int_param(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name} needs an integer parameter, got {text!r}") from None


def symmetric_values(name: str, n: int) -> tuple[int, ...]:
    """F(0..n) ∈ {−1, +1} for a named symmetric function (true ↔ −1, see the module docstring)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer ≥ 1, got {n!r}")
    key, _, param = str(name).strip().lower().partition(":")
    ts = range(n + 1)
    if key == "xor" and not param:
        truth = [t % 2 == 1 for t in ts]
    elif key == "and" and not param:
        truth = [t == n for t in ts]
    elif key == "or" and not param:
        truth = [t >= 1 for t in ts]
    elif key == "majority" and not param:
        truth = [2 * t > n for t in ts]
    elif key == "threshold" and param:
        k = _int_param("threshold:k", param)
        if not 1 <= k <= n:
            raise ValueError(f"threshold:k needs 1 ≤ k ≤ n = {n}, got k = {k}")
        truth = [t >= k for t in ts]
    elif key == "exact" and param:
        k = _int_param("exact:k", param)
        if not 0 <= k <= n:
            raise ValueError(f"exact:k needs 0 ≤ k ≤ n = {n}, got k = {k}")
        truth = [t == k for t in ts]
    elif key == "mod" and param:
        m = _int_param("mod:m", param)
        if m < 2:
            raise ValueError(f"mod:m needs m ≥ 2, got m = {m}")
        truth = [t % m != 0 for t in ts]
    else:
        raise ValueError(f"unknown function {name!r}; allowed: {', '.join(NAMES)}")
    return tuple(-1 if b else 1 for b in truth)


def parse_function(text: str, n: int) -> tuple[int, ...]:
    """F(0..n) from a name (see ``symmetric_values``) or an explicit ``F:+-+...`` of n + 1 signs."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer ≥ 1, got {n!r}")
    s = str(text).strip()
    if s[:2] in ("F:", "f:"):
        signs = s[2:]
        if len(signs) != n + 1 or set(signs) - {"+", "-"}:
            raise ValueError(f"explicit F needs exactly n + 1 = {n + 1} characters '+' or '-', got {signs!r}")
        return tuple(1 if c == "+" else -1 for c in signs)
    return symmetric_values(s, n)


def format_function(F: Sequence[int]) -> str:
    """The explicit ``F:+-...`` spelling of F (inverse of ``parse_function`` for explicit F)."""
    return "F:" + "".join("+" if v > 0 else "-" for v in check_values(F))


def check_values(F: Sequence[int]) -> tuple[int, ...]:
    """F as a tuple of ±1 with at least two entries (n ≥ 1), or a one-line ValueError."""
    F = tuple(int(v) for v in F)
    if len(F) < 2 or any(v not in (-1, 1) for v in F):
        raise ValueError("F must list values ±1 for t = 0..n with n ≥ 1")
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
