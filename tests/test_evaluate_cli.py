"""`headcount evaluate` (issue 14, point 5) and `induction certify --layout/--hops` (point 6) from
the command line: a model trained here is evaluated on the training run's own held-out inputs and
gives the run's numbers exactly (error = 1 − accuracy, bit for bit); the Markdown table; refusals
are one line, exit 2."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from headcount.cli import main
from tests.cli_run import refused, run

KHOP = [
    "--layers",
    "1",
    "--heads",
    "1",
    "--dim",
    "16",
    "--n",
    "8",
    "--alphabet",
    "4",
    "--hops",
    "2",
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Models written by `headcount train induction … --out` (k-hop with the hop token, and plain
    induction), with their runs' JSON."""
    folder = tmp_path_factory.mktemp("trained")
    plain = [
        "--layers",
        "2",
        "--dim",
        "16",
        "--n",
        "8",
        "--alphabet",
        "4",
        "--steps",
        "100",
        "--lr",
        "0.01",
    ]
    runs = {}
    for name, argv in {
        "khop": [*KHOP, "--steps", "200", "--lr", "0.01"],
        "induction": plain,
    }.items():
        path = folder / f"{name}.safetensors"
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
            main(["train", "induction", *argv, "--out", str(path), "--json"])
            raise SystemExit(0)
        assert (done.value.code or 0) == 0
        runs[name] = (path, json.loads(out.getvalue()))
    return runs


def _evaluate(capsys, *argv: str) -> dict:
    code, out, err = run(capsys, "evaluate", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_khop_reproduces_the_training_runs_accuracy_by_hop(capsys, trained):
    path, run_json = trained["khop"]
    metrics = run_json  # the run's JSON holds its metrics at the top level
    got = _evaluate(
        capsys,
        "--model",
        str(path),
        "--task",
        "khop",
        "--hops",
        "1..2",
        "--n",
        "8",
        "--alphabet",
        "4",
    )
    assert (got["layout"], got["samples"], got["seed"], got["precision"]) == (
        "hop-prefix",
        2048,
        20240601,
        "float64",
    )
    by_hop = {h["hops"]: h for h in got["per_hop"]}
    assert set(by_hop) == {1, 2}
    for k, accuracy in metrics["accuracy_by_hop"].items():
        hop = by_hop[int(k)]
        assert hop["error"] == 1 - accuracy  # the same inputs, the same float
        assert hop["errors"] == round((1 - accuracy) * hop["positions"])
        assert 0 < hop["error"] < 1  # a partly trained model: the comparison is not trivial
    last = by_hop[2]
    assert last["error_none"] == 1 - metrics["accuracy_bottom"]
    assert metrics["errors"] == last["errors"] + last["errors_none"]
    assert (metrics["token_positions"], metrics["bottom_positions"]) == (
        last["positions"],
        last["positions_none"],
    )


def test_induction_reproduces_the_training_runs_accuracy(capsys, trained):
    path, run_json = trained["induction"]
    metrics = run_json  # the run's JSON holds its metrics at the top level
    got = _evaluate(
        capsys, "--model", str(path), "--task", "induction", "--n", "8", "--alphabet", "4"
    )
    (hop,) = got["per_hop"]
    assert got["layout"] == "plain" and hop["hops"] == 1
    assert (hop["error"], hop["error_none"]) == (
        1 - metrics["accuracy"],
        1 - metrics["accuracy_bottom"],
    )
    assert (hop["positions"], hop["positions_none"]) == (
        metrics["token_positions"],
        metrics["bottom_positions"],
    )


def test_a_gpt2_style_model_trained_here_reproduces_its_run(capsys, tmp_path):
    """LayerNorm + GELU MLP (the k-hop paper's block), trained and exported by the CLI, then
    evaluated: the run's per-hop numbers exactly."""
    path = tmp_path / "gpt2.safetensors"
    argv = [
        "--layers",
        "2",
        "--heads",
        "2",
        "--dim",
        "16",
        "--n",
        "8",
        "--alphabet",
        "4",
        "--hops",
        "2",
    ]
    argv += ["--steps", "200", "--lr", "0.01", "--mlp", "--layernorm", "--activation", "gelu_tanh"]
    code, out, err = run(capsys, "train", "induction", *argv, "--out", str(path), "--json")
    assert code == 0, err
    metrics = json.loads(out)
    assert (metrics["mlp"], metrics["layernorm"], metrics["activation"]) == (
        True,
        True,
        "gelu_tanh",
    )
    got = _evaluate(
        capsys,
        "--model",
        str(path),
        "--task",
        "khop",
        "--hops",
        "1..2",
        "--n",
        "8",
        "--alphabet",
        "4",
    )
    assert {"gelu", "layernorm"} <= set(got["model"]["extensions"])
    assert [hop["hops"] for hop in got["per_hop"]] == [1, 2]
    for hop in got["per_hop"]:
        assert hop["error"] == 1 - metrics["accuracy_by_hop"][str(hop["hops"])]
    assert 0 < got["per_hop"][1]["error"] < 1  # partly trained: the comparison is not trivial


def test_markdown_table_without_json(capsys, trained):
    path, _ = trained["khop"]
    code, out, _ = run(
        capsys,
        "evaluate",
        "--model",
        str(path),
        "--task",
        "khop",
        "--hops",
        "1..2",
        "--n",
        "8",
        "--alphabet",
        "4",
        "--samples",
        "16",
    )
    lines = out.strip().splitlines()
    assert (
        code == 0
        and lines[0]
        == "khop, hop-prefix layout: n=8, alphabet=4, 16 samples (seed 20240601), float64"
    )
    assert lines[2:4] == [
        "| hops | error | positions | error (⊥) | positions (⊥) |",
        "|---:|---:|---:|---:|---:|",
    ]
    assert [line.split("|")[1].strip() for line in lines[4:]] == ["1", "2"]


def test_certify_in_the_hop_prefix_layout(capsys, trained):
    path, _ = trained["khop"]
    argv = ["induction", "certify", "--model", str(path), "--n", "5", "--alphabet", "4"]
    code, out, err = run(capsys, *argv, "--layout", "hop-prefix", "--hops", "2", "--json")
    assert code == 0, err
    cert = json.loads(out)
    assert (cert["layout"], cert["hops"], cert["scope"]) == ("hop-prefix", 2, "exhaustive")
    assert cert["positions_checked"] == cert["inputs_checked"] * 5 == 4**5 * 5
    assert cert["first_counterexample"]["input"][0] == 5  # the hop token of k = 2: S + k − 1
    code, out, _ = run(capsys, *argv, "--layout", "hop-prefix", "--hops", "2")
    assert code == 0 and out.startswith(f"{4**5} inputs (exhaustive)")


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--hops", "0..17"], ("--hops 0..17 is out of range", "0 ≤ a ≤ b ≤ 16")),
        (["--hops", "0..3"], ("hop count 0 has no token in headcount's own layout",)),
        (["--hops", "17"], ("--hops 17 is out of range",)),
        (["--hops", "x"], ("is not a hop count",)),
        (
            ["--layout", "diagonal"],
            ("--layout 'diagonal' is not available: use plain or hop-prefix",),
        ),
        (["--task", "induction", "--hops", "2"], ("--task induction is hop count 1",)),
        (["--task", "sorting"], ("--task 'sorting' is not available",)),
        (
            ["--hops", "1..3"],
            ("the model reads 6 input tokens; 4 symbols and 3 hop tokens need 7",),
        ),
        (
            ["--n", "9"],
            (
                "the model's context holds 9 tokens; --n 9 with --layout hop-prefix needs n + 1 = "
                "10",
            ),
        ),
        (["--samples", "0"], ("--samples must be ≥ 1",)),
        (["--seed", "-1"], ("--seed must be ≥ 0",)),
        (["--precision", "fixed:0"], ("fixed:p needs an integer p in 1..60",)),
        (["--samples", "1000000000000"], ("multiply-adds", "lower --samples, --hops or --n")),
    ],
)
def test_evaluate_refuses_bad_options(capsys, trained, args, needles):
    path, _ = trained["khop"]
    base = {"--model": str(path), "--task": "khop", "--n": "8", "--alphabet": "4"}
    base.update(dict(zip(args[::2], args[1::2])))
    argv = [item for pair in base.items() for item in pair]
    refused(capsys, "evaluate", *argv, "--json", needles=needles)


def test_evaluate_refuses_a_missing_file_and_missing_options(capsys, tmp_path):
    refused(capsys, "evaluate", "--model", str(tmp_path / "none"), "--n", "4", "--alphabet", "2")
    refused(
        capsys, "evaluate", "--n", "4", "--alphabet", "2", needles=("Missing option '--model'",)
    )


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--hops", "17"], ("--hops must be ≤ 16",)),
        (["--hops", "0"], ("--hops must be ≥ 1",)),
        (["--layout", "prefix"], ("--layout 'prefix' is not available",)),
        (
            ["--layout", "hop-prefix"],
            ("the model's context holds 4 tokens; --n 4 with --layout hop-prefix",),
        ),
    ],
)
def test_certify_refuses_bad_layout_options(capsys, args, needles):
    refused(
        capsys,
        "induction",
        "certify",
        "--layers",
        "2",
        "--n",
        "4",
        "--alphabet",
        "2",
        *args,
        needles=needles,
    )


def test_help_texts_state_the_bounds(capsys):
    from headcount.induction.certification import CERTIFY_MAX_MULTIPLY_ADDS
    from headcount.induction.layouts import EVALUATE_MAX_WORK, MAX_HOPS

    def help_of(*command: str) -> str:
        code, out, _ = run(capsys, *command, "--help")
        assert code == 0
        return " ".join(out.replace("│", " ").split())

    evaluate = help_of("evaluate")
    assert EVALUATE_MAX_WORK == 2**41 and "2^41 multiply-adds" in evaluate
    assert MAX_HOPS == 16 and "0 ≤ a ≤ b ≤ 16" in evaluate and "(≥ 0)" in evaluate
    certify = help_of("induction", "certify")
    assert CERTIFY_MAX_MULTIPLY_ADDS == 2**41 and "2^41 multiply-adds per pass" in certify
    assert "1 ≤ k ≤ 16" in certify and "hop-prefix" in certify
