#!/usr/bin/env python
"""Benchmark of headcount's forward passes on the two-layer induction construction.

    python benchmarks/bench_induction.py [--quick] [--json] [--certify-p] [--max-gb G]

Figures (benchmarks/README.md explains each):

1. certified positions/s (``certified_predict`` at fixed:p, rigorous bounds) at n=1024 (S=16) and
   n=4096 (S=64), against headcount's own float64 ``predict`` positions/s;
2. headcount float64 ``predict`` against a plain PyTorch float64 forward written here (same weights,
   same inputs, outputs checked identical), plus torch's fused ``scaled_dot_product_attention`` for
   reference;
3. analytic FLOP count of the forward pass and the fraction of this machine's float64 matmul peak
   (numpy 2048x2048 @ 2048x2048, best of 3) that headcount's float64 forward reaches;
4. the largest n (powers of two) at which the construction is exact in float32 / bfloat16 / float16
   on a few uniform + ``latest_match_far_back`` inputs.

The readable table goes to stdout, or to stderr with --json (then stdout holds one JSON object).
Progress lines go to stderr. Default run: ~3-4 minutes on 2 cores; --quick: < 60 s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np
import torch

from bench_common import best_time, figure, finish_table, log, numpy_blas_threads
from bench_common import machine_info as common_machine_info
from headcount.core.attention import attend, mask_bias
from headcount.core.certify.evaluate import certified_predict, predict
from headcount.core.model.symbols import BOTTOM
from headcount.core.model.transformer import Transformer
from headcount.core.numbers.precision import FLOAT64, fixed, parse_precision
from headcount.core.passes.forward import residual_stream
from headcount.induction import task
from headcount.induction.certification import certify_induction
from headcount.induction.construction import two_layer_induction


def machine_info(torch_threads: int, blas_threads: int | None) -> dict[str, Any]:
    """The common machine description plus torch's version and thread count."""
    return common_machine_info(
        blas_threads,
        versions={"torch": torch.__version__},
        threads={"torch_threads": torch_threads},
    )


# ------------------------------------------------------------------------------------------------
# Plain PyTorch forward (the baseline)
# ------------------------------------------------------------------------------------------------


class TorchModel:
    """The weight-form model as float64 torch tensors; forward is written the textbook way."""

    def __init__(self, model: Transformer):
        t = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))  # noqa: E731
        self.W_E, self.W_pos = t(model.W_E), t(model.W_pos)
        self.layers = []
        for layer in model.layers:
            heads = [(t(h.W_Q), t(h.W_K), t(h.W_V), t(h.W_O)) for h in layer.heads]
            mlp = (
                None
                if layer.mlp is None
                else tuple(
                    t(a) for a in (layer.mlp.W_in, layer.mlp.b_in, layer.mlp.W_out, layer.mlp.b_out)
                )
            )
            self.layers.append((heads, mlp))
        if not hasattr(model.decoder, "W_U"):
            raise TypeError("the torch baseline handles the linear decoder only")
        self.W_U, self.b_U = t(model.decoder.W_U), t(model.decoder.b_U)
        self.bottom_class = model.decoder.W_U.shape[1] - 1
        self.causal = model.mask == "causal"

    @torch.inference_mode()
    def forward(self, tokens: torch.Tensor, fused: bool = False) -> torch.Tensor:
        """tokens [batch pos] int64 -> outputs [batch pos] (BOTTOM for ⊥)."""
        n = tokens.shape[1]
        x = self.W_E[tokens] + self.W_pos[:n]  # [batch pos d_model]
        hidden = torch.ones(n, n, dtype=torch.bool).triu_(1) if self.causal and not fused else None
        for heads, mlp in self.layers:
            update = torch.zeros_like(x)
            for W_Q, W_K, W_V, W_O in heads:
                q, k, v = x @ W_Q, x @ W_K, x @ W_V
                if fused:
                    z = torch.nn.functional.scaled_dot_product_attention(
                        q, k, v, is_causal=self.causal, scale=1.0
                    )
                else:
                    scores = q @ k.transpose(-1, -2)  # [batch query key], no 1/sqrt(d) scaling
                    if hidden is not None:
                        scores.masked_fill_(hidden, float("-inf"))
                    z = torch.softmax(scores, dim=-1) @ v
                update += z @ W_O
            x = x + update
            if mlp is not None:
                W_in, b_in, W_out, b_out = mlp
                x = x + torch.relu(x @ W_in + b_in) @ W_out + b_out
        cls = torch.argmax(x @ self.W_U + self.b_U, dim=-1)
        return torch.where(cls == self.bottom_class, torch.full_like(cls, BOTTOM), cls)

    def predict(self, tokens: np.ndarray, fused: bool = False) -> np.ndarray:
        """One sequence at a time (the score tensor is n² per head), like headcount's chunking at
        large n."""
        tt = torch.from_numpy(np.ascontiguousarray(tokens, dtype=np.int64))
        return np.concatenate([self.forward(tt[i : i + 1], fused).numpy() for i in range(len(tt))])


# ------------------------------------------------------------------------------------------------
# FLOP accounting
# ------------------------------------------------------------------------------------------------


def forward_flops(model: Transformer, n: int) -> dict[str, int]:
    """Floating-point operations of one float64 forward pass over one sequence of length n, as
    headcount executes it (the full n×n score matrix, masked entries included)."""
    d = model.d_model
    f = {
        "embedding": n * d,
        "projections_qkvo": 0,
        "scores_qk": 0,
        "softmax": 0,
        "attention_value": 0,
        "residual": 0,
        "mlp": 0,
        "decoder": 0,
    }
    for layer in model.layers:
        for h in layer.heads:
            dh, dv = h.W_Q.shape[1], h.W_V.shape[1]
            f["projections_qkvo"] += 2 * n * d * (2 * dh + dv) + 2 * n * dv * d
            f["scores_qk"] += 2 * n * n * dh
            f["softmax"] += 5 * n * n  # mask add, row max, subtract, exp, row sum
            f["attention_value"] += (
                2 * n * n * dv + n * dv
            )  # weights @ v, then the division by the row sum
            f["residual"] += n * d  # summing the heads' updates
        f["residual"] += n * d
        if layer.mlp is not None:
            dm = layer.mlp.W_in.shape[1]
            f["mlp"] += 2 * n * d * dm + n * dm + n * dm + 2 * n * dm * d + n * d + n * d
    classes = model.decoder.W_U.shape[1]
    f["decoder"] = 2 * n * d * classes + n * classes + n * classes  # logits, bias, argmax compares
    f["total"] = sum(f.values())
    return f


def n2_bytes_per_forward(model: Transformer, n: int) -> int:
    """Estimated bytes moved over [pos pos] tensors by one float64 forward of one sequence
    (headcount.core. attention.attend): per head q@kᵀ write 8, bias add r/r/w 24, max read 8,
    subtract r/w 16, exp r/w 16, sum read 8, weights@v read 8 = 88 bytes per score; plus mask_bias
    once (bool tri 1 + where read 1 + write 8)."""
    heads = sum(len(layer.heads) for layer in model.layers)
    return (88 * heads + 10) * n * n


def matmul_peak(size: int, repeats: int = 3) -> float:
    """float64 FLOP/s of numpy's size×size @ size×size, best of `repeats`."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((size, size)), rng.standard_normal((size, size))
    a @ b  # warm-up (threads, pages)
    t, _ = best_time(lambda: a @ b, repeats)
    return 2 * size**3 / t


def copy_bandwidth(mbytes: int = 256, repeats: int = 3) -> float:
    """Bytes/s of a large np.copyto (read + write counted), best of `repeats`."""
    src = np.ones(mbytes * 2**20 // 8)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    t, _ = best_time(lambda: np.copyto(dst, src), repeats)
    return 2 * src.nbytes / t


# ------------------------------------------------------------------------------------------------
# Benchmarks
# ------------------------------------------------------------------------------------------------


def one_thread(fn):
    """Run fn with torch limited to one thread (robust when other processes load the CPUs)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return fn()
    finally:
        torch.set_num_threads(threads)


def throughput(
    n: int, S: int, seqs: int, repeats: int, cert_repeats: int, bits: int
) -> dict[str, Any]:
    """Certified / float64 / torch positions per second on `seqs` uniform sequences."""
    model = two_layer_induction(n, S)
    tokens = task.uniform(np.random.default_rng(n), seqs, n, S)
    ref = task.induction_targets(tokens)
    positions = tokens.size
    out: dict[str, Any] = {"n": n, "S": S, "sequences": seqs, "positions": positions, "bits": bits}

    tm = TorchModel(model)
    runs = {
        "float64": lambda: predict(model, tokens, FLOAT64),
        "torch": lambda: tm.predict(tokens),
        "torch_sdpa": lambda: tm.predict(tokens, fused=True),
        "torch_1thread": lambda: one_thread(lambda: tm.predict(tokens)),
    }
    # Interleaved repeats (headcount, torch, torch SDPA, torch 1 thread, headcount, ...), best of
    # each: on a shared machine all of them see the same background load.
    log(
        f"n={n}: headcount float64 predict / torch float64 (SDPA, 1 thread), "
        f"interleaved ({seqs} seq x {repeats})"
    )
    best = {name: float("inf") for name in runs}
    outputs: dict[str, np.ndarray] = {}
    for _ in range(repeats):
        for name, fn in runs.items():
            t0 = time.perf_counter()
            outputs[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    pred = outputs["float64"]
    out["float64_matches_reference"] = bool(np.array_equal(pred, ref))
    for name in runs:
        out[f"{name}_seconds"] = best[name]
        out[f"{name}_positions_per_s"] = positions / best[name]
        if name != "float64":
            out[f"{name}_identical_to_headcount"] = bool(np.array_equal(outputs[name], pred))

    log(f"n={n}: headcount certified_predict fixed:{bits} ({seqs} seq x {cert_repeats})")
    t, (cout, cok) = best_time(lambda: certified_predict(model, tokens, fixed(bits)), cert_repeats)
    out["certified_seconds"] = t
    out["certified_positions_per_s"] = positions / t
    out["certified_matches_reference"] = bool(np.array_equal(cout, ref))
    out["certified_all"] = bool(cok.all())
    out["certified_positions"] = int(cok.sum())

    flops = forward_flops(model, n)
    out["flops_per_sequence"] = flops
    out["float64_flops_per_s"] = flops["total"] * seqs / out["float64_seconds"]
    out["torch_flops_per_s"] = flops["total"] * seqs / out["torch_seconds"]
    out["n2_bytes_per_sequence_estimate"] = n2_bytes_per_forward(model, n)
    out["float64_n2_bytes_per_s_estimate"] = (
        out["n2_bytes_per_sequence_estimate"] * seqs / out["float64_seconds"]
    )
    return out


def attend_breakdown(n: int, S: int, repeats: int = 3) -> dict[str, float]:
    """Milliseconds of each numpy step of headcount.core.attention.attend (float64, one sequence)
    for the layer-2 induction head at length n, on its real inputs (the residual stream after layer
    1), mirrored step by step; plus mask_bias (rebuilt every forward), headcount's own attend() per
    head, and what exp costs when skipped where its result underflows to exactly 0 (a bit-identical
    alternative)."""
    model = two_layer_induction(n, S)
    tokens = task.uniform(np.random.default_rng(7), 1, n, S)
    after_layer1 = residual_stream(
        Transformer(model.W_E, model.W_pos, model.layers[:1], model.decoder, model.mask),
        tokens,
        FLOAT64,
    )
    embedded = model.W_E[tokens] + model.W_pos[:n]
    ms: dict[str, float] = {}

    def step(name, fn):
        t, r = best_time(fn, repeats)
        ms[name] = 1e3 * t
        return r

    bias = step("mask_bias (once per forward)", lambda: mask_bias(n, "causal"))
    heads = [
        ("L1 previous-token", embedded, model.layers[0].heads[0]),
        ("L1 duplicate", embedded, model.layers[0].heads[1]),
        ("L2 induction", after_layer1, model.layers[1].heads[0]),
    ]
    for label, x, head in heads:
        q, k, v = x @ head.W_Q, x @ head.W_K, x @ head.W_V
        step(f"attend() {label}", lambda q=q, k=k, v=v: attend(q, k, v, "causal", FLOAT64))
    # The induction head, step by step (same operations as attend).
    scores = step("L2: q @ k^T (new n×n array)", lambda: q @ np.swapaxes(k, -1, -2))
    work = scores.copy()
    step("L2: scores += bias", lambda: np.add(scores, bias, out=work))
    mx = step("L2: row max", lambda: work.max(axis=-1, keepdims=True))
    step("L2: scores -= max", lambda: np.subtract(work, mx, out=scores))
    e = np.empty_like(scores)
    step("L2: exp (in place)", lambda: np.exp(scores, out=e))
    total = step("L2: row sum", lambda: e.sum(axis=-1, keepdims=True))
    step("L2: weights @ v, / sum", lambda: (e @ v) / total)
    # exp(x) rounds to exactly 0 for x < -745.14; numpy's SIMD exp takes a slow path on such inputs.
    alt = np.zeros_like(scores)
    step(
        "L2: exp only where scores > -745.2 (alternative)",
        lambda: np.exp(scores, out=alt, where=scores > -745.2),
    )
    ms["L2: alternative exp bit-identical"] = float(np.array_equal(alt, e))
    ms["L2: fraction of finite shifted scores < -745.2"] = float(
        (scores[np.isfinite(scores)] < -745.2).mean()
    )
    return ms


def exactness_sweep(
    dtype: str, n_start: int, n_stop: int, uniform_seqs: int, far_seqs: int, max_bytes: float
) -> dict[str, Any]:
    """Largest power-of-two n ≤ n_stop with outputs equal to the reference in `dtype`; stops at the
    first failing n; skips n whose estimated peak memory exceeds max_bytes."""
    # Peak bytes per n² of one sequence's predict, measured with tracemalloc at n=1024, rounded up.
    per_n2 = {"float64": 18, "float32": 14, "bfloat16": 48, "float16": 16}[dtype]
    prec = parse_precision(dtype)
    rows: list[dict[str, Any]] = []
    largest_exact, first_failure = None, None
    n = n_start
    while n <= n_stop:
        estimate = per_n2 * n * n
        if estimate > max_bytes:
            rows.append({"n": n, "skipped": True, "estimated_gb": round(estimate / 1e9, 1)})
            log(
                f"{dtype}: n={n} skipped (estimated {estimate / 1e9:.1f} GB > "
                f"{max_bytes / 1e9:.1f} GB)"
            )
            n *= 2
            continue
        S = min(n, 64)
        model = two_layer_induction(n, S)
        rng = np.random.default_rng(1000 + n)
        inputs = [("uniform", s) for s in task.uniform(rng, uniform_seqs, n, S)]
        inputs += [
            ("latest_match_far_back", s) for s in task.latest_match_far_back(rng, far_seqs, n, S)
        ]
        t0 = time.perf_counter()
        failure = None
        for family, seq in inputs:  # one sequence at a time: the score tensor is n² per head
            ref = task.induction_targets(seq[None])
            with np.errstate(over="ignore", invalid="ignore"):
                got = predict(model, seq[None], prec)
            wrong = np.flatnonzero(got[0] != ref[0])
            if wrong.size:
                failure = {
                    "family": family,
                    "wrong_positions": int(wrong.size),
                    "first_wrong_position": int(wrong[0]),
                }
                break
        seconds = time.perf_counter() - t0
        row = {
            "n": n,
            "S": S,
            "exact": failure is None,
            "seconds": round(seconds, 3),
            "sequences": len(inputs),
        }
        if failure:
            row.update(failure)
        rows.append(row)
        log(
            f"{dtype}: n={n} S={S} "
            f"{'exact' if failure is None else 'FAILS ' + json.dumps(failure)} ({seconds:.1f}s)"
        )
        if failure is not None:
            first_failure = n
            break
        largest_exact = n
        n *= 2
    skipped = [r["n"] for r in rows if r.get("skipped")]
    return {
        "dtype": dtype,
        "largest_exact_n": largest_exact,
        "first_failing_n": first_failure,
        "skipped_n": skipped,
        "tested_up_to": n_stop,
        "inputs_per_n": f"{uniform_seqs} uniform (S=min(n,64)) + {far_seqs} latest_match_far_back",
        "rows": rows,
    }


SOUNDNESS_BASELINE_REV = "1d68060"  # the last commit before the soundness work of issue 11


def load_bounds_at(rev: str):
    """headcount.core.passes.bounds as it was at git revision `rev`, imported as a separate module
    (None when git or the revision is not available): the baseline for what the soundness checks
    cost, in this process."""
    import importlib.util
    import subprocess
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        text = subprocess.run(
            ["git", "-C", root, "show", f"{rev}:src/headcount/core/bounds.py"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location(f"bounds_at_{rev}", f.name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    os.unlink(f.name)
    return module


def soundness_cost(n: int, S: int, seqs: int, repeats: int, bits: int, baseline) -> dict[str, Any]:
    """Seconds of the rigorous pass (residual_bounds at fixed:bits) today and at the baseline
    revision, timed alternately on the same inputs (best of `repeats` each), and whether both prove
    every position."""
    from headcount.core.passes import bounds

    model = two_layer_induction(n, S)
    tokens = task.uniform(np.random.default_rng(11), seqs, n, S)
    best = {"now": float("inf"), "baseline": float("inf")}
    proven = {}
    for _ in range(repeats):
        for name, module in (("now", bounds), ("baseline", baseline)):
            t0 = time.perf_counter()
            mid, rad = module.residual_bounds(model, tokens, fixed(bits))
            best[name] = min(best[name], time.perf_counter() - t0)
            proven[name] = bool(model.decoder.decode_bounds(mid, rad)[1].all())
    return {
        "n": n,
        "S": S,
        "seconds_now": best["now"],
        "seconds_baseline": best["baseline"],
        "all_proven_now": proven["now"],
        "all_proven_baseline": proven["baseline"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smaller run (< 60 s): fewer sequences, sweeps up to n=4096",
    )
    ap.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout (the table goes to stderr)",
    )
    ap.add_argument(
        "--certify-p",
        action="store_true",
        help="take p for the certified timing from certify_induction(samples=2) at each n "
        "(slow: ~2 min at n=4096)",
    )
    ap.add_argument(
        "--bits",
        type=int,
        default=24,
        help="fixed:p precision for the certified timing (default 24)",
    )
    ap.add_argument(
        "--max-gb",
        type=float,
        default=6.0,
        help="skip sweep lengths whose estimated peak memory exceeds this",
    )
    ap.add_argument(
        "--baseline-rev",
        default=SOUNDNESS_BASELINE_REV,
        help="git revision whose core/bounds.py (core/passes/bounds.py today) is timed against "
        "today's (the soundness checks' cost)",
    )
    args = ap.parse_args(argv)
    quick = args.quick

    blas_threads = numpy_blas_threads()
    torch_threads = blas_threads or os.cpu_count() or 1
    torch.set_num_threads(torch_threads)
    machine = machine_info(torch.get_num_threads(), blas_threads)
    log(
        f"machine: {machine['cpu']}, {machine['cpus_usable']} cpus, numpy {machine['numpy']} "
        f"({machine.get('numpy_blas', '?')}, {blas_threads} BLAS threads), "
        f"torch {machine['torch']} ({torch.get_num_threads()} threads)"
    )

    results: dict[str, Any] = {"machine": machine, "mode": "quick" if quick else "default"}
    figures: list[dict[str, Any]] = []

    # --- 0. precision: certify_induction at n=1024 (default mode), or at every timed n
    # (--certify-p) ---
    configs = [
        (1024, 16, 2 if quick else 4, 3 if quick else 5, 1 if quick else 2),
        (4096, 64, 1 if quick else 2, 2 if quick else 3, 1),
    ]
    cert_runs = {}
    for n, S, *_ in configs:
        if (n == 1024 and not quick) or args.certify_p:
            log(f"certify_induction(two_layer_induction({n}, {S}), samples=2)")
            t0 = time.perf_counter()
            c = certify_induction(two_layer_induction(n, S), n, S, samples=2, seed=0).to_json()
            cert_runs[n] = {
                k: c[k]
                for k in ("precision_bits", "certified", "inputs_checked", "errors", "dtypes_exact")
            }
            cert_runs[n]["seconds"] = round(time.perf_counter() - t0, 2)
            figures.append(
                figure(
                    f"certify_induction n={n} S={S} (samples=2): precision_bits",
                    c["precision_bits"],
                    "bits",
                )
            )
    results["certify_induction"] = cert_runs

    # --- 1 & 2. throughput
    # ----------------------------------------------------------------------------
    results["throughput"] = []
    for n, S, seqs, repeats, cert_repeats in configs:
        bits = cert_runs[n]["precision_bits"] if args.certify_p and n in cert_runs else args.bits
        r = throughput(n, S, seqs, repeats, cert_repeats, bits)
        results["throughput"].append(r)
        tag = f"n={n} S={S}"
        figures.append(
            figure(
                f"certified positions/s {tag} fixed:{bits}",
                r["certified_positions_per_s"],
                "pos/s",
                "headcount float64 predict",
                r["float64_positions_per_s"],
            )
        )
        figures.append(
            figure(
                f"certified outputs == reference and all certified {tag}",
                r["certified_matches_reference"] and r["certified_all"],
            )
        )
        figures.append(
            figure(
                f"headcount float64 predict positions/s {tag}",
                r["float64_positions_per_s"],
                "pos/s",
                "torch float64",
                r["torch_positions_per_s"],
            )
        )
        figures.append(
            figure(
                f"torch float64 outputs identical to headcount {tag}",
                r["torch_identical_to_headcount"] and r["float64_matches_reference"],
            )
        )
        figures.append(
            figure(
                f"headcount float64 predict positions/s {tag} vs torch SDPA",
                r["float64_positions_per_s"],
                "pos/s",
                "torch float64 scaled_dot_product_attention",
                r["torch_sdpa_positions_per_s"],
            )
        )
        figures.append(
            figure(
                f"headcount float64 predict positions/s {tag} vs torch 1 thread",
                r["float64_positions_per_s"],
                "pos/s",
                "torch float64, torch.set_num_threads(1)",
                r["torch_1thread_positions_per_s"],
            )
        )

    # --- 2b. what the soundness checks cost: today's rigorous pass against the baseline revision's
    # ---------
    baseline = load_bounds_at(args.baseline_rev)
    results["soundness_cost"] = []
    if baseline is None:
        log(f"soundness cost: git revision {args.baseline_rev} not available, skipped")
    for n, S, seqs, repeats, _ in configs if baseline is not None else []:
        log(
            f"n={n}: residual_bounds today vs {args.baseline_rev} ({seqs} seq x {repeats}, "
            "alternating)"
        )
        r = soundness_cost(n, S, seqs, repeats, args.bits, baseline)
        results["soundness_cost"].append(r)
        figures.append(
            figure(
                f"rigorous pass seconds n={n} S={S} fixed:{args.bits} (all proven: "
                f"{r['all_proven_now']})",
                r["seconds_now"],
                "s",
                f"bounds at {args.baseline_rev} (all proven: {r['all_proven_baseline']})",
                r["seconds_baseline"],
            )
        )

    # --- 3. FLOPs
    # -------------------------------------------------------------------------------------
    log("numpy float64 matmul peak (2048x2048 @ 2048x2048, best of 3)")
    peak = matmul_peak(2048, 3)
    log("memory copy bandwidth (np.copyto 256 MB, best of 3)")
    bandwidth = copy_bandwidth(256, 3)
    results["matmul_peak_flops_per_s"] = peak
    results["copy_bandwidth_bytes_per_s"] = bandwidth
    for r in results["throughput"]:
        tag = f"n={r['n']} S={r['S']}"
        figures.append(
            figure(f"FLOPs per sequence {tag}", r["flops_per_sequence"]["total"], "flop")
        )
        figures.append(
            figure(
                f"headcount float64 forward FLOP/s {tag}",
                r["float64_flops_per_s"],
                "flop/s",
                "numpy float64 matmul peak",
                peak,
            )
        )
        figures.append(
            figure(
                f"headcount float64 forward n×n-tensor traffic {tag} (estimate)",
                r["float64_n2_bytes_per_s_estimate"],
                "B/s",
                "np.copyto bandwidth",
                bandwidth,
            )
        )
    if not quick:
        log("attend step breakdown at n=4096")
        results["attend_breakdown_ms_n4096"] = attend_breakdown(4096, 64)

    # --- 4. exactness sweeps
    # --------------------------------------------------------------------------
    n_stop = 4096 if quick else 16384
    uniform_seqs, far_seqs = (2, 1) if quick else (3, 2)
    max_bytes = args.max_gb * 1e9
    results["exactness"] = {
        "float32": exactness_sweep("float32", 64, n_stop, uniform_seqs, far_seqs, max_bytes),
        "bfloat16": exactness_sweep("bfloat16", 4, n_stop, uniform_seqs, far_seqs, max_bytes),
        "float16": exactness_sweep("float16", 4, n_stop, uniform_seqs, far_seqs, max_bytes),
    }
    for dtype, sweep in results["exactness"].items():
        value = sweep["largest_exact_n"]
        note = (
            f"first failure n={sweep['first_failing_n']}"
            if sweep["first_failing_n"]
            else f"no failure up to n={n_stop}"
        )
        if sweep["skipped_n"]:
            note += f", skipped n={sweep['skipped_n']} (memory)"
        figures.append(figure(f"largest exact n in {dtype} ({note})", value))

    table = finish_table(
        results,
        figures,
        f"headcount induction benchmark ({results['mode']}), {machine['cpu']}, "
        f"{machine['cpus_usable']} cpus, numpy {machine['numpy']} / "
        f"{machine.get('numpy_blas', '?')} "
        f"({blas_threads} BLAS threads; ufuncs 1 thread), "
        f"torch {machine['torch']} ({machine['torch_threads']} threads)",
        args.json,
    )
    if "attend_breakdown_ms_n4096" in results:
        print(
            "  where headcount's float64 forward spends its time, n=4096, one sequence (ms unless "
            "noted):",
            file=table,
        )
        for k, v in results["attend_breakdown_ms_n4096"].items():
            print(f"    {k}: {v:.3g}", file=table)
    print(f"  total time: {results['seconds_total']} s", file=table)
    if args.json:
        print(json.dumps(results, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
