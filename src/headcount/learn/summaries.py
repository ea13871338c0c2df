"""What each learning experiment reads back from its database rows: typed summaries, one per
experiment.

    summarize_induction_depth(rows) -> InductionDepthSummary   (cells: InductionDepthCell)
    summarize_khop(rows)            -> KhopSummary              (error by depth L × hop count k)
    summarize_minmax_heads(rows)    -> MinmaxHeadsSummary       (cells: MinmaxHeadsCell)
    summarize_xor_phase(rows)       -> XorPhaseSummary          (cells: XorPhaseCell)

A row is one finished run as the results database holds it ({"config": …, "metrics": …}). Summaries
only read rows: what the theory's constructions achieve on the same cells is
report/learning/claims.py's to add, into the slots left for it
(MinmaxHeadsSummary.construction_dims, XorPhaseSummary.above_constructions_certified, cells as
XorPhaseCellWithConstruction); to_json() leaves those out until they are filled.

to_json() is the summary as `headcount experiment NAME` prints it as JSON and the report's
summary.json records it: the fields in order, cells as objects, maps keyed by int, numbers as they
are (NaN — a mean over no values — kept: the caller's `jsonable` applies its policy).
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

import numpy as np

from headcount.boolean.accuracy_frontier import frontier_row
from headcount.boolean.task import parse_function, sign_changes
from headcount.common.errors import InputError
from headcount.core.numbers import IEEE_DTYPES

Rows = list[dict[str, Any]]


def _plain(value: Any) -> Any:
    """A field's value in to_json(): nested summaries through their to_json(), lists and dicts
    copied."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return dict(value) if isinstance(value, dict) else value


class _Json:
    """to_json(): the fields in order (see the module docstring); a field named in OPTIONAL is left
    out while it is None."""

    OPTIONAL: ClassVar[tuple[str, ...]] = ()

    def to_json(self) -> dict[str, Any]:
        out = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is not None or f.name not in self.OPTIONAL:
                out[f.name] = _plain(value)
        return out


def _mean(values: list[float | None]) -> float:
    """The mean of the values that are not None or NaN; NaN when there are none."""
    kept = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return float(np.mean(kept)) if kept else float("nan")


def _group(rows: Rows, keys: tuple[str, ...]) -> dict[tuple, list[dict[str, Any]]]:
    """The rows' metrics grouped by the config values of `keys`, groups sorted by those values."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[tuple(row["config"][k] for k in keys)].append(row["metrics"])
    return dict(sorted(groups.items()))


# --------------------------------------------------------------------------------------------------
# 1. induction heads: one layer vs two layers
# --------------------------------------------------------------------------------------------------

_INDUCTION_KEYS = ("layers", "n", "alphabet", "heads", "dim")


@dataclass(frozen=True)
class InductionDepthCell(_Json):
    """One configuration over its seeds: mean, worst and best non-⊥ accuracy, mean ⊥ accuracy and
    mean accuracy at the INDEX query (NaN where no seed has it)."""

    layers: int
    n: int
    alphabet: int
    heads: int
    dim: int
    seeds: int
    accuracy: float
    accuracy_min: float
    accuracy_max: float
    accuracy_bottom: float
    accuracy_index: float

    @classmethod
    def of(cls, key: tuple, m: list[dict[str, Any]]) -> InductionDepthCell:
        """The cell of config values `key` (_INDUCTION_KEYS) from its runs' metrics `m`."""
        return cls(
            *key,
            seeds=len(m),
            accuracy=_mean([x["accuracy"] for x in m]),
            accuracy_min=min(x["accuracy"] for x in m),
            accuracy_max=max(x["accuracy"] for x in m),
            accuracy_bottom=_mean([x["accuracy_bottom"] for x in m]),
            accuracy_index=_mean([x.get("accuracy_index") for x in m]),
        )


@dataclass(frozen=True)
class InductionDepthSummary(_Json):
    """The cells, and the series of the claim: by n, the best two-layer seed's accuracy (non-⊥
    positions and INDEX query); the smallest of those, the weakest two-layer cell's best seed, the
    best one-layer seed; whether every one-layer cell's best seed is below that of its two-layer
    counterpart."""

    cells: list[InductionDepthCell]
    two_layer_best_by_n: dict[int, float]
    two_layer_index_accuracy_by_n: dict[int, float]
    two_layer_best_min_accuracy: float
    two_layer_weakest_cell_accuracy: float
    one_layer_best_accuracy: float
    one_below_two_everywhere: bool

    @property
    def empty(self) -> bool:
        return not self.cells


def _best_by_n(
    cells: list[InductionDepthCell], value_of: Callable[[InductionDepthCell], float]
) -> dict[int, float]:
    """n → the largest value_of(cell) over the cells of that length (NaN skipped), by n."""
    best: dict[int, float] = {}
    for c in cells:
        value = value_of(c)
        if not math.isnan(value):
            best[c.n] = max(best.get(c.n, 0.0), value)
    return dict(sorted(best.items()))


def _one_below_two(one: list[InductionDepthCell], two: list[InductionDepthCell]) -> bool:
    """Every one-layer cell's best seed below that of the two-layer cell of the same n, alphabet,
    heads and dim (and at least one such pair)."""
    same = lambda c: (c.n, c.alphabet, c.heads, c.dim)
    pairs = [(o, t) for o in one for t in two if same(o) == same(t)]
    return bool(pairs) and all(o.accuracy_max < t.accuracy_max for o, t in pairs)


def summarize_induction_depth(rows: Rows) -> InductionDepthSummary:
    cells = [InductionDepthCell.of(key, m) for key, m in _group(rows, _INDUCTION_KEYS).items()]
    two = [c for c in cells if c.layers >= 2]
    one = [c for c in cells if c.layers == 1]
    best_by_n = _best_by_n(two, lambda c: c.accuracy_max)
    return InductionDepthSummary(
        cells=cells,
        two_layer_best_by_n=best_by_n,
        two_layer_index_accuracy_by_n=_best_by_n(
            two, lambda c: c.accuracy_index
        ),  # best, at the INDEX query
        two_layer_best_min_accuracy=min(best_by_n.values(), default=float("nan")),
        two_layer_weakest_cell_accuracy=min((c.accuracy_max for c in two), default=float("nan")),
        one_layer_best_accuracy=max((c.accuracy_max for c in one), default=float("nan")),
        one_below_two_everywhere=_one_below_two(one, two),
    )


# --------------------------------------------------------------------------------------------------
# 2. k-hop depth table
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KhopSummary(_Json):
    """error[i][j]: 1 − mean accuracy of the depth-layers[i] models at hop count hops[j] (NaN: not
    measured); one_hop_error_deepest: the deepest model's error at k = 1.

    From the runs' certificates (certified_runs.khop_certificates; None and left out of the JSON
    when no run has them): precision_bits[i][j], the fixed:p at which the models of that cell are
    certified on their sampled inputs — the largest over seeds, None where some seed's model is not
    certified there (a float64 error, or a position not proven) or has no certificate;
    dtypes_exact[i][j], the IEEE dtypes exact for every seed there (None likewise); certified_cells,
    the cells with a precision."""

    OPTIONAL: ClassVar[tuple[str, ...]] = ("precision_bits", "dtypes_exact", "certified_cells")

    layers: list[int]
    hops: list[int]
    error: list[list[float]]
    one_hop_error_deepest: float
    precision_bits: list[list[int | None]] | None = None
    dtypes_exact: list[list[list[str] | None]] | None = None
    certified_cells: int | None = None

    @property
    def empty(self) -> bool:
        return not self.layers


def _certificates(group: list[dict[str, Any]], k: int) -> list[dict[str, Any]] | None:
    """Every run's certificate at hop count k, or None when some run has none or is not certified
    there."""
    certs = [(m.get("certificates_by_hop") or {}).get(str(k)) for m in group]
    return certs if certs and all(c is not None and c.get("certified") for c in certs) else None


def _common_dtypes(certs: list[dict[str, Any]]) -> list[str]:
    """The IEEE dtypes exact in every one of the certificates, in
    core.numbers.precision.IEEE_DTYPES' order."""
    return [d for d in IEEE_DTYPES if all(d in c["dtypes_exact"] for c in certs)]


def _khop_certified(groups: dict[int, list[dict[str, Any]]], hops: list[int]) -> dict[str, Any]:
    """KhopSummary's certificate fields from the runs grouped by depth (empty when no run has
    any)."""
    if not any("certificates_by_hop" in m for group in groups.values() for m in group):
        return {}
    certs = {L: [_certificates(group, k) for k in hops] for L, group in groups.items()}
    return {
        "precision_bits": [
            [None if c is None else max(x["precision_bits"] for x in c) for c in row]
            for row in certs.values()
        ],
        "dtypes_exact": [
            [None if c is None else _common_dtypes(c) for c in row] for row in certs.values()
        ],
        "certified_cells": sum(c is not None for row in certs.values() for c in row),
    }


def summarize_khop(rows: Rows) -> KhopSummary:
    table: dict[int, dict[int, float]] = {}
    groups = _group(rows, ("layers",))
    for (layers,), group in groups.items():
        by_hop: dict[int, list[float]] = defaultdict(list)
        for metrics in group:
            for k, acc in metrics["accuracy_by_hop"].items():
                by_hop[int(k)].append(acc)
        table[layers] = {k: 1.0 - _mean(v) for k, v in sorted(by_hop.items())}
    depths = sorted(table)
    hops = sorted({k for row in table.values() for k in row})
    return KhopSummary(
        layers=depths,
        hops=hops,
        error=[[table[L].get(k, float("nan")) for k in hops] for L in depths],
        one_hop_error_deepest=table[depths[-1]].get(1, float("nan")) if depths else float("nan"),
        **_khop_certified({L: groups[(L,)] for L in depths}, hops),
    )


# --------------------------------------------------------------------------------------------------
# 3. min and max: one head vs two heads
# --------------------------------------------------------------------------------------------------


def _all_right(accuracy: float) -> bool:
    # accuracies are sums of normalised multiset weights: all right is 1 up to the rounding of the
    # sum
    return accuracy > 1 - 1e-9


@dataclass(frozen=True)
class MinmaxHeadsCell(_Json):
    """One (M, n, heads, dim) over its seeds: mean and best accuracy on both min and max, seeds
    solving both; for one head, seeds where the exact verifier found a counterexample to min or max
    (else None, left out of the JSON)."""

    OPTIONAL: ClassVar[tuple[str, ...]] = ("counterexample_min_or_max",)

    M: int
    n: int
    heads: int
    dim: int
    seeds: int
    accuracy_both: float
    accuracy_both_max: float
    solved_both: int
    counterexample_min_or_max: int | None

    @classmethod
    def of(cls, key: tuple, m: list[dict[str, Any]]) -> MinmaxHeadsCell:
        """The cell of config values `key` (M, n, heads, dim) from its runs' metrics `m`."""
        M, n, heads, dim = key
        refuted = None
        if heads == 1:
            refuted = sum(
                x["verifier_min"]["counterexample_exists"]
                or x["verifier_max"]["counterexample_exists"]
                for x in m
            )
        return cls(
            M,
            n,
            heads,
            dim,
            seeds=len(m),
            accuracy_both=_mean([x["accuracy_both"] for x in m]),
            accuracy_both_max=max(x["accuracy_both"] for x in m),
            solved_both=sum(_all_right(x["accuracy_both"]) for x in m),
            counterexample_min_or_max=refuted,
        )


@dataclass(frozen=True)
class MinmaxHeadsSummary(_Json):
    """The cells; whether the exact verifier's verdicts agree with exhaustive evaluation on every
    single head compared (and at least one), how many were compared and refuted; two-head runs
    solving both. construction_dims (M → value dimension of the certified two-head construction) is
    the report's."""

    OPTIONAL: ClassVar[tuple[str, ...]] = ("construction_dims",)

    cells: list[MinmaxHeadsCell]
    construction_dims: dict[int, int] | None
    verifier_agrees_with_exhaustive: bool
    single_heads_checked: int
    single_heads_with_counterexample: int
    two_heads_solved: int

    @property
    def empty(self) -> bool:
        return not self.cells


def _verifier_agreements(m: list[dict[str, Any]]) -> list[bool]:
    """Per exhaustively evaluated single head: do the exact verifier's verdicts and the exhaustive
    accuracies agree (for min and for max)?"""
    return [
        _all_right(x["accuracy_min"]) == x["verifier_min"]["correct"]
        and _all_right(x["accuracy_max"]) == x["verifier_max"]["correct"]
        for x in m
        if x.get("exhaustive")
    ]


def summarize_minmax_heads(rows: Rows) -> MinmaxHeadsSummary:
    cells, agreements = [], []
    for key, m in _group(rows, ("M", "n", "heads", "dim")).items():
        cells.append(MinmaxHeadsCell.of(key, m))
        if cells[-1].heads == 1:
            agreements += _verifier_agreements(m)
    return MinmaxHeadsSummary(
        cells=cells,
        construction_dims=None,
        verifier_agrees_with_exhaustive=all(agreements) and bool(agreements),
        single_heads_checked=len(agreements),
        single_heads_with_counterexample=sum(c.counterexample_min_or_max or 0 for c in cells),
        two_heads_solved=sum(c.solved_both for c in cells if c.heads == 2),
    )


# --------------------------------------------------------------------------------------------------
# 4. XOR (D, H) phase diagram
# --------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def frontier_accuracy(function: str, n: int, DH: int) -> float | None:
    """The exact accuracy frontier (boolean.frontier) of `function` on n bits at c = min(D·H, T), as
    a float: the best any model with H heads and a degree-D readout can reach on all 2^n inputs
    (Theorems 2 and 3). None when the function does not parse at n or its frontier is beyond
    boolean.frontier's work bound."""
    try:
        F = parse_function(function, n)
        return frontier_row(F, min(DH, sign_changes(F))).accuracy_float
    except InputError:
        return None


@dataclass(frozen=True)
class XorPhaseCell(_Json):
    """One (function, n, D = degree, H = heads) over its seeds: T (threshold degree), the value
    dimension, whether D·H < T, seeds solving exactly and the mean accuracy on all inputs;
    frontier_accuracy, the best accuracy any model of this D·H can have (boolean.frontier at c =
    min(D·H, T); None beyond its work bound) and fraction_of_frontier = accuracy / frontier_accuracy
    (computed from the stored metrics: databases written before these fields read the same)."""

    function: str
    n: int
    degree: int
    heads: int
    seeds: int
    T: int
    dim: int
    below_bound: bool
    solved: int
    accuracy: float
    frontier_accuracy: float | None
    fraction_of_frontier: float | None

    @classmethod
    def of(cls, key: tuple, m: list[dict[str, Any]]) -> XorPhaseCell:
        """The cell of config values `key` (function, n, degree, heads) from its runs' metrics
        `m`."""
        function, n, degree, heads = key
        T = m[0]["threshold_degree"]
        accuracy = _mean([x["accuracy_all_inputs"] for x in m])
        frontier = frontier_accuracy(function, n, degree * heads)
        return cls(
            function,
            n,
            degree,
            heads,
            seeds=len(m),
            T=T,
            dim=m[0]["dim"],
            below_bound=degree * heads < T,
            solved=sum(bool(x["solved_exact"]) for x in m),
            accuracy=accuracy,
            frontier_accuracy=frontier,
            fraction_of_frontier=None if frontier is None else accuracy / frontier,
        )

    def with_construction(self, certified: bool | None) -> XorPhaseCellWithConstruction:
        """This cell with its construction's certificate (None: refused, below the bound)."""
        return XorPhaseCellWithConstruction(**asdict(self), construction_certified=certified)


@dataclass(frozen=True)
class XorPhaseCellWithConstruction(XorPhaseCell):
    """A cell with the Theorem-3 construction's certificate at its (D, H), added by the report: None
    below the bound (the construction is refused there)."""

    construction_certified: bool | None


@dataclass(frozen=True)
class XorPhaseSummary(_Json):
    """The cells, n (None: no cells), and how many cells below and above the bound training solved
    (some seed exactly right); above_constructions_certified (cells above with a certified
    construction) is the report's."""

    OPTIONAL: ClassVar[tuple[str, ...]] = ("above_constructions_certified",)

    cells: list[XorPhaseCell]
    n: int | None
    below_cells: int
    below_solved: int
    above_cells: int
    above_solved: int
    above_constructions_certified: int | None

    @property
    def empty(self) -> bool:
        return not self.cells


def summarize_xor_phase(rows: Rows) -> XorPhaseSummary:
    """Training cells by (function, n, D, H): seeds solving exactly, mean accuracy, and the side of
    the bound D·H < T (threshold degree) each cell lies on."""
    cells = [
        XorPhaseCell.of(key, m)
        for key, m in _group(rows, ("function", "n", "degree", "heads")).items()
    ]
    below = [c for c in cells if c.below_bound]
    above = [c for c in cells if not c.below_bound]
    return XorPhaseSummary(
        cells=cells,
        n=cells[0].n if cells else None,
        below_cells=len(below),
        below_solved=sum(c.solved > 0 for c in below),
        above_cells=len(above),
        above_solved=sum(c.solved > 0 for c in above),
        above_constructions_certified=None,
    )


Summary = InductionDepthSummary | KhopSummary | MinmaxHeadsSummary | XorPhaseSummary
