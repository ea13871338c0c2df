"""minmax.minimal_resources: the smallest (d, K) at which one head with integer values supports
both min and max at small (M, n), by exhaustive search over a stated family
(headcount.minmax.theorem1.minimal), beside Theorem 1's bound.

Measure: minimal_resources per (M, n). Check, independently of the search: the head found is
right on every multiset of [M]^n by brute force (brute.verify_brute, not the histogram verifier
the search used), every (d, K) searched before it has a certificate for every member and none
undecided, and the found head does not violate Theorem 1's proven inequality (d > N/2 or
d·log₂ ℓ > N when N ≥ 2, read off its chain). Describe: the table.
"""

from __future__ import annotations

import math
from typing import Any

import matplotlib.pyplot as plt

from headcount.minmax.brute import verify_brute
from headcount.minmax.theorem1.minimal import MinimalResources, minimal_resources
from headcount.report.claims import MULTITASK_PAPER, ClaimResult, Context, claim, status
from headcount.report.figures import figure


def _problems(r: MinimalResources) -> list[str]:
    where = f"M={r.M} n={r.n}"
    out = []
    for c in r.cells:
        if c.found is None and not c.too_large and (c.undecided or c.certificates != c.members):
            out.append(f"{where} d={c.d} K={c.K}: {c.undecided} members undecided")
    f = r.found
    if f is None:
        return out
    model = f.model
    for task, clf in (("min", model.classifier_min), ("max", model.classifier_max)):
        if not verify_brute(model, clf, task, r.n).correct:
            out.append(f"{where}: the head found is wrong on some list for {task} (brute force)")
    norm2 = max(sum(v * v for v in row) for row in f.found.values)
    bits = math.log2(norm2) / 2
    if r.N >= 2 and not (2 * f.d > r.N or f.d * bits > r.N):
        out.append(f"{where}: d = {f.d}, log₂ ℓ = {bits:.3g} violate Theorem 1 at N = {r.N}")
    if r.chain is not None and r.chain["verdict"] not in ("bound proven", "vacuous"):
        out.append(f"{where}: Theorem 1's chain on the head found says {r.chain['verdict']}")
    return out


def _row(r: MinimalResources) -> dict[str, Any]:
    record = r.to_json()
    minimal = record["minimal"]
    return {
        "M": r.M,
        "n": r.n,
        "N": r.N,
        "cells": record["cells"],
        "d": None if minimal is None else minimal["d"],
        "K": None if minimal is None else minimal["K"],
        "log2_norm": None if minimal is None else minimal["log2_norm"],
        "bound": min(r.N / 2, math.sqrt(r.N)) if r.N >= 2 else None,
        "theorem1": record["theorem1"],
    }


def _describe(rows: list[dict[str, Any]]) -> str:
    parts = []
    for row in rows:
        refuted = [
            f"(d={c['d']}, K={c['K']})" for c in row["cells"] if c["verdict"].startswith("ref")
        ]
        head = (
            f"minimal d={row['d']}, K={row['K']} (log₂ ℓ = {row['log2_norm']:.2f})"
            if row["d"] is not None
            else "none found in the cells searched"
        )
        parts.append(
            f"M={row['M']} n={row['n']} (N={row['N']}): {head}; refuted in the family: "
            + (", ".join(refuted) or "none")
        )
    return "; ".join(parts)


@claim(
    "minmax.minimal_resources",
    paper=MULTITASK_PAPER,
    source="§3.1 Theorem 1 (one head needs d or precision large), at the sizes where exhaustive "
    "search is possible",
    statement="Exact minimal one-head models for min and max: for small (M, n), the smallest value "
    "dimension d and value bound K at which one head with integer values in {−K..K}^d supports "
    "both tasks, by exhaustive search over the family α = β^r (every ranking r, β ∈ {2, 2n}) × "
    "values up to coordinate symmetries; every smaller (d, K) refuted member by member with "
    "exact certificates; beside Theorem 1's bound, which no head found may violate.",
    check="PASS only if every head found is right on every multiset of [M]^n (brute force), every "
    "smaller (d, K) searched has an exact certificate for each member, and no head found "
    "violates d > N/2 or d·log₂ ℓ > N (N ≥ 2) or has a chain other than 'bound proven'/'vacuous'.",
    quick={"cases": [(3, 3), (3, 5), (3, 9)], "d_max": 2, "K_max": 2},
    full={"cases": [(3, 3), (3, 5), (3, 9), (4, 3), (4, 7)], "d_max": 3, "K_max": 2},
)
def minimal_resources_claim(ctx: Context, cases, d_max: int, K_max: int) -> ClaimResult:
    results = [minimal_resources(M, n, d_max, K_max) for M, n in cases]
    problems = [p for r in results for p in _problems(r)]
    rows = [_row(r) for r in results]
    detail = "; ".join(problems) or _describe(rows)
    return ClaimResult({"cases": rows}, status(not problems), detail, rows)


@figure("minmax_minimal_resources", claim="minmax.minimal_resources")
def draw_minimal(fig: plt.Figure, result: ClaimResult) -> str:
    rows = result.series or []
    ax = fig.add_subplot(1, 1, 1)
    labels = [f"M={r['M']}\nn={r['n']}" for r in rows]
    xs = range(len(rows))
    for x, r in zip(xs, rows):
        for c in r["cells"]:
            if c["verdict"].startswith("refuted"):
                ax.scatter(x, c["d"], marker="x", color="tab:red", s=50)
        if r["d"] is not None:
            ax.scatter(x, max(r["d"], r["log2_norm"]), marker="o", color="tab:blue", s=60)
        if r["bound"] is not None:
            ax.hlines(r["bound"], x - 0.3, x + 0.3, color="black", linestyles="dashed")
    ax.set_xticks(list(xs), labels)
    ax.set_ylabel("d, or max{d, log₂ ℓ}")
    ax.set_ylim(0, max([2.5] + [max(r["d"] or 0, r["log2_norm"] or 0) + 0.5 for r in rows]))
    ax.set_title("One head for min and max: minimal resources found vs Theorem 1")
    return (
        "o: the smallest one-head model found (max{d, log₂ ℓ}); x: dimensions d refuted in the "
        "family (every member certified infeasible); dashed: Theorem 1's proven floor "
        "min{N/2, √N} on max{d, p + log₂ ℓ}, N = min{⌊1+√(M−1)⌋, ⌊(n−1)/2⌋} (absent when N < 2)."
    )
