"""Certificates spread over workers (core.certify.distributed, cluster): the replay of the workers'
chunk results gives the one process's certificate (every field but the seconds) on streams built to
break a naive merge — a candidate that rises after the first chunk, rejections at every p, the
exact evaluator's budget running out mid-stream (results then recomputed by the coordinator), and
the hostile families of the fast paths; on a real Ray head, with a worker SIGKILLed mid-run, the
command's certificate is the local command's; bad executor options are one line, exit 2."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from headcount.core.attention import use_algorithm
from headcount.core.certify import (
    InProcess,
    WorkBudget,
    certify_model,
    certify_spread,
    same_certificate,
    task_worker_pids,
)
from headcount.core.certify.evaluate import EXACT_WORK_LIMIT
from headcount.core.passes.exact_fixed import exact_fixed_predict
from headcount.induction.certification import EXHAUSTIVE_CHUNK
from headcount.induction.task import AllSequences, all_sequences, induction_targets
from tests.cli_run import refused
from tests.core.checkpoint_run import N, S, model_named
from tests.ray_head import BACKSTOP_S, REPO, driver_env, ray_head_started
from tests.soundness.fast_paths import FAMILIES


def _both(model, inputs, reference, workers=2):
    with np.errstate(all="ignore"):
        one = certify_model(model, inputs, reference)
        spread, stats = certify_spread(model, inputs, reference, InProcess(workers))
    return one, spread, stats


def _rising_stream():
    """Constant sequences first (proven at a small p), then all of Σ^N: the candidate rises at
    chunk 1 and later, so the proof restarts with chunks re-guessed."""
    tokens = all_sequences(N, S)
    constant = tokens[(tokens == tokens[:, :1]).all(axis=1)]

    def inputs():
        yield "constant", constant
        for start in range(0, len(tokens), 200):
            yield "all", tokens[start : start + 200]

    return inputs


@pytest.mark.parametrize("name", ["right", "wrong"])
@pytest.mark.parametrize("workers", [1, 3])
def test_replay_gives_the_one_process_certificate_when_the_candidate_rises(name, workers):
    one, spread, stats = _both(model_named(name), _rising_stream(), induction_targets, workers)
    assert same_certificate(one, spread)
    assert one.rejected  # rejections at several p, in stream order
    if name == "right":
        assert stats.rises == 1 and one.certified
    assert stats.tasks > 0


@pytest.fixture
def small_budget(monkeypatch):
    """WorkBudget() (the proof's, and each worker's) holds `limit` score entries."""

    def set_limit(limit: int) -> None:
        monkeypatch.setattr(WorkBudget.__init__, "__defaults__", (limit, False))

    yield set_limit
    monkeypatch.setattr(WorkBudget.__init__, "__defaults__", (EXACT_WORK_LIMIT, False))


@pytest.mark.parametrize("family", ["tie-settling", "exact-logit-ties", "prefix-sharing"])
@pytest.mark.parametrize("seed", range(2))
def test_replay_on_hostile_families_with_budgets_that_run_out(family, seed, small_budget):
    """Chunks of a fast-path family, the target the exact fixed:p outputs at p, p + 2 or p + 4 by
    chunk (so chunks disagree on p); budgets from none left to plenty."""
    case = FAMILIES[family](np.random.default_rng(100 + seed))
    rows = max(1, len(case.tokens) // 6)
    chunks = [case.tokens[i : i + rows] for i in range(0, len(case.tokens), rows)]
    targets = {
        chunk.tobytes(): exact_fixed_predict(case.model, chunk, min(60, case.bits + 2 * (k % 3)))
        for k, chunk in enumerate(chunks)
    }

    def inputs():
        for chunk in chunks:
            yield family, chunk

    for limit in (0, 2_000, 20_000, EXACT_WORK_LIMIT):
        small_budget(limit)
        one, spread, _ = _both(case.model, inputs, lambda t: targets[t.tobytes()])
        assert same_certificate(one, spread), (family, seed, limit)


def test_a_budget_that_runs_out_mid_stream_is_replayed_by_the_coordinator(small_budget):
    """Each chunk needs the exact evaluator; once the stream's budget is short of what a chunk's
    fresh budget spent, the coordinator recomputes that chunk itself (fallbacks)."""
    case = FAMILIES["prefix-sharing"](np.random.default_rng(1))
    chunks = np.array_split(case.tokens, 7)

    def inputs():
        for chunk in chunks:
            yield "f", chunk

    def reference(tokens):
        return exact_fixed_predict(case.model, tokens, case.bits)

    small_budget(2_000)
    one, spread, stats = _both(case.model, inputs, reference)
    assert same_certificate(one, spread)
    if one.exact_positions and one.uncertified_positions:
        assert stats.fallbacks > 0


def test_the_reference_algorithm_is_refused_for_a_spread_certificate():
    from headcount.induction.certification import certify_induction
    from headcount.induction.construction import two_layer_induction

    with use_algorithm("reference"), pytest.raises(Exception, match="streaming pass"):
        certify_induction(two_layer_induction(5, 2), 5, 2, executor="ray", workers=1)


def test_all_sequences_chunks_are_the_stream_s():
    stream = AllSequences(9, 4, EXHAUSTIVE_CHUNK)  # 262144 sequences: 8 chunks
    whole = list(stream())
    assert len(whole) == 8
    for start, stop in [(0, 1), (3, 5), (7, 8), (6, 20), (8, 9)]:
        part = list(stream.chunks(start, stop))
        expected = list(itertools.islice(whole, start, stop))
        assert [f for f, _ in part] == [f for f, _ in expected]
        assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(part, expected))


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--executor", "slurm"], "--executor 'slurm' is not available: use local or ray"),
        (["--workers", "2"], "--workers is for the Ray executor"),
        (["--address", "h:1"], "--address is for the Ray executor"),
        (["--executor", "ray", "--workers", "0"], "--workers must be ≥ 1"),
    ],
)
def test_bad_executor_options_are_one_line(argv, needle, capsys):
    base = ["induction", "certify", "--layers", "2", "--n", "5", "--alphabet", "2"]
    refused(capsys, *base, *argv, needles=(needle,))


# --------------------------------------------------------------------------------------------------
# A real Ray head: a worker killed mid-run


CERTIFY = ["induction", "certify", "--layers", "2", "--n", "9", "--alphabet", "4", "--json"]
DRIVER = "import sys; from headcount.cli import main; main(sys.argv[1:])"


@pytest.fixture(scope="module")
def ray_head() -> Iterator[tuple[str, str]]:
    pytest.importorskip("ray")
    with ray_head_started() as head:
        yield head


def _kill_first_task(killed: list, stop: threading.Event) -> None:
    while not stop.is_set():
        pids = task_worker_pids()
        if pids:
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
            return
        time.sleep(0.02)


def _run(argv: list[str], env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, *argv], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=BACKSTOP_S,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.count("\n") == 1, (done.stdout, done.stderr)
    record = json.loads(done.stdout)
    record.pop("seconds")
    return record


def test_on_a_ray_head_a_killed_worker_is_survived_with_the_local_certificate(ray_head):
    address, token = ray_head
    local = _run(CERTIFY, driver_env())
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_first_task, args=(killed, stop), daemon=True)
    killer.start()
    try:
        env = driver_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
        spread = _run([*CERTIFY, "--executor", "ray", "--address", address], env)
    finally:
        stop.set()
        killer.join(5)
    assert killed, "no certificate task was seen running"
    assert spread == local
    assert local["certified"] and local["inputs_checked"] == 4**9
