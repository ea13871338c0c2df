"""The blocked attention kernels in PyTorch, on the CPU or a CUDA device (core.attention.settings.use_backend).

``torch_attend`` is forward.attend and ``torch_attention_bounds`` is softmax_bounds.attention_bounds, the
same algorithms step for step (query blocks from forward.query_blocks, masked keys never computed, the
near keys of a row gathered sparsely and the far ones bounded as a group, the dense fallback), with the
same constants, imported from those modules. NumPy arrays go in and out: each call moves its inputs to the
device once and its outputs back once; everything in between is float64 on the device. Torch ops are
thread-safe and nothing global is set, so evaluate._map_chunks' threads may share a device.

The rigorous pass rests on the assumptions core.passes.bounds states, and every one holds here: float64 with
round to nearest and gradual underflow (checked on the device: a tie, a subnormal product), exp and expm1
within LIBM_ULPS ulp (checked against Arb balls like softmax_bounds.check_libm, once per process and
device; a device that fails gets InternalError, never a certificate), sums in any order (a BLAS kernel's
blocking, a GPU's atomics: covered by the γ_n factors) and dot products with or without FMA (an FMA only
removes roundings). torch is imported on first use: it loads slowly, and NumPy users never need it.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from headcount.common.errors import InputError, InternalError
from headcount.common.validate import check_choice
from headcount.core.attention.blocks import (
    EXP_UNDERFLOW,
    LEFT_OUT_SHARE,
    NEGLIGIBLE_BITS,
    negligible_cut,
    query_blocks,
)
from headcount.core.attention.blocks import SPARSE_SHARE as FLOAT_SPARSE_SHARE
from headcount.core.attention.counters import ATTENTION, FLOAT
from headcount.core.attention.floats import blocked_attend, softmax_values
from headcount.core.attention.rigorous import (
    FAR,
    FAR_BLOCKED,
    FAR_WEIGHT,
    LIBM_ULPS,
    RHO_CAP,
    SPARSE_SHARE,
    query_slack,
    scores_tame,
)
from headcount.core.attention.settings import BACKENDS, DEVICES, use_backend
from headcount.core.numbers import FLINT_LOCK, FLOAT64, SAFETY, TINY, Precision, U, exact_dot, gamma

if TYPE_CHECKING:
    import torch

NO_CUDA = "no CUDA device: torch.cuda.is_available() is false"


@contextlib.contextmanager
def attention_backend(backend: str, device: str) -> Iterator[None]:
    """use_backend(backend, device) for input a user gave (`--backend`, `--device`): InputError for a name
    outside BACKENDS / DEVICES, for `--device cuda` with the NumPy kernels, and for cuda without a GPU."""
    check_choice("--backend", backend, BACKENDS)
    check_choice("--device", device, DEVICES)
    if device == "cuda":
        if backend != "torch":
            raise InputError("--device cuda needs --backend torch (the numpy kernels run on the cpu)")
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
    """float64 tensors on `device` [batch pos d] (leading axes flattened): one copy each, never a view that
    shares memory with the caller's array (the kernels write into some of them)."""
    import torch

    out = []
    for a in arrays:
        a = np.array(a, dtype=np.float64, order="C", copy=True)
        out.append(torch.from_numpy(a.reshape((-1,) + a.shape[-2:])).to(device))
    return out


@functools.lru_cache(maxsize=16)
def _hidden(size: int, device: torch.device) -> torch.Tensor:
    """[size size] True above the diagonal (the keys a causal block's square hides); only ever read."""
    import torch

    return torch.ones(size, size, dtype=torch.bool, device=device).triu_(1)


def _mask_diagonal(scores: torch.Tensor, start: int, stop: int) -> None:
    """forward.mask_diagonal: −inf where key > query in the block's square of keys start..stop−1."""
    scores[..., start:stop].masked_fill_(_hidden(stop - start, scores.device), -math.inf)


# --- the float pass ----------------------------------------------------------------------------------


def torch_attend(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: str | None,
    prec: Precision,
    scale: float = 1.0,
    device: str = "cpu",
) -> np.ndarray:
    """forward.attend on current_backend()'s device: softmax(scale·q kᵀ) v [batch query d_value] in query
    blocks, the keys of non-negligible weight of a block gathered (forward._sparse_softmax_values) unless
    more than forward.SPARSE_SHARE of them are such. Every quantity is rounded as there, by other kernels
    (BLAS, torch's exp): the result agrees with forward.attend to the last bits. Modes that do not compute
    in float64 (float32, float16, bfloat16: prec.after_op rounds in NumPy) run forward.attend's NumPy
    kernels."""
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
    for start, stop, keys in query_blocks(n, mask == "causal", keys=keys_total):
        scores = tq[:, start:stop] @ kT[..., :keys]  # [batch block keys]
        if scale != 1.0:
            scores.mul_(scale)
        if mask == "causal":
            _mask_diagonal(scores, start, stop)
        out[:, start:stop] = _softmax_values(scores, tv, keys, v_max[:, keys - 1])
    return out.cpu().numpy().reshape(q.shape[:-1] + v.shape[-1:])


def _softmax_values(scores: torch.Tensor, v: torch.Tensor, keys: int, v_max: torch.Tensor) -> torch.Tensor:
    """forward._sparse_softmax_values, or forward.softmax_values where it declines: (Σ_j e^{s_j − max}
    v_j) / Σ_j e^{s_j − max} over the block's keys (`scores` consumed; v [batch keys_total d_value]; v_max
    [batch d_value] max_j |v_jc| over the block's keys). The same rule for the keys left out: a row keeps
    them out only where they are negligible against its kept mass in every coordinate, else its left-out
    keys above exp's underflow are added back."""
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
            summed = torch.zeros(batch * block, v.shape[-1], dtype=scores.dtype, device=scores.device)
            summed.index_add_(0, row, values)
            kept_mass = torch.zeros_like(summed).index_add_(0, row, values.abs_())
            left_out = (v_max * 2.0**-NEGLIGIBLE_BITS).repeat_interleave(block, dim=0)  # [row d_value]
            redo = (left_out > LEFT_OUT_SHARE * kept_mass).any(dim=-1).nonzero().squeeze(1)
            if len(redo):  # add back the left-out keys above underflow, on those rows only
                shifted = scores.reshape(-1, width)[redo] - top.reshape(-1, 1)[redo]  # [redo keys]
                back = ((shifted > EXP_UNDERFLOW) & (shifted < cut)).reshape(-1).nonzero().squeeze(1)
                r, k = back // width, back % width
                w = torch.exp(shifted.reshape(-1)[back])
                total.index_add_(0, redo[r], w)
                summed.index_add_(0, redo[r], v_flat[(redo[r] // block) * v.shape[-2] + k] * w[:, None])
            FLOAT.add(rows=batch * block, rows_redone=len(redo))
            return (summed / total[:, None]).reshape(batch, block, v.shape[-1])
    if not bool(torch.isfinite(v_max).all()):  # forward.softmax_values' rule for the keys the mask hides
        dense = softmax_values(scores.cpu().numpy(), v[:, :keys].cpu().numpy(), FLOAT64)
        return torch.from_numpy(dense).to(scores.device)
    weights = scores.sub_(top).exp_()
    return (weights @ v[:, :keys]) / weights.sum(dim=-1, keepdim=True)


# --- the rigorous pass -------------------------------------------------------------------------------


def torch_attention_bounds(q, k, v, mask: str, device: str = "cpu"):
    """softmax_bounds.attention_bounds on current_backend()'s device: bounds (mid, rad) [batch query d_value]
    on softmax(q kᵀ) v for q, k, v given as (mid, rad) pairs of NumPy arrays [batch pos d], `mask` "causal"
    or "full". The same bound, block by block (the sparse block with the far keys as a group; the dense
    bound of softmax_bounds.dense_attention_bounds where that declines), with the same work counts."""
    (qm, qr), (km, kr), (vm, vr) = q, k, v
    import torch

    device = _device(device)
    check_torch_libm(device)
    slack = query_slack(qm, qr, km, kr).reshape(-1, qm.shape[-2])  # [batch query]: R, in NumPy (O(n·d))
    v_max = (np.abs(vm) + vr).max(axis=-2)  # [batch d_value]
    qm3, qr3, km3, kr3, vr3 = (a.reshape((-1,) + a.shape[-2:]) for a in (qm, qr, km, kr, vr))
    flags = _flags(qm3, qr3, km3, kr3, vr3)
    flags["tame"] = scores_tame(qm3, km3)
    ATTENTION.add(**{"tame_heads" if flags["tame"] else "scanned_heads": 1})
    tqm, tqr, tkm, tkr, tvm, tvr = _tensors(device, qm, qr, km, kr, vm, vr)
    box = ((tqm, tqr), (tkm, tkr), (tvm, tvr))
    t_v_max = torch.from_numpy(np.ascontiguousarray(v_max.reshape(-1, vm.shape[-1]))).to(device)
    batch, n = tqm.shape[:2]
    z_mid = torch.empty(batch, n, tvm.shape[-1], dtype=torch.float64, device=device)
    z_rad = torch.empty_like(z_mid)
    causal = mask == "causal"
    kmT = tkm.transpose(-1, -2)
    for start, stop, keys in query_blocks(n, causal, keys=tkm.shape[-2]):
        visible = (((start + 1 + stop) * (stop - start)) // 2 if causal else (stop - start) * keys) * batch
        s_hat = tqm[:, start:stop] @ kmT[..., :keys]  # [batch block key]
        block = None
        if np.all(slack[:, start:stop] <= RHO_CAP):
            slack_block = torch.from_numpy(np.ascontiguousarray(slack[:, start:stop])).to(device)
            block = _sparse_block(s_hat, box, t_v_max, slack_block, start, causal, flags)
        if block is None:
            rows = slice(start, stop)
            allowed = torch.ones(stop - start, keys, dtype=torch.bool, device=device)
            if causal:
                allowed = allowed.tril_(start)
            dense_flags = _flags(qm3[:, rows], qr3[:, rows], km3[:, :keys], kr3[:, :keys], vr3[:, :keys])
            block = _dense_bounds((tqm[:, rows], tqr[:, rows]), box, keys, allowed, dense_flags)
            ATTENTION.add(dense_blocks=1, exponentiated=visible, computed=visible)
        ATTENTION.add(score_entries=visible)
        z_mid[:, start:stop], z_rad[:, start:stop] = block
    shape = qm.shape[:-1] + vm.shape[-1:]
    return z_mid.cpu().numpy().reshape(shape), z_rad.cpu().numpy().reshape(shape)


def _flags(qm, qr, km, kr, vr) -> dict[str, bool]:
    """Which terms of ρ and of the radius can be nonzero, for NumPy [batch pos d] arrays: the scores are
    exact (interval.exact_dot), q, k or v have a radius."""
    exact = exact_dot(qm, np.swapaxes(km, -1, -2))
    return {"exact": exact, "qr": bool(qr.any()), "kr": bool(kr.any()), "vr": bool(vr.any())}


def _up(rad: torch.Tensor) -> torch.Tensor:
    """interval._up: inflate a computed radius (0 stays 0), NaN → +inf."""
    rad = rad * (1 + SAFETY) + (rad > 0).to(rad.dtype) * 1e-300
    return rad.masked_fill_(rad.isnan(), math.inf)


def weight_error(alpha: torch.Tensor, rho: torch.Tensor, theta) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax_bounds.weight_error (its docstring has the proof): (e, unbounded), e_j ≥ |α_j − α̂_j|;
    consumes `rho`."""
    import torch

    keys = alpha.shape[-1]
    grow, shrink = torch.expm1(rho), torch.expm1(rho.neg_())
    rel = 2 * (theta + gamma(keys + 6))
    b_plus = (alpha * grow).sum(dim=-1, keepdim=True) * (1 + rel)
    b_minus = (alpha * shrink).sum(dim=-1, keepdim=True) * (1 + rel)  # ≤ 0, now at least as negative
    unbounded = (1 + b_minus)[..., 0] < 0.5
    upper = grow.sub_(b_minus).div_(1 + b_minus)  # e^{ρ_j}/R⁻ − 1
    lower = shrink.neg_().add_(b_plus).div_(1 + b_plus)  # 1 − e^{-ρ_j}/R⁺
    kappa = torch.maximum(upper, lower)
    kappa *= 1 + gamma(8)
    kappa += theta
    kappa /= 1 - theta
    kappa *= (1 + SAFETY) * alpha
    return kappa, unbounded


def _dense_bounds(q, box, keys: int, allowed: torch.Tensor, flags: dict):
    """softmax_bounds.dense_attention_bounds (its docstring has the proof) for the query box q (mid, rad)
    [batch block d] over the first `keys` keys and values of `box`, `allowed` [block keys]."""
    import torch

    (qm, qr), (_, (km, kr), (vm, vr)) = q, box
    km, kr, vm, vr = km[:, :keys], kr[:, :keys], vm[:, :keys], vr[:, :keys]
    kmT, krT = km.transpose(-1, -2), kr.transpose(-1, -2)
    theta = gamma(allowed.sum(dim=-1, keepdim=True).to(torch.float64) + 2)  # [block 1]
    s_hat = (qm @ kmT).masked_fill_(~allowed, -math.inf)  # [batch block key]
    top = s_hat.amax(dim=-1, keepdim=True)
    s_hat -= top
    rho = s_hat.abs() * U  # ρ_j: the score box, the dot product's rounding, the subtraction, exp
    if not flags["exact"]:
        rho += gamma(qm.shape[-1] + 1) * (qm.abs() @ kmT.abs())
    if flags["kr"]:
        rho += qm.abs() @ krT
    if flags["qr"]:
        rho += qr @ (kmT.abs() + krT)
    rho *= 1 + SAFETY
    rho += 4.5 * U + 2.0**-1000
    near = (s_hat + rho >= FAR - 1) & allowed
    bad = ~torch.isfinite(top[..., 0]) | (allowed & ~torch.isfinite(rho)).any(dim=-1)
    bad |= (near & (rho > RHO_CAP)).any(dim=-1)  # [batch block]
    n_far = (allowed & ~near).sum(dim=-1, keepdim=True).to(torch.float64)  # [batch block 1]
    rho.masked_fill_(~near, 0.0)
    weights = s_hat.masked_fill_(~near, -math.inf).exp_()  # near keys: a normal float
    alpha = weights.div_(weights.sum(dim=-1, keepdim=True))
    kappa, too_wide = weight_error(alpha, rho, theta)
    bad |= too_wide
    abs_v = vm.abs()
    z_mid = alpha @ vm
    z_rad = kappa @ abs_v + gamma(keys + 2) * (alpha @ abs_v) + 3 * keys * TINY
    if flags["vr"]:
        z_rad += (alpha + kappa) @ vr
    z_rad += n_far * FAR_WEIGHT * 2 * (abs_v + vr).amax(dim=-2, keepdim=True)
    z_rad[bad] = math.inf
    return z_mid, _up(z_rad)


def _sparse_block(s_hat, box, v_max, slack, start: int, causal: bool, flags: dict):
    """softmax_bounds._sparse_block (attention_bounds' docstring has the proof) for one query block's float
    scores s_hat [batch block keys] (consumed), or None where the block must be bounded densely. `slack`
    [batch block] is R (all ≤ RHO_CAP), v_max [batch d_value] the largest |v| + rad(v)."""
    import torch

    (qm, qr), (km, kr), (vm, vr) = box
    # NaN or ±inf anywhere shows in the min or the max; |s| < 2^40 keeps top + cut within 10⁻³ of exact
    tame = flags["tame"] or (abs(float(s_hat.min())) < 2.0**40 and abs(float(s_hat.max())) < 2.0**40)
    if not tame:
        return None
    batch, block, keys = s_hat.shape
    device, d = s_hat.device, qm.shape[-1]
    if causal:
        _mask_diagonal(s_hat, start, start + block)
        visible = torch.arange(start + 1, start + block + 1, device=device).repeat(batch)  # [row]
    else:
        visible = torch.full((batch * block,), keys, device=device)
    top = s_hat.amax(dim=-1, keepdim=True)  # [batch block 1]
    # fl(s − top) ≥ cut implies s ≥ top + cut − 1 as floats (the sum's rounding is ≪ 1 below 2^40)
    candidate = s_hat >= top + (FAR_BLOCKED - 3 - slack)[..., None]
    if int(torch.count_nonzero(candidate)) > SPARSE_SHARE * int(visible.sum()):
        return None
    flat = candidate.reshape(-1).nonzero().squeeze(1)  # sorted (documented), so grouped by row
    row, k_j = flat // keys, flat % keys  # row = the flattened (batch, query) index
    s_c = s_hat.reshape(-1)[flat] - top.reshape(-1)[row]  # ŝ = fl(s − top), as in the dense bound
    k_flat = (row // block) * km.shape[-2] + k_j
    q_abs = qm[:, start : start + block].reshape(-1, d).abs()[row]  # [candidate d]
    k_abs = km.reshape(-1, d)[k_flat].abs()
    rho = s_c.abs() * U  # ρ_j exactly as the dense bound computes it
    if not flags["exact"]:
        rho += gamma(d + 1) * (q_abs * k_abs).sum(dim=-1)
    if flags["kr"]:
        k_rad = kr.reshape(-1, d)[k_flat]
        rho += (q_abs * k_rad).sum(dim=-1)
        k_abs += k_rad
    if flags["qr"]:
        rho += (qr[:, start : start + block].reshape(-1, d)[row] * k_abs).sum(dim=-1)
    rho *= 1 + SAFETY
    rho += 4.5 * U + 2.0**-1000
    near = s_c + rho >= FAR_BLOCKED - 1
    row, key, s_c, rho = row[near], k_j[near], s_c[near], rho[near]
    rows = batch * block
    counts = torch.bincount(row, minlength=rows)
    width = max(1, int(counts.max()))
    slot = torch.arange(len(row), device=device) - (torch.cumsum(counts, 0) - counts)[row]
    s_pad = torch.full((rows, width), -math.inf, dtype=torch.float64, device=device)
    rho_pad = torch.zeros((rows, width), dtype=torch.float64, device=device)
    key_pad = torch.zeros((rows, width), dtype=torch.int64, device=device)
    s_pad[row, slot], rho_pad[row, slot], key_pad[row, slot] = s_c, rho, key
    bad = torch.zeros(rows, dtype=torch.bool, device=device)
    bad[row[rho > RHO_CAP]] = True
    # a far key's weight against the top key's (ŝ = 0, exponent error ≤ the row's largest ρ): e^(F + ρ)
    far_weight = torch.exp(FAR_BLOCKED + rho_pad.amax(dim=-1).clamp(max=RHO_CAP)) * (1 + 2.0**-40)
    weights = torch.exp(s_pad)
    alpha = weights.div_(weights.sum(dim=-1, keepdim=True))  # α̂ [row m]
    theta = gamma(visible.to(torch.float64)[:, None] + 2)  # [row 1] the dense bound's θ
    kappa, too_wide = weight_error(alpha, rho_pad, theta)
    bad |= too_wide
    batch_of_row = (torch.arange(rows, device=device) // block)[:, None]  # [row 1]
    filled = torch.isfinite(s_pad)[..., None]
    v_near = torch.where(filled, vm[batch_of_row, key_pad], 0.0)  # [row m d_value]
    abs_v = v_near.abs()
    mid = (alpha[:, None, :] @ v_near)[:, 0]
    rad = (kappa[:, None, :] @ abs_v)[:, 0] + gamma(width + 2) * (alpha[:, None, :] @ abs_v)[:, 0]
    rad += 3 * width * TINY
    if flags["vr"]:
        v_rad = torch.where(filled, vr[batch_of_row, key_pad], 0.0)
        rad += ((alpha + kappa)[:, None, :] @ v_rad)[:, 0]
    far = (visible - counts).to(torch.float64)  # [row]
    rad += (far * far_weight)[:, None] * 2 * v_max[batch_of_row[:, 0]]
    rad[bad] = math.inf
    ATTENTION.add(sparse_blocks=1, computed=s_hat.numel(), exponentiated=len(row))
    shape = (batch, block, vm.shape[-1])
    return mid.reshape(shape), _up(rad).reshape(shape)


# --- the platform check ------------------------------------------------------------------------------

_checked: set[str] = set()


def check_torch_libm(device: str) -> None:
    """softmax_bounds.check_libm for torch on `device` (once per process and device, under the flint lock):
    torch.exp and torch.expm1 within LIBM_ULPS ulp against Arb balls on the ranges the bounds use them on,
    by both of torch's CPU loops (contiguous, strided), and float64 arithmetic that rounds to nearest with
    gradual underflow. A device where any of it fails gets an InternalError, never a certificate."""
    import torch

    name = str(
        torch.device(device, torch.cuda.current_device()) if device == "cuda" else torch.device(device)
    )
    with FLINT_LOCK:
        if name not in _checked:
            _warm_up(name)
            _check_arithmetic(name)
            _check_functions(name)
            _checked.add(name)


PARALLEL_SIZE = 1 << 18  # elements: well above torch's grain for its multithreaded elementwise loops


def _warm_up(device: str) -> None:
    """One multithreaded torch.exp and torch.expm1 whose results are discarded. Measured (torch 2.13, CPU,
    2 threads): a process's first multithreaded float64 exp, run after NumPy's own thread pools have been
    busy, came back wrong by up to 3·10⁻⁹ relative in some runs, and every later call was right. The
    check below then tests the later calls, on the same multithreaded path as the kernels."""
    import torch

    x = -torch.rand(PARALLEL_SIZE, dtype=torch.float64, device=device)
    torch.exp(x)
    torch.expm1(x)


def libm_points() -> tuple[np.ndarray, np.ndarray]:
    """(exp points, expm1 points): exp on the shifted scores of near keys and the far weight (down to
    FAR − RHO_CAP − 1, and near 0), expm1 on ±ρ up to RHO_CAP (and tiny ρ); fixed by a seed."""
    rng = np.random.default_rng(0)
    exp_points = np.concatenate([-rng.random(300) * (RHO_CAP - FAR + 1), -np.logspace(-17, 0, 60), [0.0]])
    expm1_points = np.concatenate([rng.random(150) * RHO_CAP, np.logspace(-17, 1, 60)])
    return exp_points, np.concatenate([expm1_points, -expm1_points])


def _check_functions(device: str) -> None:
    import flint
    import torch

    old = flint.ctx.prec
    flint.ctx.prec = 128
    try:
        for fn, arb_fn, points in zip(
            (torch.exp, torch.expm1), (flint.arb.exp, flint.arb.expm1), libm_points()
        ):
            x = torch.from_numpy(points).to(device)
            strided = torch.stack((x, x), dim=1)[:, 0]  # not contiguous: the elementwise scalar loop
            for y in (fn(x), fn(strided)):
                for xi, yi in zip(points.tolist(), y.cpu().tolist()):
                    exact = arb_fn(flint.arb(xi))
                    if not abs(flint.arb(yi) - exact) <= LIBM_ULPS * U * abs(exact):
                        raise InternalError(
                            f"torch.{fn.__name__}({xi!r}) = {yi!r} on {device} is off by more than "
                            f"{LIBM_ULPS} ulp: the rigorous bounds assume a libm at least that accurate"
                        )
            # the multithreaded loop the kernels run (PARALLEL_SIZE elements): every copy of each point
            # within LIBM_ULPS ulp of its Arb value (rounded to a float: half an ulp more)
            exact = np.array([float(arb_fn(flint.arb(xi)).mid()) for xi in points.tolist()])
            tiled = fn(x.repeat(-(-PARALLEL_SIZE // len(points)))).cpu().numpy().reshape(-1, len(points))
            if not np.all(np.abs(tiled - exact) <= (LIBM_ULPS + 0.5) * U * np.abs(exact) * (1 + 1e-12)):
                row, col = np.argwhere(np.abs(tiled - exact) > (LIBM_ULPS + 0.5) * U * np.abs(exact))[0]
                raise InternalError(
                    f"torch.{fn.__name__}({points[col]!r}) = {tiled[row, col]!r} on {device} (multithreaded) "
                    f"is off by more than {LIBM_ULPS} ulp: the rigorous bounds assume a libm at least that "
                    "accurate"
                )
    finally:
        flint.ctx.prec = old


def _check_arithmetic(device: str) -> None:
    """Round to nearest (ties to even, both signs) and gradual underflow (a subnormal product, a matrix
    product of subnormals), on a tensor large enough for torch's parallel loops."""
    import torch

    size = 1 << 16
    ones = torch.ones(size, dtype=torch.float64, device=device)
    checks = {
        "1 + u rounds to 1 (ties to even)": (ones + U, 1.0),
        "1 + 1.5u rounds to 1 + 2u": (ones + 1.5 * U, 1.0 + 2 * U),
        "−1 − 1.5u rounds to −1 − 2u": (-ones - 1.5 * U, -1.0 - 2 * U),
        # scaled back up before the comparison: flushed inputs (DAZ) would compare equal to 0 otherwise
        "2^-1000 · 2^-60 is the subnormal 2^-1060": (ones * 2.0**-1000 * 2.0**-60 * 2.0**60, 2.0**-1000),
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
