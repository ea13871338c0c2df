"""How predictions score against the induction task's answers (induction/task.py's
induction_targets): errors and accuracies counted apart on ⊥ and on token target positions."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from headcount.common.errors import InputError
from headcount.core.model import BOTTOM

__all__ = ["PositionMetrics", "induction_metrics"]


@dataclass(frozen=True)
class PositionMetrics:
    """Predictions against targets, counted separately on ⊥ and non-⊥ (token) target positions:
    accuracy is on token positions, accuracy_bottom on ⊥ positions (1.0 where there are none);
    first_error is the (row, position) of the first wrong prediction in row-major order, or None."""

    positions: int
    bottom_positions: int
    token_positions: int
    errors: int
    errors_bottom: int
    errors_token: int
    accuracy: float
    accuracy_bottom: float
    first_error: tuple[int, int] | None

    def to_json(self) -> dict[str, Any]:
        """The fields in order (first_error a (row, position) tuple or None)."""
        return asdict(self)


def induction_metrics(predicted, target) -> PositionMetrics:
    """Error counts and accuracies of `predicted` against `target` (same shape, 1-D or 2-D [batch
    n]; InputError otherwise), reported separately on ⊥ and non-⊥ target positions."""
    pred = np.asarray(predicted, dtype=np.int64)
    targ = np.asarray(target, dtype=np.int64)
    if pred.shape != targ.shape:
        raise InputError(f"shape mismatch: predicted {pred.shape} vs target {targ.shape}")
    if targ.ndim == 1:
        pred, targ = pred.reshape(1, -1), targ.reshape(1, -1)
    elif targ.ndim != 2:
        raise InputError(f"expected 1-D or 2-D arrays, got shape {targ.shape}")
    is_bottom = targ == BOTTOM
    wrong = pred != targ
    bottom_positions = int(is_bottom.sum())
    token_positions = int(targ.size - bottom_positions)
    errors_bottom = int((wrong & is_bottom).sum())
    errors_token = int((wrong & ~is_bottom).sum())
    flat_wrong = np.flatnonzero(wrong)
    first_error = None
    if flat_wrong.size:
        row, pos = divmod(int(flat_wrong[0]), targ.shape[1])
        first_error = (row, pos)
    accuracy = 1.0 if token_positions == 0 else (token_positions - errors_token) / token_positions
    accuracy_bottom = (
        1.0 if bottom_positions == 0 else (bottom_positions - errors_bottom) / bottom_positions
    )
    return PositionMetrics(
        positions=int(targ.size),
        bottom_positions=bottom_positions,
        token_positions=token_positions,
        errors=errors_bottom + errors_token,
        errors_bottom=errors_bottom,
        errors_token=errors_token,
        accuracy=accuracy,
        accuracy_bottom=accuracy_bottom,
        first_error=first_error,
    )
