"""The four experiments: specs, a real (tiny) run through sweep → database → summary (learn),
constructions and figure (report.learning.claims.run_experiment_with_figure, what `headcount
experiment` calls), and the CLI."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from headcount.cli import main
from headcount.common.errors import InputError
from headcount.common.jsonable import jsonable
from headcount.learn import experiments
from headcount.learn.experiments import (
    EXPERIMENTS,
    experiment_spec,
    run_experiment,
    summarize_experiment,
)
from headcount.learn.store import ResultsStore
from headcount.learn.summaries import XorPhaseCell
from headcount.learn.sweep import load_spec
from headcount.report.learning.claims import run_experiment_with_figure


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
@pytest.mark.parametrize("scale", ["quick", "full"])
def test_specs_expand(name, scale):
    spec = load_spec(experiment_spec(name, scale))
    runs = spec.runs()
    assert runs and len({r.run_id for r in runs}) == len(runs)
    assert all(r.config["task"] == EXPERIMENTS[name].task for r in runs)


def test_unknown_experiment_and_scale():
    with pytest.raises(ValueError, match="unknown experiment 'nope'"):
        experiment_spec("nope")
    with pytest.raises(InputError, match="scale 'huge' is not available: use quick"):
        experiment_spec("xor-phase", "huge")
    with pytest.raises(InputError, match="backend 'dask' is not available: use local or ray"):
        run_experiment("xor-phase", "quick", "unused.sqlite", backend="dask")


@pytest.fixture
def tiny(monkeypatch):
    """Shrink the quick scales so a whole experiment runs in seconds (same code path, fewer/shorter
    runs)."""
    sizes = {
        "xor-phase": {
            "fixed": {"function": "xor", "n": 3, "steps": 300},
            "grid": {"degree": [1, 3], "heads": [1, 2]},
            "seeds": [0],
        },
        "minmax-heads": {
            "fixed": {"M": 4, "n": 3, "steps": 200},
            "grid": {"heads": [1, 2], "dim": [2]},
            "seeds": [0],
        },
    }
    patched = dict(EXPERIMENTS)
    for name, quick in sizes.items():
        patched[name] = replace(
            EXPERIMENTS[name], scales={**EXPERIMENTS[name].scales, "quick": quick}
        )
    monkeypatch.setattr(experiments, "EXPERIMENTS", patched)


def test_xor_phase_tiny_end_to_end(tiny, tmp_path):
    db = tmp_path / "r.sqlite"
    report = run_experiment_with_figure("xor-phase", "quick", db, workers=1, figure_dir=tmp_path)
    result = report.result
    assert result.sweep.runs_total == 4 and result.sweep.runs_failed == 0
    s = result.summary
    # below D·H = 3: (1,1), (1,2) — Theorem 2 says no model can solve them, whatever training does
    assert s.below_cells == 2 and s.below_solved == 0
    assert s.above_cells == 2 and s.above_constructions_certified == 2
    cells = {(c.degree, c.heads): c for c in s.cells}
    assert (
        cells[(1, 1)].construction_certified is None
        and cells[(3, 1)].construction_certified is True
    )
    # the learn summary is read from the database alone (no certificates): the same numbers come
    # back from a fresh read, and the report only added the constructions
    plain = summarize_experiment("xor-phase", "quick", db)
    assert plain.above_constructions_certified is None
    assert all(type(c) is XorPhaseCell for c in plain.cells)
    assert replace(s, cells=plain.cells, above_constructions_certified=None) == plain
    assert [
        c.with_construction(b.construction_certified) for c, b in zip(plain.cells, s.cells)
    ] == s.cells
    # the JSON: the plain summary leaves the constructions out; the report's adds them last
    plain_json, json_ = plain.to_json(), s.to_json()
    assert "above_constructions_certified" not in plain_json
    assert all("construction_certified" not in c for c in plain_json["cells"])
    assert list(json_) == [*plain_json, "above_constructions_certified"]
    assert [list(c) for c in json_["cells"]] == [
        [*c, "construction_certified"] for c in plain_json["cells"]
    ]
    with ResultsStore(db) as store:
        assert store.count("done") == 4
    assert (tmp_path / "xor-phase-quick.png").stat().st_size > 1000 and (
        tmp_path / "xor-phase-quick.svg"
    ).exists()
    assert report.figure.png == str(tmp_path / "xor-phase-quick.png") and report.figure.caption
    assert "| degree | heads |" in result.table
    printed = report.to_json()
    assert list(printed) == ["experiment", "scale", "db", "sweep", "summary", "table", "figure"]
    assert printed["summary"] == jsonable(s.to_json(), nonfinite="keep")
    again = run_experiment("xor-phase", "quick", db, workers=1)
    assert again.sweep.runs_done_now == 0 and again.summary == plain


def test_minmax_heads_tiny_verifier_agrees(tiny, tmp_path):
    report = run_experiment_with_figure(
        "minmax-heads", "quick", tmp_path / "r.sqlite", workers=1, figure_dir=tmp_path
    )
    s = report.result.summary
    assert list(s.to_json())[:2] == ["cells", "construction_dims"]
    assert s.single_heads_checked == 1 and s.verifier_agrees_with_exhaustive
    assert list(s.construction_dims) == [4] and s.construction_dims[4] >= 1


def run_cli(capsys, *args):
    """(exit code, stdout, stderr) of `headcount ARGS` run in-process (0 when main returns
    normally)."""
    try:
        main(list(args))
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 0
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_train_boolean_contract(capsys):
    code, out, _ = run_cli(
        capsys,
        "train",
        "boolean",
        "--function",
        "xor",
        "--n",
        "3",
        "--degree",
        "1",
        "--heads",
        "2",
        "--steps",
        "100",
        "--json",
    )
    assert code == 0
    r = json.loads(out)
    assert r["below_bound"] and not r["solved_exact"] and r["threshold_degree"] == 3


def test_cli_sweep_run_and_table(capsys, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(
        '[sweep]\nname = "t"\nexperiment = "t"\ntask = "boolean"\nseeds = [0]\n'
        '[fixed]\nfunction = "xor"\nn = 2\nsteps = 50\n[grid]\nheads = [1, 2]\n'
    )
    db = tmp_path / "r.sqlite"
    code, out, _ = run_cli(
        capsys, "sweep", "run", str(spec), "--db", str(db), "--workers", "1", "--json"
    )
    assert code == 0
    r = json.loads(out)
    assert (r["runs_total"], r["runs_done_before"], r["runs_done_now"], r["runs_failed"]) == (
        2,
        0,
        2,
        0,
    )
    code, out, _ = run_cli(
        capsys, "sweep", "run", str(spec), "--db", str(db), "--workers", "1", "--json"
    )
    assert json.loads(out)["runs_done_now"] == 0
    code, out, _ = run_cli(capsys, "sweep", "table", "--db", str(db), "--experiment", "t", "--json")
    table = json.loads(out)
    assert table["experiment"] == "t" and len(table["rows"]) == 2


def test_cli_sweep_from_flags(capsys, tmp_path):
    db = tmp_path / "r.sqlite"
    args = [
        "sweep",
        "run",
        "--db",
        str(db),
        "--workers",
        "1",
        "--task",
        "boolean",
        "--name",
        "flags",
        "--fixed",
        "function=xor",
        "--fixed",
        "n=2",
        "--fixed",
        "steps=50",
        "--grid",
        "heads=1,2",
        "--seeds",
        "0,1",
        "--json",
    ]
    code, out, _ = run_cli(capsys, *args)
    assert code == 0 and json.loads(out)["runs_done_now"] == 4
    with ResultsStore(db) as store:
        configs = sorted(
            (r["config"]["heads"], r["config"]["seed"]) for r in store.rows(experiment="flags")
        )
    assert configs == [(1, 0), (1, 1), (2, 0), (2, 1)]


@pytest.mark.parametrize(
    "args,words",
    [
        (["sweep", "run", "--db", "x.sqlite", "--grid", "heads=1"], "--task"),
        (["sweep", "run", "--db", "x.sqlite", "--task", "boolean", "--grid", "heads"], "KEY=VALUE"),
        (
            [
                "sweep",
                "run",
                "--db",
                "x.sqlite",
                "--task",
                "boolean",
                "--grid",
                "heads=1",
                "--seeds",
                "a",
            ],
            "--seeds",
        ),
        (["experiment", "nope"], "unknown experiment"),
        (["experiment", "xor-phase", "--scale", "huge"], "scale 'huge' is not available"),
        (["experiment", "xor-phase", "--backend", "dask"], "backend 'dask' is not available"),
        (
            ["sweep", "run", "--db", "x.sqlite", "--task", "boolean", "--workers", "0"],
            "workers must be ≥ 1",
        ),
        (
            ["sweep", "table", "--db", "x.sqlite", "--experiment", "x", "--format", "html"],
            "format 'html'",
        ),
        (["sweep", "run", "/nonexistent.toml", "--db", "x.sqlite"], "does not exist"),
        (["sweep", "table", "--db", "/nonexistent.sqlite", "--experiment", "x"], "does not exist"),
        (["train", "boolean", "--n", "0"], "n must be"),
        (["train", "induction", "--layers", "0", "--steps", "1"], "layers"),
        (["train", "boolean", "--function", "nope", "--n", "3"], "nope"),
    ],
)
def test_cli_bad_input_exits_2(capsys, args, words):
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith("error:") and words in err and len(err.strip().splitlines()) == 1
