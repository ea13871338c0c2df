#!/usr/bin/env python
"""Certified key pruning against the blocked passes without it (issue 34).

    python benchmarks/bench_certify.py --pruning [--quick] [--json] [--e2e]
    (or python benchmarks/bench_pruning.py with the same options)

Figures (benchmarks/README.md, "Key pruning"), all on two_layer_induction(n, S) with S = 256, the
full-scale certificate's alphabet, pruning on against off (core.attention.settings.use_pruning) in
one process, the runs interleaved:

1. rigorous-pass and float64-pass positions/s at n = 4096, 16384, 65536 (`--quick`: 4096) on two
   random sequences and the all-zeros one (every key alike), with the share of visible (query, key)
   pairs scored and whether both give the same outputs (and the same proven positions);
2. the scaling of the pruned passes' time in n: one random sequence at n = 2^12 … 2^18 (`--quick`:
   2^12 … 2^14), certified_predict at fixed:(log₂ n + 1) and the float64 pass, the exponent a
   least-squares fit of log time on log n;
3. with `--e2e`: the full-scale certificate, certify_induction(two_layer_induction(65536, 256),
   samples=2) — 12 inputs — with and without pruning: wall time, CPU time, and whether the two
   certificates' JSON (without "seconds") is identical (`--quick --e2e`: n = 4096, S = 64).

Progress goes to stderr; with --json stdout holds one JSON object. Exit 1 when pruning changes an
output or a certificate.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np

from bench_common import figure, finish_table, load_average, log, machine_info, numpy_blas_threads
from headcount.core.attention import (
    attention_work,
    float_work,
    reset_attention_work,
    reset_float_work,
)
from headcount.core.attention.settings import use_pruning
from headcount.core.certify.evaluate import certified_predict, emulate
from headcount.core.numbers.precision import FLOAT64, fixed
from headcount.induction.certification import certify_induction
from headcount.induction.construction import two_layer_induction

S = 256


def _timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def passes(n: int) -> dict[str, Any]:
    """Figure 1 at length n."""
    model = two_layer_induction(n, S)
    rng = np.random.default_rng(n)
    tokens = np.concatenate([rng.integers(0, S, size=(2, n)), np.zeros((1, n), np.int64)])
    bits = int(np.log2(n)) + 1
    row: dict[str, Any] = {"n": n, "sequences": len(tokens), "bits": bits}
    outs = {}
    for on in (True, False):
        reset_attention_work()
        reset_float_work()
        with use_pruning(on), np.errstate(all="ignore"):
            rigorous, _, proof = _timed(lambda: certified_predict(model, tokens, fixed(bits)))
            floats, _, out = _timed(lambda: emulate(model, tokens, FLOAT64))
        work = attention_work()
        tag = "pruned" if on else "full"
        row[tag] = {
            "rigorous_seconds": rigorous,
            "float64_seconds": floats,
            "rigorous_positions_per_s": tokens.size / rigorous,
            "float64_positions_per_s": tokens.size / floats,
            "scored_share": work["computed"] / max(1, work["score_entries"]),
            "proven_share": float(proof[1].mean()),
            "attention_work": work,
            "float_work": float_work(),
        }
        outs[on] = (proof, out)
    (p1, f1), (p0, f0) = outs[True], outs[False]
    row["identical"] = bool(
        np.array_equal(p1[0], p0[0]) and np.array_equal(p1[1], p0[1]) and np.array_equal(f1, f0)
    )
    return row


def scaling(exponents: list[int]) -> dict[str, Any]:
    """Figure 2: the pruned passes' seconds per n and the fitted exponents."""
    rows = []
    for e in exponents:
        n = 2**e
        model = two_layer_induction(n, S)
        tokens = np.random.default_rng(e).integers(0, S, size=(1, n))
        with np.errstate(all="ignore"):
            rigorous, _, proof = _timed(
                lambda m=model, t=tokens, p=e + 1: certified_predict(m, t, fixed(p))
            )
            floats, _, _ = _timed(lambda m=model, t=tokens: emulate(m, t, FLOAT64))
        rows.append({"n": n, "rigorous_seconds": rigorous, "float64_seconds": floats})
        rows[-1]["proven_share"] = float(proof[1].mean())
        log(f"scaling n={n}: rigorous {rigorous:.2f} s, float64 {floats:.2f} s")
    logn = np.log([r["n"] for r in rows])

    def slope(key: str) -> float:
        return float(np.polyfit(logn, np.log([r[key] for r in rows]), 1)[0])

    both = [r["rigorous_seconds"] + r["float64_seconds"] for r in rows]
    return {
        "points": rows,
        "exponent_rigorous": slope("rigorous_seconds"),
        "exponent_float64": slope("float64_seconds"),
        "exponent_both": float(np.polyfit(logn, np.log(both), 1)[0]),
    }


def end_to_end(n: int, alphabet: int, samples: int) -> dict[str, Any]:
    """Figure 3: one certificate with and without pruning."""
    model = two_layer_induction(n, alphabet)
    runs, certs = {}, {}
    for on in (True, False):
        log(f"end to end n={n} S={alphabet} samples={samples} pruning={'on' if on else 'off'}")
        with use_pruning(on):
            wall, cpu, cert = _timed(lambda: certify_induction(model, n, alphabet, samples=samples))
        runs["pruned" if on else "full"] = {"wall_seconds": wall, "cpu_seconds": cpu}
        certs[on] = _without_seconds(cert.to_json())
    return {
        "n": n,
        "S": alphabet,
        "samples": samples,
        "inputs": cert.certificate.inputs_checked,
        **runs,
        "identical": certs[True] == certs[False],
    }


def _without_seconds(value):
    if isinstance(value, dict):
        return {k: _without_seconds(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [_without_seconds(v) for v in value]
    return value


def _pass_figures(r: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for kind in ("rigorous", "float64"):
        key = f"{kind}_positions_per_s"
        name = (
            f"{kind} pass positions/s n={r['n']} S={S} ({r['sequences']} seq), pruned (scored "
            f"{r['pruned']['scored_share']:.3g} of visible pairs; identical {r['identical']})"
        )
        out.append(figure(name, r["pruned"][key], "pos/s", "without pruning", r["full"][key]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller run (about a minute)")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ap.add_argument("--e2e", action="store_true", help="also the end-to-end certificate")
    args = ap.parse_args(argv)
    machine = machine_info(numpy_blas_threads())
    log(f"machine: {machine['cpu']}, {machine['cpus_usable']} cpus, load {load_average()}")
    results: dict[str, Any] = {"machine": machine, "mode": "quick" if args.quick else "default"}
    results["alphabet"] = S
    figures: list[dict[str, Any]] = []
    results["passes"] = [passes(n) for n in ([4096] if args.quick else [4096, 16384, 65536])]
    for r in results["passes"]:
        figures += _pass_figures(r)
    results["scaling"] = s = scaling([12, 13, 14] if args.quick else list(range(12, 19)))
    name = (
        f"time exponent in n with pruning, rigorous + float64 pass, one sequence, n = "
        f"{s['points'][0]['n']}..{s['points'][-1]['n']} (rigorous {s['exponent_rigorous']:.3g}, "
        f"float64 {s['exponent_float64']:.3g})"
    )
    figures.append(figure(name, s["exponent_both"]))
    identical = all(r["identical"] for r in results["passes"])
    if args.e2e:
        e2e = results["end_to_end"] = end_to_end(*((4096, 64, 2) if args.quick else (65536, S, 2)))
        identical &= e2e["identical"]
        name = (
            f"end-to-end certify_induction n={e2e['n']} S={e2e['S']} ({e2e['inputs']} inputs) wall "
            f"time with pruning (CPU {e2e['pruned']['cpu_seconds']:.0f} s against "
            f"{e2e['full']['cpu_seconds']:.0f} s; identical certificates {e2e['identical']})"
        )
        figures.append(
            figure(name, e2e["pruned"]["wall_seconds"], "s", "without", e2e["full"]["wall_seconds"])
        )
    results["identical"] = identical
    table = finish_table(results, figures, "headcount key-pruning benchmark", args.json)
    print(f"  total {results['seconds_total']} s", file=table)
    if args.json:
        print(json.dumps(results, default=float))
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
