"""The two kinds of error headcount raises on purpose.

InputError: input the user can fix (a size out of range, a malformed file, an unknown option). The
library's own checks raise it, so the Python API and the CLI refuse the same things with the same
words; the CLI prints it on one line and exits 2. It is a ValueError, so callers that catch
ValueError keep working.

The library names the parameter at fault as Python spells it, marked with `param("n")`: from Python
the message reads "n must be ≥ 2, got 1" (and `err.param == "n"`); the command line's one error
boundary (headcount.cli) renders the same message with each marked name spelled as its flag
(`err.render(flag)`). No library module spells a flag itself.

InternalError: the code contradicted itself — a verifier found a counterexample its own exact check
does not confirm, say. That is a bug in headcount, never a verdict: the CLI prints it on one line
and exits 1, and no partial result is reported as proven.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# A marked parameter name: between two private-use characters no message otherwise holds (neither is
# whitespace nor a line break, so splitting or stripping a message keeps the marks whole).
_OPEN, _CLOSE = "\ue000", "\ue001"
_MARKED = re.compile(f"{_OPEN}([A-Za-z_][A-Za-z0-9_]*){_CLOSE}")


def param(name: str) -> str:
    """`name` (a Python parameter name) marked inside an InputError message: shown as itself from
    Python and as its flag on the command line (InputError.render)."""
    return f"{_OPEN}{name}{_CLOSE}" if _MARKED.fullmatch(f"{_OPEN}{name}{_CLOSE}") else name


def plain(text: str) -> str:
    """`text` with every marked parameter name shown as itself."""
    return _MARKED.sub(r"\1", text)


class NamesParameters:
    """An error whose message may mark parameter names (param): str() shows them as Python names,
    `render(spell)` as `spell` spells them (the command line: its flags). `param` is the parameter
    at fault (the first one the message marks, or the one given), None where the fault is not one
    parameter's (a malformed file, say); `raw` keeps the marks, for a caller that adds context to
    the message and raises it again (`InputError(f"{path}: {err.raw}")`)."""

    def __init__(self, message: str, *, param: str | None = None):
        super().__init__(message)
        self.raw = message
        self.params = tuple(_MARKED.findall(message))
        self.param = param if param is not None else (self.params[0] if self.params else None)

    def __str__(self) -> str:
        return plain(self.raw)

    def __reduce__(self):  # pickled across processes (sweep workers) with its marks and its param
        return (type(self), (self.raw,), {"param": self.param})

    def render(self, spell: Callable[[str], str]) -> str:
        """The message with each marked parameter name replaced by `spell(name)` (the CLI: its
        flag)."""
        return _MARKED.sub(lambda m: spell(m.group(1)), self.raw)


class InputError(NamesParameters, ValueError):
    """Input the user can fix; the message says what is wrong and what is allowed, on one line,
    naming the parameter at fault (NamesParameters)."""


class InternalError(RuntimeError):
    """headcount contradicted itself; the message says where. Report it as a bug."""
