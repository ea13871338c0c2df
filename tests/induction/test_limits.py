"""Issue 13, point 2 for the induction commands: every count has a bound or a normalisation, checked
before any work, refused with exit 2 and one line naming the limit and the option (never a hang, a
memory blow-up or a traceback). Nothing here allocates the huge sizes it names: every refusal comes
from the estimates."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headcount.cli import main
from headcount.common.errors import InputError
from headcount.common.resources import memory_limit_of
from headcount.induction import outputs
from headcount.induction.certification import CERTIFY_MAX_WORK, certify_induction, plan_certify
from headcount.induction.construction import (
    MAX_TABLE_BYTES,
    evaluation_bytes,
    one_layer_induction,
    two_layer_induction,
)
from headcount.induction.lower_bound.protocol import check_protocol
from headcount.induction.lower_bound.refute import refute
from headcount.induction.lower_bound.resources import PROTOCOL_MAX_WORK, REFUTE_MAX_WORK
from headcount.induction.lower_bound.setup import MAX_PRECISION_BITS
from headcount.induction.outputs import MAX_INPUT_TOKENS, PREDICT_MAX_WORK, solve, tokens_from_text
from headcount.induction.source import ModelSource
from headcount.induction.task import effective_hops, induction_targets, induction_targets_literal
from tests.cli_run import refused, run

RANDOM = ["--random-model", "0", "--heads", "1", "--dim", "2"]


# ---------------------------------------------------------------------------------------------
# --hops: a normalisation (hops beyond n answer like hops = n), proven against the definition
# ---------------------------------------------------------------------------------------------

sequences = st.lists(st.integers(0, 3), min_size=1, max_size=14)


@settings(max_examples=300, deadline=None)
@given(seq=sequences, extra=st.integers(0, 10**30))
def test_hops_beyond_n_answer_like_hops_n(seq, extra):
    """The literal definition's chain stops moving within n − 1 hops, so every hops ≥ n − 1 answers
    alike; the fast solver answers any hops like hops = min(hops, n)."""
    n = len(seq)
    settled = induction_targets_literal(seq, max(1, n - 1))
    for hops in (n, n + 1, n + 7):
        assert induction_targets_literal(seq, hops) == settled
    assert list(induction_targets(np.array(seq), n + extra)) == settled
    assert effective_hops(n + extra, n) == n


@settings(max_examples=200, deadline=None)
@given(seq=sequences, hops=st.integers(1, 20))
def test_fast_solver_matches_the_definition_at_every_hop_count(seq, hops):
    """The repeated-squaring path (hops > 8) and the one-gather-per-hop path agree with the
    definition."""
    assert list(induction_targets(np.array(seq), hops)) == induction_targets_literal(seq, hops)
    batch = np.array([seq, seq[::-1]])
    want = [induction_targets_literal(row, hops) for row in batch.tolist()]
    assert induction_targets(batch, hops).tolist() == want


def test_hops_bound_is_tight_at_n_minus_1():
    """0 1 0 1 …: each hop moves one position back, so hops = n − 2 and n − 1 differ (no smaller
    bound)."""
    seq = [0, 1] * 5
    n = len(seq)
    assert induction_targets_literal(seq, n - 2) != induction_targets_literal(seq, n - 1)


def test_solve_hops_1e9_answers_like_hops_n_on_200k_tokens(capsys):
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 5, 200_000)
    text = " ".join(map(str, tokens))
    code, out, _ = run(
        capsys, "induction", "solve", "--input", text, "--hops", "1000000000", "--json"
    )
    assert code == 0
    huge = out.split('"outputs": ')[1]
    assert huge.startswith('["⊥"')
    want = induction_targets(tokens, len(tokens))
    got = solve(tokens, 10**9)
    assert got.hops == 10**9 and np.array_equal(got.outputs, want)
    short = refused(capsys, "induction", "solve", "--input", "1 2", "--hops", "-1")
    assert short == "error: --hops -1 must be ≥ 0"


# ---------------------------------------------------------------------------------------------
# --input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "1 2 9223372036854775808",
            "--input token 9223372036854775808 is too large: tokens are integers 0..2^63-1",
        ),
        ("1 " + "9" * 5000, "is too large: tokens are integers 0..2^63-1"),
        ("1 -2", "--input has a negative token"),
        ("1 2.5", "--input has a non-integer token '2.5'"),
        ("1 nan", "--input has a non-integer token 'nan'"),
        ("  ", "--input is empty"),
    ],
)
def test_input_tokens_are_bounded_integers(capsys, text, message):
    for command in (["solve"], ["predict", "--layers", "2", "--alphabet", "4"]):
        assert message in refused(capsys, "induction", *command, "--input", text)


def test_input_token_count_is_bounded(monkeypatch):
    assert MAX_INPUT_TOKENS == 10_000_000
    assert tokens_from_text("9223372036854775807").tolist() == [2**63 - 1]
    monkeypatch.setattr(outputs, "MAX_INPUT_TOKENS", 5)
    with pytest.raises(InputError, match=r"input has 6 tokens: allowed up to 5") as refused_:
        tokens_from_text("0 1 2 3 4 5")
    assert refused_.value.param == "input"


# ---------------------------------------------------------------------------------------------
# construct, predict
# ---------------------------------------------------------------------------------------------


def test_construct_two_layers_at_1e9_is_refused_by_the_memory_guard(capsys, tmp_path):
    out = str(tmp_path / "m.safetensors")
    line = refused(
        capsys,
        "induction",
        "construct",
        "--layers",
        "2",
        "--n",
        "1000000000",
        "--alphabet",
        "3",
        "--out",
        out,
    )
    assert line.startswith(
        "error: the 2-layer construction at --n 1000000000 --alphabet 3 needs about 432 GiB"
    )
    assert "--max-memory" in line
    assert not (tmp_path / "m.safetensors").exists()


def test_construct_one_layer_table_bound_and_memory_guard(capsys, tmp_path):
    out = str(tmp_path / "m.safetensors")
    line = refused(
        capsys,
        "induction",
        "construct",
        "--layers",
        "1",
        "--n",
        "1000000000",
        "--alphabet",
        "3",
        "--out",
        out,
    )
    assert f"allowed up to {MAX_TABLE_BYTES // 2**30} GiB" in line
    # within the table bound but beyond --max-memory: the guard names the estimate and the flag
    line = refused(
        capsys,
        "induction",
        "construct",
        "--layers",
        "1",
        "--n",
        "300",
        "--alphabet",
        "3",
        "--out",
        out,
        "--max-memory",
        "4M",
    )
    assert line.startswith(
        "error: the 1-layer construction at --n 300 --alphabet 3 needs about 8.28 MiB"
    )
    assert "the limit is 4 MiB (raise it with --max-memory SIZE" in line


def test_predict_bounds(capsys):
    line = refused(
        capsys,
        "induction",
        "predict",
        "--layers",
        "2",
        "--alphabet",
        "4",
        "--input",
        "1 2 3",
        "--n",
        "1000000000",
    )
    assert "needs about 216 GiB of memory" in line
    long_input = " ".join(["0 1 2 3"] * 50_000)  # 200k tokens: the forward pass alone is n² scores
    # the blocked passes need O(block·n) memory, so the work bound (2^27 score entries) refuses it
    line = refused(
        capsys, "induction", "predict", "--layers", "2", "--alphabet", "4", "--input", long_input
    )
    assert f"allowed up to {PREDICT_MAX_WORK:.3g} (lower the number of --input tokens)" in line
    line = refused(
        capsys,
        "induction",
        "predict",
        "--layers",
        "2",
        "--alphabet",
        "4",
        "--input",
        long_input,
        "--max-memory",
        "1P",
    )
    assert f"allowed up to {PREDICT_MAX_WORK:.3g} (lower the number of --input tokens)" in line
    assert "fixed:p needs an integer p in 1..60" in refused(
        capsys,
        "induction",
        "predict",
        "--layers",
        "2",
        "--alphabet",
        "4",
        "--input",
        "1 2",
        "--precision",
        "fixed:10000",
    )


# ---------------------------------------------------------------------------------------------
# certify
# ---------------------------------------------------------------------------------------------


def test_certify_n_1e6_is_refused_with_the_memory_estimate(capsys):
    # about 8.5 GiB since dense blocks are scored in parts: refused under a 4 GiB limit, on any
    # machine (the default limit is half of its memory)
    line = refused(
        capsys,
        "--max-memory",
        "4G",
        "induction",
        "certify",
        "--layers",
        "2",
        "--n",
        "1000000",
        "--alphabet",
        "3",
        "--samples",
        "1",
    )
    assert re.match(
        r"error: induction certify at --n 1000000 --alphabet 3 needs about [\d.]+ GiB of memory",
        line,
    )
    assert "--max-memory" in line


def test_certify_samples_are_bounded_by_the_work(capsys):
    line = refused(capsys, "induction", "certify", "--layers", "2", "--n", "30", "--alphabet", "3",
                   "--samples", "1000000000")  # fmt: skip
    assert (
        f"allowed up to {CERTIFY_MAX_WORK:.3g} (lower --samples or --n, or raise --max-work)"
        in (line)
    )
    assert "score entries per pass" in line


def test_certify_work_limit_is_raised_by_max_work(capsys):
    """--max-work raises the score-entry limit and the multiply-add limit with it: the request
    refused above is planned (and only planned: plan_certify builds nothing) under a larger one;
    a limit that is not a number ≥ 1 is refused with one line."""
    request = dict(n=30, alphabet=3, samples=10**9, source=ModelSource(layers="2"))
    with pytest.raises(InputError, match="score entries per pass"):
        plan_certify(**request)
    plan = plan_certify(**request, max_work=2.0**50)
    assert plan.max_work == 2.0**50
    with pytest.raises(InputError, match="allowed up to 1"):
        plan_certify(**(request | {"samples": 1}), max_work=1)
    for bad in (0, -1.0, math.nan, math.inf, True, "1e9"):
        with pytest.raises(InputError, match="max_work must be a number of score entries ≥ 1, got"):
            plan_certify(**request, max_work=bad)
    argv = ["induction", "certify", "--layers", "2", "--n", "4", "--alphabet", "2"]
    line = refused(capsys, *argv, "--max-work", "nan")
    assert line == "error: --max-work must be a number of score entries ≥ 1, got nan"


def test_certify_seed_and_samples_checked(capsys):
    argv = ["induction", "certify", "--layers", "2", "--n", "6", "--alphabet", "3"]
    assert refused(capsys, *argv, "--seed", "-1") == "error: --seed must be ≥ 0, got -1"
    assert refused(capsys, *argv, "--samples", "0") == "error: --samples 0 must be ≥ 1"
    with pytest.raises(InputError, match="seed must be ≥ 0") as refused_:
        certify_induction(two_layer_induction(6, 3), 6, 3, seed=-5)
    assert refused_.value.param == "seed"


def test_certify_of_a_large_model_file_is_checked_after_loading():
    model = two_layer_induction(64, 4)
    with (
        memory_limit_of("1M"),
        pytest.raises(InputError, match="induction certify at n 64 alphabet 4 needs"),
    ):
        certify_induction(model, 64, 4, samples=2)


def test_evaluation_memory_estimate_matches_the_measurement():
    """The reference algorithm certifying the two-layer construction at n = 4096 peaked at 1.7 GB on
    2 workers; the blocked one at n = 16384 (one input, both passes) at 0.23 GB RSS (measured)."""
    from headcount.core.attention import use_algorithm
    from headcount.core.certify.evaluate import WORKERS

    with use_algorithm("reference"):
        per_worker = (evaluation_bytes(4096, 19) - 9 * 4096**2) / WORKERS
    assert 0.6e9 < per_worker < 1.0e9
    assert 0.23e9 < evaluation_bytes(16384, 19) < 1.5e9
    # n = 2^20: a dense block is scored in parts (core.attention.blocks.dense_parts), so the
    # estimate no longer grows with block·n; the whole 11-input certificate peaked at 6.4 GB RSS
    assert 6.4e9 < evaluation_bytes(2**20, 19) < 10e9


# ---------------------------------------------------------------------------------------------
# protocol, refute
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["protocol", "refute"])
def test_index_k_is_bounded_by_memory(capsys, command):
    line = refused(capsys, "induction", command, "--k", "100000", *RANDOM, "--precision-bits", "6")
    # protocol: the work bound (its passes now need O(block·n) memory); refute: its own tables'
    # memory
    assert f"induction {command} at --k 100000" in line
    assert (
        ("score entries" in line)
        if command == "protocol"
        else ("needs about" in line and "TiB" in line)
    )
    line = refused(
        capsys, "induction", command, "--k", "1000000000", *RANDOM, "--precision-bits", "6"
    )
    assert line.startswith(
        "error: a random one-layer model at --k 1000000000 --heads 1 --dim 2 needs about"
    )


@pytest.mark.parametrize("command", ["protocol", "refute"])
def test_index_options_are_checked(capsys, command):
    base = ["induction", command, "--k", "6"]
    line = refused(capsys, *base, *RANDOM, "--precision-bits", "10000")
    assert f"must be at most {MAX_PRECISION_BITS}" in line and "--precision-bits" in line
    assert MAX_PRECISION_BITS == 60
    assert "must be at most 60" in refused(capsys, *base, *RANDOM, "--precision-bits", "61")
    assert refused(capsys, *base, *RANDOM, "--precision-bits", "6", "--seed", "-1") == (
        "error: --seed must be ≥ 0, got -1"
    )
    line = refused(
        capsys, *base, "--random-model", "-1", "--heads", "1", "--dim", "2", "--precision-bits", "6"
    )
    assert line == "error: --random-model must be ≥ 0, got -1"
    for option in ("--heads", "--dim"):
        sizes = {"--heads": "1", "--dim": "2", option: "1000000000"}
        argv = [
            *base,
            "--random-model",
            "0",
            *[x for kv in sizes.items() for x in kv],
            "--precision-bits",
            "6",
        ]
        line = refused(capsys, *argv)
        assert (
            line.startswith("error: a random one-layer model at --k 6") and "--max-memory" in line
        )


def test_protocol_pairs_bounded_by_the_work(capsys):
    line = refused(capsys, "induction", "protocol", "--k", "30", *RANDOM, "--precision-bits", "6",
                   "--pairs", "1000000000000")  # fmt: skip
    assert f"allowed up to {PROTOCOL_MAX_WORK:.3g} (lower --k or --pairs)" in line


def test_index_library_checks():
    model = one_layer_induction(9, 3)
    with pytest.raises(InputError, match="seed must be ≥ 0") as refused_:
        check_protocol(model, 4, 5, seed=-1)
    assert refused_.value.param == "seed"
    with pytest.raises(InputError, match="seed must be ≥ 0"):
        refute(model, 4, 5, seed=-1)
    with (
        memory_limit_of("1M"),
        pytest.raises(InputError, match="induction refute at k 4 needs about"),
    ):
        refute(model, 4, 5)
    assert REFUTE_MAX_WORK == PROTOCOL_MAX_WORK == 2**32


def test_protocol_progress_bar_changes_nothing(capsys):
    model = one_layer_induction(9, 3)
    quiet, shown = (
        check_protocol(model, 4, 5).to_json(),
        check_protocol(model, 4, 5, progress=True).to_json(),
    )
    quiet.pop("seconds"), shown.pop("seconds")
    assert quiet == shown


# ---------------------------------------------------------------------------------------------
# The bounds are stated in each option's --help
# ---------------------------------------------------------------------------------------------


def test_help_texts_state_the_bounds(capsys):
    def help_of(command: str) -> str:
        code, out, _ = run(capsys, "induction", command, "--help")
        assert code == 0
        return " ".join(out.replace("│", " ").split())

    assert "10,000,000" in help_of("solve") and "answer like hops = n" in help_of("solve")
    assert f"{MAX_INPUT_TOKENS:,}" == "10,000,000"
    assert CERTIFY_MAX_WORK == 2**38 and "2^38 score entries" in help_of("certify")
    assert PREDICT_MAX_WORK == 2**27 and "2^27 score entries" in help_of("predict")
    assert "4 GiB" in help_of("construct") and MAX_TABLE_BYTES == 4 * 2**30
    protocol = help_of("protocol")
    assert (
        "1 ≤ p ≤ 60" in protocol
        and "2^32 score entries" in protocol
        and "any integer ≥ 0" in protocol
    )
    assert "1 ≤ p ≤ 60" in help_of("refute")


def test_index_context_is_checked_before_the_estimates(capsys, tmp_path):
    path = str(tmp_path / "one.safetensors")
    assert (
        run(
            capsys,
            "induction",
            "construct",
            "--layers",
            "1",
            "--n",
            "9",
            "--alphabet",
            "3",
            "--out",
            path,
        )[0]
        == 0
    )
    for command in ("protocol", "refute"):
        line = refused(
            capsys,
            "induction",
            command,
            "--k",
            "1000000000",
            "--model",
            path,
            "--precision-bits",
            "6",
        )
        assert line == (
            "error: INDEX with k=1000000000 needs n = 2k+1 = 2000000001 positions; the model's "
            "context is 9"
        )


def test_random_model_options_with_a_model_file_are_a_contradiction(tmp_path, capsys):
    from headcount.core.model.files import save_model
    from headcount.core.model.table import random_table

    path = tmp_path / "one.safetensors"
    save_model(random_table(np.random.default_rng(0), 9, 3, 1, 2), path)
    for command in ("protocol", "refute"):
        with pytest.raises(SystemExit) as info:
            main(
                [
                    "induction",
                    command,
                    "--k",
                    "4",
                    "--model",
                    str(path),
                    "--heads",
                    "3",
                    "--precision-bits",
                    "8",
                ]
            )
        err = capsys.readouterr().err
        assert info.value.code == 2 and "--heads and --dim describe the random model" in err
