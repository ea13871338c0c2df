#!/usr/bin/env python
"""Benchmark of headcount's Theorem-3 constructions and exact certificates (headcount.boolean).

    python benchmarks/bench_boolean.py [--quick] [--json]

Figures (benchmarks/README.md, section "bench_boolean.py", explains each):

1. ``construct_and_certify("xor", n, D, H)`` wall time for n = 256 at every D·H = 256 with D, H ∈
   {2, 4, …, 128}, and n = 1024 at D = H = 32 — construction + exact evaluation of the model at all
   n + 1 weights (which covers all 2^n inputs) — with the route, d, dim_bound and errors of each;
2. exact evaluation methods on the same model (xor, n = 256, D = H = 16), in one process: the
   default (integer polynomials composed once in python-flint) against flint rationals evaluated
   point by point (``method="direct"``) and a plain Python ``fractions.Fraction`` loop — the
   straightforward way, the baseline the ratios are against;
3. the LP threshold degree with its exact dual certificate (xor, mod:3 and majority at n = 8, 10):
   seconds, and that both bounds are certified.

The readable table goes to stdout, or to stderr with --json (then stdout holds one JSON object).
Progress lines go to stderr. Default run: ~1 minute on 2 cores; --quick: ~20 s.
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from typing import Any

from bench_common import best_time, figure, finish_table, log
from bench_common import machine_info as common_machine_info
from headcount.boolean.certification import construct_and_certify
from headcount.boolean.construction import construct
from headcount.boolean.model import BooleanLayer, Readout, model_values_exact
from headcount.boolean.task import parse_function
from headcount.boolean.threshold import symmetric_truth_table, threshold_degree_lp


def machine_info() -> dict[str, Any]:
    import flint
    import scipy

    return common_machine_info(
        None,
        versions={"scipy": scipy.__version__, "python_flint": getattr(flint, "__version__", "?")},
    )


def construction_row(n: int, D: int, H: int, repeats: int) -> dict[str, Any]:
    seconds, result = best_time(lambda: construct_and_certify("xor", n, D, H), repeats)
    r = result.to_json()
    return {
        "n": n,
        "degree": D,
        "heads": H,
        "seconds": seconds,
        **{
            k: r[k]
            for k in (
                "route",
                "dim",
                "dim_bound",
                "certified",
                "errors",
                "weights_checked",
                "float64_errors",
                "min_abs_margin",
            )
        },
    }


def fraction_values(layer: BooleanLayer, readout: Readout, n: int) -> list[Fraction]:
    """g(layer output) at t = 0..n with Python Fractions, term by term: the straightforward
    baseline."""
    heads = [
        (
            Fraction(int(h.w0.p), int(h.w0.q)),
            Fraction(int(h.w1.p), int(h.w1.q)),
            [Fraction(int(x.p), int(x.q)) for x in h.v0],
            [Fraction(int(x.p), int(x.q)) for x in h.v1],
        )
        for h in layer.heads
    ]
    terms = [(K, Fraction(int(c.p), int(c.q))) for K, c in readout.terms.items()]
    out = []
    for t in range(n + 1):
        z = [Fraction(0)] * layer.dim
        for w0, w1, v0, v1 in heads:
            a, b = (n - t) * w0, t * w1
            z = [zi + (a * x0 + b * x1) / (a + b) for zi, x0, x1 in zip(z, v0, v1)]
        total = Fraction(0)
        for K, c in terms:
            term = c
            for zi, k in zip(z, K):
                term *= zi**k
            total += term
        out.append(total)
    return out


def evaluation_methods(n: int, D: int, H: int, repeats: int) -> dict[str, Any]:
    built = construct(parse_function("xor", n), n, D, H)
    layer, readout = built.layer, built.readout
    t_int, v_int = best_time(lambda: model_values_exact(layer, readout, n), repeats)
    t_dir, v_dir = best_time(lambda: model_values_exact(layer, readout, n, method="direct"), 1)
    t_frac, v_frac = best_time(lambda: fraction_values(layer, readout, n), 1)
    agree = v_int == v_dir and all(Fraction(int(a.p), int(a.q)) == b for a, b in zip(v_int, v_frac))
    return {
        "n": n,
        "degree": D,
        "heads": H,
        "route": built.route,
        "dim": built.dim,
        "terms": len(readout.terms),
        "integer_seconds": t_int,
        "direct_seconds": t_dir,
        "fraction_seconds": t_frac,
        "values_agree": bool(agree),
    }


def lp_rows(ns: list[int]) -> list[dict[str, Any]]:
    rows = []
    for n in ns:
        for name in ("xor", "mod:3", "majority"):
            F = parse_function(name, n)
            seconds, r = best_time(
                lambda F=F, n=n: threshold_degree_lp(symmetric_truth_table(F, n), n), 1
            )
            changes = sum(F[t] != F[t + 1] for t in range(n))
            rows.append(
                {
                    "n": n,
                    "function": name,
                    "seconds": seconds,
                    "threshold_degree": r.threshold_degree,
                    "sign_changes": int(changes),
                    "lower_bound_certified": r.lower_bound_certified,
                    "dual_support": len(r.dual or {}),
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and smaller LPs (~20 s)")
    ap.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    args = ap.parse_args(argv)
    quick = args.quick
    repeats = 1 if quick else 3
    results: dict[str, Any] = {"mode": "quick" if quick else "default", "machine": machine_info()}
    figures: list[dict[str, Any]] = []

    # --- 1. constructions
    # --------------------------------------------------------------------------
    grid = [(256, D, 256 // D) for D in (2, 4, 8, 16, 32, 64, 128)] + [(1024, 32, 32)]
    rows = []
    for n, D, H in grid:
        log(f"construct_and_certify xor n={n} D={D} H={H}")
        rows.append(construction_row(n, D, H, 1 if n == 1024 and quick else repeats))
    results["constructions"] = rows
    for r in rows:
        figures.append(
            figure(
                f"xor n={r['n']} D={r['degree']} H={r['heads']}: construct + certify "
                f"({r['route']}, "
                f"d={r['dim']} ≤ {r['dim_bound']}, errors {r['errors']}/{r['weights_checked']}, "
                f"float64 errors {r['float64_errors']})",
                r["seconds"],
                "s",
            )
        )
    figures.append(
        figure(
            "check: every construction certified with zero errors and d ≤ dim_bound",
            all(r["certified"] and r["errors"] == 0 and r["dim"] <= r["dim_bound"] for r in rows),
        )
    )

    # --- 2. exact evaluation methods
    # -------------------------------------------------------------------
    log(
        "exact evaluation: composed integer polynomial vs flint rationals vs Python Fractions "
        "(n=256, D=H=16)"
    )
    ev = evaluation_methods(256, 16, 16, repeats)
    results["evaluation"] = ev
    figures.append(
        figure(
            f"exact evaluation at all t, xor n=256 D=H=16 ({ev['terms']} readout terms): default "
            "(composed)",
            ev["integer_seconds"],
            "s",
            "Python Fraction loop",
            ev["fraction_seconds"],
        )
    )
    figures.append(
        figure(
            "  flint rationals point by point (method='direct')",
            ev["direct_seconds"],
            "s",
            "Python Fraction loop",
            ev["fraction_seconds"],
        )
    )
    figures.append(
        figure("check: the three evaluations give identical rationals", ev["values_agree"])
    )

    # --- 3. LP threshold degree with dual certificates
    # ------------------------------------------------
    ns = [8] if quick else [8, 10]
    log(f"LP threshold degree with exact dual certificates, n = {ns}")
    lp = lp_rows(ns)
    results["lp"] = lp
    for r in lp:
        figures.append(
            figure(
                f"LP threshold degree {r['function']} n={r['n']}: T={r['threshold_degree']} "
                f"(sign changes {r['sign_changes']}), dual support {r['dual_support']} inputs",
                r["seconds"],
                "s",
            )
        )
    figures.append(
        figure(
            "check: LP = sign changes, lower bound certified exactly, every case",
            all(
                r["threshold_degree"] == r["sign_changes"] and r["lower_bound_certified"]
                for r in lp
            ),
        )
    )

    machine = results["machine"]
    finish_table(
        results,
        figures,
        f"headcount boolean benchmark ({results['mode']}), {machine['cpu']}, "
        f"{machine['cpus_usable']} cpus, python-flint {machine['python_flint']}",
        args.json,
    )
    if args.json:
        print(json.dumps(results, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
