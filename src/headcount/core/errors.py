"""Errors that are not the user's fault.

An InternalError means the code contradicted itself — a verifier found a counterexample its own exact
check does not confirm, say. That is a bug in headcount, never a verdict: the CLI prints it on one line
and exits 1 (bad input is ValueError → exit 2), and no partial result is reported as proven.
"""

from __future__ import annotations


class InternalError(RuntimeError):
    """headcount contradicted itself; the message says where. Report it as a bug."""
