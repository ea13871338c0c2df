"""The four learning experiments of spec/learning.md, each one sweep + a table + a figure from the database.

    run_experiment("xor-phase", scale="quick", db="headcount-results.sqlite") -> result dict

| experiment       | sweep (quick scale; `full` grows it)                                   | compared with      |
|------------------|------------------------------------------------------------------------|--------------------|
| induction-depth  | layers {1, 2} × n {16, 32}, 1 head, dim 32, alphabet 4                  | the INDEX bound     |
| khop             | layers {2, 3, 4}, trained on 1..4 hops ("no adjacent repeats", α = 4)   | depth ≈ log₂ k      |
| minmax-heads     | heads {1, 2} × dim {1, 2, 3, 4, 6}, M = 8, n = 4, 2 seeds               | exact verifier      |
| xor-phase        | D, H ∈ {1, 2, 4, 8}, n = 8, 2 seeds                                     | D·H = n (Thms 2, 3) |

Each experiment is a sweep spec (`experiment_spec`) run by :func:`headcount.learn.sweep.run_sweep` —
resumable, parallel, one row per run in the results database — then `summarize` reads *only the
database* (the rows of this spec's run ids) and returns the series its figure and claim use. k-hop:
one model per depth L is trained on hop counts drawn from 1..K (the hop count is the first token) and
evaluated at every k ≤ K (`accuracy_by_hop`); the heat map shows the error by (L, k).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from headcount.learn.store import ResultsStore

DEFAULT_DB = "headcount-results.sqlite"


@dataclass(frozen=True)
class Experiment:
    name: str
    task: str
    description: str
    scales: dict[str, dict[str, Any]]  # scale -> {"fixed": …, "grid": …, "seeds": …}
    summarize: Callable[[list[dict[str, Any]]], dict[str, Any]]
    table_metrics: tuple[str, ...]  # the metrics `headcount experiment` tabulates (sweep_table names)


def _mean(values: list[float]) -> float:
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return float(np.mean(values)) if values else float("nan")


def _group(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[tuple, list[dict[str, Any]]]:
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[tuple(row["config"][k] for k in keys)].append(row)
    return dict(sorted(groups.items()))


# ----------------------------------------------------------------------------------------------------
# 1. induction heads: one layer vs two layers
# ----------------------------------------------------------------------------------------------------


def summarize_induction_depth(rows: list[dict[str, Any]]) -> dict[str, Any]:
    cells = []
    for (layers, n, alphabet, heads, dim), group in _group(
        rows, ("layers", "n", "alphabet", "heads", "dim")
    ).items():
        m = [r["metrics"] for r in group]
        cells.append(
            {
                "layers": layers,
                "n": n,
                "alphabet": alphabet,
                "heads": heads,
                "dim": dim,
                "seeds": len(m),
                "accuracy": _mean([x["accuracy"] for x in m]),
                "accuracy_min": min(x["accuracy"] for x in m),
                "accuracy_max": max(x["accuracy"] for x in m),
                "accuracy_bottom": _mean([x["accuracy_bottom"] for x in m]),
                "accuracy_index": _mean([x.get("accuracy_index") for x in m]),
            }
        )
    two = [c for c in cells if c["layers"] >= 2]
    one = [c for c in cells if c["layers"] == 1]
    pairs = [
        (o, t)
        for o in one
        for t in two
        if (o["n"], o["alphabet"], o["heads"], o["dim"]) == (t["n"], t["alphabet"], t["heads"], t["dim"])
    ]
    best_by_n, index_by_n = {}, {}
    for c in two:
        best_by_n[c["n"]] = max(best_by_n.get(c["n"], 0.0), c["accuracy_max"])
        if not math.isnan(c["accuracy_index"]):
            index_by_n[c["n"]] = max(index_by_n.get(c["n"], 0.0), c["accuracy_index"])
    return {
        "cells": cells,
        "two_layer_best_by_n": dict(sorted(best_by_n.items())),
        "two_layer_index_accuracy_by_n": dict(sorted(index_by_n.items())),  # best, at the INDEX query
        "two_layer_best_min_accuracy": min(best_by_n.values(), default=float("nan")),
        "two_layer_weakest_cell_accuracy": min((c["accuracy_max"] for c in two), default=float("nan")),
        "one_layer_best_accuracy": max((c["accuracy_max"] for c in one), default=float("nan")),
        "one_below_two_everywhere": bool(pairs)
        and all(o["accuracy_max"] < t["accuracy_max"] for o, t in pairs),
    }


# ----------------------------------------------------------------------------------------------------
# 2. k-hop depth table
# ----------------------------------------------------------------------------------------------------


def summarize_khop(rows: list[dict[str, Any]]) -> dict[str, Any]:
    table: dict[int, dict[int, float]] = {}
    for (layers,), group in _group(rows, ("layers",)).items():
        by_hop: dict[int, list[float]] = defaultdict(list)
        for r in group:
            for k, acc in r["metrics"]["accuracy_by_hop"].items():
                by_hop[int(k)].append(acc)
        table[layers] = {k: 1.0 - _mean(v) for k, v in sorted(by_hop.items())}
    layers = sorted(table)
    hops = sorted({k for row in table.values() for k in row})
    errors = [[table[L].get(k, float("nan")) for k in hops] for L in layers]
    return {
        "layers": layers,
        "hops": hops,
        "error": errors,
        "one_hop_error_deepest": table[layers[-1]].get(1, float("nan")) if layers else float("nan"),
    }


# ----------------------------------------------------------------------------------------------------
# 3. min and max: one head vs two heads
# ----------------------------------------------------------------------------------------------------


def _all_right(accuracy: float) -> bool:
    # accuracies are sums of normalised multiset weights: all right means 1 up to the float rounding of the sum
    return accuracy > 1 - 1e-9


def summarize_minmax(rows: list[dict[str, Any]]) -> dict[str, Any]:
    cells = []
    single_verdicts = []
    for (M, n, heads, dim), group in _group(rows, ("M", "n", "heads", "dim")).items():
        m = [r["metrics"] for r in group]
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
            for x in m:
                # the exact verifier and the exhaustive accuracy must agree on every trained single head
                if x.get("exhaustive"):
                    single_verdicts.append(
                        _all_right(x["accuracy_min"]) == x["verifier_min"]["correct"]
                        and _all_right(x["accuracy_max"]) == x["verifier_max"]["correct"]
                    )
        cells.append(cell)
    from headcount.minmax.certify import certify_minmax

    construction_dims = {}
    for M, n in sorted({(c["M"], c["n"]) for c in cells}):
        cert = certify_minmax(M, n, 2, code="compact")
        if cert["errors_min"] == 0 and cert["errors_max"] == 0:
            construction_dims[M] = cert["dim"]
    return {
        "cells": cells,
        "construction_dims": construction_dims,
        "verifier_agrees_with_exhaustive": all(single_verdicts) and bool(single_verdicts),
        "single_heads_checked": len(single_verdicts),
        "single_heads_with_counterexample": sum(c.get("counterexample_min_or_max", 0) for c in cells),
        "two_heads_solved": sum(c["solved_both"] for c in cells if c["heads"] == 2),
    }


# ----------------------------------------------------------------------------------------------------
# 4. XOR (D, H) phase diagram
# ----------------------------------------------------------------------------------------------------


def summarize_xor(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Training cells from the database, each with the Theorem-3 construction's exact certificate for the
    same (D, H) overlaid (construct_and_certify; refused below the bound)."""
    from headcount.boolean.certify import construct_and_certify

    cells = []
    for (function, n, degree, heads), group in _group(rows, ("function", "n", "degree", "heads")).items():
        m = [r["metrics"] for r in group]
        cells.append(
            {
                "function": function,
                "n": n,
                "degree": degree,
                "heads": heads,
                "seeds": len(m),
                "T": m[0]["threshold_degree"],
                "dim": m[0]["dim"],
                "below_bound": degree * heads < m[0]["threshold_degree"],
                "solved": sum(bool(x["solved_exact"]) for x in m),
                "accuracy": _mean([x["accuracy_all_inputs"] for x in m]),
                "construction_certified": (
                    None
                    if degree * heads < m[0]["threshold_degree"]
                    else construct_and_certify(function, n, degree, heads)["certified"]
                ),
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
        "above_constructions_certified": sum(bool(c["construction_certified"]) for c in above),
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
            summarize_minmax,
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
            summarize_xor,
            ("accuracy_all_inputs", "solved", "solved_exact", "train_seconds"),
        ),
    )
}
SCALES = ("quick", "full")


def _experiment(name: str) -> Experiment:
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}: experiments are {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[name]


def experiment_spec(name: str, scale: str = "quick") -> dict[str, Any]:
    """The sweep spec (the dict form of a sweep TOML file) of experiment `name` at `scale`."""
    exp = _experiment(name)
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}: use one of {', '.join(SCALES)}")
    s = exp.scales[scale]
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


def experiment_rows(name: str, scale: str, db: str | Path) -> list[dict[str, Any]]:
    """The done rows of this experiment's spec at `scale`, read from the database."""
    from headcount.learn.sweep import load_spec

    ids = {run.run_id for run in load_spec(experiment_spec(name, scale)).runs()}
    with ResultsStore(db) as store:
        return [r for r in store.rows(experiment=name, status="done") if r["run_id"] in ids]


def summarize_experiment(name: str, scale: str, db: str | Path) -> dict[str, Any]:
    return _experiment(name).summarize(experiment_rows(name, scale, db))


def ensure_experiment(
    name: str, scale: str, db: str | Path, workers: int | None = None, progress: bool = False
) -> dict[str, Any]:
    """Run whatever of the experiment's sweep is not yet in `db`, then its summary from the database."""
    from headcount.learn.sweep import run_sweep

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
    figure_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Run (or resume) the experiment's sweep into `db`, then summarize it from the database and draw its
    figure (PNG + SVG) into `figure_dir` (default: beside the database)."""
    from headcount.learn.sweep import run_sweep, sweep_table

    spec = experiment_spec(name, scale)
    counts = run_sweep(spec, db, workers=workers, backend=backend, address=address, progress=progress)
    summary = summarize_experiment(name, scale, db)
    from headcount.report.learning import save_experiment_figure

    out = Path(figure_dir) if figure_dir is not None else Path(db).resolve().parent
    figure = (
        save_experiment_figure(name, summary, out, f"{name}-{scale}")
        if summary.get("cells") or summary.get("layers")
        else None
    )
    return {
        "experiment": name,
        "scale": scale,
        "db": str(Path(db).resolve()),
        "sweep": counts,
        "summary": summary,
        "table": sweep_table(db, name, format="md", metrics=list(_experiment(name).table_metrics)),
        "figure": figure,
    }
