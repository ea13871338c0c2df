"""Plain training loops for the learning experiments (spec/learning.md), each returning a JSON-able dict.

One loop (`fit`): AdamW, linear warm-up then cosine decay to lr/10, gradient-norm clipping at 1, explicit
seeds (torch.manual_seed for the weights, a numpy Generator for the data: the same seed gives the same run
on CPU), a progress bar on stderr only when progress=True. Each task adds its data, loss and exact
metrics; models are evaluated in float64, and the checkpoint written to `out` is the exported exact model
(core io for sequence models, minmax.model.save_minmax, boolean.model.save_boolean), so what is reported is what a file holds.

* train_induction — induction heads, and k-hop when hop_token is on (task "khop"):
  input [hop token] + σ with hop token id alphabet + k − 1 (vocab = alphabet + hops), k drawn uniformly
  from 1..hops per training sequence; targets hop_k(σ) (⊥ ↦ class alphabet) at σ's positions, the hop
  token's position is ignored. Loss: cross-entropy over every (other) position, ⊥ positions included.
* train_minmax — lists uniform over [M]^n (tokens 1..M), cross-entropy of both classifiers.
* train_boolean — the whole input space at once: the output depends only on t = |x|, so the loss is the
  logistic loss softplus(−F(t)·g(t)) over t = 0..n weighted by C(n, t)/2^n, which is exactly the mean
  over all 2^n inputs.
* run_config — dispatch for the sweep engine (top-level, picklable, silent on stdout).
"""

from __future__ import annotations

import copy
import functools
import inspect
import math
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F_nn

from headcount.boolean.certify import dim_bound
from headcount.boolean.functions import parse_function, sign_changes
from headcount.boolean.model import model_sign_exact, save_boolean
from headcount.core.io import save_model
from headcount.core.symbols import BOTTOM
from headcount.induction import task as itask
from headcount.learn.models import (
    BooleanNet,
    MinMaxNet,
    SequenceConfig,
    SequenceModel,
    boolean_net_to_model,
    minmax_net_to_model,
    sequence_model_to_transformer,
)
from headcount.minmax.model import save_minmax
from headcount.minmax.task import all_multisets, check_sizes, count_multisets
from headcount.minmax.verify import decide_exact, verify_exact_one_head

IGNORE = -100  # cross-entropy ignore_index: the hop token's position has no target
EVAL_SEED = (
    20_240_601  # held-out sets are fixed (independent of the training seed), so runs compare on equal inputs
)
EVAL_SIZE = 2048  # held-out sequences for induction metrics
PATTERN_SIZE = 512  # held-out sequences for the head-pattern scores
FAMILY_SIZE = 256  # sequences per adversarial family
MINMAX_EXHAUSTIVE = 200_000  # evaluate on every multiset when there are at most this many
MINMAX_SAMPLE = 1 << 16  # else on this many uniform lists

# Defaults measured on a shared 2-core CPU (one thread): layers=2, heads=1, dim=32, n=16, alphabet=4 is at
# ≥ 0.99 non-⊥ accuracy after ~200 steps (~2 s); with 2000 steps (~10 s) seeds 0–9 all end ≥ 0.9999, where
# 1000–1500 steps left a seed at 0.983. lr 1e-2 was worse (3 of 10 seeds ≤ 0.96 at 1000 steps).
INDUCTION_STEPS = 2000
INDUCTION_LR = 3e-3
BOOLEAN_STEPS = 2000


# ---------------------------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------------------------


def lr_at(step: int, steps: int, lr: float, warmup: int) -> float:
    """Linear warm-up over `warmup` steps, then cosine decay from lr to lr/10 at the last step."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def _progress_bar(progress: bool, label: str, steps: int):
    """A rich progress bar on stderr (never stdout: run_config's callers may own stdout), or nothing."""
    if not progress:
        return nullcontext(None)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]}"),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    )
    bar.add_task(label, total=steps, loss="…")
    return bar


def fit(
    model: torch.nn.Module,
    step_loss: Callable[[int], torch.Tensor],
    steps: int,
    lr: float,
    *,
    weight_decay: float = 0.0,
    warmup: int | None = None,
    clip: float = 1.0,
    progress: bool = False,
    label: str = "train",
) -> list[float]:
    """Minimise step_loss(step) (a fresh batch per step) over `steps` steps; returns the loss per step."""
    warmup = max(1, min(100, steps // 10)) if warmup is None else warmup
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=weight_decay)
    losses: list[float] = []
    model.train()
    with _progress_bar(progress, label, steps) as bar:
        for step in range(steps):
            for group in opt.param_groups:
                group["lr"] = lr_at(step, steps, lr, warmup)
            loss = step_loss(step)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            losses.append(loss.item())
            if bar is not None and (step % 10 == 0 or step == steps - 1):
                bar.update(bar.task_ids[0], completed=step + 1, loss=f"{losses[-1]:.4f}")
    model.eval()
    return losses


@contextmanager
def one_thread():
    """Run torch on one intra-op thread, then restore the setting. These models are tiny: a step of the
    default induction run takes ~8 ms on one thread and ~80 ms on two busy cores; sweeps run one process
    per core anyway. A fixed thread count also keeps runs bit-for-bit reproducible."""
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


def _curve(losses: list[float], points: int = 32) -> list[list[float]]:
    """[[step, mean loss over the window ending there], …] at ≤ `points` evenly spaced steps (for plots)."""
    if not losses:
        return []
    edges = np.unique(np.linspace(0, len(losses), points + 1).astype(int))
    return [[int(b), float(np.mean(losses[a:b]))] for a, b in zip(edges[:-1], edges[1:])]


def _loss_summary(losses: list[float]) -> dict[str, Any]:
    """first_loss, final_loss (mean over the last 10% of steps, 1 to 50 of them), loss_curve; None for no steps."""
    if not losses:
        return {"first_loss": None, "final_loss": None, "loss_curve": []}
    tail = losses[-max(1, min(50, len(losses) // 10)) :]
    return {"first_loss": losses[0], "final_loss": float(np.mean(tail)), "loss_curve": _curve(losses)}


def _check_positive(name: str, value: Any, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer ≥ {low}, got {value!r}")
    return int(value)


def _check_lr(lr: Any) -> float:
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr <= 0:
        raise ValueError(f"lr must be a positive number, got {lr!r}")
    return float(lr)


def _out_path(out: Any) -> Path | None:
    if out is None:
        return None
    if not isinstance(out, (str, Path)) or str(out) == "":
        raise ValueError(f"out must be a file path or None, got {out!r}")
    return Path(out)


# ---------------------------------------------------------------------------------------------
# Induction heads and k-hop
# ---------------------------------------------------------------------------------------------


def induction_batch(
    rng: np.random.Generator, batch: int, n: int, alphabet: int, hops: int, hop_token: bool, generator: str
) -> tuple[np.ndarray, np.ndarray]:
    """(inputs, class targets) [batch n(+1)]: σ from `generator`, targets hop_k(σ) with ⊥ ↦ class alphabet;
    with hop_token, a first token alphabet + k − 1 with k uniform in 1..hops per row, its target IGNORE."""
    sigma = itask.GENERATORS[generator](rng, batch, n, alphabet)
    if not hop_token:
        target = itask.induction_targets(sigma, hops)
        return sigma, np.where(target == BOTTOM, alphabet, target)
    ks = rng.integers(1, hops + 1, size=batch)
    target = np.empty_like(sigma)
    for k in np.unique(ks):
        rows = ks == k
        target[rows] = itask.induction_targets(sigma[rows], int(k))
    target = np.where(target == BOTTOM, alphabet, target)
    inputs = np.concatenate([(alphabet + ks - 1)[:, None], sigma], axis=1)
    return inputs, np.concatenate([np.full((batch, 1), IGNORE), target], axis=1)


@torch.no_grad()
def sequence_predict(
    model: SequenceModel, tokens: np.ndarray, chunk: int = 512
) -> tuple[np.ndarray, list[np.ndarray]]:
    """(predictions [batch pos] with BOTTOM for ⊥, attention patterns per layer [batch heads q k]) of `model`
    as it is (call on a float64 copy for exact metrics); argmax ties go to the lowest class, as in core."""
    preds, patterns = [], []
    alphabet = model.cfg.alphabet
    for start in range(0, len(tokens), chunk):
        logits, pats = model(torch.from_numpy(tokens[start : start + chunk]), return_patterns=True)
        cls = logits.argmax(dim=-1).numpy()
        preds.append(np.where(cls == alphabet, BOTTOM, cls))
        patterns.append([p.numpy() for p in pats])
    return np.concatenate(preds), [
        np.concatenate([p[layer] for p in patterns]) for layer in range(len(model.blocks))
    ]


def head_scores(patterns: list[np.ndarray], sigma: np.ndarray, offset: int = 0) -> list[dict[str, Any]]:
    """Per head: previous_token_score = mean attention from position i to i−1 (i ≥ 1), and induction_score =
    mean attention from i to j+1, j the latest earlier position with σ_j = σ_i (over positions that have one:
    TransformerLens's head-detector sense). `offset` = positions before σ (the hop token)."""
    batch, n = sigma.shape
    find = itask.find_positions(sigma)  # [batch n]: j_i + 1 (0-based), or -1
    rows, queries = np.nonzero(find >= 0)
    keys = find[rows, queries]
    out = []
    for layer, pattern in enumerate(patterns):
        p = pattern[:, :, offset:, offset:]  # [batch heads n n]
        for h in range(p.shape[1]):
            prev = float(p[:, h, np.arange(1, n), np.arange(n - 1)].mean()) if n > 1 else 0.0
            ind = float(p[rows, h, queries, keys].mean()) if len(rows) else 0.0
            out.append({"layer": layer, "head": h, "previous_token_score": prev, "induction_score": ind})
    return out


def heldout_rng(n: int, alphabet: int) -> np.random.Generator:
    """The generator of the fixed held-out sets: seeded by EVAL_SEED, n and alphabet only, never the run's seed."""
    return np.random.default_rng([EVAL_SEED, n, alphabet])


def heldout_sequences(n: int, alphabet: int, generator: str = "uniform", size: int = EVAL_SIZE) -> np.ndarray:
    """The held-out σ's [size n] that evaluate_induction scores accuracy on (to recompute its metrics)."""
    return itask.GENERATORS[generator](heldout_rng(n, alphabet), size, n, alphabet)


def evaluate_induction(
    model: SequenceModel,
    n: int,
    alphabet: int,
    hops: int = 1,
    hop_token: bool = False,
    generator: str = "uniform",
    eval_size: int = EVAL_SIZE,
) -> dict[str, Any]:
    """Exact task metrics of `model` (run in float64) on fixed held-out sets (seeded by EVAL_SEED, n, alphabet):

    accuracy / accuracy_bottom: non-⊥ / ⊥ positions of `eval_size` sequences from `generator` (with a hop
    token: at k = hops; accuracy_by_hop gives every k); eval_loss: their cross-entropy; accuracy_index:
    the INDEX family (index_family_for_length) at the query position 2k+1 = 2⌊(n−1)/2⌋+1 (answer f_{i*}),
    accuracy_index_all: at all its non-⊥ positions (hops = 1, no hop token, alphabet ≥ 3, n ≥ 3 only, else
    None); adversarial: non-⊥ and ⊥ accuracy on each other adversarial family; heads: head_scores."""
    model64 = copy.deepcopy(model).double().eval()
    rng = heldout_rng(n, alphabet)
    offset = 1 if hop_token else 0
    sigma = itask.GENERATORS[generator](rng, eval_size, n, alphabet)  # the same set as heldout_sequences
    out: dict[str, Any] = {"eval_size": eval_size}
    by_hop: dict[str, float] = {}
    for k in range(1, hops + 1) if hop_token else [hops]:
        target = itask.induction_targets(sigma, k)
        inputs = (
            np.concatenate([np.full((eval_size, 1), alphabet + k - 1), sigma], axis=1) if hop_token else sigma
        )
        pred, patterns = sequence_predict(model64, inputs)
        metrics = itask.induction_metrics(pred[:, offset:], target)
        by_hop[str(k)] = metrics["accuracy"]
    # the last k is `hops`: its metrics, loss and patterns are the ones reported
    cls = torch.from_numpy(np.where(target == BOTTOM, alphabet, target))
    with torch.no_grad():
        logits = torch.cat([model64(torch.from_numpy(inputs[s : s + 512])) for s in range(0, eval_size, 512)])
    out["eval_loss"] = float(
        F_nn.cross_entropy(logits[:, offset:].reshape(-1, alphabet + 1), cls.reshape(-1))
    )
    out.update(
        {
            k: metrics[k]
            for k in ("accuracy", "accuracy_bottom", "errors", "token_positions", "bottom_positions")
        }
    )
    if hop_token:
        out["accuracy_by_hop"] = by_hop
    out["head_scores"] = head_scores([p[:PATTERN_SIZE] for p in patterns], sigma[:PATTERN_SIZE], offset)
    out["accuracy_index"] = out["accuracy_index_all"] = None
    if not hop_token and hops == 1:
        out["adversarial"] = {}
        for name, generate in itask.ADVERSARIAL_FAMILIES.items():
            if name == "index" and (alphabet < 3 or n < 3):
                continue
            tokens = generate(rng, FAMILY_SIZE, n, alphabet)
            target = itask.induction_targets(tokens)
            pred = sequence_predict(model64, tokens)[0]
            metrics = itask.induction_metrics(pred, target)
            if name == "index":
                query = 2 * ((n - 1) // 2)  # 0-based position of the final '?'
                out["accuracy_index"] = float(np.mean(pred[:, query] == target[:, query]))
                out["accuracy_index_all"] = metrics["accuracy"]
            else:
                out["adversarial"][name] = {
                    "accuracy": metrics["accuracy"],
                    "accuracy_bottom": metrics["accuracy_bottom"],
                }
    return out


@single_threaded
def train_induction(
    layers: int = 2,
    heads: int = 1,
    dim: int = 32,
    n: int = 16,
    alphabet: int = 4,
    hops: int = 1,
    steps: int = INDUCTION_STEPS,
    batch: int = 64,
    lr: float = INDUCTION_LR,
    seed: int = 0,
    positional: str = "learned",
    mlp: bool = False,
    layernorm: bool = False,
    generator: str = "uniform",
    out: str | Path | None = None,
    progress: bool = False,
    hop_token: bool | None = None,
    weight_decay: float = 0.01,
) -> dict[str, Any]:
    """Train a SequenceModel on induction heads (hops = 1) or k-hop (hop_token, default on when hops > 1; see
    the module docstring) and return evaluate_induction's metrics plus the run's facts. `out`: the exported
    core model file (core io); LayerNorm models cannot be exported, so out must be None for them."""
    began = time.perf_counter()
    for name, value, low in (
        ("layers", layers, 1),
        ("heads", heads, 1),
        ("dim", dim, 1),
        ("n", n, 1),
        ("alphabet", alphabet, 2),
        ("hops", hops, 1),
        ("steps", steps, 0),
        ("batch", batch, 1),
        ("seed", seed, 0),
    ):
        _check_positive(name, value, low)
    lr = _check_lr(lr)
    if generator not in itask.GENERATORS:
        raise ValueError(f"unknown generator {generator!r}: use one of {sorted(itask.GENERATORS)}")
    if positional not in ("learned", "sinusoidal", "circle"):
        raise ValueError(
            f"positional {positional!r} cannot be trained from scratch: use 'learned', 'sinusoidal' or "
            "'circle' ('fixed' is for loaded constructions)"
        )
    if generator == "index" and (alphabet < 3 or n < 3):
        raise ValueError(f"the index generator needs alphabet ≥ 3 and n ≥ 3, got alphabet={alphabet}, n={n}")
    hop_token = hops > 1 if hop_token is None else bool(hop_token)
    path = _out_path(out)
    if path is not None and layernorm:
        raise ValueError(
            "LayerNorm models cannot be exported to the certifiable weight form; pass out=None or "
            "train with layernorm=False"
        )
    cfg = SequenceConfig(
        vocab=alphabet + (hops if hop_token else 0),
        alphabet=alphabet,
        n_ctx=n + int(hop_token),
        layers=layers,
        heads=heads,
        dim=dim,
        positional=positional,
        mlp=mlp,
        layernorm=layernorm,
    )
    torch.manual_seed(seed)
    model = SequenceModel(cfg)
    rng = np.random.default_rng(seed)

    def step_loss(step: int) -> torch.Tensor:
        inputs, target = induction_batch(rng, batch, n, alphabet, hops, hop_token, generator)
        logits = model(torch.from_numpy(inputs))
        return F_nn.cross_entropy(
            logits.reshape(-1, alphabet + 1), torch.from_numpy(target).reshape(-1), ignore_index=IGNORE
        )

    losses = fit(
        model,
        step_loss,
        steps,
        lr,
        weight_decay=weight_decay,
        progress=progress,
        label=f"induction L={layers} H={heads} d={dim} n={n} S={alphabet} k={hops}",
    )
    train_seconds = time.perf_counter() - began
    result: dict[str, Any] = {
        "task": "khop" if hop_token else "induction",
        "layers": layers,
        "heads": heads,
        "dim": dim,
        "n": n,
        "alphabet": alphabet,
        "hops": hops,
        "hop_token": hop_token,
        "steps": steps,
        "batch": batch,
        "lr": lr,
        "seed": seed,
        "positional": positional,
        "mlp": mlp,
        "layernorm": layernorm,
        "generator": generator,
    }
    result.update(_loss_summary(losses))
    result.update(evaluate_induction(model, n, alphabet, hops, hop_token, generator))
    result["model_path"] = None
    if path is not None:
        info = {
            "task": result["task"],
            "n": n,
            "alphabet": alphabet,
            "hops": hops,
            "hop_token": hop_token,
            "seed": seed,
        }
        save_model(sequence_model_to_transformer(model, info), path)
        result["model_path"] = str(path)
    result["train_seconds"] = train_seconds
    result["wall_seconds"] = time.perf_counter() - began
    return result


# ---------------------------------------------------------------------------------------------
# Min / max
# ---------------------------------------------------------------------------------------------


def _multinomial_log_counts(x: np.ndarray, M: int) -> np.ndarray:
    """log of the number of lists in [M]^n with each multiset's histogram: log n! − Σ log h_ω!."""
    from scipy.special import gammaln

    h = np.zeros((x.shape[0], M), dtype=np.int64)
    np.add.at(h, (np.repeat(np.arange(x.shape[0]), x.shape[1]), x.ravel() - 1), 1)
    return gammaln(x.shape[1] + 1) - gammaln(h + 1).sum(axis=1)


def evaluate_minmax(net: MinMaxNet, n: int) -> dict[str, Any]:
    """Exact accuracies of `net` (exported to float64, decisions with verify.decide_exact: near-ties are
    decided exactly, a tie is wrong) as fractions of all M^n lists: the head is permutation-invariant, so
    when there are ≤ MINMAX_EXHAUSTIVE multisets each is checked once and weighted by its number of
    orderings (exhaustive: true); else MINMAX_SAMPLE fixed uniform lists (seeded by EVAL_SEED, M, n).
    For one head also the exact one-head verifier's verdicts (verify_exact_one_head) for min and max."""
    model = minmax_net_to_model(net)
    M = net.M
    exhaustive = count_multisets(M, n) <= MINMAX_EXHAUSTIVE
    if exhaustive:
        x = all_multisets(M, n)
        logc = _multinomial_log_counts(x, M)
        weight = np.exp(logc - logc.max())
    else:
        x = np.random.default_rng([EVAL_SEED, M, n]).integers(1, M + 1, size=(MINMAX_SAMPLE, n))
        weight = np.ones(len(x))
    weight /= weight.sum()
    right_min = decide_exact(model, model.classifier_min, x) == x.min(axis=1)
    right_max = decide_exact(model, model.classifier_max, x) == x.max(axis=1)
    out: dict[str, Any] = {
        "exhaustive": exhaustive,
        "inputs_evaluated": int(len(x)),
        "accuracy_min": float(weight @ right_min),
        "accuracy_max": float(weight @ right_max),
        "accuracy_both": float(weight @ (right_min & right_max)),
    }
    if net.heads == 1:
        head = model.layer.heads[0]
        for name, clf in (("min", model.classifier_min), ("max", model.classifier_max)):
            v = verify_exact_one_head(head, clf, name, n)
            out[f"verifier_{name}"] = {
                "correct": v.correct,
                "counterexample_exists": not v.correct,
                "margin": float(v.margin),
                "counterexample": None if v.worst_input is None else [int(t) for t in v.worst_input],
                "wrong_class": v.wrong_class,
                "decision": v.decision,
            }
    return out


@single_threaded
def train_minmax(
    M: int = 8,
    n: int = 4,
    heads: int = 1,
    dim: int = 4,
    steps: int = 2000,
    batch: int = 256,
    lr: float = 1e-2,
    seed: int = 0,
    out: str | Path | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Train a MinMaxNet on lists uniform over [M]^n (cross-entropy of both classifiers); evaluate_minmax's
    metrics. `out`: the exported MinMaxModel (save_minmax)."""
    began = time.perf_counter()
    check_sizes(M, n)
    for name, value, low in (
        ("heads", heads, 1),
        ("dim", dim, 1),
        ("steps", steps, 0),
        ("batch", batch, 1),
        ("seed", seed, 0),
    ):
        _check_positive(name, value, low)
    lr = _check_lr(lr)
    path = _out_path(out)
    torch.manual_seed(seed)
    net = MinMaxNet(M, heads, dim)
    rng = np.random.default_rng(seed)

    def step_loss(step: int) -> torch.Tensor:
        x = torch.from_numpy(rng.integers(1, M + 1, size=(batch, n)))
        logits_min, logits_max = net(x)
        return F_nn.cross_entropy(logits_min, x.min(dim=1).values - 1) + F_nn.cross_entropy(
            logits_max, x.max(dim=1).values - 1
        )

    losses = fit(net, step_loss, steps, lr, progress=progress, label=f"minmax M={M} n={n} H={heads} d={dim}")
    train_seconds = time.perf_counter() - began
    result: dict[str, Any] = {
        "task": "minmax",
        "M": M,
        "n": n,
        "heads": heads,
        "dim": dim,
        "steps": steps,
        "batch": batch,
        "lr": lr,
        "seed": seed,
    }
    result.update(_loss_summary(losses))
    result.update(evaluate_minmax(net, n))
    result["model_path"] = None
    if path is not None:
        save_minmax(minmax_net_to_model(net, {"task": "minmax", "n": n, "seed": seed}), path)
        result["model_path"] = str(path)
    result["train_seconds"] = train_seconds
    result["wall_seconds"] = time.perf_counter() - began
    return result


# ---------------------------------------------------------------------------------------------
# Symmetric Boolean functions
# ---------------------------------------------------------------------------------------------


@single_threaded
def train_boolean(
    function: str = "xor",
    n: int = 8,
    degree: int = 2,
    heads: int = 4,
    dim: int | None = None,
    steps: int = BOOLEAN_STEPS,
    lr: float = 3e-2,
    seed: int = 0,
    out: str | Path | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Train a BooleanNet on a symmetric function (a name or F:+-…, boolean/functions.py) over all 2^n inputs
    (module docstring). dim defaults to Theorem 3's bound min{D, 2·max{1, ⌈log₂ H⌉} + 2}. Metrics:
    accuracy_all_inputs (fraction of the 2^n inputs the float64 model gets right; sign 0 is wrong), solved
    (all right), solved_exact (the exported exact model, model_sign_exact, on every t), min_margin
    (min_t F(t)·g(t) in float64), threshold_degree T and below_bound (D·H < T: no model can solve it,
    Theorem 2). `out`: the exported exact model (save_boolean)."""
    began = time.perf_counter()
    for name, value, low in (
        ("n", n, 1),
        ("degree", degree, 1),
        ("heads", heads, 1),
        ("steps", steps, 0),
        ("seed", seed, 0),
    ):
        _check_positive(name, value, low)
    dim = dim_bound(degree, heads) if dim is None else _check_positive("dim", dim)
    lr = _check_lr(lr)
    path = _out_path(out)
    F = np.array(parse_function(function, n), dtype=np.float64)  # [n+1] ∈ {−1, +1}, true ↔ −1
    T = sign_changes(tuple(int(v) for v in F))
    t = torch.arange(n + 1)
    prob = torch.tensor([math.comb(n, k) for k in range(n + 1)], dtype=torch.float64) / 2.0**n  # [n+1]
    torch.manual_seed(seed)
    net = BooleanNet(n, heads, dim, degree)
    target = torch.from_numpy(F).float()

    def step_loss(step: int) -> torch.Tensor:
        return (prob.float() * F_nn.softplus(-target * net.score(t))).sum()

    losses = fit(
        net, step_loss, steps, lr, progress=progress, label=f"boolean {function} n={n} D={degree} H={heads}"
    )
    train_seconds = time.perf_counter() - began
    with torch.no_grad():
        g = copy.deepcopy(net).double().score(t).numpy()  # [n+1]
    right = np.sign(g) == F
    layer, readout = boolean_net_to_model(net)
    exact = model_sign_exact(layer, readout, n)
    result: dict[str, Any] = {
        "task": "boolean",
        "function": str(function),
        "n": n,
        "degree": degree,
        "heads": heads,
        "dim": dim,
        "dim_bound": dim_bound(degree, heads),
        "threshold_degree": T,
        "below_bound": degree * heads < T,
        "steps": steps,
        "lr": lr,
        "seed": seed,
        **_loss_summary(losses),
        "accuracy_all_inputs": float(prob.numpy() @ right),
        "weights_right": int(right.sum()),
        "solved": bool(right.all()),
        "solved_exact": bool(all(s == f for s, f in zip(exact, F))),
        "min_margin": float(np.min(F * g)),
    }
    result["model_path"] = None
    if path is not None:
        save_boolean(
            layer, readout, path, {"task": "boolean", "function": str(function), "n": n, "seed": seed}
        )
        result["model_path"] = str(path)
    result["train_seconds"] = train_seconds
    result["wall_seconds"] = time.perf_counter() - began
    return result


# ---------------------------------------------------------------------------------------------
# Dispatch for sweeps
# ---------------------------------------------------------------------------------------------


TASKS: dict[str, Callable[..., dict[str, Any]]] = {
    "induction": train_induction,
    "khop": train_induction,
    "minmax": train_minmax,
    "boolean": train_boolean,
}


def run_config(config: dict[str, Any]) -> dict[str, Any]:
    """Run one configuration {"task": …, **kwargs} and return its metrics (JSON-able). "khop" is
    train_induction with hop_token=True and generator "no_adjacent_repeats" unless given. Unknown keys are
    a ValueError naming the allowed ones."""
    if not isinstance(config, dict) or "task" not in config:
        raise ValueError(f"a run config must be a dict with a 'task' key, one of {sorted(TASKS)}")
    kwargs = dict(config)
    name = kwargs.pop("task")
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}: use one of {sorted(TASKS)}")
    fn = TASKS[name]
    allowed = [p for p in inspect.signature(fn).parameters if not (name == "khop" and p == "hop_token")]
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise ValueError(f"unknown key(s) {unknown} for task {name!r}: allowed are {allowed}")
    if name == "khop":
        kwargs = {"generator": "no_adjacent_repeats", **kwargs, "hop_token": True}
    return fn(**kwargs)
