#!/usr/bin/env python
"""Benchmark of headcount's min/max verifiers and certificate (headcount.minmax).

    python benchmarks/bench_minmax.py [--quick] [--json] [--seeds K] [--blas-threads T]

Figures (benchmarks/README.md, section "bench_minmax.py", explains each):

1. exact verifier vs brute force at small (M, n): seconds of ``verify_exact_one_head`` against
   ``verify_brute`` on the same heads — K seeded ``random_single_head`` models (min and max
   classifiers), K perturbed construction min heads at β and β/2, and the construction's min and max
   heads — with a check that the verdicts (and margins) agree;
2. scaling of ``verify_exact_one_head`` in M at n = 1000 (M = 64 … 1024): seconds and the fitted
   exponent of time vs M (log-log slope), against the O(M³) expectation;
3. ``certify_minmax(M, n, 2)`` wall time at (1024, 1024) (exact-histogram) and (4096, 4096)
   (sufficient-condition), and the acceptance grid: zero errors for M, n up to 4096, each in
   seconds.

The readable table goes to stdout, or to stderr with --json (then stdout holds one JSON object).
Progress lines go to stderr. Default run: ~1 minute on 2 cores; --quick: < 30 s.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from bench_common import (
    best_time,
    figure,
    finish_table,
    log,
    numpy_blas_threads,
    set_numpy_blas_threads,
)
from bench_common import machine_info as common_machine_info
from headcount.minmax.brute import verify_brute
from headcount.minmax.certification import certify_minmax
from headcount.minmax.construction import max_head, min_head, sign_code
from headcount.minmax.exact_verify import verify_exact_one_head
from headcount.minmax.model import Classifier, TokenHead, random_single_head
from headcount.minmax.task import count_multisets


def machine_info(blas_threads: int | None) -> dict[str, Any]:
    """The common machine description plus scipy's and python-flint's versions."""
    import flint
    import scipy

    return common_machine_info(
        blas_threads,
        versions={"scipy": scipy.__version__, "python_flint": getattr(flint, "__version__", "?")},
    )


# ------------------------------------------------------------------------------------------------
# 1. exact verifier vs brute force
# ------------------------------------------------------------------------------------------------


FAMILIES = ("random", "perturbed", "construction")


def perturbed_min_head(
    M: int, n: int, seed: int, beta_scale: float = 1.0, noise: float = 0.1
) -> tuple[TokenHead, Classifier]:
    """The construction's min head with generic weights: scores β_scale·(−β·ω) + 0.01·N(0, 1),
    values code + noise·N(0, 1), θ = those values. At β_scale = 1 it is correct (a generic correct
    head: no ±1 structure, no exact ties); at β_scale = 1/2 it is wrong on most small (M, n)."""
    rng = np.random.default_rng(seed)
    head, _ = min_head(M, n, sign_code(M, seed=seed))
    values = head.values + noise * rng.standard_normal(head.values.shape)
    return TokenHead(beta_scale * head.scores + 0.01 * rng.standard_normal(M), values), Classifier(
        values.copy()
    )


def small_cases(M: int, n: int, seeds: int, d: int) -> list[tuple[str, Any, Any, str]]:
    """(family, head, classifier, task): per seed a random head × (min, max) and the perturbed
    construction at β and β/2 (min); then the construction's min and max heads."""
    cases = []
    for seed in range(seeds):
        m = random_single_head(np.random.default_rng(seed), M, d)
        head = m.layer.heads[0]
        cases.append(("random", head, m.classifier_min, "min"))
        cases.append(("random", head, m.classifier_max, "max"))
        for beta_scale in (1.0, 0.5):
            cases.append(("perturbed", *perturbed_min_head(M, n, seed, beta_scale), "min"))
    code = sign_code(M, seed=0)
    hmin, cmin = min_head(M, n, code)
    hmax, cmax = max_head(M, n, code)
    cases.append(("construction", hmin, cmin, "min"))
    cases.append(("construction", hmax, cmax, "max"))
    return cases


def exact_vs_brute(M: int, n: int, seeds: int, d: int) -> dict[str, Any]:
    """Summed best-of-r seconds of both verifiers over the same cases; verdict and margin
    agreement."""
    inputs = count_multisets(M, n)
    repeats = 3 if inputs <= 20_000 else 1
    cases = small_cases(M, n, seeds, d)
    t_exact = {f: 0.0 for f in FAMILIES}
    t_brute = {f: 0.0 for f in FAMILIES}
    agree, margin_diff, margin_slack = True, 0.0, 0.0
    verdicts = {f: [0, 0] for f in FAMILIES}  # [correct, wrong]
    for family, head, clf, task in cases:
        te, ve = best_time(lambda h=head, c=clf, t=task: verify_exact_one_head(h, c, t, n), repeats)
        tb, vb = best_time(lambda h=head, c=clf, t=task: verify_brute(h, c, t, n), repeats)
        t_exact[family] += te
        t_brute[family] += tb
        same = ve.correct == vb.correct and (vb.errors == 0) == ve.correct
        agree &= same
        verdicts[family][0 if ve.correct else 1] += 1
        # Both margins are the minimum over all inputs of (true logit − best other logit), each
        # within its float tolerance of the exact value (the exact verifier's minimum is attained at
        # a vertex input).
        diff = abs(ve.margin - vb.margin)
        margin_diff = max(margin_diff, diff)
        margin_slack = max(margin_slack, diff - (ve.tolerance + vb.tolerance))
    total_e, total_b = sum(t_exact.values()), sum(t_brute.values())
    return {
        "M": M,
        "n": n,
        "multisets": inputs,
        "cases": len(cases),
        "random_seeds": seeds,
        "random_dim": d,
        "repeats": repeats,
        "exact_seconds": total_e,
        "brute_seconds": total_b,
        "ratio_brute_over_exact": total_b / total_e,
        "exact_seconds_by_family": t_exact,
        "brute_seconds_by_family": t_brute,
        "construction_ratio_brute_over_exact": t_brute["construction"] / t_exact["construction"],
        "verdicts_agree": bool(agree),
        "verdicts_correct_wrong_by_family": verdicts,
        "max_margin_difference": margin_diff,
        "margins_agree_within_tolerance": bool(margin_slack <= 0),
    }


# ------------------------------------------------------------------------------------------------
# 2. scaling of the exact verifier in M
# ------------------------------------------------------------------------------------------------


def slope(xs: list[float], ys: list[float]) -> float:
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


SCALING_FAMILIES = ("construction", "perturbed", "random")


def scaling(Ms: list[int], n: int, d_random: int, repeats: int) -> dict[str, Any]:
    rows = []
    for M in Ms:
        code = sign_code(M, seed=0)
        hmin, cmin = min_head(M, n, code)
        hper, cper = perturbed_min_head(M, n, seed=M)
        rnd = random_single_head(np.random.default_rng(M), M, d_random)
        row: dict[str, Any] = {"M": M}
        for fam, head, clf in (
            ("construction", hmin, cmin),
            ("perturbed", hper, cper),
            ("random", rnd.layer.heads[0], rnd.classifier_min),
        ):
            t, v = best_time(lambda h=head, c=clf: verify_exact_one_head(h, c, "min", n), repeats)
            row.update({f"{fam}_dim": head.dim, f"{fam}_seconds": t, f"{fam}_correct": v.correct})
        rows.append(row)
        log(
            f"exact verifier M={M} n={n}: "
            + ", ".join(
                f"{fam} (d={row[fam + '_dim']}) {row[fam + '_seconds']:.3g} s "
                f"[{row[fam + '_correct']}]"
                for fam in SCALING_FAMILIES
            )
        )
    out: dict[str, Any] = {"n": n, "repeats": repeats, "rows": rows}
    for fam in SCALING_FAMILIES:
        ts = [r[f"{fam}_seconds"] for r in rows]
        out[f"{fam}_exponent_all"] = slope(Ms, ts)
        out[f"{fam}_exponent_last_two"] = slope(Ms[-2:], ts[-2:])
        out[f"{fam}_ns_per_M3_largest"] = 1e9 * ts[-1] / Ms[-1] ** 3
    return out


# ------------------------------------------------------------------------------------------------
# 3. certify_minmax
# ------------------------------------------------------------------------------------------------


def certify_timed(M: int, n: int, method: str | None = None, repeats: int = 1) -> dict[str, Any]:
    t, cert = best_time(lambda: certify_minmax(M, n, 2, method=method), repeats)
    return {
        "M": M,
        "n": n,
        "method": cert.method,
        "seconds": t,
        "errors_min": cert.errors_min,
        "errors_max": cert.errors_max,
        "margin_min": cert.margin_min,
        "margin_max": cert.margin_max,
        "dim": cert.dim,
        "inputs_covered_digits": len(str(cert.inputs_covered)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smaller run (< 30 s): fewer heads, M up to 512, small grid",
    )
    ap.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout (the table goes to stderr)",
    )
    ap.add_argument(
        "--seeds",
        type=int,
        default=None,
        help="random heads per (M, n) in part 1 (default 10, quick 3)",
    )
    ap.add_argument(
        "--blas-threads",
        type=int,
        default=None,
        help="set numpy's OpenBLAS thread count first (default: leave it; 1 is steadier on a "
        "loaded machine)",
    )
    args = ap.parse_args(argv)
    quick = args.quick
    if args.blas_threads is not None and not set_numpy_blas_threads(args.blas_threads):
        log("--blas-threads: numpy's OpenBLAS not found; thread count left as is")
    seeds = args.seeds if args.seeds is not None else (3 if quick else 10)

    blas_threads = numpy_blas_threads()
    machine = machine_info(blas_threads)
    log(
        f"machine: {machine['cpu']}, {machine['cpus_usable']} cpus, numpy {machine['numpy']} "
        f"({machine.get('numpy_blas', '?')}, {blas_threads} BLAS threads)"
    )
    results: dict[str, Any] = {"machine": machine, "mode": "quick" if quick else "default"}
    figures: list[dict[str, Any]] = []

    # --- 1. exact vs brute
    # ----------------------------------------------------------------------------
    grid = [(M, n) for M in (4, 6, 8) for n in (4, 6, 8)]
    if not quick:
        grid += [(12, 8), (10, 10), (20, 6)]  # 75 582, 92 378, 177 100 multisets
    rows = []
    for M, n in grid:
        r = exact_vs_brute(M, n, seeds, d=4)
        rows.append(r)
        log(
            f"exact vs brute M={M} n={n} ({r['multisets']} multisets, {r['cases']} heads): "
            f"exact {r['exact_seconds']:.3g} s, "
            f"brute {r['brute_seconds']:.3g} s, agree {r['verdicts_agree']}"
        )
    results["exact_vs_brute"] = rows
    for r in rows:
        tag = f"M={r['M']} n={r['n']} ({r['multisets']} multisets, {r['cases']} heads)"
        figures.append(
            figure(
                f"brute-force verifier seconds {tag}",
                r["brute_seconds"],
                "s",
                "exact verifier",
                r["exact_seconds"],
            )
        )
        figures.append(
            figure(
                "  of which the construction's min + max heads",
                r["brute_seconds_by_family"]["construction"],
                "s",
                "exact verifier",
                r["exact_seconds_by_family"]["construction"],
            )
        )
    all_agree = all(r["verdicts_agree"] for r in rows)
    margins_agree = all(r["margins_agree_within_tolerance"] for r in rows)
    n_cases = sum(r["cases"] for r in rows)
    correct = sum(r["verdicts_correct_wrong_by_family"][f][0] for r in rows for f in FAMILIES)
    ratios = [r["ratio_brute_over_exact"] for r in rows]
    figures.append(
        figure(
            f"check: exact and brute-force verdicts agree on all {n_cases} (head, task) cases "
            f"({correct} correct, {n_cases - correct} wrong)",
            all_agree,
        )
    )
    figures.append(
        figure("check: margins agree within the verifiers' float tolerances", margins_agree)
    )
    figures.append(
        figure(
            "brute/exact time ratio, smallest … largest (M, n)",
            f"{ratios[0]:.3g} … {ratios[-1]:.3g} (min {min(ratios):.3g}, max {max(ratios):.3g})",
        )
    )

    # --- 2. scaling
    # ----------------------------------------------------------------------------------
    Ms = [64, 128, 256, 512] if quick else [64, 128, 256, 512, 1024]
    sc = scaling(Ms, 1000, d_random=16, repeats=1 if quick else 3)
    results["exact_scaling"] = sc
    for row in sc["rows"]:
        for fam in SCALING_FAMILIES:
            verdict = "correct" if row[f"{fam}_correct"] else "wrong"
            figures.append(
                figure(
                    f"exact verifier seconds M={row['M']} n=1000, {fam} head "
                    f"(d={row[fam + '_dim']}, {verdict})",
                    row[f"{fam}_seconds"],
                    "s",
                )
            )
    for fam in SCALING_FAMILIES:
        figures.append(
            figure(
                f"exact verifier exponent of time vs M ({fam}, log-log fit M={Ms[0]}..{Ms[-1]})",
                sc[f"{fam}_exponent_all"],
                "",
                "O(M^3) expectation",
                3,
            )
        )
        figures.append(
            figure(
                f"exact verifier exponent of time vs M ({fam}, M={Ms[-2]}..{Ms[-1]} only)",
                sc[f"{fam}_exponent_last_two"],
                "",
                "O(M^3) expectation",
                3,
            )
        )

    # --- 3. certify_minmax
    # -----------------------------------------------------------------------------
    log("certify_minmax(1024, 1024, 2) exact-histogram")
    c_exact = certify_timed(1024, 1024, repeats=1 if quick else 2)
    log("certify_minmax(1024, 1024, 2) forced sufficient-condition")
    c_suff_small = certify_timed(
        1024, 1024, method="sufficient-condition", repeats=1 if quick else 2
    )
    log("certify_minmax(4096, 4096, 2) sufficient-condition")
    c_suff = certify_timed(4096, 4096, repeats=1 if quick else 2)
    results["certify"] = {
        "1024x1024_exact": c_exact,
        "1024x1024_sufficient": c_suff_small,
        "4096x4096_sufficient": c_suff,
    }
    for c in (c_exact, c_suff):
        figures.append(
            figure(
                f"certify_minmax(M={c['M']}, n={c['n']}, heads=2) {c['method']} seconds "
                f"(errors {c['errors_min']}/{c['errors_max']}, "
                f"margins {c['margin_min']:.4g}/{c['margin_max']:.4g})",
                c["seconds"],
                "s",
            )
        )
    figures.append(
        figure(
            "certify_minmax(1024, 1024, 2) exact-histogram seconds",
            c_exact["seconds"],
            "s",
            "sufficient-condition",
            c_suff_small["seconds"],
        )
    )

    values = (2, 256, 4096) if quick else (2, 16, 256, 1024, 4096)
    acc = []
    for M in values:
        for n in values:
            if (M, n) in ((1024, 1024), (4096, 4096)):
                c = c_exact if M == 1024 else c_suff
            else:
                c = certify_timed(M, n)
            acc.append(c)
            log(
                f"certify M={M} n={n}: {c['method']} errors {c['errors_min']}/{c['errors_max']} "
                f"{c['seconds']:.3g} s"
            )
    results["acceptance_grid"] = acc
    zero = all(c["errors_min"] == 0 and c["errors_max"] == 0 for c in acc)
    slowest = max(acc, key=lambda c: c["seconds"])
    figures.append(
        figure(
            f"acceptance: certify --heads 2 zero errors for all M, n in {list(values)} "
            f"({len(acc)} certificates)",
            zero,
        )
    )
    figures.append(
        figure(
            f"acceptance: slowest certificate (M={slowest['M']}, n={slowest['n']}, "
            f"{slowest['method']})",
            slowest["seconds"],
            "s",
        )
    )

    table = finish_table(
        results,
        figures,
        f"headcount minmax benchmark ({results['mode']}), {machine['cpu']}, "
        f"{machine['cpus_usable']} cpus, "
        f"numpy {machine['numpy']} / {machine.get('numpy_blas', '?')} "
        f"({blas_threads} BLAS threads; ufuncs 1 thread), "
        f"scipy {machine['scipy']}, python-flint {machine['python_flint']}",
        args.json,
    )
    print(f"  total time: {results['seconds_total']} s", file=table)
    if args.json:
        print(json.dumps(results, default=float))
    ok = all_agree and zero
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
