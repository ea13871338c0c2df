#!/usr/bin/env python
"""Certify-at-scale benchmark: the blocked evaluation algorithm against the reference (issue 18).

    python benchmarks/bench_certify.py [--quick] [--json] [--max-gb G]
    python benchmarks/bench_certify.py --pruning [--quick] [--json] [--e2e]   (bench_pruning.py)
    python benchmarks/bench_certify.py --ray [--quick] [--json] [--workers W] [--no-kill]
                                                                           (bench_spread.py)

Figures (benchmarks/README.md explains each): rigorous-pass and float64-pass positions/s at n =
1024, 4096, 16384 (blocked vs reference, vs plain torch float64 and torch SDPA; FLOP/s against the
matmul peak), the peak memory of one sequence in a fresh subprocess, end-to-end
``certify_induction`` wall time and the exhaustive certificate's sequences/s (certificates compared
between the two algorithms), a "done when" block, and the throughput figures on cuda (torch backend)
where a GPU is present. Progress goes to stderr; with --json stdout holds one JSON object. Exit
status 0 unless the certificates differ (then 1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from contextlib import nullcontext
from typing import Any

import numpy as np
import torch

from bench_common import figure, finish_table, load_average, log, numpy_blas_threads
from bench_induction import TorchModel, machine_info, matmul_peak
from headcount.core.attention import (
    attention_work,
    float_work,
    reset_attention_work,
    reset_float_work,
    use_algorithm,
)
from headcount.core.certify.evaluate import WORKERS, certified_predict, emulate
from headcount.core.numbers.precision import FLOAT64, fixed
from headcount.induction import task
from headcount.induction.certification import certify_induction, family_sizes
from headcount.induction.construction import two_layer_induction

S = 64  # alphabet of the throughput inputs and of the end-to-end certificates (the CLI's default)
ALGORITHMS = ("blocked", "reference")
# Estimated peak bytes per n² of one sequence in flight (the reference passes hold [query key]
# arrays):
REFERENCE_RIGOROUS_PER_N2 = 12 * 8  # ~12 float64 n×n arrays per head in dense_attention_bounds
REFERENCE_FLOAT_PER_N2 = (
    4 * 8
)  # the cached bias, the scores, their exponentials, the mask temporaries
TORCH_PER_N2 = 25  # plain torch and float64 SDPA (math path on CPU): measured 24.4 at n = 16384
GB = 1e9


def estimate_bytes(per_n2: int, n: int, seqs: int) -> float:
    """Estimated peak bytes with min(seqs, WORKERS) sequences in flight (one per evaluate chunk)."""
    return per_n2 * n * n * min(seqs, WORKERS)


def interleaved(runs: dict[str, Any], repeats: int) -> tuple[dict[str, float], dict[str, Any]]:
    """(best seconds, last result) of each run; the repeats go round the runs in turn, so all of
    them see the same background load."""
    best = {name: float("inf") for name in runs}
    outputs: dict[str, Any] = {}
    for _ in range(repeats):
        for name, fn in runs.items():
            t0 = time.perf_counter()
            outputs[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best, outputs


def causal_flops(model, n: int) -> int:
    """Floating-point operations of one float64 forward over one sequence as the blocked pass does
    them: only the n(n+1)/2 visible (query, key) pairs, no mask add (per head: q/k/v/o projections,
    scores, softmax max/subtract/exp/sum, weights @ v and the division; residual sums; the
    decoder)."""
    d, pairs = model.d_model, n * (n + 1) // 2
    total = n * d  # embedding + positions
    for layer in model.layers:
        for h in layer.heads:
            dh, dv = h.W_Q.shape[1], h.W_V.shape[1]
            total += 2 * n * d * (2 * dh + dv) + 2 * n * dv * d  # projections
            total += 2 * pairs * dh + 4 * pairs + 2 * pairs * dv + n * dv + n * d
        total += n * d
    classes = model.decoder.W_U.shape[1]
    return total + 2 * n * d * classes + 2 * n * classes


def passes(
    n: int, seqs: int, repeats: int, bits: int, max_bytes: float, gpu=None
) -> dict[str, Any]:
    """Rigorous and float64 positions/s at length n on `seqs` uniform sequences (best of `repeats`,
    interleaved); the reference and torch runs are skipped where their estimated memory exceeds
    max_bytes. gpu: a context manager selecting the torch backend (then only the blocked algorithm
    runs)."""
    model = two_layer_induction(n, S)
    tokens = task.uniform(np.random.default_rng(n), seqs, n, S)
    targets = task.induction_targets(tokens)
    out: dict[str, Any] = {
        "n": n,
        "S": S,
        "sequences": seqs,
        "positions": tokens.size,
        "bits": bits,
    }
    out["repeats"] = repeats
    skipped = out["skipped"] = {}
    algorithms = ("blocked",) if gpu else ALGORITHMS

    def under(algorithm: str, fn):
        with use_algorithm(algorithm), gpu() if gpu else nullcontext():
            return fn()

    rigorous = {
        a: (lambda a=a: under(a, lambda: certified_predict(model, tokens, fixed(bits))))
        for a in algorithms
    }
    if "reference" in rigorous and estimate_bytes(REFERENCE_RIGOROUS_PER_N2, n, seqs) > max_bytes:
        skipped["rigorous_reference"] = estimate_bytes(REFERENCE_RIGOROUS_PER_N2, n, seqs) / GB
        del rigorous["reference"]
    log(
        f"n={n}: rigorous pass fixed:{bits}, {' / '.join(rigorous)} ({seqs} seq x {repeats}, "
        "interleaved)"
    )
    reset_attention_work()
    best, outputs = interleaved(rigorous, repeats)
    out["attention_work"] = work = attention_work()  # summed over the blocked repeats
    if work["score_entries"]:
        out["computed_fraction"] = work["computed"] / work["score_entries"]
        out["exponentiated_fraction"] = work["exponentiated"] / work["score_entries"]
    for a, (got, proven) in outputs.items():
        out[f"rigorous_{a}_seconds"] = best[a]
        out[f"rigorous_{a}_positions_per_s"] = tokens.size / best[a]
        out[f"rigorous_{a}_correct_and_proven"] = bool(
            np.array_equal(got, targets) and proven.all()
        )

    tm = TorchModel(model)
    floats = {
        a: (lambda a=a: under(a, lambda: emulate(model, tokens, FLOAT64))) for a in algorithms
    }
    if "reference" in floats and estimate_bytes(REFERENCE_FLOAT_PER_N2, n, seqs) > max_bytes:
        skipped["float64_reference"] = estimate_bytes(REFERENCE_FLOAT_PER_N2, n, seqs) / GB
        del floats["reference"]
    if gpu is None:
        if TORCH_PER_N2 * n * n > max_bytes:  # torch runs one sequence at a time
            skipped["torch"] = skipped["torch_sdpa"] = TORCH_PER_N2 * n * n / GB
        else:
            floats["torch"] = lambda: tm.predict(tokens)
            floats["torch_sdpa"] = lambda: tm.predict(tokens, fused=True)
    log(f"n={n}: float64 pass, {' / '.join(floats)} ({seqs} seq x {repeats}, interleaved)")
    reset_float_work()
    best, outputs = interleaved(floats, repeats)
    out["float_work"] = float_work()  # summed over the blocked repeats
    for name, got in outputs.items():
        out[f"float64_{name}_seconds"] = best[name]
        out[f"float64_{name}_positions_per_s"] = tokens.size / best[name]
        out[f"float64_{name}_correct"] = bool(np.array_equal(got, targets))
    out["flops_per_sequence_causal"] = causal_flops(model, n)
    out["float64_blocked_flops_per_s"] = out["flops_per_sequence_causal"] * seqs / best["blocked"]
    return out


# One sequence's certified_predict and emulate in a fresh interpreter; argv: n algorithm bits
# max_gb. It reports ru_maxrss and VmHWM (/proc/self/status), after setup and at the end. VmHWM is
# the figure: on Linux a child's ru_maxrss also keeps the peak of the address space it was forked
# from (the kernel folds the old mm's high-water mark in at exec), i.e. this benchmark's own ~1 GB,
# while VmHWM is the new program's alone. The address space is capped at its size after setup +
# max_gb GB, so a run that would need more fails with a MemoryError instead of pushing a shared
# machine into swap or the OOM killer.
MEMORY_CHILD = r"""
import json, resource, sys, time
import numpy as np
from headcount.core.attention.settings import use_algorithm
from headcount.core.certify.evaluate import certified_predict, emulate
from headcount.core.numbers.precision import FLOAT64, fixed
from headcount.induction import task
from headcount.induction.construction import two_layer_induction
n, algorithm, bits, max_gb = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
model = two_layer_induction(n, 64)
tokens = task.uniform(np.random.default_rng(n), 1, n, 64)
def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":"))
def usage(when):
    out[f"{when}_ru_maxrss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out[f"{when}_vmhwm_bytes"] = status("VmHWM")
out = {}
usage("setup")
cap = status("VmSize") + int(max_gb * 1e9)
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
out["address_space_cap_bytes"] = cap
try:
    with use_algorithm(algorithm):
        t0 = time.perf_counter()
        got, proven = certified_predict(model, tokens, fixed(bits))
        out["certified_seconds"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        floats = emulate(model, tokens, FLOAT64)
        out["emulate_seconds"] = time.perf_counter() - t0
    targets = task.induction_targets(tokens)
    out["float64_correct"] = bool((floats == targets).all())
    out["certified_correct"] = bool((got == targets).all())
    out["proven_fraction"] = float(proven.mean())
except MemoryError:
    out["memory_error"] = True
usage("peak")
print(json.dumps(out))
"""


def peak_memory(n: int, algorithm: str, bits: int, max_gb: float) -> dict[str, Any]:
    """Peak memory of MEMORY_CHILD at length n under `algorithm`; skipped (reference) where the
    estimate exceeds max_gb."""
    row: dict[str, Any] = {"n": n, "algorithm": algorithm, "bits": bits}
    if algorithm == "reference" and estimate_bytes(REFERENCE_RIGOROUS_PER_N2, n, 1) > max_gb * GB:
        row["skipped_estimated_gb"] = estimate_bytes(REFERENCE_RIGOROUS_PER_N2, n, 1) / GB
        log(
            f"peak memory n={n} {algorithm}: skipped (estimated {row['skipped_estimated_gb']:.1f} "
            "GB)"
        )
        return row
    log(f"peak memory n={n} {algorithm}: fresh subprocess")
    args = [sys.executable, "-c", MEMORY_CHILD, str(n), algorithm, str(bits), str(max_gb)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1:]
        row["failed"] = f"subprocess exit {done.returncode}" + (f": {last[0]}" if last else "")
        return row
    row.update(json.loads(done.stdout.strip().splitlines()[-1]))
    return row


def compare_certificates(label: str, build, again: bool) -> dict[str, Any]:
    """build() under blocked, then reference, then (again) blocked once more: the best wall and CPU
    seconds of each algorithm (the blocked runs on both sides of the long reference one see its
    background load too), the pass seconds of that run, and whether all the certificates' JSON
    without "seconds" agree."""
    row: dict[str, Any] = {}
    certs: dict[str, list] = {a: [] for a in ALGORITHMS}
    for algorithm in ALGORITHMS + ("blocked",) * again:
        log(f"{label}: {algorithm}")
        t0, cpu0 = time.perf_counter(), time.process_time()
        with use_algorithm(algorithm):
            cert = build()
        wall, cpu = (
            time.perf_counter() - t0,
            time.process_time() - cpu0,
        )  # cpu: all threads, less load-bound
        if wall < row.get(f"{algorithm}_seconds", float("inf")):
            row[f"{algorithm}_seconds"], row[f"{algorithm}_pass_seconds"] = (
                wall,
                cert.certificate.seconds,
            )
        row[f"{algorithm}_cpu_seconds"] = min(
            cpu, row.get(f"{algorithm}_cpu_seconds", float("inf"))
        )
        row[f"{algorithm}_runs"] = row.get(f"{algorithm}_runs", 0) + 1
        certs[algorithm].append({k: v for k, v in cert.to_json().items() if k != "seconds"})
    c = certs["blocked"][0]
    row.update(
        identical=all(other == c for other in certs["blocked"] + certs["reference"]),
        precision_bits=c["precision_bits"],
        certified=c["certified"],
        errors=c["errors"],
        inputs_checked=c["inputs_checked"],
    )
    if not row["identical"]:
        row["differing_keys"] = sorted(k for k in c if c[k] != certs["reference"][0].get(k))
    return row


def split_figure(tag: str, row: dict[str, Any]) -> dict[str, Any]:
    """Where each certificate's time went (Certificate.seconds: float64 and the precision search,
    the proof at precision_bits, the IEEE dtypes)."""
    parts = {
        a: ", ".join(f"{k} {v:.1f}" for k, v in row[f"{a}_pass_seconds"].items())
        for a in ALGORITHMS
    }
    return figure(
        f"certificate seconds by pass {tag}",
        f"blocked {parts['blocked']}; reference {parts['reference']}",
    )


def gpu_backend():
    """(factory of the context that runs the attention kernels on torch + cuda, None) — or (None,
    why) when there is no CUDA device or headcount has no torch backend. HOOK for the GPU figures:
    headcount.core.attention.settings.use_backend("torch", device) selects the backend
    (core.attention.torch_backend); where that import fails, the figures are skipped with "GPU
    figures: torch backend not available"."""
    if not torch.cuda.is_available():
        log("GPU figures: no CUDA device")
        return None, "no CUDA device"
    try:
        from headcount.core.attention import use_backend
    except ImportError:
        log("GPU figures: torch backend not available")
        return None, "torch backend not available"
    return (lambda: use_backend("torch", "cuda")), None


def pass_figures(r: dict[str, Any], peak: float | None, device: str = "") -> list[dict[str, Any]]:
    """Figures 1 and 2 of one length: blocked against each baseline that ran, the work fractions,
    the FLOP/s against the matmul peak, a correctness check and what was skipped."""
    tag = f"n={r['n']} S={r['S']} ({r['sequences']} seq){device}"
    get = lambda key: r.get(f"{key}_positions_per_s")  # noqa: E731
    rigorous, floats = get("rigorous_blocked"), get("float64_blocked")
    rig, flt = (
        f"rigorous pass positions/s {tag} fixed:{r['bits']}",
        f"float64 pass positions/s {tag}",
    )
    specs = [
        (f"{rig}, blocked", rigorous, "reference", "rigorous_reference"),
        (f"{flt}, blocked", floats, "reference", "float64_reference"),
        (f"{flt}, blocked vs torch", floats, "plain torch float64", "float64_torch"),
        (f"{flt}, blocked vs SDPA", floats, "torch float64 SDPA", "float64_torch_sdpa"),
    ]
    figs = [
        figure(name, value, "pos/s", base if get(key) else None, get(key))
        for name, value, base, key in specs
        if get(key) or base == "reference"
    ]
    if "computed_fraction" in r:
        w = r["attention_work"]
        label = (
            f"blocked rigorous pass work {tag}: computed / visible {r['computed_fraction']:.3f}, "
            f"exponentiated / visible {r['exponentiated_fraction']:.4f}, dense/sparse blocks "
            f"{w['dense_blocks']}/{w['sparse_blocks']}; visible scores"
        )
        figs.insert(1, figure(label, w["score_entries"]))
    if r.get("float_work", {}).get("rows"):
        f = r["float_work"]
        label = (
            f"blocked float pass {tag}: rows whose left-out keys were added back (not negligible "
            "against "
            f"their output) {f['rows_redone'] / f['rows']:.3f} of the sparse rows"
        )
        figs.insert(2, figure(label, f["rows"]))
    if peak:
        name = f"float64 blocked FLOP/s {tag} (causal half counted)"
        figs.append(
            figure(
                name, r["float64_blocked_flops_per_s"], "flop/s", "numpy float64 matmul peak", peak
            )
        )
    checks = [v for k, v in r.items() if k.endswith(("_correct_and_proven", "_correct"))]
    figs.append(figure(f"check: every pass correct (rigorous: and proven) {tag}", all(checks)))
    if r["skipped"]:
        skipped = json.dumps({k: round(v, 1) for k, v in r["skipped"].items()})
        figs.append(figure(f"skipped {tag} (estimated GB > --max-gb)", skipped))
    return figs


def done_when(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The acceptance block of issue 18: criterion, measured value (None: not measured) and
    status."""
    r4 = {r["n"]: r for r in results["passes"]}.get(4096, {})
    e2e = {r["n"]: r for r in results["end_to_end"]}.get(4096, {})
    ex = results["exhaustive"]
    mem = {(r["n"], r["algorithm"]): r for r in results["memory"]}.get((16384, "blocked"), {})
    ratio = lambda a, b: a / b if a is not None and b else None  # noqa: E731
    rows = [
        (
            "rigorous n=4096 blocked/reference positions/s >= 10x",
            ratio(
                r4.get("rigorous_blocked_positions_per_s"),
                r4.get("rigorous_reference_positions_per_s"),
            ),
            lambda v: v >= 10,
        ),
        (
            "end-to-end certify_induction n=4096 reference/blocked wall time >= 5x",
            ratio(e2e.get("reference_seconds"), e2e.get("blocked_seconds")),
            lambda v: v >= 5,
        ),
        (
            "float64 n=4096 blocked/plain torch positions/s >= 2x",
            ratio(
                r4.get("float64_blocked_positions_per_s"), r4.get("float64_torch_positions_per_s")
            ),
            lambda v: v >= 2,
        ),
        (
            "exhaustive certify_induction blocked/reference sequences/s >= 3x",
            ratio(ex.get("reference_seconds"), ex.get("blocked_seconds")),
            lambda v: v >= 3,
        ),
        (
            "blocked peak memory n=16384 (VmHWM) < 1.5 GB",
            mem["peak_vmhwm_bytes"] / GB
            if "peak_vmhwm_bytes" in mem and not mem.get("memory_error")
            else None,
            lambda v: v < 1.5,
        ),
    ]
    return [
        {
            "criterion": name,
            "value": value,
            "status": "n/a (not measured)"
            if value is None
            else ("PASS" if test(value) else "FAIL"),
        }
        for name, value, test in rows
    ]


def memory_figures(rows: list[dict[str, Any]], max_gb: float) -> list[dict[str, Any]]:
    figs = []
    for m in rows:
        name = (
            f"peak memory (VmHWM) n={m['n']} one sequence, certified_predict + emulate, "
            f"{m['algorithm']}"
        )
        if "peak_vmhwm_bytes" in m and not m.get("memory_error"):
            peak, setup = m["peak_vmhwm_bytes"] / GB, m["setup_vmhwm_bytes"] / GB
            figs.append(figure(name, peak, "GB", "after imports and setup", setup))
            check = (
                f"check n={m['n']} {m['algorithm']} one sequence fixed:{m['bits']}: float64 "
                "correct "
                f"{m['float64_correct']}, certified outputs correct {m['certified_correct']}, "
                "proven share"
            )
            figs.append(figure(check, m["proven_fraction"]))
        elif "skipped_estimated_gb" in m:
            figs.append(
                figure(name, f"skipped (estimated {m['skipped_estimated_gb']:.1f} GB > --max-gb)")
            )
        else:
            figs.append(
                figure(
                    name, m.get("failed") or f"MemoryError (address space capped at +{max_gb} GB)"
                )
            )
    return figs


def certificate_runs(results: dict[str, Any], quick: bool) -> list[dict[str, Any]]:
    """Figures 4 and 5: end-to-end certify_induction and the exhaustive certificate, both
    algorithms."""
    figs = []
    results["end_to_end"] = []
    for n, samples in [(1024, 2)] if quick else [(1024, None), (2048, None), (4096, None)]:
        inputs = sum(c for _, c in family_sizes(n, S, samples))
        row = compare_certificates(
            f"certify_induction n={n} S={S} ({inputs} inputs)",
            lambda n=n, samples=samples: certify_induction(
                two_layer_induction(n, S), n, S, samples=samples
            ),
            again=not quick,
        )
        row.update(n=n, samples=samples)
        results["end_to_end"].append(row)
        chosen = "default" if samples is None else samples
        tag = f"n={n} S={S} ({inputs} inputs, samples={chosen}, p={row['precision_bits']})"
        figs.append(
            figure(
                f"end-to-end certify_induction wall time {tag}, blocked",
                row["blocked_seconds"],
                "s",
                "reference",
                row["reference_seconds"],
            )
        )
        cpu = f"end-to-end certify_induction CPU time (process, all threads) {tag}, blocked"
        figs.append(
            figure(cpu, row["blocked_cpu_seconds"], "s", "reference", row["reference_cpu_seconds"])
        )
        figs.append(split_figure(tag, row))
        figs.append(
            figure(f"check: certificates identical (JSON without seconds) {tag}", row["identical"])
        )
    ex_n = 14 if quick else 20
    ex = results["exhaustive"] = compare_certificates(
        f"exhaustive certify_induction n={ex_n} S=2",
        lambda: certify_induction(two_layer_induction(ex_n, 2), ex_n, 2, exhaustive=True),
        again=not quick,
    )
    ex["n"] = ex_n
    figs.append(
        figure(
            f"exhaustive certify_induction sequences/s n={ex_n} S=2 (all {2**ex_n} inputs, "
            f"p={ex['precision_bits']}), blocked",
            ex["inputs_checked"] / ex["blocked_seconds"],
            "seq/s",
            "reference",
            ex["inputs_checked"] / ex["reference_seconds"],
        )
    )
    figs.append(split_figure(f"exhaustive n={ex_n} S=2", ex))
    figs.append(figure(f"check: exhaustive certificates identical n={ex_n} S=2", ex["identical"]))
    return figs


def report(results: dict[str, Any], figures: list[dict[str, Any]], as_json: bool) -> None:
    """The table (header, figures, GPU line, done-when block, load and total time), then the
    JSON."""
    machine = results["machine"]
    table = finish_table(
        results,
        figures,
        f"headcount certify-at-scale benchmark ({results['mode']}), {machine['cpu']}, "
        f"{machine['cpus_usable']} cpus, load average at start "
        f"{machine.get('load_average_at_start')}",
        as_json,
    )
    if "skipped" in results["gpu"]:
        print(f"  GPU figures: {results['gpu']['skipped']}", file=table)
    print("  done when:", file=table)
    for d in results["done_when"]:
        value = "-" if d["value"] is None else f"{d['value']:.3g}"
        print(f"    {d['status']}: {d['criterion']} (measured {value})", file=table)
    print(
        f"  load average at end {results.get('load_average_at_end')}; total "
        f"{results['seconds_total']} s",
        file=table,
    )
    if as_json:
        print(json.dumps(results, default=float))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--pruning" in argv:  # issue 34's figures: bench_pruning.py
        import bench_pruning

        return bench_pruning.main([a for a in argv if a != "--pruning"])
    if "--ray" in argv:  # issue 34's exhaustive certificate on a Ray cluster: bench_spread.py
        import bench_spread

        return bench_spread.main([a for a in argv if a != "--ray"])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--quick", action="store_true", help="smaller run (< 90 s), used by the smoke test"
    )
    ap.add_argument(
        "--json", action="store_true", help="one JSON object on stdout (the table to stderr)"
    )
    ap.add_argument(
        "--max-gb",
        type=float,
        default=6.0,
        help="skip runs whose estimated peak memory exceeds this (GB)",
    )
    ap.add_argument(
        "--bits", type=int, default=24, help="fixed:p of the rigorous pass (default 24)"
    )
    args = ap.parse_args(argv)
    if args.max_gb <= 0 or not 2 <= args.bits <= 60:
        ap.error(f"--max-gb must be > 0 (got {args.max_gb}) and --bits in 2..60 (got {args.bits})")
    quick, max_bytes = args.quick, args.max_gb * GB

    blas_threads = numpy_blas_threads()
    torch.set_num_threads(blas_threads or os.cpu_count() or 1)
    machine = machine_info(torch.get_num_threads(), blas_threads)
    log(f"machine: {machine['cpu']}, {machine['cpus_usable']} cpus, load {load_average()}")
    results: dict[str, Any] = {
        "machine": machine,
        "mode": "quick" if quick else "default",
        "settings": {"max_gb": args.max_gb, "bits": args.bits, "alphabet": S},
    }
    figures: list[dict[str, Any]] = []

    # 1 + 2. rigorous and float64 positions/s: (n, sequences, repeats)
    configs = [(1024, 1, 2), (4096, 1, 1)] if quick else [(1024, 8, 3), (4096, 4, 3), (16384, 1, 3)]
    log("numpy float64 matmul peak (2048x2048 @ 2048x2048, best of 3)")
    peak = results["matmul_peak_flops_per_s"] = matmul_peak(2048, 3)
    results["passes"] = [passes(n, seqs, reps, args.bits, max_bytes) for n, seqs, reps in configs]
    for r in results["passes"]:
        figures += pass_figures(r, peak)

    # 3. peak memory, one sequence in a fresh interpreter (65536: the blocked algorithm only)
    lengths = [4096] if quick else [1024, 4096, 16384, 65536]
    results["memory"] = [
        peak_memory(n, a, args.bits, args.max_gb)
        for n in lengths
        for a in ALGORITHMS
        if n <= 16384 or a == "blocked"
    ]
    figures += memory_figures(results["memory"], args.max_gb)

    # 4 + 5. end-to-end and exhaustive certificates
    figures += certificate_runs(results, quick)

    # 7. GPU: the same throughput figures under a torch backend on cuda, once headcount has one
    backend, why = gpu_backend()
    results["gpu"] = {"skipped": why} if backend is None else {"passes": []}
    for n, seqs, reps in configs if backend is not None else []:
        results["gpu"]["passes"].append(passes(n, seqs, reps, args.bits, max_bytes, gpu=backend))
        figures += pass_figures(results["gpu"]["passes"][-1], None, device=" cuda")

    # 6. done when
    results["done_when"] = done_when(results)
    identical = (
        all(r["identical"] for r in results["end_to_end"]) and results["exhaustive"]["identical"]
    )
    results["certificates_identical"] = identical
    report(results, figures, args.json)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
