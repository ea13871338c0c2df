"""Runner functions for the sweep tests (config dict -> metrics dict), registered on import as
"tests.learn.sweep_runners:<name>" (headcount.learn.sweep.register_runner: a sweep file can only
name a registered runner); worker processes receive them by reference and import this module when
the repository root is on the path.

They do small real work — the induction reference solver on a seeded input — so metrics depend on
the config and the seed, and optionally sleep, log each execution, fail, or kill their worker."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from headcount.learn.sweep import register_runner


def _log_execution(config: dict) -> None:
    log_dir = config.get("log_dir")
    if log_dir:
        name = f"{config.get('x')}-{config['seed']}"
        fd = os.open(Path(log_dir) / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)


def solve(config: dict) -> dict:
    """Induction targets of a seeded random sequence of length n over an alphabet of x + 2
    tokens."""
    from headcount.induction.task import induction_targets

    _log_execution(config)
    time.sleep(float(config.get("sleep", 0.0)))
    n = int(config.get("n", 8))
    alphabet = int(config.get("x", 1)) + 2
    rng = np.random.default_rng(config["seed"])
    tokens = rng.integers(0, alphabet, size=(4, n))
    targets = induction_targets(tokens, 1)
    answered = float((targets >= 0).mean())
    return {
        "accuracy": answered,
        "solved": answered >= 0.5,
        "steps": np.int64(n * alphabet),
        "detail": {"alphabet": alphabet, "first": float(targets[0, -1])},
        "note": "text is ignored by tables",
    }


def flaky(config: dict) -> dict:
    """Fails while the file config["fail_if_exists"] exists."""
    flag = config.get("fail_if_exists")
    if flag and Path(flag).exists():
        raise ValueError(f"flag file present\nsecond line for x={config.get('x')}")
    return solve(config)


def crash(config: dict) -> dict:
    """Kills its own worker process when config["crash"] is true."""
    if config.get("crash"):
        time.sleep(0.2)
        os._exit(3)
    time.sleep(float(config.get("sleep", 0.0)))
    return {"accuracy": 1.0}


def refuse_even(config: dict) -> dict:
    """Refuses (an InputError, as the trainers do for a bad key or size) the configs of even x."""
    from headcount.common.errors import InputError

    if config.get("x", 0) % 2 == 0:
        raise InputError(f"x = {config['x']} is even; this runner takes odd x")
    return solve(config)


def not_a_dict(config: dict) -> list:
    return [1, 2, 3]


def threads(config: dict) -> dict:
    """What a worker's torch and OpenMP settings are."""
    import torch

    return {"torch_threads": torch.get_num_threads(), "omp": os.environ.get("OMP_NUM_THREADS")}


def fitting(config: dict) -> dict:
    """A real training loop (headcount.learn.loop.fit, progress off) on a one-weight model, each
    step sleeping config["sleep"] seconds; kills its worker half-way when config["crash"]."""
    import torch

    from headcount.learn.loop import fit

    torch.manual_seed(config["seed"])
    weight = torch.nn.Linear(1, 1)
    steps = int(config.get("steps", 30))

    def step_loss(step: int) -> torch.Tensor:
        time.sleep(float(config.get("sleep", 0.05)))
        if config.get("crash") and step == steps // 2:
            os._exit(3)
        return (weight(torch.ones(1, 1)) ** 2).sum()

    losses = fit(weight, step_loss, steps, 0.01)
    return {"accuracy": 1.0, "loss": losses[-1]}


def sweep_when_ready(spec: dict, db: str, workers: int, barrier, results) -> None:
    """Target of a spawned process in the concurrency tests: wait for the others, run the sweep,
    report its counts (or the error) on the `results` queue."""
    from headcount.learn.sweep import run_sweep

    barrier.wait(timeout=60)
    try:
        results.put(run_sweep(spec, db, workers=workers).to_json())
    except Exception as err:  # report it to the test instead of a traceback in a child
        results.put({"error": f"{type(err).__name__}: {err}"})


for _runner in (solve, flaky, crash, refuse_even, not_a_dict, threads, fitting):
    register_runner(_runner)
