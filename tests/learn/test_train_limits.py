"""Issue 13, point 2 for `headcount train` (and run_config, so sweeps): every option has a
documented bound checked before any model is built — memory (--max-memory), compute
(TRAIN_FLOPS_LIMIT), --steps, --seed, --lr, --hops ≤ n, the min/max evaluation — and a refusal is
exit 2 with one line naming the bound and the option. `train induction --alphabet 10⁶` reached 3.4
GB and died in torch; `--steps 10⁹` hung."""

from __future__ import annotations

import re

import numpy as np
import pytest

from headcount.cli import train as cli_train
from headcount.common.errors import InputError
from headcount.common.resources import memory_limit_of
from headcount.induction import task as itask
from headcount.learn import evaluate as ev
from headcount.learn.models import SequenceConfig, costs
from headcount.learn.train import run_config, train_boolean, train_induction, train_minmax
from tests import cli_run
from tests.cli_run import run

HUGE = ["1000000000", "1000000000000", str(2**63), str(2**64), "1" + "0" * 100]


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize(
    ("task", "option"),
    [
        ("induction", "--alphabet"),
        ("induction", "--n"),
        ("induction", "--dim"),
        ("induction", "--heads"),
        ("induction", "--layers"),
        ("minmax", "--M"),
        ("minmax", "--n"),
        ("minmax", "--dim"),
        ("minmax", "--heads"),
        ("boolean", "--degree"),
        ("boolean", "--heads"),
        ("boolean", "--dim"),
    ],
)
def test_huge_sizes_are_refused_by_the_memory_estimate(capsys, task, option, value):
    err = refused(capsys, task, option, value)
    if task == "minmax" and option in ("--M", "--n") and "too large" in err:
        assert (
            option in err
        )  # minmax.task.check_sizes bounds M and n first (the minmax commands' bound)
    else:
        assert "needs about" in err and "--max-memory" in err, err


def test_the_issue_examples(capsys):
    refused(
        capsys, "induction", "--alphabet", "1000000", needles=("alphabet 1000000", "--max-memory")
    )
    refused(capsys, "induction", "--steps", "1000000000", needles=("--steps", "0..10000000"))
    refused(capsys, "boolean", "--n", "1000000000", needles=("1000000", "--n"))


def test_compute_is_bounded_even_with_memory_to_spare(capsys):
    err = refused(
        capsys,
        "induction",
        "--steps",
        "10000000",
        "--max-memory",
        "1P",
        needles=("floating-point operations", "--steps"),
    )
    assert f"{costs.TRAIN_FLOPS_LIMIT:.3g}" in err
    refused(
        capsys,
        "induction",
        "--alphabet",
        "1000000",
        "--max-memory",
        "1P",
        needles=("floating-point",),
    )
    refused(
        capsys,
        "boolean",
        "--n",
        "1000000",
        "--steps",
        "10000000",
        "--max-memory",
        "1P",
        needles=("floating-point",),
    )
    refused(
        capsys,
        "boolean",
        "--dim",
        "12",
        "--degree",
        "12",
        "--max-memory",
        "1P",
        needles=("word operations of exact arithmetic", "--degree"),
    )  # checking the exported model


@pytest.mark.parametrize("value", ["1000000000", "17"])
def test_hops_beyond_n_are_refused(capsys, value):
    refused(capsys, "induction", "--hops", value, needles=("--hops ≤ n", "n = 16"))


def test_hops_beyond_n_answer_like_hop_n():
    """Why --hops ≤ n: each hop moves to an earlier position or stays, so hop k ≥ n is hop n
    (literal definition, random inputs with many repeats)."""
    rng = np.random.default_rng(13)
    for n in (1, 2, 3, 5, 8):
        for seq in rng.integers(0, 3, size=(30, n)):
            want = itask.induction_targets_literal(list(seq), n)
            for k in (n + 1, n + 3, 4 * n):
                assert itask.induction_targets_literal(list(seq), k) == want


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0", "100", "1e308"])
def test_learning_rate_bounds(capsys, value):
    for task in ("induction", "minmax", "boolean"):
        refused(capsys, task, "--lr", value, needles=("--lr",))


@pytest.mark.parametrize("value", ["-1", str(2**63), str(2**64), "1" + "0" * 100])
def test_seed_bounds(capsys, value):
    for task in ("induction", "minmax", "boolean"):
        refused(capsys, task, "--seed", value, needles=("--seed", str(costs.MAX_SEED)))


@pytest.mark.parametrize("value", ["-1", "10000001", str(2**64)])
def test_steps_bounds(capsys, value):
    for task in ("induction", "minmax", "boolean"):
        refused(capsys, task, "--steps", value, needles=("--steps", "10000000"))


def test_minmax_evaluation_is_bounded(capsys):
    err = refused(capsys, "minmax", "--M", "1000", needles=("exact evaluation", "--M"))
    assert f"{costs.MINMAX_EVAL_LIMIT:.3g}" in err
    inputs, exhaustive = costs.minmax_eval_inputs(
        10**12, 10**9, ev.MINMAX_EXHAUSTIVE, ev.MINMAX_SAMPLE
    )
    assert (inputs, exhaustive) == (ev.MINMAX_SAMPLE, False)  # decided without a huge binomial
    assert costs.minmax_eval_inputs(8, 4, ev.MINMAX_EXHAUSTIVE, ev.MINMAX_SAMPLE) == (330, True)
    assert costs.minmax_eval_inputs(630, 2, ev.MINMAX_EXHAUSTIVE, ev.MINMAX_SAMPLE) == (
        198765,
        True,
    )


def test_out_is_checked_before_training(capsys, tmp_path):
    for task in ("induction", "minmax", "boolean"):
        refused(capsys, task, "--out", str(tmp_path), needles=("--out", "folder"))
        refused(capsys, task, "--out", str(tmp_path / "no" / "m.safetensors"), needles=("--out",))


def test_the_library_refuses_the_same_for_sweeps():
    for config in (
        {"task": "induction", "alphabet": 10**6},
        {"task": "khop", "hops": 100, "n": 16},
        {"task": "minmax", "M": 10**12},
        {"task": "boolean", "n": 10**9},
        {"task": "boolean", "seed": -1},
        {"task": "induction", "steps": 10**9},
        {"task": "induction", "batch": 10**9},
        {"task": "minmax", "lr": float("nan")},
    ):
        with pytest.raises(InputError):
            run_config(config)
    with memory_limit_of("1M"), pytest.raises(InputError, match="max_memory"):
        train_induction(steps=1)
    with pytest.raises(InputError, match="integer"):
        train_minmax(steps=1.5)
    with pytest.raises(InputError, match="integer"):
        train_boolean(seed=True)


def _induction_cost(layers, heads, dim, n, alphabet, hops=1, mlp=False) -> tuple[float, float]:
    hop_token = hops > 1
    cfg = SequenceConfig(
        vocab=alphabet + hops * hop_token,
        alphabet=alphabet,
        n_ctx=n + hop_token,
        layers=layers,
        heads=heads,
        dim=dim,
        mlp=mlp,
    )
    family = 0 if hop_token else ev.FAMILY_SIZE * len(itask.ADVERSARIAL_FAMILIES)
    return costs.sequence_cost(cfg, 64, ev.EVAL_SIZE, hops if hop_token else 1, family), cfg


def test_every_experiment_configuration_fits_the_bounds():
    """The experiments' largest runs (learn/experiments.py, full scale) stay far inside both
    limits."""
    for layers, heads, dim, n, alphabet, hops, steps in [
        (2, 2, 32, 128, 16, 1, 2000),  # induction-depth, full
        (5, 2, 64, 32, 4, 4, 4000),  # khop, full
        (2, 1, 32, 16, 4, 1, 2000),  # the default
    ]:
        cost, _ = _induction_cost(layers, heads, dim, n, alphabet, hops)
        assert (
            cost.memory < 4 * 2**30
            and steps * cost.step_flops + cost.eval_flops < costs.TRAIN_FLOPS_LIMIT / 10
        )
    for M, n, heads, dim in [(16, 8, 2, 8), (8, 4, 1, 6)]:
        inputs, exhaustive = costs.minmax_eval_inputs(M, n, ev.MINMAX_EXHAUSTIVE, ev.MINMAX_SAMPLE)
        cost = costs.minmax_cost(M, n, heads, dim, 256, inputs, exhaustive)
        assert (
            cost.memory < 2**30
            and costs.minmax_eval_units(M, n, heads, inputs) < costs.MINMAX_EVAL_LIMIT / 5
        )
    for n, degree, heads in [(12, 6, 12), (8, 8, 8)]:
        costs.check_boolean_run(
            n, degree, heads, min(degree, 2 * max(1, (heads - 1).bit_length()) + 2), 2000
        )


def test_estimates_do_not_overflow():
    cfg = SequenceConfig(
        vocab=10**400, alphabet=10**400, n_ctx=10**400, layers=10**400, heads=1, dim=10**400
    )
    cost = costs.sequence_cost(cfg, 10**400, 2048, 10**400, 1024)
    assert cost.memory > 1e300
    assert costs.boolean_cost(10**400, 10**400, 10**400, 10**400).memory > 1e300
    assert costs.monomials(1e9, 1e9) == float("inf")
    assert costs.minmax_eval_units(10**400, 10**400, 10**400, 10**400) > 1e300


def test_help_texts_name_the_library_bounds(capsys):
    assert costs.MAX_STEPS == 10_000_000 and costs.MAX_SEED == 2**63 - 1 and costs.MAX_LR == 10.0
    assert costs.TRAIN_FLOPS_LIMIT == 1e14 and costs.MINMAX_EVAL_LIMIT == 2e8
    assert "10¹⁴" in cli_train.SIZES
    for task, needles in (
        ("induction", ("0..10,000,000", "0..2^63−1", "0 < lr ≤ 10", "1..n")),
        ("minmax", ("2·10⁸",)),
        ("boolean", ("1..1,000,000",)),
    ):
        code, out, _ = run(capsys, "train", task, "--help")
        text = " ".join(re.sub("[│╭╮╰╯─]", " ", out).split())
        assert code == 0 and all(needle in text for needle in needles), (task, text)


def refused(capsys, *argv: str, needles: tuple[str, ...] = ()) -> str:
    """`headcount train argv…` refused (tests/cli_run.refused): nothing was trained."""
    return cli_run.refused(capsys, "train", *argv, needles=needles)
