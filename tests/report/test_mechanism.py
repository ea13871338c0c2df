"""The claim induction.heads.mechanism (report/induction/mechanism.py) through reproduce: the best
two-layer run of the report's induction-depth experiment is read from its database, its kept model
loaded (or retrained when the file is missing), the construction's roles checked, and the
side-by-side figure written and inlined.

The experiment is shrunk (n = 8, S = 3) and its runs stored as done beforehand, so no sweep trains
here; the best two-layer run's kept model is a stand-in (the construction itself, or a 2-layer model
trained for a few steps in this process when the file is missing)."""

from __future__ import annotations

import json
import re
from dataclasses import fields, replace

import pytest

from headcount.core.model.files import save_model
from headcount.induction.construction import build_construction
from headcount.induction.heads import HeadScore
from headcount.learn import experiments
from headcount.learn.experiments import EXPERIMENTS, experiment_spec, kept_model
from headcount.learn.store import ResultsStore
from headcount.learn.sweep import load_spec
from headcount.report.induction.mechanism import best_two_layer_row, missing_circuit, role_problems
from headcount.report.reproduce import RESULTS_DB, load_claims, run_reproduce

CLAIM = "induction.heads.mechanism"
FIGURE = "induction_heads_mechanism"
TINY = {
    "fixed": {"heads": 1, "dim": 8, "alphabet": 3, "steps": 5},
    "grid": {"n": [8], "layers": [1, 2]},
}
ACCURACY = {1: 0.61, 2: 0.995}


@pytest.fixture
def tiny(monkeypatch):
    depth = EXPERIMENTS["induction-depth"]
    patched = dict(EXPERIMENTS)
    patched["induction-depth"] = replace(
        depth, scales={**depth.scales, "quick": {**TINY, "seeds": [0]}}
    )
    monkeypatch.setattr(experiments, "EXPERIMENTS", patched)


def stored_runs(db) -> str:
    """Store the shrunk experiment's runs as done (the accuracies of ACCURACY); the two-layer run's
    id."""
    with ResultsStore(db) as store:
        for run in load_spec(experiment_spec("induction-depth", "quick")).runs():
            acc = ACCURACY[run.config["layers"]]
            metrics = {
                "accuracy": acc,
                "accuracy_bottom": 1.0,
                "accuracy_index": acc,
                "model_path": None,
            }
            store.record(
                run_id=run.run_id,
                config=run.config,
                status="done",
                experiment="induction-depth",
                metrics=metrics,
            )
            if run.config["layers"] == 2:
                two = run.run_id
    return two


def quiet(line: str) -> None:
    pass


def test_best_two_layer_row_is_the_most_accurate_then_the_shortest():
    rows = [
        {"run_id": "a", "config": {"layers": 1, "n": 16}, "metrics": {"accuracy": 1.0}},
        {"run_id": "b", "config": {"layers": 2, "n": 32}, "metrics": {"accuracy": 0.999}},
        {"run_id": "c", "config": {"layers": 2, "n": 32}, "metrics": {"accuracy": 0.9995}},
        {"run_id": "d", "config": {"layers": 2, "n": 16}, "metrics": {"accuracy": 0.9995}},
    ]
    assert best_two_layer_row(rows)["run_id"] == "d"
    assert best_two_layer_row(rows[:1]) is None


def score(layer: int, head: int, **values: float) -> HeadScore:
    """A HeadScore with the given scores, every other score 0 (find^1, find^2 included)."""
    names = [f.name for f in fields(HeadScore) if f.name not in ("layer", "head", "find")]
    return HeadScore(
        layer=layer, head=head, find={1: 0.0, 2: 0.0}, **{k: values.get(k, 0.0) for k in names}
    )


def test_roles_against_the_built_ones_and_the_circuit():
    built = (
        score(0, 0, previous_token=1.0),
        score(0, 1, duplicate_token=0.7),
        score(1, 0, induction=0.99),
    )
    assert role_problems(built) == [] and missing_circuit(built) == []
    swapped = (
        score(0, 0, previous_token=1.0),
        score(0, 1, induction=0.7),
        score(1, 0, duplicate_token=0.9),
    )
    assert role_problems(swapped) == [
        "layer 0: roles ['induction', 'previous_token'], built ['duplicate_token', "
        "'previous_token']",
        "layer 1: roles ['duplicate_token'], built ['induction']",
    ]
    assert missing_circuit(swapped) == ["induction in layer 1"]
    trained = (score(0, 0, previous_token=0.99), score(1, 0, induction=0.95))
    assert missing_circuit(trained) == [] and len(role_problems(trained)) == 1


def test_reproduce_draws_the_kept_model_beside_the_construction(tiny, tmp_path):
    assert load_claims()[CLAIM].module == "headcount.report.induction.mechanism"
    two = stored_runs(tmp_path / RESULTS_DB)
    save_model(build_construction(2, 8, 3), kept_model(tmp_path / RESULTS_DB, two))  # the stand-in
    summary = run_reproduce("quick", only=CLAIM, out_dir=tmp_path, progress=quiet)
    (row,) = summary.claims
    assert (row.id, row.status) == (CLAIM, "PASS"), row.detail
    m = row.measured
    assert (m["n"], m["alphabet"], m["samples"], len(m["input_drawn"].split())) == (8, 3, 256, 8)
    assert m["construction"]["roles"] == {
        "0": ["duplicate_token", "previous_token"],
        "1": ["induction"],
    }
    assert m["trained"]["run_id"] == two and m["trained"]["accuracy"] == 0.995
    assert m["trained"]["retrained"] is False and m["trained"]["same_circuit"] is True
    assert m["trained"]["heads"] == m["construction"]["heads"]  # the stand-in is the construction
    assert "the built roles, recovered" in row.detail and "the same circuit" in row.detail
    assert (tmp_path / f"{FIGURE}.png").stat().st_size > 10_000
    assert (tmp_path / f"{FIGURE}.svg").read_text().lstrip().startswith("<?xml")
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    (fig,) = on_disk["figures"]
    assert (fig["id"], fig["claim"]) == (FIGURE, CLAIM) and "found the same circuit" in fig[
        "caption"
    ]
    assert re.search(f'<figure id="{FIGURE}"[^>]*><img', (tmp_path / "report.html").read_text())


def test_a_run_without_its_model_file_is_retrained_and_kept(tiny, tmp_path):
    two = stored_runs(tmp_path / RESULTS_DB)
    summary = run_reproduce("quick", only=CLAIM, out_dir=tmp_path, progress=quiet)
    (row,) = summary.claims
    assert row.status == "PASS", (
        row.detail
    )  # the construction's roles decide; the trained ones are reported
    trained = row.measured["trained"]
    assert trained["retrained"] is True and 0 <= trained["accuracy_retrained"] <= 1
    assert (
        kept_model(tmp_path / RESULTS_DB, two).is_file()
        and "retrained from its config" in row.detail
    )
    again = run_reproduce("quick", only=CLAIM, out_dir=tmp_path, progress=quiet)
    assert again.claims[0].measured["trained"]["retrained"] is False  # kept the first time
    assert again.claims[0].measured["trained"]["heads"] == trained["heads"]
