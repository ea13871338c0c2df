"""The k-hop mechanism, built and learned (issue 16, point 5): the claim `induction.khop.mechanism`
and its side-by-side attention figure.

Measure: `analyze heads` (induction.heads.analyze_heads; task khop — characters with no two adjacent
equal —, plain layout) of khop_construction(n, S, k) at the claim's (n, S, k): large enough that
every find^{2^t} layer is exercised (at n = 32, S = 4 find^8 rarely exists and its layer scores as a
sink). Beside it, the deepest trained model of the learning lab's k-hop experiment "khop"
(learn/experiments.py, at the report's scale, in Context.results_db; ties: the lowest mean error
over its hop counts, then the seed), analyzed in its own layout (hop-prefix: the hop token first) at
its n and alphabet with hops = its largest K, and per k ≤ K (roles only), next to khop_construction
at the same n, S and K — the construction the figure draws. The experiment keeps its models beside
the database (models/<run id>.safetensors); a run stored without one (a database written before it
kept them) is retrained from its config — training is deterministic per seed on CPU — and kept
there.

Check: the construction's heads have, layer by layer, the roles induction/roles.khop_roles says it
was built with (layer 0 previous_token and duplicate_token, layer 1 induction — find^1 —, layer l ≥
2 the pointer head of find^{2^(l−2)}: induction, find^2, find^4, find^8) — PASS only then. The
trained model's roles and each head's best find^r cosine are reported layer by layer against the
construction's ("layer l: construction …; trained: …"), never asserted.

Describe: one line; the figure draws the construction and the trained model on the same characters
(report/views/attention.py), captioned with both role lists.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt

from headcount.core.certify import Model
from headcount.induction.heads import POINTER_THRESHOLD, HeadScore, analyze_heads
from headcount.induction.multihop.construction import khop_construction
from headcount.induction.roles import khop_roles
from headcount.learn.constants import DEFAULT_DB
from headcount.learn.experiments import experiment_rows, kept_or_retrained
from headcount.report.claims import KHOP_PAPER, ClaimResult, Context, claim, status
from headcount.report.experiments import experiment_summary
from headcount.report.figures import figure
from headcount.report.induction.mechanism import describe_heads, roles_by_layer
from headcount.report.views.attention import (
    MAX_DRAW,
    ModelPatterns,
    draw_patterns,
    model_patterns,
    score_items,
)
from headcount.report.views.attention_html import patterns_html

CLAIM = "induction.khop.mechanism"
FIGURE = "induction_khop_mechanism"
EXPERIMENT = "khop"
# characters with no two adjacent equal: the k-hop paper's inputs and the lab's khop runs
TASK = "khop"
SEED = 0  # the inputs every model is scored and drawn on: default_rng([SEED, n, alphabet])
CACHE_KIND = "deepest-khop-model"

QUICK = {"n": 128, "alphabet": 4, "hops": 16, "samples": 128, "draw": MAX_DRAW}
FULL = {
    "n": 256,
    "alphabet": 4,
    "hops": 16,
    "samples": 64,
    "draw": MAX_DRAW,
}  # as many positions, longer


Roles = dict[int, tuple[str, ...]]


@dataclass(frozen=True)
class TrainedKhop:
    """The deepest trained k-hop run: its id, config and error by hop count as stored, its model,
    and whether the model had to be retrained (then also the retrained run's error by hop count)."""

    run_id: str
    config: dict[str, Any]
    error_by_hop: dict[int, float]
    model: Model
    retrained: bool = False
    error_by_hop_retrained: dict[int, float] | None = None

    @property
    def n(self) -> int:
        return int(self.config["n"])

    @property
    def alphabet(self) -> int:
        return int(self.config["alphabet"])

    @property
    def hops(self) -> int:
        """K: the largest hop count the model was trained on."""
        return int(self.config["hops"])

    def to_json(self) -> dict[str, Any]:
        again = self.error_by_hop_retrained
        return {
            "run_id": self.run_id,
            "config": dict(self.config),
            "error_by_hop": {str(k): e for k, e in self.error_by_hop.items()},
            "retrained": self.retrained,
            "error_by_hop_retrained": None
            if again is None
            else {str(k): e for k, e in again.items()},
        }


# ------------------------------------------------------------------------------------------------
# Measure


def error_by_hop(metrics: dict[str, Any]) -> dict[int, float]:
    """1 − accuracy at each hop count of a run's metrics (accuracy_by_hop; NaN where it is
    missing)."""
    by_hop = metrics.get("accuracy_by_hop") or {}
    return {int(k): (1.0 - float(a)) if a is not None else math.nan for k, a in by_hop.items()}


def _mean_error(row: dict[str, Any]) -> float:
    errors = [e for e in error_by_hop(row["metrics"]).values() if not math.isnan(e)]
    return sum(errors) / len(errors) if errors else math.inf


def deepest_row(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The run with the most layers (ties: the lowest mean error over its hop counts, then the seed,
    then the run id); None without a run."""
    runs = [r for r in rows if isinstance(r["config"].get("layers"), int)]
    key = lambda r: (
        -r["config"]["layers"],
        _mean_error(r),
        r["config"].get("seed", 0),
        r["run_id"],
    )
    return min(runs, key=key, default=None)


def load_or_retrain(db: str, row: dict[str, Any]) -> TrainedKhop:
    """The run's kept model, or the model retrained from its config (without certifying: the model
    is the same) and kept there when the file is missing (learn.experiments.kept_or_retrained)."""
    stored = error_by_hop(row["metrics"])
    model, retrained = kept_or_retrained(db, row)
    if retrained is None:
        return TrainedKhop(row["run_id"], row["config"], stored, model)
    return TrainedKhop(row["run_id"], row["config"], stored, model, True, error_by_hop(retrained))


def trained_deepest(ctx: Context) -> TrainedKhop | None:
    """The deepest run of the k-hop experiment at ctx.scale in the report's database (the sweep run
    or resumed there first, shared with learning.khop.depth) and its model; cached for the run."""
    db = ctx.results_db or DEFAULT_DB

    def compute() -> TrainedKhop | None:
        experiment_summary(ctx, EXPERIMENT)
        row = deepest_row(experiment_rows(EXPERIMENT, ctx.scale, db))
        return None if row is None else load_or_retrain(db, row)

    return ctx.cached((CACHE_KIND, EXPERIMENT, ctx.scale, db), compute, "deepest k-hop model")


def built_roles(n: int, alphabet: int, hops: int) -> Roles:
    """The roles khop_construction(n, alphabet, hops) is built with (induction/roles.khop_roles), by
    layer, each layer's sorted."""
    heads = khop_roles(n, alphabet, hops)["heads"]
    layers = sorted({h["layer"] for h in heads})
    return {
        layer: tuple(sorted(h["role"] for h in heads if h["layer"] == layer)) for layer in layers
    }


# ------------------------------------------------------------------------------------------------
# Check


def role_problems(found: Roles, built: Roles) -> list[str]:
    """Where the measured roles differ from the built ones, layer by layer (empty: recovered)."""
    return [
        f"layer {layer}: roles {list(found.get(layer, ()))}, built {list(roles)}"
        for layer, roles in built.items()
        if found.get(layer, ()) != roles
    ] + [f"layer {layer}: not built" for layer in found if layer not in built]


# ------------------------------------------------------------------------------------------------
# Compare (reported, never asserted)


def best_find(score: HeadScore) -> tuple[int, float]:
    """The head's best find^r cosine and its r (ties: the smaller r)."""
    return min(score.find.items(), key=lambda item: (-item[1], item[0]), default=(1, 0.0))


def head_words(score: HeadScore) -> str:
    """ "H1 find^2 0.71 · best find^2 0.71": the head's role and its score for it (its best score
    for none), and its best find^r cosine."""
    items = score_items(score)
    value = items[score.role] if score.role in items else max(items.values())
    r, cosine = best_find(score)
    return f"H{score.head} {score.role} {value:.2f} · best find^{r} {cosine:.2f}"


def compare_layers(built: Roles, trained: tuple[HeadScore, ...]) -> list[dict[str, Any]]:
    """Per layer of either model: the construction's built roles, the trained model's heads (role,
    best find^r) and the built roles some trained head of the same layer also has."""
    layers = sorted(set(built) | {s.layer for s in trained})
    out = []
    for layer in layers:
        heads = [s for s in trained if s.layer == layer]
        roles = {s.role for s in heads}
        out.append(
            {
                "layer": layer,
                "construction": list(built.get(layer, ())),
                "trained": [
                    {
                        "head": s.head,
                        "role": s.role,
                        "best_find": best_find(s)[0],
                        "find": best_find(s)[1],
                    }
                    for s in heads
                ],
                "shared": [role for role in built.get(layer, ()) if role in roles],
            }
        )
    return out


def comparison_text(layers: list[dict[str, Any]], trained: tuple[HeadScore, ...]) -> str:
    """ "layer l: construction …; trained: … | …" and how many built roles the trained model
    shares."""
    parts = []
    for row in layers:
        built = " + ".join(row["construction"]) or "—"
        heads = ", ".join(head_words(s) for s in trained if s.layer == row["layer"]) or "—"
        parts.append(f"layer {row['layer']}: construction {built}; trained: {heads}")
    shared = sum(len(row["shared"]) for row in layers)
    total = sum(len(row["construction"]) for row in layers)
    return (
        " | ".join(parts)
        + f" — {shared} of the construction's {total} roles found in the same layer"
    )


def first_layer_pointer(scores: tuple[HeadScore, ...]) -> dict[str, Any]:
    """Layer 0's head with the highest latest_earlier score (the strictly-earlier pointer a
    ⌊log₂ k⌋ + 2-layer model needs there) and whether it reaches POINTER_THRESHOLD; with layer
    0's best previous_token score (pointer doubling's first step)."""
    first = [s for s in scores if s.layer == 0]
    best = max(first, key=lambda s: s.latest_earlier)
    return {
        "head": best.head,
        "latest_earlier": best.latest_earlier,
        "pointer": best.latest_earlier >= POINTER_THRESHOLD,
        "previous_token": max(s.previous_token for s in first),
    }


def pointer_text(found: dict[str, Any]) -> str:
    verdict = "a strictly-earlier pointer" if found["pointer"] else "no strictly-earlier pointer"
    return (
        f"layer 0: {verdict} (best latest-earlier score {found['latest_earlier']:.2f}, head "
        f"{found['head']}; best previous-token {found['previous_token']:.2f})"
    )


def roles_text(roles: Roles) -> str:
    """ "0: duplicate_token, previous_token; 1: induction; …"."""
    return "; ".join(f"{layer}: {', '.join(r)}" for layer, r in roles.items())


# ------------------------------------------------------------------------------------------------
# The claim


@dataclass(frozen=True)
class KhopMechanism:
    """The figure's series: the panels drawn (the construction, and the trained model when there is
    one), the role lists the caption gives, and the claim's own construction size."""

    construction: ModelPatterns
    trained: ModelPatterns | None
    run: TrainedKhop | None
    drawn_built: Roles
    n: int
    alphabet: int
    hops: int
    samples: int
    recovered: bool


def _roles_json(roles: Roles) -> dict[str, list[str]]:
    return {str(layer): list(r) for layer, r in roles.items()}


def _trained_words(run: TrainedKhop) -> str:
    c = run.config
    errors = run.error_by_hop_retrained if run.retrained else run.error_by_hop
    again = "; retrained from its config" if run.retrained else ""
    error = errors.get(run.hops, math.nan)
    return (
        f"deepest trained k-hop model (run {run.run_id}: {c.get('layers')} layers × "
        f"{c.get('heads')} "
        f"heads, dim {c.get('dim')}, seed {c.get('seed')}, n = {run.n}, S = {run.alphabet}, "
        "trained on "
        f"k = 1..{run.hops}; error at k = {run.hops}: {100 * error:.2f}%{again})"
    )


def _compare_trained(
    run: TrainedKhop, samples: int, draw: int
) -> tuple[dict[str, Any], str, ModelPatterns, ModelPatterns, Roles]:
    """The trained model's analysis and panels beside khop_construction at its n, S and K."""
    n, S, K = run.n, run.alphabet, run.hops
    shown = min(draw, n, MAX_DRAW)
    built = built_roles(n, S, K)
    small = model_patterns(
        khop_construction(n, S, K), "construction", TASK, "plain", n, S, SEED, K, samples, shown
    )
    learned = model_patterns(
        run.model, "trained", TASK, "hop-prefix", n, S, SEED, K, samples, shown
    )
    by_hop = {
        k: roles_by_layer(
            tuple(analyze_heads(run.model, TASK, "hop-prefix", n, S, samples, SEED, k).heads)
        )
        for k in range(1, K)
    } | {K: roles_by_layer(learned.scores)}
    layers = compare_layers(built, learned.scores)
    measured = {
        **run.to_json(),
        "analyzed_at_hops": K,
        "roles": _roles_json(roles_by_layer(learned.scores)),
        "roles_by_hop": {str(k): _roles_json(r) for k, r in by_hop.items()},
        "heads": [s.to_json() for s in learned.scores],
        "construction_beside": {
            "n": n,
            "alphabet": S,
            "hops": K,
            "built_roles": _roles_json(built),
            "roles": _roles_json(roles_by_layer(small.scores)),
            "heads": [s.to_json() for s in small.scores],
        },
        "layers": layers,
        "first_layer_pointer": first_layer_pointer(learned.scores),
        "input_drawn": " ".join(learned.tokens),
    }
    text = f"{_trained_words(run)}, analyzed at k = {K} beside khop_construction({n}, {S}, {K}): "
    text += f"{comparison_text(layers, learned.scores)}; "
    text += pointer_text(measured["first_layer_pointer"])
    return measured, text, small, learned, built


@claim(
    CLAIM,
    paper=KHOP_PAPER,
    source="k-hop induction heads, pointer doubling (the upper bound)",
    statement="analyze heads recovers, layer by layer, the roles the k-hop construction was built "
    "with: "
    "a previous-token and a duplicate-token head in layer 0, the find (induction) head in layer "
    "1, and in "
    "each layer l ≥ 2 the pointer head that follows find^{2^(l−2)} (induction, find^2, find^4, "
    "find^8 "
    "for k = 16). "
    "Reported beside it, not asserted: whether the trained model's layer 0 points at the latest "
    "strictly earlier occurrence (the theorem's ⌊log₂ k⌋ + 2 depth needs it; pointer doubling "
    "starts from the previous token instead), and the roles and best find^r scores of the deepest "
    "trained model of "
    "the k-hop learning experiment, layer by layer against the construction at its n, S and "
    "K; the "
    "figure shows both on the same characters.",
    check="PASS only if analyze heads gives every layer of the construction the role it was built"
    " with (the trained model's roles are reported, not tested).",
    quick=QUICK,
    full=FULL,
)
def khop_mechanism(
    ctx: Context, n: int, alphabet: int, hops: int, samples: int, draw: int
) -> ClaimResult:
    model = khop_construction(n, alphabet, hops)
    scores = tuple(analyze_heads(model, TASK, "plain", n, alphabet, samples, SEED, hops).heads)
    built, found = built_roles(n, alphabet, hops), roles_by_layer(scores)
    problems = role_problems(found, built)
    verdict = (
        "the built roles, recovered"
        if not problems
        else "NOT the built roles: " + "; ".join(problems)
    )
    detail = (
        f"khop_construction({n}, {alphabet}, {hops}) on {samples} inputs (no two adjacent "
        "characters equal, "
        f"seed {SEED}): {describe_heads(scores)} — {verdict}"
    )
    measured: dict[str, Any] = {
        "construction": {
            "n": n,
            "alphabet": alphabet,
            "hops": hops,
            "layers": len(model.layers),
            "samples": samples,
            "seed": SEED,
            "roles": _roles_json(found),
            "built_roles": _roles_json(built),
            "heads": [s.to_json() for s in scores],
        },
        "trained": None,
    }
    run = trained_deepest(ctx)
    if run is None:
        detail += f"; no trained run in the {EXPERIMENT} experiment"
        shown = min(draw, n, MAX_DRAW)
        drawn = model_patterns(
            model, "construction", TASK, "plain", n, alphabet, SEED, hops, samples, shown
        )
        series = KhopMechanism(drawn, None, None, built, n, alphabet, hops, samples, not problems)
    else:
        measured["trained"], text, drawn, learned, drawn_built = _compare_trained(
            run, samples, draw
        )
        detail += f"; {text}"
        series = KhopMechanism(
            drawn, learned, run, drawn_built, n, alphabet, hops, samples, not problems
        )
    return ClaimResult(measured, status(not problems), detail, series)


def khop_title(s: KhopMechanism) -> str:
    if s.run is None:
        return f"k-hop construction, n = {s.n}, S = {s.alphabet}, k = {s.hops} (no trained model)"
    run = s.run
    return (
        f"k-hop induction, built (left) and trained (right): the same characters, n = {run.n}, "
        f"S = {run.alphabet}, k = {run.hops}"
    )


def khop_caption(s: KhopMechanism) -> str:
    shown = len(s.construction.tokens)
    built = roles_text(s.drawn_built)
    measured = roles_text(roles_by_layer(s.construction.scores))
    check = "recovered" if s.recovered else "NOT recovered (the claim FAILED)"
    head = (
        f"Paper ({KHOP_PAPER.cite}): k-hop induction heads in logarithmic depth by pointer "
        "doubling — layer 0 copies the previous token (and a duplicate-token head tests whether "
        "σ_i is new), layer 1 points at find(i), and each later layer l follows the pointer "
        "find^{2^(l−2)}, so the hops a position knows double per layer. "
    )
    if s.run is None:
        return head + (
            f"The construction khop_construction({s.n}, {s.alphabet}, {s.hops}) on the first "
            f"{shown} characters of the first of {s.samples} inputs (input seed {SEED}, no two "
            f"adjacent equal); built roles by layer: {built}; measured: {measured}. No trained "
            "k-hop run was found to draw beside it."
        )
    run, K = s.run, s.run.hops
    trained = roles_text(roles_by_layer(s.trained.scores))
    return head + (
        f"Left: khop_construction({run.n}, {run.alphabet}, {K}) (plain layout: k = {K} is built "
        f"in); built roles by layer: {built}; measured by analyze heads: {measured}. Right: the "
        f"deepest trained model of the k-hop learning experiment (run {run.run_id}, "
        f"{run.config.get('layers')} layers × {run.config.get('heads')} heads, hop-prefix layout: "
        f"the hop token k={K} first), analyzed at k = {K}; its roles by layer: {trained}; "
        f"{pointer_text(first_layer_pointer(s.trained.scores))} — the theorem's ⌊log₂ k⌋ + 2 "
        "layers need layer 0 to point at the latest strictly earlier occurrence. Both on "
        f"the same characters: the first {shown} of the first of {s.samples} inputs (input seed "
        f"{SEED}, no two adjacent equal); row = query, column = key, tokens (0..S−1) on both "
        "axes, colour = attention weight (0..1, one scale), blank = keys after the query. "
        f"Titles: each head's role and its two highest scores over all {s.samples} inputs. The "
        f"claim's check is at n = {s.n}, S = {s.alphabet}, k = {s.hops} (every find^(2^t) layer "
        f"exercised): the built roles {check}."
    )


def khop_panels(s: KhopMechanism) -> list[ModelPatterns]:
    return [s.construction] + ([s.trained] if s.trained is not None else [])


def khop_page(result: ClaimResult) -> str:
    """The figure's panels as an interactive page (report/views/attention_html.py)."""
    s: KhopMechanism = result.series
    return patterns_html(khop_panels(s), khop_title(s), khop_caption(s))


@figure(FIGURE, claim=CLAIM, html=khop_page)
def draw_khop_mechanism(fig: plt.Figure, result: ClaimResult) -> str:
    s: KhopMechanism = result.series
    draw_patterns(fig, khop_panels(s), khop_title(s))
    return khop_caption(s)
