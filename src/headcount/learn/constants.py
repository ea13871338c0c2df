"""Names the learning code, its CLI and the report share, each defined here once.

TASKS: the tasks the default sweep runner (train.run_config) trains; "khop" is induction with the
hop count as the first token. SCALES: the sizes of the experiments (and of the report). DEFAULT_DB:
the results database `headcount experiment` uses when none is given.
"""

from __future__ import annotations

TASKS: tuple[str, ...] = ("induction", "khop", "minmax", "boolean")
SCALES: tuple[str, ...] = ("quick", "full")
DEFAULT_DB = "headcount-results.sqlite"

__all__ = ["DEFAULT_DB", "SCALES", "TASKS"]
