"""The Boolean scenario's typed results and the library calls behind `headcount boolean …`: fields,
to_json() (the JSON the CLI prints, key order included) and the InputError every user-fixable input
raises."""

from __future__ import annotations

import pytest

from headcount.boolean.certification import (
    ConstructionCertificate,
    ModelCheck,
    check_model,
    construct_and_certify,
)
from headcount.boolean.construction import Construction, construct
from headcount.boolean.model import BooleanModel
from headcount.boolean.model_file import load_boolean, save_boolean
from headcount.boolean.search import BasisChoice, Stamps, choose_basis, stamps
from headcount.boolean.task import parse_function
from headcount.boolean.threshold import SymmetricThresholdDegree, ThresholdDegree, threshold_degree
from headcount.common.errors import InputError

CERT_KEYS = [
    "certified",
    "scope",
    "weights_checked",
    "errors",
    "wrong_input",
    "min_abs_margin",
    "float64_errors",
]


def test_construct_and_certify_json_order_and_file(tmp_path):
    path = tmp_path / "xor.safetensors"
    r = construct_and_certify("xor", 6, 2, 3, out=path)
    assert isinstance(r, ConstructionCertificate) and r.certified and r.model_path == str(path)
    head = ["function", "n", "threshold_degree", "degree", "heads", "dim", "dim_bound", "route"]
    assert list(r.to_json()) == head + CERT_KEYS + ["model_path"]
    assert "model_path" not in construct_and_certify("xor", 6, 2, 3).to_json()
    model = load_boolean(path)
    assert isinstance(model, BooleanModel) and model.info == {
        "construction": r.route,
        "function": "xor",
        "n": 6,
    }
    assert (model.layer.n_heads, model.layer.dim, model.readout.degree) == (3, r.dim, 2)
    layer, readout, info = model  # the old tuple still unpacks (one release)
    assert (layer, readout, info) == (model.layer, model.readout, model.info)
    assert model.layer.num_heads == model.layer.n_heads  # old name kept for learn/ (one release)


def test_check_model_file_and_object(tmp_path):
    path = tmp_path / "xor.safetensors"
    construct_and_certify("xor", 8, 2, 4, out=path)
    c = check_model(path, "xor")
    assert isinstance(c, ModelCheck) and c.n == 8 and c.certified and not c.below_bound
    assert (c.theorem2.degree_R, c.theorem2.bound, c.theorem2.signs_match) == (8, 8, True)
    head = ["function", "n", "threshold_degree", "degree", "heads", "dim", "below_bound"]
    assert list(c.to_json()) == head + CERT_KEYS + ["theorem2"]
    assert c.to_json()["theorem2"] == {
        "degree_R": 8,
        "bound": 8,
        "degree_ok": True,
        "signs_match": True,
    }
    longer = check_model(
        load_boolean(path), "xor", 9
    )  # a BooleanModel, read at another n: D·H = 8 < 9
    assert longer.below_bound and not longer.certified
    wrong = longer.certificate.wrong_input
    assert wrong is not None and len(wrong.x) == 9 and wrong.model_sign != wrong.target


def test_check_model_input_errors(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        check_model(tmp_path / "missing.safetensors", "xor")
    built = construct(parse_function("xor", 4), 4, 2, 2)
    assert isinstance(built, Construction) and built.route in ("factorization", "additive-basis")
    path = tmp_path / "no_n.safetensors"
    save_boolean(built.layer, built.readout, path)  # no n recorded
    with pytest.raises(InputError, match="^n N ≥ 1 is needed") as err:
        check_model(path, "xor")
    assert err.value.param == "n"
    with pytest.raises(InputError, match="unknown function"):
        check_model(path, "nand", 4)


def test_threshold_degree_results():
    s = threshold_degree("mod:3", 7)
    assert isinstance(s, SymmetricThresholdDegree) and s.threshold_degree == 5
    assert s.to_json() == {
        "function": "mod:3",
        "n": 7,
        "threshold_degree": 5,
        "method": "symmetric",
        "witness": None,
    }
    lp = threshold_degree(truth_table="0110")
    assert isinstance(lp, ThresholdDegree) and lp.method == "lp" and lp.lower_bound_certified
    assert list(lp.to_json())[:3] == ["method", "n", "threshold_degree"]
    for kwargs, needle in (
        ({}, "exactly one"),
        ({"function": "xor", "truth_table": "0110"}, "exactly one"),
        ({"function": "xor"}, "^function needs n N ≥ 1$"),
        ({"truth_table": "011"}, "power of 2"),
    ):
        with pytest.raises(InputError, match=needle):
            threshold_degree(**kwargs)


def test_choose_basis_and_stamps():
    assert choose_basis(2, 4, 8) == BasisChoice((1, 2, 3, 4), 4, 8, False)
    best = choose_basis(2, 4, 8, optimal=True)
    assert best.to_json() == {"basis": [1, 3, 4], "size": 3, "range_reached": 8, "optimal": True}
    assert stamps(2, 4) == Stamps(12, (1, 3, 5, 6))
    for args, needle in (((2, 3, 7), "degree·heads"), ((0, 3, 1), "need D, H ≥ 1")):
        with pytest.raises(InputError, match=needle):
            choose_basis(*args)
    with pytest.raises(InputError, match="positive integer"):
        stamps(0, 3)
