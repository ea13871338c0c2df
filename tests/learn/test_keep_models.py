"""Sweeps that keep their models (learn/sweep/runners.keeping_models, run_sweep(model_dir=…)) and
the induction-depth experiment, which keeps them beside its database: one file per run id, the rows
unchanged."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from headcount.core.model.files import load_model
from headcount.learn import experiments
from headcount.learn.experiments import (
    EXPERIMENTS,
    ensure_experiment,
    experiment_rows,
    kept_model,
    model_folder,
)
from headcount.learn.sweep import (
    DEFAULT_RUNNER,
    KHOP_RUNNER,
    Runner,
    SweepError,
    keeping_models,
    kept_model_path,
    run_id_for,
    run_sweep,
)

TINY = {"task": "induction", "layers": 1, "heads": 1, "dim": 4, "n": 4, "alphabet": 2, "steps": 3}


def spec(seeds=(0, 1)) -> dict:
    fixed = {k: v for k, v in TINY.items() if k != "task"}
    return {"sweep": {"name": "keep", "task": "induction", "seeds": list(seeds)}, "fixed": fixed}


def test_the_runner_writes_each_model_under_its_run_id(tmp_path):
    seen = []
    runner = keeping_models(
        Runner(DEFAULT_RUNNER, lambda config: seen.append(config) or {}), tmp_path / "m"
    )
    config = {**TINY, "seed": 3}
    runner.fn(dict(config))
    assert seen == [{**config, "out": str(tmp_path / "m" / f"{run_id_for(config)}.safetensors")}]
    assert kept_model_path(tmp_path, "abc") == tmp_path / "abc.safetensors"
    khop = keeping_models(Runner(KHOP_RUNNER, lambda config: seen.append(config) or {}), tmp_path)
    assert khop.name == KHOP_RUNNER  # the k-hop certified runner keeps its models too
    khop.fn({"task": "khop", "seed": 0})
    assert seen[-1]["out"] == str(
        tmp_path / f"{run_id_for({'task': 'khop', 'seed': 0})}.safetensors"
    )
    with pytest.raises(SweepError, match="can keep their models, not 'tests.other:runner'"):
        keeping_models(Runner("tests.other:runner", lambda config: {}), tmp_path)


def test_induction_depth_keeps_its_models_beside_the_database(tmp_path, monkeypatch):
    """The experiment's sweep (one worker process) writes models/<run id>.safetensors beside the
    database; the rows are a plain run's (config without `out`, the same metrics as training in this
    process)."""
    from headcount.learn.train import run_config

    tiny = {
        "fixed": {"heads": 1, "dim": 4, "alphabet": 2, "steps": 3},
        "grid": {"n": [4], "layers": [1, 2]},
    }
    patched = dict(EXPERIMENTS)
    depth = EXPERIMENTS["induction-depth"]
    patched["induction-depth"] = replace(
        depth, scales={**depth.scales, "quick": {**tiny, "seeds": [0]}}
    )
    monkeypatch.setattr(experiments, "EXPERIMENTS", patched)
    db = tmp_path / "report" / "results.sqlite"
    ensure_experiment("induction-depth", "quick", db, workers=1)
    assert model_folder(db) == tmp_path / "report" / "models"
    rows = experiment_rows("induction-depth", "quick", db)
    assert len(rows) == 2
    for row in rows:
        path = kept_model(db, row["run_id"])
        assert row["metrics"]["model_path"] == str(path) and "out" not in row["config"]
        plain = run_config(dict(row["config"])).to_json()
        assert plain["model_path"] is None and plain["accuracy"] == row["metrics"]["accuracy"]
        model = load_model(path)
        assert (
            model.heads_per_layer == [1] * row["config"]["layers"] and np.isfinite(model.W_E).all()
        )
    assert not EXPERIMENTS["xor-phase"].keeps_models and EXPERIMENTS["induction-depth"].keeps_models
    with pytest.raises(SweepError, match="model folder"):  # refused before any run trains
        run_sweep(spec(), tmp_path / "other.sqlite", workers=1, model_dir=db)
