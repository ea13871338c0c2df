"""The k-hop experiment keeps its trained models (issue 16, point 5): the certified runner writes
the model to the `out` that runners.keeping_models adds and keeps it, and the experiment's sweep
leaves models/<run id>. safetensors beside the database, the run ids and configs unchanged."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from headcount.core.model.files import load_model
from headcount.learn import experiments
from headcount.learn.certified_runs import run_khop_certified
from headcount.learn.experiments import (
    EXPERIMENTS,
    ensure_experiment,
    experiment_rows,
    experiment_spec,
    kept_model,
)
from headcount.learn.store import ResultsStore
from headcount.learn.sweep import KEEPING_RUNNERS, KHOP_RUNNER, load_spec

TINY = {"n": 6, "alphabet": 3, "hops": 2, "heads": 1, "dim": 8, "steps": 40, "batch": 16}


def test_the_certified_runner_keeps_the_file_it_is_given(tmp_path):
    out = tmp_path / "kept.safetensors"
    config = {"task": "khop", **TINY, "layers": 2}
    kept = run_khop_certified({**config, "out": str(out)})
    assert kept["model_path"] == str(out) and out.is_file()
    model = load_model(out)
    assert model.heads_per_layer == [1, 1] and model.n_ctx == TINY["n"] + 1
    plain = run_khop_certified(config)  # the same run without `out`: deterministic, nothing kept
    assert plain["model_path"] is None
    assert plain["certificates_by_hop"] == kept["certificates_by_hop"]
    assert (
        plain["accuracy_by_hop"] == kept["accuracy_by_hop"]
        and plain["final_loss"] == kept["final_loss"]
    )
    none = run_khop_certified({**config, "out": None})  # None is "no file", as the trainer reads it
    assert none["model_path"] is None and none["accuracy_by_hop"] == kept["accuracy_by_hop"]


def test_the_khop_experiment_keeps_its_models_beside_the_database(tmp_path, monkeypatch):
    assert EXPERIMENTS["khop"].keeps_models and not EXPERIMENTS["khop-gpt2"].keeps_models
    assert KEEPING_RUNNERS == ("headcount.learn.train:run_config", KHOP_RUNNER)
    quick = {"fixed": TINY, "grid": {"layers": [1, 2]}, "seeds": [0]}
    patched = dict(EXPERIMENTS)
    patched["khop"] = replace(EXPERIMENTS["khop"], scales={"quick": quick, "full": quick})
    monkeypatch.setattr(experiments, "EXPERIMENTS", patched)
    db = tmp_path / "report" / "results.sqlite"
    summary = ensure_experiment("khop", "quick", db, workers=1)
    assert (summary.layers, summary.hops) == ([1, 2], [1, 2])
    ids = {run.run_id: run.config for run in load_spec(experiment_spec("khop", "quick")).runs()}
    rows = experiment_rows("khop", "quick", db)
    assert {r["run_id"]: r["config"] for r in rows} == ids  # the run ids and configs: no `out`
    with ResultsStore(db) as store:
        assert {r["runner"] for r in store.rows(experiment="khop")} == {KHOP_RUNNER}
    for row in rows:
        path = kept_model(db, row["run_id"])
        assert path.parent == tmp_path / "report" / "models" and path.is_file()
        assert row["metrics"]["model_path"] == str(path)
        assert list(row["metrics"]["certificates_by_hop"]) == ["1", "2"]
        model = load_model(path)
        assert (
            model.heads_per_layer == [1] * row["config"]["layers"] and np.isfinite(model.W_E).all()
        )
