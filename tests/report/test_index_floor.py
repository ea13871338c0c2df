"""induction.index.error_floor (report/induction/index_floor.py): the claim PASSes on real models at
tiny sizes, FAILs when a model's measured error (or Bob's) is made to sit below the floor, or when
no random model has a message shorter than k; trained one-layer models are read from a shrunk
induction-depth experiment whose runs are stored as done with a stand-in model kept, so nothing
trains here; the figure is drawn.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.common.jsonable import jsonable
from headcount.core.model import MLP, AttentionHead, Layer, LinearDecoder, Transformer
from headcount.core.model.files import save_model
from headcount.core.model.table import table_from_weights
from headcount.induction.lower_bound.protocol import check_protocol
from headcount.learn import experiments
from headcount.learn.experiments import EXPERIMENTS, experiment_spec, kept_model
from headcount.learn.store import ResultsStore
from headcount.learn.sweep import load_spec
from headcount.report.claims import FAIL, PASS, Context
from headcount.report.figures import FIGURES, save_figure
from headcount.report.induction import index_floor as fl
from headcount.report.induction import index_floor_figure
from headcount.report.induction import lower_bound as induction_lower_bound
from headcount.report.reproduce import (
    CLAIM_MODULES,
    RESULTS_DB,
    load_claims,
    run_claim,
    run_reproduce,
)

# k = 6: seeds 3 and 4 send 5 bits (< 6); k = 8: seed 4 sends 5 bits, seed 3 sends 8
TINY: dict[str, Any] = {
    "ks": [6, 8],
    "shape": (1, 1, 1),
    "seeds": [3, 4],
    "construction_ks": [3, 4],
    "trained_ks": [2, 4],
    "experiment": None,
}
SHRUNK = {
    "fixed": {"heads": 1, "dim": 4, "alphabet": 3, "steps": 5},
    "grid": {"n": [9], "layers": [1, 2]},
}


def run(ctx: Context, **params: Any):
    """The registered claim with explicit parameters, exceptions turned into FAIL as in
    reproduce."""
    registered = load_claims()[fl.CLAIM]
    return run_claim(
        SimpleNamespace(function=registered.function, params_for=lambda scale: params), ctx
    )


@pytest.fixture(scope="module")
def tiny() -> tuple[Context, Any]:
    ctx = Context()
    return ctx, run(ctx, **TINY)


def forged(ctx: Context, k: int, seed: int, **changes: Any) -> Context:
    """A copy of ctx whose cached check of the random model (seed, k) has `changes` applied."""
    out = Context(cache=dict(ctx.cache))
    key = (fl.CACHE_KIND, "random", k, seed, 1, 1, 1)
    out.cache[key] = dataclasses.replace(out.cache[key], **changes)
    return out


def test_registered_right_after_the_index_claims():
    assert load_claims()[fl.CLAIM].module == "headcount.report.induction.index_floor"
    modules = list(CLAIM_MODULES)
    assert modules.index(fl) == modules.index(induction_lower_bound) + 1


def test_claim_passes_on_real_models(tiny):
    _, r = tiny
    assert r.status == PASS, r.detail
    m = r.measured
    kinds = [p["kind"] for p in m["points"]]
    assert (
        kinds.count("random") == 4 and kinds.count("construction") == 2 and "trained" not in kinds
    )
    assert all(
        p["floor_holds"] and p["protocol_floor_holds"] and p["exhaustive"] for p in m["points"]
    )
    short = [p for p in m["points"] if p["kind"] == "random" and p["message_bits"] < p["k"]]
    assert len(short) == 3 and m["biting"] == 3
    assert all(0 < p["error_floor"] < p["index_error"] for p in short)
    built = [p for p in m["points"] if p["kind"] == "construction"]
    assert all(
        p["index_error"] == 0 and p["error_floor"] == 0 and p["message_bits"] >= p["k"]
        for p in built
    )
    assert [p["pairs_checked"] for p in built] == [3 * 2**3, 4 * 2**4]
    assert json.loads(json.dumps(jsonable(m))) == jsonable(m)
    assert (
        r.detail.startswith("all 6 models respect the floor")
        and "3 random models have b < k" in r.detail
    )
    assert "k=6: b = 5, 5" in r.detail and "trained one-layer models: none checked" in r.detail


def test_an_error_below_the_floor_fails(tiny):
    ctx, r = tiny
    check = ctx.cache[(fl.CACHE_KIND, "random", 6, 3, 1, 1, 1)]
    assert check.floor.error_floor > 0
    every = check.pairs_checked
    bad = run(forged(ctx, 6, 3, model_correct=every, agreements=every, disagreements=0), **TINY)
    assert bad.status == FAIL
    assert "random seed 3 k=6 (b=5): INDEX error 0 < floor 0.0246" in bad.detail
    # the same error with the disagreements that explain it respects the floor
    right = (
        check.protocol_correct
    )  # a model right everywhere disagrees with Bob wherever Bob is wrong
    fine = run(
        forged(ctx, 6, 3, model_correct=every, agreements=right, disagreements=every - right),
        **TINY,
    )
    assert fine.status == PASS, fine.detail


def test_bob_below_the_floor_fails(tiny):
    ctx, _ = tiny
    bad = run(forged(ctx, 8, 4, protocol_correct=8 * 2**8), **TINY)
    assert bad.status == FAIL and "random seed 4 k=8 (b=5): Bob's error 0 < floor" in bad.detail


def test_no_short_message_fails():
    r = run(
        Context(), **{**TINY, "ks": [4], "seeds": [0, 1]}
    )  # every random model sends ≥ 5 bits at k = 4
    assert r.status == FAIL and "no random model with b < k" in r.detail


def test_positive_floor_size_rule():
    check = SimpleNamespace(k=8, message_bits=1000)
    point = fl.FloorPoint("trained", "t", 1, 32, 10, check)
    assert point.size == 320 and fl.positive_floor_size(point) == pytest.approx(8 * 320 / 1000)


# ------------------------------------------------------------------------------------------------
# Trained models from a shrunk experiment


def stand_in(seed: int = 0) -> Transformer:
    """A one-layer attention-only model over 3 tokens with context 9 (d_model 4): the kept 'trained'
    model."""
    rng = np.random.default_rng(seed)
    w = lambda *shape: rng.normal(size=shape)
    head = AttentionHead(w(4, 4), w(4, 4), w(4, 4), w(4, 4))
    return Transformer(w(3, 4), w(9, 4), (Layer((head,)),), LinearDecoder(w(4, 4), np.zeros(4)))


@pytest.fixture
def shrunk(monkeypatch, tmp_path):
    """The induction-depth experiment at n = 9, S = 3, its runs stored as done, the one-layer run's
    model kept (a stand-in); the results database's path."""
    depth = EXPERIMENTS["induction-depth"]
    patched = dict(EXPERIMENTS)
    patched["induction-depth"] = replace(
        depth, scales={**depth.scales, "quick": {**SHRUNK, "seeds": [0]}}
    )
    monkeypatch.setattr(experiments, "EXPERIMENTS", patched)
    db = tmp_path / RESULTS_DB
    with ResultsStore(db) as store:
        for spec_run in load_spec(experiment_spec("induction-depth", "quick")).runs():
            metrics = {
                "accuracy": 0.5,
                "accuracy_bottom": 1.0,
                "accuracy_index": 0.5,
                "model_path": None,
            }
            store.record(run_id=spec_run.run_id, config=spec_run.config, status="done",
                         experiment="induction-depth", metrics=metrics)  # fmt: skip
            if spec_run.config["layers"] == 1:
                save_model(stand_in(), kept_model(db, spec_run.run_id))
    return db


def trained_ids(ctx: Context) -> list[str]:
    """The run ids of the one-layer runs the claim read (cached in ctx)."""
    return [t.run_id for t in fl.trained_runs(ctx, "induction-depth")]


def test_trained_models_are_checked_where_they_fit(shrunk):
    """The kept model has a Gaussian W_O: the protocol refuses it as given (no table has its fixed:p
    rounding points), so the point checked is its table form (table_from_weights), a table model as
    given."""
    ctx = Context(results_db=str(shrunk), progress=lambda line: None)
    r = run(ctx, **{**TINY, "experiment": "induction-depth", "trained_ks": [2, 4, 5]})
    assert r.status == PASS, r.detail
    trained = [p for p in r.measured["points"] if p["kind"] == "trained"]
    assert [p["k"] for p in trained] == [2, 4] and all(p["floor_holds"] for p in trained)
    with pytest.raises(InputError, match="not on the 2\\^-"):
        check_protocol(stand_in(), 4, trained[-1]["precision_bits"])
    checks = [
        ctx.cache[(fl.CACHE_KIND, "trained-table", run_id, k)][1]
        for run_id in trained_ids(ctx)
        for k in (2, 4)
    ]
    assert [c.model_form for c in checks] == ["table", "table"]
    # the point is the protocol on the table form, number for number
    table = table_from_weights(stand_in())
    again = check_protocol(table, 4, trained[-1]["precision_bits"])
    assert again.model_form == "table"
    assert trained[-1]["index_error"] == again.floor.index_error
    assert trained[-1]["message_bits"] == again.message_bits
    (skipped,) = r.measured["skipped"]
    assert "k=5 needs 2k+1 = 11 positions" in skipped and "(n=9)" in skipped
    (summary,) = r.measured["trained"]
    assert summary["k"] == 4 and summary["size"] == 4 * summary["precision_bits"]
    assert summary["vacuous"] == (summary["message_bits"] >= 4)
    assert summary["positive_floor_below_size"] == pytest.approx(
        4 * summary["size"] / summary["message_bits"]
    )
    # the precision is where the quantised table gives its float64 answers on every INDEX input
    assert summary["precision_bits"] == fl.float_precision(table, 4)
    assert "not checked: run" in r.detail and "floor positive only below h·m·p ≈" in r.detail
    assert "table forms (table_from_weights), checked as table models" in r.detail


def test_a_trained_model_the_reduction_is_not_about_is_reported(shrunk):
    """A kept one-layer model with an MLP: the INDEX reduction refuses it, the claim says why and
    passes."""
    ctx = Context(results_db=str(shrunk), progress=lambda line: None)
    (kept,) = fl.trained_runs(
        ctx, "induction-depth"
    )  # cached: replaced below by the same run with an MLP
    w = np.random.default_rng(1).normal
    mlp = MLP(w(size=(4, 8)), np.zeros(8), w(size=(8, 4)), np.zeros(4))
    with_mlp = replace(kept.model, layers=(replace(kept.model.layers[0], mlp=mlp),))
    key = (fl.CACHE_KIND, "trained-runs", "induction-depth", "quick", str(shrunk))
    ctx.cache[key] = [replace(kept, model=with_mlp)]
    r = run(ctx, **{**TINY, "experiment": "induction-depth", "trained_ks": [2]})
    assert r.status == PASS, r.detail
    (skipped,) = r.measured["skipped"]
    assert "k=2:" in skipped and "MLP" in skipped and r.measured["trained"] == []


# ------------------------------------------------------------------------------------------------
# Figure


def test_figure_draws_every_kind_and_says_what_each_mark_is(shrunk, tmp_path):
    ctx = Context(results_db=str(shrunk), progress=lambda line: None)
    r = run(ctx, **{**TINY, "experiment": "induction-depth"})
    assert FIGURES["index_error_floor"].claim == fl.CLAIM
    fig = plt.figure()
    caption = index_floor_figure.draw_floor(fig, r)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels[0] == "floor δ*, shortest b among random\nmodels (h=1, m=1, p=1)"
    assert "random models, b < k (floor > 0)" in labels
    assert "one-layer construction" in labels
    assert "trained one-layer models (tables)" in labels
    assert "Purple circles" in caption and "Blue triangles" in caption and "Red squares" in caption
    assert "Red squares: the table forms (table_from_weights)" in caption
    assert "FAILED" not in caption
    plt.close(fig)
    failed = dataclasses.replace(run(Context(), **TINY), status=FAIL)
    saved = save_figure(
        lambda f: index_floor_figure.draw_floor(f, failed),
        tmp_path,
        "floor",
        {},
        lambda path, data: path.write_bytes(data),
    )
    assert (
        "No trained one-layer model was checked" in saved["caption"]
        and "FAILED" in saved["caption"]
    )
    assert (tmp_path / "floor.png").stat().st_size > 10_000


@pytest.mark.slow
def test_quick_claim_through_reproduce(shrunk):
    summary = run_reproduce(
        "quick", only=fl.CLAIM, out_dir=shrunk.parent, progress=lambda line: None
    )
    (row,) = summary.claims
    assert row.status == PASS, row.detail
    assert (shrunk.parent / "index_error_floor.png").is_file()
