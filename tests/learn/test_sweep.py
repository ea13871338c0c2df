"""Sweeps and the results database: spec validation, deterministic ids, local worker processes,
failures and retries, crashed workers, resume after SIGKILL, tables, and the Ray backend (if
installed)."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from headcount.common.errors import InputError
from headcount.learn.store import ResultsStore, run_id_for
from headcount.learn.store_schema import ResultsDBError
from headcount.learn.sweep import (
    RAY_MISSING,
    BackendUnavailableError,
    SpecError,
    SweepError,
    load_spec,
    run_sweep,
    spec_from_dict,
    sweep_plan,
    sweep_table,
    table_rows,
)
from tests.learn import sweep_runners  # noqa: F401  (registers the test runners)

REPO = Path(__file__).resolve().parents[2]
RUNNERS = "tests.learn.sweep_runners"


def spec_dict(runner: str = "solve", xs=(1, 2), seeds=(0, 1), **fixed) -> dict:
    return {
        "sweep": {
            "name": "t",
            "experiment": "exp",
            "task": "toy",
            "seeds": list(seeds),
            "runner": f"{RUNNERS}:{runner}",
        },
        "fixed": {"n": 8, **fixed},
        "grid": {"x": list(xs)},
    }


def done_rows(db: Path) -> int:
    """Count done rows with a plain read-only connection (as another process would)."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute("SELECT count(*) FROM runs WHERE status = 'done'").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


# --------------------------------------------------------------------------------------------------
# Spec and ids


TOML = """
[sweep]
name = "xor-phase-quick"
experiment = "xor-phase"
task = "boolean"
seeds = [0, 1, 2]

[fixed]
function = "xor"
n = 8

[grid]
degree = [1, 2, 4]
heads = [1, 2, 4, 8]

[[include]]
degree = 8
heads = 1
"""


def test_toml_spec_expands_deterministically(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(TOML)
    spec = load_spec(path)
    assert (spec.name, spec.experiment, spec.task, spec.seeds) == (
        "xor-phase-quick",
        "xor-phase",
        "boolean",
        (0, 1, 2),
    )
    assert spec.runner == "headcount.learn.train:run_config"
    runs = spec.runs()
    assert len(runs) == (3 * 4 + 1) * 3
    assert runs[0].config == {
        "task": "boolean",
        "function": "xor",
        "n": 8,
        "degree": 1,
        "heads": 1,
        "seed": 0,
    }
    assert list(runs[0].config) == ["task", "function", "n", "degree", "heads", "seed"]
    assert [r.config["seed"] for r in runs[:4]] == [0, 1, 2, 0]  # seed fastest, then the last axis
    assert runs[3].config["heads"] == 2
    assert runs[-1].config == {
        "task": "boolean",
        "function": "xor",
        "n": 8,
        "degree": 8,
        "heads": 1,
        "seed": 2,
    }
    assert len({r.run_id for r in runs}) == len(runs)
    # the same spec as a dict (what CLI flags build) gives the same runs, in the same order
    import tomllib

    assert [r.run_id for r in load_spec(tomllib.loads(TOML)).runs()] == [r.run_id for r in runs]


def test_run_ids_are_stable():
    config = {"task": "boolean", "function": "xor", "n": 8, "degree": 2, "heads": 4, "seed": 0}
    shuffled = dict(reversed(list(config.items())))
    assert (
        run_id_for(config) == run_id_for(shuffled) == "b9b8f583f672b152"
    )  # pinned: ids must never change
    assert run_id_for({**config, "seed": 1}) != run_id_for(config)
    assert run_id_for({**config, "n": 8.0}) != run_id_for(config)
    a, b = (
        spec_from_dict(spec_dict()),
        spec_from_dict({**spec_dict(), "sweep": {**spec_dict()["sweep"], "name": "other"}}),
    )
    assert [r.run_id for r in a.runs()] == [
        r.run_id for r in b.runs()
    ]  # the sweep name is not part of the id
    assert spec_from_dict({**spec_dict(), "sweep": {**spec_dict()["sweep"], "seeds": 2}}).seeds == (
        0,
        1,
    )


@pytest.mark.parametrize(
    "change, message",
    [
        ({"extra": {}}, "unknown section [extra]"),
        ({"sweep": None}, "missing section [sweep]"),
        (
            {"sweep": {"name": "t", "task": "toy", "runner": f"{RUNNERS}:solve", "seed": [0]}},
            "[sweep] seed: unknown key",
        ),
        ({"sweep": {"task": "boolean"}}, "missing required key 'name'"),
        ({"sweep": {"name": "t"}}, "missing required key 'task'"),
        (
            {"sweep": {"name": "t", "task": "boolen"}},
            "unknown task 'boolen'; tasks: induction, khop, minmax, boolean",
        ),
        (
            {"sweep": {"name": "t", "task": "toy", "runner": "no colon"}},
            # the built-in runner first, then those registered so far (tests', learn.experiments'
            # k-hop one)
            "[sweep] runner: 'no colon' is not a registered runner (a sweep file names one, never "
            "code); "
            "runners: headcount.learn.train:run_config, "
            "headcount.learn.certified_runs:run_khop_certified, ",
        ),
        (
            {"sweep": {"name": "t", "task": "boolean", "seeds": []}},
            "[sweep] seeds: the list is empty",
        ),
        (
            {"sweep": {"name": "t", "task": "boolean", "seeds": ["0"]}},
            "seeds must be integers, got '0'",
        ),
        ({"sweep": {"name": "t", "task": "boolean", "seeds": [1, 1]}}, "seeds repeat"),
        ({"sweep": {"name": "t", "task": "boolean", "seeds": 0}}, "a seed count must be ≥ 1"),
        (
            {"sweep": {"name": 3, "task": "boolean"}},
            "[sweep] name: must be a non-empty string, got 3",
        ),
        ({"grid": {"x": []}}, "[grid] x: the list is empty"),
        ({"grid": {"x": 3}}, "[grid] x: a grid axis must be a list of values, got integer"),
        ({"grid": {"x": [1, 1]}}, "[grid] x: values repeat"),
        ({"grid": {"n": [8, 16]}}, "[grid] n: 'n' is also in [fixed]"),
        ({"grid": {"seed": [0, 1]}}, "[grid] seed: 'seed' is reserved; set it with [sweep] seeds"),
        ({"fixed": {"task": "khop"}}, "[fixed] task: 'task' is reserved; set it with [sweep] task"),
        ({"fixed": {"lr": float("nan")}}, "[fixed] lr: nan is not allowed"),
        (
            {"fixed": {"when": __import__("datetime").date(2024, 1, 1)}},
            "[fixed] when: date values are not allowed",
        ),
        ({"fixed": [1]}, "[fixed] must be a table"),
        ({"include": [{}]}, "[include 1]: is empty"),
    ],
)
def test_spec_errors(change, message):
    data = spec_dict()
    data.update(change)
    if data.get("sweep") is None:
        del data["sweep"]
    with pytest.raises(SpecError) as info:
        spec_from_dict(data)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_toml_file_errors(tmp_path):
    with pytest.raises(SpecError, match="does not exist"):
        load_spec(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[sweep\nname = 1\n")
    with pytest.raises(SpecError, match="bad.toml: not valid TOML"):
        load_spec(bad)
    typo = tmp_path / "typo.toml"
    typo.write_text('[sweep]\nname = "t"\ntask = "boolean"\n[grids]\nx = [1]\n')
    with pytest.raises(SpecError, match=r"typo.toml: unknown section \[grids\]"):
        load_spec(typo)


# --------------------------------------------------------------------------------------------------
# Store


def test_store_records_each_run_once_and_retries_failures(tmp_path):
    db = tmp_path / "r.db"
    config = {"task": "toy", "x": 1, "seed": 0}
    rid = run_id_for(config)
    with ResultsStore(db) as store:
        assert store.record(
            run_id=rid, config=config, status="failed", error="boom", sweep="s", experiment="e"
        )
        assert store.finished_ids() == set()  # failed runs are retried
        assert store.record(
            run_id=rid,
            config=config,
            status="done",
            metrics={"accuracy": 1.0},
            sweep="s",
            experiment="e",
            wall_seconds=0.5,
        )
        assert not store.record(run_id=rid, config=config, status="done", metrics={"accuracy": 0.0})
        assert not store.record(run_id=rid, config=config, status="failed", error="late")
        assert store.finished_ids() == {rid}
        [row] = store.rows(experiment="e")
    assert row["status"] == "done" and row["metrics"] == {"accuracy": 1.0} and row["attempts"] == 2
    assert (
        row["config"] == config
        and row["seed"] == 0
        and row["task"] == "toy"
        and row["error"] is None
    )
    with ResultsStore(db) as store:  # reopening an existing DB
        assert store.count() == 1 and store.rows(experiment="other") == []
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_store_refuses_other_files(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello, not a database\n")
    with pytest.raises(
        ResultsDBError, match="not a headcount results database \\(not an SQLite file\\)"
    ):
        ResultsStore(text)
    assert text.read_text() == "hello, not a database\n"
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(ValueError, match="SQLite database but not a headcount results database"):
        ResultsStore(other)
    newer = tmp_path / "newer.db"
    ResultsStore(newer).close()
    with sqlite3.connect(newer) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(ValueError, match="schema 99, newer than this headcount reads"):
        ResultsStore(newer)
    with pytest.raises(ValueError, match="is a directory"):
        ResultsStore(tmp_path)
    empty = tmp_path / "empty.db"
    empty.touch()
    with ResultsStore(empty) as store:  # an empty file is a new database
        assert store.count() == 0


# --------------------------------------------------------------------------------------------------
# Running


def test_local_sweep_runs_records_and_skips_finished(tmp_path, capfd):
    db = tmp_path / "r.db"
    spec = spec_dict(xs=(1, 2, 3))
    assert sweep_plan(spec, db).to_json() == {
        "runs_total": 6,
        "runs_done": 0,
        "runs_failed": 0,
        "runs_pending": 6,
        "sweep": "t",
        "experiment": "exp",
    }
    assert not db.exists()
    summary = run_sweep(spec, db, workers=2, progress=True)
    out, err = capfd.readouterr()
    assert out == "" and "sweep t" in err  # the progress bar goes to stderr only
    assert {
        k: summary.to_json()[k]
        for k in ("runs_total", "runs_done_before", "runs_done_now", "runs_failed")
    } == {
        "runs_total": 6,
        "runs_done_before": 0,
        "runs_done_now": 6,
        "runs_failed": 0,
    }
    with ResultsStore(db) as store:
        rows = store.rows(sweep="t")
    assert sorted(r["run_id"] for r in rows) == sorted(r.run_id for r in load_spec(spec).runs())
    row = next(r for r in rows if r["config"]["x"] == 2 and r["seed"] == 1)
    assert row["metrics"]["steps"] == 8 * 4 and isinstance(
        row["metrics"]["steps"], int
    )  # numpy → JSON
    assert row["metrics"]["detail"]["alphabet"] == 4
    assert (
        row["experiment"] == "exp"
        and row["runner"] == f"{RUNNERS}:solve"
        and row["wall_seconds"] >= 0
    )
    assert set(row["versions"]) == {"python", "numpy", "torch", "headcount", "platform", "host"}
    assert row["started_at"].endswith("+00:00") and row["started_at"] <= row["finished_at"]
    assert len({r["versions"]["host"] for r in rows}) == 1
    # again: nothing to do, nothing started
    again = run_sweep(spec, db, workers=2)
    assert (again.runs_done_before, again.runs_done_now, again.runs_failed) == (6, 0, 0)
    # a bigger grid runs only the new points
    more = run_sweep(spec_dict(xs=(1, 2, 3, 4)), db, workers=1)
    assert (more.runs_total, more.runs_done_before, more.runs_done_now) == (8, 6, 2)


def test_failed_runs_are_recorded_and_retried(tmp_path):
    db = tmp_path / "r.db"
    flag = tmp_path / "fail"
    flag.touch()
    spec = spec_dict("flaky", xs=(1,), seeds=(0,))
    spec["include"] = [{"x": 2, "fail_if_exists": str(flag)}]
    first = run_sweep(spec, db, workers=2)
    assert (first.runs_done_now, first.runs_failed) == (1, 1)
    with ResultsStore(db) as store:
        [failed] = store.rows(status="failed")
        assert len(store.finished_ids()) == 1
    assert failed["config"]["x"] == 2 and failed["metrics"] is None
    assert failed["error"].startswith(
        "ValueError: flag file present second line for x=2 [at sweep_runners.py:"
    )
    assert "\n" not in failed["error"]
    assert sweep_plan(spec, db).runs_failed == 1
    flag.unlink()
    second = run_sweep(spec, db, workers=2)
    assert (second.runs_done_before, second.runs_done_now, second.runs_failed) == (1, 1, 0)
    with ResultsStore(db) as store:
        row = next(r for r in store.rows() if r["config"]["x"] == 2)
    assert row["status"] == "done" and row["error"] is None and row["attempts"] == 2


def test_runner_that_kills_its_worker_is_isolated(tmp_path):
    db = tmp_path / "r.db"
    spec = spec_dict("crash", xs=(1, 2, 3), seeds=(0,), sleep=0.3)
    spec["include"] = [{"x": 9, "crash": True}, {"x": 10, "bad": True}]
    summary = run_sweep(spec, db, workers=2)
    assert (summary.runs_done_now, summary.runs_failed) == (4, 1)
    with ResultsStore(db) as store:
        [failed] = store.rows(status="failed")
    assert failed["config"]["x"] == 9 and failed["error"].startswith(
        "WorkerDied: the worker process died"
    )
    # a runner that returns something else than a dict fails cleanly
    bad = run_sweep(spec_dict("not_a_dict", xs=(1,), seeds=(0,)), tmp_path / "b.db", workers=1)
    assert bad.runs_failed == 1
    with ResultsStore(tmp_path / "b.db") as store:
        assert "returned list, not a dict of metrics" in store.rows()[0]["error"]


def test_workers_use_one_torch_thread(tmp_path):
    db = tmp_path / "r.db"
    env = dict(os.environ)
    assert run_sweep(spec_dict("threads", xs=(1,), seeds=(0, 1)), db, workers=2).runs_done_now == 2
    assert dict(os.environ) == env  # the parent's environment is restored
    with ResultsStore(db) as store:
        metrics = [r["metrics"] for r in store.rows()]
    assert metrics == [{"torch_threads": 1, "omp": os.environ.get("OMP_NUM_THREADS", "1")}] * 2


def test_bad_runner_or_backend_fails_before_anything_is_written(tmp_path, monkeypatch):
    db = tmp_path / "r.db"
    with pytest.raises(
        SweepError, match="'tests.learn.sweep_runners:nope' is not a registered runner"
    ):
        run_sweep(spec_dict("nope"), db)
    with pytest.raises(SweepError, match="'no_such_module_xyz:f' is not a registered runner"):
        run_sweep(
            {**spec_dict(), "sweep": {**spec_dict()["sweep"], "runner": "no_such_module_xyz:f"}}, db
        )
    assert "no_such_module_xyz" not in sys.modules  # looked up, never imported
    with pytest.raises(InputError, match="backend 'dask' is not available: use local or ray"):
        run_sweep(spec_dict(), db, backend="dask")
    with pytest.raises(InputError, match="workers must be ≥ 1, got 0"):
        run_sweep(spec_dict(), db, workers=0)
    with pytest.raises(
        InputError, match="^address is the Ray cluster's address: it needs backend ray$"
    ) as err:
        run_sweep(spec_dict(), db, address="127.0.0.1:6379")  # backend "local"
    assert err.value.params == ("address", "backend")
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    with pytest.raises(BackendUnavailableError) as info:
        run_sweep(spec_dict(), db, backend="ray")
    assert (
        str(info.value)
        == RAY_MISSING
        == "backend 'ray' needs the optional extra: pip install 'headcount[ray]'"
    )
    assert not db.exists()


def test_sweep_killed_with_sigkill_resumes_exactly_once(tmp_path):
    db = tmp_path / "r.db"
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    spec = spec_dict(xs=(1, 2, 3, 4), seeds=(0, 1), sleep=0.4, log_dir=str(log_dir))
    expected = {r.run_id for r in load_spec(spec).runs()}
    assert len(expected) == 8
    code = (
        "import json, sys, tests.learn.sweep_runners; from headcount.learn.sweep import run_sweep; "
        "run_sweep(json.loads(sys.argv[1]), sys.argv[2], workers=2)"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    with open(tmp_path / "stderr.txt", "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, json.dumps(spec), str(db)],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 300  # ~3 s on an idle machine: generous for one at load 10
        while done_rows(db) < 2:
            assert proc.poll() is None, (
                f"sweep exited early: {(tmp_path / 'stderr.txt').read_text()}"
            )
            assert time.monotonic() < deadline, "sweep made no progress in 300 s"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the parent and its workers
        proc.wait()
    with ResultsStore(db) as store:
        before = {r["run_id"]: r for r in store.rows()}
    assert 2 <= len(before) < 8 and all(r["status"] == "done" for r in before.values())

    summary = run_sweep(spec, db, workers=2)
    assert summary.runs_done_before == len(before)
    assert summary.runs_done_now == 8 - len(before) and summary.runs_failed == 0
    with ResultsStore(db) as store:
        after = store.rows()
        assert store.finished_ids() == expected
    assert sorted(r["run_id"] for r in after) == sorted(expected)  # every run, once
    for r in after:
        if r["run_id"] in before:
            assert r == before[r["run_id"]]  # finished runs were left alone …
            executions = (log_dir / f"{r['config']['x']}-{r['seed']}").read_text().split()
            assert len(executions) == 1  # … and never executed again


# --------------------------------------------------------------------------------------------------
# Tables


def fill(db: Path) -> None:
    with ResultsStore(db) as store:
        for degree in (2, 1):
            for heads in (1, 2):
                for seed in (0, 1, 2):
                    config = {
                        "task": "boolean",
                        "function": "xor",
                        "n": 4,
                        "degree": degree,
                        "heads": heads,
                        "seed": seed,
                    }
                    if (degree, heads, seed) == (2, 2, 2):
                        store.record(
                            run_id=run_id_for(config),
                            config=config,
                            status="failed",
                            error="x",
                            experiment="xor",
                        )
                        continue
                    acc = 0.5 + 0.125 * degree * heads - 0.0625 * seed
                    store.record(
                        run_id=run_id_for(config),
                        config=config,
                        status="done",
                        experiment="xor",
                        metrics={
                            "accuracy": acc,
                            "solved": acc >= 0.75,
                            "loss": float("nan") if seed else 0.1,
                            "eval": {"errors": degree + seed},
                            "name": "xor",
                            "heads": heads,
                            "lr": 0.03,
                            "dim": degree,
                        },
                    )
        other = {"task": "khop", "seed": 0}
        store.record(
            run_id=run_id_for(other),
            config=other,
            status="done",
            metrics={"a": 1},
            experiment="khop",
        )


def test_sweep_table_formats(tmp_path):
    db = tmp_path / "r.db"
    fill(db)
    columns, rows = table_rows(db, "xor")
    # config echoes (heads) and text metrics are left out; metrics equal across each group's seeds
    # are one column (loss: its NaNs are dropped; lr; dim), the rest mean/min/max
    assert columns == [
        "degree",
        "heads",
        "seeds",
        "failed",
        "accuracy_mean",
        "accuracy_min",
        "accuracy_max",
        "solved_fraction",
        "loss",
        "eval.errors_mean",
        "eval.errors_min",
        "eval.errors_max",
        "lr",
        "dim",
    ]
    assert [(r["degree"], r["heads"], r["seeds"], r["failed"], r["dim"]) for r in rows] == [
        (1, 1, 3, 0, 1),
        (1, 2, 3, 0, 1),
        (2, 1, 3, 0, 2),
        (2, 2, 2, 1, 2),
    ]
    r = rows[1]
    assert (
        r["accuracy_mean"] == pytest.approx(0.75 - 0.0625)
        and r["accuracy_min"] == 0.625
        and r["accuracy_max"] == 0.75
    )
    assert r["solved_fraction"] == pytest.approx(1 / 3)
    assert (
        r["loss"] == 0.1
        and r["lr"] == 0.03
        and r["eval.errors_max"] == 3
        and isinstance(r["dim"], int)
    )

    md = sweep_table(db, "xor").splitlines()
    assert md[0].startswith("| degree | heads | seeds | failed | accuracy_mean |") and md[
        1
    ].startswith("|---|")
    assert md[2] == "| 1 | 1 | 3 | 0 | 0.5625 | 0.5 | 0.625 | 0 | 0.1 | 2 | 1 | 3 | 0.03 | 1 |"
    parsed = list(csv.DictReader(io.StringIO(sweep_table(db, "xor", "csv"))))
    assert (
        len(parsed) == 4
        and parsed[3]["seeds"] == "2"
        and float(parsed[0]["accuracy_mean"]) == 0.5625
    )
    data = json.loads(sweep_table(db, "xor", "json"))
    assert data["experiment"] == "xor" and data["columns"] == columns and data["rows"] == rows
    assert table_rows(db, "xor", metrics=["accuracy", "eval"])[0] == [
        "degree",
        "heads",
        "seeds",
        "failed",
        "accuracy_mean",
        "accuracy_min",
        "accuracy_max",
        "eval.errors_mean",
        "eval.errors_min",
        "eval.errors_max",
    ]
    with pytest.raises(
        SweepError, match="has no numeric or boolean metric 'acc'; metrics: accuracy, solved"
    ):
        sweep_table(db, "xor", metrics=["acc"])
    # one group only: the task is the label column
    assert table_rows(db, "khop") == (
        ["task", "seeds", "a"],
        [{"task": "khop", "seeds": 1, "a": 1}],
    )
    with pytest.raises(
        SweepError, match="no runs of experiment 'nope' .* experiments there: 'khop', 'xor'"
    ):
        sweep_table(db, "nope")
    with pytest.raises(InputError, match="format 'html' is not available: use md, csv or json"):
        sweep_table(db, "xor", "html")
    with pytest.raises(SweepError, match="does not exist"):
        sweep_table(tmp_path / "missing.db", "xor")


# --------------------------------------------------------------------------------------------------
# Ray


def test_ray_backend_local_instance(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("a Ray instance is already running in this process")
    # Ray workers are fresh processes: they find tests.learn.sweep_runners through PYTHONPATH
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    db = tmp_path / "r.db"
    flag = tmp_path / "fail"
    flag.touch()
    spec = spec_dict("flaky", xs=(1, 2), seeds=(0, 1))
    spec["include"] = [{"x": 3, "fail_if_exists": str(flag)}]
    try:
        summary = run_sweep(spec, db, workers=2, backend="ray")
    finally:
        if ray.is_initialized():
            ray.shutdown()
    assert not ray.is_initialized()  # run_sweep shut down the instance it started
    assert (summary.runs_total, summary.runs_done_now, summary.runs_failed) == (6, 4, 2)
    with ResultsStore(db) as store:
        rows = store.rows()
    assert len(rows) == 6
    failed = [r for r in rows if r["status"] == "failed"]
    assert sorted(r["seed"] for r in failed) == [0, 1] and all(
        r["config"]["x"] == 3 for r in failed
    )
    assert all(r["error"].startswith("ValueError: flag file present") for r in failed)
    done = [r for r in rows if r["status"] == "done"]
    assert all(r["metrics"]["detail"]["alphabet"] == r["config"]["x"] + 2 for r in done)
    assert len({r["versions"]["python"] for r in done}) == 1


@pytest.mark.slow
def test_default_runner_xor_sweep(tmp_path):
    """End to end with headcount.learn.train:run_config: a tiny XOR grid, two workers, then its
    table."""
    path = tmp_path / "xor.toml"
    path.write_text(
        '[sweep]\nname = "xor-smoke"\nexperiment = "xor-phase"\ntask = "boolean"\nseeds = [0, 1]\n'
        '[fixed]\nfunction = "xor"\nn = 4\nheads = 1\nsteps = 50\n[grid]\ndegree = [1, 4]\n'
    )
    db = tmp_path / "r.db"
    summary = run_sweep(path, db, workers=2)
    assert (summary.runs_total, summary.runs_done_now, summary.runs_failed) == (4, 4, 0)
    columns, rows = table_rows(db, "xor-phase", metrics=["solved", "below_bound"])
    assert columns == [
        "degree",
        "seeds",
        "below_bound_fraction",
        "solved_fraction",
    ]  # order the runner reports
    assert [(r["degree"], r["seeds"], r["below_bound_fraction"]) for r in rows] == [
        (1, 2, 1.0),
        (4, 2, 0.0),
    ]
    assert rows[0]["solved_fraction"] == 0.0  # D·H = 1 < n = 4: no model can (Theorem 2)
