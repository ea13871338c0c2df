"""The claim induction.khop.mechanism (report/induction/khop_mechanism.py): its pieces, and the
claim through reproduce — the deepest run of the report's k-hop experiment is read from its
database, its kept model loaded (or retrained when the file is missing), the construction's roles
checked layer by layer, the trained model's compared, and the side-by-side figure written and
inlined.

The experiment is shrunk (n = 8, S = 3, K = 2, depths 2 and 3) and its runs stored as done
beforehand, so no sweep trains here; the deepest run's kept model is a stand-in (the variable-hop
construction, hop-prefix like the lab's models, or a model trained for a few steps in this process
when the file is missing)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import fields, replace

import pytest

from headcount.core.model.files import save_model
from headcount.induction.heads import HeadScore
from headcount.induction.multihop.construction import variable_hop_construction
from headcount.learn import experiments
from headcount.learn.experiments import EXPERIMENTS, experiment_spec, kept_model
from headcount.learn.store import ResultsStore
from headcount.learn.sweep import load_spec
from headcount.report.claims import PASS, Context
from headcount.report.figures import FIGURES, save_figure
from headcount.report.induction import khop_mechanism as km
from headcount.report.render import write_atomic
from headcount.report.reproduce import (
    CLAIM_MODULES,
    RESULTS_DB,
    load_claims,
    run_claim,
    run_reproduce,
)

TINY = {
    "fixed": {"n": 8, "alphabet": 3, "heads": 1, "dim": 8, "hops": 2, "steps": 5},
    "grid": {"layers": [2, 3]},
}
SMALL = {
    "n": 64,
    "alphabet": 4,
    "hops": 8,
    "samples": 32,
    "draw": 8,
}  # the claim's parameters, shrunk
ACCURACY = {2: {"1": 0.99, "2": 0.6}, 3: {"1": 0.999, "2": 0.98}}


@pytest.fixture
def tiny(monkeypatch):
    khop = EXPERIMENTS["khop"]
    patched = dict(EXPERIMENTS)
    patched["khop"] = replace(khop, scales={**khop.scales, "quick": {**TINY, "seeds": [0]}})
    monkeypatch.setattr(experiments, "EXPERIMENTS", patched)


def stored_runs(db) -> str:
    """Store the shrunk experiment's runs as done (the accuracies of ACCURACY); the deepest run's
    id."""
    with ResultsStore(db) as store:
        for run in load_spec(experiment_spec("khop", "quick")).runs():
            metrics = {"accuracy_by_hop": ACCURACY[run.config["layers"]], "model_path": None}
            store.record(run_id=run.run_id, config=run.config, status="done", experiment="khop",
                         metrics=metrics)  # fmt: skip
            if run.config["layers"] == 3:
                deepest = run.run_id
    return deepest


def quiet(line: str) -> None:
    pass


def score(
    layer: int, head: int, find: dict[int, float] | None = None, **values: float
) -> HeadScore:
    """A HeadScore with the given scores, every other score 0."""
    names = [f.name for f in fields(HeadScore) if f.name not in ("layer", "head", "find")]
    find = {1: 0.0, 2: 0.0, 4: 0.0} if find is None else find
    return HeadScore(layer=layer, head=head, find=find, **{k: values.get(k, 0.0) for k in names})


# ----------------------------------------------------------------------------------------------
# pieces
def test_registered_after_the_construction_claim_with_one_figure():
    names = [m.__name__ for m in CLAIM_MODULES]
    assert (
        names.index("headcount.report.induction.khop_mechanism")
        == names.index("headcount.report.induction.khop_construction_figures") + 1
        == names.index("headcount.report.induction.khop_construction") + 2
    )
    claim = load_claims()[km.CLAIM]
    assert claim.module == "headcount.report.induction.khop_mechanism"
    assert claim.params["quick"] == {
        "n": 128,
        "alphabet": 4,
        "hops": 16,
        "samples": 128,
        "draw": 32,
    }
    full = claim.params["full"]
    assert full["n"] * full["samples"] >= 128 * 128 and full["n"] >= 128 and full["hops"] == 16
    assert {f.id for f in FIGURES.values() if f.claim == km.CLAIM} == {km.FIGURE}


def test_built_roles_are_khop_roles_by_layer():
    assert km.built_roles(128, 4, 16) == {
        0: ("duplicate_token", "previous_token"),
        1: ("induction",),
        2: ("induction",),
        3: ("find^2",),
        4: ("find^4",),
        5: ("find^8",),
    }
    assert km.built_roles(16, 4, 4) == {0: ("duplicate_token", "previous_token"), 1: ("induction",),
                                        2: ("induction",), 3: ("find^2",)}  # fmt: skip


def test_role_problems_layer_by_layer():
    built = {0: ("duplicate_token", "previous_token"), 1: ("induction",), 2: ("find^2",)}
    assert km.role_problems(dict(built), built) == []
    found = {
        0: ("duplicate_token", "previous_token"),
        1: ("induction",),
        2: ("uniform",),
        3: ("sink",),
    }
    assert km.role_problems(found, built) == [
        "layer 2: roles ['uniform'], built ['find^2']",
        "layer 3: not built",
    ]
    assert km.role_problems({0: built[0]}, built) == [
        "layer 1: roles [], built ['induction']",
        "layer 2: roles [], built ['find^2']",
    ]


def test_deepest_row_and_its_errors():
    rows = [
        {
            "run_id": "a",
            "config": {"layers": 3, "seed": 0},
            "metrics": {"accuracy_by_hop": {"1": 1.0}},
        },
        {
            "run_id": "b",
            "config": {"layers": 4, "seed": 1},
            "metrics": {"accuracy_by_hop": {"1": 0.9, "2": 0.9}},
        },
        {
            "run_id": "c",
            "config": {"layers": 4, "seed": 0},
            "metrics": {"accuracy_by_hop": {"1": 0.8, "2": 1.0}},
        },
        {
            "run_id": "d",
            "config": {"layers": 4, "seed": 2},
            "metrics": {"accuracy_by_hop": {"1": 1.0, "2": 0.7}},
        },
    ]
    assert (
        km.deepest_row(rows)["run_id"] == "c"
    )  # the most layers; ties: lowest mean error, then the seed
    assert km.deepest_row(rows[:1])["run_id"] == "a" and km.deepest_row([]) is None
    errors = km.error_by_hop({"accuracy_by_hop": {"1": 0.75, "2": None}})
    assert errors[1] == 0.25 and math.isnan(errors[2]) and km.error_by_hop({}) == {}


def test_the_comparison_names_each_trained_head_and_its_best_find():
    built = {0: ("previous_token",), 1: ("induction",), 2: ("find^2",)}
    trained = (
        score(0, 0, previous_token=0.9, find={1: 0.3, 2: 0.1}),
        score(1, 0, induction=0.8, find={1: 0.85, 2: 0.0}),
        score(1, 1, sink=0.7, find={1: 0.2, 2: 0.2}),  # a tie: the smaller r
        score(2, 0, duplicate_token=0.45, find={1: 0.0, 2: 0.6}),
    )
    assert km.best_find(trained[2]) == (1, 0.2) and km.best_find(trained[3]) == (2, 0.6)
    layers = km.compare_layers(built, trained)
    assert [row["shared"] for row in layers] == [["previous_token"], ["induction"], ["find^2"]]
    assert layers[1]["trained"] == [
        {"head": 0, "role": "induction", "best_find": 1, "find": 0.85},
        {"head": 1, "role": "sink", "best_find": 1, "find": 0.2},
    ]
    assert km.comparison_text(layers, trained) == (
        "layer 0: construction previous_token; trained: H0 previous_token 0.90 · best find^1 0.30 "
        "| "
        "layer 1: construction induction; trained: H0 induction 0.80 · best find^1 0.85, "
        "H1 sink 0.70 · best find^1 0.20 | "
        "layer 2: construction find^2; trained: H0 find^2 0.60 · best find^2 0.60 — "
        "3 of the construction's 3 roles found in the same layer"
    )
    shallow = km.compare_layers(built, trained[:1])  # a trained model with fewer layers: "—" there
    assert [row["shared"] for row in shallow] == [["previous_token"], [], []]
    assert (
        "layer 2: construction find^2; trained: — — 1 of the construction's 3"
        in km.comparison_text(shallow, trained[:1])
    )


def test_the_first_layer_pointer_is_read_from_latest_earlier():
    doubling = (score(0, 0, previous_token=0.9, latest_earlier=0.05), score(0, 1, sink=1.0))
    found = km.first_layer_pointer(doubling + (score(1, 0, latest_earlier=0.99),))  # layer 0 only
    assert found == {"head": 0, "latest_earlier": 0.05, "pointer": False, "previous_token": 0.9}
    assert km.pointer_text(found).startswith("layer 0: no strictly-earlier pointer (best latest")
    pointer = (
        score(0, 0, previous_token=0.2),
        score(0, 1, duplicate_token=0.9, latest_earlier=0.8),
    )
    found = km.first_layer_pointer(pointer)
    assert found["pointer"] and found["head"] == 1
    assert "layer 0: a strictly-earlier pointer (best latest-earlier score 0.80, head 1" in (
        km.pointer_text(found)
    )


def test_without_a_trained_run_the_construction_alone_is_checked_and_drawn(tmp_path):
    ctx = Context(scale="quick", results_db=str(tmp_path / RESULTS_DB))
    ctx.cache[(km.CACHE_KIND, km.EXPERIMENT, "quick", ctx.results_db)] = (
        None  # every run of the sweep failed
    )
    claim = replace(load_claims()[km.CLAIM], params={"quick": {**SMALL, "draw": 12}})
    result = run_claim(claim, ctx)
    assert result.status == PASS, result.detail
    assert (
        result.measured["trained"] is None
        and "no trained run in the khop experiment" in result.detail
    )
    assert result.measured["construction"]["roles"] == {
        "0": ["duplicate_token", "previous_token"],
        "1": ["induction"],
        "2": ["induction"],
        "3": ["find^2"],
        "4": ["find^4"],
    }
    assert len(result.series.construction.tokens) == 12 and result.series.trained is None
    saved = save_figure(
        lambda fig: km.draw_khop_mechanism(fig, result), tmp_path, "alone", {}, write_atomic
    )
    assert (
        "No trained k-hop run was found" in saved["caption"]
        and (tmp_path / "alone.png").stat().st_size > 5000
    )


# ----------------------------------------------------------------------------------------------
# reproduce
def test_reproduce_draws_the_kept_model_beside_the_construction(tiny, tmp_path):
    deepest = stored_runs(tmp_path / RESULTS_DB)
    save_model(
        variable_hop_construction(8, 3, 2), kept_model(tmp_path / RESULTS_DB, deepest)
    )  # the stand-in
    summary = run_reproduce("quick", only=km.CLAIM, out_dir=tmp_path, progress=quiet)
    (row,) = summary.claims
    assert (row.id, row.status) == (km.CLAIM, "PASS"), row.detail
    built = row.measured["construction"]
    assert (built["n"], built["alphabet"], built["hops"], built["layers"], built["samples"]) == (
        128,
        4,
        16,
        6,
        128,
    )
    assert built["roles"] == built["built_roles"] and built["roles"]["5"] == ["find^8"]
    trained = row.measured["trained"]
    assert (
        trained["run_id"] == deepest
        and trained["retrained"] is False
        and trained["analyzed_at_hops"] == 2
    )
    assert trained["error_by_hop"] == {"1": pytest.approx(0.001), "2": pytest.approx(0.02)}
    # the stand-in starts from pointer doubling's previous-token head: no strictly-earlier pointer
    pointer = trained["first_layer_pointer"]
    assert not pointer["pointer"] and pointer["previous_token"] > 0.9
    assert "layer 0: no strictly-earlier pointer" in row.detail
    # the variable-hop stand-in: the construction's heads, and layer 1's hop-bit head (it reads the
    # hop token)
    assert trained["roles"] == {
        "0": ["duplicate_token", "previous_token"],
        "1": ["induction", "sink"],
        "2": ["induction"],
    }
    assert (
        list(trained["roles_by_hop"]) == ["1", "2"]
        and trained["roles_by_hop"]["2"] == trained["roles"]
    )
    beside = trained["construction_beside"]
    assert (beside["n"], beside["alphabet"], beside["hops"]) == (8, 3, 2)
    assert beside["built_roles"] == {
        "0": ["duplicate_token", "previous_token"],
        "1": ["induction"],
        "2": ["induction"],
    }
    assert [r["shared"] for r in trained["layers"]] == [
        ["duplicate_token", "previous_token"],
        ["induction"],
        ["induction"],
    ]
    assert trained["input_drawn"].startswith("k=2 ") and len(trained["input_drawn"].split()) == 9
    assert (
        "the built roles, recovered" in row.detail
        and "4 of the construction's 4 roles" in row.detail
    )
    assert "layer 1: construction induction; trained: H0 induction" in row.detail
    assert (tmp_path / f"{km.FIGURE}.png").stat().st_size > 10_000
    assert (tmp_path / f"{km.FIGURE}.svg").read_text().lstrip().startswith("<?xml")
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    (fig,) = on_disk["figures"]
    assert (fig["id"], fig["claim"]) == (km.FIGURE, km.CLAIM)
    assert ("its roles by layer: 0: duplicate_token, previous_token; 1: induction, sink; 2: "
           "induction") in fig[
        "caption"]  # fmt: skip
    assert re.search(f'<figure id="{km.FIGURE}"[^>]*><img', (tmp_path / "report.html").read_text())


def test_a_run_without_its_model_file_is_retrained_and_kept(tiny, tmp_path):
    deepest = stored_runs(tmp_path / RESULTS_DB)
    claim = replace(load_claims()[km.CLAIM], params={"quick": SMALL})  # no report: the claim alone

    def once():
        return run_claim(claim, Context(scale="quick", results_db=str(tmp_path / RESULTS_DB)))

    first = once()
    assert first.status == "PASS", (
        first.detail
    )  # the construction's roles decide; the trained ones are reported
    trained = first.measured["trained"]
    assert trained["retrained"] is True and set(trained["error_by_hop_retrained"]) == {"1", "2"}
    assert (
        kept_model(tmp_path / RESULTS_DB, deepest).is_file()
        and "retrained from its config" in first.detail
    )
    again = once()
    assert again.measured["trained"]["retrained"] is False  # kept the first time
    assert again.measured["trained"]["heads"] == trained["heads"]
