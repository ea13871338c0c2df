"""A sweep's progress shows the training steps of its runs in flight: local workers forward the
trainer's step texts to the parent (a queue per pool), which puts them in the bar's note — the
reproduce bar's "run 1/4 · step 400/2000"."""

from __future__ import annotations

import re

from headcount.common.progress import progress_bar, step_progress, steps_reported_to
from headcount.learn.store import ResultsStore
from headcount.learn.sweep import load_spec, resolve_runner, run_sweep
from headcount.learn.sweep.schedulers import LocalScheduler
from tests.learn import sweep_runners  # noqa: F401  (registers the test runners)
from tests.learn.test_sweep import RUNNERS, spec_dict

TEXT = re.compile(r"run (\d)/(\d)( · step (\d+)/30(, step (\d+)/30)?)?")


def test_step_progress_is_the_enclosing_sink_only_when_progress_is_off():
    seen: list[str] = []
    assert step_progress(False) is False and step_progress(True) is True
    with steps_reported_to(seen.append):
        assert step_progress(False) == seen.append
        assert step_progress(True) is True  # the trainer's own bar wins
        with progress_bar(step_progress(False), "train", 4, unit="step", note="x") as bar:
            bar.update(completed=4, note="")
    assert step_progress(False) is False  # the sink ends with its block
    assert seen == ["step 0/4 · x", "step 4/4"]


def test_training_steps_of_runs_in_flight_reach_the_sweeps_progress(tmp_path):
    texts: list[str] = []
    spec = spec_dict("fitting", xs=(1, 2), seeds=(0,), steps=30, sleep=0.05)
    summary = run_sweep(spec, tmp_path / "r.db", workers=2, progress=texts.append)
    assert summary.runs_done_now == 2
    assert all(TEXT.fullmatch(t) for t in texts), texts
    steps = [t for t in texts if "· step" in t]
    assert steps, texts  # 30 steps of ≥ 0.05 s each: the parent polls every 0.2 s
    assert texts[0] == "run 0/2" and texts[-1] == "run 2/2"  # no note once nothing is in flight


def test_no_steps_without_progress_and_the_same_rows(tmp_path):
    spec = spec_dict("fitting", xs=(1,), seeds=(0, 1), steps=10, sleep=0.0)
    quiet = run_sweep(spec, tmp_path / "q.db", workers=2)
    shown = run_sweep(spec, tmp_path / "s.db", workers=2, progress=lambda text: None)
    assert quiet.runs_done_now == shown.runs_done_now == 2
    rows = []
    for db in ("q.db", "s.db"):
        with ResultsStore(tmp_path / db) as store:
            rows.append(sorted((r["run_id"], r["metrics"]["loss"]) for r in store.rows()))
    assert rows[0] == rows[1]  # forwarding steps changes nothing a run computes


def test_a_worker_that_dies_mid_training_fails_alone_and_steps_go_on(tmp_path):
    spec = spec_dict("fitting", xs=(1, 2, 3), seeds=(0,), steps=30, sleep=0.02)
    spec["include"] = [{"x": 9, "crash": True}]
    runs = load_spec(spec).runs()
    seen: list[tuple[str, str]] = []
    scheduler = LocalScheduler(2)
    finished = list(
        scheduler.run(
            resolve_runner(f"{RUNNERS}:fitting"),
            runs,
            None,
            lambda r, t: seen.append((r.run_id, t)),
        )
    )
    statuses = {run.config["x"]: outcome.status for run, outcome in finished}
    assert statuses == {1: "done", 2: "done", 3: "done", 9: "failed"}
    assert {run_id for run_id, _ in seen} <= {run.run_id for run in runs}
    assert {run_id for run_id, _ in seen} - {r.run_id for r in runs if r.config.get("crash")}


def test_nothing_admitted_ends_at_once_with_steps_on():
    """Every run leased elsewhere: nothing is in flight, and the scheduler returns (waiting on no
    run must not spin)."""
    runs = load_spec(spec_dict("fitting", xs=(1, 2), seeds=(0,))).runs()
    offered: list[str] = []

    def admit(run) -> bool:
        offered.append(run.run_id)
        return False

    runner = resolve_runner(f"{RUNNERS}:fitting")
    assert list(LocalScheduler(2).run(runner, runs, admit, lambda run, text: None)) == []
    assert offered == [run.run_id for run in runs]
