"""Work counters of the evaluation passes' shortcuts: how often each one ran and how often it
declined.

The benchmarks report them (how much work a shortcut saved) and the soundness suite reads them (a
hostile family must reach the shortcut it was built for, tests/soundness/test_fast_paths.py). Counts
are per process, since it started or the counter's last reset; chunk threads add to them under one
lock.
"""

from __future__ import annotations

import threading


class Counters:
    """Named integer counts, thread-safe: add(**amounts), snapshot(), reset()."""

    def __init__(self, *names: str):
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(names, 0)

    def add(self, **amounts: int) -> None:
        with self._lock:
            for key, amount in amounts.items():
                self._counts[key] += amount

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def reset(self) -> None:
        with self._lock:
            for key in self._counts:
                self._counts[key] = 0


# the blocked rigorous softmax bound (core.attention.blocked_bound.blocked_bound, on NumPy and
# torch): visible (query, key) pairs bounded, scores computed, keys exponentiated, blocks bounded
# densely or sparsely, and heads whose scores were shown tame from q and k (no scan of the score
# blocks) or were scanned
ATTENTION = Counters(
    "score_entries",
    "computed",
    "exponentiated",
    "dense_blocks",
    "sparse_blocks",
    "pruned_blocks",
    "tame_heads",
    "scanned_heads",
)
# the blocked float pass (core.attention.floats._sparse_softmax_values, and its torch twin): query
# rows summed over the keys of non-negligible weight, and those whose left-out keys were added back
FLOAT = Counters("rows", "rows_redone", "pruned_rows")
# tie settling in the bounds (core.passes.bounds.settle_ties): head-output rows rounded exactly, and
# grid values among them that float64 cannot hold (kept as boxes of radius > 0), and rows whose far
# keys were bounded as one ball (core.passes.head_rounding._far_keys_ball)
TIES = Counters("rows_settled", "values_inexact", "far_balls")
