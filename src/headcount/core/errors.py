"""The two kinds of error headcount raises on purpose.

InputError: input the user can fix (a size out of range, a malformed file, an unknown option). The
library's own checks raise it, so the Python API and the CLI refuse the same things with the same words;
the CLI prints it on one line and exits 2. It is a ValueError, so callers that catch ValueError keep working.

InternalError: the code contradicted itself — a verifier found a counterexample its own exact check does
not confirm, say. That is a bug in headcount, never a verdict: the CLI prints it on one line and exits 1,
and no partial result is reported as proven.
"""

from __future__ import annotations


class InputError(ValueError):
    """Input the user can fix; the message says what is wrong and what is allowed, on one line."""


class InternalError(RuntimeError):
    """headcount contradicted itself; the message says where. Report it as a bug."""
