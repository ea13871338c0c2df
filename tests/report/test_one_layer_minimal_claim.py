"""induction.one_layer.minimal: PASS on the real search, FAIL when the minimal member errs at its
p, a smaller member loses its wrong input or gets one it answers right, or a minimum lies below
the INDEX bound."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from headcount.report.claims import FAIL, PASS, Context
from headcount.report.headlines import headline
from headcount.report.induction import minimal as claim_module
from headcount.report.reproduce import load_claims, run_claim

SMALL = {"cases": [(5, 3), (6, 2)]}


def run(claim_id: str, **params):
    registered = load_claims()[claim_id]
    claim = SimpleNamespace(function=registered.function, params_for=lambda scale: params)
    return run_claim(claim, Context())


def tampered(change):
    real = claim_module.minimal_one_layer

    def search(n, S):
        return change(real(n, S))

    return search


def test_the_real_search_passes():
    r = run("induction.one_layer.minimal", **SMALL)
    assert r.status == PASS, r.detail
    (five, six) = r.measured["cases"]
    assert (five["size"], five["m"], five["p"], five["index_k"]) == (8, 1, 8, 2)
    assert six["index_k"] is None and six["refuted"] > 0
    line = headline("induction.one_layer.minimal", r.status, r.measured, r.detail)
    assert line == "n = 5, S = 3: h·m·p = 8; n = 6, S = 2: h·m·p = 5"


def test_a_minimal_member_that_errs_fails(monkeypatch):
    def lower(result):
        best = result.minimal
        return replace(result, minimal=replace(best, precision_bits=best.precision_bits - 1))

    monkeypatch.setattr(claim_module, "minimal_one_layer", tampered(lower))
    r = run("induction.one_layer.minimal", **SMALL)
    assert r.status == FAIL and "the minimal member errs" in r.detail


def test_a_smaller_member_without_a_wrong_input_fails(monkeypatch):
    monkeypatch.setattr(
        claim_module, "minimal_one_layer", tampered(lambda r: replace(r, refuted=r.refuted[1:]))
    )
    r = run("induction.one_layer.minimal", **SMALL)
    assert r.status == FAIL and "1 smaller members have no wrong input" in r.detail


def test_a_wrong_input_the_member_answers_right_fails(monkeypatch):
    def answered(result):
        first = result.refuted[0]
        return replace(result, refuted=(replace(first, p=60),) + result.refuted[1:])

    monkeypatch.setattr(claim_module, "minimal_one_layer", tampered(answered))
    r = run("induction.one_layer.minimal", **SMALL)
    assert r.status == FAIL and "its input is answered" in r.detail


def test_a_minimum_below_the_index_bound_fails(monkeypatch):
    monkeypatch.setattr(claim_module, "index_min_size", lambda k: 10**6)
    r = run("induction.one_layer.minimal", **SMALL)
    assert r.status == FAIL and "below the INDEX bound at k = 2" in r.detail
