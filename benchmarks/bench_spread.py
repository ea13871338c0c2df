#!/usr/bin/env python
"""An exhaustive certificate on a local Ray cluster against one process (issue 34, item 3).

    python benchmarks/bench_certify.py --ray [--quick] [--json] [--workers W] [--no-kill]
    (or python benchmarks/bench_spread.py with the same options)

The figure (benchmarks/README.md, "Certificates on a Ray cluster"): certify_induction of
two_layer_induction(n, S) on all of Σ^n — S = 4, n = 12, 16.8·10⁶ inputs (`--quick`: n = 9,
262,144) — once in this process (executor "local") and once spread over a local Ray cluster of W
workers (default 2) started here (executor "ray"), with one worker SIGKILLed while it runs a task
(unless --no-kill): wall time of each, whether the two certificates' JSON (without "seconds") is
identical, whether a worker was killed, and the tasks run. Both runs use every core: the local one
through its evaluation threads, the Ray one through its workers (one thread each), so on a 2-core
machine the ratio is the cost of spreading, not a speed-up; on a cluster it is W workers' worth.

Progress goes to stderr; with --json stdout holds one JSON object. Exit 1 when the certificates
differ, or no worker was killed when one should have been.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from typing import Any

from bench_common import figure, finish_table, load_average, log, machine_info, numpy_blas_threads
from headcount.core.certify import (
    RayExecutor,
    certify_spread,
    same_certificate,
    task_worker_pids,
)
from headcount.induction.certification import certify_induction, plan_certify
from headcount.induction.construction import two_layer_induction
from headcount.induction.layouts import layout_reference

S = 4


def _killer(after_s: float, killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the first worker seen running a task once `after_s` seconds have passed."""
    stop.wait(after_s)
    while not stop.is_set():
        pids = task_worker_pids()
        if pids:
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
            log(f"killed Ray worker {pids[0]}")
            return
        time.sleep(0.02)


def run(n: int, workers: int, kill: bool) -> dict[str, Any]:
    model = two_layer_induction(n, S)
    log(f"one process: all of Σ^{n}, S = {S}")
    clock = time.perf_counter()
    local = certify_induction(model, n, S, exhaustive=True).certificate
    local_s = time.perf_counter() - clock
    log(f"one process: {local_s:.1f} s; Ray with {workers} workers")
    killed: list[int] = []
    stop = threading.Event()
    thread = threading.Thread(target=_killer, args=(local_s / 4, killed, stop), daemon=True)
    if kill:
        thread.start()
    clock = time.perf_counter()
    try:  # certify_induction(…, executor="ray") does this; here for the executor's counts
        plan = plan_certify(n, S, None, 0, 1, "plain", True, None)
        spread, stats = certify_spread(
            plan.bind(model), plan.inputs(), layout_reference("plain", 1), RayExecutor(workers)
        )
    finally:
        stop.set()
    ray_s = time.perf_counter() - clock
    log(f"Ray: {ray_s:.1f} s, {stats}")
    return {
        "n": n,
        "S": S,
        "inputs": local.inputs_checked,
        "workers": workers,
        "local_seconds": local_s,
        "ray_seconds": ray_s,
        "identical": same_certificate(local, spread),
        "certified": local.certified,
        "precision_bits": local.precision_bits,
        "killed_workers": len(killed),
        "tasks": stats.tasks,
        "coordinator_fallbacks": stats.fallbacks,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 9 (about a minute)")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ap.add_argument("--workers", type=int, default=2, help="Ray workers (default 2)")
    ap.add_argument("--no-kill", action="store_true", help="kill no worker")
    args = ap.parse_args(argv)
    machine = machine_info(numpy_blas_threads())
    log(f"machine: {machine['cpu']}, {machine['cpus_usable']} cpus, load {load_average()}")
    results: dict[str, Any] = {"machine": machine, "mode": "quick" if args.quick else "default"}
    r = results["ray"] = run(9 if args.quick else 12, args.workers, not args.no_kill)
    name = (
        f"exhaustive certificate, two_layer_induction n={r['n']} S={S} ({r['inputs']} inputs), "
        f"wall time on a local Ray cluster of {r['workers']} workers ({r['killed_workers']} "
        f"killed, {r['tasks']} tasks; identical {r['identical']})"
    )
    figures = [figure(name, r["ray_seconds"], "s", "one process", r["local_seconds"])]
    ok = r["identical"] and (args.no_kill or r["killed_workers"] > 0)
    results["identical"] = r["identical"]
    table = finish_table(results, figures, "headcount certificate-on-Ray benchmark", args.json)
    print(f"  total {results['seconds_total']} s", file=table)
    if args.json:
        print(json.dumps(results, default=float))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
