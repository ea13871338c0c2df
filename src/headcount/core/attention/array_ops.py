"""The array operations the rigorous softmax bound needs beyond the array API standard, once for
NumPy arrays and once for torch tensors.

core.attention.softmax_bound writes the bound once, against the array API (`ops.xp`, the
array_api_compat namespace of its arrays) and the primitives here: in-place updates, scatter,
nonzero, bincount, gathers, row-wise dot products and weighted sums, the causal diagonal, moving a
NumPy array to the arrays' device. No mathematics lives here: each primitive is one or two library
calls, and every rounding one makes (the order of a sum) is covered by the bound's γ_n factors.
torch is imported only when a tensor arrives.
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import TYPE_CHECKING, Any

import array_api_compat
import numpy as np

from headcount.core.attention.blocks import mask_diagonal

if TYPE_CHECKING:
    import torch


class NumpyOps:
    """The primitives on NumPy arrays (the CPU)."""

    xp = array_api_compat.array_namespace(np.empty(0))

    @staticmethod
    def quiet() -> contextlib.AbstractContextManager:
        """Overflow and invalid operations yield ±inf and NaN silently (the bound looks at them
        itself)."""
        return np.errstate(invalid="ignore", over="ignore")

    @staticmethod
    def asarray(a: np.ndarray, like: np.ndarray) -> np.ndarray:
        """A NumPy array `a` where `like` lives (here: itself, no copy)."""
        return a

    @staticmethod
    def expm1_(x: np.ndarray) -> np.ndarray:
        return np.expm1(x, out=x)

    @staticmethod
    def maximum_(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.maximum(a, b, out=a)

    @staticmethod
    def minimum_(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.minimum(a, b, out=a)

    @staticmethod
    def fill_where_(a: np.ndarray, where: np.ndarray, value: float) -> np.ndarray:
        """a[where] = value, `where` broadcasting against a."""
        np.copyto(a, value, where=where)
        return a

    @staticmethod
    def scatter_(a: np.ndarray, index: tuple | np.ndarray, values: Any) -> None:
        a[index] = values

    @staticmethod
    def flat_nonzero(mask: np.ndarray) -> np.ndarray:
        """The indices of the True entries of `mask` flattened, in increasing order."""
        return np.flatnonzero(mask)

    @staticmethod
    def bincount(x: np.ndarray, length: int) -> np.ndarray:
        return np.bincount(x, minlength=length)

    @staticmethod
    def take_rows(a: np.ndarray, index: np.ndarray) -> np.ndarray:
        """a[index] along the first axis: [index.shape .. a.shape[1:]]."""
        return np.take(a, index, axis=0)

    @staticmethod
    def row_dots(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Σ_d a_cd b_cd [c] of a, b [c d]."""
        return np.einsum("cd,cd->c", a, b)

    @staticmethod
    def weighted_rows(w: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Σ_m w_rm x_rmd [r d] of w [r m], x [r m d]."""
        return np.einsum("rm,rmd->rd", w, x)

    @staticmethod
    def mask_diagonal(scores: np.ndarray, start: int, stop: int) -> None:
        """blocks.mask_diagonal: −inf where key > query in the block's square of keys
        start..stop−1."""
        mask_diagonal(scores, start, stop)


NUMPY_OPS = NumpyOps()


class TorchOps:
    """The primitives on torch tensors (any device)."""

    def __init__(self):
        import torch

        self.torch = torch
        self.xp = array_api_compat.array_namespace(torch.empty(0))

    @staticmethod
    def quiet() -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()  # torch never warns about ±inf and NaN

    def asarray(self, a: np.ndarray, like: torch.Tensor) -> torch.Tensor:
        return self.torch.from_numpy(np.ascontiguousarray(a)).to(like.device)

    @staticmethod
    def expm1_(x: torch.Tensor) -> torch.Tensor:
        return x.expm1_()

    def maximum_(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.torch.maximum(a, b, out=a)

    def minimum_(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.torch.minimum(a, b, out=a)

    @staticmethod
    def fill_where_(a: torch.Tensor, where: torch.Tensor, value: float) -> torch.Tensor:
        return a.masked_fill_(where, value)

    @staticmethod
    def scatter_(a: torch.Tensor, index: tuple | torch.Tensor, values: Any) -> None:
        a[index] = values

    @staticmethod
    def flat_nonzero(mask: torch.Tensor) -> torch.Tensor:
        return mask.reshape(-1).nonzero().squeeze(1)  # sorted (documented)

    def bincount(self, x: torch.Tensor, length: int) -> torch.Tensor:
        return self.torch.bincount(x, minlength=length)

    @staticmethod
    def take_rows(a: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return a[index]

    @staticmethod
    def row_dots(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a * b).sum(dim=-1)

    @staticmethod
    def weighted_rows(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return (w[:, None, :] @ x)[:, 0]

    @staticmethod
    def mask_diagonal(scores: torch.Tensor, start: int, stop: int) -> None:
        scores[..., start:stop].masked_fill_(hidden(stop - start, scores.device), -math.inf)


@functools.lru_cache(maxsize=16)
def hidden(size: int, device: torch.device) -> torch.Tensor:
    """[size size] True above the diagonal (the keys a causal block's square hides); only ever
    read."""
    import torch

    return torch.ones(size, size, dtype=torch.bool, device=device).triu_(1)


@functools.cache
def torch_ops() -> TorchOps:
    """The torch primitives (imports torch: call it only when a tensor is at hand)."""
    return TorchOps()


def array_ops(x) -> NumpyOps | TorchOps:
    """The primitives for arrays of x's kind: NumPy arrays or torch tensors."""
    return torch_ops() if array_api_compat.is_torch_array(x) else NUMPY_OPS
