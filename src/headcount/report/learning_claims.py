"""Headline figures of the learning experiments (spec/learning.md), as claims.

Each claim runs (or resumes) its experiment's sweep into the report's results database (Context.results_db),
summarizes it from the database and checks what the theory says training can and cannot do. What the
theorems forbid is asserted (no XOR cell below D·H = n may be solved); what they allow is reported with
the measured rates, and asserted only where the expectation is robust (two layers reach ≥ 99% at n ≤ 32).
"""

from __future__ import annotations

import os

from headcount.learn.experiments import ensure_experiment
from headcount.report import learning_figures  # noqa: F401 — registers the learning figures
from headcount.report.claims import SEED000, SEED004, ClaimResult, Context, claim, status

SHT2024 = "Sanford–Hsu–Telgarsky 2024 (k-hop)"


def _summary(ctx: Context, name: str) -> dict:
    db = ctx.results_db or "headcount-results.sqlite"
    return ctx.cached(("experiment", name, ctx.scale, db),
                      lambda: ensure_experiment(name, ctx.scale, db, workers=os.cpu_count()), label=f"{name} sweep")


@claim("learning.induction.depth", paper=SEED000, source="§1, experiments",
       statement="Trained two-layer attention models solve induction heads (the best two-layer model of the sweep is "
                 "≥ 99% right on non-⊥ positions at every n); one-layer models of the same width, heads and alphabet "
                 "stay below their two-layer counterparts everywhere.")
def induction_depth(ctx: Context) -> ClaimResult:
    s = _summary(ctx, "induction-depth")
    ok = s["two_layer_best_min_accuracy"] >= 0.99 and s["one_below_two_everywhere"]
    detail = (f"best two-layer model ≥ {100 * s['two_layer_best_min_accuracy']:.2f}% at every n ("
              + ", ".join(f"n={n}: {100 * a:.2f}%" for n, a in s["two_layer_best_by_n"].items())
              + f"; weakest two-layer configuration {100 * s['two_layer_weakest_cell_accuracy']:.1f}%); one layer at most "
              f"{100 * s['one_layer_best_accuracy']:.1f}%, below its two-layer counterpart in every configuration; "
              "INDEX-family query accuracy of the best two-layer model (reported, not asserted): "
              + ", ".join(f"n={n}: {100 * a:.0f}%" for n, a in s["two_layer_index_accuracy_by_n"].items()))
    return ClaimResult(s, status(ok), detail, s)


@claim("learning.khop.depth", paper=SHT2024, source="k-hop induction heads, depth vs k",
       statement="k-hop induction heads needs depth growing with k: at fixed training, error grows with the hop count, "
                 "and the deepest model does better than the shallowest at the largest k.")
def khop_depth(ctx: Context) -> ClaimResult:
    s = _summary(ctx, "khop")
    err = s["error"]
    ok = (err[-1][0] <= 0.05 and err[-1][-1] <= err[0][-1])
    detail = (f"error (%) by L × k={s['hops']}: " + "; ".join(
        f"L={L}: " + " ".join(f"{100 * e:.1f}" for e in row) for L, row in zip(s["layers"], err)))
    return ClaimResult(s, status(ok), detail, s)


@claim("learning.minmax.heads", paper=SEED004, source="§3.1, Theorem 1 and Appendix A",
       statement="Two trained heads solve min and max together on every input; each trained single head is run "
                 "through the exact one-head verifier, whose verdict agrees with exhaustive evaluation.")
def minmax_heads(ctx: Context) -> ClaimResult:
    s = _summary(ctx, "minmax-heads")
    ok = s["two_heads_solved"] > 0 and s["verifier_agrees_with_exhaustive"]
    single = sum(c["seeds"] for c in s["cells"] if c["heads"] == 1)
    detail = (f"two heads solved both tasks exactly in {s['two_heads_solved']} runs; single heads: the exact verifier "
              f"found a counterexample for {s['single_heads_with_counterexample']} of {single} trained heads "
              f"(verdicts agree with exhaustive evaluation on all {s['single_heads_checked']})")
    return ClaimResult(s, status(ok), detail, s)


@claim("learning.xor.phase", paper=SEED004, source="Theorems 2 and 3",
       statement="Trained n-bit XOR models never succeed below D·H = n (impossible by Theorem 2); above it the "
                 "Theorem-3 construction is certified in every cell, and the table shows where training gets there.")
def xor_phase(ctx: Context) -> ClaimResult:
    s = _summary(ctx, "xor-phase")
    ok = s["below_solved"] == 0 and s["above_constructions_certified"] == s["above_cells"]
    detail = (f"n = {s['n']}: {s['below_solved']} of {s['below_cells']} cells below D·H = n solved (must be 0); "
              f"training solved {s['above_solved']} of {s['above_cells']} cells above, constructions certified in "
              f"{s['above_constructions_certified']}")
    return ClaimResult(s, status(ok), detail, s)
