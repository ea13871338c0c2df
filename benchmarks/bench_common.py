"""Helpers shared by the benchmark scripts in this folder (bench_induction.py, bench_minmax.py).

Progress logging, best-of-r timing, numpy's OpenBLAS thread count, the machine description common to
both scripts' JSON ``machine`` object, and the figure records and table lines of their reports. Not
a package: the scripts run as ``python benchmarks/<script>.py``, which puts this folder on sys.path,
and import it as ``bench_common``.
"""

from __future__ import annotations

import ctypes
import glob
import os
import platform
import sys
import time
from typing import Any

import numpy as np

START = (
    time.perf_counter()
)  # set when the first script imports this module; log() and run totals count from it


def log(msg: str) -> None:
    """A progress line on stderr, stamped with the seconds since START."""
    print(f"[{time.perf_counter() - START:6.1f}s] {msg}", file=sys.stderr, flush=True)


def best_time(fn, repeats: int):
    """(best wall seconds over `repeats` calls, result of the last call)."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


# ------------------------------------------------------------------------------------------------
# Machine description
# ------------------------------------------------------------------------------------------------


def _openblas_function(symbols: tuple[str, ...]):
    """The first of `symbols` found in numpy's bundled OpenBLAS, None if there is none."""
    libdir = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in glob.glob(os.path.join(libdir, "*openblas*")):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for symbol in symbols:
            fn = getattr(lib, symbol, None)
            if fn is not None:
                return fn
    return None


def numpy_blas_threads() -> int | None:
    """Threads numpy's bundled OpenBLAS uses (asked from the library itself), None if unknown."""
    fn = _openblas_function(
        (
            "scipy_openblas_get_num_threads64_",
            "openblas_get_num_threads64_",
            "openblas_get_num_threads",
        )
    )
    if fn is not None:
        return int(fn())
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return None


def set_numpy_blas_threads(threads: int) -> bool:
    """Ask numpy's bundled OpenBLAS to use `threads` threads; False if the library is not found."""
    fn = _openblas_function(
        (
            "scipy_openblas_set_num_threads64_",
            "openblas_set_num_threads64_",
            "openblas_set_num_threads",
        )
    )
    if fn is None:
        return False
    fn(ctypes.c_int(threads))
    return True


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> list[float] | None:
    """The 1-, 5- and 15-minute load averages, rounded; None where the platform has none."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def machine_info(
    blas_threads: int | None,
    versions: dict[str, Any] | None = None,
    threads: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The machine description both scripts report; `versions` (other libraries' versions) go after
    numpy's, `threads` (other libraries' thread counts) after numpy's BLAS threads."""
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "numpy": np.__version__,
        **(versions or {}),
        "numpy_blas_threads": blas_threads,
        **(threads or {}),
        "numpy_elementwise_threads": 1,  # numpy ufuncs/reductions are single-threaded
    }
    load = load_average()
    if load is not None:
        info["load_average_at_start"] = load
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        info["numpy_blas"] = f"{blas.get('name')} {blas.get('version')}"
    except Exception:  # noqa: BLE001 — optional
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        info["memory_gb"] = round(mem / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    return info


def busy_warning(machine: dict[str, Any], load_at_end: list[float] | None) -> str | None:
    """The table's warning line when the 1-min load average at start or end exceeded the usable
    CPUs."""
    load = [machine.get("load_average_at_start"), load_at_end]
    if not any(l and l[0] > machine["cpus_usable"] for l in load):
        return None
    return (
        f"  WARNING: machine busy (1-min load average start/end {load[0][0] if load[0] else '?'}/"
        f"{load[1][0] if load[1] else '?'} on {machine['cpus_usable']} cpus): timings are noisy"
    )


# ------------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------------


def fmt(x: float) -> str:
    if x is None:
        return "-"
    if isinstance(x, (int, np.integer)) and abs(x) < 10**6:
        return str(int(x))
    if abs(x) >= 1e9:
        return f"{x / 1e9:.2f}G"
    if abs(x) >= 1e6:
        return f"{x / 1e6:.2f}M"
    if abs(x) >= 1e4:
        return f"{x / 1e3:.1f}k"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.3g}"


def figure(
    name: str, value, unit: str = "", baseline_name: str | None = None, baseline=None
) -> dict[str, Any]:
    ratio = (
        None if baseline in (None, 0) or not isinstance(value, (int, float)) else value / baseline
    )
    return {
        "name": name,
        "value": value,
        "unit": unit,
        "baseline_name": baseline_name,
        "baseline_value": baseline,
        "ratio": ratio,
    }


def figure_line(f: dict[str, Any]) -> str:
    value = f["value"]
    text = (
        fmt(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool)
        else str(value)
    )
    unit = f" {f['unit']}" if f["unit"] else ""
    line = f"{f['name']}: {text}{unit}"
    if f["baseline_name"] is not None:
        line += f" ({f['baseline_name']} {fmt(f['baseline_value'])}{unit}, ratio {f['ratio']:.3g})"
    return line


def finish_table(
    results: dict[str, Any], figures: list[dict[str, Any]], header: str, as_json: bool
):
    """Store the figures, end-of-run load and total time in `results`, print the table's header, any
    busy-machine warning and the figure lines, and return the stream the table goes to (stderr with
    --json, so stdout holds only the JSON object) for a script's own extra lines."""
    results["figures"] = figures
    load_at_end = load_average()
    if load_at_end is not None:
        results["load_average_at_end"] = load_at_end
    results["seconds_total"] = round(time.perf_counter() - START, 1)
    table = sys.stderr if as_json else sys.stdout
    print(header, file=table)
    warning = busy_warning(results["machine"], load_at_end)
    if warning:
        print(warning, file=table)
    for f in figures:
        print("  " + figure_line(f), file=table)
    return table
