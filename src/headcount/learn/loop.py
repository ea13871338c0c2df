"""The one training loop every task of learn/train.py runs, and the single thread it runs on.

`fit`: AdamW (betas (0.9, 0.98)), linear warm-up then cosine decay to lr/10 (`lr_at`),
gradient-norm clipping at 1, a fresh batch per step from the task's `step_loss`, a progress bar on
stderr only when progress=True (counted steps for a progress callable: common.progress; inside a
sweep worker, with progress off, the steps go to the sweep's parent: common.progress.step_progress).
`one_thread` / `single_threaded`: torch on one intra-op thread while a task trains (the models are
tiny; a fixed thread count also keeps runs bit-for-bit reproducible).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import torch

from headcount.common.progress import Progress, progress_bar, step_progress


def lr_at(step: int, steps: int, lr: float, warmup: int) -> float:
    """Linear warm-up over `warmup` steps, then cosine decay from lr to lr/10 at the last step."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def fit(
    model: torch.nn.Module,
    step_loss: Callable[[int], torch.Tensor],
    steps: int,
    lr: float,
    *,
    weight_decay: float = 0.0,
    warmup: int | None = None,
    clip: float = 1.0,
    progress: Progress = False,
    label: str = "train",
) -> list[float]:
    """Minimise step_loss(step) (a fresh batch per step) over `steps` steps; returns the loss per
    step. The progress bar (stderr: run_config's callers may own stdout) shows the latest loss; a
    progress callable gets "step 400/2000" (common.progress)."""
    warmup = max(1, min(100, steps // 10)) if warmup is None else warmup
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=weight_decay)
    losses: list[float] = []
    model.train()
    shown = progress_bar(
        step_progress(progress), label, steps, fields={"loss": "…"}, transient=True, unit="step"
    )
    with shown as bar:
        for step in range(steps):
            for group in opt.param_groups:
                group["lr"] = lr_at(step, steps, lr, warmup)
            loss = step_loss(step)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            losses.append(loss.item())
            if step % 10 == 0 or step == steps - 1:
                bar.update(completed=step + 1, loss=f"{losses[-1]:.4f}")
    model.eval()
    return losses


@contextmanager
def one_thread():
    """Run torch on one intra-op thread, then restore the setting. These models are tiny: a step of
    the default induction run takes ~8 ms on one thread and ~80 ms on two busy cores; sweeps run one
    process per core anyway. A fixed thread count also keeps runs bit-for-bit reproducible."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def single_threaded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: run fn inside one_thread()."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_thread():
            return fn(*args, **kwargs)

    return wrapper
