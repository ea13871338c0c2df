"""`headcount induction certify --hops k --layers auto`: the k-hop construction certified like any
model (issue 16, point 3) — exhaustive on small Σ^n, sampled with the k-hop families otherwise;
depth checks."""

from __future__ import annotations

import json

import pytest

from headcount.common.errors import InputError
from headcount.induction.certification import certify_induction
from headcount.induction.multihop.families import KHOP_FAMILIES
from headcount.induction.source import ModelSource
from tests.cli_run import refused, run


@pytest.mark.parametrize("layers", ["auto", "3"])
def test_exhaustive_certificate_of_the_two_hop_construction(capsys, layers):
    code, out, err = run(
        capsys,
        "induction",
        "certify",
        "--hops",
        "2",
        "--layers",
        layers,
        "--n",
        "6",
        "--alphabet",
        "2",
        "--json",
    )
    assert code == 0, err
    got = json.loads(out)
    assert (got["hops"], got["layers"], got["heads"], got["dim"]) == (2, 3, [2, 1, 1], 28)
    assert (got["scope"], got["inputs_checked"], got["errors"], got["certified"]) == (
        "exhaustive",
        64,
        0,
        True,
    )


def test_sampled_certificate_checks_the_khop_families():
    result = certify_induction(ModelSource(layers="auto"), 24, 4, samples=8, seed=1, hops=4)
    cert = result.certificate
    assert (result.layers, cert.errors, cert.certified, result.exhaustive) == (4, 0, True, False)
    assert set(KHOP_FAMILIES) <= set(result.to_json()["families"])


def test_hop_one_keeps_todays_constructions():
    auto = certify_induction(ModelSource(layers="auto"), 5, 2, hops=1)
    two = certify_induction(ModelSource(layers=2), 5, 2, hops=1)
    assert auto.to_json() | {"seconds": None} == two.to_json() | {"seconds": None}


def test_refusals(capsys):
    refused(
        capsys,
        "induction",
        "certify",
        "--hops",
        "3",
        "--layers",
        "3",
        "--n",
        "6",
        "--alphabet",
        "2",
        needles=("--layers 3 does not fit --hops 3", "4 layers"),
    )
    refused(
        capsys,
        "induction",
        "certify",
        "--hops",
        "2",
        "--layers",
        "two",
        "--n",
        "6",
        "--alphabet",
        "2",
        needles=("--layers 'two'", "auto"),
    )
    refused(
        capsys,
        "induction",
        "certify",
        "--hops",
        "2",
        "--layers",
        "auto",
        "--layout",
        "hop-prefix",
        "--n",
        "6",
        "--alphabet",
        "2",
        needles=("--max-hops",),
    )
    with pytest.raises(InputError, match="alphabet ≤ n"):
        certify_induction(ModelSource(layers="auto"), 4, 6, hops=2)
