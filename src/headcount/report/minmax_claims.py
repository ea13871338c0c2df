"""Claims of seed 004 §3.1 (min and max with attention heads), each recomputed. First increment: the
two-head construction (Appendix A) certified on all inputs; the one-head lower-bound claims come with
the lower-bound tools."""

from __future__ import annotations

from headcount.minmax.certify import certify_minmax
from headcount.report.claims import SEED004, ClaimResult, Context, claim, status


@claim("minmax.two_heads.certified", paper=SEED004, source="§3.1, Appendix A (upper bound)",
       statement="One layer with two heads (value dimension 2·⌈8 ln M⌉ with sign codes, or 2·⌈log₂ M⌉ with compact "
                 "codes, integer values) supports both min and max: both linear classifiers are right on every "
                 "one of the C(n+M−1, n) inputs.",
       quick={"cases": [(64, 16, "sign"), (1024, 64, "compact"), (4096, 4096, "sign")]},
       full={"cases": [(m, n, code) for m in (16, 64, 256, 1024, 4096) for n in (2, 16, 256, 4096)
                       for code in ("sign", "compact")]})
def two_heads_certified(ctx: Context, cases: list[tuple[int, int, str]]) -> ClaimResult:
    rows = []
    for M, n, code in cases:
        r = ctx.cached(("minmax", M, n, 2, code), lambda M=M, n=n, code=code: certify_minmax(M, n, 2, code=code),
                       f"certify minmax M={M} n={n} heads=2 code={code}")
        rows.append({key: r[key] for key in ("M", "n", "code", "dim", "method", "errors_min", "errors_max",
                                             "margin_min", "margin_max")} | {"inputs_covered_digits": len(str(r["inputs_covered"]))})
    bad = [r for r in rows if r["errors_min"] != 0 or r["errors_max"] != 0]
    detail = ("; ".join(f"M={r['M']} n={r['n']} {r['code']}: errors {r['errors_min']}/{r['errors_max']}" for r in bad)
              or "zero errors for min and max on every input: " + ", ".join(
                  f"M={r['M']} n={r['n']} ({r['code']}, d={r['dim']}, {r['method']}, margin {r['margin_min']:.2f})" for r in rows))
    return ClaimResult({"points": rows}, status(not bad), detail)
