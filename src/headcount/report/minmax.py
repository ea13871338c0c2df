"""Claims of seed 004 §3.1 (min and max with attention heads), each recomputed. First increment: the
two-head construction (Appendix A) certified on all inputs; the one-head lower-bound claims come with
the lower-bound tools."""

from __future__ import annotations

import math

from headcount.minmax.certify import certify_minmax
from headcount.report.claims import SEED004, ClaimResult, Context, claim, status


def stated_dim(M: int, code: str) -> int:
    """The claim's value dimension: 2·⌈8 ln M⌉ with sign codes, 2·⌈log₂ M⌉ with compact codes (at least 1 per head)."""
    return 2 * max(1, math.ceil(8 * math.log(M)) if code == "sign" else math.ceil(math.log2(M)))


def _two_heads_problems(r: dict) -> list[str]:
    """What in one certificate row contradicts the claim: errors, another dimension, fewer inputs covered."""
    case, out = f"M={r['M']} n={r['n']} {r['code']}", []
    if r["errors_min"] != 0 or r["errors_max"] != 0:  # None: not certified
        out.append(f"{case}: errors {r['errors_min']}/{r['errors_max']}")
    if r["dim"] != stated_dim(r["M"], r["code"]):
        out.append(f"{case}: value dimension {r['dim']}, not {stated_dim(r['M'], r['code'])}")
    if r["inputs_covered"] != math.comb(r["n"] + r["M"] - 1, r["n"]):
        out.append(f"{case}: the certificate's input count is not C(n+M−1, n)")
    return out


@claim(
    "minmax.two_heads.certified",
    paper=SEED004,
    source="§3.1, Appendix A (upper bound)",
    statement="One layer with two heads (value dimension 2·⌈8 ln M⌉ with sign codes, or 2·⌈log₂ M⌉ with compact "
    "codes, integer values) supports both min and max: both linear classifiers are right on every "
    "one of the C(n+M−1, n) inputs.",
    quick={"cases": [(64, 16, "sign"), (1024, 64, "compact"), (4096, 4096, "sign")]},
    full={
        "cases": [
            (m, n, code)
            for m in (16, 64, 256, 1024, 4096)
            for n in (2, 16, 256, 4096)
            for code in ("sign", "compact")
        ]
    },
)
def two_heads_certified(ctx: Context, cases: list[tuple[int, int, str]]) -> ClaimResult:
    rows, problems = [], []
    for M, n, code in cases:
        r = ctx.cached(
            ("minmax", M, n, 2, code),
            lambda M=M, n=n, code=code: certify_minmax(M, n, 2, code=code),
            f"certify minmax M={M} n={n} heads=2 code={code}",
        )
        rows.append(
            {
                key: r[key]
                for key in (
                    "M",
                    "n",
                    "code",
                    "dim",
                    "method",
                    "errors_min",
                    "errors_max",
                    "margin_min",
                    "margin_max",
                )
            }
            | {"inputs_covered_digits": len(str(r["inputs_covered"]))}
        )
        problems += _two_heads_problems(r)
    detail = "; ".join(problems) or "zero errors for min and max on every input: " + ", ".join(
        f"M={r['M']} n={r['n']} ({r['code']}, d={r['dim']}, {r['method']}, margin {r['margin_min']:.2f})"
        for r in rows
    )
    return ClaimResult({"points": rows}, status(not problems), detail)


@claim(
    "minmax.one_head.obstructed",
    paper=SEED004,
    source="§3.1 Theorem 1 (one head cannot do both)",
    statement="A single head cannot support both min and max with small resources: the construction's min head "
    "(α decreasing, so its monotone run obstructs max) gets max wrong on a confirmed input, and a "
    "search over single heads with d ≤ 4 at (M, n) = (64, 16) ends every restart with a confirmed "
    "counterexample, while two heads with d = ⌈log₂ 64⌉ each certify.",
    quick={"M": 64, "n": 16, "d_max": 4, "restarts": 1, "steps": 30},
    full={"M": 64, "n": 16, "d_max": 4, "restarts": 3, "steps": 200},
)
def one_head_obstructed(ctx: Context, M: int, n: int, d_max: int, restarts: int, steps: int) -> ClaimResult:
    from headcount.minmax.construction import compact_code, min_head
    from headcount.minmax.lower_bound import (
        longest_monotone_run,
        one_head_counterexamples,
        smallest_dimension,
    )
    from headcount.minmax.model import MinMaxModel, TokenLayer

    problems = []
    head, clf = min_head(M, n, compact_code(M))
    report = one_head_counterexamples(MinMaxModel(TokenLayer((head,)), clf, clf, {"n": n}), n)
    run = longest_monotone_run(head).report()
    if (
        report["min"]["correct"] is not True
        or report["max"]["correct"] is not False
        or not report["max"]["confirmed"]
    ):
        problems.append("the min head alone should do min and fail max on a confirmed input")
    if run["obstructs"] != "max":
        problems.append(f"the min head's longest monotone run obstructs {run['obstructs']}, not max")
    search = smallest_dimension(M, n, d_max, restarts=restarts, steps=steps, seed=0)
    if search.get("smallest_d") is not None:
        problems.append(f"the search found a single head doing both at d = {search['smallest_d']}")
    if sorted(search["results"]) != list(range(1, d_max + 1)):
        problems.append(f"the search covered d = {sorted(search['results'])}, not 1..{d_max}")
    if not all(s["all_failed_confirmed"] for s in search["results"].values()):
        problems.append("a failed restart lacks a confirmed counterexample")
    two = ctx.cached(
        ("minmax", M, n, 2, "compact"),
        lambda: certify_minmax(M, n, 2, code="compact"),
        f"certify minmax M={M} n={n} heads=2 code=compact",
    )
    if two["errors_min"] != 0 or two["errors_max"] != 0:
        problems.append("two compact heads do not certify")
    if two["dim"] != stated_dim(M, "compact"):
        problems.append(f"two compact heads have value dimension {two['dim']}, not 2·⌈log₂ {M}⌉")
    measured = {
        "min_head_max_counterexample": report["max"].get("worst_input"),
        "monotone_run": run["length"],
        "obstructs": run["obstructs"],
        "search": {d: s["best_margins"] for d, s in search["results"].items()},
        "two_heads_dim": two["dim"],
        "two_heads_margins": [two["margin_min"], two["margin_max"]],
    }
    detail = "; ".join(problems) or (
        f"min head: max wrong on {report['max'].get('worst_input')} (confirmed; run of length {run['length']} obstructs "
        f"{run['obstructs']}); single-head search d = 1..{d_max}: no success, every restart confirmed wrong "
        f"(a search, not a proof); two heads, d = {two['dim']}: certified, margins {two['margin_min']:.2f}/{two['margin_max']:.2f}"
    )
    return ClaimResult(measured, status(not problems), detail)
