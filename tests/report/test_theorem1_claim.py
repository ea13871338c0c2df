"""minmax.theorem1.chain: PASS on the real chains, FAIL when any object of any chain is falsified
(a dual, a determinant, a step) or a head's chain ends where the theorem says it cannot."""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

import pytest

from headcount.report.claims import FAIL, PASS, Context
from headcount.report.headlines import headline
from headcount.report.minmax import theorem1 as claim_module
from headcount.report.reproduce import load_claims, run_claim

SMALL = {"search": (16, 9, 2, 1, 10), "construction": (16, 9), "witnesses": [(5, 11), (10, 21)]}


def run(claim_id: str, ctx: Context | None = None, **params):
    registered = load_claims()[claim_id]
    claim = SimpleNamespace(function=registered.function, params_for=lambda scale: params)
    return run_claim(claim, ctx or Context())


def test_the_real_chains_pass():
    r = run("minmax.theorem1.chain", **SMALL)
    assert r.status == PASS, r.detail
    rows = {row["head"]: row for row in r.measured["heads"]}
    assert rows["moment M=10 n=21"]["min"]["replacements"] == rows["moment M=10 n=21"]["N"] - 2
    assert rows["identity M=10 n=21"]["max"]["outcome"] == "proven"
    assert rows["construction min head"]["max"]["outcome"] == "wrong input"
    assert "every object re-checked" in r.detail
    line = headline("minmax.theorem1.chain", r.status, r.measured, r.detail)
    assert line.endswith("0 broken") and "heads chained" in line


def falsify(change):
    """theorem1_chain with `change` applied to the JSON of every chain it returns."""
    real = claim_module.theorem1_chain

    def tampered(model, n, bits=None):
        chain = real(model, n, bits)
        record = chain.to_json()
        change(record)
        return SimpleNamespace(to_json=lambda: record, N=chain.N, d=chain.d, p=chain.p)

    return tampered


def _dual(record):
    for c in record["chains"]:
        if c["outcome"] == "proven" and len(c["duals"]) > 1:
            c["duals"][1]["w"][0] = str(Fraction(c["duals"][1]["w"][0]) + Fraction(1, 7))


def _det(record):
    for c in record["chains"]:
        if c["lemma6"] is not None:
            c["lemma6"]["det_AtA"] = str(int(c["lemma6"]["det_AtA"]) + 1)


def _pivot(record):
    for c in record["chains"]:
        steps = [] if c["lemma6"] is None else c["lemma6"]["steps"]
        for s in steps:
            if s["kind"] == "replaces":
                s["t"] = [str(Fraction(t) * 2) for t in s["t"]]


def _conclusion(record):
    for c in record["chains"]:
        if c["outcome"] == "proven":
            c["outcome"] = "too short"


@pytest.mark.parametrize(
    "change, reason",
    [
        (_dual, "is not (θ_x − θ_y)"),
        (_det, "a determinant"),
        (_pivot, "B t ≠ u"),
        (_conclusion, "marked too short"),
    ],
)
def test_a_falsified_object_fails_the_claim(monkeypatch, change, reason):
    monkeypatch.setattr(claim_module, "theorem1_chain", falsify(change))
    r = run("minmax.theorem1.chain", **SMALL)
    assert r.status == FAIL and reason in r.detail, r.detail


def test_a_witness_that_stops_proving_fails_the_claim(monkeypatch):
    """A moment-curve head whose chain no longer replaces (its values made independent) is caught:
    the claim demands the norm branch be exercised."""
    real = claim_module.moment_curve_head

    def flat(M, n):
        return claim_module.identity_head(M, n)

    monkeypatch.setattr(claim_module, "moment_curve_head", flat)
    r = run("minmax.theorem1.chain", **SMALL)
    assert r.status == FAIL and "not proven by norm with replacements" in r.detail
    assert real is not flat
