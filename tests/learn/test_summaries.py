"""The experiments' typed summaries on fake database rows: the numbers, and to_json() key for key
(the JSON `headcount experiment NAME --json` prints and the report's summary.json records)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from headcount.learn.summaries import (
    XorPhaseCellWithConstruction,
    summarize_induction_depth,
    summarize_khop,
    summarize_minmax_heads,
    summarize_xor_phase,
)


def row(config: dict, metrics: dict) -> dict:
    return {"config": config, "metrics": metrics}


def test_induction_depth_cells_series_and_json():
    cfg = {"alphabet": 4, "heads": 1, "dim": 32}
    rows = [
        row(
            {"layers": 1, "n": 16, **cfg},
            {"accuracy": 0.5, "accuracy_bottom": 1.0, "accuracy_index": None},
        ),
        row({"layers": 1, "n": 16, **cfg}, {"accuracy": 0.7, "accuracy_bottom": 0.5}),
        row(
            {"layers": 2, "n": 16, **cfg},
            {"accuracy": 1.0, "accuracy_bottom": 1.0, "accuracy_index": 0.75},
        ),
    ]
    s = summarize_induction_depth(rows)
    one, two = s.cells
    assert (one.layers, one.seeds, one.accuracy_min, one.accuracy_max) == (1, 2, 0.5, 0.7)
    assert math.isnan(one.accuracy_index)  # no seed has it: a mean over no values
    assert s.one_below_two_everywhere and s.two_layer_best_by_n == {16: 1.0} and not s.empty
    json_ = s.to_json()
    assert list(json_) == [
        "cells",
        "two_layer_best_by_n",
        "two_layer_index_accuracy_by_n",
        "two_layer_best_min_accuracy",
        "two_layer_weakest_cell_accuracy",
        "one_layer_best_accuracy",
        "one_below_two_everywhere",
    ]
    assert json_["cells"][1] == {
        "layers": 2,
        "n": 16,
        "alphabet": 4,
        "heads": 1,
        "dim": 32,
        "seeds": 1,
        "accuracy": 1.0,
        "accuracy_min": 1.0,
        "accuracy_max": 1.0,
        "accuracy_bottom": 1.0,
        "accuracy_index": 0.75,
    }
    assert json_["two_layer_index_accuracy_by_n"] == {16: 0.75}  # keyed by int, as before the types
    empty = summarize_induction_depth([])
    assert empty.empty and empty.cells == [] and not empty.one_below_two_everywhere
    assert math.isnan(
        empty.to_json()["two_layer_best_min_accuracy"]
    )  # NaN kept: the caller's policy


def test_khop_error_table_and_json():
    rows = [
        row({"layers": 3}, {"accuracy_by_hop": {"1": 1.0, "2": 0.5}}),
        row({"layers": 2}, {"accuracy_by_hop": {"1": 0.75}}),
    ]
    s = summarize_khop(rows)
    assert (s.layers, s.hops) == ([2, 3], [1, 2])
    assert s.error[0][0] == 0.25 and math.isnan(s.error[0][1]) and s.error[1] == [0.0, 0.5]
    assert list(s.to_json()) == ["layers", "hops", "error", "one_hop_error_deepest"]
    assert s.to_json()["one_hop_error_deepest"] == 0.0
    assert summarize_khop([]).empty and not s.empty


def cert(bits: int | None, dtypes: list[str] | None = None) -> dict:
    """A run's certificate at one hop count: certified at fixed:bits, or (None) a float64 error."""
    if bits is None:
        return {"errors": 2, "precision_bits": None, "certified": False, "dtypes_exact": None}
    return {
        "errors": 0,
        "precision_bits": bits,
        "certified": True,
        "dtypes_exact": dtypes or ["float64"],
    }


def test_khop_certified_precision_by_cell():
    acc = {"1": 1.0, "2": 0.5}

    def certified_row(layers: int, seed: int, certs: dict | None) -> dict:
        metrics = {"accuracy_by_hop": acc} | (
            {} if certs is None else {"certificates_by_hop": certs}
        )
        return row({"layers": layers, "seed": seed}, metrics)

    rows = [
        certified_row(2, 0, {"1": cert(4), "2": cert(None)}),
        certified_row(3, 0, {"1": cert(3, ["float16", "float64"]), "2": cert(5)}),
        certified_row(3, 1, {"1": cert(6, ["bfloat16", "float64", "float16"]), "2": cert(None)}),
        certified_row(4, 0, None),  # a run from before the certificates
    ]
    s = summarize_khop(rows)
    assert s.layers == [2, 3, 4]
    # the largest p over seeds; None where any seed is not certified or has no certificate
    assert s.precision_bits == [[4, None], [6, None], [None, None]]
    assert s.dtypes_exact == [[["float64"], None], [["float16", "float64"], None], [None, None]]
    assert s.certified_cells == 2
    assert list(s.to_json())[-3:] == ["precision_bits", "dtypes_exact", "certified_cells"]
    plain = summarize_khop([{**r, "metrics": {"accuracy_by_hop": acc}} for r in rows])
    assert plain.precision_bits is None and list(plain.to_json()) == list(s.to_json())[:-3]


def minmax_row(heads: int, dim: int, both: float, refuted: bool, exhaustive: bool = True) -> dict:
    verdict = {"counterexample_exists": refuted, "correct": not refuted}
    return row(
        {"M": 8, "n": 4, "heads": heads, "dim": dim},
        {
            "accuracy_both": both,
            "accuracy_min": both,
            "accuracy_max": both,
            "verifier_min": verdict,
            "verifier_max": verdict,
            "exhaustive": exhaustive,
        },
    )


def test_minmax_heads_counts_and_json():
    s = summarize_minmax_heads([minmax_row(1, 2, 0.7, True), minmax_row(2, 3, 1.0, False)])
    assert s.verifier_agrees_with_exhaustive and s.single_heads_checked == 1
    assert s.single_heads_with_counterexample == 1 and s.two_heads_solved == 1
    assert s.construction_dims is None  # the report's to add
    assert s.to_json() == {
        "cells": [
            {
                "M": 8,
                "n": 4,
                "heads": 1,
                "dim": 2,
                "seeds": 1,
                "accuracy_both": 0.7,
                "accuracy_both_max": 0.7,
                "solved_both": 0,
                "counterexample_min_or_max": 1,
            },
            # two heads: no verifier, so no counterexample count (left out, not null)
            {
                "M": 8,
                "n": 4,
                "heads": 2,
                "dim": 3,
                "seeds": 1,
                "accuracy_both": 1.0,
                "accuracy_both_max": 1.0,
                "solved_both": 1,
            },
        ],
        "verifier_agrees_with_exhaustive": True,
        "single_heads_checked": 1,
        "single_heads_with_counterexample": 1,
        "two_heads_solved": 1,
    }
    # with the constructions: construction_dims comes second, as `headcount experiment` has printed
    # it
    assert list(replace(s, construction_dims={8: 6}).to_json())[:3] == [
        "cells",
        "construction_dims",
        "verifier_agrees_with_exhaustive",
    ]
    # the verifier agrees on no exhaustively evaluated head: not "agrees"
    sampled = summarize_minmax_heads([minmax_row(1, 2, 0.7, True, exhaustive=False)])
    assert not sampled.verifier_agrees_with_exhaustive and sampled.single_heads_checked == 0


def xor_row(degree: int, heads: int, solved: bool) -> dict:
    return row(
        {"function": "xor", "n": 4, "degree": degree, "heads": heads},
        {
            "threshold_degree": 4,
            "dim": 1,
            "solved_exact": solved,
            "accuracy_all_inputs": 1.0 if solved else 0.5,
        },
    )


def test_xor_phase_sides_and_json():
    s = summarize_xor_phase([xor_row(1, 2, False), xor_row(2, 2, True)])
    assert (s.n, s.below_cells, s.below_solved, s.above_cells, s.above_solved) == (4, 1, 0, 1, 1)
    assert s.above_constructions_certified is None
    assert s.to_json() == {
        "cells": [
            {
                "function": "xor",
                "n": 4,
                "degree": 1,
                "heads": 2,
                "seeds": 1,
                "T": 4,
                "dim": 1,
                "below_bound": True,
                "solved": 0,
                "accuracy": 0.5,
                # 4-bit XOR with ≤ 2 sign changes: best "--+--", wrong only on t = 0 and 4 (2 of 16
                # inputs)
                "frontier_accuracy": 0.875,
                "fraction_of_frontier": 0.5 / 0.875,
            },
            {
                "function": "xor",
                "n": 4,
                "degree": 2,
                "heads": 2,
                "seeds": 1,
                "T": 4,
                "dim": 1,
                "below_bound": False,
                "solved": 1,
                "accuracy": 1.0,
                "frontier_accuracy": 1.0,  # D·H = 4 = T: the frontier is 1
                "fraction_of_frontier": 1.0,
            },
        ],
        "n": 4,
        "below_cells": 1,
        "below_solved": 0,
        "above_cells": 1,
        "above_solved": 1,
    }
    # the report's additions go last: each cell's certificate (None below the bound), then the count
    cells = [c.with_construction(None if c.below_bound else True) for c in s.cells]
    built = replace(s, cells=cells, above_constructions_certified=1).to_json()
    assert isinstance(cells[0], XorPhaseCellWithConstruction) and cells[0].n == 4
    assert [c["construction_certified"] for c in built["cells"]] == [None, True]
    assert list(built["cells"][0])[-4:] == [
        "accuracy",
        "frontier_accuracy",
        "fraction_of_frontier",
        "construction_certified",
    ]
    assert list(built)[-2:] == ["above_solved", "above_constructions_certified"]
    empty = summarize_xor_phase([])
    assert empty.empty and empty.to_json()["n"] is None


def test_xor_phase_frontier_from_stored_metrics_only():
    """The frontier fields come from config and metrics alone (rows written before they existed read
    the same), per cell at c = min(D·H, T); None where boolean.frontier refuses the size (n = 10⁶
    bits)."""
    rows = [
        row(
            {"function": "majority", "n": 3, "degree": 1, "heads": 1},
            {"threshold_degree": 1, "dim": 1, "solved_exact": False, "accuracy_all_inputs": 0.75},
        ),
        row(
            {"function": "mod:3", "n": 3, "degree": 1, "heads": 1},
            {"threshold_degree": 2, "dim": 1, "solved_exact": False, "accuracy_all_inputs": 0.75},
        ),
        row(
            {"function": "xor", "n": 10**6, "degree": 1, "heads": 1},
            {
                "threshold_degree": 10**6,
                "dim": 1,
                "solved_exact": False,
                "accuracy_all_inputs": 0.5,
            },
        ),
    ]
    majority, mod3, huge = summarize_xor_phase(rows).cells
    # majority on 3 bits: D·H = 1 = T, the frontier is 1; mod:3 (F = +, −, −, +) with one change:
    # "+---" or "---+" is wrong on weight 1 of 8, so 7/8
    assert (majority.frontier_accuracy, majority.fraction_of_frontier) == (1.0, 0.75)
    assert (mod3.frontier_accuracy, mod3.fraction_of_frontier) == (0.875, 0.75 / 0.875)
    assert (huge.frontier_accuracy, huge.fraction_of_frontier) == (None, None)


def test_summaries_are_frozen():
    s = summarize_khop([])
    with pytest.raises(AttributeError):
        s.layers = [1]  # type: ignore[misc]
