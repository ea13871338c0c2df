"""Output symbols shared by every scenario.

Token ids are the integers 0..S-1; the "no answer" symbol ⊥ is stored as BOTTOM (-1) in integer
arrays and printed as "⊥"; an imported model's output that is none of the task's labels is OTHER
(-2).
"""

from __future__ import annotations

import numpy as np

BOTTOM = -1
BOTTOM_TEXT = "⊥"
OTHER = (
    -2
)  # an output outside the task's labels (an imported model's vocabulary id that maps to none)
OTHER_TEXT = "other"


def token_text(token: int) -> str:
    """How a token, ⊥ or an output outside the task's labels is printed on the command line and in
    JSON."""
    token = int(token)
    return BOTTOM_TEXT if token == BOTTOM else OTHER_TEXT if token == OTHER else str(token)


def check_tokens(model, tokens: np.ndarray) -> np.ndarray:
    """A [batch pos] int64 array of valid tokens for `model` (anything with n_ctx and alphabet);
    ValueError saying what is wrong."""
    tokens = np.asarray(tokens)
    if tokens.size and not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"tokens must be integers, got dtype {tokens.dtype}")
    if tokens.ndim == 1:
        tokens = tokens[None, :]
    if tokens.ndim != 2 or tokens.shape[1] < 1:
        raise ValueError(f"tokens must have shape [batch pos], got {tokens.shape}")
    if tokens.shape[1] > model.n_ctx:
        raise ValueError(
            f"input length {tokens.shape[1]} exceeds the model's context length {model.n_ctx}"
        )
    if tokens.size and (tokens.min() < 0 or tokens.max() >= model.alphabet):
        raise ValueError(f"tokens must lie in 0..{model.alphabet - 1}")
    return tokens.astype(np.int64, copy=False)
