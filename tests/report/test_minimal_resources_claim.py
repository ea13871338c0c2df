"""minmax.minimal_resources: PASS on the real searches, FAIL when a found head is wrong (brute
force catches it) or a refuted cell has a member without a certificate."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from headcount.minmax.model import Classifier
from headcount.report.claims import FAIL, PASS, Context
from headcount.report.headlines import headline
from headcount.report.minmax import minimal as claim_module
from headcount.report.reproduce import load_claims, run_claim

SMALL = {"cases": [(3, 3), (3, 5)], "d_max": 2, "K_max": 1}


def run(claim_id: str, **params):
    registered = load_claims()[claim_id]
    claim = SimpleNamespace(function=registered.function, params_for=lambda scale: params)
    return run_claim(claim, Context())


def test_claim_passes_and_fails_when_falsified(monkeypatch):
    r = run("minmax.minimal_resources", **SMALL)
    assert r.status == PASS, r.detail
    line = headline("minmax.minimal_resources", r.status, r.measured, r.detail)
    assert line == "M = 3, n = 3: d = 2, K = 1; M = 3, n = 5: d = 2, K = 1"
    real = claim_module.minimal_resources

    def wrong_head(M, n, d_max, K_max):
        out = real(M, n, d_max, K_max)
        cell = out.found
        model = cell.model
        flipped = replace(model, classifier_max=Classifier(-model.classifier_max.theta))
        cells = tuple(replace(c, model=flipped) if c is cell else c for c in out.cells)
        return replace(out, cells=cells)

    monkeypatch.setattr(claim_module, "minimal_resources", wrong_head)
    r = run("minmax.minimal_resources", **SMALL)
    assert r.status == FAIL and "wrong on some list for max (brute force)" in r.detail

    def undecided(M, n, d_max, K_max):
        out = real(M, n, d_max, K_max)
        first = replace(out.cells[0], certificates=out.cells[0].certificates - 1, undecided=1)
        return replace(out, cells=(first,) + out.cells[1:])

    monkeypatch.setattr(claim_module, "minimal_resources", undecided)
    r = run("minmax.minimal_resources", **SMALL)
    assert r.status == FAIL and "1 members undecided" in r.detail
