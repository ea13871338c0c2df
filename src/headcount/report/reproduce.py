"""Re-derive the papers' claims and write a report: the library entry point behind `headcount reproduce`.

    run_reproduce(scale="quick", only=None, out_dir="headcount-report") -> summary dict

Claims come from the modules in CLAIM_MODULES (a new scenario adds its module there). They run in
registration order; an exception inside a claim becomes a FAIL with the error in its detail, never a crash.
Progress goes to the `progress` callable (stderr by default), never to stdout.
"""

from __future__ import annotations

import fnmatch
import importlib
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from headcount.report.claims import FAIL, PASS, REGISTRY, SCALES, Claim, ClaimResult, Context, jsonable
from headcount.report.render import machine_info, print_to_stderr, render_report

CLAIM_MODULES = (
    "headcount.report.induction",
    "headcount.report.induction_lower_bound",
    "headcount.report.minmax",
    "headcount.report.boolean",
    "headcount.report.learning",
)
RESULTS_DB = "results.sqlite"  # the learning experiments' runs, kept in the report folder (re-runs resume)


def load_claims() -> dict[str, Claim]:
    for name in CLAIM_MODULES:
        importlib.import_module(name)
    return REGISTRY


def _patterns(only: str | Iterable[str] | None) -> list[str]:
    if only is None:
        return []
    items = [only] if isinstance(only, str) else list(only)
    return [p.strip() for item in items for p in str(item).split(",") if p.strip()]


def _matches(claim_id: str, pattern: str) -> bool:
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(claim_id, pattern)
    return pattern in claim_id


def select_claims(only: str | Iterable[str] | None = None) -> list[Claim]:
    """Claims whose id matches any pattern of `only` (glob if it has * ? [, else substring; comma-separated
    patterns allowed); all claims when `only` is None. ValueError listing the claim ids if none match."""
    claims = list(load_claims().values())
    patterns = _patterns(only)
    if not patterns:
        if only is not None:
            raise ValueError(f"empty --only pattern; claim ids are: {', '.join(c.id for c in claims)}")
        return claims
    chosen = [c for c in claims if any(_matches(c.id, p) for p in patterns)]
    if not chosen:
        raise ValueError(
            f"--only {','.join(patterns)!r} matches no claim; claim ids are: {', '.join(c.id for c in claims)}"
        )
    return chosen


def run_claim(claim: Claim, ctx: Context) -> ClaimResult:
    """claim.function(ctx, **params) with any exception (or a bad return value) turned into a FAIL."""
    try:
        result = claim.function(ctx, **claim.params_for(ctx.scale))
        if not isinstance(result, ClaimResult):
            raise TypeError(f"claim function returned {type(result).__name__}, not ClaimResult")
        return result
    except Exception as exc:  # a broken claim is a failed claim, not a crashed run
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return ClaimResult(
            {"error": f"{type(exc).__name__}: {exc}"},
            FAIL,
            f"error: {type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno})",
        )


def run_reproduce(
    scale: str = "quick",
    only: str | Iterable[str] | None = None,
    out_dir: str | Path = "headcount-report",
    progress: Callable[[str], None] = print_to_stderr,
) -> dict[str, Any]:
    """Run the selected claims at `scale`, write the report into out_dir, return the summary dict."""
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}: use one of {', '.join(SCALES)}")
    chosen = select_claims(only)
    out = Path(out_dir)
    clock = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    ctx = Context(scale=scale, progress=progress, results_db=str(out / RESULTS_DB))
    results: dict[str, ClaimResult] = {}
    rows = []
    for i, claim in enumerate(chosen, 1):
        progress(f"[{i}/{len(chosen)}] {claim.id} ({scale}) ...")
        start = time.perf_counter()
        result = run_claim(claim, ctx)
        seconds = time.perf_counter() - start
        progress(f"[{i}/{len(chosen)}] {claim.id}: {result.status} in {seconds:.1f} s — {result.detail}")
        results[claim.id] = result
        rows.append(
            {
                "id": claim.id,
                "paper": claim.paper,
                "source": claim.source,
                "statement": claim.statement,
                "measured": jsonable(result.measured),
                "status": result.status,
                "detail": result.detail,
                "seconds": round(seconds, 2),
                "module": claim.module,
            }
        )
    passed = sum(r["status"] == PASS for r in rows)
    summary: dict[str, Any] = {
        "claims": rows,
        "passed": passed,
        "failed": len(rows) - passed,
        "scale": scale,
        "wall_seconds": round(time.perf_counter() - clock, 2),
        "out_dir": str(out.resolve()),
        "certificates": {"computed": ctx.misses, "reused": ctx.hits},
        "machine": machine_info(),
    }
    render_report(summary, results, out)
    progress(
        f"{passed} passed, {len(rows) - passed} failed in {summary['wall_seconds']:.1f} s; report in {out}"
    )
    return summary
