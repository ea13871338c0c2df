"""What a sweep refuses: all of it input the user can fix, so every class is an InputError (exit
2)."""

from __future__ import annotations

from headcount.common.errors import InputError
from headcount.common.ray_connect import (  # noqa: F401 — re-exported: shared with certification
    RAY_MISSING,
    BackendUnavailableError,
    RayAddressError,
)


class SweepError(InputError):
    """A sweep that cannot run as asked (the message says what is wrong and what is allowed)."""


class SpecError(SweepError):
    """A sweep spec (TOML file, dict, or the command line's options) that is not valid."""
