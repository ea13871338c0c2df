"""What a sweep refuses: all of it input the user can fix, so every class is an InputError (exit
2)."""

from __future__ import annotations

from headcount.common.errors import InputError

RAY_MISSING = "backend 'ray' needs the optional extra: pip install 'headcount[ray]'"


class SweepError(InputError):
    """A sweep that cannot run as asked (the message says what is wrong and what is allowed)."""


class SpecError(SweepError):
    """A sweep spec (TOML file, dict, or the command line's options) that is not valid."""


class BackendUnavailableError(SweepError):
    """The requested backend is not installed (e.g. Ray without the extra)."""


class RayAddressError(SweepError):
    """A Ray address that is not one, or no Ray cluster this process can connect to there
    (unreachable, not Ray, refusing its token): the message names the parameter `address` (or
    RAY_ADDRESS, where it came from there) and says what to fix."""
