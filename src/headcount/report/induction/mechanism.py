"""The induction circuit, built and learned (issue 15, point 2): the claim
`induction.heads.mechanism` and its side-by-side attention figure.

Measure: `analyze heads` (induction.heads.analyze_heads) of the two-layer construction and of the
best trained two-layer model of the learning lab's induction-depth experiment (learn/experiments.py,
at the report's scale, in Context.results_db: the highest non-⊥ accuracy among its two-layer runs,
ties to the smaller n), both at that run's n and alphabet on the same seeded inputs. The experiment
keeps its models beside the database (models/<run id>.safetensors); a run stored without one (a
database written before it kept them) is retrained from its config — training is deterministic per
seed on CPU — and kept there.

Check: the construction's heads have the roles it was built with (BUILT_ROLES: a previous-token and
a duplicate-token head in layer 0, an induction head in layer 1) — PASS only then. The trained
model's roles are reported, not asserted: whether it found the same circuit (CIRCUIT: a
previous-token head in layer 0 and an induction head in layer 1) is said in the detail and drawn.

Describe: one line; the figure draws both models' attention on the same input
(report/views/attention.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt

from headcount.core.certify import Model
from headcount.induction.construction import two_layer_induction
from headcount.induction.heads import HeadScore
from headcount.learn.constants import DEFAULT_DB
from headcount.learn.experiments import experiment_rows, kept_or_retrained
from headcount.report.claims import FAIL, INDUCTION_PAPER, ClaimResult, Context, claim, status
from headcount.report.experiments import experiment_summary
from headcount.report.figures import figure
from headcount.report.views.attention import (
    ModelPatterns,
    draw_patterns,
    model_patterns,
    score_items,
)
from headcount.report.views.attention_html import patterns_html

EXPERIMENT = "induction-depth"
SEED = 0  # the inputs both models are scored and drawn on: default_rng([SEED, n, alphabet])
# the roles two_layer_induction builds, per layer (sorted): layer 0's previous-token head copies
# σ_{i−1}, its duplicate-token head averages the earlier occurrences of σ_i (the ⊥ test); layer 1 is
# the induction head
BUILT_ROLES = {0: ("duplicate_token", "previous_token"), 1: ("induction",)}
CIRCUIT = {0: "previous_token", 1: "induction"}  # the induction path: a role in each layer


@dataclass(frozen=True)
class TrainedModel:
    """The best trained two-layer run: its id, config and accuracy as stored, its model, and whether
    the model had to be retrained (then also the retrained run's accuracy)."""

    run_id: str
    config: dict[str, Any]
    accuracy: float
    model: Model
    retrained: bool = False
    accuracy_retrained: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "config": dict(self.config),
            "accuracy": self.accuracy,
            "retrained": self.retrained,
            "accuracy_retrained": self.accuracy_retrained,
        }


@dataclass(frozen=True)
class Mechanism:
    """The claim's series: both models' panels on the same input, and what the figure's caption
    says."""

    construction: ModelPatterns
    trained: ModelPatterns
    run: TrainedModel
    n: int
    alphabet: int
    samples: int
    same_circuit: bool


# ------------------------------------------------------------------------------------------------
# Measure


def best_two_layer_row(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The two-layer run with the highest non-⊥ accuracy (ties: smaller n, then run id); None
    without one."""
    two = [
        r
        for r in rows
        if r["config"].get("layers") == 2 and r["metrics"].get("accuracy") is not None
    ]
    key = lambda r: (-float(r["metrics"]["accuracy"]), r["config"].get("n", 0), r["run_id"])
    return min(two, key=key, default=None)


def load_or_retrain(db: str, row: dict[str, Any]) -> TrainedModel:
    """The run's kept model (learn.experiments.kept_model); retrained from its config and kept there
    when the file is missing."""
    accuracy = float(row["metrics"]["accuracy"])
    model, retrained = kept_or_retrained(db, row)
    if retrained is None:
        return TrainedModel(row["run_id"], row["config"], accuracy, model)
    return TrainedModel(
        row["run_id"], row["config"], accuracy, model, True, float(retrained["accuracy"])
    )


def trained_best(ctx: Context) -> TrainedModel | None:
    """The best two-layer run of the experiment at ctx.scale in the report's database (the sweep run
    or resumed there first, shared with learning.induction.depth) and its model; cached for the
    run."""
    db = ctx.results_db or DEFAULT_DB

    def compute() -> TrainedModel | None:
        experiment_summary(ctx, EXPERIMENT)
        row = best_two_layer_row(experiment_rows(EXPERIMENT, ctx.scale, db))
        return None if row is None else load_or_retrain(db, row)

    return ctx.cached(
        ("best-two-layer-model", EXPERIMENT, ctx.scale, db), compute, "best two-layer model"
    )


# ------------------------------------------------------------------------------------------------
# Check


def roles_by_layer(scores: tuple[HeadScore, ...]) -> dict[int, tuple[str, ...]]:
    """Each layer's head roles, sorted."""
    layers = sorted({s.layer for s in scores})
    return {layer: tuple(sorted(s.role for s in scores if s.layer == layer)) for layer in layers}


def role_problems(scores: tuple[HeadScore, ...]) -> list[str]:
    """Where the construction's roles differ from BUILT_ROLES (empty: recovered)."""
    found = roles_by_layer(scores)
    return [
        f"layer {layer}: roles {list(found.get(layer, ()))}, built {list(roles)}"
        for layer, roles in BUILT_ROLES.items()
        if found.get(layer, ()) != roles
    ] + [f"layer {layer}: not built" for layer in found if layer not in BUILT_ROLES]


def missing_circuit(scores: tuple[HeadScore, ...]) -> list[str]:
    """The roles of CIRCUIT that no head of their layer has (empty: the same circuit)."""
    found = roles_by_layer(scores)
    return [
        f"{role} in layer {layer}"
        for layer, role in CIRCUIT.items()
        if role not in found.get(layer, ())
    ]


# ------------------------------------------------------------------------------------------------
# Describe


def describe_heads(scores: tuple[HeadScore, ...]) -> str:
    """ "L0H0 previous_token 1.00, …": each head's role and its score for it (its best score for
    none)."""
    parts = []
    for s in scores:
        items = score_items(s)
        value = items[s.role] if s.role in items else max(items.values())
        parts.append(f"L{s.layer}H{s.head} {s.role} {value:.2f}")
    return ", ".join(parts)


def _trained_words(run: TrainedModel) -> str:
    c = run.config
    again = (
        f"; retrained from its config, {100 * run.accuracy_retrained:.2f}%" if run.retrained else ""
    )
    return (
        f"best trained two-layer model (run {run.run_id}: {c.get('heads')} head(s) a layer, dim "
        f"{c.get('dim')}, seed {c.get('seed')}; {100 * run.accuracy:.2f}% on non-⊥ "
        f"positions{again})"
    )


def _circuit_words(missing: list[str], trained: tuple[HeadScore, ...]) -> str:
    if missing:
        return f"NOT the construction's circuit (no {', no '.join(missing)})"
    duplicate = any(s.role == "duplicate_token" for s in trained)
    extra = (
        ""
        if duplicate
        else "; no duplicate-token head: the construction's ⊥ test has no counterpart"
    )
    return (
        "the same circuit: a previous-token head in layer 0 feeding an induction head in "
        f"layer 1{extra}"
    )


# ------------------------------------------------------------------------------------------------
# The claim


@claim(
    "induction.heads.mechanism",
    paper=INDUCTION_PAPER,
    source="§1 (two-layer construction)",
    statement="analyze heads recovers the roles the two-layer construction was built with (layer "
    "0: a "
    "previous-token and a duplicate-token head; layer 1: an induction head) at the n and alphabet "
    "of the "
    "best trained two-layer model of the induction-depth experiment; that model's head roles are "
    "reported "
    "beside it, and the figure shows both models' attention on the same input.",
    check="PASS only if analyze heads gives the construction's layer 0 a previous-token and a "
    "duplicate-token head and its layer 1 an induction head (the trained model's roles are "
    "reported, not tested).",
    quick={"samples": 256, "draw": 16},
    full={"samples": 256, "draw": 16},
)
def mechanism(ctx: Context, samples: int, draw: int) -> ClaimResult:
    run = trained_best(ctx)
    if run is None:
        return ClaimResult(
            {"trained": None}, FAIL, f"no trained two-layer run in the {EXPERIMENT} experiment"
        )
    n, S = int(run.config["n"]), int(run.config["alphabet"])
    shown = min(draw, n)
    args = ("induction", "plain", n, S, SEED, 1, samples, shown)
    built = model_patterns(two_layer_induction(n, S), "construction", *args)
    learned = model_patterns(run.model, "trained", *args)
    problems, missing = role_problems(built.scores), missing_circuit(learned.scores)
    measured = {
        "n": n,
        "alphabet": S,
        "samples": samples,
        "seed": SEED,
        "input_drawn": " ".join(built.tokens),
        "construction": {
            "roles": {str(k): list(v) for k, v in roles_by_layer(built.scores).items()},
            "built_roles": {str(k): list(v) for k, v in BUILT_ROLES.items()},
            "heads": [s.to_json() for s in built.scores],
        },
        "trained": {
            **run.to_json(),
            "roles": {str(k): list(v) for k, v in roles_by_layer(learned.scores).items()},
            "same_circuit": not missing,
            "heads": [s.to_json() for s in learned.scores],
        },
    }
    verdict = (
        "the built roles, recovered"
        if not problems
        else "NOT the built roles: " + "; ".join(problems)
    )
    detail = (
        f"n = {n}, S = {S}, {samples} inputs: construction {describe_heads(built.scores)} — "
        f"{verdict}; "
        f"{_trained_words(run)}: {describe_heads(learned.scores)} — "
        f"{_circuit_words(missing, learned.scores)}"
    )
    series = Mechanism(built, learned, run, n, S, samples, not missing)
    return ClaimResult(measured, status(not problems), detail, series)


def mechanism_title(s: Mechanism) -> str:
    return (
        f"Induction heads, built (left) and trained (right): the same input, n = {s.n}, S = "
        f"{s.alphabet}"
    )


def mechanism_caption(s: Mechanism) -> str:
    found = (
        "found the same circuit" if s.same_circuit else "did NOT find the construction's circuit"
    )
    shown = len(s.construction.tokens)
    return (
        f"Paper ({INDUCTION_PAPER.cite} §1): two layers of constant size solve induction heads — "
        "a previous-token head, then an induction head that attends to the position after the "
        "latest earlier occurrence of the current token (the construction adds a duplicate-token "
        "head, its ⊥ test). Left: the two-layer construction; right: the best trained two-layer "
        f"model of the induction-depth experiment (run {s.run.run_id}, "
        f"{100 * s.run.accuracy:.2f}% on non-⊥ positions). Both on the same input: the first "
        f"{shown} characters of the first of {s.samples} inputs (input seed {SEED}); row = query, "
        "column = key, tokens (0..S−1) on both axes, colour = attention weight (0..1, one scale), "
        "blank = keys after the query. Titles: each head's role and its two highest scores over "
        f"all {s.samples} inputs (analyze heads). The trained model {found}."
    )


def mechanism_page(result: ClaimResult) -> str:
    """The figure's panels as an interactive page (report/views/attention_html.py)."""
    s: Mechanism = result.series
    return patterns_html([s.construction, s.trained], mechanism_title(s), mechanism_caption(s))


@figure("induction_heads_mechanism", claim="induction.heads.mechanism", html=mechanism_page)
def draw_mechanism(fig: plt.Figure, result: ClaimResult) -> str:
    s: Mechanism = result.series
    draw_patterns(fig, [s.construction, s.trained], mechanism_title(s))
    return mechanism_caption(s)
