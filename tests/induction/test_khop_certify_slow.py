"""Issue 16's acceptance runs for the k-hop construction (hours on 2 cores in all: `python -m pytest
-m slow tests/induction/test_khop_certify_slow.py`, or pick with -k). k = 1 is the two-layer
construction, whose exhaustive runs are in test_certify_slow.py."""

import pytest

from headcount.induction.certification import EXHAUSTIVE_LIMIT, certify_induction, exhaustive_cases
from headcount.induction.multihop.construction import (
    khop_construction,
    khop_layers,
    variable_hop_construction,
)


def _certified(result, hops: int, layers: int) -> None:
    cert = result.certificate
    assert (result.hops, result.layers) == (hops, layers)
    assert cert.errors == 0 and cert.certified, result.to_json()


@pytest.mark.slow
@pytest.mark.parametrize("hops", [2, 3, 4])
@pytest.mark.parametrize("S,n", exhaustive_cases(EXHAUSTIVE_LIMIT))
def test_khop_exhaustive_certificate(S, n, hops):
    result = certify_induction(khop_construction(n, S, hops), n, S, hops=hops, dtypes=False)
    assert result.exhaustive and result.certificate.inputs_checked == S**n
    _certified(result, hops, khop_layers(hops))


@pytest.mark.slow
@pytest.mark.parametrize("hops", [1, 2, 3, 4, 5, 7, 8, 15, 16])
def test_khop_sampled_certificate_n256(hops):
    result = certify_induction(khop_construction(256, 16, hops), 256, 16, hops=hops, dtypes=False)
    _certified(result, hops, khop_layers(hops))


@pytest.mark.slow
@pytest.mark.parametrize("hops", [1, 8, 16])
def test_khop_sampled_certificate_n1024(hops):
    result = certify_induction(khop_construction(1024, 16, hops), 1024, 16, hops=hops, dtypes=False)
    _certified(result, hops, khop_layers(hops))


@pytest.fixture(scope="module")
def variable_model():
    return variable_hop_construction(128, 16, 16)


@pytest.mark.slow
@pytest.mark.parametrize("hops", range(1, 17))
def test_variable_hop_model_certifies_every_k_at_n128(variable_model, hops):
    result = certify_induction(
        variable_model, 128, 16, hops=hops, dtypes=False, layout="hop-prefix"
    )
    _certified(result, hops, khop_layers(16))
