"""induction.khop.construction (report/induction/khop_construction.py): the claim PASSes on the real
construction, FAILs on every falsified measurement (a wrong depth, float64 errors, an unproven
position, too many heads, a width that moves with n, missing k-hop families, a precision linear in
n), and draws its two figures.

The fast tests certify the construction at tiny sizes (n ≤ 64, S = 4) and fake the trained models'
summary through the Context cache (the key report/learning/khop.py's experiment_summary uses); the
quick-scale claim itself runs once through run_reproduce, in the slow set.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from types import SimpleNamespace
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pytest

from headcount.core.model import AttentionHead, Layer
from headcount.induction.multihop import construction
from headcount.induction.multihop.families import KHOP_FAMILIES
from headcount.learn.summaries import summarize_khop
from headcount.report.claims import FAIL, PASS, Context
from headcount.report.figures import FIGURES, save_figure
from headcount.report.induction import khop_construction as kc
from headcount.report.induction import khop_construction_figures as kf
from headcount.report.reproduce import CLAIM_MODULES, load_claims, run_claim, run_reproduce

TINY: dict[str, Any] = {
    "hops": 4,
    "depth_case": (16, 4, 16),
    "precision_alphabet": 4,
    "precision_cases": [(16, 16), (32, 16), (64, 16)],
    "precision_hops": [1, 4],
    "experiment": None,
}
# the quick khop sweep's measured errors (seed 0, rounded): L = 2 reaches k = 1 only, L = 4 every k
MEASURED = {
    2: [0.001, 0.322, 0.529, 0.716],
    3: [0.0, 0.088, 0.451, 0.589],
    4: [0.0, 0.0, 0.0, 0.0014],
}


def khop_summary(errors: dict[int, list[float]]):
    """A KhopSummary as the khop sweep's database rows give it (summaries.summarize_khop on fake
    rows)."""
    rows = [
        {
            "config": {"layers": L},
            "metrics": {"accuracy_by_hop": {str(k): 1 - e for k, e in enumerate(row, 1)}},
        }
        for L, row in errors.items()
    ]
    return summarize_khop(rows)


def run(ctx: Context, **params: Any):
    """The registered claim with explicit parameters, exceptions turned into FAIL as in
    reproduce."""
    registered = load_claims()[kc.CLAIM]
    return run_claim(
        SimpleNamespace(function=registered.function, params_for=lambda scale: params), ctx
    )


@pytest.fixture(scope="module")
def tiny() -> tuple[Context, Any]:
    """The claim on the real construction at TINY's sizes (certificates in ctx.cache for the fakes
    below)."""
    ctx = Context()
    return ctx, run(ctx, **TINY)


def changed(ctx: Context, n: int, k: int, samples: int = 16, **changes: Any) -> Context:
    """A copy of ctx whose cached certificate at (n, S = 4, k) has `changes` applied: fields of the
    InductionCertificate or of its core Certificate, by name."""
    out = Context(cache=dict(ctx.cache))
    key = (kc.CACHE_KIND, n, 4, k, samples, 0)
    point = out.cache[key]
    cert = point.certificate
    outer = {k: v for k, v in changes.items() if hasattr(cert, k) and k != "certificate"}
    inner = {k: v for k, v in changes.items() if k not in outer}
    cert = dataclasses.replace(
        cert, certificate=dataclasses.replace(cert.certificate, **inner), **outer
    )
    out.cache[key] = dataclasses.replace(point, certificate=cert)
    return out


# ----------------------------------------------------------------------------------------------
# pieces
def test_registered_after_khop_with_two_figures():
    names = [m.__name__ for m in CLAIM_MODULES]
    assert (
        names.index("headcount.report.induction.khop_construction")
        == names.index("headcount.report.learning.khop") + 1
    )
    claim = load_claims()[kc.CLAIM]
    assert claim.module == "headcount.report.induction.khop_construction"
    assert claim.params["quick"]["hops"] == claim.params["full"]["hops"] == 16
    assert "experiment" not in claim.params["quick"]  # the default: the learning lab's "khop" sweep
    assert {f.id for f in FIGURES.values() if f.claim == kc.CLAIM} == {
        "khop_construction_depth",
        "khop_construction_precision",
    }


def test_depth_formulas_and_the_construction():
    ks = range(1, 17)
    assert [kc.paper_depth(k) for k in ks] == [2, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6]
    assert [kc.doubling_depth(k) for k in ks] == [2, 3, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6]
    assert all(kc.doubling_depth(k) == math.ceil(math.log2(k)) + 2 for k in range(1, 1025))
    assert all(kc.paper_depth(k) == math.floor(math.log2(k)) + 2 for k in range(1, 1025))
    # the construction has the depth the claim checks (k = 1: the two-layer construction)
    assert [len(construction.khop_construction(16, 4, k).layers) for k in ks] == [
        kc.doubling_depth(k) for k in ks
    ]


def test_fit_precision_logarithmic_linear_and_bent():
    n = [32, 64, 128, 256]
    log = kc.fit_precision(4, n, [8, 9, 9, 10])  # the quick scale's measured k = 4 series
    assert (round(log.c, 6), round(log.c_prime, 6), round(log.max_residual, 6)) == (0.6, 5.1, 0.3)
    assert kc.fit_problems(log, 4) == []
    linear = kc.fit_precision(4, n, [m // 8 for m in n])  # p = n/8: 4, 8, 16, 32
    assert linear.c == pytest.approx(9.2) and kc.fit_problems(linear, 4)[0].startswith(
        "k=4: p grows by c = 9.20 bits per doubling of n, more than 2"
    )
    slow = kc.fit_precision(4, n, [m // 32 + 8 for m in n])  # p = n/32 + 8: 9, 10, 12, 16
    assert slow.c == pytest.approx(2.3) and len(kc.fit_problems(slow, 4)) == 1
    bent = kc.fit_precision(4, n, [8, 8, 8, 12])  # slope 1.2, but 1.6 bits off the line at n = 128
    assert bent.c == pytest.approx(1.2) and bent.max_residual == pytest.approx(1.6)
    assert kc.fit_problems(bent, 4) == [
        "k=4: a precision sits 1.60 bits off p = c·log₂ n + c′ (more than 1): not logarithmic in n"
    ]
    assert kc.fit_precision(4, [64, 64], [9, 9]) is None
    assert kc.fit_problems(None, 16) == ["k=16: fewer than two lengths with a precision to fit"]


def test_trained_depths_threshold_nan_and_empty():
    t = kc.trained_depths(khop_summary(MEASURED), "khop")
    assert (t.layers, t.hops, t.smallest_depth, t.threshold) == (
        (2, 3, 4),
        (1, 2, 3, 4),
        (2, 4, 4, 4),
        0.01,
    )
    # strictly below 1 %: an error of exactly 0.01 does not reach; a hop count nobody measured is
    # left out
    edge = khop_summary({2: [0.01, 0.5, math.nan], 3: [0.009, 0.02, math.nan]})
    assert kc.trained_depths(edge, "khop").hops == (1, 2)
    assert kc.trained_depths(edge, "khop").smallest_depth == (3, None)
    assert kc.trained_depths(khop_summary({}), "khop") is None


# ---------------------------------------------------------------------------------------------- the
# claim
def test_tiny_claim_passes_with_every_point_in_the_detail(tiny):
    ctx, r = tiny
    assert r.status == PASS, r.detail
    depth = r.measured["depth"]
    assert [p["k"] for p in depth] == [1, 2, 3, 4]
    assert [(p["layers"], p["expected_layers"], p["paper_layers"]) for p in depth] == [
        (2, 2, 2),
        (3, 3, 3),
        (4, 4, 3),
        (4, 4, 4),
    ]
    assert [p["heads"] for p in depth] == [[2, 1], [2, 1, 1], [2, 1, 1, 1], [2, 1, 1, 1]]
    assert [p["d_model"] for p in depth] == [19, 28, 28, 28]
    assert all(p["errors"] == 0 and p["certified"] and p["scope"] == "sampled" for p in depth)
    assert all(p["families"][f] for p in depth[1:] for f in KHOP_FAMILIES)
    assert [f["hops"] for f in r.measured["fits"]] == [1, 4] and r.measured["slope_limit"] == 2.0
    assert [f["n"] for f in r.measured["fits"]] == [[16, 32, 64], [16, 32, 64]]
    assert r.measured["trained"] is None and r.measured["precision_scope"] == "sampled"
    assert r.detail.startswith(
        "n=16 S=4, zero errors, every position proven, certified on the inputs checked"
    )
    for p in depth:
        row = (
            f"k={p['k']}: L={p['layers']} heads {p['heads']} d={p['d_model']} "
            f"p={p['precision_bits']} "
        )
        assert row in r.detail
    assert "one more at k = 3;" in r.detail and "trained models: none measured" in r.detail
    # the depth points at n = 16 are shared with the precision grid: certified once
    assert len(ctx.cache) == 4 + 2 * 3 - 2
    json.dumps(r.measured)  # plain JSON


@pytest.mark.parametrize(
    "n, hops, changes, reason",
    [
        (16, 3, {}, None),
        (16, 3, {"layers": 5}, "k=3: 5 layers, not ⌈log₂ k⌉ + 2 = 4"),
        (16, 1, {"layers": 3}, "k=1: 3 layers, not ⌈log₂ k⌉ + 2 = 2"),
        (16, 2, {"errors": 3}, "k=2 n=16 S=4: 3 float64 errors"),
        (
            16,
            4,
            {"proven_at_precision_bits": False, "uncertified_positions": 2},
            "not certified at p=",
        ),
        (32, 4, {"precision_bits": None}, "k=4 n=32 S=4: no precision ≤ 60 bits is error-free"),
        (16, 2, {"heads_per_layer": (3, 1, 1)}, "k=2: 3 heads in a layer (at most 2)"),
        (16, 2, {"hops": 1}, "k=2: certified at hop count 1"),
        (
            16,
            2,
            {"families": {"uniform": 8, "no_adjacent_repeats": 8}},
            "k=2 n=16: no inputs from khop_",
        ),
        (32, 4, {"d_model": 30}, "k=4: d_model varies with n, S: [28, 30]"),
    ],
)
def test_falsified_certificates_fail(tiny, n, hops, changes, reason):
    ctx, _ = tiny
    r = run(changed(ctx, n, hops, **changes), **TINY)
    assert r.status == (PASS if reason is None else FAIL), r.detail
    assert reason is None or reason in r.detail


def test_precision_linear_in_n_fails(tiny):
    ctx, _ = tiny
    for n, bits in zip((16, 32, 64), (4, 8, 16)):  # p = n/4
        ctx = changed(ctx, n, 4, precision_bits=bits)
    r = run(ctx, **TINY)
    assert r.status == FAIL and r.detail.split("; ") == [
        "k=4: p grows by c = 6.00 bits per doubling of n, more than 2",
        "k=4: a precision sits 1.33 bits off p = c·log₂ n + c′ (more than 1): not logarithmic in n",
    ]
    assert [f["precision_bits"] for f in r.measured["fits"]][1] == [4, 8, 16]


def _padded(model):
    """The model with one more layer whose only head writes nothing: the same outputs, one layer
    deeper."""
    d = model.d_model
    idle = Layer(
        (AttentionHead(np.zeros((d, 1)), np.zeros((d, 1)), np.zeros((d, 1)), np.zeros((1, d))),)
    )
    return dataclasses.replace(model, layers=(*model.layers, idle))


@pytest.mark.parametrize(
    "build, reason",
    [
        # a correct model one layer too deep at k = 2: the depth check alone fails it
        (
            lambda n, S, k: _padded(construction.khop_construction(n, S, k)) if k == 2 else None,
            "k=2: 4 layers",
        ),
        # the 3-hop model asked for 4 hops: the same depth, wrong answers
        (
            lambda n, S, k: construction.khop_construction(n, S, 3) if k == 4 else None,
            "k=4 n=16 S=4: ",
        ),
    ],
)
def test_falsified_models_fail(monkeypatch, build, reason):
    real = construction.khop_construction
    monkeypatch.setattr(kc, "khop_construction", lambda n, S, k: build(n, S, k) or real(n, S, k))
    r = run(Context(), **(TINY | {"precision_hops": [4], "precision_cases": [(16, 16), (32, 16)]}))
    assert r.status == FAIL and reason in r.detail, r.detail
    lines = r.detail.split("; ")
    if "layers" in reason:
        assert lines == [
            "k=2: 4 layers, not ⌈log₂ k⌉ + 2 = 3"
        ]  # no errors: the padding changes nothing
    else:  # errors at both lengths, so no precision and nothing to fit; nothing else fails
        assert [re.sub(r"\d+ float64 errors.*", "errors", line) for line in lines] == [
            "k=4 n=16 S=4: errors",
            "k=4 n=16 S=4: no precision ≤ 60 bits is error-free",
            "k=4 n=32 S=4: errors",
            "k=4 n=32 S=4: no precision ≤ 60 bits is error-free",
            "k=4: fewer than two lengths with a precision to fit",
        ]


def test_trained_depths_come_from_the_khop_experiment(tiny):
    ctx, _ = tiny
    ctx = Context(results_db="db.sqlite", cache=dict(ctx.cache))
    ctx.cache[("experiment", "khop", "quick", "db.sqlite")] = khop_summary(
        MEASURED | {3: [0.0, 0.5, 0.5, 0.5]}
    )
    r = run(ctx, **(TINY | {"experiment": "khop"}))
    assert r.status == PASS and r.measured["trained"]["smallest_depth"] == [2, 4, 4, 4]
    assert (
        "smallest trained depth with error < 1% (experiment khop, depths [2, 3, 4]; reported, not "
        in r.detail
    )
    assert r.detail.endswith("k=1: L=2, k=2: L=4, k=3: L=4, k=4: L=4")
    # a hop count no depth reaches: reported as such, still PASS (the trained models are not
    # asserted)
    ctx.cache[("experiment", "khop", "quick", "db.sqlite")] = khop_summary(
        {2: [0.0, 0.5], 3: [0.0, 0.2]}
    )
    r = run(ctx, **(TINY | {"experiment": "khop"}))
    assert r.status == PASS and r.detail.endswith("k=1: L=2, k=2: not reached")


# ----------------------------------------------------------------------------------------------
# figures
def _legend(fig: plt.Figure) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_figures_draw_every_series(tiny, tmp_path):
    ctx, r = tiny
    trained = kc.trained_depths(khop_summary({2: [0.0, 0.5, 0.6], 3: [0.0, 0.005, 0.3]}), "khop")
    result = dataclasses.replace(r, series=dataclasses.replace(r.series, trained=trained))
    fig = plt.figure()
    caption = kf.draw_depth(fig, result)
    assert _legend(fig) == [
        "k = 2^(L−2), L = log₂ k + 2",
        kf.THEOREM_LABEL,
        kf.CONSTRUCTION_LABEL,
        "trained (khop): smallest L with error < 1%",
        "trained: error < 1% not reached at any L ≤ 3",
    ]
    reached, missed = fig.axes[0].get_lines()[-2:]
    assert list(reached.get_xdata()) == [1, 2] and list(reached.get_ydata()) == [2, 3]
    assert list(missed.get_xdata()) == [3] and list(missed.get_ydata()) == [3.5]
    assert (
        "certified with zero errors at n = 16, S = 4" in caption and "k > 3 not trained" in caption
    )
    assert "FAILED" not in caption
    plt.close(fig)
    fig = plt.figure()
    caption = kf.draw_precision(fig, r)
    assert _legend(fig)[0].startswith("k = 1: p = ") and _legend(fig)[1].startswith("k = 4: p = ")
    assert "(scope: sampled)" in caption and "passes iff c ≤ 2" in caption
    plt.close(fig)
    failed = dataclasses.replace(r, status=FAIL)
    saved = save_figure(
        lambda f: kf.draw_precision(f, failed),
        tmp_path,
        "p",
        {},
        lambda path, data: path.write_bytes(data),
    )
    assert saved["caption"].endswith(kf.FAILED) and (tmp_path / "p.png").stat().st_size > 1000
    assert (tmp_path / "p.svg").read_text().startswith("<?xml")


def test_figure_marks_a_failing_point(tiny):
    ctx, _ = tiny
    r = run(changed(ctx, 16, 3, layers=5), **TINY)
    fig = plt.figure()
    kf.draw_depth(fig, r)
    assert "construction: wrong depth, errors or not proven" in _legend(fig)
    assert kf.CONSTRUCTION_LABEL in _legend(fig)  # the other points
    crosses = fig.axes[0].get_lines()[-1]
    assert list(crosses.get_xdata()) == [3] and list(crosses.get_ydata()) == [5]
    plt.close(fig)


# ----------------------------------------------------------------------------------------------
# quick scale
@pytest.mark.slow
def test_quick_claim_passes_through_reproduce(tmp_path, monkeypatch):
    """The claim at its quick parameters (about 20 s on 2 cores); the trained summary faked, none
    trains."""
    monkeypatch.setattr(kc, "experiment_summary", lambda ctx, name: khop_summary(MEASURED))
    summary = run_reproduce("quick", only=kc.CLAIM, out_dir=tmp_path, progress=lambda line: None)
    (row,) = summary.to_json()["claims"]
    assert (row["id"], row["status"]) == (kc.CLAIM, PASS), row["detail"]
    depth = row["measured"]["depth"]
    assert [p["layers"] for p in depth] == [kc.doubling_depth(k) for k in range(1, 17)]
    assert all(p["errors"] == 0 and p["certified"] and (p["n"], p["S"]) == (64, 8) for p in depth)
    assert [f["hops"] for f in row["measured"]["fits"]] == [1, 4, 16]
    assert all(f["c"] <= 2 and f["max_residual"] <= 1 for f in row["measured"]["fits"])
    assert row["measured"]["trained"]["smallest_depth"] == [2, 4, 4, 4]
    assert {f["id"] for f in summary.to_json()["figures"]} >= {
        "khop_construction_depth",
        "khop_construction_precision",
    }
    for stem in ("khop_construction_depth", "khop_construction_precision"):
        assert (tmp_path / f"{stem}.png").stat().st_size > 1000 and (
            tmp_path / f"{stem}.svg"
        ).is_file()
