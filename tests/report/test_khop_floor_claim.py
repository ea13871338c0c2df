"""The claim `induction.khop.floor` (report/induction/khop_floor.py) passes on the floor
construction and fails where a certificate, the depth or the shape contradicts it; its figure
draws."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from headcount.induction.multihop.construction import khop_construction
from headcount.induction.multihop.floor import floor_construction
from headcount.report.claims import FAIL, PASS, Context
from headcount.report.induction import khop_floor
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
