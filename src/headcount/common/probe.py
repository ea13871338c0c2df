"""What ran a result: package versions (from metadata — nothing is imported) and the machine, probed
once per process. Sweeps store it with every run; the report prints it."""

from __future__ import annotations

import datetime as _dt
import os
import platform
from functools import cache
from importlib import metadata
from typing import Any

PACKAGES = ("headcount", "numpy", "scipy", "torch", "python-flint", "matplotlib")


def package_version(dist: str) -> str | None:
    """The installed version of distribution `dist`, or None when it is not installed."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@cache
def _machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        **{dist.replace("-", "_"): package_version(dist) for dist in PACKAGES},
        "platform": platform.platform(),
        "system": f"{platform.system()} {platform.machine()}",
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "host": platform.node(),
    }


def machine_info(with_date: bool = False) -> dict[str, Any]:
    """Versions and machine (a fresh dict each call); `with_date` adds the UTC time of the call."""
    info = dict(_machine())
    if with_date:
        info["date"] = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
    return info
