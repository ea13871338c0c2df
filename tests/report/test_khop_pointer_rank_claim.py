"""The claim `induction.khop.pointer_rank` (report/induction/khop_pointer_rank.py) passes on the
certified ranks and fails where a certificate, the bounds' shape or the 2√n law contradicts it;
its figure draws."""

from __future__ import annotations

import dataclasses

import matplotlib.pyplot as plt
import pytest

from headcount.induction.multihop.pointer_rank import RankBounds, search_pointer_rank
from headcount.report.claims import FAIL, PASS, Context
from headcount.report.induction import khop_pointer_rank
from tests.report.test_claims_falsified import run

TINY = {"poly": (8, 16), "fourier": (8, 16, 64), "lp_max_n": 16}


def loosened(family, n, guess, r_max, lp=True):
    """The real bounds, the polynomial family's with its strict end one rank higher (certified
    still, no longer exact)."""
    bounds = real(family, n, guess, r_max, lp=lp)
    if family != "poly":
        return bounds
    return RankBounds(bounds.below, search_pointer_rank(family, n, bounds.at.r + 1))


real = khop_pointer_rank.pointer_rank_bounds


@pytest.mark.parametrize(
    "patch, reason",
    [
        (None, None),
        (("check_pointer_rank", lambda x: x.r != 8), "does not re-verify"),
        (("sqrt_law", lambda n: 3 * n**0.5), "more than one from 2√n"),
        (("pointer_rank_bounds", loosened), "not the last query's refutation"),
    ],
)
def test_khop_pointer_rank_claim(monkeypatch, patch, reason):
    if patch is not None:
        monkeypatch.setattr(khop_pointer_rank, *patch)
    r = run("induction.khop.pointer_rank", Context(), **TINY)
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail
    if reason is None:
        assert [(p["n"], p["r_strict"]) for p in r.measured["poly"]] == [(8, 6), (16, 8)]
        fourier = {
            p["n"]: (p["r_infeasible"], p["r_strict"], p["exact"]) for p in r.measured["fourier"]
        }
        assert fourier == {8: (5, 6, True), 16: (8, 9, True), 64: (17, 19, False)}
        assert "64: 18–19" in r.detail
        fig = plt.figure()
        caption = khop_pointer_rank.draw_rank(fig, r)
        plt.close(fig)
        assert "Gordan certificate" in caption and "2√n" in caption


def test_an_inverted_pair_fails():
    bounds = real("poly", 8, 6, 20)
    swapped = RankBounds(dataclasses.replace(bounds.at), bounds.below)
    assert any("not an infeasible rank" in line for line in khop_pointer_rank.problems_of(swapped))
