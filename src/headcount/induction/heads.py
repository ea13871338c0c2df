"""What each attention head does on the induction / k-hop task: head scores for any weight-form
model (constructed, trained, or imported), from its float64 attention patterns on seeded inputs
(issue 15, part 1).

On the characters σ (with the hop-prefix layout, the positions after the hop token; every score is
over character positions only), with A the head's attention matrix [query key] on one input:

* ``previous_token`` — mean over queries i ≥ 1 of A[i, i−1];
* ``duplicate_token`` — mean over queries i with an earlier j < i, σ_j = σ_i, of the attention mass
  on all such j (TransformerLens's duplicate-token sense: every earlier occurrence);
* ``latest_earlier`` — mean over queries i with at least two earlier j < i, σ_j = σ_i, of
  A[i, find(i) − 1]: the mass on the *latest* strictly earlier occurrence alone, where there is a
  choice — the pointer a ⌊log₂ k⌋ + 2-layer k-hop model's first layer needs (pointer_rank.py). A
  head spreading evenly over the occurrences scores ≤ 1/2, a pointer 1 (POINTER_THRESHOLD sits
  between). A score, not a role: such a head's role stays duplicate_token;
* ``induction`` — mean over queries with an answer of A[i, find(i)], find(i) = j + 1 for the latest
  earlier j with σ_j = σ_i (the position whose token the seed's task outputs);
* ``find`` — for r = 1, 2, 4, … ≤ n: the cosine similarity ⟨A, F_r⟩ / (‖A‖·‖F_r‖) (Frobenius, over
  the character block) between A and the 0/1 matrix F_r of find^r (F_r[i, find^r(i)] = 1 where
  find^r(i) exists), averaged over the inputs where F_r is not empty — how well the head follows r
  hops at once;
* ``sink`` — mean over queries i ≥ 1 of the attention on the input's first position (position 0: the
  hop token in the hop-prefix layout, else the first character);
* ``uniform`` — mean over queries i ≥ 1 of the overlap Σ_{j ≤ i} min(A[i, j], 1/(i+1)) of the head's
  row with the uniform distribution on 0..i (1 − the total-variation distance for a row that sums to
  1): 1 for a head that averages every earlier character evenly (the one-layer construction's head),
  1/(i+1) in row i for a head that attends to one position, 0 for one that attends outside the
  characters.

``role`` is the mechanism with the highest score among previous_token, duplicate_token, induction,
sink, uniform and find^r for r ≥ 2 (find^1 is the induction pattern, scored as `induction`), when
that score is at least ROLE_THRESHOLD; "none" otherwise. The two-layer construction's heads come out
as previous_token and duplicate_token (layer 0) and induction (layer 1), the one-layer
construction's (a table model) as uniform — tests/induction/test_heads.py. Table models
(core/model/table.py) are read like weight-form ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from headcount.common.errors import param
from headcount.common.jsonable import JsonResult
from headcount.common.resources import check_memory, check_work
from headcount.common.validate import check_choice, check_int
from headcount.core.certify import Model, attention_patterns
from headcount.core.model import load_model
from headcount.induction import task
from headcount.induction.layouts import (
    DEFAULT_LAYOUT,
    LAYOUTS,
    TASKS,
    bind_layout,
    check_hops,
    lay_out,
    prefix_length,
    task_characters,
)

ROLE_THRESHOLD = 0.4  # a head's best score must reach this for it to have a role
# latest_earlier at least this: a strictly-earlier pointer (an even spread over ≥ 2 occurrences
# scores ≤ 1/2, the pointer itself 1)
POINTER_THRESHOLD = 0.75
DEFAULT_SAMPLES = 256
MAX_SAMPLES = 1 << 16
MAX_N = 1024
# patterns of every head are held at once: samples × heads × (n+1)² float64 values
MAX_PATTERN_VALUES = 2 * 10**8
ROLES = ("previous_token", "duplicate_token", "induction", "sink", "uniform")


def find_powers(sigma: np.ndarray) -> dict[int, np.ndarray]:
    """{r: find^r positions [batch n] (−1 where it does not exist)} for r = 1, 2, 4, … ≤ n, by
    squaring."""
    f = task.find_positions(sigma)
    out, r = {}, 1
    rows = np.arange(f.shape[0])[:, None]
    while r <= sigma.shape[1]:
        out[r] = f
        f = np.where(f >= 0, f[rows, np.maximum(f, 0)], -1)
        r *= 2
    return out


def _mean_mass(mass: np.ndarray, rows: np.ndarray) -> float:
    """Mean of `mass` [batch query] over the (batch, query) cells where `rows` is True; 0.0 when
    none is."""
    return float(mass[rows].mean()) if rows.any() else 0.0


def _cosine(A: np.ndarray, target: np.ndarray) -> float:
    """Mean over inputs (those with a non-empty target) of ⟨A, F⟩ / (‖A‖ ‖F‖), A, F [batch query
    key]."""
    dot = (A * target).sum(axis=(1, 2))
    norms = np.sqrt((A * A).sum(axis=(1, 2)) * (target * target).sum(axis=(1, 2)))
    keep = norms > 0
    return float((dot[keep] / norms[keep]).mean()) if keep.any() else 0.0


def _evenness(A: np.ndarray, even: np.ndarray) -> float:
    """Mean over queries i ≥ 1 of Σ_{j ≤ i} min(A[i, j], 1/(i+1)) (module docstring:
    ``uniform``)."""
    if A.shape[1] < 2:
        return 0.0
    overlap = np.minimum(A, even).sum(axis=-1)  # [batch query]; `even` is 0 above the diagonal
    return float(overlap[:, 1:].mean())


@dataclass(frozen=True)
class HeadScore:
    """One head's scores (module docstring); `layer` and `head` are 0-based."""

    layer: int
    head: int
    previous_token: float
    duplicate_token: float
    induction: float
    find: dict[int, float]
    sink: float
    uniform: float
    latest_earlier: float = 0.0  # added after the roles: a score, not a role (module docstring)

    @property
    def role(self) -> str:
        candidates = {name: getattr(self, name) for name in ROLES}
        candidates |= {f"find^{r}": score for r, score in self.find.items() if r >= 2}
        best = max(candidates, key=lambda name: candidates[name])  # ties: the first listed
        return best if candidates[best] >= ROLE_THRESHOLD else "none"

    def to_json(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "head": self.head,
            "previous_token": self.previous_token,
            "duplicate_token": self.duplicate_token,
            "latest_earlier": self.latest_earlier,
            "induction": self.induction,
            "find": {str(r): score for r, score in self.find.items()},
            "sink": self.sink,
            "uniform": self.uniform,
            "role": self.role,
        }


def score_heads(patterns: list[np.ndarray], sigma: np.ndarray, offset: int = 0) -> list[HeadScore]:
    """HeadScores of every head from its patterns [batch heads query key] on inputs whose characters
    σ [batch n] start at position `offset` (1 with a hop token first)."""
    batch, n = sigma.shape
    queries = np.arange(n)
    earlier_same = (sigma[:, :, None] == sigma[:, None, :]) & (queries[None, :] < queries[:, None])[
        None
    ]
    powers = find_powers(sigma)
    targets = {}
    for r, f in powers.items():
        F = np.zeros((batch, n, n))
        b, i = np.nonzero(f >= 0)
        F[b, i, f[b, i]] = 1.0
        targets[r] = F
    find1 = powers[1]
    has_find = find1 >= 0
    several = earlier_same.sum(axis=-1) >= 2  # a choice of earlier occurrence [batch query]
    even = np.tril(np.ones((n, n))) / (queries + 1.0)[:, None]  # uniform over keys 0..i [query key]
    out = []
    for l, layer in enumerate(patterns):
        for h in range(layer.shape[1]):
            full = layer[:, h]  # [batch query key] over the whole input
            A = full[:, offset:, offset:]  # the character block
            previous = A[:, queries[1:], queries[:-1]] if n > 1 else np.zeros((batch, 0))
            duplicate = (A * earlier_same).sum(axis=-1)
            induction = np.take_along_axis(A, np.maximum(find1, 0)[..., None], axis=-1)[..., 0]
            latest = np.take_along_axis(A, np.maximum(find1 - 1, 0)[..., None], axis=-1)[..., 0]
            out.append(
                HeadScore(
                    l,
                    h,
                    float(previous.mean()) if previous.size else 0.0,
                    _mean_mass(duplicate, earlier_same.any(axis=-1)),
                    _mean_mass(induction, has_find),
                    {r: _cosine(A, F) for r, F in targets.items()},
                    float(full[:, offset + 1 :, 0].mean()) if n > 1 else 0.0,
                    _evenness(A, even),
                    _mean_mass(latest, several),
                )
            )
    return out


@dataclass(frozen=True)
class HeadAnalysis(JsonResult):
    """analyze heads' result: the task and inputs, and every head's scores."""

    task: str
    layout: str
    hops: int
    n: int
    alphabet: int
    samples: int
    seed: int
    heads: list[HeadScore] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "layout": self.layout,
            "hops": self.hops,
            "n": self.n,
            "alphabet": self.alphabet,
            "samples": self.samples,
            "seed": self.seed,
            "role_threshold": ROLE_THRESHOLD,
            "heads": [h.to_json() for h in self.heads],
        }


def _check_request(
    task_name: str, layout: str | None, n: int, alphabet: int, samples: int, seed: int, hops: int
):
    """The request's options (before any file is read); the layout, defaulted by the task."""
    check_choice("task", task_name, TASKS)
    layout = (
        DEFAULT_LAYOUT[task_name] if layout is None else check_choice("layout", layout, LAYOUTS)
    )
    check_int("n", n, 2, MAX_N)
    check_int("alphabet", alphabet, 2)
    check_int("samples", samples, 1, MAX_SAMPLES)
    check_int("seed", seed, 0)
    check_hops(hops)
    return layout


def analyze_heads(
    model: Model,
    task_name: str = "induction",
    layout: str | None = None,
    n: int = 16,
    alphabet: int = 4,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    hops: int = 1,
) -> HeadAnalysis:
    """Head scores of `model` on `samples` seeded inputs of the task (characters as the task draws
    them: uniform for induction, no two adjacent equal for khop, from np.random.default_rng([seed,
    n, alphabet])) in `layout` (hop-prefix puts the token of hop count `hops` first)."""
    layout = _check_request(task_name, layout, n, alphabet, samples, seed, hops)
    offset = prefix_length(layout)
    length = n + offset
    heads = sum(model.heads_per_layer)
    check_work(
        float(samples) * heads * length * length,
        MAX_PATTERN_VALUES,
        f"analyze heads on {samples} inputs of {length} tokens ({heads} heads)",
        "attention weights held (samples × heads × length²)",
        f"{param('samples')} or {param('n')}",
    )
    check_memory(8.0 * 3 * samples * heads * length * length, f"analyze heads on {samples} inputs")
    bound = bind_layout(model, layout, n, alphabet, hops)
    sigma = task_characters(task_name, samples, n, alphabet, seed)
    patterns = attention_patterns(bound, lay_out(sigma, layout, alphabet, hops))
    return HeadAnalysis(
        task_name, layout, hops, n, alphabet, samples, seed, score_heads(patterns, sigma, offset)
    )


def analyze_heads_file(
    path,
    task_name: str = "induction",
    layout: str | None = None,
    n: int = 16,
    alphabet: int = 4,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    hops: int = 1,
) -> HeadAnalysis:
    """analyze_heads of a model file; the options are checked before the file is read."""
    _check_request(task_name, layout, n, alphabet, samples, seed, hops)
    return analyze_heads(load_model(path), task_name, layout, n, alphabet, samples, seed, hops)
