"""Where the INDEX error floor bites (issue 17, point 2): the claim `induction.index.error_floor`,
measured, checked and described here; its figure is drawn by report.induction.index_floor_figure.

Measure: induction.lower_bound.protocol.check_protocol (exhaustive: every (f, i*), k ≤ 16) with its
error floor δ* = h⁻¹(1 − b/k) (induction/lower_bound/floor.py) on three kinds of one-layer model at
INDEX sizes k:

* random: seeded random table models (setup.random_index_model) of one fixed shape (h heads, width
  m, p bits), several seeds per k. Their message length b is measured per model; a head of width 1
  at p = 1 sends 5..10 bits, so b < k — a positive floor — from k ≈ 6 on;
* construction: the one-layer construction (induction.construction.one_layer_induction at n = 2k+1,
  S = 3) at its minimal INDEX precision (report.induction.lower_bound.index_precision). It is
  correct, so b ≥ k and its floor is 0;
* trained: the table forms of the one-layer models of the learning lab's induction-depth experiment
  (learn/experiments.py, at the report's scale, kept beside the results database, retrained when the
  file is missing), converted with core.model.table.table_from_weights. The trained models are
  attention-only one-layer weight-form models with a float W_O, whose fixed:p rounding points no
  table has (issue 27, finding 3: the protocol refuses them as given), so the point checked is their
  table form — a one-layer table model in its own right (model_form "table"), with the trained
  model's real-arithmetic maps (ψ_in = W_E + W_pos, Q̃ = ψ_in W_Q, K̃ = ψ_in W_K, Ṽ = ψ_in W_V W_O)
  and its own rounding points. The floor holds for every one-layer model, and a table is one; what
  is measured is the table's INDEX error at fixed:p, not the weight model's. They read INDEX inputs
  (tokens 0, 1 and '?' = 2) for every k with 2k+1 ≤ n (alphabet S ≥ 3, context n). A trained model
  is not correct on induction heads, so "its certified precision" here is the smallest fixed:p at
  which the quantised table provably gives its float64 answers on every position of every INDEX
  input at that k (core.certify.certify.minimal_precision_bits against the table's float64 outputs;
  None: no p ≤ 60 does, and the point is left out with the reason in the detail).

Check: every model satisfies floor_holds (its INDEX error ≥ δ* − its disagreement rate, exactly) and
protocol_floor_holds (Bob's error ≥ δ*: the theorem), and at least one random model has b < k, a
positive floor and an error above it. Every point is cached per run (CACHE_KIND, …), which is also
how the tests falsify one.

Reported, never asserted: for each trained model's table, the size h·m·p below which its floor would
be positive. The rule: b grows about linearly in h·m·p (each head sends m + 1 numbers of 3p..5p
bits, the encoding's worst case h·(m·(4p+2) + 5p + 2 + ⌈log₂ d_head⌉)), so at the same k a model of
size s′ sends about b·s′/s bits and its floor is positive when s′ < k·s/b. For trained sizes this is
far below one head of width 1 at 1 bit: the floor is vacuous there, and the claim says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from headcount.common.errors import InputError
from headcount.core.certify import Model, emulate, minimal_precision_bits
from headcount.core.model import OneLayerTable, Transformer, table_from_weights
from headcount.core.numbers import FLOAT64
from headcount.induction import task
from headcount.induction.construction import one_layer_induction
from headcount.induction.lower_bound.protocol import check_protocol
from headcount.induction.lower_bound.results import ProtocolCheck
from headcount.induction.lower_bound.setup import random_index_model
from headcount.learn.constants import DEFAULT_DB
from headcount.learn.experiments import experiment_rows, kept_or_retrained
from headcount.report.claims import INDUCTION_PAPER, ClaimResult, Context, claim, status
from headcount.report.experiments import experiment_summary
from headcount.report.induction.lower_bound import index_precision

CLAIM = "induction.index.error_floor"
CACHE_KIND = "index-floor"
EXPERIMENT = "induction-depth"

QUICK = {
    "ks": [4, 6, 8, 10],
    "shape": (1, 1, 1),  # (heads, width, precision bits) of the random models
    "seeds": [0, 1, 2, 3],
    "construction_ks": [4, 6, 8],
    "trained_ks": [4, 6, 8],
}
FULL = {
    "ks": [4, 6, 8, 10, 12, 14, 16],
    "shape": (1, 1, 1),
    "seeds": [0, 1, 2, 3],
    "construction_ks": [4, 6, 8, 10],
    "trained_ks": [4, 6, 8, 10],
}


# ------------------------------------------------------------------------------------------------
# Measure


@dataclass(frozen=True)
class FloorPoint:
    """One model checked at INDEX size k: what it is (kind, label, shape) and check_protocol's
    result."""

    kind: str  # "random", "construction" or "trained"
    label: str
    heads: int
    d_model: int
    precision_bits: int
    check: ProtocolCheck

    @property
    def size(self) -> int:
        """h·m·p, the seed's size measure."""
        return self.heads * self.d_model * self.precision_bits

    def to_json(self) -> dict[str, Any]:
        c, f = self.check, self.check.floor
        return {
            "kind": self.kind,
            "label": self.label,
            "k": c.k,
            "heads": self.heads,
            "dim": self.d_model,
            "precision_bits": self.precision_bits,
            "size": self.size,
            "message_bits": c.message_bits,
            "pairs_checked": c.pairs_checked,
            "exhaustive": c.exhaustive,
            "error_floor": f.error_floor,
            "index_error": f.index_error,
            "protocol_error": f.protocol_error,
            "disagreement_rate": f.disagreement_rate,
            "floor_holds": f.floor_holds,
            "protocol_floor_holds": f.protocol_floor_holds,
        }


def random_point(ctx: Context, k: int, seed: int, shape: tuple[int, int, int]) -> FloorPoint:
    h, m, p = shape
    check = ctx.cached(
        (CACHE_KIND, "random", k, seed, h, m, p),
        lambda: check_protocol(random_index_model(k, seed, h, m), k, p, progress=ctx.step),
        f"INDEX floor: random model seed={seed} h={h} m={m} p={p} k={k}",
    )
    return FloorPoint("random", f"seed {seed}", h, m, p, check)


def construction_point(ctx: Context, k: int) -> FloorPoint:
    def compute() -> ProtocolCheck:
        model = one_layer_induction(2 * k + 1, 3)
        return check_protocol(model, k, index_precision(model, k), progress=ctx.step)

    check = ctx.cached(
        (CACHE_KIND, "construction", k), compute, f"INDEX floor: one-layer construction k={k}"
    )
    return FloorPoint(
        "construction", "one_layer_induction", 1, check.d_model, check.precision_bits, check
    )


def float_precision(model: Model, k: int) -> int | None:
    """Smallest fixed:p at which the model provably answers every INDEX input of size k (all
    positions) as its float64 evaluation does (None: no p ≤ 60)."""
    inputs, _, _ = task.index_family(k)
    return minimal_precision_bits(model, inputs, emulate(model, inputs, FLOAT64))


@dataclass(frozen=True)
class TrainedRun:
    """A trained one-layer run of the experiment: id, config, its model, whether it was
    retrained."""

    run_id: str
    config: dict[str, Any]
    model: Model
    retrained: bool


def trained_runs(ctx: Context, experiment: str) -> list[TrainedRun]:
    """The experiment's one-layer runs at ctx.scale in the report's database (the sweep run or
    resumed there first, shared with the learning claims) and their kept (or retrained) models;
    cached for the run."""
    db = ctx.results_db or DEFAULT_DB

    def compute() -> list[TrainedRun]:
        experiment_summary(ctx, experiment)
        rows = [
            r for r in experiment_rows(experiment, ctx.scale, db) if r["config"].get("layers") == 1
        ]
        runs = []
        for row in sorted(rows, key=lambda r: (r["config"].get("n", 0), r["run_id"])):
            model, retrained = kept_or_retrained(db, row)
            runs.append(
                TrainedRun(row["run_id"], dict(row["config"]), model, retrained is not None)
            )
        return runs

    return ctx.cached(
        (CACHE_KIND, "trained-runs", experiment, ctx.scale, db), compute, "one-layer models"
    )


def table_form(model: Model) -> OneLayerTable:
    """The table form a trained point checks: table_from_weights of a one-layer attention-only
    weight-form model (a table model as given); InputError for a model that has none (more layers,
    an MLP, LayerNorm, …)."""
    if isinstance(model, OneLayerTable):
        return model
    if (
        not isinstance(model, Transformer)
        or len(model.layers) != 1
        or model.layers[0].mlp is not None
    ):
        raise InputError(
            "the INDEX reduction is for one-layer attention-only models, checked here on their "
            "table form "
            "(table_from_weights); this model has none (more layers or an MLP)"
        )
    return table_from_weights(model)  # InputError for the GPT-2 parts a table has no place for


def trained_point(ctx: Context, run: TrainedRun, k: int) -> FloorPoint | str:
    """The run's model's table form (table_form) at its float precision at k, or why it cannot be
    checked there."""
    n_ctx = run.model.n_ctx
    if 2 * k + 1 > n_ctx:
        return f"run {run.run_id} (n={n_ctx}): INDEX at k={k} needs 2k+1 = {2 * k + 1} positions"

    def compute() -> tuple[int, ProtocolCheck] | str:
        try:  # a model the reduction is not about (an MLP, LayerNorm, …) is reported, not a failure
            table = table_form(run.model)
            p = float_precision(table, k)
            if p is None:
                return (
                    f"run {run.run_id} k={k}: no fixed:p ≤ 60 reproduces its table's float64 "
                    "INDEX answers"
                )
            return p, check_protocol(table, k, p, progress=ctx.step)
        except InputError as error:
            return f"run {run.run_id} k={k}: {error}"

    key = (CACHE_KIND, "trained-table", run.run_id, k)
    got = ctx.cached(key, compute, f"INDEX floor: trained run {run.run_id} k={k}")
    if isinstance(got, str):
        return got
    p, check = got
    label = f"run {run.run_id[:8]} (n={run.config.get('n')}, S={run.config.get('alphabet')})"
    return FloorPoint("trained", label, check.heads, check.d_model, p, check)


# ------------------------------------------------------------------------------------------------
# Check


def point_problems(point: FloorPoint) -> list[str]:
    """Why a point contradicts the floor (empty: it respects it)."""
    f, c = point.check.floor, point.check
    where = f"{point.kind} {point.label} k={c.k} (b={c.message_bits})"
    out = []
    if not f.floor_holds:
        out.append(
            f"{where}: INDEX error {f.index_error:.4g} < floor {f.error_floor:.4g} − disagreement "
            "rate "
            f"{f.disagreement_rate:.4g}"
        )
    if not f.protocol_floor_holds:
        out.append(f"{where}: Bob's error {f.protocol_error:.4g} < floor {f.error_floor:.4g}")
    return out


def biting(points: list[FloorPoint]) -> list[FloorPoint]:
    """Random models with b < k, a positive floor and an INDEX error above it."""
    return [
        p
        for p in points
        if p.kind == "random"
        and p.check.message_bits < p.check.k
        and 0 < p.check.floor.error_floor < p.check.floor.index_error
    ]


def floor_problems(points: list[FloorPoint]) -> list[str]:
    problems = [line for p in points for line in point_problems(p)]
    if not biting(points):
        problems.append("no random model with b < k shows a positive floor and an error above it")
    return problems


# ------------------------------------------------------------------------------------------------
# Describe


def positive_floor_size(point: FloorPoint) -> float:
    """k·s/b: the size h·m·p below which the floor at this k would be positive (module docstring's
    rule)."""
    return point.check.k * point.size / point.check.message_bits


def trained_summary(points: list[FloorPoint]) -> list[dict[str, Any]]:
    """Per trained model, at the largest k checked: its size, b, floor, and the size its floor
    needs."""
    largest: dict[str, FloorPoint] = {}
    for p in points:
        if p.kind == "trained" and (p.label not in largest or p.check.k > largest[p.label].check.k):
            largest[p.label] = p
    return [
        {
            "model": label,
            "k": p.check.k,
            "size": p.size,
            "precision_bits": p.precision_bits,
            "message_bits": p.check.message_bits,
            "error_floor": p.check.floor.error_floor,
            "index_error": p.check.floor.index_error,
            "positive_floor_below_size": positive_floor_size(p),
            "vacuous": p.check.message_bits >= p.check.k,
        }
        for label, p in largest.items()
    ]


@dataclass(frozen=True)
class FloorSeries:
    """What the figure draws: every point and the random models' fixed shape."""

    points: tuple[FloorPoint, ...]
    shape: tuple[int, int, int]
    ks: tuple[int, ...]
    skipped: tuple[str, ...]


def _random_text(points: list[FloorPoint], shape: tuple[int, int, int]) -> str:
    h, m, p = shape
    by_k: dict[int, list[FloorPoint]] = {}
    for q in points:
        if q.kind == "random":
            by_k.setdefault(q.check.k, []).append(q)
    rows = "; ".join(
        f"k={k}: b = {', '.join(str(q.check.message_bits) for q in qs)}, floors "
        f"{', '.join(f'{q.check.floor.error_floor:.3f}' for q in qs)}, errors "
        f"{', '.join(f'{q.check.floor.index_error:.3f}' for q in qs)}"
        for k, qs in sorted(by_k.items())
    )
    return f"random models h={h} m={m} p={p} (per seed): {rows}"


def _trained_text(summary: list[dict[str, Any]], skipped: tuple[str, ...]) -> str:
    if not summary:
        return "trained one-layer models: none checked" + (
            f" ({'; '.join(skipped)})" if skipped else ""
        )
    rows = "; ".join(
        f"{t['model']} at k={t['k']}: h·m·p = {t['size']} (p={t['precision_bits']}), b = "
        f"{t['message_bits']} "
        "bits, floor "
        f"{t['error_floor']:.3g}, error {t['index_error']:.3f}, floor positive only below h·m·p ≈ "
        f"{t['positive_floor_below_size']:.2g}"
        for t in summary
    )
    vacuous = all(t["vacuous"] for t in summary)
    verdict = (
        "the floor is vacuous (b ≥ k) for every trained table"
        if vacuous
        else "some trained floors bite"
    )
    rule = "b linear in h·m·p: a positive floor needs h·m·p < k·h·m·p/b"
    more = f"; not checked: {'; '.join(skipped)}" if skipped else ""
    form = "table forms (table_from_weights), checked as table models"
    return f"trained one-layer models' {form} ({rule}): {rows}; {verdict}{more}"


def describe(series: FloorSeries, problems: list[str]) -> str:
    if problems:
        return "; ".join(problems)
    points = list(series.points)
    bite = biting(points)
    constructions = [p for p in points if p.kind == "construction"]
    built = ", ".join(
        f"k={p.check.k}: b={p.check.message_bits}, error {p.check.floor.index_error:g}"
        for p in constructions
    )
    return (
        f"all {len(points)} models respect the floor (exhaustive, exact); {len(bite)} random "
        "models have "
        f"b < k, a positive floor and an error above it; {_random_text(points, series.shape)}; "
        "one-layer "
        f"construction (floor 0): {built}; {_trained_text(trained_summary(points), series.skipped)}"
    )


# ------------------------------------------------------------------------------------------------
# The claim


@claim(
    CLAIM,
    paper=INDUCTION_PAPER,
    source="§3 Theorem 1 (INDEX reduction), extended with Fano's inequality",
    statement="A one-layer model whose protocol message has b bits errs on at least δ* = h⁻¹(1 − "
    "b/k) of "
    "the INDEX pairs, less its protocol disagreement rate (Fano per bit of f, the chain rule and "
    "concavity "
    "of the binary entropy h); δ* = 0 when b ≥ k. Checked exhaustively (every (f, i*)) on random "
    "one-layer "
    "models of one small shape, on the one-layer construction and on the table forms of the "
    "learning experiments' "
    "trained one-layer models (table_from_weights: one-layer table models in their own right, "
    "checked as "
    "given, at the precision where the table gives its float64 answers; the trained weight "
    "models' own "
    "fixed:p rounding points have no table): every model respects the floor, and some random "
    "model with "
    "b < k has a positive floor and an error above it. Reported: the size h·m·p at which each "
    "trained "
    "table's floor would become positive.",
    check="PASS only if every model checked has an exhaustive error rate at least its floor δ* "
    "less its protocol disagreement rate, and some random model with b < k has a positive "
    "floor and an error above it.",
    quick=QUICK,
    full=FULL,
)
def index_error_floor(
    ctx: Context,
    ks: list[int],
    shape: tuple[int, int, int],
    seeds: list[int],
    construction_ks: list[int],
    trained_ks: list[int],
    experiment: str | None = EXPERIMENT,
) -> ClaimResult:
    points = [random_point(ctx, k, seed, tuple(shape)) for k in ks for seed in seeds]
    points += [construction_point(ctx, k) for k in construction_ks]
    skipped = []
    for run in [] if experiment is None else trained_runs(ctx, experiment):
        for k in trained_ks:
            got = trained_point(ctx, run, k)
            (points.append if isinstance(got, FloorPoint) else skipped.append)(got)
    problems = floor_problems(points)
    series = FloorSeries(tuple(points), tuple(shape), tuple(ks), tuple(skipped))
    measured = {
        "shape": {"heads": shape[0], "dim": shape[1], "precision_bits": shape[2]},
        "points": [p.to_json() for p in points],
        "biting": len(biting(points)),
        "trained": trained_summary(points),
        "skipped": skipped,
    }
    return ClaimResult(measured, status(not problems), describe(series, problems), series)
