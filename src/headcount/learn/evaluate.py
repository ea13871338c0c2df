"""Exact metrics of trained models on fixed held-out sets, so runs compare on equal inputs.

Held-out sets are seeded by EVAL_SEED and the task's sizes only — never the run's seed. Sequence
models are evaluated in float64 (a copy); min/max models after export, with exact decisions (a tie
is wrong).
"""

from __future__ import annotations

import copy

import numpy as np
import torch
import torch.nn.functional as F_nn
from scipy.special import gammaln

from headcount.core.model import BOTTOM
from headcount.induction import layouts
from headcount.induction import task as itask
from headcount.induction.heads import score_heads
from headcount.induction.metrics import PositionMetrics, induction_metrics
from headcount.learn.models import MinMaxNet, SequenceModel, minmax_net_to_model
from headcount.learn.results import (
    FamilyAccuracy,
    HeadScore,
    InductionMetrics,
    MinMaxMetrics,
    VerifierVerdict,
)
from headcount.minmax.exact_verify import decide_exact, verify_exact_one_head
from headcount.minmax.task import all_multisets, count_multisets

EVAL_SEED = 20_240_601  # held-out sets are fixed (independent of the training seed)
EVAL_SIZE = 2048  # held-out sequences for induction metrics
PATTERN_SIZE = 512  # held-out sequences for the head-pattern scores
FAMILY_SIZE = 256  # sequences per adversarial family
MINMAX_EXHAUSTIVE = 200_000  # evaluate on every multiset when there are at most this many
MINMAX_SAMPLE = 1 << 16  # else on this many uniform lists


# --------------------------------------------------------------------------------------------------
# Induction heads and k-hop


@torch.no_grad()
def sequence_predict(
    model: SequenceModel, tokens: np.ndarray, chunk: int = 512
) -> tuple[np.ndarray, list[np.ndarray]]:
    """(predictions [batch pos] with BOTTOM for ⊥, attention patterns per layer [batch heads q k])
    of `model` as it is (call on a float64 copy for exact metrics); argmax ties go to the lowest
    class, as in core."""
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


def head_scores(patterns: list[np.ndarray], sigma: np.ndarray, offset: int = 0) -> list[HeadScore]:
    """Per head: previous_token_score and induction_score as headcount.induction.heads defines them
    (score_heads: mean attention from i to i−1, and from i to find(i) over positions that have one).
    `offset` = positions before σ (the hop token)."""
    return [
        HeadScore(s.layer, s.head, s.previous_token, s.induction)
        for s in score_heads([np.asarray(p, dtype=np.float64) for p in patterns], sigma, offset)
    ]


def heldout_rng(n: int, alphabet: int) -> np.random.Generator:
    """The generator of the fixed held-out sets: seeded by EVAL_SEED, n and alphabet only (never the
    run's seed)."""
    return np.random.default_rng([EVAL_SEED, n, alphabet])


def heldout_sequences(
    n: int, alphabet: int, generator: str = "uniform", size: int = EVAL_SIZE
) -> np.ndarray:
    """The held-out σ's [size n] that evaluate_induction scores accuracy on (to recompute its
    metrics)."""
    return itask.GENERATORS[generator](heldout_rng(n, alphabet), size, n, alphabet)


def _at_hop(
    model64: SequenceModel, sigma: np.ndarray, alphabet: int, k: int, hop_token: bool, hops: int
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], PositionMetrics]:
    """(inputs, targets, patterns, induction_metrics) of the model at hop count k (with its hop
    token first when hop_token)."""
    target = itask.induction_targets(sigma, k)
    inputs = sigma
    if hop_token:
        first = np.full((len(sigma), 1), layouts.hop_token(alphabet, k, hops))
        inputs = np.concatenate([first, sigma], axis=1)
    pred, patterns = sequence_predict(model64, inputs)
    return inputs, target, patterns, induction_metrics(pred[:, int(hop_token) :], target)


@torch.no_grad()
def _eval_loss(
    model64: SequenceModel, inputs: np.ndarray, target: np.ndarray, alphabet: int, offset: int
) -> float:
    """Cross-entropy of the model on every target position (⊥ is class alphabet)."""
    cls = torch.from_numpy(np.where(target == BOTTOM, alphabet, target))
    logits = torch.cat(
        [model64(torch.from_numpy(inputs[s : s + 512])) for s in range(0, len(inputs), 512)]
    )
    return float(F_nn.cross_entropy(logits[:, offset:].reshape(-1, alphabet + 1), cls.reshape(-1)))


def _adversarial(
    model64: SequenceModel, rng: np.random.Generator, n: int, alphabet: int
) -> tuple[dict[str, FamilyAccuracy], float | None, float | None]:
    """(accuracy on each adversarial family but INDEX, accuracy_index, accuracy_index_all). INDEX
    (alphabet ≥ 3, n ≥ 3 only, else None) is scored at its query position 2k+1 = 2⌊(n−1)/2⌋+1 and at
    all its non-⊥ positions."""
    families, index, index_all = {}, None, None
    for name, generate in itask.ADVERSARIAL_FAMILIES.items():
        if name == "index" and (alphabet < 3 or n < 3):
            continue
        tokens = generate(rng, FAMILY_SIZE, n, alphabet)
        target = itask.induction_targets(tokens)
        pred = sequence_predict(model64, tokens)[0]
        metrics = induction_metrics(pred, target)
        if name == "index":
            query = 2 * ((n - 1) // 2)  # 0-based position of the final '?'
            index = float(np.mean(pred[:, query] == target[:, query]))
            index_all = metrics.accuracy
        else:
            families[name] = FamilyAccuracy(metrics.accuracy, metrics.accuracy_bottom)
    return families, index, index_all


def evaluate_induction(
    model: SequenceModel,
    n: int,
    alphabet: int,
    hops: int = 1,
    hop_token: bool = False,
    generator: str = "uniform",
    eval_size: int = EVAL_SIZE,
    hop_zero: bool = False,
) -> InductionMetrics:
    """Exact task metrics of `model` (run in float64) on fixed held-out sets (seeded by EVAL_SEED, n
    and alphabet):

    accuracy / accuracy_bottom: non-⊥ / ⊥ positions of `eval_size` sequences from `generator` (with
    a hop token: at k = hops; accuracy_by_hop gives every k, from 0 with hop_zero); eval_loss: their
    cross-entropy;
    accuracy_index: the INDEX family (index_family_for_length) at the query position,
    accuracy_index_all: at all its non-⊥ positions; adversarial: non-⊥ and ⊥ accuracy on each other
    adversarial family (these three for hops = 1 without a hop token only); head_scores: head_scores
    on the first PATTERN_SIZE sequences."""
    model64 = copy.deepcopy(model).double().eval()
    rng = heldout_rng(n, alphabet)
    offset = int(hop_token)
    sigma = itask.GENERATORS[generator](
        rng, eval_size, n, alphabet
    )  # the same set as heldout_sequences
    by_hop: dict[str, float] = {}
    for k in range(0 if hop_zero else 1, hops + 1) if hop_token else [hops]:
        inputs, target, patterns, metrics = _at_hop(model64, sigma, alphabet, k, hop_token, hops)
        by_hop[str(k)] = metrics.accuracy
    # the last k is `hops`: its metrics, loss and patterns are the ones reported
    adversarial, index, index_all = None, None, None
    if not hop_token and hops == 1:
        adversarial, index, index_all = _adversarial(model64, rng, n, alphabet)
    return InductionMetrics(
        eval_size=eval_size,
        eval_loss=_eval_loss(model64, inputs, target, alphabet, offset),
        accuracy=metrics.accuracy,
        accuracy_bottom=metrics.accuracy_bottom,
        errors=metrics.errors,
        token_positions=metrics.token_positions,
        bottom_positions=metrics.bottom_positions,
        accuracy_by_hop=by_hop if hop_token else None,
        head_scores=head_scores([p[:PATTERN_SIZE] for p in patterns], sigma[:PATTERN_SIZE], offset),
        accuracy_index=index,
        accuracy_index_all=index_all,
        adversarial=adversarial,
    )


# --------------------------------------------------------------------------------------------------
# Min / max


def _multinomial_log_counts(x: np.ndarray, M: int) -> np.ndarray:
    """log of the number of lists in [M]^n with each multiset's histogram: log n! − Σ log h_ω!."""
    h = np.zeros((x.shape[0], M), dtype=np.int64)
    np.add.at(h, (np.repeat(np.arange(x.shape[0]), x.shape[1]), x.ravel() - 1), 1)
    return gammaln(x.shape[1] + 1) - gammaln(h + 1).sum(axis=1)


def _minmax_inputs(M: int, n: int) -> tuple[bool, np.ndarray, np.ndarray]:
    """(exhaustive, lists [batch n], weights summing to 1): every multiset weighted by its orderings
    when there are ≤ MINMAX_EXHAUSTIVE, else MINMAX_SAMPLE fixed uniform lists (seeded by EVAL_SEED,
    M, n)."""
    exhaustive = count_multisets(M, n) <= MINMAX_EXHAUSTIVE
    if exhaustive:
        x = all_multisets(M, n)
        logc = _multinomial_log_counts(x, M)
        weight = np.exp(logc - logc.max())
    else:
        x = np.random.default_rng([EVAL_SEED, M, n]).integers(1, M + 1, size=(MINMAX_SAMPLE, n))
        weight = np.ones(len(x))
    return exhaustive, x, weight / weight.sum()


def evaluate_minmax(net: MinMaxNet, n: int) -> MinMaxMetrics:
    """Exact accuracies of `net` (exported to float64, decisions with verify.decide_exact: near-ties
    are decided exactly, a tie is wrong) as fractions of all M^n lists: the head is
    permutation-invariant, so each multiset counts with its number of orderings (exhaustive: true)
    when that is feasible (see _minmax_inputs). For one head also the exact one-head verifier's
    verdicts for min and max."""
    model = minmax_net_to_model(net)
    exhaustive, x, weight = _minmax_inputs(net.M, n)
    right_min = decide_exact(model, model.classifier_min, x) == x.min(axis=1)
    right_max = decide_exact(model, model.classifier_max, x) == x.max(axis=1)
    verdicts = {}
    if net.n_heads == 1:
        head = model.layer.heads[0]
        for name, clf in (("min", model.classifier_min), ("max", model.classifier_max)):
            v = verify_exact_one_head(head, clf, name, n)
            verdicts[f"verifier_{name}"] = VerifierVerdict(
                correct=v.correct,
                counterexample_exists=not v.correct,
                margin=float(v.margin),
                counterexample=None if v.worst_input is None else [int(t) for t in v.worst_input],
                wrong_class=v.wrong_class,
                decision=v.decision,
            )
    return MinMaxMetrics(
        exhaustive=exhaustive,
        inputs_evaluated=int(len(x)),
        accuracy_min=float(weight @ right_min),
        accuracy_max=float(weight @ right_max),
        accuracy_both=float(weight @ (right_min & right_max)),
        **verdicts,
    )
