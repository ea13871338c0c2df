"""Plain training loops for the learning experiments (spec/learning.md), each returning a typed
result (learn/results.py) whose `to_json()` is the run's JSON — what a sweep stores and `headcount
train` prints.

One loop for all (learn/loop.py's `fit`: AdamW, linear warm-up then cosine decay to lr/10,
gradient-norm clipping at 1, one torch thread, a progress bar on stderr only when progress=True) and
explicit seeds (torch.manual_seed for the weights, a numpy Generator for the data: the same seed
gives the same run on CPU). Each task adds its data, loss and exact metrics (learn/evaluate.py);
models are evaluated in float64, and the checkpoint written to `out` is the exported exact model
(core io for sequence models, minmax.model.save_minmax, boolean.model.save_boolean), so what is
reported is what a file holds.

* train_induction — induction heads, and k-hop when hop_token is on (task "khop"): input [hop token]
  + σ with hop token id alphabet + k − 1 (vocab = alphabet + hops), k drawn uniformly from 1..hops
  per training sequence; targets hop_k(σ) (⊥ ↦ class alphabet) at σ's positions, the hop token's
  position is ignored. Loss: cross-entropy over every (other) position, ⊥ positions included.
* train_minmax — lists uniform over [M]^n (tokens 1..M), cross-entropy of both classifiers.
* train_boolean — the whole input space at once: the output depends only on t = |x|, so the loss is
  the logistic loss softplus(−F(t)·g(t)) over t = 0..n weighted by C(n, t)/2^n, which is exactly the
  mean over all 2^n inputs.
* run_config — dispatch for the sweep engine (top-level, picklable, silent on stdout); `train` — the
  same with keyword settings, what `headcount train TASK` calls.

Bad settings raise InputError (one line: what is wrong, what is allowed).
"""

from __future__ import annotations

import copy
import inspect
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F_nn

from headcount.boolean.certification import dim_bound
from headcount.boolean.model import model_sign_exact
from headcount.boolean.model_file import save_boolean
from headcount.boolean.task import parse_function, sign_changes
from headcount.common.errors import InputError, param
from headcount.common.progress import Progress
from headcount.common.validate import check_int, check_writable
from headcount.core.model import BOTTOM, save_model
from headcount.induction import layouts
from headcount.induction import task as itask
from headcount.learn import evaluate as ev
from headcount.learn.evaluate import evaluate_induction, evaluate_minmax
from headcount.learn.loop import fit, single_threaded
from headcount.learn.models import (
    ARCHS,
    BooleanNet,
    MinMaxNet,
    SequenceConfig,
    SequenceModel,
    boolean_net_to_model,
    costs,
    minmax_net_to_model,
    sequence_model_to_transformer,
)
from headcount.learn.results import (
    BooleanMetrics,
    BooleanRun,
    InductionRun,
    LossSummary,
    MinMaxRun,
    TrainResult,
)
from headcount.minmax.model import save_minmax
from headcount.minmax.task import check_sizes

IGNORE = -100  # cross-entropy ignore_index: the hop token's position has no target
TRAINABLE_POSITIONAL = ("learned", "sinusoidal", "circle", "rotary")

# Defaults measured on a shared 2-core CPU (one thread): layers=2, heads=1, dim=32, n=16, alphabet=4
# is at ≥ 0.99 non-⊥ accuracy after ~200 steps (~2 s); with 2000 steps (~10 s) seeds 0–9 all end ≥
# 0.9999, where 1000–1500 steps left a seed at 0.983. lr 1e-2 was worse (3 of 10 seeds ≤ 0.96 at
# 1000 steps).
INDUCTION_STEPS = 2000
INDUCTION_LR = 3e-3
BOOLEAN_STEPS = 2000


# ------------------------------------------------------------ Checks shared by the tasks


def _check_counts(**values: tuple[Any, int]) -> None:
    """check_int for each name = (value, lowest allowed value)."""
    for name, (value, low) in values.items():
        check_int(name, value, low)


def _out_path(out: Any) -> Path | None:
    """None, or a path a file can be written at (checked now, before training)."""
    if out is None:
        return None
    if not isinstance(out, (str, Path)) or str(out) == "":
        raise InputError(f"out must be a file path or None, got {out!r}")
    check_writable(out)
    return Path(out)


# ------------------------------------------------------------ Induction heads and k-hop


def induction_batch(
    rng: np.random.Generator,
    batch: int,
    n: int,
    alphabet: int,
    hops: int,
    hop_token: bool,
    generator: str,
    hop_zero: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """(inputs, class targets) [batch n(+1)]: σ from `generator`, targets hop_k(σ) with ⊥ ↦ class
    alphabet; with hop_token, a first token (layouts.hop_token) with k uniform in 1..hops per row
    (0..hops with hop_zero), its target IGNORE."""
    sigma = itask.GENERATORS[generator](rng, batch, n, alphabet)
    if not hop_token:
        target = itask.induction_targets(sigma, hops)
        return sigma, np.where(target == BOTTOM, alphabet, target)
    ks = rng.integers(0 if hop_zero else 1, hops + 1, size=batch)
    target = np.empty_like(sigma)
    for k in np.unique(ks):
        rows = ks == k
        target[rows] = itask.induction_targets(sigma[rows], int(k))
    target = np.where(target == BOTTOM, alphabet, target)
    inputs = np.concatenate([layouts.hop_token(alphabet, ks, hops)[:, None], sigma], axis=1)
    return inputs, np.concatenate([np.full((batch, 1), IGNORE), target], axis=1)


def _check_induction(n: int, alphabet: int, hops: int, generator: str, positional: str) -> None:
    """The checks of train_induction beyond its integer counts."""
    if hops > n:  # each hop moves to an earlier position or stays, so hop k ≥ n answers like hop n
        raise InputError(
            f"hops = {hops} > n = {n}: hop counts beyond n answer like hop n; use {param('hops')} "
            "≤ n"
        )
    if generator not in itask.GENERATORS:
        raise InputError(f"unknown generator {generator!r}: use one of {sorted(itask.GENERATORS)}")
    if positional not in TRAINABLE_POSITIONAL:
        raise InputError(
            f"positional {positional!r} cannot be trained from scratch: use 'learned', "
            "'sinusoidal' or "
            "'circle' ('fixed' is for loaded constructions)"
        )
    if generator == "index" and (alphabet < 3 or n < 3):
        raise InputError(
            f"the index generator needs alphabet ≥ 3 and n ≥ 3, got alphabet={alphabet}, n={n}"
        )


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
    positional: str | None = None,
    mlp: bool | None = None,
    layernorm: bool | None = None,
    generator: str = "uniform",
    out: str | Path | None = None,
    progress: Progress = False,
    hop_token: bool | None = None,
    weight_decay: float = 0.01,
    activation: str | None = None,
    arch: str = "gpt2",
    hop_zero: bool = False,
) -> InductionRun:
    """Train a SequenceModel (dim = d_model) on induction heads (hops = 1) or k-hop (hop_token,
    default on when hops > 1; see the module docstring); evaluate_induction's metrics plus the run's
    facts. arch picks the block family (learn.models.blocks): "gpt2" (positional default learned;
    mlp, layernorm and activation — relu, gelu, gelu_tanh, silu — off / off / relu by default give
    the seed's block, on / on / gelu GPT-2's), "llama" or "neox" (rotary positions; mlp and the
    norm on unless turned off; activation silu for llama's gate, gelu for neox). hop_zero: hop
    count 0 (the answer is the character itself) is drawn with 1..hops, its hop token S + hops
    (after the others; the hop token is then on). `out`: the exported core model file (core io;
    every part included; a hop-0 token is named in its info, "hop_zero_token")."""
    positional, mlp, layernorm, activation = _block_settings(
        arch, positional, mlp, layernorm, activation
    )
    began = time.perf_counter()
    _check_counts(
        layers=(layers, 1),
        heads=(heads, 1),
        dim=(dim, 1),
        n=(n, 1),
        alphabet=(alphabet, 2),
        hops=(hops, 1),
        batch=(batch, 1),
    )
    lr = costs.check_run_settings(steps, seed, lr)
    _check_induction(n, alphabet, hops, generator, positional)
    if not isinstance(hop_zero, bool):
        raise InputError(f"{param('hop_zero')} must be true or false, got {str(hop_zero)[:40]!r}")
    hop_token = hops > 1 or hop_zero if hop_token is None else bool(hop_token)
    if hop_zero and not hop_token:
        raise InputError(f"{param('hop_zero')} needs the hop token (task khop): it names hop 0")
    cfg = SequenceConfig(
        vocab=alphabet + (hops + hop_zero if hop_token else 0),
        alphabet=alphabet,
        n_ctx=n + int(hop_token),
        layers=layers,
        heads=heads,
        dim=dim,
        positional=positional,
        mlp=mlp,
        layernorm=layernorm,
        activation=activation,
        arch=arch,
    )
    family = 0 if hop_token or hops != 1 else ev.FAMILY_SIZE * len(itask.ADVERSARIAL_FAMILIES)
    evaluations = hops + hop_zero if hop_token else 1
    cost = costs.sequence_cost(cfg, batch, ev.EVAL_SIZE, evaluations, family)
    costs.check_cost(
        cost, steps, f"train induction (layers {layers}, dim {dim}, n {n}, alphabet {alphabet})"
    )
    path = _out_path(out)
    torch.manual_seed(seed)
    model = SequenceModel(cfg)
    rng = np.random.default_rng(seed)

    def step_loss(step: int) -> torch.Tensor:
        inputs, target = induction_batch(
            rng, batch, n, alphabet, hops, hop_token, generator, hop_zero
        )
        logits = model(torch.from_numpy(inputs))
        return F_nn.cross_entropy(
            logits.reshape(-1, alphabet + 1),
            torch.from_numpy(target).reshape(-1),
            ignore_index=IGNORE,
        )

    label = f"induction L={layers} H={heads} d={dim} n={n} S={alphabet} k={hops}"
    losses = fit(
        model, step_loss, steps, lr, weight_decay=weight_decay, progress=progress, label=label
    )
    train_seconds = time.perf_counter() - began
    metrics = evaluate_induction(model, n, alphabet, hops, hop_token, generator, hop_zero=hop_zero)
    task = "khop" if hop_token else "induction"
    if path is not None:
        info = dict(task=task, n=n, alphabet=alphabet, hops=hops, hop_token=hop_token, seed=seed)
        if hop_zero:
            info["hop_zero_token"] = layouts.hop_token(alphabet, 0, hops)
        save_model(sequence_model_to_transformer(model, info), path)
    return InductionRun(
        task=task,
        layers=layers,
        heads=heads,
        dim=dim,
        n=n,
        alphabet=alphabet,
        hops=hops,
        hop_token=hop_token,
        steps=steps,
        batch=batch,
        lr=lr,
        seed=seed,
        positional=positional,
        mlp=mlp,
        layernorm=layernorm,
        activation=None if activation == "relu" else activation,
        generator=generator,
        loss=LossSummary.of(losses),
        metrics=metrics,
        model_path=None if path is None else str(path),
        train_seconds=train_seconds,
        wall_seconds=time.perf_counter() - began,
        arch=None if arch == "gpt2" else arch,
        hop_zero=hop_zero or None,
    )


def _block_settings(
    arch: str, positional, mlp, layernorm, activation
) -> tuple[str, bool, bool, str]:
    """(positional, mlp, layernorm, activation) of a block family with the caller's choices."""
    if arch not in ARCHS:
        raise InputError(f"unknown arch {str(arch)[:40]!r}: use one of {', '.join(ARCHS)}")
    if arch == "gpt2":
        return positional or "learned", bool(mlp), bool(layernorm), activation or "relu"
    if positional not in (None, "rotary"):
        raise InputError(
            f"{param('positional')} {positional}: arch {arch} has rotary positions in its heads"
        )
    default = "silu" if arch == "llama" else "gelu"
    return "rotary", mlp is not False, layernorm is not False, activation or default


# ------------------------------------------------------------ Min / max


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
    progress: Progress = False,
) -> MinMaxRun:
    """Train a MinMaxNet on lists uniform over [M]^n (cross-entropy of both classifiers);
    evaluate_minmax's metrics. `out`: the exported MinMaxModel (save_minmax)."""
    began = time.perf_counter()
    check_sizes(M, n)
    _check_counts(heads=(heads, 1), dim=(dim, 1), batch=(batch, 1))
    lr = costs.check_run_settings(steps, seed, lr)
    costs.check_minmax_run(M, n, heads, dim, batch, steps, ev.MINMAX_EXHAUSTIVE, ev.MINMAX_SAMPLE)
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

    losses = fit(
        net, step_loss, steps, lr, progress=progress, label=f"minmax M={M} n={n} H={heads} d={dim}"
    )
    train_seconds = time.perf_counter() - began
    metrics = evaluate_minmax(net, n)
    if path is not None:
        save_minmax(minmax_net_to_model(net, {"task": "minmax", "n": n, "seed": seed}), path)
    return MinMaxRun(
        task="minmax",
        M=M,
        n=n,
        heads=heads,
        dim=dim,
        steps=steps,
        batch=batch,
        lr=lr,
        seed=seed,
        loss=LossSummary.of(losses),
        metrics=metrics,
        model_path=None if path is None else str(path),
        train_seconds=train_seconds,
        wall_seconds=time.perf_counter() - began,
    )


# ------------------------------------------------------------ Symmetric Boolean functions


def _boolean_metrics(
    net: BooleanNet, F: np.ndarray, prob: torch.Tensor, exact: list[int]
) -> BooleanMetrics:
    """Right on weight t when sign g(t) = F(t) (sign 0 is wrong): the float64 model, weighted by
    C(n, t)/2^n, and the exported exact model's signs `exact`."""
    with torch.no_grad():
        g = copy.deepcopy(net).double().score(torch.arange(net.n + 1)).numpy()  # [n+1]
    right = np.sign(g) == F
    return BooleanMetrics(
        accuracy_all_inputs=float(prob.numpy() @ right),
        weights_right=int(right.sum()),
        solved=bool(right.all()),
        solved_exact=bool(all(s == f for s, f in zip(exact, F))),
        min_margin=float(np.min(F * g)),
    )


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
    progress: Progress = False,
) -> BooleanRun:
    """Train a BooleanNet on a symmetric function (a name or F:+-…, boolean/task.py) over all 2^n
    inputs (module docstring). dim defaults to Theorem 3's bound min{D, 2·max{1, ⌈log₂ H⌉} + 2}.
    Metrics: accuracy_all_inputs (fraction of the 2^n inputs the float64 model gets right; sign 0 is
    wrong), solved (all right), solved_exact (the exported exact model, model_sign_exact, on every
    t), min_margin (min_t F(t)·g(t) in float64), threshold_degree T and below_bound (D·H < T: no
    model can solve it, Theorem 2). `out`: the exported exact model (save_boolean)."""
    began = time.perf_counter()
    _check_counts(n=(n, 1), degree=(degree, 1), heads=(heads, 1))
    dim = dim_bound(degree, heads) if dim is None else check_int("dim", dim, 1)
    lr = costs.check_run_settings(steps, seed, lr)
    F = np.array(parse_function(function, n), dtype=np.float64)  # [n+1] ∈ {−1, +1}, true ↔ −1
    costs.check_boolean_run(n, degree, heads, dim, steps)
    path = _out_path(out)
    T = sign_changes(tuple(int(v) for v in F))
    t = torch.arange(n + 1)
    prob = (
        torch.tensor([math.comb(n, k) for k in range(n + 1)], dtype=torch.float64) / 2.0**n
    )  # [n+1]
    torch.manual_seed(seed)
    net = BooleanNet(n, heads, dim, degree)
    target = torch.from_numpy(F).float()

    def step_loss(step: int) -> torch.Tensor:
        return (prob.float() * F_nn.softplus(-target * net.score(t))).sum()

    label = f"boolean {function} n={n} D={degree} H={heads}"
    losses = fit(net, step_loss, steps, lr, progress=progress, label=label)
    train_seconds = time.perf_counter() - began
    layer, readout = boolean_net_to_model(net)
    metrics = _boolean_metrics(net, F, prob, model_sign_exact(layer, readout, n))
    if path is not None:
        info = {"task": "boolean", "function": str(function), "n": n, "seed": seed}
        save_boolean(layer, readout, path, info)
    return BooleanRun(
        task="boolean",
        function=str(function),
        n=n,
        degree=degree,
        heads=heads,
        dim=dim,
        dim_bound=dim_bound(degree, heads),
        threshold_degree=T,
        below_bound=degree * heads < T,
        steps=steps,
        lr=lr,
        seed=seed,
        loss=LossSummary.of(losses),
        metrics=metrics,
        model_path=None if path is None else str(path),
        train_seconds=train_seconds,
        wall_seconds=time.perf_counter() - began,
    )


# ------------------------------------------------------------ Dispatch: sweeps and the command line


TRAINERS: dict[str, Callable[..., TrainResult]] = {  # one per name in constants.TASKS
    "induction": train_induction,
    "khop": train_induction,
    "minmax": train_minmax,
    "boolean": train_boolean,
}


def run_config(config: dict[str, Any]) -> TrainResult:
    """Run one configuration {"task": …, **kwargs} and return its typed result (`to_json()` is the
    JSON a sweep stores). "khop" is train_induction with hop_token=True and generator
    "no_adjacent_repeats" unless given. Unknown keys are an InputError naming the allowed ones."""
    if not isinstance(config, dict) or "task" not in config:
        raise InputError(
            f"a run config must be a dict with a 'task' key, one of {sorted(TRAINERS)}"
        )
    kwargs = dict(config)
    name = kwargs.pop("task")
    if name not in TRAINERS:
        raise InputError(f"unknown task {name!r}: use one of {sorted(TRAINERS)}")
    fn = TRAINERS[name]
    allowed = [
        p for p in inspect.signature(fn).parameters if not (name == "khop" and p == "hop_token")
    ]
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise InputError(f"unknown key(s) {unknown} for task {name!r}: allowed are {allowed}")
    if name == "khop":
        kwargs = {"generator": "no_adjacent_repeats", **kwargs, "hop_token": True}
    return fn(**kwargs)


def train(task: str, **settings: Any) -> TrainResult:
    """What `headcount train TASK` runs: run_config with keyword settings. task "induction" trains
    k-hop (run_config's "khop") when hops ≠ 1 or hop_zero; settings that are None take the task's
    defaults;
    paths become strings (as a sweep config holds them)."""
    config = {
        k: (str(v) if isinstance(v, os.PathLike) else v)
        for k, v in settings.items()
        if v is not None
    }
    if task == "induction" and (config.get("hops", 1) != 1 or config.get("hop_zero") is True):
        task = "khop"
    return run_config({"task": task, **config})
