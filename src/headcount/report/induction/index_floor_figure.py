"""The figure of the claim `induction.index.error_floor` (report.induction.index_floor): the INDEX
error floor δ* = h⁻¹(1 − b/k) against k, and every checked model's measured INDEX error.

Black: the floor at the shortest and longest message of the random models at each k (a band), and at
the encoding's worst case for their shape; markers: each model's exact INDEX error (random models,
filled where b < k; the one-layer construction; the trained models' table forms). The error axis is
linear below LINEAR_BELOW and logarithmic above.
"""

from __future__ import annotations

import matplotlib.pyplot as plt

from headcount.induction.lower_bound.floor import error_floor
from headcount.report.claims import INDUCTION_PAPER, PASS, ClaimResult
from headcount.report.figures import COLOURS, figure
from headcount.report.induction.index_floor import CLAIM, FloorPoint, FloorSeries, trained_summary

# kind -> marker, colour, x offset, label (short: the legend sits beside the axes; the markers
# are INDEX errors, as the y axis says)
STYLES = {
    "random": ("o", COLOURS["measured"], -0.2, "random models, b ≥ k (floor 0)"),
    "random-short": ("o", COLOURS["measured"], -0.2, "random models, b < k (floor > 0)"),
    "construction": ("^", COLOURS["construction"], 0.0, "one-layer construction"),
    "trained": ("s", COLOURS["trained"], 0.3, "trained one-layer models (tables)"),
}
LINEAR_BELOW = (
    0.01  # the y axis is linear below this error and logarithmic above (floors are small)
)


def _style_of(point: FloorPoint) -> str:
    short = point.kind == "random" and point.check.message_bits < point.check.k
    return "random-short" if short else point.kind


def _floor_lines(ax: plt.Axes, s: FloorSeries) -> None:
    """δ* against k for the shortest and longest random message at each k, and at the shape's worst
    case."""
    h, m, p = s.shape
    randoms = [q for q in s.points if q.kind == "random"]
    ks = sorted({q.check.k for q in randoms})
    bits = {k: [q.check.message_bits for q in randoms if q.check.k == k] for k in ks}
    shortest = [error_floor(min(bits[k]), k) for k in ks]
    longest = [error_floor(max(bits[k]), k) for k in ks]
    bound = COLOURS["bound"]
    ax.fill_between(ks, longest, shortest, color=bound, alpha=0.1, lw=0)
    label = f"floor δ*, shortest b among random\nmodels (h={h}, m={m}, p={p})"
    ax.plot(ks, shortest, ".-", color=bound, lw=2, label=label)
    ax.plot(ks, longest, ".--", color=bound, lw=1, label="floor δ*, longest b among them")
    worst = max(q.check.worst_case_message_bits for q in randoms)
    xs = list(range(1, max(ks) + 1))
    label = f"floor δ* of every model of this\nshape (b ≤ {worst} bits: worst case)"
    ax.plot(xs, [error_floor(worst, k) for k in xs], ":", color=bound, lw=1.5, label=label)


def _spread(point: FloorPoint, group: list[FloorPoint]) -> float:
    """A small x offset that separates the points of a group at the same k (centred on 0)."""
    same = [q for q in group if q.check.k == point.check.k]
    step = 0.17 if point.kind == "trained" else 0.07  # squares are wider than circles
    return step * (next(i for i, q in enumerate(same) if q is point) - (len(same) - 1) / 2)


@figure("index_error_floor", claim=CLAIM)
def draw_floor(fig: plt.Figure, result: ClaimResult) -> str:
    s: FloorSeries = result.series
    ax = fig.add_subplot(1, 1, 1)
    if any(q.kind == "random" for q in s.points):
        _floor_lines(ax, s)
    for style, (marker, colour, offset, label) in STYLES.items():
        mine = [q for q in s.points if _style_of(q) == style]
        xs = [q.check.k + offset + _spread(q, mine) for q in mine]
        ys = [q.check.floor.index_error for q in mine]
        fill = colour if style == "random-short" else "none"
        if mine:
            ax.plot(xs, ys, marker, color=colour, ms=7, mfc=fill, mew=2, ls="", label=label)
    ax.set_yscale("symlog", linthresh=LINEAR_BELOW, linscale=0.5)
    ax.set_ylim(-0.002, 1.5)
    ax.set_xlabel("INDEX size k (inputs of length 2k+1)")
    ax.set_ylabel("INDEX error: (f, i*) pairs wrong")
    ax.set_title("One-layer models on INDEX: error floor δ* and measured errors")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=10)
    return _caption(s, result)


def _trained_caption(s: FloorSeries) -> str:
    trained = trained_summary(list(s.points))
    if not trained:
        return (
            "No trained one-layer model was checked: "
            + ("; ".join(s.skipped) or "none in the experiment")
            + "."
        )
    bits = ", ".join(str(t["message_bits"]) for t in trained)
    text = (
        "Red squares: the table forms (table_from_weights) of the trained one-layer models of "
        "the induction-depth experiment, checked as table models, quantised to the fixed:p at "
        "which the table gives its float64 answers on every INDEX input; their messages take "
        f"{bits} bits"
    )
    if all(t["vacuous"] for t in trained):
        return text + " (b ≫ k), so their floor is 0: vacuous at trainable sizes."
    return text + "."


def _caption(s: FloorSeries, result: ClaimResult) -> str:
    h, m, p = s.shape
    bits = sorted({q.check.message_bits for q in s.points if q.kind == "random"})
    return (
        f"Paper ({INDUCTION_PAPER.cite} §3), its INDEX reduction with Fano's inequality: a "
        "one-layer model whose protocol message has b bits "
        "errs on at least δ* = h⁻¹(1 − b/k) of the INDEX pairs (less its disagreement rate with "
        "the "
        "protocol). "
        "Black lines and band: δ* at the shortest and the longest message measured among the "
        "random one-layer models "
        f"of shape h = {h}, m = {m}, p = {p} at each k (b is measured per model: {bits} bits); "
        "dotted black: "
        "δ* at the encoding's worst-case length for that shape, which every such model obeys. "
        "Purple circles: "
        "each random model's exact INDEX error over all 2^k·k pairs (several seeds per k, spread "
        "slightly in "
        "k; filled: b < k, so its own floor is positive). The error axis is linear below "
        f"{LINEAR_BELOW:g} and logarithmic above, so the small floors and the large errors both "
        "show. "
        "Blue triangles: the one-layer construction (correct: error 0, b ≥ k, floor 0). "
        + _trained_caption(s)
        + ("" if result.status == PASS else " The claim FAILED at this run: its detail says where.")
    )
