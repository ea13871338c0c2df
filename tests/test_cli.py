"""The command contract: one JSON object with --json, exit 2 + one line for bad input, never a traceback."""

import json

import pytest

from headcount.cli import main
from headcount.core.io import load_model


def run(capsys, *argv):
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return exit_info.value.code or 0, out, err


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
    got = run_json(capsys, "induction", "predict", "--layers", layers, "--alphabet", "4", "--input", seq)
    assert got["outputs"] == want and got["precision"] == "float64"
    got = run_json(capsys, "induction", "predict", "--layers", layers, "--alphabet", "4", "--input", seq, "--precision", "fixed:12")
    assert got["outputs"] == want


def test_construct_then_certify_and_predict_from_file(capsys, tmp_path):
    path = tmp_path / "two.safetensors"
    built = run_json(capsys, "induction", "construct", "--layers", "2", "--n", "6", "--alphabet", "3", "--out", str(path))
    assert built == {"path": str(path), "layers": 2, "heads": [2, 1], "dim": 19, "n": 6, "alphabet": 3}
    assert load_model(path).heads == [2, 1]
    cert = run_json(capsys, "induction", "certify", "--model", str(path), "--n", "6", "--alphabet", "3")
    for key in ("task", "hops", "layers", "heads", "dim", "n", "alphabet", "exhaustive", "inputs_checked",
                "positions_checked", "errors", "precision_bits", "errors_at_precision_bits", "dtypes_exact", "size",
                "float32_exact", "bfloat16_exact"):
        assert key in cert
    assert cert["task"] == "induction" and cert["exhaustive"] and cert["inputs_checked"] == 729
    assert cert["errors"] == 0 and cert["size"] == 3 * 19 * cert["precision_bits"]


def test_certify_one_layer_sampled(capsys):
    cert = run_json(capsys, "induction", "certify", "--layers", "1", "--n", "64", "--alphabet", "3", "--samples", "8", "--seed", "5")
    assert cert["layers"] == 1 and cert["heads"] == [1] and cert["dim"] == 65
    assert not cert["exhaustive"] and cert["errors"] == 0 and cert["certified"]


@pytest.mark.parametrize("argv,needle", [
    (["induction", "certify", "--layers", "2", "--n", "6", "--alphabet", "1"], "alphabet"),
    (["induction", "certify", "--layers", "2", "--n", "0", "--alphabet", "2"], "--n 0"),
    (["induction", "certify", "--layers", "2", "--n", "3", "--alphabet", "5"], "alphabet ≤ n"),
    (["induction", "certify", "--layers", "3", "--n", "6", "--alphabet", "2"], "--layers 3"),
    (["induction", "certify", "--layers", "2", "--n", "6", "--alphabet", "2", "--frobnicate"], "--frobnicate"),
    (["induction", "certify", "--n", "6", "--alphabet", "2"], "--model"),
    (["induction", "certify", "--layers", "2", "--n", "6", "--alphabet", "2", "--samples", "0"], "--samples"),
    (["induction", "predict", "--layers", "2", "--alphabet", "3", "--input", "0 x"], "non-integer"),
    (["induction", "predict", "--layers", "2", "--alphabet", "3", "--input", "0 7"], "alphabet"),
    (["induction", "predict", "--layers", "2", "--alphabet", "3", "--input", "0 1", "--precision", "fixed:0"], "fixed:p"),
    (["induction", "predict", "--model", "/nonexistent/m.safetensors", "--input", "0 1"], "does not exist"),
    (["induction", "solve", "--input", "0 -1"], "negative"),
    (["induction", "solve", "--input", "0 1", "--hops", "0"], "hops"),
    (["reproduce", "--scale", "huge"], "quick or full"),
])
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
    code, _, err = run(capsys, "induction", "certify", "--model", str(bad), "--n", "4", "--alphabet", "2")
    assert code == 2 and "safetensors" in err and len(err.strip().splitlines()) == 1
