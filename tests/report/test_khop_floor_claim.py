"""The claim `induction.khop.floor` (report/induction/khop_floor.py) passes on the floor
construction and fails where a certificate, the depth or the shape contradicts it; its figure
draws."""

from __future__ import annotations

import dataclasses

import matplotlib.pyplot as plt
import pytest

from headcount.induction.multihop.construction import khop_construction, variable_hop_construction
from headcount.induction.multihop.floor import floor_construction
from headcount.learn.summaries import KhopSummary
from headcount.report.claims import FAIL, PASS, Context
from headcount.report.induction import khop_floor
from headcount.report.induction.khop_mechanism import TrainedKhop
from tests.report.test_claims_falsified import blind, run

TINY = {"exhaustive": (4, 2, 3), "sampled": (16, 4, 1, 5), "experiment": None}


@pytest.mark.parametrize(
    "build, reason",
    [
        (None, None),
        (lambda n, S, k: khop_construction(n, S, k), "layers, not ⌊log₂ k⌋ + 2"),  # ceil depth
        (lambda n, S, k: blind(floor_construction(n, S, k), 0), "errors"),  # level heads blinded
    ],
)
def test_khop_floor_claim(monkeypatch, build, reason):
    if build is not None:
        monkeypatch.setattr(khop_floor, "floor_construction", build)
    r = run("induction.khop.floor", Context(), **TINY)
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail
    if reason is None:
        assert [p["layers"] for p in r.measured["sampled"]] == [2, 3, 3, 4, 4]
        assert r.measured["ceil_layers"] == {"1": 2, "2": 3, "3": 4, "4": 4, "5": 5}
        fig = plt.figure()
        caption = khop_floor.draw_depth(fig, r)
        plt.close(fig)
        assert "⌊log₂ k⌋ + 2" in caption and "n = 16" in caption


def test_the_trained_models_layer_0_is_read(monkeypatch):
    # two stored runs of an experiment, their models stand-ins: the variable-hop construction
    # (layer 0: a previous-token head and a duplicate-token head that averages the occurrences)
    rows = [
        {"run_id": f"r{L}", "config": {"layers": L, "dim": 28, "seed": 0, "n": 16,
         "alphabet": 4, "hops": 2}, "metrics": {"accuracy_by_hop": {"1": 1.0, "2": 0.9}}}
        for L in (3, 2)
    ]  # fmt: skip
    certs = {"1": {"certified": True}, "2": {"certified": False}}
    rows[0]["metrics"]["certificates_by_hop"] = certs
    monkeypatch.setattr(khop_floor, "experiment_rows", lambda name, scale, db: rows)

    def stand_in(db, row):
        model = variable_hop_construction(16, 4, 2)
        return TrainedKhop(row["run_id"], row["config"], {1: 0.0, 2: 0.1}, model)

    monkeypatch.setattr(khop_floor, "load_or_retrain", stand_in)
    ctx = Context()
    pointers = khop_floor.trained_pointers(ctx, "khop")
    assert [p["layers"] for p in pointers] == [2, 3]  # by depth
    assert [p["certified_hops"] for p in pointers] == [[], [1]]  # from the runs' certificates
    first = pointers[0]["first_layer_pointer"]
    assert not first["pointer"] and first["previous_token"] > 0.9 and first["latest_earlier"] < 0.5
    assert pointers[0]["error_by_hop"] == {"1": 0.0, "2": 0.1}
    assert khop_floor.trained_pointers(ctx, "khop") is pointers  # cached for the run
    text = khop_floor.pointers_text(pointers)
    assert text.startswith("trained models' layer 0 — L=2 dim 28 seed 0 (certified k = none): ")
    series = khop_floor.FloorSeries((), (), None, pointers)
    assert series.to_json()["trained_layer0"][1]["layers"] == 3
    r = run("induction.khop.floor", Context(), **TINY)
    drawn = dataclasses.replace(r, series=dataclasses.replace(r.series, pointers=pointers))
    fig = plt.figure()
    caption = khop_floor.draw_depth(fig, drawn)
    plt.close(fig)
    assert "0 of 2 models have a head pointing at the latest strictly earlier" in caption


def test_the_width_experiments_are_reported_and_drawn(monkeypatch):
    summary = KhopSummary(
        layers=[3, 4], hops=[1, 2, 3], error=[[0.0, 0.002, 0.3], [0.0, 0.0, 0.004]],
        one_hop_error_deepest=0.0,
    )  # fmt: skip
    monkeypatch.setattr(khop_floor, "experiment_summary", lambda ctx, name: summary)
    stub = {"layers": 3, "dim": 28, "seed": 0, "certified_hops": [1, 2],
            "first_layer_pointer": {"head": 0, "latest_earlier": 0.8, "pointer": True,
                                    "previous_token": 0.1}}  # fmt: skip
    monkeypatch.setattr(khop_floor, "trained_pointers", lambda ctx, name: (stub | {"x": name},))
    widths = ("khop-floor-w28", "khop-floor-w64")
    r = run("induction.khop.floor", Context(), **(TINY | {"width_experiments": widths}))
    assert r.status == PASS, r.detail
    assert [t["experiment"] for t in r.measured["trained_widths"]] == list(widths)
    assert r.measured["trained_widths"][0]["smallest_depth"] == [3, 3, 4]
    assert [p["x"] for p in r.measured["trained_layer0"]] == list(widths)
    assert "L=3 dim 28 seed 0 (certified k = 1, 2): layer 0: a strictly-earlier pointer" in r.detail
    fig = plt.figure()
    caption = khop_floor.draw_depth(fig, r)
    plt.close(fig)
    assert "Triangles" in caption and "2 of 2 models have a head pointing" in caption
