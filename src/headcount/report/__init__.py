"""Reproduce: re-derive every claim of the papers and write a report (summary.json, report.md,
report.html).

Entry point: :func:`headcount.report.reproduce.run_reproduce` (also importable from here; loaded
lazily so importing the package does not pull in matplotlib). Claims live in per-scenario modules
registered with :func:`headcount.report.claims.claim`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["run_reproduce"]


def __getattr__(name: str) -> Any:
    if name == "run_reproduce":
        from headcount.report.reproduce import run_reproduce

        return run_reproduce
    raise AttributeError(name)
