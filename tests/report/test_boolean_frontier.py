"""boolean.frontier (report/boolean/frontier.py): the claim PASSes on the real frontier and
constructions at the quick scale, FAILs when fed a wrong model accuracy, a suboptimal row or a plan
that misses a D·H, and draws its figure with the trained xor-phase models (a fake summary through
the Context cache: no training).
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest
from flint import fmpq

from headcount.boolean import accuracy_frontier as bf
from headcount.learn.summaries import summarize_xor_phase
from headcount.report.boolean import frontier as claim_module
from headcount.report.claims import FAIL, PASS, Context
from headcount.report.figures import FIGURES, save_figure
from headcount.report.reproduce import CLAIM_MODULES, load_claims, run_claim

SMALL: dict[str, Any] = {
    "n": 6,
    "functions": ["xor", "majority", "mod:3"],
    "all_pairs": False,
    "experiment": None,
}


def run(ctx: Context | None = None, **params: Any):
    """The registered claim with explicit parameters, exceptions turned into FAIL as in
    reproduce."""
    registered = load_claims()[claim_module.CLAIM]
    return run_claim(
        SimpleNamespace(function=registered.function, params_for=lambda scale: params),
        ctx or Context(),
    )


def xor_phase_ctx(tmp_path, n: int = 4) -> Context:
    """A Context whose cached xor-phase summary is summarize_xor_phase of fake rows at n (no
    training)."""
    rows = [
        {
            "config": {"function": "xor", "n": n, "degree": D, "heads": H},
            "metrics": {
                "threshold_degree": n,
                "dim": 1,
                "solved_exact": D * H >= n,
                "accuracy_all_inputs": acc,
            },
        }
        for D, H, acc in [(1, 1, 0.5), (1, 2, 0.625), (2, 2, 1.0), (1, 4, 1.0)]
    ]
    ctx = Context(scale="quick", results_db=str(tmp_path / "results.sqlite"))
    ctx.cache[("experiment", "xor-phase", "quick", ctx.results_db)] = summarize_xor_phase(rows)
    return ctx


def test_registered_after_boolean():
    names = [m.__name__ for m in CLAIM_MODULES]
    assert (
        names[names.index("headcount.report.boolean.claims") + 1]
        == "headcount.report.boolean.frontier"
    )
    assert load_claims()[claim_module.CLAIM].params_for("quick") == claim_module.QUICK


def test_plan_covers_every_c_below_t():
    assert claim_module.plan(5, False) == [(1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (2, 1), (2, 2)]
    assert claim_module.plan(1, False) == [(1, 1)]
    assert claim_module.plan(4, True) == [
        (1, 1),
        (1, 2),
        (1, 3),
        (1, 4),
        (2, 1),
        (2, 2),
        (3, 1),
        (4, 1),
    ]


def test_quick_scale_passes():
    """The quick parameters themselves (n = 12: xor, majority, mod:3), without the trained
    models."""
    r = run(**claim_module.QUICK, experiment=None)
    assert r.status == PASS, r.detail
    xor = r.measured["functions"]["xor"]
    assert xor["threshold_degree"] == 12 and len(xor["rows"]) == 13
    assert [m["sign_changes"] for m in xor["models"]] == [*range(1, 13), 2, 4, 6, 8, 10]
    assert all(m["certified"] for f in r.measured["functions"].values() for m in f["models"])
    assert (r.measured["models"], r.measured["certified"]) == (29, 29)
    assert xor["models"][4]["model_accuracy"] == xor["rows"][5]["best_accuracy"] == "3797/4096"
    assert r.measured["functions"]["mod:3"]["threshold_degree"] == 8


def test_trained_models_reported_and_drawn(tmp_path):
    r = run(xor_phase_ctx(tmp_path), **{**SMALL, "experiment": "xor-phase"})
    assert r.status == PASS, r.detail
    trained = {(c["degree"], c["heads"]): c for c in r.measured["trained"]}
    # 4-bit XOR: the frontier at D·H = 1 is 11/16 (F = +−+−+, weights 1 4 6 4 1: "++−−−" is right on
    # 11)
    assert trained[(1, 1)]["frontier_accuracy"] == 11 / 16 and trained[(1, 1)][
        "fraction_of_frontier"
    ] == 0.5 / (11 / 16)
    assert trained[(2, 2)]["frontier_accuracy"] == 1.0
    assert "trained xor-phase models below the bound reach" in r.detail
    series = r.series
    assert set(series["curves"]) == {4, 6}  # the claim's n and the trained models' n
    assert series["built"][4] == [(c, series["curves"][4][c]) for c in range(1, 5)]
    spec = FIGURES["boolean_frontier"]
    saved = save_figure(
        lambda fig: spec.draw(fig, r), tmp_path, "frontier", {}, lambda p, b: p.write_bytes(b)
    )
    assert (tmp_path / "frontier.png").stat().st_size > 1000 and "crosses: trained" in saved[
        "caption"
    ]


def test_wrong_model_accuracy_fails(monkeypatch):
    real = bf.model_accuracy
    r = run(**SMALL)
    assert r.status == PASS, r.detail
    monkeypatch.setattr(
        bf, "model_accuracy", lambda layer, readout, F: real(layer, readout, F) - fmpq(1, 64)
    )
    r = run(**SMALL)
    assert r.status == FAIL and "model accuracy" in r.detail and "by the definition" in r.detail


def test_model_for_the_wrong_pattern_fails(monkeypatch):
    """A construction for F's pattern with one change fewer than allowed (here: a constant) is
    honestly measured and certified=False; the independent evaluation by the definition disagrees
    with the frontier."""
    real = bf.build_frontier_model

    def weaker(F, row, D, H, out=None, label=""):
        return real(F, dataclasses.replace(row, pattern=(1,) * len(row.pattern)), D, H, out, label)

    monkeypatch.setattr(bf, "build_frontier_model", weaker)
    r = run(**SMALL)
    assert r.status == FAIL and "≠ frontier" in r.detail


def test_suboptimal_row_fails(monkeypatch):
    real = bf.frontier_rows

    def worse(F, max_changes=None):
        rows = list(real(F, max_changes))
        rows[1] = dataclasses.replace(rows[1], agree=rows[1].agree - 1)
        return tuple(rows)

    monkeypatch.setattr(bf, "frontier_rows", worse)
    r = run(**SMALL)
    assert r.status == FAIL and "exhaustive search" in r.detail


def test_missing_pair_fails(monkeypatch):
    monkeypatch.setattr(
        claim_module, "plan", lambda T, all_pairs: [(1, c) for c in range(2, T + 1)]
    )
    r = run(**SMALL)
    assert r.status == FAIL and "no model built at D·H = [1]" in r.detail


@pytest.mark.parametrize("function", ["xor", "mod:3"])
def test_exhaustive_frontier_is_independent_and_exact(function):
    from headcount.boolean.task import parse_function

    F = parse_function(function, 7)
    assert claim_module.exhaustive_frontier(F) == [
        (r.agree, bf.pattern_string(r.pattern)) for r in bf.frontier_rows(F)
    ]
