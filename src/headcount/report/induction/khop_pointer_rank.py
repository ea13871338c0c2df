"""The strictly-earlier pointer's rank (issue 35, item 1): the claim `induction.khop.pointer_rank`
and its figure `khop_pointer_rank`.

Measure: induction.multihop.pointer_rank.pointer_rank_bounds(family, n) for each family and n —
an infeasible result at r(n) − 1 (an exact Gordan certificate) and a strict one at r(n) (an exact
A whose margin is > 0), each re-verified from scratch by check_pointer_rank. The search starts
from 2√n (a hint: the bounds do not depend on it). The margin LP over all the gaps (r² columns)
runs only where n ≤ lp_max_n; above it a fourier rank the shift lift does not fit (even r) is
left undecided, so fourier's bounds there may be one apart.

Check (each a line of the detail when it fails): every result re-verifies; below is infeasible
and at is strict; within "poly" the bounds meet (r(n) exactly) with the infeasible rank refuted
by the last query alone and the strict one from the shift lift (the module docstring of
pointer_rank: the last query decides the polynomial family); |r(n) − 2√n| ≤ 1 for "poly" (the
growth law measured at n = 8..1024 when this claim was written).

Reported, never asserted: fourier's bounds, and how each result was decided.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt

from headcount.induction.multihop.pointer_rank import (
    RankBounds,
    check_pointer_rank,
    pointer_rank_bounds,
)
from headcount.report.claims import KHOP_PAPER, PASS, ClaimResult, Context, claim, status
from headcount.report.figures import COLOURS, figure, log2_axis

CLAIM = "induction.khop.pointer_rank"
CACHE_KIND = "khop_pointer_rank"
POWERS = (8, 16, 32, 64, 128, 256, 512, 1024)

QUICK = {"poly": POWERS[:6], "fourier": POWERS[:4], "lp_max_n": 32}
FULL = {"poly": POWERS, "fourier": POWERS[:5], "lp_max_n": 64}


def sqrt_law(n: int) -> float:
    """2√n: the polynomial family's r(n) to within one at every n measured."""
    return 2 * math.sqrt(n)


def bounds_for(ctx: Context, family: str, n: int, lp: bool) -> RankBounds:
    """The (cached) certified bounds on r(n) for one family and n."""
    guess = max(2, round(sqrt_law(n)))

    def compute() -> RankBounds:
        return pointer_rank_bounds(family, n, guess, 4 * guess + 8, lp=lp)

    return ctx.cached((CACHE_KIND, family, n, lp), compute, f"pointer rank {family} n={n}")


def problems_of(bounds: RankBounds) -> list[str]:
    """Why one family's bounds at one n contradict the claim (empty: they agree)."""
    below, at = bounds.below, bounds.at
    where = f"{at.family} n={at.n}"
    out = [
        f"{where} r={x.r}: the certificate does not re-verify"
        for x in (below, at)
        if not check_pointer_rank(x)
    ]
    if below.strict or not at.strict or below.r >= at.r:
        out.append(f"{where}: not an infeasible rank {below.r} below a strict rank {at.r}")
    if at.family == "poly":
        if not bounds.exact or below.method != "last_query" or at.method != "shift":
            out.append(
                f"{where}: ranks {below.r} ({below.method}) and {at.r} ({at.method}), not the last "
                "query's refutation just below the shift lift's solution"
            )
        if abs(at.r - sqrt_law(at.n)) > 1:
            out.append(f"{where}: r(n) = {at.r}, more than one from 2√n = {sqrt_law(at.n):.2f}")
    return out


@dataclass(frozen=True)
class RankSeries:
    """What the figure draws: each family's bounds, by n."""

    poly: tuple[RankBounds, ...]
    fourier: tuple[RankBounds, ...]

    def to_json(self) -> dict[str, Any]:
        return {family: [_row(b) for b in getattr(self, family)] for family in ("poly", "fourier")}


def _row(bounds: RankBounds) -> dict[str, Any]:
    below, at = bounds.below, bounds.at
    return {
        "n": at.n,
        "r_infeasible": below.r,
        "r_strict": at.r,
        "exact": bounds.exact,
        "infeasible_by": below.method,
        "strict_by": at.method,
        "gordan_support": len(below.gordan[0]) if below.gordan else None,
        "margin_lower": float(at.margin_lower or 0),
        "two_sqrt_n": round(sqrt_law(at.n), 3),
    }


def _ranks_text(series: tuple[RankBounds, ...]) -> str:
    return ", ".join(
        f"{b.at.n}: {b.at.r}" if b.exact else f"{b.at.n}: {b.below.r + 1}–{b.at.r}" for b in series
    )


def describe(series: RankSeries, problems: list[str]) -> str:
    if problems:
        return "; ".join(problems)
    open_ = ", ".join(str(b.at.n) for b in series.fourier if not b.exact)
    return (
        f"poly r(n) = {_ranks_text(series.poly)} (n: r), each the last query's Gordan "
        f"certificate at r − 1 and the shift lift's exact solution at r, all re-verified; within "
        f"one of 2√n; fourier r(n) = {_ranks_text(series.fourier)}"
        + (f" (left open at n = {open_}: an even rank, the margin LP not run)" if open_ else "")
    )


@claim(
    CLAIM,
    paper=KHOP_PAPER,
    source="k-hop induction heads at ⌊log₂ k⌋ + 2 layers: layer 1 must point at the latest "
    "strictly earlier occurrence, which the theorem's depth needs and pointer doubling avoids",
    statement="A causal head that points at the latest strictly earlier occurrence of each token "
    "must score key i below every earlier key with position features alone. Within polynomial "
    "position features of rank r (Chebyshev, degree < r in query and key) the least rank r(n) "
    "that does it is decided by the last query alone: r(n) = 1 + the least degree of a "
    "polynomial that rises on n − 1 consecutive points and ends below its start — and it grows "
    "as 2√n (to within one; n = 8…256 at the quick scale, …1024 at the full), certified both "
    "ways: an exact solution at r(n) and an exact Gordan certificate of infeasibility at "
    "r(n) − 1 (ranks nest, so every smaller rank is refuted too). Reported beside it: trig "
    "features (1, cos, sin of πaj/n), exact where the margin LP runs.",
    check="PASS only if every certificate re-verifies in exact arithmetic, each infeasible rank "
    "lies below its strict one, the polynomial family's bounds meet with the last query's "
    "refutation and the shift lift's solution, and |r(n) − 2√n| ≤ 1 for it.",
    quick=QUICK,
    full=FULL,
)
def khop_pointer_rank_claim(
    ctx: Context, poly: tuple[int, ...], fourier: tuple[int, ...], lp_max_n: int
) -> ClaimResult:
    series = RankSeries(
        tuple(bounds_for(ctx, "poly", n, n <= lp_max_n) for n in poly),
        tuple(bounds_for(ctx, "fourier", n, n <= lp_max_n) for n in fourier),
    )
    problems = [line for b in series.poly + series.fourier for line in problems_of(b)]
    return ClaimResult(series.to_json(), status(not problems), describe(series, problems), series)


@figure("khop_pointer_rank", claim=CLAIM)
def draw_rank(fig: plt.Figure, result: ClaimResult) -> str:
    s: RankSeries = result.series
    ax = fig.add_subplot(1, 1, 1)
    ns = sorted({b.at.n for b in s.poly + s.fourier})
    grid = [ns[0] * (ns[-1] / ns[0]) ** (t / 100) for t in range(101)]
    ax.plot(grid, [sqrt_law(n) for n in grid], "--", color=COLOURS["prediction"], label="2√n")
    styles = {"poly": ("o", COLOURS["construction"]), "fourier": ("D", COLOURS["measured"])}
    for family, series in (("poly", s.poly), ("fourier", s.fourier)):
        marker, colour = styles[family]
        exact = [(b.at.n, b.at.r) for b in series if b.exact]
        if exact:
            ax.plot(*zip(*exact), marker, color=colour, ms=7, label=f"{family}: r(n), exact")
        for b in series:
            if not b.exact:  # an interval: certified infeasible below, strict at the top
                ax.plot([b.at.n] * 2, [b.below.r + 1, b.at.r], "-", color=colour, lw=2)
                ax.plot([b.at.n], [b.at.r], marker, color=colour, ms=7, mfc="none")
    log2_axis(ax, ns)
    ax.set_yscale("log", base=2)  # 2√n is then a line of slope 1/2
    ranks = sorted({b.at.r for b in s.poly + s.fourier})
    ax.set_yticks(ranks, [str(r) for r in ranks])
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("least rank r(n) of the position scores")
    ax.set_title("The strictly-earlier pointer: rank of its position scores")
    ax.legend(loc="upper left", fontsize=10)
    return (
        f"Source: the construction note on {KHOP_PAPER.cite}'s ⌊log₂ k⌋ + 2 depth. Each point: the "
        "least rank r of the position-only score matrix G = Φ A Φᵀ (Φ: n × r features of the "
        "position) that ranks key i below every strictly earlier key for every query i. Circles: "
        "Chebyshev features, where the last query decides r(n) (a Gordan certificate at r − 1, "
        "the shift lift's exact solution at r); diamonds: rounded trig features (hollow with a "
        "bar: certified bounds, the even rank between not decided). Dashed: 2√n. A family's "
        "r(n) bounds only heads built from that family; whether other O(log n)-bit embeddings "
        "do better is open."
        + ("" if result.status == PASS else " The claim FAILED at this run: its detail says where.")
    )
