"""The four learning experiments of spec/learning.md: each one sweep, its table, and a summary read back
from the database.

    run_experiment("xor-phase", scale="quick", db=DEFAULT_DB) -> ExperimentResult

| experiment      | sweep (quick scale; `full` grows it)                           | compared with   |
|-----------------|----------------------------------------------------------------|-----------------|
| induction-depth | layers {1, 2} × n {16, 32}, 1 head, dim 32, alphabet 4          | the INDEX bound |
| khop            | layers {2, 3, 4}, trained on 1..4 hops (no adjacent repeats)    | depth ≈ log₂ k  |
| minmax-heads    | heads {1, 2} × dim {1, 2, 3, 4, 6}, M = 8, n = 4, 2 seeds       | exact verifier  |
| xor-phase       | D, H ∈ {1, 2, 4, 8}, n = 8, 2 seeds                             | D·H = n (Thm 2) |

Each experiment is a sweep spec (`experiment_spec`) run by `headcount.learn.sweep.run_sweep` — resumable,
parallel, one row per run in the results database — then its summarizer (summarize_induction_depth,
summarize_khop, summarize_minmax_heads, summarize_xor_phase) reads *only the database* (the rows of this
spec's run ids) and returns the series its claim and figure use. What the theory's constructions achieve
on the same cells (their certificates) is not a summary's business: report/learning.py adds it, draws the
figure and checks the claims, so learn/ never imports report/. k-hop: one model per depth L is trained on
hop counts drawn from 1..K (the hop count is the first token) and evaluated at every k ≤ K
(`accuracy_by_hop`); the heat map shows the error by (L, k).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from headcount.core.errors import InputError
from headcount.core.jsonable import jsonable
from headcount.core.validate import check_choice
from headcount.learn.constants import DEFAULT_DB, SCALES
from headcount.learn.store import ResultsStore
from headcount.learn.sweep import SweepCounts, load_spec, run_sweep, sweep_table

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class Experiment:
    name: str
    task: str
    description: str
    scales: dict[str, dict[str, Any]]  # scale -> {"fixed": …, "grid": …, "seeds": …}
    summarize: Callable[[Rows], dict[str, Any]]  # database rows -> the summary (series of claim and figure)
    table_metrics: tuple[str, ...]  # the metrics `headcount experiment` tabulates (sweep_table names)


@dataclass(frozen=True)
class ExperimentResult:
    """One run_experiment call: the sweep's counts, the summary read from the database, the Markdown
    table."""

    experiment: str
    scale: str
    db: str
    sweep: SweepCounts
    summary: dict[str, Any]
    table: str

    def to_json(self) -> dict[str, Any]:
        """The fields in order; NaN in the summary kept as NaN (a mean over no values), as printed before."""
        return {
            "experiment": self.experiment,
            "scale": self.scale,
            "db": self.db,
            "sweep": self.sweep.to_json(),
            "summary": jsonable(self.summary, nonfinite="keep"),
            "table": self.table,
        }


def _mean(values: list[float]) -> float:
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return float(np.mean(values)) if values else float("nan")


def _group(rows: Rows, keys: tuple[str, ...]) -> dict[tuple, list[dict[str, Any]]]:
    """The rows' metrics grouped by the config values of `keys`, groups sorted by those values."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[tuple(row["config"][k] for k in keys)].append(row["metrics"])
    return dict(sorted(groups.items()))


# ----------------------------------------------------------------------------------------------------
# 1. induction heads: one layer vs two layers
# ----------------------------------------------------------------------------------------------------

_INDUCTION_KEYS = ("layers", "n", "alphabet", "heads", "dim")


def _induction_cell(key: tuple, m: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        **dict(zip(_INDUCTION_KEYS, key)),
        "seeds": len(m),
        "accuracy": _mean([x["accuracy"] for x in m]),
        "accuracy_min": min(x["accuracy"] for x in m),
        "accuracy_max": max(x["accuracy"] for x in m),
        "accuracy_bottom": _mean([x["accuracy_bottom"] for x in m]),
        "accuracy_index": _mean([x.get("accuracy_index") for x in m]),
    }


def _best_by_n(cells: list[dict[str, Any]], key: str) -> dict[int, float]:
    """n → the largest `key` over the cells of that length (NaN skipped), by n."""
    best: dict[int, float] = {}
    for c in cells:
        if not math.isnan(c[key]):
            best[c["n"]] = max(best.get(c["n"], 0.0), c[key])
    return dict(sorted(best.items()))


def _one_below_two(one: list[dict[str, Any]], two: list[dict[str, Any]]) -> bool:
    """Every one-layer cell's best seed below that of the two-layer cell of the same n, alphabet, heads and
    dim (and at least one such pair)."""
    same = ("n", "alphabet", "heads", "dim")
    pairs = [(o, t) for o in one for t in two if all(o[k] == t[k] for k in same)]
    return bool(pairs) and all(o["accuracy_max"] < t["accuracy_max"] for o, t in pairs)


def summarize_induction_depth(rows: Rows) -> dict[str, Any]:
    cells = [_induction_cell(key, m) for key, m in _group(rows, _INDUCTION_KEYS).items()]
    two = [c for c in cells if c["layers"] >= 2]
    one = [c for c in cells if c["layers"] == 1]
    best_by_n = _best_by_n(two, "accuracy_max")
    return {
        "cells": cells,
        "two_layer_best_by_n": best_by_n,
        "two_layer_index_accuracy_by_n": _best_by_n(two, "accuracy_index"),  # best, at the INDEX query
        "two_layer_best_min_accuracy": min(best_by_n.values(), default=float("nan")),
        "two_layer_weakest_cell_accuracy": min((c["accuracy_max"] for c in two), default=float("nan")),
        "one_layer_best_accuracy": max((c["accuracy_max"] for c in one), default=float("nan")),
        "one_below_two_everywhere": _one_below_two(one, two),
    }


# ----------------------------------------------------------------------------------------------------
# 2. k-hop depth table
# ----------------------------------------------------------------------------------------------------


def summarize_khop(rows: Rows) -> dict[str, Any]:
    table: dict[int, dict[int, float]] = {}
    for (layers,), group in _group(rows, ("layers",)).items():
        by_hop: dict[int, list[float]] = defaultdict(list)
        for metrics in group:
            for k, acc in metrics["accuracy_by_hop"].items():
                by_hop[int(k)].append(acc)
        table[layers] = {k: 1.0 - _mean(v) for k, v in sorted(by_hop.items())}
    layers = sorted(table)
    hops = sorted({k for row in table.values() for k in row})
    return {
        "layers": layers,
        "hops": hops,
        "error": [[table[L].get(k, float("nan")) for k in hops] for L in layers],
        "one_hop_error_deepest": table[layers[-1]].get(1, float("nan")) if layers else float("nan"),
    }


# ----------------------------------------------------------------------------------------------------
# 3. min and max: one head vs two heads
# ----------------------------------------------------------------------------------------------------


def _all_right(accuracy: float) -> bool:
    # accuracies are sums of normalised multiset weights: all right is 1 up to the rounding of the sum
    return accuracy > 1 - 1e-9


def _minmax_cell(key: tuple, m: list[dict[str, Any]]) -> dict[str, Any]:
    M, n, heads, dim = key
    cell = {
        "M": M,
        "n": n,
        "heads": heads,
        "dim": dim,
        "seeds": len(m),
        "accuracy_both": _mean([x["accuracy_both"] for x in m]),
        "accuracy_both_max": max(x["accuracy_both"] for x in m),
        "solved_both": sum(_all_right(x["accuracy_both"]) for x in m),
    }
    if heads == 1:
        cell["counterexample_min_or_max"] = sum(
            x["verifier_min"]["counterexample_exists"] or x["verifier_max"]["counterexample_exists"]
            for x in m
        )
    return cell


def _verifier_agreements(m: list[dict[str, Any]]) -> list[bool]:
    """Per exhaustively evaluated single head: do the exact verifier's verdicts and the exhaustive
    accuracies agree (for min and for max)?"""
    return [
        _all_right(x["accuracy_min"]) == x["verifier_min"]["correct"]
        and _all_right(x["accuracy_max"]) == x["verifier_max"]["correct"]
        for x in m
        if x.get("exhaustive")
    ]


def summarize_minmax_heads(rows: Rows) -> dict[str, Any]:
    cells, agreements = [], []
    for key, m in _group(rows, ("M", "n", "heads", "dim")).items():
        cells.append(_minmax_cell(key, m))
        if cells[-1]["heads"] == 1:
            agreements += _verifier_agreements(m)
    return {
        "cells": cells,
        "verifier_agrees_with_exhaustive": all(agreements) and bool(agreements),
        "single_heads_checked": len(agreements),
        "single_heads_with_counterexample": sum(c.get("counterexample_min_or_max", 0) for c in cells),
        "two_heads_solved": sum(c["solved_both"] for c in cells if c["heads"] == 2),
    }


# ----------------------------------------------------------------------------------------------------
# 4. XOR (D, H) phase diagram
# ----------------------------------------------------------------------------------------------------


def summarize_xor_phase(rows: Rows) -> dict[str, Any]:
    """Training cells by (function, n, D, H): seeds solving exactly, mean accuracy, and the side of the
    bound D·H < T (threshold degree) each cell lies on."""
    cells = []
    for (function, n, degree, heads), m in _group(rows, ("function", "n", "degree", "heads")).items():
        T = m[0]["threshold_degree"]
        cells.append(
            {
                "function": function,
                "n": n,
                "degree": degree,
                "heads": heads,
                "seeds": len(m),
                "T": T,
                "dim": m[0]["dim"],
                "below_bound": degree * heads < T,
                "solved": sum(bool(x["solved_exact"]) for x in m),
                "accuracy": _mean([x["accuracy_all_inputs"] for x in m]),
            }
        )
    below = [c for c in cells if c["below_bound"]]
    above = [c for c in cells if not c["below_bound"]]
    return {
        "cells": cells,
        "n": cells[0]["n"] if cells else None,
        "below_cells": len(below),
        "below_solved": sum(c["solved"] > 0 for c in below),
        "above_cells": len(above),
        "above_solved": sum(c["solved"] > 0 for c in above),
    }


EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        Experiment(
            "induction-depth",
            "induction",
            "induction heads: one layer vs two layers (accuracy vs n)",
            {
                "quick": {
                    "fixed": {"heads": 1, "dim": 32, "alphabet": 4},
                    "grid": {"n": [16, 32], "layers": [1, 2]},
                    "seeds": [0],
                },
                "full": {
                    "fixed": {"dim": 32},
                    "grid": {"n": [16, 32, 64, 128], "alphabet": [4, 16], "heads": [1, 2], "layers": [1, 2]},
                    "seeds": [0, 1],
                },
            },
            summarize_induction_depth,
            ("accuracy", "accuracy_bottom", "accuracy_index", "train_seconds"),
        ),
        Experiment(
            "khop",
            "khop",
            "k-hop induction: error by depth L and hop count k",
            {
                "quick": {
                    "fixed": {"n": 16, "alphabet": 4, "heads": 2, "dim": 32, "hops": 4},
                    "grid": {"layers": [2, 3, 4]},
                    "seeds": [0],
                },
                # lr 1e-3: at 3e-3 the attention-only L = 4, 5 models diverged (L = 5: 65 % error at k = 1)
                "full": {
                    "fixed": {
                        "n": 32,
                        "alphabet": 4,
                        "heads": 2,
                        "dim": 64,
                        "hops": 8,
                        "steps": 4000,
                        "lr": 1e-3,
                    },
                    "grid": {"layers": [2, 3, 4, 5]},
                    "seeds": [0, 1],
                },
            },
            summarize_khop,
            ("accuracy_by_hop", "accuracy_bottom", "train_seconds"),
        ),
        Experiment(
            "minmax-heads",
            "minmax",
            "min and max: one head vs two heads, by value dimension",
            {
                "quick": {
                    "fixed": {"M": 8, "n": 4},
                    "grid": {"heads": [1, 2], "dim": [1, 2, 3, 4, 6]},
                    "seeds": [0, 1],
                },
                "full": {
                    "fixed": {},
                    "grid": {"M": [8, 16], "n": [4, 8], "heads": [1, 2], "dim": [1, 2, 3, 4, 6, 8]},
                    "seeds": [0, 1, 2],
                },
            },
            summarize_minmax_heads,
            (
                "accuracy_min",
                "accuracy_max",
                "accuracy_both",
                "verifier_min.counterexample_exists",
                "verifier_max.counterexample_exists",
                "train_seconds",
            ),
        ),
        Experiment(
            "xor-phase",
            "boolean",
            "n-bit XOR: which (D, H) training solves, against D·H = n",
            {
                "quick": {
                    "fixed": {"function": "xor", "n": 8},
                    "grid": {"degree": [1, 2, 4, 8], "heads": [1, 2, 4, 8]},
                    "seeds": [0, 1],
                },
                "full": {
                    "fixed": {"function": "xor", "n": 12},
                    "grid": {"degree": [1, 2, 3, 4, 6], "heads": [1, 2, 3, 4, 6, 12]},
                    "seeds": [0, 1, 2],
                },
            },
            summarize_xor_phase,
            ("accuracy_all_inputs", "solved", "solved_exact", "train_seconds"),
        ),
    )
}


def _experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise InputError(f"unknown experiment {name!r}: use one of {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[name]


def experiment_spec(name: str, scale: str = "quick") -> dict[str, Any]:
    """The sweep spec (the dict form of a sweep TOML file) of experiment `name` at `scale`."""
    exp = _experiment(name)
    s = exp.scales[check_choice("scale", scale, SCALES)]
    return {
        "sweep": {
            "name": f"{name}-{scale}",
            "experiment": name,
            "task": exp.task,
            "seeds": list(s["seeds"]),
            "description": exp.description,
        },
        "fixed": dict(s["fixed"]),
        "grid": {k: list(v) for k, v in s["grid"].items()},
    }


def experiment_rows(name: str, scale: str, db: str | Path) -> Rows:
    """The done rows of this experiment's spec at `scale`, read from the database."""
    ids = {run.run_id for run in load_spec(experiment_spec(name, scale)).runs()}
    with ResultsStore(db) as store:
        return [r for r in store.rows(experiment=name, status="done") if r["run_id"] in ids]


def summarize_experiment(name: str, scale: str, db: str | Path) -> dict[str, Any]:
    """The experiment's summary, from the database only."""
    return _experiment(name).summarize(experiment_rows(name, scale, db))


def ensure_experiment(
    name: str, scale: str, db: str | Path, workers: int | None = None, progress: bool = False
) -> dict[str, Any]:
    """Run whatever of the experiment's sweep is not yet in `db`, then its summary from the database."""
    run_sweep(experiment_spec(name, scale), db, workers=workers, progress=progress)
    return summarize_experiment(name, scale, db)


def run_experiment(
    name: str,
    scale: str = "quick",
    db: str | Path = DEFAULT_DB,
    workers: int | None = None,
    backend: str = "local",
    address: str | None = None,
    progress: bool = False,
) -> ExperimentResult:
    """Run (or resume) the experiment's sweep into `db`, then its summary and table from the database.
    InputError for an unknown experiment, scale or backend, or a bad worker count, before anything runs."""
    counts = run_sweep(
        experiment_spec(name, scale), db, workers=workers, backend=backend, address=address, progress=progress
    )
    return ExperimentResult(
        experiment=name,
        scale=scale,
        db=str(Path(db).resolve()),
        sweep=counts,
        summary=summarize_experiment(name, scale, db),
        table=sweep_table(db, name, format="md", metrics=list(_experiment(name).table_metrics)),
    )
