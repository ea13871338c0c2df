"""The issue's acceptance runs, at full size (tens of minutes on 2 cores): `python -m pytest -m
slow`."""

import pytest

from headcount.induction.certification import EXHAUSTIVE_LIMIT, certify_induction, exhaustive_cases
from headcount.induction.construction import two_layer_induction


@pytest.mark.slow
@pytest.mark.parametrize("S,n", exhaustive_cases(EXHAUSTIVE_LIMIT))
def test_two_layer_exhaustive_certificate(S, n):
    result = certify_induction(two_layer_induction(n, S), n, S, dtypes=False)
    assert result.exhaustive and result.certificate.inputs_checked == S**n
    assert result.certificate.errors == 0 and result.certificate.certified


@pytest.mark.slow
@pytest.mark.parametrize("n,S", [(1024, 2), (1024, 16), (1024, 1024), (4096, 64)])
def test_two_layer_sampled_certificate_at_large_n(n, S):
    result = certify_induction(two_layer_induction(n, S), n, S)
    assert not result.exhaustive and result.certificate.errors == 0 and result.certificate.certified
    assert "float32" in result.certificate.dtypes_exact
