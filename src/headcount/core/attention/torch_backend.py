"""The blocked attention kernels in PyTorch, on the CPU or a CUDA device (settings.use_backend).

``torch_attend`` is floats.blocked_attend in torch: the same algorithm step for step (query blocks
from blocks.query_blocks, masked keys never computed, the keys of non-negligible weight of a row
gathered sparsely, the dense fallback), with the same constants. ``torch_attention_bounds`` is
rigorous.blocked_attention_bounds: the very same code (core.attention.softmax_bound), run on
tensors. NumPy arrays go in and out: each call moves its inputs to the device once and its outputs
back once; everything in between is float64 on the device. Torch ops are thread-safe and nothing
global is set, so the chunk threads of core.certify.evaluate may share a device.

The rigorous pass rests on the assumptions core.passes.bounds states, and every one holds here:
float64 with round to nearest and gradual underflow (checked on the device: a tie, a subnormal
product), exp and expm1 within LIBM_ULPS ulp (checked against Arb balls on the points of
rigorous.check_libm, once per process and device; a device that fails gets InternalError, never a
certificate), sums in any order (a BLAS kernel's blocking, a GPU's atomics: covered by the γ_n
factors) and dot products with or without FMA (an FMA only removes roundings). torch is imported on
first use: it loads slowly, and NumPy users never need it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from headcount.common.errors import InputError, InternalError, param
from headcount.common.validate import check_choice
from headcount.core.attention.array_ops import torch_ops
from headcount.core.attention.blocked_bound import blocked_bound
from headcount.core.attention.blocks import (
    EXP_UNDERFLOW,
    LEFT_OUT_SHARE,
    NEGLIGIBLE_BITS,
    dense_parts,
    negligible_cut,
    query_blocks,
)
from headcount.core.attention.blocks import SPARSE_SHARE as FLOAT_SPARSE_SHARE
from headcount.core.attention.counters import FLOAT
from headcount.core.attention.floats import blocked_attend, softmax_values
from headcount.core.attention.settings import BACKENDS, DEVICES, use_backend
from headcount.core.attention.softmax_bound import (
    LIBM_ULPS,
    arb_precision,
    check_values,
    libm_points,
)
from headcount.core.numbers import FLINT_LOCK, FLOAT64, Precision, U

if TYPE_CHECKING:
    import torch

NO_CUDA = "no CUDA device: torch.cuda.is_available() is false"


@contextlib.contextmanager
def attention_backend(backend: str, device: str) -> Iterator[None]:
    """use_backend(backend, device) for choices a user made: InputError for a name outside BACKENDS
    / DEVICES, for the device cuda with the NumPy kernels, and for cuda without a GPU."""
    check_choice("backend", backend, BACKENDS)
    check_choice("device", device, DEVICES)
    if device == "cuda":
        if backend != "torch":
            raise InputError(
                f"{param('device')} cuda needs {param('backend')} torch (the numpy kernels run on "
                "the cpu)"
            )
        _check_cuda()
    with use_backend(backend, device):
        yield


def _check_cuda() -> None:
    import torch

    if not torch.cuda.is_available():
        raise InputError(NO_CUDA)


def _device(device: str) -> str:
    """The device the dispatch names, checked: InputError for cuda without a GPU."""
    if device == "cuda":
        _check_cuda()
    return device


def _tensors(device: str, *arrays: np.ndarray) -> list[torch.Tensor]:
    """float64 tensors on `device` [batch pos d] (leading axes flattened): one copy each, never a
    view that shares memory with the caller's array (the kernels write into some of them)."""
    import torch

    out = []
    for a in arrays:
        a = np.array(a, dtype=np.float64, order="C", copy=True)
        out.append(torch.from_numpy(a.reshape((-1,) + a.shape[-2:])).to(device))
    return out


# --- the float pass
# ----------------------------------------------------------------------------------


def torch_attend(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: str | None,
    prec: Precision,
    scale: float = 1.0,
    device: str = "cpu",
) -> np.ndarray:
    """floats.blocked_attend on current_backend()'s device: softmax(scale·q kᵀ) v [batch query
    d_value] in query blocks, the keys of non-negligible weight of a block gathered
    (floats._sparse_softmax_values) unless more than blocks.SPARSE_SHARE of them are such. Every
    quantity is rounded as there, by other kernels (BLAS, torch's exp): the result agrees with
    floats.blocked_attend to the last bits. Modes that do not compute in float64 (float32, float16,
    bfloat16: prec.after_op rounds in NumPy) run floats.blocked_attend itself."""
    if prec.compute_dtype is not np.float64 or any(a.dtype != np.float64 for a in (q, k, v)):
        return blocked_attend(q, k, v, mask, prec, scale)
    import torch

    device = _device(device)
    check_torch_libm(device)  # warmed up and checked before its first kernel (_warm_up)
    tq, tk, tv = _tensors(device, q, k, v)
    n, keys_total = tq.shape[-2], tk.shape[-2]
    kT = tk.transpose(-1, -2)
    out = torch.empty(tq.shape[:-1] + tv.shape[-1:], dtype=torch.float64, device=device)
    v_max = torch.cummax(tv.abs(), dim=-2).values  # [batch key d_value]: max_j |v_j| over keys 0..j
    causal = mask == "causal"
    for block in query_blocks(n, causal, keys=keys_total):
        for start, stop, keys in dense_parts(*block, causal, tq.shape[0]):
            scores = tq[:, start:stop] @ kT[..., :keys]  # [batch block keys]
            if scale != 1.0:
                scores.mul_(scale)
            if causal:
                torch_ops().mask_diagonal(scores, start, stop)
            out[:, start:stop] = _softmax_values(scores, tv, keys, v_max[:, keys - 1])
    return out.cpu().numpy().reshape(q.shape[:-1] + v.shape[-1:])


def _softmax_values(
    scores: torch.Tensor, v: torch.Tensor, keys: int, v_max: torch.Tensor
) -> torch.Tensor:
    """floats._sparse_softmax_values, or floats.softmax_values where it declines: (Σ_j e^{s_j − max}
    v_j) / Σ_j e^{s_j − max} over the block's keys (`scores` consumed; v [batch keys_total d_value];
    v_max [batch d_value] max_j |v_jc| over the block's keys). The same rule for the keys left out:
    a row keeps them out only where they are negligible against its kept mass in every coordinate,
    else its left-out keys above exp's underflow are added back."""
    import torch

    batch, block, width = scores.shape
    top = scores.amax(dim=-1, keepdim=True)  # [batch block 1]
    if bool(top.abs().max() < 2.0**40) and bool(torch.isfinite(v_max).all()):  # (NaN fails too)
        cut = negligible_cut(width)
        keep = scores >= top + cut  # the keys of non-negligible weight, and a few more
        if int(torch.count_nonzero(keep)) <= FLOAT_SPARSE_SHARE * scores.numel():
            flat = keep.reshape(-1).nonzero().squeeze(1)
            row, key = flat // width, flat % width  # row: (batch, query) flattened
            weights = torch.exp(scores.reshape(-1)[flat] - top.reshape(-1)[row])
            v_flat = v.reshape(-1, v.shape[-1])
            total = torch.zeros(batch * block, dtype=scores.dtype, device=scores.device)
            total.index_add_(0, row, weights)
            values = v_flat[(row // block) * v.shape[-2] + key] * weights[:, None]
            summed = torch.zeros(
                batch * block, v.shape[-1], dtype=scores.dtype, device=scores.device
            )
            summed.index_add_(0, row, values)
            kept_mass = torch.zeros_like(summed).index_add_(0, row, values.abs_())
            left_out = (v_max * 2.0**-NEGLIGIBLE_BITS).repeat_interleave(
                block, dim=0
            )  # [row d_value]
            redo = (left_out > LEFT_OUT_SHARE * kept_mass).any(dim=-1).nonzero().squeeze(1)
            if len(redo):  # add back the left-out keys above underflow, on those rows only
                shifted = scores.reshape(-1, width)[redo] - top.reshape(-1, 1)[redo]  # [redo keys]
                back = (
                    ((shifted > EXP_UNDERFLOW) & (shifted < cut)).reshape(-1).nonzero().squeeze(1)
                )
                r, k = back // width, back % width
                w = torch.exp(shifted.reshape(-1)[back])
                total.index_add_(0, redo[r], w)
                summed.index_add_(
                    0, redo[r], v_flat[(redo[r] // block) * v.shape[-2] + k] * w[:, None]
                )
            FLOAT.add(rows=batch * block, rows_redone=len(redo))
            return (summed / total[:, None]).reshape(batch, block, v.shape[-1])
    if not bool(
        torch.isfinite(v_max).all()
    ):  # floats.softmax_values' rule for the keys the mask hides
        dense = softmax_values(scores.cpu().numpy(), v[:, :keys].cpu().numpy(), FLOAT64)
        return torch.from_numpy(dense).to(scores.device)
    weights = scores.sub_(top).exp_()
    return (weights @ v[:, :keys]) / weights.sum(dim=-1, keepdim=True)


# --- the rigorous pass
# -------------------------------------------------------------------------------


def torch_attention_bounds(q, k, v, mask: str, device: str = "cpu"):
    """rigorous.blocked_attention_bounds on current_backend()'s device: bounds (mid, rad) [batch
    query d_value] on softmax(q kᵀ) v for q, k, v given as (mid, rad) pairs of NumPy arrays [batch
    pos d], `mask` "causal" or "full". The same code (blocked_bound.blocked_bound) on float64
    tensors: the same blocks sparse or dense, the same near keys, the same work counts."""
    device = _device(device)
    check_torch_libm(device)
    host = tuple(
        tuple(a.reshape((-1,) + a.shape[-2:]) for a in pair) for pair in (q, k, v)
    )  # [batch pos d]
    box = tuple(tuple(_tensors(device, *pair)) for pair in (q, k, v))
    z_mid, z_rad = blocked_bound(host, box, mask)
    shape = q[0].shape[:-1] + v[0].shape[-1:]
    return z_mid.cpu().numpy().reshape(shape), z_rad.cpu().numpy().reshape(shape)


# --- the platform check
# ------------------------------------------------------------------------------

_checked: set[str] = set()


def check_torch_libm(device: str) -> None:
    """rigorous.check_libm for torch on `device` (once per process and device, under the flint
    lock): torch.exp and torch.expm1 within LIBM_ULPS ulp against Arb balls on the ranges the bounds
    use them on, by both of torch's CPU loops (contiguous, strided), and float64 arithmetic that
    rounds to nearest with gradual underflow. A device where any of it fails gets an InternalError,
    never a certificate."""
    import torch

    name = str(
        torch.device(device, torch.cuda.current_device())
        if device == "cuda"
        else torch.device(device)
    )
    with FLINT_LOCK:
        if name not in _checked:
            _warm_up(name)
            _check_arithmetic(name)
            _check_functions(name)
            _checked.add(name)


PARALLEL_SIZE = (
    1 << 18
)  # elements: well above torch's grain for its multithreaded elementwise loops


def _warm_up(device: str) -> None:
    """One multithreaded torch.exp and torch.expm1 whose results are discarded. Measured (torch
    2.13, CPU, 2 threads): a process's first multithreaded float64 exp, run after NumPy's own thread
    pools have been busy, came back wrong by up to 3·10⁻⁹ relative in some runs, and every later
    call was right. The check below then tests the later calls, on the same multithreaded path as
    the kernels."""
    import torch

    x = -torch.rand(PARALLEL_SIZE, dtype=torch.float64, device=device)
    torch.exp(x)
    torch.expm1(x)


def _check_functions(device: str) -> None:
    import flint
    import torch

    with arb_precision():
        for fn, arb_fn, points in zip(
            (torch.exp, torch.expm1), (flint.arb.exp, flint.arb.expm1), libm_points()
        ):
            exact = [arb_fn(flint.arb(x)) for x in points.tolist()]
            x = torch.from_numpy(points).to(device)
            strided = torch.stack((x, x), dim=1)[
                :, 0
            ]  # not contiguous: the elementwise scalar loop
            for y in (fn(x), fn(strided)):
                check_values(
                    f"torch.{fn.__name__}", points, y.cpu().numpy(), exact, f" on {device}"
                )
            # the multithreaded loop the kernels run (PARALLEL_SIZE elements): every copy of each
            # point within LIBM_ULPS ulp of its Arb value (rounded to a float: half an ulp more)
            nearest = np.array([float(ball.mid()) for ball in exact])
            tiled = (
                fn(x.repeat(-(-PARALLEL_SIZE // len(points))))
                .cpu()
                .numpy()
                .reshape(-1, len(points))
            )
            error = np.abs(tiled - nearest)
            if not np.all(error <= (LIBM_ULPS + 0.5) * U * np.abs(nearest) * (1 + 1e-12)):
                row, col = np.argwhere(error > (LIBM_ULPS + 0.5) * U * np.abs(nearest))[0]
                raise InternalError(
                    f"torch.{fn.__name__}({points[col]!r}) = {tiled[row, col]!r} on {device} "
                    "(multithreaded) "
                    f"is off by more than {LIBM_ULPS} ulp: the rigorous bounds assume a libm at "
                    "least that "
                    "accurate"
                )


def _check_arithmetic(device: str) -> None:
    """Round to nearest (ties to even, both signs) and gradual underflow (a subnormal product, a
    matrix product of subnormals), on a tensor large enough for torch's parallel loops."""
    import torch

    size = 1 << 16
    ones = torch.ones(size, dtype=torch.float64, device=device)
    checks = {
        "1 + u rounds to 1 (ties to even)": (ones + U, 1.0),
        "1 + 1.5u rounds to 1 + 2u": (ones + 1.5 * U, 1.0 + 2 * U),
        "−1 − 1.5u rounds to −1 − 2u": (-ones - 1.5 * U, -1.0 - 2 * U),
        # scaled back up before the comparison: flushed inputs (DAZ) would compare equal to 0
        # otherwise
        "2^-1000 · 2^-60 is the subnormal 2^-1060": (
            ones * 2.0**-1000 * 2.0**-60 * 2.0**60,
            2.0**-1000,
        ),
        "a dot product of subnormal products is exact": (
            ((ones[:64] * 2.0**-1000)[None, :] @ (ones[:64] * 2.0**-60)[:, None]) * 2.0**60,
            64 * 2.0**-1000,
        ),
    }
    for what, (got, want) in checks.items():
        if not bool((got == want).all()):
            raise InternalError(
                f"float64 on {device} fails the rigorous bounds' assumptions: {what} does not hold"
            )
