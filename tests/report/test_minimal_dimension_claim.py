"""boolean.minimal_dimension: PASS on the real map, FAIL when a found model is wrong, a
certificate is falsified, or a cell is left undecided."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from headcount.report.boolean import minimal as claim_module
from headcount.report.claims import FAIL, PASS, Context
from headcount.report.headlines import headline
from headcount.report.reproduce import load_claims, run_claim

SMALL = {"functions": ["xor", "mod:3"], "max_n": 6, "extra": [("xor", 12, 4, 3)]}


def run(claim_id: str, **params):
    registered = load_claims()[claim_id]
    claim = SimpleNamespace(function=registered.function, params_for=lambda scale: params)
    return run_claim(claim, Context())


def test_the_real_map_passes():
    r = run("boolean.minimal_dimension", **SMALL)
    assert r.status == PASS, r.detail
    verdicts = {(c["function"], c["n"], c["D"], c["H"]): c["verdict"] for c in r.measured["cells"]}
    assert verdicts[("xor", 6, 2, 3)] == "d = 1 found"
    assert verdicts[("xor", 12, 4, 3)] == "d = 1 refuted in the family"
    assert "refuted within the family in 1: xor n=12 D=4 H=3" in r.detail
    line = headline("boolean.minimal_dimension", r.status, r.measured, r.detail)
    assert line.endswith("1 refuted within the family")


def tampered(change):
    real = claim_module.value_dimension_one

    def search(F, D, H, grid=None):
        return change(real(F, D, H, grid))

    return search


def test_a_wrong_found_model_fails(monkeypatch):
    def flip(result):
        if result.found is None:
            return result
        f = result.found
        terms = {K: -c for K, c in f.readout.terms.items()}  # the readout's sign flipped
        readout = replace(f.readout, terms=terms)
        return replace(result, found=replace(f, readout=readout))

    monkeypatch.setattr(claim_module, "value_dimension_one", tampered(flip))
    r = run("boolean.minimal_dimension", **SMALL)
    assert r.status == FAIL and "the found model errs" in r.detail


def test_a_falsified_certificate_fails(monkeypatch):
    def falsify(result):
        if not result.refutations:
            return result
        first = result.refutations[0]
        bad = replace(first, y=(first.y[0] * 3,) + first.y[1:])
        return replace(result, refutations=(bad,) + result.refutations[1:])

    monkeypatch.setattr(claim_module, "value_dimension_one", tampered(falsify))
    r = run("boolean.minimal_dimension", **SMALL)
    assert r.status == FAIL and "a certificate fails" in r.detail


def test_an_undecided_cell_fails(monkeypatch):
    def undecided(result):
        if result.found is not None:
            return result
        return replace(result, refutations=result.refutations[1:], undecided=1)

    monkeypatch.setattr(claim_module, "value_dimension_one", tampered(undecided))
    r = run("boolean.minimal_dimension", **SMALL)
    assert r.status == FAIL and "1 undecided" in r.detail


def test_a_family_over_the_limit_is_searched_on_the_stated_smaller_grid():
    """xor, n = 17, D = 2, H = 9: the default grid's family has 200,200 systems (over 200,000);
    the map searches −1/2, 1/2, 1..9 instead and says so in the cell."""
    from headcount.boolean.task import symmetric_values

    F = symmetric_values("xor", 17)
    assert [str(g) for g in claim_module.grid_for(F, 2, 9)] == [
        "-1/2",
        "1/2",
        *map(str, range(1, 10)),
    ]
    assert len(claim_module.grid_for(symmetric_values("xor", 12), 4, 3)) == 7  # the default


def test_each_cell_states_its_grid():
    r = run("boolean.minimal_dimension", functions=["xor"], max_n=3, extra=[])
    assert {c["grid"] for c in r.measured["cells"]} <= {
        f"−1/2, 1/2, 1..{N}" for N in range(4, 8)
    }  # max(4, H + 2) for H ≤ 4
    assert claim_module.grid_text([1, 3]) == "1, 3"
