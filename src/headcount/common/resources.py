"""The one resource guard: before any work, a command estimates the memory (and, where it can, the
work) its arguments imply, and refuses beyond a limit with the estimate and the flag that raises it.

    check_memory(bytes_needed, f"induction construct {param('layers')} 2 at n=10^9")   # InputError
    beyond check_work(operations, limit, "minmax certify at M=10^6", "multiply-adds", param("M"))

The memory limit is half of this machine's physical memory by default; the parameter max_memory (the
CLI takes it on every command; e.g. 8G, 512M, 2T or a byte count) or the environment variable
HEADCOUNT_MAX_MEMORY sets it for one run. Parameters are named as common.errors.param marks them.
Estimates are of the largest arrays a command allocates (what dominates), stated in the message, so
a user can see why and decide. Work limits bound what would otherwise run for hours without a useful
answer (each names its own option); they are documented beside the options they bound.
"""

from __future__ import annotations

import contextvars
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

from headcount.common.errors import InputError, param

ENV_MAX_MEMORY = "HEADCOUNT_MAX_MEMORY"
DEFAULT_FRACTION = 0.5  # of physical memory: leaves room for the OS, the interpreter and other work
_UNITS = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}
_limit: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "headcount_max_memory", default=None
)


def physical_memory() -> int:
    """Bytes of physical memory of this machine (8 GiB when the OS does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def parse_size(text: str, name: str = param("max_memory")) -> int:
    """'8G', '512M', '2T', '1.5G', '1000000' → bytes (binary units); InputError (naming the option
    or environment variable `name` it came from) otherwise."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([BKMGTP]?)(?:I?B)?\s*", str(text).upper())
    if not match or len(match.group(1)) > 20:
        raise InputError(f"{name} {text!r}: give a size such as 8G, 512M or 2T (binary units)")
    size = int(float(match.group(1)) * _UNITS[match.group(2)])
    if size < 2**20:
        raise InputError(f"{name} {text!r}: give at least 1M")
    return size


def memory_limit() -> int:
    """The limit in force: max_memory (set_memory_limit), else HEADCOUNT_MAX_MEMORY, else the
    default."""
    chosen = _limit.get()
    if chosen is not None:
        return chosen
    env = os.environ.get(ENV_MAX_MEMORY)
    if env:
        return parse_size(env, ENV_MAX_MEMORY)
    return int(physical_memory() * DEFAULT_FRACTION)


def set_memory_limit(size: str | int | None) -> None:
    """Set the limit for this context (None: back to the default)."""
    _limit.set(None if size is None else (size if isinstance(size, int) else parse_size(size)))


@contextmanager
def memory_limit_of(size: str | int | None) -> Iterator[None]:
    """The limit `size` inside the block (tests, library callers)."""
    token = _limit.set(
        None if size is None else (size if isinstance(size, int) else parse_size(size))
    )
    try:
        yield
    finally:
        _limit.reset(token)


def human_bytes(size: float) -> str:
    """1536 → '1.5 KiB'; sizes beyond any unit stay readable ('1.6e+18 B' is never printed)."""
    for unit, scale in (
        ("EiB", 2**60),
        ("PiB", 2**50),
        ("TiB", 2**40),
        ("GiB", 2**30),
        ("MiB", 2**20),
    ):
        if size >= scale:
            return (
                f"{size / scale:.3g} {unit}" if size < 1024 * 2**60 else f"{size / 2**60:.3g} EiB"
            )
    return f"{size / 2**10:.3g} KiB" if size >= 2**10 else f"{int(size)} B"


def check_memory(bytes_needed: float, what: str) -> None:
    """InputError when `what` would need more than the memory limit (the estimate may be a float:
    sizes from huge arguments are estimated without overflowing)."""
    limit = memory_limit()
    if bytes_needed > limit:
        raise InputError(
            f"{what} needs about {human_bytes(bytes_needed)} of memory; the limit is "
            f"{human_bytes(limit)} "
            f"(raise it with {param('max_memory')} SIZE or {ENV_MAX_MEMORY})"
        )


def check_work(amount: float, limit: float, what: str, unit: str, option: str) -> None:
    """InputError when `what` implies more than `limit` units of work: the message names the bound
    and the option that sets the amount, marked with common.errors.param (max_memory does not raise
    them)."""
    if amount > limit:
        raise InputError(
            f"{what} means about {amount:.3g} {unit}; allowed up to {limit:.3g} (lower {option})"
        )
