"""The Appendix A construction (spec/minmax.md, "Construction", reconstructed).

Min head: s_ω = −β·ω, max head: s_ω = +β·ω, with β = ln(4(n−1)) *rounded up* to a multiple of 2^-20.
Rounding up keeps exp(−β) ≤ 1/(4(n−1)), so the extreme token keeps attention weight ≥ 4/5; the
dyadic β makes every score β·ω exact in float64 (β·2^20 < 2^26, ω < 2^26), so the stored model is
exactly the construction. Values are ±1 codes, θ = v (a one-dimensional q·k suffices for the
scores).

Codes: ``sign_code`` — greedy seeded random ±1 codes with pairwise inner products < d/2, d = ⌈8 ln
M⌉; ``compact_code`` — the binary expansion of ω−1 mapped to ±1, d = ⌈log₂ M⌉ (distinct codes only).
Why both work (certify.py checks it exactly): z = W·v_m + (1−W)·u with u a convex combination of
codes, and for ±1 codes ⟨v_m − v_j, z⟩ ≥ W(d − ⟨v_m, v_j⟩) − (1−W)‖v_m − v_j‖₁ = (2W−1)(d − ⟨v_m,
v_j⟩), positive once W > 1/2 and the codes are distinct; the sign code's small inner products only
enlarge the margin.

``make_code`` picks a code by name, ``build_construction`` the model `headcount minmax construct`
writes (two heads, or the min head alone with θ = v for both classifiers) and ``write_construction``
writes it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from math import ceil, log, log2
from typing import Any

import numpy as np

from headcount.common.errors import InputError, param
from headcount.common.jsonable import JsonResult
from headcount.common.resources import check_memory, check_work
from headcount.common.validate import check_choice, check_int
from headcount.minmax.model import Classifier, MinMaxModel, TokenHead, TokenLayer, save_minmax
from headcount.minmax.task import check_sizes

BETA_BITS = 20
CODES = ("sign", "compact")
# Resource bounds (issue 13), checked from the arguments before any code is drawn. The sign code's
# greedy search compares each new word with every word kept so far: about M²·d/2 multiply-adds (d =
# ⌈8 ln M⌉), at roughly 10⁹ a second; at most CODE_MAX_WORK (M ≈ 20,500, under a minute with
# certify's checks: measured 37 s at M = 20,000 on 2 cores). The compact code is O(M·d).
CODE_MAX_WORK = 2**34
# Float64 arrays of [M d_code] the construction holds while it is built and certified (codes, the
# heads' values and their [M 2d] blocks, classifiers, copies the checks make).
CONSTRUCTION_ARRAYS = 16


def sign_code(M: int, d: int | None = None, seed: int = 0, max_tries: int = 1000) -> np.ndarray:
    """M random ±1 codes [M d] (int64) with ⟨v_ω, v_ω'⟩ < d/2 for ω ≠ ω'; greedy rejection,
    seeded."""
    if M < 2:
        raise InputError(f"bad M={M}: codes need M ≥ 2")
    d = max(1, ceil(8 * log(M))) if d is None else int(d)
    if d < 1:
        raise InputError(f"bad code dimension d={d}: need d ≥ 1")
    rng = np.random.default_rng(seed)
    codes = np.empty((M, d), dtype=np.int64)
    count, tries = 0, 0
    while count < M:
        batch = rng.integers(0, 2, size=(64, d), dtype=np.int64) * 2 - 1  # [64 d]
        for cand in batch:
            tries += 1
            if count == 0 or (codes[:count] @ cand).max() * 2 < d:
                codes[count] = cand
                count += 1
                if count == M:
                    break
        if tries > max_tries * M:
            raise InputError(
                f"no ±1 code of {M} words in dimension {d} with inner products < d/2 found (seed "
                f"{seed})"
            )
    return codes


def compact_code(M: int) -> np.ndarray:
    """The binary expansions of 0..M−1 as ±1 codes: int64 [M ⌈log₂ M⌉], all distinct."""
    if M < 2:
        raise InputError(f"bad M={M}: codes need M ≥ 2")
    d = max(1, ceil(log2(M)))
    bits = (np.arange(M)[:, None] >> np.arange(d)[None, :]) & 1  # [M d]
    return (2 * bits - 1).astype(np.int64)


def beta(n: int) -> float:
    """ln(4(n−1)) rounded up to a multiple of 2^-20 (exact dyadic; certify.py proves β ≥
    ln(4(n−1)))."""
    return ceil(log(4 * (n - 1)) * 2**BETA_BITS + 1) / 2**BETA_BITS


def _head(M: int, n: int, code: np.ndarray, sign: int) -> tuple[TokenHead, Classifier]:
    check_sizes(M, n)
    code = np.asarray(code)
    if code.ndim != 2 or code.shape[0] != M:
        raise InputError(f"code must have shape [M d] = [{M} d], got {code.shape}")
    v = code.astype(np.float64)
    scores = sign * beta(n) * np.arange(1, M + 1, dtype=np.float64)
    return TokenHead(scores, v), Classifier(v.copy())


def min_head(M: int, n: int, code: np.ndarray) -> tuple[TokenHead, Classifier]:
    """The min head (s_ω = −β·ω, values = code) and its classifier θ = v."""
    return _head(M, n, code, -1)


def max_head(M: int, n: int, code: np.ndarray) -> tuple[TokenHead, Classifier]:
    """The max head (s_ω = +β·ω, values = code) and its classifier θ = v."""
    return _head(M, n, code, +1)


def two_head_layer(M: int, n: int, code: np.ndarray) -> MinMaxModel:
    """Both tasks with two heads: values (v_ω, 0) for the min head, (0, v_ω) for the max head, d =
    2·d_code; θ_min = (v, 0), θ_max = (0, v), so each classifier reads its own head's block only."""
    hmin, _ = min_head(M, n, code)
    hmax, _ = max_head(M, n, code)
    d = hmin.dim
    z = np.zeros((M, d))
    vmin, vmax = np.hstack([hmin.values, z]), np.hstack([z, hmax.values])
    layer = TokenLayer((TokenHead(hmin.scores, vmin), TokenHead(hmax.scores, vmax)))
    info = {"construction": "two_head_layer", "M": M, "n": n, "code_dim": d, "beta": beta(n)}
    return MinMaxModel(layer, Classifier(vmin.copy()), Classifier(vmax.copy()), info)


def two_head_roles(M: int, n: int, code_dim: int) -> dict[str, Any]:
    """What two_head_layer(M, n, code) with a code of width `code_dim` is built to do, as JSON (the
    zoo's roles file): head 0 finds the minimum, head 1 the maximum; each classifier reads its
    head's block."""
    check_sizes(M, n)
    check_int("code_dim", code_dim, 1)
    d, b = code_dim, beta(n)
    blocks = {"min": f"0..{d - 1}", "max": f"{d}..{2 * d - 1}"}
    heads = [
        {
            "layer": 0,
            "head": h,
            "role": task,
            "mechanism": f"scores s_ω = {sign}β·ω put weight ≥ 4/5 on the {word} token of the list "
            "(β = ln(4(n−1)) rounded up); writes that token's ±1 code into value coordinates "
            f"{blocks[task]}",
            "query": "none: the score depends on the key token only (no positions)",
            "key": f"s_ω = {sign}β·ω, β = {b!r}",
            "value": f"{value}: the token's ±1 code v_ω in coordinates {blocks[task]}, zeros "
            "elsewhere",
        }
        for h, (task, sign, word, value) in enumerate(
            (("min", "−", "smallest", "(v_ω, 0)"), ("max", "+", "largest", "(0, v_ω)"))
        )
    ]
    decoder = {
        "kind": "classifiers",
        "description": "f_min = argmax_ω ⟨θ_min[ω], z⟩ with θ_min = (v, 0) and f_max with θ_max = "
        "(0, v): "
        "the token whose code is nearest the head's block; an exact tie answers ⊥",
    }
    return {
        "construction": "two_head_layer",
        "beta": b,
        "code_dim": d,
        "heads": heads,
        "decoder": decoder,
    }


def code_dim(M: int, code: str) -> int:
    """d of the code: ⌈8 ln M⌉ for "sign", ⌈log₂ M⌉ for "compact" (at least 1)."""
    return max(1, ceil(8 * log(M)) if code == "sign" else ceil(log2(M)))


def code_work(M: int, code: str) -> float:
    """Multiply-adds of drawing the code: M²·d/2 for the sign code's greedy search, M·d for
    compact."""
    d = code_dim(M, code)
    return float(M) * M * d / 2 if code == "sign" else float(M) * d


def construction_bytes(M: int, code: str) -> float:
    """Memory of the construction (either head count) while it is built: CONSTRUCTION_ARRAYS × [M
    d]."""
    return 8.0 * M * (CONSTRUCTION_ARRAYS * code_dim(M, code) + 4)


def check_construction_resources(M: int, n: int, code: str, seed: int, what: str) -> None:
    """The sizes, the code's name and seed, then memory and the code's work (InputError beyond a
    bound)."""
    check_sizes(M, n)
    check_choice("code", code, CODES)
    check_int("seed", seed, 0)
    check_memory(construction_bytes(M, code), what)
    check_work(
        code_work(M, code),
        CODE_MAX_WORK,
        f"{what}: the {code} code",
        "multiply-adds (M²·d/2)",
        param("M"),
    )


def make_code(M: int, code: str = "sign", seed: int = 0) -> np.ndarray:
    """The value code by name: "sign" (``sign_code``, seeded) or "compact" (``compact_code``)."""
    check_choice("code", code, CODES)
    return sign_code(M, seed=seed) if code == "sign" else compact_code(M)


def build_construction(
    M: int, n: int, heads: int, code: str = "sign", seed: int = 0
) -> MinMaxModel:
    """The construction as a model: heads=2, the two-head layer; heads=1, the min head alone with θ
    = v for both classifiers (a single head that does min and, by Theorem 1, fails max)."""
    check_sizes(M, n)
    check_choice("heads", heads, (1, 2))
    check_construction_resources(
        M, n, code, seed, f"the minmax construction at {param('M')} {M} {param('code')} {code}"
    )
    codes = make_code(M, code, seed)
    if heads == 2:
        return two_head_layer(M, n, codes)
    head, clf = min_head(M, n, codes)
    return MinMaxModel(
        TokenLayer((head,)), clf, clf, {"construction": "min_head_alone", "M": M, "n": n}
    )


@dataclass(frozen=True)
class ConstructionFile(JsonResult):
    """What `headcount minmax construct` wrote: the file and the construction's sizes."""

    path: str
    M: int
    n: int
    heads: int
    dim: int
    code: str


def write_construction(
    path: str | os.PathLike, M: int, n: int, heads: int, code: str = "sign", seed: int = 0
) -> ConstructionFile:
    """``build_construction`` saved to `path` (InputError when the file cannot be written)."""
    model = build_construction(M, n, heads, code, seed)
    try:
        save_minmax(model, path)
    except OSError as err:
        raise InputError(f"cannot write {str(path)!r}: {err.strerror}") from None
    return ConstructionFile(str(path), M, n, heads, model.layer.dim, code)
