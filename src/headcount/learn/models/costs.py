"""What a training run needs before it starts, and the bounds every run is held to (learn/train.py
checks them before it builds a model, so `headcount train`, run_config and sweeps refuse the same
settings).

Estimates are arithmetic on the arguments in floats, so sizes like 10¹⁰⁰ are estimated without
overflowing and nothing is allocated first:
  * memory (bytes): the parameters with their gradients and AdamW state (float32), one step's
    activations (the tensors autograd keeps, about twice the forward's), the float64 copy the
    metrics run on and the evaluation sets (learn/evaluate.py's sizes, passed in) — checked with
    common.resources.check_memory;
  * compute (floating-point operations): steps × one step (forward + backward ≈ 3 forwards) plus the
    evaluation — at most TRAIN_FLOPS_LIMIT (check_work, naming `steps` and the sizes).
The estimates count what dominates (matrix products, attention patterns, logits), not every small
tensor.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from headcount.boolean.certification import check_exact_cost
from headcount.common.errors import InputError, param
from headcount.common.resources import check_memory, check_work
from headcount.learn.models.sequence import SequenceConfig

MAX_STEPS = 10_000_000
"""Most training steps (the parameter `steps`). The experiments use ≤ 4000; 10⁷ steps of the
smallest model (~1 ms each) is ~3 hours, and every step's loss is kept (10⁷ floats ≈ 0.3 GB): beyond
is a typo, not an experiment (10⁹ steps looked like a hang, issue 13)."""

MAX_SEED = 2**63 - 1
"""Largest `seed`: torch.manual_seed takes 64-bit seeds and the results database stores a 64-bit
integer."""

MAX_LR = 10.0
"""Largest peak learning rate (`lr`): AdamW moves each parameter by about lr per step, so beyond ~1
every run diverges (the defaults are 3·10⁻³ to 3·10⁻²); NaN, infinite, zero and negative rates are
refused too."""

TRAIN_FLOPS_LIMIT = 1e14
"""Most floating-point operations one run may take (training and evaluation, estimated): a few hours
on one core, 20× the largest experiment (k-hop full scale, ~5·10¹²)."""

MINMAX_EVAL_LIMIT = 2e8
"""Most list × class × head operations of a min/max evaluation (exact decisions on the held-out
lists, and for one head the exact verifier's M³ scan): ~10⁷ run per second, so ≤ ~20 s. M = 300
takes ~15 s at n = 4; M = 1000 over a minute (issue 13: the evaluation, not the training, hangs at
large M)."""

F32, F64 = 4, 8


def _f(x: Any) -> float:
    """A count as a float, capped at 10³⁰⁰ (an integer of 400 digits would not convert)."""
    return float(min(x, 10**300))


@dataclass(frozen=True)
class RunCost:
    """A run's estimated peak memory (bytes), operations per training step and for the
    evaluation."""

    memory: float
    step_flops: float
    eval_flops: float


def check_run_settings(steps: Any, seed: Any, lr: Any) -> float:
    """InputError unless 0 ≤ steps ≤ MAX_STEPS and 0 ≤ seed ≤ MAX_SEED are integers and 0 < lr ≤
    MAX_LR is a finite number; returns lr as a float."""
    for name, value, high in (("steps", steps, MAX_STEPS), ("seed", seed, MAX_SEED)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise InputError(f"{name} must be an integer, got {value!r}")
        if not 0 <= value <= high:
            raise InputError(
                f"{param(name)} {value} is out of range: allowed 0..{high} "
                f"(see {param(name)} in {param('help')})"
            )
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr <= 0:
        raise InputError(f"{param('lr')} must be a positive finite number ≤ {MAX_LR}, got {lr!r}")
    if lr > MAX_LR:
        raise InputError(f"{param('lr')} {lr} is more than {MAX_LR} (AdamW diverges far below it)")
    return float(lr)


def check_cost(cost: RunCost, steps: int, what: str) -> None:
    """The memory and compute limits for a run of `steps` steps (InputError naming estimate and
    limit)."""
    check_memory(cost.memory, what)
    total = steps * cost.step_flops + cost.eval_flops
    check_work(
        total,
        TRAIN_FLOPS_LIMIT,
        what,
        "floating-point operations",
        f"{param('steps')} or the model's sizes",
    )


def check_minmax_run(
    M: int, n: int, heads: int, dim: int, batch: int, steps: int, exhaustive_max: int, sample: int
) -> None:
    """check_cost of a min/max run, and MINMAX_EVAL_LIMIT on its exact evaluation (evaluate_minmax
    scores every multiset when there are at most `exhaustive_max`, else `sample` lists)."""
    what = f"train minmax (M {M}, n {n}, heads {heads}, dim {dim})"
    inputs, exhaustive = minmax_eval_inputs(M, n, exhaustive_max, sample)
    check_cost(minmax_cost(M, n, heads, dim, batch, inputs, exhaustive), steps, what)
    units = minmax_eval_units(M, n, heads, inputs)
    check_work(
        units,
        MINMAX_EVAL_LIMIT,
        f"{what}'s exact evaluation",
        "list × class × head operations",
        param("M"),
    )


def check_boolean_run(n: int, degree: int, heads: int, dim: int, steps: int) -> None:
    """check_cost of a Boolean run, and boolean.certify's exact budget for checking the exported
    model (every monomial a term, float64 weights as exact rationals: ~128 bits each, typically)."""
    what = f"train boolean (n {n}, D {degree}, H {heads}, d {dim})"
    check_cost(boolean_cost(n, degree, heads, dim), steps, what)
    terms = monomials(_f(dim), _f(degree))
    check_exact_cost(
        n,
        degree,
        heads,
        dim,
        terms=terms,
        bits=128,
        what=what,
        options=f"{param('n')}, {param('degree')} or {param('heads')}",
    )


def monomials(dim: float, degree: float) -> float:
    """C(dim + degree, degree) as a float (inf when beyond float range), without computing a huge
    binomial."""
    try:
        return math.exp(
            math.lgamma(dim + degree + 1) - math.lgamma(dim + 1) - math.lgamma(degree + 1)
        )
    except OverflowError:
        return math.inf


def sequence_cost(
    cfg: SequenceConfig, batch: int, eval_rows: int, hop_evals: int, family_rows: int
) -> RunCost:
    """A SequenceModel trained on batches of `batch` sequences, evaluated on `eval_rows` sequences
    at each of `hop_evals` hop counts (their patterns and logits kept), plus `family_rows`
    adversarial sequences (each family draws a [rows alphabet] random table)."""
    V, A, n, L, h, d = (
        _f(x) for x in (cfg.vocab, cfg.alphabet, cfg.n_ctx, cfg.layers, cfg.heads, cfg.dim)
    )
    e, m = _f(cfg.d_head), _f(cfg.d_mlp) if cfg.mlp else 0.0
    batch, eval_rows, hop_evals, family_rows = (
        _f(x) for x in (batch, eval_rows, hop_evals, family_rows)
    )
    params = (V + n) * d + L * (4 * h * d * e + 2 * d * m + m + d) + (d + 1) * (A + 1)
    per_row = L * (3 * n * d + 4 * h * n * e + 3 * h * n * n + 2 * n * m) + 3 * n * (
        A + 1
    )  # activations
    forward = (
        2 * n * (L * (4 * h * d * e + 2 * h * n * e + 2 * d * m) + d * (A + 1))
    )  # per sequence
    memory = (
        16 * params  # float32 parameters, gradients and AdamW's two moments
        + 2 * F32 * batch * (per_row + 3 * A)  # one step: saved activations, the generators' tables
        + F64 * params  # the float64 copy the metrics run on
        + F64 * 512 * per_row  # one evaluation chunk
        + F64
        * (
            2 * eval_rows * L * h * n * n + 3 * eval_rows * n * (A + 1)
        )  # patterns kept, eval logits
        + F64 * 3 * family_rows * A  # the adversarial families' random [rows alphabet] tables
        + n * n
    )
    step = 3 * batch * forward + 8 * batch * A
    return RunCost(
        memory, step, forward * (eval_rows * (hop_evals + 1) + family_rows) + 8 * family_rows * A
    )


def minmax_cost(
    M: int, n: int, heads: int, dim: int, batch: int, inputs: int, exhaustive: bool
) -> RunCost:
    """A MinMaxNet trained on batches of `batch` lists of length n over [M], evaluated on `inputs`
    lists (every multiset when `exhaustive`, with an [inputs M] histogram) and, for one head, the
    exact verifier (M × M float64 arrays); ``eval_flops`` counts each list × class × head operation
    as 10 flops."""
    M, n, H, d, B, N = (_f(x) for x in (M, n, heads, dim, batch, inputs))
    params = H * M * (1 + d) + 2 * M * d
    memory = (
        16 * params
        + 3 * F32 * B * (H * n * (d + 1) + 2 * M)  # gathered values and weights, both logits
        + F64 * params
        + F64 * N * (n + (M if exhaustive else 0))  # the lists, and the multisets' histograms
        + 2**25  # decide_exact's ~16 MB chunks
        + (6 * F64 * M * M if heads == 1 else 0)  # the one-head verifier's M × M arrays
    )
    step = 3 * B * (2 * H * n * d + 4 * M * d + 4 * M)
    return RunCost(memory, step, 10 * minmax_eval_units(M, n, heads, N))


def minmax_eval_units(M: float, n: float, heads: int, inputs: float) -> float:
    """List × class × head operations of evaluate_minmax (+ 2·M³ for the one-head verifier's two
    scans)."""
    return _f(inputs) * _f(n) * _f(M) * _f(heads) + (2 * _f(M) * _f(M) * _f(M) if heads == 1 else 0)


def minmax_eval_inputs(M: int, n: int, exhaustive_max: int, sample: int) -> tuple[int, bool]:
    """(lists evaluate_minmax scores, whether that is every multiset): C(n + M − 1, n) multisets
    when there are at most `exhaustive_max`, else `sample` lists — decided without computing a huge
    binomial."""
    Mf, nf = _f(M), _f(n)
    if math.lgamma(nf + Mf) - math.lgamma(nf + 1) - math.lgamma(Mf) > math.log(2 * exhaustive_max):
        return sample, False
    count = math.comb(n + M - 1, n)
    return (count, True) if count <= exhaustive_max else (sample, False)


def boolean_cost(n: int, degree: int, heads: int, dim: int) -> RunCost:
    """A BooleanNet over t = 0..n: its readout gathers a [monomials d n+1] tensor (C(dim + degree,
    degree) monomials), in float32 for training and float64 for the metrics. The exact check of the
    exported model is boolean.certify's budget, checked separately."""
    n1, D, H, d = _f(n) + 1, _f(degree), _f(heads), _f(dim)
    terms = monomials(d, D)
    params = 2 * H + 2 * H * d + terms
    memory = (
        16 * params
        + terms * (64 + 16 * d)  # the monomial list and its exponent tensor
        + 3
        * F32
        * (terms * d * n1 + (D + 1) * n1 * d)  # readout's gather, products, powers (and grads)
        + 2 * F64 * terms * d * n1  # the float64 copy's score
    )
    step = 3 * (2 * terms * d * n1 + 4 * H * d * n1)
    return RunCost(memory, step, step)
