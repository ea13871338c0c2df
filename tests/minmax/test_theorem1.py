"""Theorem 1's chain (headcount.minmax.theorem1): each object re-verified by the independent
re-check (plain fractions, its own elimination), the chain's branches on heads built for them,
and every falsified object caught."""

from __future__ import annotations

import copy
import json
from fractions import Fraction

import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.minmax.construction import build_construction
from headcount.minmax.exact_verify import verify_exact_one_head
from headcount.minmax.model import MinMaxModel, random_single_head
from headcount.minmax.theorem1 import BrokenChain, theorem1_chain, triangular_chain
from headcount.minmax.theorem1 import duals as duals_module
from headcount.minmax.theorem1.recheck import recheck_chain
from headcount.minmax.theorem1.witnesses import identity_head, moment_curve_head


def record(model: MinMaxModel, n: int, bits: int | None = None) -> dict:
    """The chain's JSON as a reader gets it (through json text)."""
    return json.loads(json.dumps(theorem1_chain(model, n, bits).to_json()))


@pytest.mark.parametrize("M, n", [(5, 11), (17, 41), (26, 41), (37, 73)])
def test_witnesses_support_their_tasks_exactly(M, n):
    for model, tasks in [
        (identity_head(M, n), ("min", "max")),
        (moment_curve_head(M, n), ("min",)),
    ]:
        head = model.layer.heads[0]
        for task in tasks:
            clf = model.classifier_min if task == "min" else model.classifier_max
            assert verify_exact_one_head(head, clf, task, n).correct


@pytest.mark.parametrize("M, n", [(5, 11), (17, 41), (26, 41)])
def test_identity_head_is_proven_by_dimension(M, n):
    r = record(identity_head(M, n), n)
    assert r["verdict"] == "bound proven"
    for c in r["chains"]:
        assert c["outcome"] == "proven"
        assert c["lemma6"]["R"] == r["N"] and c["lemma6"]["replacements_by_rank"] == {}
        assert [s["kind"] for s in c["lemma6"]["steps"]] == ["first"] + ["grows"] * (r["N"] - 1)
        assert c["conclusion"]["d_above_half_N"]
    assert recheck_chain(identity_head(M, n), r) == []


@pytest.mark.parametrize("M, n", [(5, 11), (17, 41), (26, 41), (37, 73)])
def test_moment_curve_head_is_proven_by_norm_with_replacements(M, n):
    model = moment_curve_head(M, n)
    r = record(model, n)
    chain = {c["task"]: c for c in r["chains"]}
    lemma6 = chain["min"]["lemma6"]
    assert chain["min"]["outcome"] == "proven" and lemma6["R"] == 2
    assert lemma6["replacements_by_rank"] == {"2": r["N"] - 2} and lemma6["strict"]
    k = chain["min"]["conclusion"]
    assert k["lhs_bits"] > k["rhs_bits"] > 0 and k["d_times_bits_above_N"]
    assert not k["d_above_half_N"] or r["N"] < 4
    # the max classifier is the min one mirrored: its chain ends at an input it gets wrong
    assert chain["max"]["outcome"] == "wrong input"
    assert recheck_chain(model, r) == []


def test_construction_min_head_ends_at_a_wrong_max_input():
    M, n = 64, 16
    model = build_construction(M, n, 1, code="compact")
    r = record(model, n)
    chain = {c["task"]: c for c in r["chains"]}
    assert chain["min"]["outcome"] == "too short"  # α strictly decreasing: no run for min
    wrong = chain["max"]["wrong_input"]
    assert chain["max"]["outcome"] == "wrong input" and wrong["decision"] != wrong["answer"]
    assert max(wrong["input"]) == wrong["answer"]
    assert recheck_chain(model, r) == []


@pytest.mark.parametrize("seed", range(6))
def test_random_heads_end_at_a_wrong_input_or_a_proof(seed):
    rng = np.random.default_rng(seed)
    M, d = int(rng.integers(5, 40)), int(rng.integers(1, 5))
    model = random_single_head(rng, M, d)
    r = record(model, 21)
    assert r["verdict"] in ("wrong input", "bound proven")
    assert recheck_chain(model, r) == []


def tamper(r: dict, path: list, value) -> dict:
    out = copy.deepcopy(r)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value(node[path[-1]])
    return out


@pytest.mark.parametrize(
    "path, value, found",
    [
        (["chains", 0, "duals", 1, "w", 0], lambda w: str(Fraction(w) * 2), "dual 3"),
        (["chains", 0, "duals", 0, "largest_earlier"], lambda _: "0", None),  # reported, re-derived
        (["chains", 0, "lemma6", "det_BtB"], lambda x: str(int(x) + 1), "determinant"),
        (["chains", 0, "lemma6", "det_AtA"], lambda x: str(int(x) * 4), "determinant"),
        (["chains", 0, "lemma6", "steps", 2, "t", 0], lambda t: str(Fraction(t) + 1), "B t ≠ u"),
        (["chains", 0, "lemma6", "steps", 2, "det_C"], lambda x: str(Fraction(x) * 3), "det C"),
        (["chains", 0, "lemma6", "steps", 2, "column"], lambda k: 3 - k, "B t ≠ u"),
        (["chains", 0, "lemma6", "volume_bound"], lambda x: str(Fraction(x) / 2), "volume"),
        (["chains", 0, "lemma6", "R"], lambda R: R + 1, "R differs"),
        (["chains", 0, "run"], lambda run: run[::-1], "run"),
        (["N"], lambda N: N + 1, "N = "),
        (["ell2"], lambda x: str(Fraction(x) / 4), "ℓ²"),
        (["chains", 0, "outcome"], lambda _: "broken", "broken"),
    ],
)
def test_every_falsified_object_is_caught(path, value, found):
    model = moment_curve_head(17, 41)
    r = record(model, 41)
    problems = recheck_chain(model, tamper(r, path, value))
    if found is None:
        assert problems == []
    else:
        assert problems and any(found in p for p in problems), problems


def test_a_falsified_wrong_input_is_caught():
    model = build_construction(64, 16, 1, code="compact")  # right on every constant list
    r = record(model, 16)
    assert recheck_chain(model, r) == []
    bad = tamper(r, ["chains", 1, "wrong_input", "input"], lambda x: [max(x)] * len(x))
    assert any("not decided wrongly" in p for p in recheck_chain(model, bad))


def test_triangular_chain_checks_its_hypotheses():
    u = [(1, 0), (0, 1), (1, 1)]
    w = {2: (Fraction(0), Fraction(1)), 3: (Fraction(1, 3), Fraction(2, 3))}
    with pytest.raises(BrokenChain, match="⟨w_3, u_2⟩"):
        triangular_chain(u, w, Fraction(1, 2))  # ⟨w_3, u_3⟩ = 1, but |⟨w_3, u_2⟩| = 2/3
    with pytest.raises(BrokenChain, match="zero vector"):
        triangular_chain([(0, 0)], {}, Fraction(1, 2))
    # an approximately triangular pair on one line: u_2 = 5·u_1, w_2 = u_1/25
    chain = triangular_chain(
        [(1, 2), (5, 10)], {2: (Fraction(1, 25), Fraction(2, 25))}, Fraction(1, 4)
    )
    assert chain.rank == 1 and chain.replacements == {1: 1} and chain.det_C == 5
    assert chain.det_AtA == 5 and chain.det_BtB == 125 and chain.L2 == 125


def test_a_contradicted_lemma_is_broken_never_a_verdict(monkeypatch):
    """If the four lists of Lemma 2 all came back right where a dual's check failed, the chain
    says the lemma broke (and the CLI exits 3) rather than proving anything."""
    model = build_construction(17, 41, 1, code="compact")

    def all_right(head, classifier, task, lists):
        return None

    monkeypatch.setattr(duals_module, "_wrong_among", all_right)
    r = theorem1_chain(model, 41)
    assert r.verdict == "broken"
    assert "Lemma 2" in next(c.broken for c in r.chains if c.outcome == "broken")


def test_bad_inputs_are_one_line_errors():
    two = build_construction(17, 41, 2, code="compact")
    with pytest.raises(InputError, match="one head"):
        theorem1_chain(two, 41)
    with pytest.raises(InputError, match="info has no 'n'"):
        theorem1_chain(moment_curve_head(5, 11))
    with pytest.raises(InputError, match="more than"):
        theorem1_chain(random_single_head(np.random.default_rng(0), 9, 2), 21, bits=0)
    with pytest.raises(InputError, match="bits"):
        theorem1_chain(moment_curve_head(5, 11), 11, bits=2000)
    with pytest.raises(InputError, match="exact products"):
        theorem1_chain(identity_head(2000, 4001), 4001)
    with pytest.raises(InputError, match="allowed up to 2\\^1000"):
        moment_curve_head(60, 100)


def test_vacuous_at_small_n():
    r = record(identity_head(9, 4), 4)  # N = min(3, 1) = 1: nothing to prove
    assert r["verdict"] == "vacuous" and {c["outcome"] for c in r["chains"]} == {"vacuous"}
    assert recheck_chain(identity_head(9, 4), r) == []


def test_given_bits_scale_the_integers():
    model = moment_curve_head(5, 11)
    r0, r3 = record(model, 11), record(model, 11, bits=3)
    L0 = int(r0["chains"][0]["lemma6"]["L2"])
    assert int(r3["chains"][0]["lemma6"]["L2"]) == 64 * L0 and r3["p_given"]
    assert recheck_chain(model, r3) == []


def test_cli_prints_the_chain_and_refuses_bad_sizes(tmp_path, capsys):
    from headcount.minmax.exact_verify import MAX_LIST_N
    from headcount.minmax.model import save_minmax
    from headcount.minmax.theorem1.chain import MAX_CHAIN_WORK
    from tests.cli_run import refused, run

    path = tmp_path / "moment.safetensors"
    save_minmax(moment_curve_head(17, 41), path)
    code, out, _ = run(capsys, "minmax", "lower-bound", "--model", str(path), "--n", "41", "--json")
    r = json.loads(out)
    assert code == 0
    assert r["verdict"] == "bound proven" and recheck_chain(moment_curve_head(17, 41), r) == []
    line = refused(
        capsys, "minmax", "lower-bound", "--model", str(path), "--n", str(MAX_LIST_N + 1)
    )
    assert line.endswith(f"allowed up to {MAX_LIST_N}")
    assert MAX_CHAIN_WORK == 2**20  # as the command's help says (N²·d ≤ 2^20)
    line = refused(
        capsys, "minmax", "lower-bound", "--model", str(path), "--n", "41", "--bits", "-1"
    )
    assert "--bits must be an integer in 0..1074" in line
