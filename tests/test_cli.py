"""The command contract: one JSON object with --json, exit 2 + one line for bad input, never a
traceback."""

import json

import numpy as np
import pytest

from headcount.core.model.files import load_model
from tests.cli_run import run


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    assert len(out.strip().splitlines()) == 1
    return json.loads(out)


def test_solve(capsys):
    result = run_json(capsys, "induction", "solve", "--input", "3 0 2 3 0 2")
    assert result["outputs"] == ["⊥", "⊥", "⊥", "0", "2", "3"]
    result = run_json(capsys, "induction", "solve", "--input", "1 2 1 2 1", "--hops", "2")
    assert result["outputs"] == ["⊥", "⊥", "⊥", "2", "1"]  # e.g. pos 5: find→4, find(4)→3, σ_3 = 1


@pytest.mark.parametrize("layers", ["1", "2"])
def test_predict_construction_matches_solver(capsys, layers):
    seq = "3 0 2 3 0 2 1 3"
    want = run_json(capsys, "induction", "solve", "--input", seq)["outputs"]
    got = run_json(
        capsys, "induction", "predict", "--layers", layers, "--alphabet", "4", "--input", seq
    )
    assert got["outputs"] == want and got["precision"] == "float64"
    got = run_json(
        capsys,
        "induction",
        "predict",
        "--layers",
        layers,
        "--alphabet",
        "4",
        "--input",
        seq,
        "--precision",
        "fixed:12",
    )
    assert got["outputs"] == want


def test_construct_then_certify_and_predict_from_file(capsys, tmp_path):
    path = tmp_path / "two.safetensors"
    built = run_json(
        capsys,
        "induction",
        "construct",
        "--layers",
        "2",
        "--n",
        "6",
        "--alphabet",
        "3",
        "--out",
        str(path),
    )
    assert built == {
        "path": str(path),
        "layers": 2,
        "heads": [2, 1],
        "dim": 19,
        "n": 6,
        "alphabet": 3,
    }
    assert load_model(path).heads_per_layer == [2, 1]
    cert = run_json(
        capsys, "induction", "certify", "--model", str(path), "--n", "6", "--alphabet", "3"
    )
    for key in (
        "task",
        "hops",
        "layers",
        "heads",
        "dim",
        "n",
        "alphabet",
        "exhaustive",
        "inputs_checked",
        "positions_checked",
        "errors",
        "precision_bits",
        "errors_at_precision_bits",
        "dtypes_exact",
        "size",
        "float32_exact",
        "bfloat16_exact",
    ):
        assert key in cert
    assert cert["task"] == "induction" and cert["exhaustive"] and cert["inputs_checked"] == 729
    assert cert["errors"] == 0 and cert["size"] == 3 * 19 * cert["precision_bits"]


def test_certify_one_layer_sampled(capsys):
    cert = run_json(
        capsys,
        "induction",
        "certify",
        "--layers",
        "1",
        "--n",
        "64",
        "--alphabet",
        "3",
        "--samples",
        "8",
        "--seed",
        "5",
    )
    assert cert["layers"] == 1 and cert["heads"] == [1] and cert["dim"] == 65
    assert not cert["exhaustive"] and cert["errors"] == 0 and cert["certified"]


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["induction", "certify", "--layers", "2", "--n", "6", "--alphabet", "1"], "alphabet"),
        (["induction", "certify", "--layers", "2", "--n", "0", "--alphabet", "2"], "--n 0"),
        (["induction", "certify", "--layers", "2", "--n", "3", "--alphabet", "5"], "alphabet ≤ n"),
        (["induction", "certify", "--layers", "3", "--n", "6", "--alphabet", "2"], "--layers 3"),
        (
            [
                "induction",
                "certify",
                "--layers",
                "2",
                "--n",
                "6",
                "--alphabet",
                "2",
                "--frobnicate",
            ],
            "--frobnicate",
        ),
        (["induction", "certify", "--n", "6", "--alphabet", "2"], "--model"),
        (
            [
                "induction",
                "certify",
                "--layers",
                "2",
                "--n",
                "6",
                "--alphabet",
                "2",
                "--samples",
                "0",
            ],
            "--samples",
        ),
        (
            ["induction", "predict", "--layers", "2", "--alphabet", "3", "--input", "0 x"],
            "non-integer",
        ),
        (
            ["induction", "predict", "--layers", "2", "--alphabet", "3", "--input", "0 7"],
            "alphabet",
        ),
        (
            [
                "induction",
                "predict",
                "--layers",
                "2",
                "--alphabet",
                "3",
                "--input",
                "0 1",
                "--precision",
                "fixed:0",
            ],
            "fixed:p",
        ),
        (
            ["induction", "predict", "--model", "/nonexistent/m.safetensors", "--input", "0 1"],
            "does not exist",
        ),
        (["induction", "solve", "--input", "0 -1"], "negative"),
        (["induction", "solve", "--input", "0 1", "--hops", "-1"], "hops"),
        (["reproduce", "--scale", "huge"], "quick or full"),
        (["induction", "certify", "--layers", "1", "--n", "4096", "--alphabet", "64"], "GiB"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0]
    assert "Traceback" not in err


def test_bad_model_file_exits_2(capsys, tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_text("not a model")
    code, _, err = run(
        capsys, "induction", "certify", "--model", str(bad), "--n", "4", "--alphabet", "2"
    )
    assert code == 2 and "safetensors" in err and len(err.strip().splitlines()) == 1


def test_protocol_on_random_and_constructed_models(capsys, tmp_path):
    report = run_json(
        capsys,
        "induction",
        "protocol",
        "--k",
        "5",
        "--random-model",
        "3",
        "--heads",
        "2",
        "--dim",
        "4",
        "--precision-bits",
        "8",
    )
    for key in (
        "k",
        "n",
        "heads",
        "dim",
        "precision_bits",
        "message_bits",
        "pairs_checked",
        "agreements",
        "disagreements",
        "disagreements_explained",
    ):
        assert key in report
    assert report["n"] == 11 and report["pairs_checked"] == 2**5 * 5
    assert report["agreements"] + report["disagreements"] == report["pairs_checked"]
    assert report["disagreements_explained"] == report["disagreements"]
    path = tmp_path / "one.safetensors"
    run_json(
        capsys,
        "induction",
        "construct",
        "--layers",
        "1",
        "--n",
        "11",
        "--alphabet",
        "3",
        "--out",
        str(path),
    )
    report = run_json(
        capsys, "induction", "protocol", "--k", "5", "--model", str(path), "--precision-bits", "6"
    )
    assert report["disagreements"] == 0 and report["message_bits"] >= 5


def test_refute_finds_confirmed_counterexample_and_none_for_construction(capsys, tmp_path):
    from headcount.induction.task import induction_targets

    result = run_json(
        capsys,
        "induction",
        "refute",
        "--k",
        "40",
        "--random-model",
        "0",
        "--heads",
        "1",
        "--dim",
        "2",
        "--precision-bits",
        "4",
    )
    assert result["found"] and result["position"] == 81 and len(result["input"]) == 81
    tokens = [{"0": 0, "1": 1, "?": 2}[t] for t in result["input"]]
    assert result["expected"] == str(induction_targets(tokens)[-1]) != result["model_output"]
    path = tmp_path / "one.safetensors"
    run_json(
        capsys,
        "induction",
        "construct",
        "--layers",
        "1",
        "--n",
        "13",
        "--alphabet",
        "3",
        "--out",
        str(path),
    )
    result = run_json(capsys, "induction", "refute", "--k", "6", "--model", str(path))
    assert result["found"] is False and "exhaustive" in result["searched"]["methods"]


@pytest.mark.parametrize(
    "argv,needle",
    [
        (
            [
                "induction",
                "protocol",
                "--k",
                "0",
                "--random-model",
                "1",
                "--heads",
                "1",
                "--dim",
                "2",
                "--precision-bits",
                "4",
            ],
            "--k 0",
        ),
        (["induction", "refute", "--k", "3", "--heads", "1", "--dim", "2"], "--random-model"),
        (
            [
                "induction",
                "protocol",
                "--k",
                "3",
                "--random-model",
                "1",
                "--dim",
                "2",
                "--precision-bits",
                "4",
            ],
            "--heads",
        ),
        (
            [
                "induction",
                "protocol",
                "--k",
                "3",
                "--random-model",
                "1",
                "--heads",
                "1",
                "--dim",
                "2",
                "--precision-bits",
                "0",
            ],
            "p",
        ),
    ],
)
def test_index_commands_bad_input_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and needle in err


def test_protocol_refuses_two_layer_model(capsys, tmp_path):
    path = tmp_path / "two.safetensors"
    run_json(
        capsys,
        "induction",
        "construct",
        "--layers",
        "2",
        "--n",
        "7",
        "--alphabet",
        "3",
        "--out",
        str(path),
    )
    code, _, err = run(
        capsys, "induction", "protocol", "--k", "3", "--model", str(path), "--precision-bits", "8"
    )
    assert code == 2 and "one-layer" in err


def test_minmax_certify_two_heads_and_one_head(capsys):
    result = run_json(
        capsys, "minmax", "certify", "--M", "32", "--n", "10", "--heads", "2", "--code", "compact"
    )
    for key in (
        "M",
        "n",
        "heads",
        "dim",
        "value_bits",
        "value_norm",
        "method",
        "inputs_covered",
        "errors_min",
        "errors_max",
        "margin_min",
        "margin_max",
    ):
        assert key in result
    assert (
        result["errors_min"] == 0
        and result["errors_max"] == 0
        and result["method"] == "exact-histogram"
    )
    assert (
        result["dim"] == 2 * 5 and result["inputs_covered"] == 1121099408
    )  # C(41, 10), d = 2·⌈log₂ 32⌉
    result = run_json(capsys, "minmax", "certify", "--M", "5000", "--n", "50", "--heads", "1")
    assert (
        result["method"] == "sufficient-condition"
        and result["errors_min"] == 0
        and result["errors_max"] == 0
    )
    assert isinstance(result["inputs_covered"], int) and result["inputs_covered"] > 10**100


def test_minmax_verify_exact_and_brute_agree_and_confirm(capsys, tmp_path):
    from headcount.minmax.task import min_max

    path = tmp_path / "minhead.safetensors"
    run_json(
        capsys, "minmax", "construct", "--M", "12", "--n", "5", "--heads", "1", "--out", str(path)
    )
    exact = run_json(capsys, "minmax", "verify", "--M", "12", "--n", "5", "--model", str(path))
    brute = run_json(
        capsys,
        "minmax",
        "verify",
        "--M",
        "12",
        "--n",
        "5",
        "--model",
        str(path),
        "--method",
        "brute",
    )
    assert exact["counterexample_min"] is None and brute["errors_min"] == 0  # the min head does min
    assert (
        exact["counterexample_max"] is not None and brute["errors_max"] > 0
    )  # ... and not max (Theorem 1)
    from headcount.minmax.model import load_minmax, predict

    _, got_max = predict(load_minmax(path), np.array([exact["counterexample_max"]]))
    assert got_max[0] != min_max(np.array([exact["counterexample_max"]]))[1][0]


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["minmax", "certify", "--M", "1", "--n", "4", "--heads", "2"], "M ≥ 2"),
        (["minmax", "certify", "--M", "8", "--n", "4", "--heads", "3"], "--heads 3"),
        (["minmax", "certify", "--M", "8", "--n", "4", "--heads", "2", "--code", "gray"], "--code"),
        (["minmax", "verify", "--M", "8", "--n", "4", "--random-model", "1"], "--dim"),
        (
            [
                "minmax",
                "verify",
                "--M",
                "8",
                "--n",
                "4",
                "--random-model",
                "1",
                "--dim",
                "2",
                "--method",
                "magic",
            ],
            "--method",
        ),
        (
            [
                "minmax",
                "verify",
                "--M",
                "200",
                "--n",
                "200",
                "--random-model",
                "1",
                "--dim",
                "2",
                "--method",
                "brute",
            ],
            "brute",
        ),
    ],
)
def test_minmax_bad_input_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and needle in err


def test_minmax_verify_reports_lower_bound_quantities_and_search(capsys, tmp_path):
    path = tmp_path / "minhead.safetensors"
    run_json(
        capsys, "minmax", "construct", "--M", "10", "--n", "7", "--heads", "1", "--out", str(path)
    )
    result = run_json(capsys, "minmax", "verify", "--M", "10", "--n", "7", "--model", str(path))
    run = result["monotone_run"]
    assert (
        run["length_non_increasing"] == 10 and run["obstructs"] == "max"
    )  # the min head's α decreases
    assert result["lemma6"]["N"] == min(1 + 3, (7 - 1) // 2) and result["lemma6"]["p"] == 0
    search = run_json(
        capsys,
        "minmax",
        "search",
        "--M",
        "12",
        "--n",
        "5",
        "--dim",
        "2",
        "--restarts",
        "1",
        "--steps",
        "5",
    )
    assert set(search["results"]) == {"1", "2"}
    for summary in search["results"].values():
        assert summary["succeeded"] or summary["all_failed_confirmed"]


def test_boolean_commands(capsys):
    r = run_json(
        capsys,
        "boolean",
        "construct",
        "--function",
        "xor",
        "--n",
        "12",
        "--degree",
        "4",
        "--heads",
        "3",
    )
    for key in (
        "function",
        "n",
        "threshold_degree",
        "degree",
        "heads",
        "dim",
        "dim_bound",
        "route",
        "certified",
        "weights_checked",
        "errors",
        "min_abs_margin",
        "float64_errors",
    ):
        assert key in r
    assert (
        r["certified"]
        and r["errors"] == 0
        and r["weights_checked"] == 13
        and r["dim"] <= r["dim_bound"]
    )
    r = run_json(capsys, "boolean", "threshold-degree", "--function", "mod:3", "--n", "7")
    assert r == {
        "function": "mod:3",
        "n": 7,
        "threshold_degree": 5,
        "method": "symmetric",
        "witness": None,
    }  # + - - + - - + -
    r = run_json(capsys, "boolean", "threshold-degree", "--truth-table", "0110")
    assert r["threshold_degree"] == 2 and r["method"] == "lp" and r["witness"]
    assert r["lower_bound_certified"] and r["dual_certificate"]["degree"] == 1
    r = run_json(
        capsys, "boolean", "basis", "--degree", "3", "--heads", "16", "--range", "48", "--optimal"
    )
    assert r["optimal"] and r["range_reached"] >= 48 and r["size"] == 6
    assert run_json(capsys, "boolean", "stamps", "--degree", "2", "--size", "3")["range"] == 8


def test_boolean_construct_out_and_check(capsys, tmp_path):
    path = str(tmp_path / "xor.safetensors")
    r = run_json(
        capsys,
        "boolean",
        "construct",
        "--function",
        "xor",
        "--n",
        "8",
        "--degree",
        "2",
        "--heads",
        "4",
        "--out",
        path,
    )
    assert r["certified"] and r["model_path"] == path
    c = run_json(
        capsys, "boolean", "check", "--model", path, "--function", "xor"
    )  # n from the file
    assert c["certified"] and c["errors"] == 0 and c["wrong_input"] is None and c["n"] == 8
    assert c["theorem2"] == {"degree_R": 8, "bound": 8, "degree_ok": True, "signs_match": True}
    # the same model against another target: wrong, with a concrete wrong input that really is wrong
    c = run_json(capsys, "boolean", "check", "--model", path, "--function", "majority")
    assert not c["certified"] and c["errors"] > 0
    x = c["wrong_input"]["x"]
    assert len(x) == 8 and c["wrong_input"]["model_sign"] != c["wrong_input"]["target"]
    # read at another length: the file's heads work for any n
    c = run_json(capsys, "boolean", "check", "--model", path, "--function", "xor", "--n", "9")
    assert (
        c["below_bound"] and not c["certified"] and c["wrong_input"] is not None
    )  # D·H = 8 < 9: Theorem 2


@pytest.mark.parametrize(
    "argv,needle",
    [
        (
            [
                "boolean",
                "construct",
                "--function",
                "xor",
                "--n",
                "8",
                "--degree",
                "3",
                "--heads",
                "2",
            ],
            "heads ≥ 3",
        ),
        (
            [
                "boolean",
                "construct",
                "--function",
                "xor",
                "--n",
                "0",
                "--degree",
                "3",
                "--heads",
                "2",
            ],
            "n must be ≥ 1",
        ),
        (
            [
                "boolean",
                "construct",
                "--function",
                "frob",
                "--n",
                "4",
                "--degree",
                "3",
                "--heads",
                "2",
            ],
            "frob",
        ),
        (
            [
                "boolean",
                "construct",
                "--function",
                "xor",
                "--n",
                "4",
                "--degree",
                "0",
                "--heads",
                "2",
            ],
            "degree must be ≥ 1",
        ),
        (["boolean", "threshold-degree", "--truth-table", "011"], "power"),
        (
            ["boolean", "check", "--model", "/nonexistent.safetensors", "--function", "xor"],
            "does not exist",
        ),
        (["boolean", "basis", "--degree", "2", "--heads", "3", "--range", "7"], "degree·heads"),
    ],
)
def test_boolean_bad_input_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and needle in err
