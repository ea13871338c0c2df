"""Shared by the PyTorch models: token input checks and float64 NumPy copies of parameters."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from headcount.common.errors import InputError


def _integer_tensor(tokens: Any) -> torch.Tensor:
    t = tokens if isinstance(tokens, torch.Tensor) else torch.as_tensor(np.asarray(tokens))
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise InputError(f"tokens must be integers, got dtype {t.dtype}")
    return t


def as_tokens(tokens: Any, low: int, high: int, n_max: int | None = None) -> torch.Tensor:
    """tokens as a [batch pos] int64 tensor with entries in low..high (InputError saying what is
    wrong)."""
    t = _integer_tensor(tokens)
    if t.ndim == 1:
        t = t[None, :]
    if t.ndim != 2 or t.shape[1] < 1:
        raise InputError(f"tokens must have shape [batch pos] with pos ≥ 1, got {tuple(t.shape)}")
    if n_max is not None and t.shape[1] > n_max:
        raise InputError(f"input length {t.shape[1]} exceeds the model's context length {n_max}")
    if t.numel() and (int(t.min()) < low or int(t.max()) > high):
        raise InputError(f"tokens must lie in {low}..{high}")
    return t.long()


def to_numpy(p: torch.Tensor) -> np.ndarray:
    """A float64 NumPy copy of a parameter or buffer (detached, on the CPU)."""
    return p.detach().cpu().double().numpy().copy()
