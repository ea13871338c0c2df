"""Typed results of training runs: frozen dataclasses whose `to_json()` is the flat JSON object a
sweep stores for the run (and `headcount train` prints as JSON), key for key as before the types
existed.

A run's JSON is its settings, then the loss (first_loss, final_loss, loss_curve), then the task's
exact metrics, then model_path, train_seconds and wall_seconds: the `loss` and `metrics` fields are
spliced in flat. NaN and ±inf are kept as floats (common.jsonable, nonfinite="keep"): a diverged
loss must stay visible in the database. Metrics that only some runs have (accuracy_by_hop with a hop
token, adversarial for plain induction, the one-head verifier's verdicts) are left out, not null,
when absent.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.common.jsonable import jsonable

_FLAT = ("loss", "metrics")  # nested results whose keys go straight into the run's JSON
# left out when None (activation: None for relu, arch: None for gpt2, so runs stored before they
# existed read the same)
_OPTIONAL = (
    "accuracy_by_hop",
    "adversarial",
    "verifier_min",
    "verifier_max",
    "activation",
    "arch",
    "hop_zero",
)


class _Record:
    """to_json(): the fields in order through jsonable (NaN kept); _FLAT fields spliced in,
    _OPTIONAL fields left out when None."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name in _FLAT:
                out.update(value.to_json())
            elif not (f.name in _OPTIONAL and value is None):
                out[f.name] = jsonable(value, nonfinite="keep")
        return out


# --------------------------------------------------------------------------------------------------
# Shared


@dataclass(frozen=True)
class LossSummary(_Record):
    """first_loss, final_loss (mean over the last 10% of steps, 1 to 50 of them) and loss_curve
    ([[step, mean loss over the window ending there], …] at ≤ 32 evenly spaced steps); None for no
    steps."""

    first_loss: float | None
    final_loss: float | None
    loss_curve: list[list[float]]

    @classmethod
    def of(cls, losses: list[float], points: int = 32) -> LossSummary:
        if not losses:
            return cls(None, None, [])
        tail = losses[-max(1, min(50, len(losses) // 10)) :]
        edges = np.unique(np.linspace(0, len(losses), points + 1).astype(int))
        curve = [[int(b), float(np.mean(losses[a:b]))] for a, b in zip(edges[:-1], edges[1:])]
        return cls(losses[0], float(np.mean(tail)), curve)


# --------------------------------------------------------------------------------------------------
# Induction heads and k-hop


@dataclass(frozen=True)
class HeadScore(_Record):
    """Attention-pattern scores of one head (TransformerLens's head-detector sense)."""

    layer: int
    head: int
    previous_token_score: float
    induction_score: float


@dataclass(frozen=True)
class FamilyAccuracy(_Record):
    accuracy: float
    accuracy_bottom: float


@dataclass(frozen=True)
class InductionMetrics(_Record):
    """evaluate_induction's exact metrics (see there)."""

    eval_size: int
    eval_loss: float
    accuracy: float
    accuracy_bottom: float
    errors: int
    token_positions: int
    bottom_positions: int
    accuracy_by_hop: dict[str, float] | None  # with a hop token only
    head_scores: list[HeadScore]
    accuracy_index: float | None
    accuracy_index_all: float | None
    adversarial: dict[str, FamilyAccuracy] | None  # plain induction (hops = 1, no hop token) only


@dataclass(frozen=True)
class InductionRun(_Record):
    """A trained SequenceModel: settings, loss, InductionMetrics. task is "khop" with a hop
    token."""

    task: str
    layers: int
    heads: int
    dim: int
    n: int
    alphabet: int
    hops: int
    hop_token: bool
    steps: int
    batch: int
    lr: float
    seed: int
    positional: str
    mlp: bool
    layernorm: bool
    activation: str | None  # the MLP's, when not relu
    generator: str
    loss: LossSummary
    metrics: InductionMetrics
    model_path: str | None
    train_seconds: float
    wall_seconds: float
    arch: str | None = None  # the block family (learn.models.blocks), when not gpt2
    hop_zero: bool | None = None  # True when hop count 0 was trained (its token S + hops)


# --------------------------------------------------------------------------------------------------
# Min / max


@dataclass(frozen=True)
class VerifierVerdict(_Record):
    """The exact one-head verifier on a trained head for one task
    (minmax.exact_verify.verify_exact_one_head)."""

    correct: bool
    counterexample_exists: bool
    margin: float
    counterexample: list[int] | None
    wrong_class: int | None
    decision: int | None


@dataclass(frozen=True)
class MinMaxMetrics(_Record):
    """evaluate_minmax's exact accuracies (fractions of all M^n lists) and, for one head, the
    verdicts."""

    exhaustive: bool
    inputs_evaluated: int
    accuracy_min: float
    accuracy_max: float
    accuracy_both: float
    verifier_min: VerifierVerdict | None = None
    verifier_max: VerifierVerdict | None = None


@dataclass(frozen=True)
class MinMaxRun(_Record):
    task: str
    M: int
    n: int
    heads: int
    dim: int
    steps: int
    batch: int
    lr: float
    seed: int
    loss: LossSummary
    metrics: MinMaxMetrics
    model_path: str | None
    train_seconds: float
    wall_seconds: float


# --------------------------------------------------------------------------------------------------
# Symmetric Boolean functions


@dataclass(frozen=True)
class BooleanMetrics(_Record):
    """Exact metrics over all 2^n inputs (weighted by t): the float64 model's, then the exported
    model's."""

    accuracy_all_inputs: float
    weights_right: int
    solved: bool
    solved_exact: bool
    min_margin: float


@dataclass(frozen=True)
class BooleanRun(_Record):
    task: str
    function: str
    n: int
    degree: int
    heads: int
    dim: int
    dim_bound: int
    threshold_degree: int
    below_bound: bool
    steps: int
    lr: float
    seed: int
    loss: LossSummary
    metrics: BooleanMetrics
    model_path: str | None
    train_seconds: float
    wall_seconds: float


TrainResult = InductionRun | MinMaxRun | BooleanRun

__all__ = [
    "BooleanMetrics",
    "BooleanRun",
    "FamilyAccuracy",
    "HeadScore",
    "InductionMetrics",
    "InductionRun",
    "LossSummary",
    "MinMaxMetrics",
    "MinMaxRun",
    "TrainResult",
    "VerifierVerdict",
]
