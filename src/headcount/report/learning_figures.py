"""Figures of the learning experiments, drawn from the summaries that learn/experiments.py reads out of
the results database. One drawing per experiment, used both by `headcount experiment NAME` (files beside
the database) and by the report (registered against the learning claims).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from headcount.report.claims import ClaimResult
from headcount.report.figures import _log2_axis, figure, save_figure


def draw_induction_depth(fig: plt.Figure, s: dict[str, Any]) -> str:
    ax = fig.add_subplot(1, 1, 1)
    cells = s["cells"]
    colors = {1: "tab:red", 2: "tab:blue", 3: "tab:green"}
    for key in sorted({(c["layers"], c["alphabet"], c["heads"], c["dim"]) for c in cells}):
        L, S, h, m = key
        pts = sorted((c for c in cells if (c["layers"], c["alphabet"], c["heads"], c["dim"]) == key), key=lambda c: c["n"])
        ns = [c["n"] for c in pts]
        acc = np.array([c["accuracy"] for c in pts])
        lo, hi = acc - np.array([c["accuracy_min"] for c in pts]), np.array([c["accuracy_max"] for c in pts]) - acc
        ax.errorbar(ns, 100 * acc, yerr=100 * np.vstack([lo, hi]), fmt="o-" if S == min(c["alphabet"] for c in cells) else "s--",
                    color=colors.get(L, "tab:gray"), capsize=3, label=f"{L} layer{'s' if L > 1 else ''}, {h} head{'s' if h > 1 else ''}, dim {m}, S = {S}")
    _log2_axis(ax, [c["n"] for c in cells])
    ax.set_xlabel("sequence length n (tokens)")
    ax.set_ylabel("accuracy on non-⊥ positions (%)")
    ax.set_ylim(min(40, 100 * min(c["accuracy_min"] for c in cells) - 5), 101)
    ax.set_title("Induction heads, trained: one layer vs two layers")
    ax.legend(loc="lower left", fontsize=10)
    return ("Paper (seed 000): a one-layer transformer needs heads·dim·bits = Ω(n) to solve induction heads, two layers "
            "of constant size suffice. Measured: trained models (mean over seeds, bars min–max) on held-out uniform "
            f"sequences; the best two-layer model reaches {100 * s['two_layer_best_min_accuracy']:.2f}% or more at every n, "
            f"one layer at most {100 * s['one_layer_best_accuracy']:.1f}%.")


def draw_khop(fig: plt.Figure, s: dict[str, Any]) -> str:
    ax = fig.add_subplot(1, 1, 1)
    err = 100 * np.array(s["error"], dtype=float)
    im = ax.imshow(err, origin="lower", aspect="auto", cmap="magma_r", vmin=0, vmax=100)
    for i in range(err.shape[0]):
        for j in range(err.shape[1]):
            ax.text(j, i, f"{err[i, j]:.1f}", ha="center", va="center", fontsize=10,
                    color="white" if err[i, j] > 50 else "black")
    ax.set_xticks(range(len(s["hops"])), [str(k) for k in s["hops"]])
    ax.set_yticks(range(len(s["layers"])), [str(L) for L in s["layers"]])
    fig.colorbar(im, ax=ax, label="error on positions with an answer (%)")
    ax.set_xlabel("hops k")
    ax.set_ylabel("layers L")
    ax.set_title("k-hop induction heads: error of trained models by depth")
    return ("Paper (Sanford, Hsu, Telgarsky 2024): k-hop induction heads is solvable with about log₂ k + 2 layers and "
            "needs depth growing with log k. Measured: one model per depth L, trained on hop counts 1..K given as the "
            "first token ('no adjacent repeats', alphabet 4), error at each k on held-out positions with an answer.")


def draw_minmax(fig: plt.Figure, s: dict[str, Any]) -> str:
    ax = fig.add_subplot(1, 1, 1)
    cells = s["cells"]
    colors = {1: "tab:red", 2: "tab:blue"}
    for key in sorted({(c["heads"], c["M"], c["n"]) for c in cells}):
        H, M, n = key
        pts = sorted((c for c in cells if (c["heads"], c["M"], c["n"]) == key), key=lambda c: c["dim"])
        ax.plot([c["dim"] for c in pts], [100 * c["accuracy_both_max"] for c in pts], "o-", color=colors.get(H, "tab:gray"),
                label=f"{H} head{'s' if H > 1 else ''}, M = {M}, n = {n} (best seed)")
        if H == 1:
            for c in pts:
                if c["counterexample_min_or_max"]:
                    ax.annotate(f"{c['counterexample_min_or_max']}/{c['seeds']}", (c["dim"], 100 * c["accuracy_both_max"]),
                                textcoords="offset points", xytext=(0, -16), ha="center", fontsize=10, color="tab:red")
    for M, d in sorted(s.get("construction_dims", {}).items()):
        ax.axvline(d, color="tab:blue", ls=":", lw=1.5, label=f"two-head construction certified, M = {M}: d = {d}")
    ax.set_xlabel("value dimension d")
    ax.set_ylabel("lists right on both min and max (%)")
    ax.set_title("Min and max, trained: one head vs two heads")
    ax.set_ylim(0, 102)
    ax.legend(loc="lower right", fontsize=10)
    return ("Paper (seed 004 §3.1): one attention head cannot support both min and max with small resources; two heads "
            "can (Appendix A, certified here for the dotted d). Measured: exact accuracy of trained models on every "
            "multiset (weighted to all M^n lists); red labels: trained single heads for which the exact one-head "
            "verifier found a counterexample to min or max, out of the seeds.")


def draw_xor_training(fig: plt.Figure, s: dict[str, Any]) -> str:
    ax = fig.add_subplot(1, 1, 1)
    cells, n = s["cells"], s["n"]
    Ds = sorted({c["degree"] for c in cells})
    Hs = sorted({c["heads"] for c in cells})
    grid = np.full((len(Hs), len(Ds)), np.nan)
    for c in cells:
        grid[Hs.index(c["heads"]), Ds.index(c["degree"])] = c["solved"] / c["seeds"]
    im = ax.imshow(100 * grid, origin="lower", aspect="auto", cmap="Greens", vmin=0, vmax=100)
    for c in cells:
        i, j = Hs.index(c["heads"]), Ds.index(c["degree"])
        mark = "" if c["construction_certified"] is None else (" C" if c["construction_certified"] else " C?")
        ax.text(j, i, f"{c['solved']}/{c['seeds']}{mark}", ha="center", va="center", fontsize=10,
                color="white" if c["solved"] / c["seeds"] > 0.6 else "black")
    # the curve D·H = n in cell coordinates (interpolated along the D axis)
    ds = np.linspace(Ds[0], Ds[-1], 200)
    hs = n / ds
    ok = (hs >= Hs[0]) & (hs <= Hs[-1])
    ax.plot(np.interp(ds[ok], Ds, range(len(Ds))), np.interp(hs[ok], Hs, range(len(Hs))), "r-", lw=2, label=f"D·H = n = {n}")
    ax.set_xticks(range(len(Ds)), [str(d) for d in Ds])
    ax.set_yticks(range(len(Hs)), [str(h) for h in Hs])
    fig.colorbar(im, ax=ax, label="seeds solving all 2^n inputs (%)")
    ax.set_xlabel("readout degree D")
    ax.set_ylabel("heads H")
    ax.set_title(f"{n}-bit XOR, trained: (D, H) phase diagram")
    ax.legend(loc="upper right")
    return (f"Paper (seed 004 Theorems 2, 3): H heads with a degree-D readout compute n-bit XOR iff D·H ≥ n. Measured at "
            f"n = {n}: cells give seeds whose trained model is exactly right on all 2^n inputs; 'C' marks cells where the "
            f"Theorem-3 construction is certified exactly. Below the red curve no model can succeed "
            f"({s['below_solved']} of {s['below_cells']} cells did); above it training solved {s['above_solved']} of "
            f"{s['above_cells']} cells.")


DRAW = {"induction-depth": draw_induction_depth, "khop": draw_khop, "minmax-heads": draw_minmax,
        "xor-phase": draw_xor_training}


def save_experiment_figure(name: str, summary: dict[str, Any], out_dir: str | Path, stem: str) -> dict[str, Any]:
    """Draw experiment `name`'s figure from its summary into out_dir/stem.{png,svg} (atomic writes)."""
    from headcount.report.render import machine_info, write_atomic

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    saved = save_figure(lambda fig: DRAW[name](fig, summary), out, stem, machine_info(), write_atomic)
    return {**saved, "png": str(out / saved["png"]), "svg": str(out / saved["svg"])}


# Report figures: each draws the series of the learning claim of the same experiment.
for _id, _claim, _name in (("learning_induction_depth", "learning.induction.depth", "induction-depth"),
                           ("learning_khop_heatmap", "learning.khop.depth", "khop"),
                           ("learning_minmax_heads", "learning.minmax.heads", "minmax-heads"),
                           ("learning_xor_phase", "learning.xor.phase", "xor-phase")):
    figure(_id, claim=_claim)(lambda fig, result, _name=_name: DRAW[_name](fig, result.series))
