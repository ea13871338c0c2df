"""The k-hop experiments' certified runs: the runner (train, export, certify every hop count), the
certificates checked against an independent evaluation, the GPT-2-style experiment end to end (sweep
→ database → summary with precision → figure), and the report's comparison figure."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from headcount.core.certify.evaluate import certified_predict, emulate
from headcount.core.model.files import load_model
from headcount.core.numbers.precision import FLOAT64, IEEE_DTYPES, Precision, fixed
from headcount.induction import task
from headcount.induction.layouts import bind_layout, lay_out
from headcount.learn import experiments
from headcount.learn.certified_runs import (
    KHOP_CERTIFY_SAMPLES,
    KHOP_CERTIFY_SEED,
    khop_certificates,
    run_khop_certified,
)
from headcount.learn.experiments import EXPERIMENTS, GPT2_BLOCK, experiment_spec
from headcount.learn.store import ResultsStore
from headcount.learn.sweep import DEFAULT_RUNNER, KHOP_RUNNER, load_spec, runner_names
from headcount.learn.train import run_config
from headcount.report.learning.claims import run_experiment_with_figure

TINY = {"n": 6, "alphabet": 3, "hops": 2, "heads": 1, "dim": 8, "steps": 60, "batch": 16}


def test_specs_name_the_certifying_runner():
    assert KHOP_RUNNER == "headcount.learn.certified_runs:run_khop_certified"
    assert KHOP_RUNNER in runner_names()
    for name in ("khop", "khop-gpt2"):
        for scale in ("quick", "full"):
            spec = experiment_spec(name, scale)
            assert spec["sweep"]["runner"] == KHOP_RUNNER and load_spec(spec).runner == KHOP_RUNNER
    assert (
        "runner" not in experiment_spec("xor-phase")["sweep"]
    )  # the others: the default runner, unnamed
    assert EXPERIMENTS["xor-phase"].runner == DEFAULT_RUNNER
    quick = experiment_spec("khop-gpt2")
    assert (
        quick["grid"] == {"layers": [2, 3, 4, 5]} and quick["fixed"] | GPT2_BLOCK == quick["fixed"]
    )
    # apart from the GPT-2 block and the steps, the same task and sizes as the attention-only
    # experiment
    khop = experiment_spec("khop")["fixed"]
    assert {k: v for k, v in quick["fixed"].items() if k not in (*GPT2_BLOCK, "steps")} == khop


# small enough to be learnt in 200 steps (~1 s): some hop counts error-free, so certificates are
# computed
LEARNT = {
    "n": 4,
    "alphabet": 3,
    "heads": 1,
    "dim": 16,
    "steps": 200,
    "batch": 32,
    "lr": 1e-2,
    "layers": 2,
}


@pytest.mark.parametrize("block, hops", [({}, 2), (GPT2_BLOCK, 1)])
def test_certificates_agree_with_an_independent_evaluation(block, hops, tmp_path):
    path = tmp_path / "m.safetensors"
    run_config({"task": "khop", **LEARNT, "hops": hops, **block, "out": str(path)})
    model = load_model(path)
    n, S = LEARNT["n"], LEARNT["alphabet"]
    certs = khop_certificates(model, n, S, hops, samples=16)
    assert list(certs) == [str(k) for k in range(1, hops + 1)]
    assert any(c["errors"] == 0 for c in certs.values()), (
        certs
    )  # the certificate itself is exercised
    sigma = task.no_adjacent_repeats(np.random.default_rng([KHOP_CERTIFY_SEED, n, S]), 16, n, S)
    for k, c in certs.items():
        k = int(k)
        target = task.induction_targets(sigma, k)
        bound = bind_layout(model, "hop-prefix", n, S, k)
        tokens = lay_out(sigma, "hop-prefix", S, k)
        assert tokens[0, 0] == S + k - 1 and np.array_equal(tokens[:, 1:], sigma)
        errors = int((emulate(bound, tokens, FLOAT64)[:, 1:] != target).sum())
        assert (c["errors"], c["positions"]) == (errors, sigma.size)
        if errors:  # no precision is certified where float64 errs: the search is skipped
            assert c == {
                "errors": errors,
                "positions": sigma.size,
                "precision_bits": None,
                "certified": False,
                "uncertified_positions": None,
                "dtypes_exact": None,
            }
            continue
        exact = [
            d
            for d in IEEE_DTYPES
            if np.array_equal(emulate(bound, tokens, Precision(d))[:, 1:], target)
        ]
        assert c["dtypes_exact"] == exact
        p = c["precision_bits"]
        assert c["certified"] == (p is not None and c["uncertified_positions"] == 0)
        if (
            p is not None
        ):  # no position is proven wrong at p; certified: every σ position proven right
            got, proven = certified_predict(bound, tokens, fixed(p))
            assert not (proven[:, 1:] & (got[:, 1:] != target)).any()
            if c["certified"]:
                assert proven[:, 1:].all() and np.array_equal(got[:, 1:], target)


def test_runner_adds_certificates_and_keeps_no_file_without_out(monkeypatch):
    made = []
    real = run_config

    def spy(config):
        made.append(config["out"])
        return real(config)

    monkeypatch.setattr("headcount.learn.train.run_config", spy)
    out = run_khop_certified({"task": "khop", **TINY, "layers": 1, **GPT2_BLOCK})
    assert out["model_path"] is None and not Path(made[0]).exists()  # the temporary model is gone
    assert list(out["certificates_by_hop"]) == ["1", "2"] and out["certify_seconds"] >= 0
    assert out["layernorm"] and out["accuracy_by_hop"].keys() == out["certificates_by_hop"].keys()
    with pytest.raises(ValueError, match="runs task 'khop', not 'induction'"):
        run_khop_certified({"task": "induction", **TINY})


@pytest.fixture
def tiny_gpt2(monkeypatch):
    """khop-gpt2 at a size that runs in seconds (same code path: sweep, runner, database,
    summary)."""
    quick = {"fixed": {**TINY, **GPT2_BLOCK}, "grid": {"layers": [1, 2]}, "seeds": [0]}
    patched = dict(EXPERIMENTS)
    patched["khop-gpt2"] = replace(EXPERIMENTS["khop-gpt2"], scales={"quick": quick, "full": quick})
    monkeypatch.setattr(experiments, "EXPERIMENTS", patched)


def test_khop_gpt2_tiny_end_to_end(tiny_gpt2, tmp_path):
    db = tmp_path / "r.sqlite"
    report = run_experiment_with_figure("khop-gpt2", "quick", db, workers=1, figure_dir=tmp_path)
    assert report.result.sweep.runs_total == 2 and report.result.sweep.runs_failed == 0
    s = report.result.summary
    assert (s.layers, s.hops) == ([1, 2], [1, 2])
    with ResultsStore(db) as store:
        rows = store.rows(experiment="khop-gpt2", status="done")
    assert {r["runner"] for r in rows} == {KHOP_RUNNER}
    for r in rows:  # the summary's precision is the rows' certificates, cell by cell
        i = s.layers.index(r["config"]["layers"])
        for j, k in enumerate(s.hops):
            c = r["metrics"]["certificates_by_hop"][str(k)]
            assert s.precision_bits[i][j] == (c["precision_bits"] if c["certified"] else None)
            assert c["positions"] == KHOP_CERTIFY_SAMPLES * TINY["n"]
    assert s.certified_cells == sum(p is not None for row in s.precision_bits for p in row)
    assert (tmp_path / "khop-gpt2-quick.png").stat().st_size > 1000
    assert (
        "GPT-2-style" in report.figure.caption
        and "p = the smallest fixed:p" in report.figure.caption
    )
